/*
 * The Verifier: output comparison, source acceptance, the symbol
 * allow-list and ELF reading, verdict names and JSON, and whole
 * pragma_verify runs (verify and eval) on a tiny native task.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pragma/build.h"
#include "pragma/fs.h"
#include "pragma/proc.h"
#include "pragma/run.h"
#include "pragma/task.h"
#include "pragma/verify.h"

static char tmp[256];
static int have_cc;

/* ------------------------------------------------------------ compare */

static void make_f32(struct pragma_tensor *t, const float *v, int n)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	int64_t shape[2] = { n / 4, 4 };

	assert_int_equal(pragma_tensor_alloc(t, PK_FLOAT32, 2, shape, &err), 0);
	memcpy(t->data, v, sizeof(float) * (size_t)n);
}

static void test_compare(void **state)
{
	float want[8] = { 1, 2, 3, 4, -5, 6, 7, 1000 };
	float got[8];
	struct pragma_tensor w = PRAGMA_TENSOR_INIT, g = PRAGMA_TENSOR_INIT;
	struct pragma_cmp c;
	uint32_t poison = PRAGMA_POISON_F32;
	char idx[64];

	(void)state;
	make_f32(&w, want, 8);
	memcpy(got, want, sizeof(got));
	make_f32(&g, got, 8);
	assert_int_equal(pragma_compare(&g, &w, 1e-4, 1e-4, &c), 0);
	assert_int_equal(c.bad, 0);
	assert_int_equal(c.first_bad, -1);

	/* Within atol + rtol·|want|: 1000 may be off by 0.1001. */
	((float *)g.data)[7] = 1000.1f;
	((float *)g.data)[0] = 1.00005f;
	assert_int_equal(pragma_compare(&g, &w, 1e-4, 1e-4, &c), 0);
	assert_int_equal(c.bad, 0);
	assert_true(c.max_abs_err > 0.09);

	/* One wrong, one NaN, one never written. */
	((float *)g.data)[2] = 3.5f;
	((float *)g.data)[4] = NAN;
	memcpy((float *)g.data + 6, &poison, 4);
	assert_int_equal(pragma_compare(&g, &w, 1e-4, 1e-4, &c), 0);
	assert_int_equal(c.bad, 3);
	assert_int_equal(c.nonfinite, 1);
	assert_int_equal(c.unwritten, 1);
	assert_int_equal(c.first_bad, 2);
	assert_true(c.got == 3.5 && c.want == 3);
	assert_string_equal(pragma_index_str(c.first_bad, w.shape, w.ndim, idx, sizeof(idx)), "(0, 2)");
	assert_string_equal(pragma_index_str(6, w.shape, w.ndim, idx, sizeof(idx)), "(1, 2)");

	/* NaN in the reference needs NaN. */
	((float *)w.data)[4] = NAN;
	assert_int_equal(pragma_compare(&g, &w, 1e-4, 1e-4, &c), 0);
	assert_int_equal(c.nonfinite, 0);
	assert_int_equal(c.bad, 2);

	/* Shape mismatch is an error, not a verdict. */
	g.shape[0] = 1;
	g.shape[1] = 8;
	assert_int_equal(pragma_compare(&g, &w, 1e-4, 1e-4, &c), -1);
	pragma_tensor_release(&w);
	pragma_tensor_release(&g);
}

static void test_compare_ints(void **state)
{
	struct pragma_tensor w = PRAGMA_TENSOR_INIT, g = PRAGMA_TENSOR_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_cmp c;
	int64_t shape[1] = { 4 };

	(void)state;
	assert_int_equal(pragma_tensor_alloc(&w, PK_INT64, 1, shape, &err), 0);
	assert_int_equal(pragma_tensor_alloc(&g, PK_INT64, 1, shape, &err), 0);
	for (int i = 0; i < 4; i++)
		((int64_t *)w.data)[i] = ((int64_t *)g.data)[i] = 100 + i;
	((int64_t *)g.data)[1] = 102;
	memset((int64_t *)g.data + 3, PRAGMA_POISON_BYTE, 8);
	/* Integers are exact whatever the tolerance. */
	assert_int_equal(pragma_compare(&g, &w, 10, 10, &c), 0);
	assert_int_equal(c.bad, 2);
	assert_int_equal(c.unwritten, 1);
	pragma_tensor_release(&w);
	pragma_tensor_release(&g);
}

