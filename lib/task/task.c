#include <ctype.h>
#include <dirent.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>

#include "pragma/bridge.h"
#include "pragma/build.h"
#include "pragma/buf.h"
#include "pragma/fs.h"
#include "pragma/hash.h"
#include "pragma/log.h"
#include "pragma/proc.h"
#include "pragma/task.h"
#include "pragma/tensor.h"

static const char *const categories[] = { "matmul", "activation", "normalization", "pooling_reduction",
					  "conv", "others" };

int pragma_category_valid(const char *c)
{
	for (size_t i = 0; i < sizeof(categories) / sizeof(categories[0]); i++)
		if (!strcmp(c, categories[i]))
			return 1;
	return 0;
}

static char *xstrdup(const char *s)
{
	char *d = strdup(s ? s : "");

	if (!d)
		abort();
	return d;
}

void pragma_task_release(struct pragma_task *t)
{
	free(t->path);
	free(t->name);
	free(t->category);
	free(t->description);
	free(t->source);
	free(t->source_name);
	free(t->inputs);
	free(t->outputs);
	for (int i = 0; i < t->n_overrides; i++)
		free(t->overrides[i]);
	free(t->overrides);
	free(t->weak_reason);
	json_decref(t->meta);
	free(t->facts);
	memset(t, 0, sizeof(*t));
}

static int is_native_dir(const char *path)
{
	struct pragma_buf p = PRAGMA_BUF_INIT;
	int r;

	pragma_buf_addf(&p, "%s/task.json", path);
	r = pragma_is_dir(path) && pragma_path_exists(p.data);
	pragma_buf_release(&p);
	return r;
}

/* "# pragma: category=conv atol=1e-3" lines of a KernelBench file. */
static void pragma_comment_value(const char *src, const char *key, char *out, size_t len)
{
	size_t klen = strlen(key);

	out[0] = '\0';
	for (const char *line = src; line && *line; line = strchr(line, '\n'), line = line ? line + 1 : NULL) {
		const char *p = line;
		while (*p == ' ' || *p == '\t')
			p++;
		if (strncmp(p, "# pragma:", 9))
			continue;
		for (p += 9; *p && *p != '\n';) {
			while (*p == ' ' || *p == '\t' || *p == ',')
				p++;
			if (!strncmp(p, key, klen) && p[klen] == '=') {
				size_t n = 0;
				p += klen + 1;
				while (*p && !isspace((unsigned char)*p) && *p != ',' && n + 1 < len)
					out[n++] = *p++;
				out[n] = '\0';
				return;
			}
			while (*p && !isspace((unsigned char)*p) && *p != '\n')
				p++;
		}
	}
}

/* First line of the module docstring, if the file starts with one. */
static void py_docstring(const char *src, char *out, size_t len)
{
	const char *p = src;

	out[0] = '\0';
	for (;;) {
		while (*p == ' ' || *p == '\t' || *p == '\n' || *p == '\r')
			p++;
		if (*p != '#')
			break;
		p = strchr(p, '\n');
		if (!p)
			return;
	}
	if (strncmp(p, "\"\"\"", 3) && strncmp(p, "'''", 3))
		return;
	p += 3;
	while (*p == ' ' || *p == '\n')
		p++;
	size_t n = 0;
	while (*p && *p != '\n' && strncmp(p, "\"\"\"", 3) && strncmp(p, "'''", 3) && n + 1 < len)
		out[n++] = *p++;
	out[n] = '\0';
}

int pragma_task_brief(const char *path, struct pragma_task_brief *b, struct pragma_err *err)
{
	struct pragma_buf src = PRAGMA_BUF_INIT, stem = PRAGMA_BUF_INIT;
	int ret = -1;

	memset(b, 0, sizeof(*b));
	snprintf(b->path, sizeof(b->path), "%s", path);
	pragma_path_stem(path, &stem);
	snprintf(b->name, sizeof(b->name), "%s", stem.data);
	if (is_native_dir(path)) {
		struct pragma_buf f = PRAGMA_BUF_INIT;
		json_error_t jerr;
		json_t *j;

		snprintf(b->kind, sizeof(b->kind), "native");
		pragma_buf_addf(&f, "%s/task.json", path);
		j = json_load_file(f.data, 0, &jerr);
		if (!j) {
			pragma_err_set(err, PRAGMA_E_INPUT, "%s:%d:%d: %s", f.data, jerr.line, jerr.column, jerr.text);
			pragma_buf_release(&f);
			goto out;
		}
		pragma_buf_release(&f);
		const char *s;
		if ((s = json_string_value(json_object_get(j, "name"))))
			snprintf(b->name, sizeof(b->name), "%s", s);
		if ((s = json_string_value(json_object_get(j, "category"))))
			snprintf(b->category, sizeof(b->category), "%s", s);
		if ((s = json_string_value(json_object_get(j, "description"))))
			snprintf(b->description, sizeof(b->description), "%s", s);
		json_decref(j);
	} else {
		snprintf(b->kind, sizeof(b->kind), "kernelbench");
		if (pragma_read_file(path, &src, 8 << 20, err) < 0)
			goto out;
		pragma_comment_value(src.data, "category", b->category, sizeof(b->category));
		py_docstring(src.data, b->description, sizeof(b->description));
	}
	ret = 0;
out:
	pragma_buf_release(&src);
	pragma_buf_release(&stem);
	return ret;
}

