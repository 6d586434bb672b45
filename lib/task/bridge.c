#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pragma/bridge.h"
#include "pragma/buf.h"
#include "pragma/config.h"
#include "pragma/fs.h"
#include "pragma/log.h"
#include "pragma/proc.h"
#include "pragma/task.h"

#define TCMALLOC "/usr/lib/x86_64-linux-gnu/libtcmalloc_minimal.so.4"

const char *pragma_bridge_python(void)
{
	const char *p = getenv("PRAGMA_PYTHON");

	return p && *p ? p : "/usr/bin/python3";
}

int pragma_bridge_versions(char *out, size_t len, struct pragma_err *err)
{
	static char cached[128];
	static const char *code =
		"import sys, importlib.metadata as m\n"
		"def v(n):\n"
		"    try: return m.version(n)\n"
		"    except Exception: return 'none'\n"
		"print('python', sys.version.split()[0], 'torch', v('torch'), 'numpy', v('numpy'))\n";
	const char *argv[] = { pragma_bridge_python(), "-c", code, NULL };
	struct pragma_child c = PRAGMA_CHILD_INIT;
	int ret = -1;

	if (cached[0]) {
		snprintf(out, len, "%s", cached);
		return 0;
	}
	c.argv = argv;
	c.timeout_ms = 60000;
	if (pragma_child_run(&c, err) < 0) {
		pragma_err_hint(err, "install Debian's python3-torch (scripts/install-deps.sh), or set PRAGMA_PYTHON");
		goto out;
	}
	pragma_buf_rtrim(&c.out);
	if (!c.exited || c.exit_code || !strstr(c.out.data, "torch ") || strstr(c.out.data, "torch none")) {
		pragma_err_set(err, PRAGMA_E_ENV, "%s cannot find torch", pragma_bridge_python());
		pragma_err_hint(err, "apt-get install python3-torch python3-numpy (scripts/install-deps.sh), "
				     "or point PRAGMA_PYTHON at an interpreter with torch");
		goto out;
	}
	snprintf(cached, sizeof(cached), "%s", c.out.data);
	snprintf(out, len, "%s", cached);
	ret = 0;
out:
	pragma_child_release(&c);
	return ret;
}

const char *const *pragma_bridge_env(int threads)
{
	static char omp[32], blas[48], mkl[32], preload[256];
	static const char *env[8];
	int n = 0;

	snprintf(omp, sizeof(omp), "OMP_NUM_THREADS=%d", threads);
	snprintf(blas, sizeof(blas), "OPENBLAS_NUM_THREADS=%d", threads);
	snprintf(mkl, sizeof(mkl), "MKL_NUM_THREADS=%d", threads);
	env[n++] = omp;
	env[n++] = blas;
	env[n++] = mkl;
	/* tcmalloc keeps freed pages, so torch does not pay for fresh pages on
	 * every call (DESIGN 3.3); the baseline records which allocator ran.
	 * PRAGMA_NO_TCMALLOC is checked at startup; a bad value here means on. */
	int no_tcmalloc = 0;
	if (pragma_setting_bool("PRAGMA_NO_TCMALLOC", &no_tcmalloc, NULL) < 0)
		no_tcmalloc = 1;
	if (!no_tcmalloc && access(TCMALLOC, R_OK) == 0) {
		snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", TCMALLOC);
		env[n++] = preload;
	}
	env[n++] = "PYTHONDONTWRITEBYTECODE=1";
	env[n] = NULL;
	return env;
}

/* What a run of the bridge is for, in words: "export 18_softmax". */
static void bridge_what(const char *const *args, char *out, size_t len)
{
	static const struct {
		const char *cmd, *verb;
	} verbs[] = { { "info", "load" }, { "export", "export" }, { "time", "time" }, { "versions", "report its versions" } };
	const char *verb = args[0] ? args[0] : "run";
	struct pragma_buf stem = PRAGMA_BUF_INIT;

	for (size_t i = 0; i < sizeof(verbs) / sizeof(verbs[0]); i++)
		if (args[0] && !strcmp(args[0], verbs[i].cmd))
			verb = verbs[i].verb;
	if (args[0] && args[1] && args[1][0] != '-') {
		pragma_path_stem(args[1], &stem);
		snprintf(out, len, "%s %s", verb, stem.data);
	} else {
		snprintf(out, len, "%s", verb);
	}
	pragma_buf_release(&stem);
}

/* The last "pragma_bridge: running WHAT" line the bridge wrote on stderr
 * (Problem.call in bridge/pragma_bridge.py): the problem code it is in. */
