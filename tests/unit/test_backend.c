/*
 * The backend interface (include/pragma/backend.h): the registry, and the
 * plumbing — a whole optimization run on a backend other than the CPU's
 * must run every kernel through that backend's harness. A test backend (the
 * CPU's, with its own harness: a wrapper that logs and runs pragma-harness)
 * drives pragma_optimize while $PRAGMA_HARNESS points at a poison harness
 * that logs and fails: any verification, timing session, comparison or
 * final measurement that reached the CPU harness directly (the bug of issue
 * 12, where the loop's comparisons of CUDA candidates ran on the CPU path)
 * shows up in the poison log and fails the run.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "pragma_test.h"

#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pragma/agents.h"
#include "pragma/backend.h"
#include "pragma/fs.h"
#include "pragma/machine.h"
#include "pragma/profile.h"
#include "pragma/run.h"

static char dir[256];
static struct pragma_backend test_backend;
static int profiles;

static void test_registry(void **state)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	const struct pragma_backend *const *all = pragma_backends();

	(void)state;
	assert_ptr_equal(all[0], &pragma_backend_cpu);
	assert_ptr_equal(pragma_backend_find("cpu", &err), &pragma_backend_cpu);
	assert_ptr_equal(pragma_backend_find("c", &err), &pragma_backend_cpu);
	assert_ptr_equal(pragma_backend_find("cuda", &err), &pragma_backend_cuda);
	assert_ptr_equal(pragma_backend_find("GPU", &err), &pragma_backend_cuda);
	assert_null(pragma_backend_find("rocm", &err));
	assert_int_equal(err.kind, PRAGMA_E_INPUT);
	assert_non_null(strstr(err.msg, "known: cpu, cuda"));
	assert_non_null(strstr(err.hint, "nvcc"));
	assert_ptr_equal(pragma_backend_for_path("k/kernel.cu"), &pragma_backend_cuda);
	assert_ptr_equal(pragma_backend_for_path("kernel.c"), &pragma_backend_cpu);
	assert_ptr_equal(pragma_backend_for_path("cu"), &pragma_backend_cpu);
	assert_ptr_equal(pragma_backend_or_default(NULL), &pragma_backend_cpu);
	/* Every backend fills every operation: nothing above it may have to
	 * ask which one it is. */
	for (int i = 0; all[i]; i++) {
		const struct pragma_backend *b = all[i];
		assert_non_null(b->name);
		assert_true(b->ext[0] == '.');
		assert_non_null(b->require);
		assert_non_null(b->peaks);
		assert_non_null(b->compiler_version);
		assert_non_null(b->flags);
		assert_non_null(b->build);
		assert_non_null(b->check_imports);
		assert_non_null(b->harness);
		assert_non_null(b->preload);
		assert_non_null(b->limits);
		assert_non_null(b->torch_script);
		assert_non_null(b->baseline);
		assert_non_null(b->profile);
		assert_non_null(b->diagnose);
		assert_non_null(b->prompt_vars);
		assert_true(b->collectors & PRAGMA_COL_TIMING);
	}
}

/* The test backend's harness: the logging wrapper. */
static int wrapped_harness(struct pragma_buf *path, struct pragma_err *err)
{
	(void)err;
	pragma_buf_reset(path);
	pragma_buf_addf(path, "%s/backend-harness.sh", dir);
	return 0;
}

/* Its collectors: counted (the CPU's would run the CPU harness, rightly
 * for the CPU backend, so they are not this test's subject). */
static int counted_profile(const struct pragma_profile_opts *o, struct pragma_profile *p, struct pragma_err *err)
{
	(void)o;
	(void)err;
	profiles++;
	pragma_profile_init(p);
	pragma_profile_set(p, "time.median_ms", 1.0, "timing");
	return 0;
}

static void write_exec(const char *path, const char *text)
{
	FILE *f = fopen(path, "w");

	assert_non_null(f);
	fputs(text, f);
	fclose(f);
	chmod(path, 0755);
}

static int count_lines(const char *path)
{
	FILE *f = fopen(path, "r");
	int n = 0, c;

	if (!f)
		return 0;
	while ((c = fgetc(f)) != EOF)
		n += c == '\n';
	fclose(f);
	return n;
}

