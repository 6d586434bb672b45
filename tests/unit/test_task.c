/* Task loading (native C tasks; KernelBench ones are covered end to end),
 * size expressions, seeded input generation and the reference-data cache. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "pragma_test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pragma/buf.h"
#include "pragma/err.h"
#include "pragma/fs.h"
#include "pragma/refdata.h"
#include "pragma/task.h"
#include "pragma/tensor.h"

static char cache[256];
static char fixtures[1024];

static int setup(void **state)
{
	(void)state;
	snprintf(cache, sizeof(cache), "/tmp/pragma-test-task-XXXXXX");
	if (!mkdtemp(cache))
		return -1;
	setenv("PRAGMA_CACHE_DIR", cache, 1);
	snprintf(fixtures, sizeof(fixtures), "%s/fixtures/tasks", getenv("PRAGMA_TEST_DATA") ?
		 getenv("PRAGMA_TEST_DATA") : "tests");
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pragma_rm_rf(cache, NULL);
	return 0;
}

static void fixture(const char *name, char *out, size_t len)
{
	snprintf(out, len, "%s/%s", fixtures, name);
}

static void size_expressions(void **state)
{
	json_t *s = json_pack("{s:i, s:i}", "N", 100, "M_2", 7);
	struct pragma_err err = PRAGMA_ERR_INIT;
	int64_t v;

	(void)state;
	assert_int_equal(pragma_size_expr("N", s, &v, &err), 0);
	assert_int_equal(v, 100);
	assert_int_equal(pragma_size_expr("2*(N - M_2) + N/3 % 5", s, &v, &err), 0);
	assert_int_equal(v, 2 * (100 - 7) + (100 / 3) % 5);
	assert_int_equal(pragma_size_expr("-N+1", s, &v, &err), 0);
	assert_int_equal(v, -99);
	assert_int_equal(pragma_size_expr("K+1", s, &v, &err), -1);
	assert_non_null(strstr(err.msg, "unknown size 'K'"));
	assert_int_equal(pragma_size_expr("N/0", s, &v, &err), -1);
	assert_non_null(strstr(err.msg, "division by zero"));
	assert_int_equal(pragma_size_expr("(N", s, &v, &err), -1);
	assert_int_equal(pragma_size_expr("N $", s, &v, &err), -1);
	assert_int_equal(pragma_size_expr("99999999999*99999999999", s, &v, &err), -1);
	assert_non_null(strstr(err.msg, "overflow"));
	json_decref(s);
}

static void load_good_native(void **state)
{
	struct pragma_task t;
	struct pragma_err err = PRAGMA_ERR_INIT;
	char p[1200];
	const char *ov[] = { "N=2000" };

	(void)state;
	fixture("good_native", p, sizeof(p));
	assert_int_equal(pragma_task_load(p, NULL, 0, &t, &err), 0);
	assert_string_equal(t.name, "vadd");
	assert_string_equal(t.category, "others");
	assert_int_equal(t.kind, PRAGMA_TASK_NATIVE);
	assert_int_equal(t.n_inputs, 3);
	assert_int_equal(t.inputs[2].shape[0], 101);
	assert_int_equal(t.n_outputs, 1);
	assert_true(t.flops == 1000);
	assert_true(t.bytes == 1000 * 4 * 3 + 101 * 4);
	assert_true(t.atol == 1e-6);
	char h1[65];
	memcpy(h1, t.content_hash, 65);
	pragma_task_release(&t);

	assert_int_equal(pragma_task_load(p, ov, 1, &t, &err), 0);
	assert_int_equal(t.inputs[0].shape[0], 2000);
	assert_true(strcmp(h1, t.content_hash) != 0);
	pragma_task_release(&t);
}

static void expect_load_error(const char *name, const char *const *ov, int n, const char *needle)
{
	struct pragma_task t;
	struct pragma_err err = PRAGMA_ERR_INIT;
	char p[1200];

	fixture(name, p, sizeof(p));
	assert_int_equal(pragma_task_load(p, ov, n, &t, &err), -1);
	assert_int_equal(err.kind, PRAGMA_E_INPUT);
	if (!strstr(err.msg, needle))
		fail_msg("loading %s: '%s' does not mention '%s'", name, err.msg, needle);
}

static void native_errors(void **state)
{
	const char *bad_ov[] = { "Q=3" };
	const char *bad_val[] = { "N=abc" };

	(void)state;
	expect_load_error("bad_json", NULL, 0, "task.json:4:");
	expect_load_error("bad_category", NULL, 0, "category 'magic'");
	expect_load_error("bad_size", NULL, 0, "unknown size 'K'");
	expect_load_error("bad_dist", NULL, 0, "gaussian");
	expect_load_error("good_native", bad_ov, 1, "no size 'Q'");
	expect_load_error("good_native", bad_val, 1, "not a non-negative integer");
	expect_load_error("does_not_exist", NULL, 0, "neither");
}

/* A task.json written on the fly: the good fixture with one part replaced. */
static const char good_json[] =
	"{\"name\": \"vadd\", \"category\": \"others\", \"description\": \"c = a + b\",\n"
	" \"sizes\": {\"N\": 1000},\n"
	" \"inputs\": [\n"
	"  {\"name\": \"a\", \"dtype\": \"float32\", \"shape\": [\"N\"], \"init\": {\"dist\": \"uniform\", \"low\": -1, \"high\": 1}},\n"
	"  {\"name\": \"b\", \"dtype\": \"float32\", \"shape\": [\"N\"], \"init\": {\"dist\": \"normal\", \"mean\": 0, \"std\": 2}}],\n"
	" \"outputs\": [{\"name\": \"c\", \"dtype\": \"float32\", \"shape\": [\"N\"]}],\n"
	" \"flops\": \"N\", \"bytes\": \"12*N\", \"tolerance\": {\"atol\": 1e-6, \"rtol\": 1e-6}}\n";