static int brief_cmp(const void *a, const void *b)
{
	return strcmp(((const struct pragma_task_brief *)a)->path, ((const struct pragma_task_brief *)b)->path);
}

int pragma_task_scan(const char *dir, struct pragma_task_brief **out, int *n, struct pragma_err *err)
{
	DIR *d = opendir(dir);
	struct dirent *de;
	struct pragma_task_brief *v = NULL;
	int cnt = 0, cap = 0;

	*out = NULL;
	*n = 0;
	if (!d)
		return pragma_err_set(err, PRAGMA_E_INPUT, "cannot open task directory %s: %s", dir, strerror(errno));
	while ((de = readdir(d))) {
		struct pragma_buf p = PRAGMA_BUF_INIT;
		size_t len = strlen(de->d_name);

		if (de->d_name[0] == '.' || de->d_name[0] == '_')
			continue;
		pragma_buf_addf(&p, "%s/%s", dir, de->d_name);
		if ((len > 3 && !strcmp(de->d_name + len - 3, ".py") && !pragma_is_dir(p.data)) || is_native_dir(p.data)) {
			if (cnt == cap) {
				cap = cap ? cap * 2 : 64;
				v = realloc(v, sizeof(*v) * (size_t)cap);
				if (!v)
					abort();
			}
			if (pragma_task_brief(p.data, &v[cnt], err) < 0) {
				pragma_warn("skipping %s: %s", p.data, err->msg);
				pragma_err_clear(err);
			} else {
				cnt++;
			}
		}
		pragma_buf_release(&p);
	}
	closedir(d);
	qsort(v, (size_t)cnt, sizeof(*v), brief_cmp);
	*out = v;
	*n = cnt;
	return 0;
}

int pragma_task_resolve(const char *arg, char **path, struct pragma_err *err)
{
	static const char *const suites[] = { "tasks/cpu-l1", "tasks/c" };
	struct pragma_buf p = PRAGMA_BUF_INIT, dir = PRAGMA_BUF_INIT;

	*path = NULL;
	if (pragma_path_exists(arg)) {
		*path = xstrdup(arg);
		return 0;
	}
	if (!strchr(arg, '/')) {
		for (size_t i = 0; i < 2 && !*path; i++) {
			struct pragma_err ignore = PRAGMA_ERR_INIT;
			if (pragma_data_path(suites[i], &dir, &ignore) < 0)
				continue;
			pragma_buf_reset(&p);
			pragma_buf_addf(&p, "%s/%s%s", dir.data, arg, i == 0 && !strstr(arg, ".py") ? ".py" : "");
			if (pragma_path_exists(p.data))
				*path = xstrdup(p.data);
		}
	}
	pragma_buf_release(&p);
	pragma_buf_release(&dir);
	if (*path)
		return 0;
	pragma_err_set(err, PRAGMA_E_INPUT, "no task '%s': not a file or folder, nor a built-in task", arg);
	pragma_err_hint(err, "'pragma tasks list' shows the built-in tasks");
	return -1;
}

static void default_tolerance(struct pragma_task *t)
{
	enum pk_dtype worst = PK_FLOAT64;

	for (int i = 0; i < t->n_outputs; i++) {
		enum pk_dtype d = t->outputs[i].dtype;
		if (d == PK_FLOAT16 || d == PK_BFLOAT16)
			worst = d;
		else if (d == PK_FLOAT32 && worst == PK_FLOAT64)
			worst = d;
	}
	t->atol = t->rtol = worst == PK_FLOAT64 ? 1e-6 : worst == PK_FLOAT32 ? 1e-4 : 1e-2;
	/* Stated nothing: per output, pragma_tolerance_resolve() takes each
	 * output's dtype default, with atol scaled to the output's RMS. */
	t->rtol_stated = t->atol_stated = t->atol_abs = 0;
	t->norm_tol = 0;
}

static void compute_bytes(struct pragma_task *t)
{
	double b = 0;

	for (int i = 0; i < t->n_inputs; i++)
		b += (double)pragma_shape_numel(t->inputs[i].shape, t->inputs[i].ndim) *
		     (double)pragma_dtype_size(t->inputs[i].dtype);
	for (int i = 0; i < t->n_outputs; i++)
		b += (double)pragma_shape_numel(t->outputs[i].shape, t->outputs[i].ndim) *
		     (double)pragma_dtype_size(t->outputs[i].dtype);
	t->bytes = b;
}

/* ------------------------------------------------- task.json, strictly */

/* task.json is checked key by key (docs/tasks.md): a misspelled key would
 * otherwise be ignored, and a task silently become another one. */
static const char *const top_keys[] = { "name", "category", "description", "sizes", "inputs", "outputs",
					"tolerance", "flops", "bytes", NULL };
static const char *const input_keys[] = { "name", "dtype", "shape", "init", NULL };
static const char *const output_keys[] = { "name", "dtype", "shape", NULL };
static const char *const tolerance_keys[] = { "rtol", "atol", "atol_rms", "norm", "weak_reason", NULL };
static const struct {
	const char *dist;
	const char *const keys[4];    /* parameters besides "dist" */
} dists[] = {
	{ "uniform", { "low", "high" } },       { "normal", { "mean", "std" } }, { "randint", { "low", "high" } },
	{ "constant", { "value" } },            { "arange", { NULL } },          { "csr_row_ptr", { "nnz" } },
};

