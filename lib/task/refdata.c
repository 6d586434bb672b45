#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <fcntl.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <sys/stat.h>
#include <time.h>
#include <unistd.h>
#include <utime.h>

#include "pragma/bridge.h"
#include "pragma/build.h"
#include "pragma/config.h"
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
	struct pragma_err e = PRAGMA_ERR_INIT;
	uint64_t v = (uint64_t)8 << 30;

	/* The CLI refuses a bad PRAGMA_CACHE_MAX before it starts; a library
	 * caller that did not check gets the default and a warning. */
	if (pragma_setting_size("PRAGMA_CACHE_MAX", &v, &e) < 0) {
		pragma_warn("%s; using the default 8G", e.msg);
		v = (uint64_t)8 << 30;
	}
	return v;
}

/* "1.5 TiB" */
static void human_bytes(double b, char *out, size_t len)
{
	static const char *const units[] = { "bytes", "KiB", "MiB", "GiB", "TiB", "PiB" };
	int u = 0;

	while (b >= 1024 && u < 5) {
		b /= 1024;
		u++;
	}
	snprintf(out, len, u ? "%.1f %s" : "%.0f %s", b, units[u]);
}

/* Physical memory, or the cgroup's limit when that is lower (containers). */
static double machine_memory(void)
{
	double mem = (double)sysconf(_SC_PHYS_PAGES) * (double)sysconf(_SC_PAGESIZE);
	FILE *f = fopen("/sys/fs/cgroup/memory.max", "r");
	char line[64];

	if (f) {
		if (fgets(line, sizeof(line), f)) {
			char *end;
			double cg = strtod(line, &end);
			if (end != line && cg > 0 && (mem <= 0 || cg < mem))
				mem = cg;
		}
		fclose(f);
	}
	return mem;
}

/* MemAvailable, or -1. */
static double available_memory(void)
{
	FILE *f = fopen("/proc/meminfo", "r");
	char line[128];
	double kb = -1;

	if (!f)
		return -1;
	while (fgets(line, sizeof(line), f))
		if (sscanf(line, "MemAvailable: %lf kB", &kb) == 1)
			break;
	fclose(f);
	return kb > 0 ? kb * 1024 : -1;
}

/* Identifiers of a size expression that are sizes of the task. */
static void names_in(const char *expr, json_t *sizes, json_t *seen)
{
	const char *p = expr;

	while (*p) {
		if (isalpha((unsigned char)*p) || *p == '_') {
			const char *b = p;
			while (isalnum((unsigned char)*p) || *p == '_')
				p++;
			char name[128];
			snprintf(name, sizeof(name), "%.*s", (int)(p - b), b);
			if (json_object_get(sizes, name))
				json_object_set_new(seen, name, json_true());
		} else {
			p++;
		}
	}
}

void pragma_task_size_hint(const struct pragma_task *t, char *out, size_t len)
{
	struct pragma_buf b = PRAGMA_BUF_INIT;

	if (t->kind == PRAGMA_TASK_NATIVE) {
		/* The sizes the tensors' shapes are made of, with their values now. */
		json_t *sizes = json_object_get(t->meta, "sizes"), *seen = json_object(), *spec, *d;
		const char *list[] = { "inputs", "outputs" }, *k;
		size_t i, j;
		for (int l = 0; l < 2; l++)
			json_array_foreach(json_object_get(t->meta, list[l]), i, spec)
				json_array_foreach(json_object_get(spec, "shape"), j, d)
					if (json_is_string(d))
						names_in(json_string_value(d), sizes, seen);
		json_t *v;
		json_object_foreach(seen, k, v)
			pragma_buf_addf(&b, "%s%s=%lld", b.len ? ", " : "", k,
					(long long)json_integer_value(json_object_get(sizes, k)));
		json_decref(seen);
		if (b.len)
			snprintf(out, len, "lower a size with --set NAME=VALUE (this task's sizes now: %s)", b.data);
		else
			snprintf(out, len, "lower the task's sizes with --set NAME=VALUE");
	} else {
		json_t *c = json_object_get(t->meta, "constants"), *v;
		const char *k;
		json_object_foreach(c, k, v)
			if (json_is_integer(v) && json_integer_value(v) > 1 && b.len < 200)
				pragma_buf_addf(&b, "%s%s=%lld", b.len ? ", " : "", k, (long long)json_integer_value(v));
		if (b.len)
			snprintf(out, len, "scale the problem down with --set NAME=VALUE (its size constants now: %s)", b.data);
		else
			snprintf(out, len, "scale the problem down with --set NAME=VALUE (a module-level size constant)");
	}
	pragma_buf_release(&b);
}