static int load_json(const char *from, const char *to, struct pragma_task *t, struct pragma_err *err)
{
	char dir[512], p[600];
	struct pragma_buf text = PRAGMA_BUF_INIT;
	const char *at = strstr(good_json, from);
	int rc;

	assert_non_null(at);
	pragma_buf_add(&text, good_json, (size_t)(at - good_json));
	pragma_buf_adds(&text, to);
	pragma_buf_adds(&text, at + strlen(from));
	snprintf(dir, sizeof(dir), "%s/strict", cache);
	pragma_rm_rf(dir, NULL);
	assert_int_equal(pragma_mkdir_p(dir, 0755, err), 0);
	snprintf(p, sizeof(p), "%s/task.json", dir);
	assert_int_equal(pragma_write_file_atomic(p, text.data, text.len, err), 0);
	snprintf(p, sizeof(p), "%s/reference.c", dir);
	assert_int_equal(pragma_write_file_atomic(p, "int pk_forward;\n", 16, err), 0);
	pragma_buf_release(&text);
	rc = pragma_task_load(dir, NULL, 0, t, err);
	if (rc == 0)
		pragma_task_release(t);
	return rc;
}

static void expect_strict(const char *from, const char *to, const char *const *needles)
{
	struct pragma_task t;
	struct pragma_err err = PRAGMA_ERR_INIT;

	if (load_json(from, to, &t, &err) == 0)
		fail_msg("'%s' instead of '%s' was accepted", to, from);
	assert_int_equal(err.kind, PRAGMA_E_INPUT);
	assert_int_equal(pragma_err_exit_code(&err), 2);
	for (int i = 0; needles[i]; i++)
		if (!strstr(err.msg, needles[i]))
			fail_msg("'%s' instead of '%s': '%s' does not mention '%s'", to, from, err.msg, needles[i]);
}

/* Unknown keys and wrong types are errors that name the file, the field
 * and the keys that exist (the issue: "min"/"max" for uniform silently gave
 * [0, 1); a misspelled "tolerence" was ignored). */