static size_t edit_distance(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b), row[64];

	if (la >= 63 || lb >= 63)
		return 99;
	for (size_t j = 0; j <= lb; j++)
		row[j] = j;
	for (size_t i = 1; i <= la; i++) {
		size_t diag = row[0];
		row[0] = i;
		for (size_t j = 1; j <= lb; j++) {
			size_t up = row[j], best = diag + (tolower((unsigned char)a[i - 1]) != tolower((unsigned char)b[j - 1]));
			if (up + 1 < best)
				best = up + 1;
			if (row[j - 1] + 1 < best)
				best = row[j - 1] + 1;
			diag = up;
			row[j] = best;
		}
	}
	return row[lb];
}

/* Every key of obj is in known[] (NULL-terminated; "dist" counts when
 * extra is given); otherwise an error naming the known keys. */
static int check_keys(json_t *obj, const char *where, const char *const *known, const char *also, const char *what,
		      struct pragma_err *err)
{
	const char *key;
	json_t *val;

	json_object_foreach(obj, key, val) {
		struct pragma_buf list = PRAGMA_BUF_INIT;
		const char *near = NULL;
		size_t best = 3;
		int ok = also && !strcmp(key, also);

		for (int i = 0; known[i] && !ok; i++)
			ok = !strcmp(key, known[i]);
		if (ok)
			continue;
		if (also)
			pragma_buf_adds(&list, also);
		for (int i = 0; known[i]; i++) {
			size_t d = edit_distance(key, known[i]);
			pragma_buf_addf(&list, "%s%s", list.len ? ", " : "", known[i]);
			if (d < best) {
				best = d;
				near = known[i];
			}
		}
		pragma_err_set(err, PRAGMA_E_INPUT, "%s%sunknown key '%s'%s; the known keys are %s%s%s%s", where,
			       *where ? ": " : "", key, what ? what : "", list.len ? list.data : "(none)",
			       near ? " (did you mean '" : "", near ? near : "", near ? "'?)" : "");
		pragma_err_hint(err, "docs/tasks.md describes every field of task.json");
		pragma_buf_release(&list);
		return -1;
	}
	return 0;
}

static int want_object(json_t *v, const char *where, struct pragma_err *err)
{
	if (json_is_object(v))
		return 0;
	return pragma_err_set(err, PRAGMA_E_INPUT, "%s must be an object", where);
}

/* A number >= 0 or a size expression (a string), as flops, bytes and init
 * parameters take; negative numbers only where `negative`. */
static int want_amount(json_t *v, json_t *sizes, const char *where, int negative, struct pragma_err *err)
{
	int64_t x;

	if (json_is_number(v)) {
		if (!negative && json_number_value(v) < 0)
			return pragma_err_set(err, PRAGMA_E_INPUT, "%s is negative (%g)", where, json_number_value(v));
		return 0;
	}
	if (json_is_string(v)) {
		if (pragma_size_expr(json_string_value(v), sizes, &x, err) < 0) {
			pragma_err_prefix(err, "%s", where);
			return -1;
		}
		return 0;
	}
	return pragma_err_set(err, PRAGMA_E_INPUT, "%s must be a number or a size expression (a string such as \"N*M\")",
			      where);
}

static int parse_spec_shape(json_t *shape, json_t *sizes, struct pragma_tensor_spec *s, const char *where,
			    struct pragma_err *err)
{
	size_t i;
	json_t *d;

	if (!json_is_array(shape) || json_array_size(shape) > PK_MAX_DIMS)
		return pragma_err_set(err, PRAGMA_E_INPUT, "%s.shape: an array of at most %d sizes is required",
				      where, PK_MAX_DIMS);
	s->ndim = (int)json_array_size(shape);
	json_array_foreach(shape, i, d) {
		int64_t v;
		if (json_is_integer(d)) {
			v = json_integer_value(d);
		} else if (json_is_string(d)) {
			if (pragma_size_expr(json_string_value(d), sizes, &v, err) < 0) {
				pragma_err_prefix(err, "%s.shape[%zu]", where, i);
				return -1;
			}
		} else {
			return pragma_err_set(err, PRAGMA_E_INPUT, "%s.shape[%zu]: a size or an expression", where, i);
		}
		if (v < 0)
			return pragma_err_set(err, PRAGMA_E_INPUT, "%s.shape[%zu] is negative (%lld)", where, i,
					      (long long)v);
		s->shape[i] = v;
	}
	if (pragma_shape_numel(s->shape, s->ndim) < 0)
		return pragma_err_set(err, PRAGMA_E_INPUT, "%s: shape overflows", where);
	return 0;
}