static void test_source(void **state)
{
	char why[256];
	static const char good[] = "// caf\xc3\xa9 \xe2\x82\xac\nint pk_forward(void);\n";
	static const char *const bad[] = {
		"",                                          /* empty */
		" \n\t\n",                                   /* blank */
		"int pk_forward;\xff\n",                     /* invalid byte */
		"int pk_forward; // \xc0\x80\n",             /* overlong NUL */
		"int pk_forward; // \xed\xa0\x80\n",         /* surrogate */
		"int pk_forward; // \xe2\x82",               /* truncated */
		"int main(void) { return 0; }\n",            /* no pk_forward */
		NULL,
	};

	(void)state;
	assert_int_equal(pragma_verify_source(good, strlen(good), 0, why, sizeof(why)), 0);
	for (int i = 0; bad[i]; i++)
		if (pragma_verify_source(bad[i], strlen(bad[i]), 0, why, sizeof(why)) == 0)
			fail_msg("source %d accepted", i);
	assert_int_equal(pragma_verify_source("int pk_forward;\0x", 17, 0, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "NUL"));
	assert_int_equal(pragma_verify_source(good, strlen(good), 10, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "limit"));
}

/* ------------------------------------------------------------ symbols */

static void test_symbol_allow_list(void **state)
{
	static const char *const ok[] = { "malloc", "free", "memcpy", "__memcpy_chk", "expf", "exp", "tanhf", "erff",
					  "sqrtf", "fmaxf", "__expf_finite", "_ZGVdN8v_expf", "GOMP_parallel",
					  "omp_get_num_threads", "__kmpc_fork_call", "pthread_create", "thrd_create",
					  "printf", "stderr", "__assert_fail", "__stack_chk_fail", "__cxa_finalize",
					  "__gmon_start__", "_ITM_registerTMCloneTable", "clock_gettime", "aligned_alloc",
					  "__popcountdi2", "__truncsfhf2", "sincosf", NULL };
	static const struct {
		const char *name, *why;
	} bad[] = { { "system", "process" }, { "execve", "process" }, { "fork", "process" }, { "dlopen", "load" },
		    { "socket", "network" }, { "connect", "network" }, { "fopen", "file" }, { "open64", "file" },
		    { "read", "file" }, { "cblas_sgemm", "BLAS" }, { "sgemm_", "BLAS" }, { "openblas_set_num_threads", "BLAS" },
		    { "syscall", "system call" }, { "mmap", "maps" }, { "signal", "signal" }, { "kill", "signal" },
		    { "exit", "ends" }, { "stdin", "stdin" }, { "frobnicate", "allow-list" }, { NULL, NULL } };
	const char *why;

	(void)state;
	for (int i = 0; ok[i]; i++)
		if (!pragma_symbol_allowed(ok[i], &why))
			fail_msg("%s refused: %s", ok[i], why);
	for (int i = 0; bad[i].name; i++) {
		if (pragma_symbol_allowed(bad[i].name, &why))
			fail_msg("%s allowed", bad[i].name);
		if (!strstr(why, bad[i].why))
			fail_msg("%s: '%s' does not say '%s'", bad[i].name, why, bad[i].why);
	}
	assert_true(pragma_library_allowed("libgomp.so.1"));
	assert_true(pragma_library_allowed("libm.so.6"));
	assert_false(pragma_library_allowed("libopenblas.so.0"));
	assert_false(pragma_library_allowed("libdl.so.2"));
}