int pragma_task_check_memory(const struct pragma_task *t, int n_sets, struct pragma_err *err)
{
	double need = 0, big = 0, mem = machine_memory();
	const struct pragma_tensor_spec *largest = NULL;
	char hn[32], hm[32], hb[32], hint[768];

	for (int k = 0; k < 2; k++) {
		const struct pragma_tensor_spec *specs = k ? t->outputs : t->inputs;
		for (int i = 0; i < (k ? t->n_outputs : t->n_inputs); i++) {
			double b = (double)pragma_shape_numel(specs[i].shape, specs[i].ndim) *
				   (double)pragma_dtype_size(specs[i].dtype);
			need += b;
			if (b > big) {
				big = b;
				largest = &specs[i];
			}
		}
	}
	if (n_sets < 1)
		n_sets = 1;
	need *= n_sets;
	if (mem <= 0 || need <= mem) {
		double avail = available_memory();
		if (avail > 0 && need > avail) {
			human_bytes(need, hn, sizeof(hn));
			human_bytes(avail, hm, sizeof(hm));
			pragma_task_size_hint(t, hint, sizeof(hint));
			pragma_warn("%s needs %s for %d input sets, more than the %s of memory free now: it may be killed "
				    "(out of memory); to be safe, %s", t->name, hn, n_sets, hm, hint);
		}
		return 0;
	}
	human_bytes(need, hn, sizeof(hn));
	human_bytes(mem, hm, sizeof(hm));
	human_bytes(big, hb, sizeof(hb));
	pragma_err_set(err, PRAGMA_E_INPUT,
		       "%s needs %s for %d input set%s (inputs and outputs, held at once; its largest tensor, '%s', is "
		       "%s), more than this machine's memory (%s)",
		       t->name, hn, n_sets, n_sets == 1 ? "" : "s", largest ? largest->name : "?", hb, hm);
	pragma_task_size_hint(t, hint, sizeof(hint));
	pragma_err_hint(err, "%s", hint);
	return -1;
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

/* A set in the cache that can be used as it is: every file there and the
 * MANIFEST's sizes and hashes matching them. */
static int entry_usable(const struct pragma_task *t, const char *dir)
{
	struct pragma_err ignore = PRAGMA_ERR_INIT;

	return pragma_is_dir(dir) && entry_complete(t, dir) && pragma_ref_validate(dir, &ignore) == 0;
}

static int make_kernelbench(const struct pragma_task *t, const uint64_t *seeds, char (*tmp)[4096], int n,
			    int progress, struct pragma_err *err)
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
	(void)progress; /* the bridge's own wait line says what it runs */
	ret = pragma_bridge_run(args, pragma_usable_cores(), 1800000, &res, err);
	json_decref(res);
	free(args);
	free(seedstr);
	return ret;
}

static int make_native(const struct pragma_task *t, const uint64_t *seeds, char (*tmp)[4096], int n, int progress,
		       struct pragma_err *err)
{
	struct pragma_buf src = PRAGMA_BUF_INIT, so = PRAGMA_BUF_INIT, work = PRAGMA_BUF_INIT;
	struct pragma_refset *sets = calloc((size_t)n, sizeof(*sets));
	struct pragma_run_result r;
	struct pragma_run_opts o = { 0 };
	int ret = -1;