static int parse_init(json_t *init, json_t *sizes, const char *where, struct pragma_err *err)
{
	char w[96], what[64];
	const char *dist;
	size_t k;

	snprintf(w, sizeof(w), "%s.init", where);
	if (!init)
		return pragma_err_set(err, PRAGMA_E_INPUT, "%s missing: every input needs a distribution, e.g. "
				      "{\"dist\": \"uniform\", \"low\": -1, \"high\": 1}", w);
	if (want_object(init, w, err) < 0)
		return -1;
	dist = json_string_value(json_object_get(init, "dist"));
	for (k = 0; dist && k < sizeof(dists) / sizeof(dists[0]); k++)
		if (!strcmp(dist, dists[k].dist))
			break;
	if (!dist || k == sizeof(dists) / sizeof(dists[0]))
		return pragma_err_set(err, PRAGMA_E_INPUT, "%s.dist '%s' is not one of uniform, normal, randint, "
				      "constant, arange, csr_row_ptr", w, dist ? dist : "(missing)");
	snprintf(what, sizeof(what), " for dist '%s'", dist);
	if (check_keys(init, w, dists[k].keys, "dist", what, err) < 0)
		return -1;
	for (int i = 0; dists[k].keys[i]; i++) {
		json_t *v = json_object_get(init, dists[k].keys[i]);
		char pw[128];
		snprintf(pw, sizeof(pw), "%s.%s", w, dists[k].keys[i]);
		if (v && want_amount(v, sizes, pw, 1, err) < 0)
			return -1;
	}
	if (!strcmp(dist, "csr_row_ptr") && !json_object_get(init, "nnz"))
		return pragma_err_set(err, PRAGMA_E_INPUT, "%s: csr_row_ptr needs nnz (the number of stored entries)", w);
	return 0;
}

static int parse_specs(json_t *arr, json_t *sizes, const char *what, const char *role,
		       struct pragma_tensor_spec **out, int *n, struct pragma_err *err)
{
	size_t i;
	json_t *e;

	if (!json_is_array(arr) || !json_array_size(arr))
		return pragma_err_set(err, PRAGMA_E_INPUT, "'%s' must be a non-empty array", what);
	*out = calloc(json_array_size(arr), sizeof(**out));
	*n = (int)json_array_size(arr);
	json_array_foreach(arr, i, e) {
		struct pragma_tensor_spec *s = &(*out)[i];
		char where[64];
		json_t *jn = json_object_get(e, "name"), *jd = json_object_get(e, "dtype");
		const char *name = json_string_value(jn), *dt = json_string_value(jd);
		int input = !strcmp(role, "input");

		snprintf(where, sizeof(where), "%s[%zu]", what, i);
		if (want_object(e, where, err) < 0 ||
		    check_keys(e, where, input ? input_keys : output_keys, NULL,
			       input ? NULL : " (outputs take no init: the reference computes them)", err) < 0)
			return -1;
		if (!name || !*name)
			return pragma_err_set(err, PRAGMA_E_INPUT, "%s.name %s", where,
					      jn ? "must be a non-empty string" : "missing");
		if (strlen(name) >= sizeof(s->name))
			return pragma_err_set(err, PRAGMA_E_INPUT, "%s.name is longer than %zu bytes", where,
					      sizeof(s->name) - 1);
		for (size_t j = 0; j < i; j++)
			if (!strcmp((*out)[j].name, name))
				return pragma_err_set(err, PRAGMA_E_INPUT, "%s.name '%s' repeats %s[%zu]'s", where, name,
						      what, j);
		snprintf(s->name, sizeof(s->name), "%s", name);
		snprintf(s->role, sizeof(s->role), "%s", role);
		if (!dt || pragma_dtype_from_name(dt, &s->dtype) < 0)
			return pragma_err_set(err, PRAGMA_E_INPUT, "%s.dtype '%s' is not one of float32, float64, "
				"float16, bfloat16, int64, int32, int8, uint8, bool", where,
				dt ? dt : jd ? "(not a string)" : "(missing)");
		if (parse_spec_shape(json_object_get(e, "shape"), sizes, s, where, err) < 0)
			return -1;
		s->init = json_object_get(e, "init");
		if (input && parse_init(s->init, sizes, where, err) < 0)
			return -1;
	}
	return 0;
}

static int parse_sizes(json_t *sizes, struct pragma_err *err)
{
	const char *key;
	json_t *v;

	if (want_object(sizes, "sizes", err) < 0)
		return -1;
	json_object_foreach(sizes, key, v) {
		int ident = isalpha((unsigned char)key[0]) || key[0] == '_';
		for (const char *p = key; *p && ident; p++)
			ident = isalnum((unsigned char)*p) || *p == '_';
		if (!ident || strlen(key) >= 64)
			return pragma_err_set(err, PRAGMA_E_INPUT, "sizes: '%s' is not a name expressions can use "
					      "(letters, digits, _; not starting with a digit; under 64 bytes)", key);
		if (!json_is_integer(v) || json_integer_value(v) < 0)
			return pragma_err_set(err, PRAGMA_E_INPUT, "sizes.%s must be a non-negative integer", key);
	}
	return 0;
}