static void compile(const char *name, const char *text, const char *extra, char *so, size_t len)
{
	char src[512];
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_buf log = PRAGMA_BUF_INIT;
	const char *flags[2] = { extra, NULL };
	struct pragma_build_opts bo = { .flags = extra ? flags : NULL };

	snprintf(src, sizeof(src), "%s/%s.c", tmp, name);
	snprintf(so, len, "%s/%s.so", tmp, name);
	assert_int_equal(pragma_write_file_atomic(src, text, strlen(text), &err), 0);
	if (pragma_build_so(src, so, &bo, &log, &err) < 0)
		fail_msg("%s: %s\n%s", name, err.msg, log.data);
	pragma_buf_release(&log);
}

static void test_symbols_read(void **state)
{
	char so[512];
	struct pragma_symbols s = PRAGMA_SYMBOLS_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	const char *pre[8];
	int found_expf = 0;

	(void)state;
	if (!have_cc)
		skip();
	compile("syms", "#include <pragma/kernel.h>\n#include <math.h>\n#include <stdlib.h>\n"
			"int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no) {\n"
			"  float *y = out[0].data; const float *x = in[0].data;\n"
			"  #pragma omp parallel for\n  for (int i = 0; i < 64; i++) y[i] = expf(x[i]);\n"
			"  return 0; }\n",
		NULL, so, sizeof(so));
	assert_int_equal(pragma_symbols_read(so, &s, &err), 0);
	for (int i = 0; i < s.n_imports; i++)
		found_expf |= !strcmp(s.imports[i], "expf");
	assert_true(found_expf);
	assert_int_equal(pragma_symbols_check(&s, &err), 0);
	assert_true(s.init_entries <= 1);
	assert_true(pragma_symbols_preload(&s, pre, 8) >= 1);
	pragma_symbols_release(&s);

	compile("syms_bad", "#include <pragma/kernel.h>\n#include <stdlib.h>\n#include <stdio.h>\n"
			    "volatile int seen;\n__attribute__((constructor)) static void early(void) { seen = 1; }\n"
			    "int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no) {\n"
			    "  FILE *f = fopen(\"x\", \"r\"); return system(\"true\") + (f != 0); }\n",
		NULL, so, sizeof(so));
	assert_int_equal(pragma_symbols_read(so, &s, &err), 0);
	assert_true(s.init_entries >= 2);
	assert_int_equal(pragma_symbols_check(&s, &err), -1);
	assert_int_equal(err.kind, PRAGMA_E_NEGATIVE);
	assert_non_null(strstr(err.msg, "fopen"));
	assert_non_null(strstr(err.msg, "system"));
	pragma_symbols_release(&s);
}

static void test_symbols_malformed(void **state)
{
	char p[512];
	unsigned char junk[4096];
	struct pragma_symbols s = PRAGMA_SYMBOLS_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;

	(void)state;
	snprintf(p, sizeof(p), "%s/junk.so", tmp);
	for (size_t i = 0; i < sizeof(junk); i++)
		junk[i] = (unsigned char)(i * 131 + 7);
	memcpy(junk, "\177ELF\2\1\1", 7);
	junk[16] = 3; /* ET_DYN */
	junk[17] = 0;
	assert_int_equal(pragma_write_file_atomic(p, junk, sizeof(junk), &err), 0);
	assert_int_equal(pragma_symbols_read(p, &s, &err), -1);
	assert_int_equal(err.kind, PRAGMA_E_NEGATIVE);
	assert_int_equal(pragma_write_file_atomic(p, "hi", 2, &err), 0);
	assert_int_equal(pragma_symbols_read(p, &s, &err), -1);
}

/* ------------------------------------------------------------ verdicts */

static void test_names(void **state)
{
	(void)state;
	for (int i = 0; i < PRAGMA_V__COUNT; i++) {
		const char *n = pragma_vstatus_name((enum pragma_vstatus)i);
		assert_int_equal(pragma_vstatus_from_name(n), i);
		if (i)
			assert_true(strlen(pragma_vstatus_hint((enum pragma_vstatus)i)) > 10);
	}
	assert_string_equal(pragma_vstatus_name(PRAGMA_V_WRONG_OUTPUT), "wrong_output");
	assert_int_equal(pragma_vstatus_from_name("link_error"), PRAGMA_V_LINK_FORBIDDEN);
}

/* ------------------------------------------------------------ end to end */

static struct pragma_task task;