	pragma_buf_addf(&src, "%s/reference.c", t->path);
	pragma_progress_update(progress, "making reference data for %s: building reference.c", t->name);
	if (pragma_build_cached(src.data, NULL, &so, err) < 0) {
		pragma_err_prefix(err, "building %s", src.data);
		goto out;
	}
	for (int i = 0; i < n; i++) {
		sets[i].seed = seeds[i];
		snprintf(sets[i].dir, sizeof(sets[i].dir), "%s", tmp[i]);
		pragma_progress_update(progress, "making reference data for %s: inputs of set %d of %d", t->name, i + 1, n);
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
	pragma_progress_update(progress, "making reference data for %s: running reference.c on %d input set%s", t->name, n,
			       n == 1 ? "" : "s");
	if (pragma_run_kernel(&o, &r, err) < 0)
		goto out;
	if (!r.ok) {
		pragma_err_set(err, PRAGMA_E_INPUT, "%s: the reference failed (%s): %s", t->path, r.status, r.message);
		if (!strcmp(r.status, "memory_limit")) {
			char hint[768];
			pragma_task_size_hint(t, hint, sizeof(hint));
			pragma_err_hint(err, "%s", hint);
		}
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
	int n_miss = 0, ret = -1, progress = -1, lock_fd = -1;

	if (pragma_cache_dir(&root, err) < 0)
		goto out;
	pragma_buf_adds(&root, "/ref");
	if (pragma_mkdir_p(root.data, 0755, err) < 0)
		goto out;
	for (int i = 0; i < n; i++) {
		char key[65], mpath[4200];

		entry_key(t, seeds[i], key);
		sets[i].seed = seeds[i];
		sets[i].rebuilt = 0;
		snprintf(sets[i].dir, sizeof(sets[i].dir), "%s/%s", root.data, key);
		if (entry_usable(t, sets[i].dir)) {
			snprintf(mpath, sizeof(mpath), "%s/MANIFEST", sets[i].dir);
			utime(mpath, NULL); /* least-recently-used order */
			continue;
		}
		if (pragma_is_dir(sets[i].dir))
			pragma_warn("reference data in %s is incomplete or corrupt; rebuilding it", sets[i].dir);
		miss_seed[n_miss] = seeds[i];
		miss_idx[n_miss] = i;
		n_miss++;
	}
	if (!n_miss) {
		ret = 0;
		goto out;
	}
	/* Another pragma (a bench's other trajectory of this task) may be making
	 * the same sets: one makes them, the others wait and use them. The
	 * lock is per task and sizes (the first missing set's key). */
	{
		char key[65], lpath[4200];
		entry_key(t, miss_seed[0], key);
		snprintf(lpath, sizeof(lpath), "%s/.lock-%s", root.data, key);
		lock_fd = open(lpath, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (lock_fd >= 0 && flock(lock_fd, LOCK_EX | LOCK_NB) < 0) {
			int wait = pragma_progress_begin("waiting for another pragma making the reference data of %s",
							 t->name);
			while (flock(lock_fd, LOCK_EX) < 0 && errno == EINTR)
				;
			pragma_progress_end(wait);
		}
		int still = 0;
		for (int m = 0; m < n_miss; m++) {
			if (entry_usable(t, sets[miss_idx[m]].dir))
				continue; /* made meanwhile */
			miss_seed[still] = miss_seed[m];
			miss_idx[still] = miss_idx[m];
			still++;
		}
		n_miss = still;
		if (!n_miss) {
			ret = 0;
			goto out;
		}
	}
	/* Sizes that cannot fit are refused before anything is allocated. */
	if (pragma_task_check_memory(t, n, err) < 0)
		goto out;
	progress = pragma_progress_begin("making reference data for %s (%d input set%s, %s)", t->name, n_miss,
					 n_miss == 1 ? "" : "s",
					 t->kind == PRAGMA_TASK_KERNELBENCH ? "PyTorch" : "reference.c");
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
	if ((t->kind == PRAGMA_TASK_KERNELBENCH ? make_kernelbench : make_native)(t, miss_seed, tmp, n_miss, progress, err) < 0)
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
	if (lock_fd >= 0)
		close(lock_fd); /* releases the flock */
	pragma_progress_end(progress);
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