static void test_loop_uses_the_backend(void **state)
{
	struct pragma_optimize_opts o = { 0 };
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_buf real = PRAGMA_BUF_INIT;
	char p[512], spec[640], db[512], poison_log[512], wrap_log[512], task[512];
	static const char *const sets[] = { "N=65536" };
	json_t *res = NULL;

	(void)state;
	if (access("/usr/bin/python3", X_OK) || system("/usr/bin/python3 -c 'import torch' 2>/dev/null")) {
		skip_because("needs Debian's python3-torch for the PyTorch baseline");
	}
	assert_int_equal(pragma_harness_path(&real, &err), 0);
	/* The machine's peaks are measured with pragma's own streaming kernels
	 * on the CPU: done before the poison goes in. */
	{
		struct pragma_machine m;
		assert_int_equal(pragma_machine_load(&m, 0, &err), 0);
	}
	snprintf(poison_log, sizeof(poison_log), "%s/poison.log", dir);
	snprintf(wrap_log, sizeof(wrap_log), "%s/backend.log", dir);
	/* The CPU harness, reached directly to run a kernel: logged, and it
	 * fails. (The compiler's jail is the same binary's `confine` mode,
	 * which every backend's builds use: passed through.) */
	snprintf(p, sizeof(p), "%s/poison-harness.sh", dir);
	{
		char text[2048];
		snprintf(text, sizeof(text),
			 "#!/bin/sh\ncase \"$1\" in confine) exec %s \"$@\";; esac\n"
			 "echo \"$@\" >> %s\necho poisoned >&2\nexit 99\n",
			 real.data, poison_log);
		write_exec(p, text);
	}
	setenv("PRAGMA_HARNESS", p, 1);
	/* The test backend's own harness: logged, then the real one. */
	snprintf(p, sizeof(p), "%s/backend-harness.sh", dir);
	{
		char text[2048];
		snprintf(text, sizeof(text), "#!/bin/sh\necho \"$@\" >> %s\nexec %s \"$@\"\n", wrap_log, real.data);
		write_exec(p, text);
	}
	/* A model: a slow kernel, then a fast one. */
	snprintf(p, sizeof(p), "%s/model.sh", dir);
	{
		char text[2048];
		snprintf(text, sizeof(text),
			 "#!/bin/sh\ncat >/dev/null\n"
			 "if [ \"$PRAGMA_ATTEMPT\" = 1 ]; then f=%s/fixtures/session/k3_slow.c; "
			 "else f=%s/fixtures/session/k4_fast.c; fi\n"
			 "echo 'Here it is.'; echo '```c'; cat \"$f\"; echo '```'\n",
			 getenv("PRAGMA_TEST_DATA"), getenv("PRAGMA_TEST_DATA"));
		write_exec(p, text);
	}
	snprintf(spec, sizeof(spec), "exec:%s", p);
	snprintf(db, sizeof(db), "%s/p.db", dir);
	snprintf(task, sizeof(task), "%s/fixtures/kb/small_relu.py", getenv("PRAGMA_TEST_DATA"));
	test_backend = pragma_backend_cpu;
	test_backend.name = "test";
	test_backend.harness = wrapped_harness;
	test_backend.profile = counted_profile;
	o.task = task;
	o.overrides = sets;
	o.n_overrides = 1;
	o.llm = (struct pragma_llm_options)PRAGMA_LLM_OPTIONS_INIT;
	o.llm.spec = spec;
	o.llm.cache = 0;
	o.mode = PRAGMA_MODE_PRAGMA;
	o.backend = &test_backend;
	o.attempts = 2;
	o.db = db;
	if (pragma_optimize(&o, &res, &err) < 0)
		fail_msg("optimize: %s (the poison harness ran %d times)", err.msg, count_lines(poison_log));
	assert_int_equal(count_lines(poison_log), 0);
	/* Verification of both attempts (2 runs), the baseline's session and
	 * the attempts' sessions (each with fresh kernel processes), the final
	 * comparison: all through the backend. */
	assert_true(count_lines(wrap_log) >= 8);
	assert_int_equal(profiles, 2);
	{
		const char *best = json_string_value(json_object_get(json_object_get(res, "best"), "path"));
		assert_non_null(best);
		assert_true(strlen(best) > 7);
		assert_string_equal(best + strlen(best) - 7, "/best.c");
	}
	json_decref(res);
	unsetenv("PRAGMA_HARNESS");
	pragma_buf_release(&real);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/pragma-test-backend-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	setenv("PRAGMA_CACHE_DIR", dir, 0);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pragma_rm_rf(dir, NULL);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_registry),
		cmocka_unit_test(test_loop_uses_the_backend),
	};
	return pragma_run_tests(tests, setup, teardown);
}