static int parse_tolerance(json_t *v, struct pragma_task *t, struct pragma_err *err)
{
	static const char *const num_keys[] = { "rtol", "atol", "atol_rms", "norm" };
	json_t *wr;

	if (want_object(v, "tolerance", err) < 0 || check_keys(v, "tolerance", tolerance_keys, NULL, NULL, err) < 0)
		return -1;
	for (size_t i = 0; i < sizeof(num_keys) / sizeof(num_keys[0]); i++) {
		json_t *x = json_object_get(v, num_keys[i]);
		if (x && (!json_is_number(x) || json_number_value(x) < 0 || !isfinite(json_number_value(x))))
			return pragma_err_set(err, PRAGMA_E_INPUT, "tolerance.%s must be a number >= 0", num_keys[i]);
	}
	if (json_object_get(v, "atol") && json_object_get(v, "atol_rms"))
		return pragma_err_set(err, PRAGMA_E_INPUT, "tolerance: give atol (absolute) or atol_rms (times the "
				      "output's RMS), not both");
	if (json_object_get(v, "rtol")) {
		t->rtol = json_number_value(json_object_get(v, "rtol"));
		t->rtol_stated = 1;
	}
	if (json_object_get(v, "atol") || json_object_get(v, "atol_rms")) {
		t->atol_abs = json_object_get(v, "atol") != NULL;
		t->atol = json_number_value(json_object_get(v, t->atol_abs ? "atol" : "atol_rms"));
		t->atol_stated = 1;
	}
	if (json_object_get(v, "norm"))
		t->norm_tol = json_number_value(json_object_get(v, "norm"));
	wr = json_object_get(v, "weak_reason");
	if (wr && (!json_is_string(wr) || !*json_string_value(wr)))
		return pragma_err_set(err, PRAGMA_E_INPUT, "tolerance.weak_reason must be a non-empty string");
	if (wr)
		t->weak_reason = xstrdup(json_string_value(wr));
	return 0;
}

static int apply_overrides_native(json_t *sizes, const char *const *ov, int n, struct pragma_err *err)
{
	for (int i = 0; i < n; i++) {
		const char *eq = strchr(ov[i], '=');
		char name[64], *end;
		long long v;

		if (!eq || eq == ov[i] || (size_t)(eq - ov[i]) >= sizeof(name))
			return pragma_err_set(err, PRAGMA_E_INPUT, "--set '%s': expected NAME=VALUE", ov[i]);
		memcpy(name, ov[i], (size_t)(eq - ov[i]));
		name[eq - ov[i]] = '\0';
		if (!json_object_get(sizes, name))
			return pragma_err_set(err, PRAGMA_E_INPUT, "--set %s: the task has no size '%s'", ov[i], name);
		errno = 0;
		v = strtoll(eq + 1, &end, 10);
		if (errno || *end || end == eq + 1 || v < 0)
			return pragma_err_set(err, PRAGMA_E_INPUT, "--set %s: '%s' is not a non-negative integer", ov[i],
					      eq + 1);
		json_object_set_new(sizes, name, json_integer(v));
	}
	return 0;
}

static void hash_overrides(struct pragma_sha256 *h, const struct pragma_task *t)
{
	/* Sorted, so --set A=1 --set B=2 and the reverse share reference data. */
	char **v = malloc(sizeof(char *) * (size_t)(t->n_overrides + 1));

	memcpy(v, t->overrides, sizeof(char *) * (size_t)t->n_overrides);
	for (int i = 1; i < t->n_overrides; i++)
		for (int j = i; j > 0 && strcmp(v[j - 1], v[j]) > 0; j--) {
			char *x = v[j];
			v[j] = v[j - 1];
			v[j - 1] = x;
		}
	for (int i = 0; i < t->n_overrides; i++)
		pragma_sha256_field(h, v[i], strlen(v[i]));
	free(v);
}

/* Everything task.json says, checked (docs/tasks.md). Errors name the field. */
static int parse_json_task(json_t *j, struct pragma_task *t, const char *dir, struct pragma_err *err)
{
	json_t *sizes, *v;
	const char *s;

	if (check_keys(j, "", top_keys, NULL, NULL, err) < 0)
		return -1;
	for (int i = 0; i < 3; i++) {
		const char *k = i == 0 ? "name" : i == 1 ? "category" : "description";
		v = json_object_get(j, k);
		if (v && !json_is_string(v))
			return pragma_err_set(err, PRAGMA_E_INPUT, "'%s' must be a string", k);
	}
	s = json_string_value(json_object_get(j, "name"));
	t->name = xstrdup(s && *s ? s : strrchr(dir, '/') ? strrchr(dir, '/') + 1 : dir);
	s = json_string_value(json_object_get(j, "category"));
	if (!s || !pragma_category_valid(s))
		return pragma_err_set(err, PRAGMA_E_INPUT, "category '%s' is not one of matmul, activation, "
				      "normalization, pooling_reduction, conv, others", s ? s : "(missing)");
	t->category = xstrdup(s);
	t->description = xstrdup(json_string_value(json_object_get(j, "description")));
	sizes = json_object_get(j, "sizes");
	if (!sizes) {
		sizes = json_object();
		json_object_set_new(j, "sizes", sizes);
	}
	if (parse_sizes(sizes, err) < 0 ||
	    apply_overrides_native(sizes, (const char *const *)t->overrides, t->n_overrides, err) < 0 ||
	    parse_specs(json_object_get(j, "inputs"), sizes, "inputs", "input", &t->inputs, &t->n_inputs, err) < 0 ||
	    parse_specs(json_object_get(j, "outputs"), sizes, "outputs", "output", &t->outputs, &t->n_outputs, err) < 0)
		return -1;
	compute_bytes(t);
	t->flops = -1;
	for (int k = 0; k < 2; k++) {
		const char *key = k ? "bytes" : "flops";
		double *dst = k ? &t->bytes : &t->flops;
		int64_t x;
		v = json_object_get(j, key);
		if (!v || json_is_null(v))
			continue;
		if (want_amount(v, sizes, key, 0, err) < 0)
			return -1;
		if (json_is_number(v))
			*dst = json_number_value(v);
		else if (pragma_size_expr(json_string_value(v), sizes, &x, err) == 0)
			*dst = (double)x;
		else
			return -1;
	}
	snprintf(t->flops_method, sizeof(t->flops_method), "%s", t->flops >= 0 ? "task.json" : "unknown");
	default_tolerance(t);
	v = json_object_get(j, "tolerance");
	if (v && parse_tolerance(v, t, err) < 0)
		return -1;
	return 0;
}

