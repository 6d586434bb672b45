#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

#include "pragma/bridge.h"
#include "pragma/build.h"
#include "pragma/fs.h"
#include "pragma/hash.h"
#include "pragma/log.h"
#include "pragma/refdata.h"
#include "pragma/run.h"
#include "pragma/tensor.h"

uint64_t pragma_ref_seed(int i)
{
	/* Fixed, distinct, and not 0/1 so a kernel cannot special-case them. */
	return 1000003ull * (uint64_t)(i + 1) + 17;
}

void pragma_ref_input_path(const struct pragma_refset *s, int i, char *out, size_t len)
{
	snprintf(out, len, "%s/in_%03d.npy", s->dir, i);
}

void pragma_ref_output_path(const struct pragma_refset *s, int i, char *out, size_t len)
{
	snprintf(out, len, "%s/out_%03d.npy", s->dir, i);
}

uint64_t pragma_ref_cache_limit(void)
{
	const char *v = getenv("PRAGMA_CACHE_MAX");
	char *end;
	double x;

	if (!v || !*v)
		return (uint64_t)8 << 30;
	x = strtod(v, &end);
	switch (*end) {
	case 'k': case 'K': x *= 1024; break;
	case 'm': case 'M': x *= 1024.0 * 1024; break;
	case 'g': case 'G': x *= 1024.0 * 1024 * 1024; break;
	default: break;
	}
	return x > 0 ? (uint64_t)x : (uint64_t)8 << 30;
}

static int hash_file(const char *path, uint64_t *h, uint64_t *size, struct pragma_err *err)
{
	struct pragma_buf b = PRAGMA_BUF_INIT;

	if (pragma_read_file(path, &b, (size_t)4 << 30, err) < 0)
		return -1;
	*h = pragma_hash64(b.data, b.len, 0x9a9a);
	*size = b.len;
	pragma_buf_release(&b);
	return 0;
}

int pragma_ref_write_manifest(const char *dir, struct pragma_err *err)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	json_t *files = json_object();
	char *dump;
	int ret = -1;

	if (!d)
		return pragma_err_set(err, PRAGMA_E_INTERNAL, "cannot open %s: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		size_t n = strlen(de->d_name);
		char path[4200], hex[17];
		uint64_t h, size;

		if (n < 5 || strcmp(de->d_name + n - 4, ".npy"))
			continue;
		snprintf(path, sizeof(path), "%s/%s", dir, de->d_name);
		if (hash_file(path, &h, &size, err) < 0)
			goto out;
		snprintf(hex, sizeof(hex), "%016" PRIx64, h);
		json_object_set_new(files, de->d_name, json_pack("{s:I, s:s}", "size", (json_int_t)size, "hash", hex));
	}
	char path[4200];
	snprintf(path, sizeof(path), "%s/MANIFEST", dir);
	json_t *m = json_pack("{s:i, s:O}", "version", 1, "files", files);
	dump = json_dumps(m, JSON_SORT_KEYS | JSON_INDENT(1));
	json_decref(m);
	ret = pragma_write_file_atomic(path, dump, strlen(dump), err);
	free(dump);
out:
	closedir(d);
	json_decref(files);
	return ret;
}

int pragma_ref_validate(const char *dir, struct pragma_err *err)
{
	char path[4200];
	json_error_t jerr;
	json_t *m, *files, *f;
	const char *name;
	int ret = -1, n_in = 0, n_out = 0;

	snprintf(path, sizeof(path), "%s/MANIFEST", dir);
	m = json_load_file(path, 0, &jerr);
	files = json_object_get(m, "files");
	if (!json_is_object(files) || !json_object_size(files)) {
		pragma_err_set(err, PRAGMA_E_INTERNAL, "%s: no valid MANIFEST", dir);
		goto out;
	}
	json_object_foreach(files, name, f) {
		uint64_t h, size;
		char hex[17];
		snprintf(path, sizeof(path), "%s/%s", dir, name);
		if (hash_file(path, &h, &size, err) < 0)
			goto out;
		snprintf(hex, sizeof(hex), "%016" PRIx64, h);
		if ((json_int_t)size != json_integer_value(json_object_get(f, "size")) ||
		    strcmp(hex, json_string_value(json_object_get(f, "hash")) ? json_string_value(json_object_get(f, "hash")) : "")) {
			pragma_err_set(err, PRAGMA_E_INTERNAL, "%s does not match its MANIFEST", path);
			goto out;
		}
		n_in += !strncmp(name, "in_", 3);
		n_out += !strncmp(name, "out_", 4);
	}
	if (!n_out) {
		pragma_err_set(err, PRAGMA_E_INTERNAL, "%s has no outputs", dir);
		goto out;
	}
	ret = 0;
out:
	json_decref(m);
	return ret;
}