static void strict_task_json(void **state)
{
	struct pragma_task t;
	struct pragma_err err = PRAGMA_ERR_INIT;

	(void)state;
	assert_int_equal(load_json("\"N\": 1000", "\"N\": 1000", &t, &err), 0);
	expect_strict("\"low\": -1, \"high\": 1", "\"min\": -50, \"max\": 50",
		      (const char *const[]){ "task.json", "inputs[0].init", "unknown key 'min'", "for dist 'uniform'",
					     "dist, low, high", NULL });
	expect_strict("\"tolerance\"", "\"tolerence\"",
		      (const char *const[]){ "unknown key 'tolerence'", "did you mean 'tolerance'", "name, category", NULL });
	expect_strict("\"atol\": 1e-6", "\"atol\": 1e-6, \"abstol\": 1",
		      (const char *const[]){ "tolerance: unknown key 'abstol'", "rtol, atol, atol_rms, norm", NULL });
	expect_strict("\"atol\": 1e-6", "\"atol\": \"1e-6\"",
		      (const char *const[]){ "tolerance.atol must be a number", NULL });
	expect_strict("\"atol\": 1e-6", "\"atol\": 1e-6, \"atol_rms\": 1e-4",
		      (const char *const[]){ "not both", NULL });
	expect_strict("\"shape\": [\"N\"]}]", "\"shape\": [\"N\"], \"init\": {\"dist\": \"constant\"}}]",
		      (const char *const[]){ "outputs[0]: unknown key 'init'", "outputs take no init", NULL });
	expect_strict("\"dtype\": \"float32\", \"shape\": [\"N\"], \"init\": {\"dist\": \"normal\"",
		      "\"dtype\": \"float32\", \"shap\": [\"N\"], \"init\": {\"dist\": \"normal\"",
		      (const char *const[]){ "inputs[1]: unknown key 'shap'", "did you mean 'shape'", NULL });
	expect_strict("\"N\": 1000", "\"N\": \"1000\"", (const char *const[]){ "sizes.N must be a non-negative integer", NULL });
	expect_strict("\"N\": 1000", "\"N\": 1000, \"2N\": 3", (const char *const[]){ "sizes: '2N'", NULL });
	expect_strict("\"mean\": 0", "\"mean\": [0]", (const char *const[]){ "inputs[1].init.mean must be a number", NULL });
	expect_strict("\"std\": 2", "\"std\": \"M\"", (const char *const[]){ "inputs[1].init.std", "unknown size 'M'", NULL });
	expect_strict("\"flops\": \"N\"", "\"flops\": true", (const char *const[]){ "flops must be a number", NULL });
	expect_strict("\"flops\": \"N\"", "\"flops\": -5", (const char *const[]){ "flops is negative", NULL });
	expect_strict("\"name\": \"b\"", "\"name\": \"a\"", (const char *const[]){ "inputs[1].name 'a' repeats", NULL });
	expect_strict("\"description\": \"c = a + b\"", "\"description\": 7",
		      (const char *const[]){ "'description' must be a string", NULL });
	expect_strict("\"outputs\": [{", "\"outputs\": [7, {", (const char *const[]){ "outputs[0] must be an object", NULL });
	expect_strict("\"init\": {\"dist\": \"normal\", \"mean\": 0, \"std\": 2}", "\"init\": {\"dist\": \"arange\", \"step\": 2}",
		      (const char *const[]){ "unknown key 'step' for dist 'arange'", "the known keys are dist", NULL });
	expect_strict("\"tolerance\": {\"atol\": 1e-6, \"rtol\": 1e-6}", "\"tolerance\": [1e-6]",
		      (const char *const[]){ "tolerance must be an object", NULL });

	/* What the tolerance states reaches the task. */
	assert_int_equal(load_json("\"atol\": 1e-6, \"rtol\": 1e-6",
				   "\"atol_rms\": 2e-5, \"rtol\": 3e-5, \"norm\": 1e-5, \"weak_reason\": \"demo\"", &t, &err),
			 0);
	char dir[512];
	snprintf(dir, sizeof(dir), "%s/strict", cache);
	assert_int_equal(pragma_task_load(dir, NULL, 0, &t, &err), 0);
	assert_true(t.rtol_stated && t.atol_stated && !t.atol_abs);
	assert_true(t.atol == 2e-5 && t.rtol == 3e-5 && t.norm_tol == 1e-5);
	assert_string_equal(t.weak_reason, "demo");
	pragma_task_release(&t);
}