static int load_native(const char *dir, struct pragma_task *t, struct pragma_err *err)
{
	struct pragma_buf f = PRAGMA_BUF_INIT, text = PRAGMA_BUF_INIT, base = PRAGMA_BUF_INIT;
	struct pragma_sha256 h;
	json_error_t jerr;
	json_t *j = NULL;
	int ret = -1;

	pragma_buf_addf(&f, "%s/task.json", dir);
	if (pragma_read_file(f.data, &text, 4 << 20, err) < 0)
		goto out;
	j = json_loadb(text.data, text.len, 0, &jerr);
	if (!j || !json_is_object(j)) {
		pragma_err_set(err, PRAGMA_E_INPUT, "%s:%d:%d: %s", f.data, jerr.line, jerr.column,
			       j ? "the top level must be an object" : jerr.text);
		goto out;
	}
	t->meta = j;
	pragma_sha256_init(&h);
	pragma_sha256_field(&h, "native", 6);
	pragma_sha256_field(&h, text.data, text.len);

	if (parse_json_task(j, t, dir, err) < 0) {
		pragma_err_prefix(err, "%s", f.data);
		goto out;
	}

	pragma_buf_reset(&f);
	pragma_buf_addf(&f, "%s/reference.c", dir);
	if (pragma_read_file(f.data, &text, 4 << 20, err) < 0) {
		pragma_err_hint(err, "a native task needs reference.c implementing pk_forward");
		goto out;
	}
	t->source = pragma_buf_detach(&text, NULL);
	t->source_name = xstrdup("reference.c");
	pragma_sha256_field(&h, t->source, strlen(t->source));
	pragma_buf_addf(&base, "%s/baseline.c", dir);
	if (pragma_path_exists(base.data)) {
		t->has_baseline_c = 1;
		if (pragma_read_file(base.data, &text, 4 << 20, err) < 0)
			goto out;
		pragma_sha256_field(&h, text.data, text.len);
	}
	snprintf(t->runtime, sizeof(t->runtime), "%s",
		 pragma_compiler_version(getenv("PRAGMA_CC") && *getenv("PRAGMA_CC") ? getenv("PRAGMA_CC") : "gcc"));
	pragma_sha256_field(&h, t->runtime, strlen(t->runtime));
	hash_overrides(&h, t);
	pragma_sha256_hex(&h, t->content_hash);
	ret = 0;
out:
	pragma_buf_release(&f);
	pragma_buf_release(&text);
	pragma_buf_release(&base);
	return ret;
}

static int specs_from_bridge(json_t *arr, const char *what, struct pragma_tensor_spec **out, int *n,
			     struct pragma_err *err)
{
	size_t i;
	json_t *e;

	if (!json_is_array(arr))
		return pragma_err_set(err, PRAGMA_E_INTERNAL, "bridge info lacks '%s'", what);
	*out = calloc(json_array_size(arr) + 1, sizeof(**out));
	*n = (int)json_array_size(arr);
	json_array_foreach(arr, i, e) {
		struct pragma_tensor_spec *s = &(*out)[i];
		const char *name = json_string_value(json_object_get(e, "name"));
		const char *role = json_string_value(json_object_get(e, "role"));
		const char *dt = json_string_value(json_object_get(e, "dtype"));
		json_t *shape = json_object_get(e, "shape"), *d;
		size_t k;

		snprintf(s->name, sizeof(s->name), "%s", name ? name : "?");
		snprintf(s->role, sizeof(s->role), "%s", role ? role : "output");
		if (!dt || pragma_dtype_from_name(dt, &s->dtype) < 0)
			return pragma_err_set(err, PRAGMA_E_INPUT, "%s '%s' has dtype %s, which the kernel ABI lacks",
					      what, s->name, dt ? dt : "(none)");
		if (!json_is_array(shape) || json_array_size(shape) > PK_MAX_DIMS)
			return pragma_err_set(err, PRAGMA_E_INPUT, "%s '%s' has more than %d dimensions", what,
					      s->name, PK_MAX_DIMS);
		s->ndim = (int)json_array_size(shape);
		json_array_foreach(shape, k, d)
			s->shape[k] = json_integer_value(d);
	}
	return 0;
}