static void entry_key(const struct pragma_task *t, uint64_t seed, char key[65])
{
	struct pragma_sha256 h;

	pragma_sha256_init(&h);
	pragma_sha256_field(&h, t->content_hash, 64);
	pragma_sha256_field(&h, &seed, sizeof(seed));
	pragma_sha256_hex(&h, key);
}

/* Files the entry must hold (inputs and outputs of the task). */
static int entry_complete(const struct pragma_task *t, const char *dir)
{
	char p[4200];

	for (int i = 0; i < t->n_inputs; i++) {
		snprintf(p, sizeof(p), "%s/in_%03d.npy", dir, i);
		if (!pragma_path_exists(p))
			return 0;
	}
	for (int i = 0; i < t->n_outputs; i++) {
		snprintf(p, sizeof(p), "%s/out_%03d.npy", dir, i);
		if (!pragma_path_exists(p))
			return 0;
	}
	return 1;
}

static int make_kernelbench(const struct pragma_task *t, const uint64_t *seeds, char (*tmp)[4096], int n,
			    struct pragma_err *err)
{
	const char **args = calloc((size_t)(4 * n + 2 * t->n_overrides + 4), sizeof(char *));
	char (*seedstr)[24] = calloc((size_t)n, sizeof(*seedstr));
	json_t *res = NULL;
	int k = 0, ret;

	args[k++] = "export";
	args[k++] = t->path;
	for (int i = 0; i < n; i++) {
		snprintf(seedstr[i], sizeof(seedstr[i]), "%" PRIu64, seeds[i]);
		args[k++] = "--seed";
		args[k++] = seedstr[i];
		args[k++] = "--out";
		args[k++] = tmp[i];
	}
	for (int i = 0; i < t->n_overrides; i++) {
		args[k++] = "--set";
		args[k++] = t->overrides[i];
	}
	args[k] = NULL;
	pragma_info("making reference data for %s (%d input sets) with PyTorch", t->name, n);
	ret = pragma_bridge_run(args, pragma_usable_cores(), 1800000, &res, err);
	json_decref(res);
	free(args);
	free(seedstr);
	return ret;
}

static int make_native(const struct pragma_task *t, const uint64_t *seeds, char (*tmp)[4096], int n,
		       struct pragma_err *err)
{
	struct pragma_buf src = PRAGMA_BUF_INIT, so = PRAGMA_BUF_INIT, work = PRAGMA_BUF_INIT;
	struct pragma_refset *sets = calloc((size_t)n, sizeof(*sets));
	struct pragma_run_result r;
	struct pragma_run_opts o = { 0 };
	int ret = -1;

