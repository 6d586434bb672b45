#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pragma/bridge.h"
#include "pragma/buf.h"
#include "pragma/fs.h"
#include "pragma/log.h"
#include "pragma/proc.h"

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
	 * every call (DESIGN 3.3); the baseline records which allocator ran. */
	if (!getenv("PRAGMA_NO_TCMALLOC") && access(TCMALLOC, R_OK) == 0) {
		snprintf(preload, sizeof(preload), "LD_PRELOAD=%s", TCMALLOC);
		env[n++] = preload;
	}
	env[n++] = "PYTHONDONTWRITEBYTECODE=1";
	env[n] = NULL;
	return env;
}

int pragma_bridge_run(const char *const *args, int threads, int timeout_ms, json_t **out,
		      struct pragma_err *err)
{
	struct pragma_buf script = PRAGMA_BUF_INIT;
	struct pragma_child c = PRAGMA_CHILD_INIT;
	const char *argv[64];
	json_error_t jerr;
	json_t *o = NULL;
	int n = 0, ret = -1;
	char st[64];

	*out = NULL;
	if (pragma_data_path("bridge/pragma_bridge.py", &script, err) < 0)
		return -1;
	argv[n++] = pragma_bridge_python();
	argv[n++] = script.data;
	for (int i = 0; args[i] && n < 62; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	c.argv = argv;
	c.env = pragma_bridge_env(threads > 0 ? threads : 1);
	c.timeout_ms = timeout_ms;
	c.out_cap = 16 << 20;
	c.err_cap = 1 << 20;
	if (pragma_child_run(&c, err) < 0) {
		pragma_err_hint(err, "install python3 (scripts/install-deps.sh) or set PRAGMA_PYTHON");
		goto out;
	}
	o = json_loadb(c.out.data, c.out.len, 0, &jerr);
	if (!o || !json_is_object(o)) {
		pragma_buf_rtrim(&c.err);
		const char *tail = c.err.len > 600 ? c.err.data + c.err.len - 600 : c.err.data;
		pragma_err_set(err, c.timed_out ? PRAGMA_E_ENV : PRAGMA_E_INTERNAL, "the PyTorch bridge %s without an answer%s%s",
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
	json_decref(o);
	pragma_child_release(&c);
	pragma_buf_release(&script);
	return ret;
}