static int load_kernelbench(const char *path, struct pragma_task *t, struct pragma_err *err)
{
	struct pragma_buf src = PRAGMA_BUF_INIT, script = PRAGMA_BUF_INIT, bridge = PRAGMA_BUF_INIT;
	struct pragma_buf cache = PRAGMA_BUF_INIT, info = PRAGMA_BUF_INIT;
	struct pragma_sha256 h;
	char versions[128], tol[32];
	json_t *j = NULL;
	json_error_t jerr;
	const char *s;
	int ret = -1;

	if (pragma_read_file(path, &src, 8 << 20, err) < 0)
		goto out;
	if (pragma_bridge_versions(versions, sizeof(versions), err) < 0)
		goto out;
	if (pragma_data_path("bridge/pragma_bridge.py", &bridge, err) < 0 ||
	    pragma_read_file(bridge.data, &script, 8 << 20, err) < 0)
		goto out;
	snprintf(t->runtime, sizeof(t->runtime), "%s", versions);
	pragma_sha256_init(&h);
	pragma_sha256_field(&h, "kernelbench", 11);
	pragma_sha256_field(&h, src.data, src.len);
	pragma_sha256_field(&h, script.data, script.len);
	pragma_sha256_field(&h, versions, strlen(versions));
	hash_overrides(&h, t);
	pragma_sha256_hex(&h, t->content_hash);

	/* The bridge's answer depends only on the content hash: cache it. */
	if (pragma_cache_dir(&cache, err) < 0)
		goto out;
	pragma_buf_addf(&cache, "/info");
	if (pragma_mkdir_p(cache.data, 0755, err) < 0)
		goto out;
	pragma_buf_addf(&info, "%s/%s.json", cache.data, t->content_hash);
	j = json_load_file(info.data, 0, &jerr);
	if (j && !json_is_true(json_object_get(j, "ok"))) {
		json_decref(j);
		j = NULL;
	}
	if (!j) {
		const char *args[64];
		int n = 0;
		args[n++] = "info";
		args[n++] = path;
		for (int i = 0; i < t->n_overrides && n < 60; i++) {
			args[n++] = "--set";
			args[n++] = t->overrides[i];
		}
		args[n] = NULL;
		pragma_info("running the PyTorch bridge on %s", path);
		if (pragma_bridge_run(args, 1, 600000, &j, err) < 0)
			goto out;
		char *dump = json_dumps(j, JSON_COMPACT | JSON_PRESERVE_ORDER);
		struct pragma_err ignore = PRAGMA_ERR_INIT;
		if (dump && pragma_write_file_atomic(info.data, dump, strlen(dump), &ignore) < 0)
			pragma_warn("cannot cache task info: %s", ignore.msg);
		free(dump);
	}
	t->meta = j;
	s = json_string_value(json_object_get(j, "name"));
	{
		struct pragma_buf stem = PRAGMA_BUF_INIT;
		pragma_path_stem(path, &stem);
		t->name = xstrdup(s ? s : stem.data);
		pragma_buf_release(&stem);
	}
	s = json_string_value(json_object_get(j, "category"));
	t->category = xstrdup(s && pragma_category_valid(s) ? s : "others");
	t->description = xstrdup(json_string_value(json_object_get(j, "description")));
	if (specs_from_bridge(json_object_get(j, "inputs"), "input", &t->inputs, &t->n_inputs, err) < 0 ||
	    specs_from_bridge(json_object_get(j, "outputs"), "output", &t->outputs, &t->n_outputs, err) < 0)
		goto out;
	if (!t->n_outputs) {
		pragma_err_set(err, PRAGMA_E_INPUT, "%s: forward() returns no tensor", path);
		goto out;
	}
	compute_bytes(t);
	json_t *fl = json_object_get(j, "flops");
	t->flops = json_is_number(fl) ? json_number_value(fl) : -1;
	s = json_string_value(json_object_get(j, "flops_method"));
	snprintf(t->flops_method, sizeof(t->flops_method), "%s", s ? s : "unknown");
	fl = json_object_get(j, "flops_transcendental");
	t->flops_transcendental = json_is_number(fl) && t->flops > 0 ? json_number_value(fl) : 0;
	default_tolerance(t);
	/* "# pragma: rtol=.. atol=.. (absolute) | atol_rms=.. (x RMS) norm=.." */
	pragma_comment_value(src.data, "atol", tol, sizeof(tol));
	if (*tol) {
		t->atol = strtod(tol, NULL);
		t->atol_stated = t->atol_abs = 1;
	}
	pragma_comment_value(src.data, "atol_rms", tol, sizeof(tol));
	if (*tol && !t->atol_abs) {
		t->atol = strtod(tol, NULL);
		t->atol_stated = 1;
	}
	pragma_comment_value(src.data, "rtol", tol, sizeof(tol));
	if (*tol) {
		t->rtol = strtod(tol, NULL);
		t->rtol_stated = 1;
	}
	pragma_comment_value(src.data, "norm", tol, sizeof(tol));
	if (*tol)
		t->norm_tol = strtod(tol, NULL);
	t->source = pragma_buf_detach(&src, NULL);
	t->source_name = xstrdup("model.py");
	ret = 0;
out:
	pragma_buf_release(&src);
	pragma_buf_release(&script);
	pragma_buf_release(&bridge);
	pragma_buf_release(&cache);
	pragma_buf_release(&info);
	return ret;
}