	pragma_buf_addf(&src, "%s/reference.c", t->path);
	if (pragma_build_cached(src.data, NULL, &so, err) < 0) {
		pragma_err_prefix(err, "building %s", src.data);
		goto out;
	}
	for (int i = 0; i < n; i++) {
		sets[i].seed = seeds[i];
		snprintf(sets[i].dir, sizeof(sets[i].dir), "%s", tmp[i]);
		if (pragma_gen_inputs(t, seeds[i], tmp[i], err) < 0) {
			pragma_err_prefix(err, "%s", t->path);
			goto out;
		}
	}
	pragma_buf_addf(&work, "%s.run", tmp[0]);
	if (pragma_mkdir_p(work.data, 0755, err) < 0)
		goto out;
	o.kernel_so = so.data;
	o.task = t;
	o.sets = sets;
	o.n_sets = n;
	o.work_dir = work.data;
	o.timeout_ms = 600000;
	if (pragma_run_kernel(&o, &r, err) < 0)
		goto out;
	if (!r.ok) {
		pragma_err_set(err, PRAGMA_E_INPUT, "%s: the reference failed (%s): %s", t->path, r.status, r.message);
		pragma_run_result_release(&r);
		goto out;
	}
	pragma_run_result_release(&r);
	for (int i = 0; i < n; i++)
		for (int k = 0; k < t->n_outputs; k++) {
			char from[4300], to[4300];
			snprintf(from, sizeof(from), "%s/set%d/out_%03d.npy", work.data, i, k);
			snprintf(to, sizeof(to), "%s/out_%03d.npy", tmp[i], k);
			if (rename(from, to) < 0) {
				pragma_err_set(err, PRAGMA_E_INTERNAL, "cannot move %s: %s", from, strerror(errno));
				goto out;
			}
		}
	ret = 0;
out:
	if (work.len)
		pragma_rm_rf(work.data, NULL);
	free(sets);
	pragma_buf_release(&src);
	pragma_buf_release(&so);
	pragma_buf_release(&work);
	return ret;
}

int pragma_ref_ensure(const struct pragma_task *t, const uint64_t *seeds, int n, struct pragma_refset *sets,
		      struct pragma_err *err)
{
	struct pragma_buf root = PRAGMA_BUF_INIT;
	char (*tmp)[4096] = calloc((size_t)n, sizeof(*tmp));
	uint64_t *miss_seed = calloc((size_t)n, sizeof(uint64_t));
	int *miss_idx = calloc((size_t)n, sizeof(int));
	int n_miss = 0, ret = -1;

	if (pragma_cache_dir(&root, err) < 0)
		goto out;
	pragma_buf_adds(&root, "/ref");
	if (pragma_mkdir_p(root.data, 0755, err) < 0)
		goto out;
	for (int i = 0; i < n; i++) {
		char key[65], mpath[4200];
		struct pragma_err ignore = PRAGMA_ERR_INIT;

		entry_key(t, seeds[i], key);
		sets[i].seed = seeds[i];
		sets[i].rebuilt = 0;
		snprintf(sets[i].dir, sizeof(sets[i].dir), "%s/%s", root.data, key);
		if (pragma_is_dir(sets[i].dir)) {
			if (entry_complete(t, sets[i].dir) && pragma_ref_validate(sets[i].dir, &ignore) == 0) {
				snprintf(mpath, sizeof(mpath), "%s/MANIFEST", sets[i].dir);
				utime(mpath, NULL); /* least-recently-used order */
				continue;
			}
			pragma_warn("reference data in %s is incomplete or corrupt; rebuilding it", sets[i].dir);
		}
		miss_seed[n_miss] = seeds[i];
		miss_idx[n_miss] = i;
		n_miss++;
	}
	if (!n_miss) {
		ret = 0;
		goto out;
	}
	/* Temp directories first, then rename into place when complete. */
	for (int m = 0; m < n_miss; m++) {
		struct pragma_buf d = PRAGMA_BUF_INIT;
		if (pragma_mkdtemp(root.data, ".tmp-", &d, err) < 0) {
			pragma_buf_release(&d);
			goto cleanup;
		}
		snprintf(tmp[m], sizeof(tmp[m]), "%s", d.data);
		pragma_buf_release(&d);
	}
	if ((t->kind == PRAGMA_TASK_KERNELBENCH ? make_kernelbench : make_native)(t, miss_seed, tmp, n_miss, err) < 0)
		goto cleanup;
	for (int m = 0; m < n_miss; m++) {
		struct pragma_refset *s = &sets[miss_idx[m]];
		if (!entry_complete(t, tmp[m])) {
			pragma_err_set(err, PRAGMA_E_INTERNAL, "reference data for seed %" PRIu64 " is incomplete",
				       s->seed);
			goto cleanup;
		}
		if (pragma_ref_write_manifest(tmp[m], err) < 0)
			goto cleanup;
		pragma_rm_rf(s->dir, NULL);
		if (rename(tmp[m], s->dir) < 0) {
			pragma_err_set(err, PRAGMA_E_INTERNAL, "cannot store %s: %s", s->dir, strerror(errno));
			goto cleanup;
		}
		tmp[m][0] = '\0';
		s->rebuilt = 1;
	}
	{
		uint64_t freed = 0;
		int left = 0;
		struct pragma_err perr = PRAGMA_ERR_INIT;
		const char *keep = strrchr(sets[0].dir, '/') + 1;
		if (pragma_ref_prune(pragma_ref_cache_limit(), keep, &freed, &left, &perr) < 0)
			pragma_warn("cache prune failed: %s", perr.msg);
	}
	ret = 0;
cleanup:
	for (int m = 0; m < n_miss; m++)
		if (tmp[m][0])
			pragma_rm_rf(tmp[m], NULL);
out:
	free(tmp);
	free(miss_seed);
	free(miss_idx);
	pragma_buf_release(&root);
	return ret;
}