/* Every built-in native task still loads under the strict reading. */
static void builtin_native_tasks_load(void **state)
{
	struct pragma_task_brief *b;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_buf d = PRAGMA_BUF_INIT;
	int n;

	(void)state;
	assert_int_equal(pragma_data_path("tasks/c", &d, &err), 0);
	assert_int_equal(pragma_task_scan(d.data, &b, &n, &err), 0);
	for (int i = 0; i < n; i++) {
		struct pragma_task t;
		if (pragma_task_load(b[i].path, NULL, 0, &t, &err) < 0)
			fail_msg("%s: %s", b[i].path, err.msg);
		pragma_task_release(&t);
	}
	free(b);
	pragma_buf_release(&d);
}

static void generation_is_seeded(void **state)
{
	struct pragma_task t;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_tensor a1, a2, a3, rp;
	char p[1200], d1[1300], d2[1300], d3[1300], f[1400];

	(void)state;
	fixture("good_native", p, sizeof(p));
	assert_int_equal(pragma_task_load(p, NULL, 0, &t, &err), 0);
	snprintf(d1, sizeof(d1), "%s/g1", cache);
	snprintf(d2, sizeof(d2), "%s/g2", cache);
	snprintf(d3, sizeof(d3), "%s/g3", cache);
	pragma_mkdir_p(d1, 0755, &err);
	pragma_mkdir_p(d2, 0755, &err);
	pragma_mkdir_p(d3, 0755, &err);
	assert_int_equal(pragma_gen_inputs(&t, 7, d1, &err), 0);
	assert_int_equal(pragma_gen_inputs(&t, 7, d2, &err), 0);
	assert_int_equal(pragma_gen_inputs(&t, 8, d3, &err), 0);
	snprintf(f, sizeof(f), "%s/in_000.npy", d1);
	assert_int_equal(pragma_npy_read(f, PK_FLOAT32, &a1, &err), 0);
	snprintf(f, sizeof(f), "%s/in_000.npy", d2);
	assert_int_equal(pragma_npy_read(f, PK_FLOAT32, &a2, &err), 0);
	snprintf(f, sizeof(f), "%s/in_000.npy", d3);
	assert_int_equal(pragma_npy_read(f, PK_FLOAT32, &a3, &err), 0);
	assert_memory_equal(a1.data, a2.data, a1.nbytes);
	assert_true(memcmp(a1.data, a3.data, a1.nbytes) != 0);
	for (int64_t i = 0; i < 1000; i++) {
		double v = pragma_tensor_get(&a1, i);
		assert_true(v >= -1 && v < 1);
	}
	/* CSR row pointers: 0 .. nnz, nondecreasing. */
	snprintf(f, sizeof(f), "%s/in_002.npy", d1);
	assert_int_equal(pragma_npy_read(f, PK_INT32, &rp, &err), 0);
	assert_true(pragma_tensor_get(&rp, 0) == 0);
	assert_true(pragma_tensor_get(&rp, 100) == 1000);
	for (int64_t i = 1; i <= 100; i++)
		assert_true(pragma_tensor_get(&rp, i) >= pragma_tensor_get(&rp, i - 1));
	pragma_tensor_release(&a1);
	pragma_tensor_release(&a2);
	pragma_tensor_release(&a3);
	pragma_tensor_release(&rp);
	pragma_task_release(&t);
}