int pragma_task_load(const char *path, const char *const *overrides, int n_overrides, struct pragma_task *t,
		     struct pragma_err *err)
{
	size_t len = strlen(path);
	int ret;

	memset(t, 0, sizeof(*t));
	t->path = xstrdup(path);
	t->overrides = calloc((size_t)n_overrides + 1, sizeof(char *));
	for (int i = 0; i < n_overrides; i++) {
		if (!strchr(overrides[i], '=')) {
			pragma_err_set(err, PRAGMA_E_INPUT, "--set '%s': expected NAME=VALUE", overrides[i]);
			pragma_task_release(t);
			return -1;
		}
		t->overrides[t->n_overrides++] = xstrdup(overrides[i]);
	}
	if (is_native_dir(path)) {
		t->kind = PRAGMA_TASK_NATIVE;
		ret = load_native(path, t, err);
	} else if (len > 3 && !strcmp(path + len - 3, ".py") && !pragma_is_dir(path)) {
		t->kind = PRAGMA_TASK_KERNELBENCH;
		ret = load_kernelbench(path, t, err);
	} else if (pragma_is_dir(path)) {
		ret = pragma_err_set(err, PRAGMA_E_INPUT, "%s is a folder without task.json", path);
		pragma_err_hint(err, "a native C task is a folder with task.json and reference.c");
	} else {
		ret = pragma_err_set(err, PRAGMA_E_INPUT, "%s is neither a KernelBench .py file nor a task folder",
				     path);
	}
	if (ret < 0)
		pragma_task_release(t);
	else
		pragma_task_facts_fill(t);
	return ret;
}

static json_t *specs_json(const struct pragma_tensor_spec *s, int n)
{
	json_t *a = json_array();

	for (int i = 0; i < n; i++) {
		json_t *shape = json_array();
		for (int k = 0; k < s[i].ndim; k++)
			json_array_append_new(shape, json_integer(s[i].shape[k]));
		json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:o}", "name", s[i].name, "role", s[i].role,
						   "dtype", pragma_dtype_name(s[i].dtype), "shape", shape));
	}
	return a;
}

json_t *pragma_task_json(const struct pragma_task *t)
{
	json_t *o = json_object();
	json_t *ov = json_array();

	json_object_set_new(o, "name", json_string(t->name));
	json_object_set_new(o, "path", json_string(t->path));
	json_object_set_new(o, "kind", json_string(t->kind == PRAGMA_TASK_NATIVE ? "native" : "kernelbench"));
	json_object_set_new(o, "category", json_string(t->category));
	json_object_set_new(o, "description", t->description && *t->description ? json_string(t->description) : json_null());
	json_object_set_new(o, "inputs", specs_json(t->inputs, t->n_inputs));
	json_object_set_new(o, "outputs", specs_json(t->outputs, t->n_outputs));
	json_object_set_new(o, "flops", t->flops >= 0 ? json_real(t->flops) : json_null());
	json_object_set_new(o, "flops_method", json_string(t->flops_method));
	json_object_set_new(o, "flops_transcendental", json_real(t->flops_transcendental));
	json_object_set_new(o, "bytes", json_real(t->bytes));
	json_object_set_new(o, "atol", json_real(t->atol));
	json_object_set_new(o, "rtol", json_real(t->rtol));
	for (int i = 0; i < t->n_overrides; i++)
		json_array_append_new(ov, json_string(t->overrides[i]));
	json_object_set_new(o, "overrides", ov);
	json_object_set_new(o, "runtime", json_string(t->runtime));
	json_object_set_new(o, "content_hash", json_string(t->content_hash));
	if (t->kind == PRAGMA_TASK_NATIVE)
		json_object_set_new(o, "baseline", json_string(t->has_baseline_c ? "baseline.c" : "reference.c"));
	json_t *facts = json_array();
	for (int i = 0; i < t->n_facts; i++)
		json_array_append_new(facts, json_pack("{s:s, s:s, s:s}", "kind", t->facts[i].kind, "name",
						       t->facts[i].name, "value", t->facts[i].value));
	json_object_set_new(o, "facts", facts);
	json_object_set_new(o, "source_name", json_string(t->source_name));
	json_object_set_new(o, "source", json_string(t->source));
	return o;
}

void pragma_task_flops_text(const struct pragma_task *t, struct pragma_buf *out)
{
	if (t->flops <= 0)
		return;
	pragma_buf_addf(out, "%.3g FLOP (%s", t->flops, t->flops_method);
	/* A softmax's exp costs far more than the 1 FLOP it counts as. */
	if (t->flops_transcendental > 0)
		pragma_buf_addf(out, "; %.3g of them exp/log/tanh-like evaluations, counted as 1 FLOP each though each "
				     "takes 10-20 instructions, so the compute bound understates this task",
				t->flops_transcendental);
	pragma_buf_adds(out, "), ");
}

double pragma_task_output_bytes(const struct pragma_task *t)
{
	double b = 0;

	for (int i = 0; i < t->n_outputs; i++)
		b += (double)pragma_shape_numel(t->outputs[i].shape, t->outputs[i].ndim) *
		     (double)pragma_dtype_size(t->outputs[i].dtype);
	return b;
}