struct entry {
	char name[256];
	time_t used;
	uint64_t bytes;
};

static int by_age(const void *a, const void *b)
{
	const struct entry *x = a, *y = b;

	return x->used < y->used ? -1 : x->used > y->used;
}

static int list_entries(const char *root, struct entry **out, int *n, uint64_t *total)
{
	DIR *d = opendir(root);
	struct dirent *de;
	int cap = 0;

	*out = NULL;
	*n = 0;
	*total = 0;
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char p[4200];
		struct stat st;

		if (de->d_name[0] == '.' && (!de->d_name[1] || de->d_name[1] == '.' || strncmp(de->d_name, ".tmp-", 5)))
			continue;
		snprintf(p, sizeof(p), "%s/%s/MANIFEST", root, de->d_name);
		if (*n == cap) {
			cap = cap ? 2 * cap : 64;
			*out = realloc(*out, sizeof(**out) * (size_t)cap);
		}
		struct entry *e = &(*out)[*n];
		snprintf(e->name, sizeof(e->name), "%s", de->d_name);
		/* No MANIFEST (a crashed build): oldest possible. */
		e->used = stat(p, &st) == 0 ? st.st_mtime : 0;
		snprintf(p, sizeof(p), "%s/%s", root, de->d_name);
		/* Temp dirs of a build in progress (younger than a day) are not ours to take. */
		if (!strncmp(de->d_name, ".tmp-", 5) && stat(p, &st) == 0 && time(NULL) - st.st_mtime < 86400)
			continue;
		e->bytes = pragma_du(p);
		*total += e->bytes;
		(*n)++;
	}
	closedir(d);
	qsort(*out, (size_t)*n, sizeof(**out), by_age);
	return 0;
}

int pragma_ref_stats(uint64_t *bytes, int *entries, struct pragma_err *err)
{
	struct pragma_buf root = PRAGMA_BUF_INIT;
	struct entry *e;

	if (pragma_cache_dir(&root, err) < 0)
		return -1;
	pragma_buf_adds(&root, "/ref");
	list_entries(root.data, &e, entries, bytes);
	free(e);
	pragma_buf_release(&root);
	return 0;
}

int pragma_ref_prune(uint64_t limit, const char *keep_key, uint64_t *freed, int *entries_left,
		     struct pragma_err *err)
{
	struct pragma_buf root = PRAGMA_BUF_INIT;
	struct entry *e;
	uint64_t total;
	int n;

	*freed = 0;
	if (pragma_cache_dir(&root, err) < 0)
		return -1;
	pragma_buf_adds(&root, "/ref");
	list_entries(root.data, &e, &n, &total);
	*entries_left = n;
	for (int i = 0; i < n && total > limit; i++) {
		char p[4200];
		if (keep_key && !strcmp(e[i].name, keep_key))
			continue;
		snprintf(p, sizeof(p), "%s/%s", root.data, e[i].name);
		if (pragma_rm_rf(p, err) < 0)
			break;
		total -= e[i].bytes;
		*freed += e[i].bytes;
		(*entries_left)--;
	}
	free(e);
	pragma_buf_release(&root);
	return 0;
}