static const char task_json[] =
	"{\"name\": \"twice\", \"category\": \"others\", \"description\": \"y = 2 x\",\n"
	" \"sizes\": {\"N\": 20011},\n"
	" \"inputs\": [{\"name\": \"x\", \"dtype\": \"float32\", \"shape\": [\"N\"],\n"
	"             \"init\": {\"dist\": \"uniform\", \"low\": -1.0, \"high\": 1.0}}],\n"
	" \"outputs\": [{\"name\": \"y\", \"dtype\": \"float32\", \"shape\": [\"N\"]}],\n"
	" \"tolerance\": {\"atol\": 1e-6, \"rtol\": 1e-6}, \"flops\": \"N\", \"bytes\": \"8*N\"}\n";

#define HEAD                                                                                         \
	"#include <pragma/kernel.h>\n#include <stdlib.h>\n#include <string.h>\n"                 \
	"int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no) {\n"    \
	"  const float *x = in[0].data; float *y = out[0].data; int64_t n = in[0].shape[0];\n"

static void verdict_of(const char *name, const char *src, int timed, struct pragma_verdict *v)
{
	char p[512];
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_verify_opts o = PRAGMA_VERIFY_DEFAULTS;

	snprintf(p, sizeof(p), "%s/%s.c", tmp, name);
	assert_int_equal(pragma_write_file_atomic(p, src, strlen(src), &err), 0);
	o.n_sets = 3;
	o.timeout_ms = 10000;
	o.time = timed;
	o.rounds = 3;
	o.reps = 6;
	o.sessions = 1; /* one pair of processes: 1 + 3 x 6 calls each */
	o.warmup = 1;
	o.max_wait_ms = -1;
	if (pragma_verify(&task, p, &o, v, &err) < 0)
		fail_msg("%s: %s", name, err.msg);
}

static void expect_verdict(const char *name, const char *src, enum pragma_vstatus want)
{
	struct pragma_verdict v;

	verdict_of(name, src, 0, &v);
	if (v.status != want)
		fail_msg("%s: wanted %s, got %s: %s", name, pragma_vstatus_name(want), pragma_vstatus_name(v.status),
			 v.message);
	assert_true(strlen(v.message) > 10);
	assert_null(strchr(v.message, '\n'));
	pragma_verdict_release(&v);
}

static void test_verify_kernels(void **state)
{
	struct pragma_verdict v;
	json_t *j;

	(void)state;
	if (!have_cc)
		skip();
	verdict_of("good", HEAD "  #pragma omp parallel for\n  for (int64_t i = 0; i < n; i++) y[i] = 2 * x[i];\n"
				"  return 0; }\n",
		   0, &v);
	if (v.status != PRAGMA_V_OK)
		fail_msg("good: %s: %s", pragma_vstatus_name(v.status), v.message);
	j = pragma_verdict_json(&v);
	assert_string_equal(json_string_value(json_object_get(j, "status")), "ok");
	assert_non_null(json_string_value(json_object_get(json_object_get(j, "sandbox"), "landlock")));
	assert_null(json_object_get(j, "time_ms"));
	json_decref(j);
	pragma_verdict_release(&v);

	expect_verdict("wrong", HEAD "  for (int64_t i = 0; i < n; i++) y[i] = 2 * x[i] + (i == 77);\n  return 0; }\n",
		       PRAGMA_V_WRONG_OUTPUT);
	expect_verdict("tail", HEAD "  for (int64_t i = 0; i < n - 3; i++) y[i] = 2 * x[i];\n  return 0; }\n",
		       PRAGMA_V_UNWRITTEN_OUTPUT);
	expect_verdict("cached", "static float *c;\n" HEAD
				 "  if (!c) { c = malloc(4 * n); for (int64_t i = 0; i < n; i++) c[i] = 2 * x[i]; }\n"
				 "  memcpy(y, c, 4 * n); return 0; }\n",
		       PRAGMA_V_OUTPUT_CACHED);
	expect_verdict("flags", "// pragma:flags -O2 -o /tmp/x\n" HEAD "return 0; }\n", PRAGMA_V_FORBIDDEN_FLAG);
	expect_verdict("syntax", HEAD "return 0 }\n", PRAGMA_V_COMPILE_ERROR);
	expect_verdict("empty", "\n\n", PRAGMA_V_INVALID_SOURCE);
	expect_verdict("dl", "#include <dlfcn.h>\n" HEAD "return dlopen(\"libm.so.6\", 0) != 0; }\n",
		       PRAGMA_V_LINK_FORBIDDEN);
}