static void bridge_phase(const struct pragma_buf *err, char *out, size_t len)
{
	static const char mark[] = "pragma_bridge: running ";
	const char *last = NULL, *p = err->data;

	out[0] = '\0';
	if (!err->len)
		return;
	while ((p = strstr(p, mark))) {
		if (p == err->data || p[-1] == '\n')
			last = p;
		p += sizeof(mark) - 1;
	}
	if (last) {
		last += sizeof(mark) - 1;
		snprintf(out, len, "running %.*s", (int)strcspn(last, "\r\n"), last);
	}
}

struct bridge_wait {
	const char *what;
	int progress; /* progress id, -1 before the first few seconds */
	int started;
};

#define BRIDGE_QUIET_MS 3000

/* After a few seconds a wait says what it waits for; a step that is quick
 * shows nothing. */
static void bridge_tick(struct pragma_child *c, double elapsed_ms, void *ctx)
{
	struct bridge_wait *w = ctx;
	char phase[160], text[400];

	if (elapsed_ms < BRIDGE_QUIET_MS)
		return;
	bridge_phase(&c->err, phase, sizeof(phase));
	snprintf(text, sizeof(text), "waiting for the PyTorch bridge to %s (%s, %.0f s)…", w->what,
		 phase[0] ? phase : "starting Python and torch", elapsed_ms / 1000);
	if (!w->started) {
		w->progress = pragma_progress_begin("%s", text);
		w->started = 1;
	} else {
		pragma_progress_update(w->progress, "%s", text);
	}
}

int pragma_bridge_run(const char *const *args, int threads, int timeout_ms, json_t **out,
		      struct pragma_err *err)
{
	struct pragma_buf script = PRAGMA_BUF_INIT;
	int ret;

	*out = NULL;
	if (pragma_data_path("bridge/pragma_bridge.py", &script, err) < 0)
		return -1;
	ret = pragma_bridge_run_script(script.data, args, threads, timeout_ms, out, err);
	pragma_buf_release(&script);
	return ret;
}

int pragma_bridge_run_script(const char *script, const char *const *args, int threads, int timeout_ms, json_t **out,
			     struct pragma_err *err)
{
	struct pragma_child c = PRAGMA_CHILD_INIT;
	struct bridge_wait w = { .progress = -1 };
	const char *argv[200];
	char what[200], phase[160];
	json_error_t jerr;
	json_t *o = NULL;
	int n = 0, ret = -1, from_setting = 0;
	double secs;
	char st[64];