static void reference_cache_rebuilds_corrupt_entries(void **state)
{
	struct pragma_task t;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_refset s[2], again[2];
	uint64_t seeds[2] = { pragma_ref_seed(0), pragma_ref_seed(1) };
	struct pragma_tensor a, b, c;
	char p[1200], f[4200];
	FILE *fp;

	(void)state;
	if (access(getenv("PRAGMA_BUILD_DIR") ? getenv("PRAGMA_BUILD_DIR") : ".", F_OK) != 0)
		skip_because("PRAGMA_BUILD_DIR does not exist: the built harness is needed");
	fixture("good_native", p, sizeof(p));
	assert_int_equal(pragma_task_load(p, NULL, 0, &t, &err), 0);
	if (pragma_ref_ensure(&t, seeds, 2, s, &err) < 0)
		fail_msg("ref_ensure: %s", err.msg);
	assert_true(s[0].rebuilt && s[1].rebuilt);
	assert_true(strcmp(s[0].dir, s[1].dir) != 0);

	/* The reference really ran: out = a + b. */
	pragma_ref_input_path(&s[0], 0, f, sizeof(f));
	assert_int_equal(pragma_npy_read(f, PK_FLOAT32, &a, &err), 0);
	pragma_ref_input_path(&s[0], 1, f, sizeof(f));
	assert_int_equal(pragma_npy_read(f, PK_FLOAT32, &b, &err), 0);
	pragma_ref_output_path(&s[0], 0, f, sizeof(f));
	assert_int_equal(pragma_npy_read(f, PK_FLOAT32, &c, &err), 0);
	for (int64_t i = 0; i < 1000; i++)
		assert_true((float)(pragma_tensor_get(&a, i) + pragma_tensor_get(&b, i)) == (float)pragma_tensor_get(&c, i));
	pragma_tensor_release(&a);
	pragma_tensor_release(&b);
	pragma_tensor_release(&c);

	/* Reused when intact. */
	assert_int_equal(pragma_ref_ensure(&t, seeds, 2, again, &err), 0);
	assert_false(again[0].rebuilt || again[1].rebuilt);

	/* Flip one byte of an expected output: detected and rebuilt. */
	pragma_ref_output_path(&s[1], 0, f, sizeof(f));
	fp = fopen(f, "r+b");
	assert_non_null(fp);
	fseek(fp, 200, SEEK_SET);
	fputc(0x55, fp);
	fclose(fp);
	assert_int_equal(pragma_ref_validate(s[1].dir, &err), -1);
	assert_int_equal(pragma_ref_ensure(&t, seeds, 2, again, &err), 0);
	assert_false(again[0].rebuilt);
	assert_true(again[1].rebuilt);
	assert_int_equal(pragma_ref_validate(s[1].dir, &err), 0);

	/* A partial entry (MANIFEST gone, as after a crash) is rebuilt too. */
	snprintf(f, sizeof(f), "%s/MANIFEST", s[0].dir);
	unlink(f);
	assert_int_equal(pragma_ref_ensure(&t, seeds, 2, again, &err), 0);
	assert_true(again[0].rebuilt);

	/* Pruning to a tiny bound evicts the least recently used entry. */
	uint64_t freed = 0;
	int left = 0;
	assert_int_equal(pragma_ref_prune(1, NULL, &freed, &left, &err), 0);
	assert_int_equal(left, 0);
	assert_true(freed > 0);
	assert_false(pragma_path_exists(s[0].dir));
	pragma_task_release(&t);
}

static void scan_builtin_suites(void **state)
{
	struct pragma_task_brief *b;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_buf d = PRAGMA_BUF_INIT;
	int n, cats[6] = { 0 };
	const char *names[6] = { "matmul", "activation", "normalization", "pooling_reduction", "conv", "others" };

	(void)state;
	assert_int_equal(pragma_data_path("tasks/cpu-l1", &d, &err), 0);
	assert_int_equal(pragma_task_scan(d.data, &b, &n, &err), 0);
	assert_true(n >= 40);
	for (int i = 0; i < n; i++) {
		assert_true(pragma_category_valid(b[i].category));
		for (int k = 0; k < 6; k++)
			cats[k] += !strcmp(b[i].category, names[k]);
	}
	for (int k = 0; k < 6; k++)
		if (cats[k] < 4)
			fail_msg("category %s has only %d tasks", names[k], cats[k]);
	free(b);
	pragma_buf_reset(&d);
	assert_int_equal(pragma_data_path("tasks/c", &d, &err), 0);
	assert_int_equal(pragma_task_scan(d.data, &b, &n, &err), 0);
	assert_true(n >= 4);
	free(b);
	pragma_buf_release(&d);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(size_expressions),
		cmocka_unit_test(load_good_native),
		cmocka_unit_test(native_errors),
		cmocka_unit_test(strict_task_json),
		cmocka_unit_test(builtin_native_tasks_load),
		cmocka_unit_test(generation_is_seeded),
		cmocka_unit_test(reference_cache_rebuilds_corrupt_entries),
		cmocka_unit_test(scan_builtin_suites),
	};
	return pragma_run_tests(tests, setup, teardown);
}