static void test_eval(void **state)
{
	struct pragma_verdict v;
	json_t *j;

	(void)state;
	if (!have_cc)
		skip();
	verdict_of("evalgood", HEAD "  for (int64_t i = 0; i < n; i++) y[i] = x[i] + x[i];\n  return 0; }\n", 1, &v);
	if (v.status != PRAGMA_V_OK)
		fail_msg("eval: %s: %s", pragma_vstatus_name(v.status), v.message);
	/* 3 rounds of 6 calls, or more rounds when the machine was busy. */
	assert_true(v.cand.n_rounds >= 3 && v.cand.n_rounds <= 9);
	assert_int_equal(v.cand.stats.count, 6 * v.cand.n_rounds);
	assert_int_equal(v.base.stats.count, 6 * v.base.n_rounds);
	assert_true(v.speedup > 0);
	assert_true(v.speedup_min <= v.speedup_max);
	assert_string_equal(v.baseline_kind, "c-reference");
	j = pragma_verdict_json(&v);
	assert_non_null(json_object_get(j, "time_ms"));
	assert_non_null(json_object_get(json_object_get(j, "baseline_ms"), "median"));
	assert_true(json_is_number(json_object_get(j, "speedup")));
	assert_int_equal(json_array_size(json_object_get(json_object_get(j, "speedup_spread"), "rounds")),
			 (size_t)v.cand.n_rounds);
	json_decref(j);
	pragma_verdict_release(&v);

	/* Right while verified (9 calls), skipping work after that: the timing
	 * processes make 1 + 3 x 6 calls. */
	verdict_of("evalskip", "static int calls;\n" HEAD
			       "  if (++calls > 9) return 0;\n  for (int64_t i = 0; i < n; i++) y[i] = 2 * x[i];\n"
			       "  return 0; }\n",
		   1, &v);
	assert_int_equal(v.status, PRAGMA_V_TIMED_MISMATCH);
	pragma_verdict_release(&v);
}

static int setup(void **state)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	char dir[300], p[400];

	(void)state;
	snprintf(tmp, sizeof(tmp), "/tmp/pragma-test-verify-XXXXXX");
	if (!mkdtemp(tmp))
		return -1;
	setenv("PRAGMA_CACHE_DIR", tmp, 1);
	have_cc = pragma_which("gcc", NULL);
	if (!have_cc)
		return 0;
	snprintf(dir, sizeof(dir), "%s/task", tmp);
	if (pragma_mkdir_p(dir, 0755, &err) < 0)
		return -1;
	snprintf(p, sizeof(p), "%s/task.json", dir);
	pragma_write_file_atomic(p, task_json, strlen(task_json), &err);
	snprintf(p, sizeof(p), "%s/reference.c", dir);
	static const char ref[] = HEAD "  for (int64_t i = 0; i < n; i++) y[i] = 2 * x[i];\n  return 0; }\n";
	pragma_write_file_atomic(p, ref, strlen(ref), &err);
	if (pragma_task_load(dir, NULL, 0, &task, &err) < 0) {
		fprintf(stderr, "setup: %s\n", err.msg);
		return -1;
	}
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	if (have_cc)
		pragma_task_release(&task);
	pragma_rm_rf(tmp, NULL);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_compare),
		cmocka_unit_test(test_compare_ints),
		cmocka_unit_test(test_source),
		cmocka_unit_test(test_symbol_allow_list),
		cmocka_unit_test(test_symbols_read),
		cmocka_unit_test(test_symbols_malformed),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_verify_kernels),
		cmocka_unit_test(test_eval),
	};

	return cmocka_run_group_tests(tests, setup, teardown);
}