	*out = NULL;
	/* PRAGMA_BRIDGE_TIMEOUT (or [bridge] timeout) replaces the caller's deadline. */
	switch (pragma_setting_seconds("PRAGMA_BRIDGE_TIMEOUT", &secs, err)) {
	case -1:
		return -1;
	case 1:
		timeout_ms = secs * 1000 > 2e9 ? 2000000000 : (int)(secs * 1000 + 0.5);
		if (timeout_ms < 1)
			timeout_ms = 1;
		from_setting = 1;
		break;
	default:
		break;
	}
	argv[n++] = pragma_bridge_python();
	argv[n++] = script;
	for (int i = 0; args[i] && n < 198; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	bridge_what(args, what, sizeof(what));
	w.what = what;
	c.argv = argv;
	c.env = pragma_bridge_env(threads > 0 ? threads : 1);
	c.timeout_ms = timeout_ms;
	c.out_cap = 16 << 20;
	c.err_cap = 1 << 20;
	c.tick = bridge_tick;
	c.tick_ctx = &w;
	c.tick_ms = 1000;
	if (pragma_child_run(&c, err) < 0) {
		pragma_err_hint(err, "install python3 (scripts/install-deps.sh) or set PRAGMA_PYTHON");
		goto out;
	}
	if (c.timed_out) {
		bridge_phase(&c.err, phase, sizeof(phase));
		pragma_err_set(err, PRAGMA_E_ENV, "the PyTorch bridge did not %s within %.0f s%s%s (killed)", what,
			       timeout_ms / 1000.0, phase[0] ? "; it was " : "", phase);
		pragma_err_hint(err, "%s; a problem this slow can be scaled down with --set NAME=VALUE, or given more time "
				"with PRAGMA_BRIDGE_TIMEOUT=SECONDS (%s)",
				strstr(phase, "forward") || strstr(phase, "get_inputs") || strstr(phase, "Model(") ?
					"the problem's own code was still running" : "check the problem file",
				from_setting ? "set now" : "not set");
		goto out;
	}
	o = json_loadb(c.out.data, c.out.len, 0, &jerr);
	if (!o || !json_is_object(o)) {
		pragma_buf_rtrim(&c.err);
		const char *tail = c.err.len > 600 ? c.err.data + c.err.len - 600 : c.err.data;
		pragma_err_set(err, PRAGMA_E_INTERNAL, "the PyTorch bridge %s without an answer%s%s",
			       pragma_child_status_str(&c, st, sizeof(st)), *tail ? ":\n" : "", tail);
		goto out;
	}
	if (!json_is_true(json_object_get(o, "ok"))) {
		const char *kind = json_string_value(json_object_get(o, "error"));
		const char *msg = json_string_value(json_object_get(o, "message"));
		const char *where = json_string_value(json_object_get(o, "where"));
		int env = kind && !strcmp(kind, "environment");

		pragma_err_set(err, env ? PRAGMA_E_ENV : PRAGMA_E_INPUT, "%s%s%s%s%s", where ? where : "",
			       where ? ": " : "", kind ? kind : "error", msg ? ": " : "", msg ? msg : "");
		if (env)
			pragma_err_hint(err, "run 'pragma doctor'");
		goto out;
	}
	*out = o;
	o = NULL;
	ret = 0;
out:
	if (w.started)
		pragma_progress_end(w.progress);
	json_decref(o);
	pragma_child_release(&c);
	return ret;
}

/* ---- task facts (from the bridge's info, or task.json's sizes) ---- */

static void fact_add(struct pragma_task *t, const char *kind, const char *name, const char *value)
{
	struct pragma_task_fact *f;

	if (!name || !value)
		return;
	f = realloc(t->facts, sizeof(*t->facts) * (size_t)(t->n_facts + 1));
	if (!f)
		abort();
	t->facts = f;
	f = &t->facts[t->n_facts++];
	memset(f, 0, sizeof(*f));
	snprintf(f->kind, sizeof(f->kind), "%s", kind);
	snprintf(f->name, sizeof(f->name), "%s", name);
	snprintf(f->value, sizeof(f->value), "%s", value);
}

/* A JSON number as a person writes it: 3, 1e-05, 0.5. */
static void number_text(const json_t *v, char *buf, size_t len)
{
	if (json_is_integer(v))
		snprintf(buf, len, "%lld", (long long)json_integer_value(v));
	else if (json_is_real(v))
		snprintf(buf, len, "%.10g", json_real_value(v));
	else if (json_is_true(v) || json_is_false(v))
		snprintf(buf, len, "%s", json_is_true(v) ? "True" : "False");
	else
		snprintf(buf, len, "?");
}

/* Is there an init_arg with this name and text? (self.dim = dim says it twice.) */
static int said(const struct pragma_task *t, const char *name, const char *value)
{
	for (int i = 0; i < t->n_facts; i++)
		if (!strcmp(t->facts[i].kind, "init_arg") && !strcmp(t->facts[i].name, name) &&
		    !strcmp(t->facts[i].value, value))
			return 1;
	return 0;
}

void pragma_task_facts_fill(struct pragma_task *t)
{
	const char *key;
	json_t *v, *x;
	size_t i;
	char num[64], name[64];

	free(t->facts);
	t->facts = NULL;
	t->n_facts = 0;
	if (!json_is_object(t->meta))
		return;
	if (t->kind == PRAGMA_TASK_NATIVE) {
		/* After --set: load_native applies overrides to meta's sizes. */
		json_object_foreach(json_object_get(t->meta, "sizes"), key, v) {
			number_text(v, num, sizeof(num));
			fact_add(t, "size", key, num);
		}
		return;
	}
	/* The bridge's info. Every field is optional: an info cached by an
	 * older bridge lacks them (its content hash changes with the bridge,
	 * so that is rare). */
	json_array_foreach(json_object_get(t->meta, "init_args"), i, x) {
		const char *n = json_string_value(json_object_get(x, "name"));
		const char *tx = json_string_value(json_object_get(x, "text"));
		fact_add(t, "init_arg", n, tx);
	}
	json_array_foreach(json_object_get(t->meta, "attributes"), i, x) {
		const char *n = json_string_value(json_object_get(x, "name"));
		const char *tx = json_string_value(json_object_get(x, "text"));
		if (n && tx && !said(t, n, tx))
			fact_add(t, "attribute", n, tx);
	}
	json_array_foreach(json_object_get(t->meta, "modules"), i, x) {
		const char *n = json_string_value(json_object_get(x, "name"));
		const char *ty = json_string_value(json_object_get(x, "type"));
		const char *cfg = json_string_value(json_object_get(x, "config"));
		if (!n || !ty || !cfg)
			continue;
		snprintf(name, sizeof(name), "%.40s (%.20s)", n, ty);
		fact_add(t, "module", name, cfg);
	}
	json_object_foreach(json_object_get(t->meta, "constants"), key, v) {
		number_text(v, num, sizeof(num));
		fact_add(t, "constant", key, num);
	}
}

void pragma_task_facts_text(const struct pragma_task *t, struct pragma_buf *out)
{
	int n_init = 0, n_const = 0, n_size = 0;

	for (int i = 0; i < t->n_facts; i++) {
		n_init += !strcmp(t->facts[i].kind, "init_arg");
		n_const += !strcmp(t->facts[i].kind, "constant");
		n_size += !strcmp(t->facts[i].kind, "size");
	}
	if (n_init) {
		pragma_buf_adds(out, "- Model(");
		for (int i = 0, k = 0; i < t->n_facts; i++)
			if (!strcmp(t->facts[i].kind, "init_arg"))
				pragma_buf_addf(out, "%s%s=%s", k++ ? ", " : "", t->facts[i].name, t->facts[i].value);
		pragma_buf_adds(out, "): the constructor arguments from get_init_inputs()\n");
	}
	for (int i = 0; i < t->n_facts; i++) {
		const struct pragma_task_fact *f = &t->facts[i];
		if (!strcmp(f->kind, "attribute"))
			pragma_buf_addf(out, "- self.%s = %s\n", f->name, f->value);
		else if (!strcmp(f->kind, "module"))
			pragma_buf_addf(out, "- submodule %s: %s\n", f->name, f->value);
	}
	if (n_const) {
		pragma_buf_adds(out, "- module constants:");
		for (int i = 0, k = 0; i < t->n_facts; i++)
			if (!strcmp(t->facts[i].kind, "constant"))
				pragma_buf_addf(out, "%s %s=%s", k++ ? "," : "", t->facts[i].name, t->facts[i].value);
		pragma_buf_addch(out, '\n');
	}
	if (n_size) {
		pragma_buf_adds(out, "- sizes:");
		for (int i = 0, k = 0; i < t->n_facts; i++)
			if (!strcmp(t->facts[i].kind, "size"))
				pragma_buf_addf(out, "%s %s=%s", k++ ? "," : "", t->facts[i].name, t->facts[i].value);
		pragma_buf_addch(out, '\n');
	}
}

/* The override of NAME in "NAME=VALUE" strings, or NULL. */
static const char *override_of(const struct pragma_task *t, const char *name, size_t len)
{
	for (int i = 0; i < t->n_overrides; i++)
		if (!strncmp(t->overrides[i], name, len) && t->overrides[i][len] == '=')
			return t->overrides[i] + len + 1;
	return NULL;
}

void pragma_task_source_text(const struct pragma_task *t, struct pragma_buf *out)
{
	const char *p = t->source ? t->source : "";

	if (t->kind != PRAGMA_TASK_KERNELBENCH || !t->n_overrides) {
		pragma_buf_adds(out, p);
		return;
	}
	/* The bridge runs the module with its top-level assignments of these
	 * names replaced: so does the text a model reads, or it would write
	 * a kernel for sizes that are not the ones it is tested with. */
	pragma_buf_adds(out, "# pragma runs this problem with");
	for (int i = 0; i < t->n_overrides; i++)
		pragma_buf_addf(out, " --set %s", t->overrides[i]);
	pragma_buf_adds(out, ": the assignments below carry those values.\n");
	while (*p) {
		size_t n = strcspn(p, "\n"), name = 0;
		const char *v = NULL;

		while (name < n && (p[name] == '_' || (p[name] >= 'A' && p[name] <= 'Z') ||
				    (p[name] >= 'a' && p[name] <= 'z') || (name && p[name] >= '0' && p[name] <= '9')))
			name++;
		if (name) {
			size_t k = name;
			while (k < n && (p[k] == ' ' || p[k] == '\t'))
				k++;
			if (k < n && p[k] == '=' && (k + 1 >= n || p[k + 1] != '='))
				v = override_of(t, p, name);
		}
		if (v)
			pragma_buf_addf(out, "%.*s = %s  # --set; the file says: %.*s", (int)name, p, v, (int)n, p);
		else
			pragma_buf_add(out, p, n);
		p += n;
		if (*p == '\n') {
			pragma_buf_addch(out, '\n');
			p++;
		}
	}
}
