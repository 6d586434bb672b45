/*
 * The Verifier: output comparison, source acceptance, the symbol
 * allow-list and ELF reading, verdict names and JSON, and whole
 * pragma_verify runs (verify and eval) on a tiny native task.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "pragma_test.h"
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

/* The old rule, |d| <= atol + rtol |w| with a fixed atol, no norm bound. */
static struct pragma_tolerance absolute(enum pk_dtype d, double atol, double rtol)
{
	struct pragma_tolerance t = { .dtype = d, .rtol = rtol, .atol = atol, .norm = -1, .source = "test" };

	t.exact = atol == 0 && rtol == 0;
	return t;
}

/* The default rule for one output of dtype d (what a task that states
 * nothing gets). */
static struct pragma_tolerance defaults(enum pk_dtype d)
{
	struct pragma_tensor_spec out = { .name = "y", .role = "output", .dtype = d, .ndim = 1, .shape = { 1 } };
	struct pragma_task t = { .outputs = &out, .n_outputs = 1 };
	struct pragma_tolerance tol;

	pragma_tolerance_resolve(&t, 0, -1, -1, &tol);
	return tol;
}

static void test_compare(void **state)
{
	float want[8] = { 1, 2, 3, 4, -5, 6, 7, 1000 };
	float got[8];
	struct pragma_tensor w = PRAGMA_TENSOR_INIT, g = PRAGMA_TENSOR_INIT;
	struct pragma_tolerance tol = absolute(PK_FLOAT32, 1e-4, 1e-4);
	struct pragma_cmp c;
	uint32_t poison = PRAGMA_POISON_F32;
	char idx[64];

	(void)state;
	make_f32(&w, want, 8);
	memcpy(got, want, sizeof(got));
	make_f32(&g, got, 8);
	assert_int_equal(pragma_compare(&g, &w, &tol, &c), 0);
	assert_int_equal(c.bad, 0);
	assert_int_equal(c.first_bad, -1);

	/* Within atol + rtol·|want|: 1000 may be off by 0.1001. */
	((float *)g.data)[7] = 1000.1f;
	((float *)g.data)[0] = 1.00005f;
	assert_int_equal(pragma_compare(&g, &w, &tol, &c), 0);
	assert_int_equal(c.bad, 0);
	assert_true(c.max_abs_err > 0.09);
	assert_true(c.norm_err > 0 && c.norm_err < 1e-4);

	/* One wrong, one NaN, one never written. */
	((float *)g.data)[2] = 3.5f;
	((float *)g.data)[4] = NAN;
	memcpy((float *)g.data + 6, &poison, 4);
	assert_int_equal(pragma_compare(&g, &w, &tol, &c), 1);
	assert_int_equal(c.bad, 3);
	assert_int_equal(c.nonfinite, 1);
	assert_int_equal(c.unwritten, 1);
	assert_int_equal(c.first_bad, 2);
	assert_true(c.got == 3.5 && c.want == 3);
	assert_string_equal(pragma_index_str(c.first_bad, w.shape, w.ndim, idx, sizeof(idx)), "(0, 2)");
	assert_string_equal(pragma_index_str(6, w.shape, w.ndim, idx, sizeof(idx)), "(1, 2)");

	/* NaN in the reference needs NaN. */
	((float *)w.data)[4] = NAN;
	assert_int_equal(pragma_compare(&g, &w, &tol, &c), 1);
	assert_int_equal(c.nonfinite, 0);
	assert_int_equal(c.bad, 2);

	/* Shape mismatch is an error, not a verdict. */
	g.shape[0] = 1;
	g.shape[1] = 8;
	assert_int_equal(pragma_compare(&g, &w, &tol, &c), -1);
	pragma_tensor_release(&w);
	pragma_tensor_release(&g);
}

static void test_compare_ints(void **state)
{
	struct pragma_tensor w = PRAGMA_TENSOR_INIT, g = PRAGMA_TENSOR_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_tolerance tol = absolute(PK_INT64, 10, 10);
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
	assert_int_equal(pragma_compare(&g, &w, &tol, &c), 1);
	assert_int_equal(c.bad, 2);
	assert_int_equal(c.unwritten, 1);
	/* Even past 2^53, where doubles cannot tell them apart. */
	((int64_t *)w.data)[0] = (1LL << 60) + 1;
	((int64_t *)g.data)[0] = (1LL << 60);
	assert_int_equal(pragma_compare(&g, &w, &tol, &c), 1);
	assert_int_equal(c.bad, 3);
	pragma_tensor_release(&w);
	pragma_tensor_release(&g);
}

/* Bools are compared as bools: one byte, 0 or 1. A kernel writing 255 for
 * true was accepted before (the byte read as "nonzero"). */
static void test_compare_bools(void **state)
{
	struct pragma_tensor w = PRAGMA_TENSOR_INIT, g = PRAGMA_TENSOR_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_tolerance tol = defaults(PK_BOOL);
	struct pragma_cmp c;
	int64_t shape[1] = { 6 };
	static const unsigned char ref[6] = { 1, 0, 1, 1, 0, 1 };

	(void)state;
	assert_true(tol.exact);
	assert_int_equal(pragma_tensor_alloc(&w, PK_BOOL, 1, shape, &err), 0);
	assert_int_equal(pragma_tensor_alloc(&g, PK_BOOL, 1, shape, &err), 0);
	memcpy(w.data, ref, 6);
	memcpy(g.data, ref, 6);
	assert_int_equal(pragma_compare(&g, &w, &tol, &c), 0);
	((unsigned char *)g.data)[3] = 255;
	assert_int_equal(pragma_compare(&g, &w, &tol, &c), 1);
	assert_int_equal(c.bad, 1);
	assert_int_equal(c.not_bool, 1);
	assert_int_equal(c.first_bad, 3);
	assert_true(c.got == 255 && c.want == 1);
	/* The poison byte is "not written", not a wrong bool. */
	((unsigned char *)g.data)[3] = 1;
	((unsigned char *)g.data)[5] = PRAGMA_POISON_BOOL;
	assert_int_equal(pragma_compare(&g, &w, &tol, &c), 1);
	assert_int_equal(c.unwritten, 1);
	assert_int_equal(c.not_bool, 0);
	pragma_tensor_release(&w);
	pragma_tensor_release(&g);
}

/* ------------------------------------------------- the tolerance rule */

/* Deterministic standard normals (xorshift + Box-Muller). */
static double randn(uint64_t *s)
{
	double u, v;

	*s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
	u = ((*s >> 11) + 0.5) / 9007199254740992.0;
	*s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
	v = ((*s >> 11) + 0.5) / 9007199254740992.0;
	return sqrt(-2 * log(u)) * cos(2 * M_PI * v);
}

/* Deterministic uniforms in [0, 1). */
static double randu(uint64_t *s)
{
	*s ^= *s << 13, *s ^= *s >> 7, *s ^= *s << 17;
	return (double)(*s >> 11) / 9007199254740992.0;
}

/* KernelBench's 23_Softmax at the size (dim 262144, x = rand):
 * every output is 2e-6 .. 6e-6, far below a fixed atol of 1e-4. ref in
 * float64 rounded once; x kept for the kernels. */
#define SM_ROWS 2
#define SM_DIM 262144
static float *sm_x;

static void softmax_ref(struct pragma_tensor *ref)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	int64_t shape[2] = { SM_ROWS, SM_DIM };
	uint64_t seed = 0x9e3779b97f4a7c15ull;

	assert_int_equal(pragma_tensor_alloc(ref, PK_FLOAT32, 2, shape, &err), 0);
	sm_x = realloc(sm_x, sizeof(float) * SM_ROWS * SM_DIM);
	for (int64_t i = 0; i < SM_ROWS * SM_DIM; i++)
		sm_x[i] = (float)randu(&seed);
	for (int r = 0; r < SM_ROWS; r++) {
		double s = 0;
		for (int c = 0; c < SM_DIM; c++)
			s += exp((double)sm_x[r * SM_DIM + c]);
		for (int c = 0; c < SM_DIM; c++)
			((float *)ref->data)[r * SM_DIM + c] = (float)(exp((double)sm_x[r * SM_DIM + c]) / s);
	}
}

/* A kernel's answer: kind selects an honest or a wrong one. */
enum sm_kind { SM_SEQ_FLOAT, SM_BLOCKED, SM_FAST_EXP, SM_UNIFORM, SM_REL1PCT, SM_BIAS, SM_REVERSED, SM_ZEROS };

/* exp(x) for x <= 0 by 2^k * p(r), |r| <= ln2/2, degree-5 Taylor: about 2e-6
 * relative error, the kind of fast approximation a kernel may use. */
static float fast_exp(float x)
{
	float k = nearbyintf(x * 1.44269504f), r = x - k * 0.693147181f;
	float p = 1 + r * (1 + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120)))));
	return ldexpf(p, (int)k);
}

static void softmax_kernel(enum sm_kind kind, struct pragma_tensor *y)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	int64_t shape[2] = { SM_ROWS, SM_DIM };
	float *o;

	assert_int_equal(pragma_tensor_alloc(y, PK_FLOAT32, 2, shape, &err), 0);
	o = y->data;
	for (int r = 0; r < SM_ROWS; r++) {
		const float *x = sm_x + r * SM_DIM;
		float *yr = o + r * SM_DIM, m = -INFINITY, s = 0;
		for (int c = 0; c < SM_DIM; c++)
			m = fmaxf(m, x[c]);
		if (kind == SM_BLOCKED) {
			/* 8 lanes x blocks of 4096, as SIMD + OpenMP would sum. */
			float lane[8] = { 0 };
			for (int b = 0; b < SM_DIM; b += 4096) {
				float part[8] = { 0 };
				for (int c = b; c < b + 4096; c++)
					part[c % 8] += (yr[c] = expf(x[c] - m));
				for (int l = 0; l < 8; l++)
					lane[l] += part[l];
			}
			for (int l = 0; l < 8; l++)
				s += lane[l];
		} else {
			for (int c = 0; c < SM_DIM; c++)
				s += (yr[c] = kind == SM_FAST_EXP ? fast_exp(x[c] - m) : expf(x[c] - m));
		}
		for (int c = 0; c < SM_DIM; c++) {
			float v = yr[c] / s;
			switch (kind) {
			case SM_UNIFORM: v = 1.0f / SM_DIM + 1e-9f * x[c]; break;
			case SM_REL1PCT: v *= 1.01f; break;
			case SM_BIAS: v += 5e-5f; break; /* half the old atol */
			case SM_ZEROS: v = 0; break;
			default: break;
			}
			yr[c] = v;
		}
		if (kind == SM_REVERSED)
			for (int c = 0; c < SM_DIM / 2; c++) {
				float t = yr[c];
				yr[c] = yr[SM_DIM - 1 - c];
				yr[SM_DIM - 1 - c] = t;
			}
	}
}

/* The softmax: the right answer and honest variants pass; answers
 * that are wrong but small pass the old fixed-atol rule and fail the new. */
static void test_tolerance_tiny_outputs(void **state)
{
	static const struct {
		enum sm_kind kind;
		const char *name;
		int right;
	} k[] = {
		{ SM_SEQ_FLOAT, "float sum in order", 1 }, { SM_BLOCKED, "blocked SIMD sums", 1 },
		{ SM_FAST_EXP, "polynomial exp", 1 },     { SM_UNIFORM, "uniform 1/dim + 1e-9 x", 0 },
		{ SM_REL1PCT, "1% relative error", 0 },    { SM_BIAS, "bias of atol/2", 0 },
		{ SM_REVERSED, "values in the wrong order", 0 }, { SM_ZEROS, "zeros", 0 },
	};
	struct pragma_tensor ref = PRAGMA_TENSOR_INIT;
	struct pragma_tolerance tol = defaults(PK_FLOAT32), old = absolute(PK_FLOAT32, 1e-4, 1e-4);
	struct pragma_cmp c;

	(void)state;
	softmax_ref(&ref);
	assert_true(tol.atol_rms && tol.rtol == 1e-4 && tol.atol == 1e-4 && tol.norm == 1e-4);
	for (size_t i = 0; i < sizeof(k) / sizeof(k[0]); i++) {
		struct pragma_tensor y = PRAGMA_TENSOR_INIT;
		int rc;
		softmax_kernel(k[i].kind, &y);
		rc = pragma_compare(&y, &ref, &tol, &c);
		print_message("  softmax %-28s new rule: %s (max abs %.3g, max rel %.3g, norm-wise %.3g; atol %.3g)\n",
			      k[i].name, rc ? "refused" : "passes", c.max_abs_err, c.max_rel_err, c.norm_err, c.atol_eff);
		if (rc != !k[i].right)
			fail_msg("%s: %s under the new rule", k[i].name, rc ? "refused" : "accepted");
		/* The hole: every one of them passed the fixed atol of 1e-4. */
		assert_int_equal(pragma_compare(&y, &ref, &old, &c), 0);
		pragma_tensor_release(&y);
	}
	pragma_tensor_release(&ref);
}

/* Large outputs: a fixed atol is too tight for honest sums. An inclusive
 * scan of 131072 normals in float32 (52_cumsum), in order, against a
 * float64 reference: refused by atol 1e-4, accepted with atol x RMS; an
 * off-by-one scan is refused by both. */
static void test_tolerance_large_outputs(void **state)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_tensor ref = PRAGMA_TENSOR_INIT, y = PRAGMA_TENSOR_INIT;
	struct pragma_tolerance tol = defaults(PK_FLOAT32), old = absolute(PK_FLOAT32, 1e-4, 1e-4);
	struct pragma_cmp c;
	int64_t n = 8 * 131072, shape[1] = { 8 * 131072 };
	uint64_t seed = 42;
	double acc = 0;
	float facc = 0;

	(void)state;
	assert_int_equal(pragma_tensor_alloc(&ref, PK_FLOAT32, 1, shape, &err), 0);
	assert_int_equal(pragma_tensor_alloc(&y, PK_FLOAT32, 1, shape, &err), 0);
	/* 8 rows of 131072, each scanned on its own. */
	for (int64_t i = 0; i < n; i++) {
		float x = (float)randn(&seed);
		if (i % 131072 == 0)
			acc = facc = 0;
		acc += x;
		facc += x;
		((float *)ref.data)[i] = (float)acc;
		((float *)y.data)[i] = facc;
	}
	assert_int_equal(pragma_compare(&y, &ref, &old, &c), 1);
	print_message("  float32 scan: fixed atol refuses %lld of %lld elements (max abs error %.3g)\n",
		      (long long)c.bad, (long long)c.n, c.max_abs_err);
	assert_int_equal(pragma_compare(&y, &ref, &tol, &c), 0);
	print_message("  float32 scan: atol x RMS = %.3g accepts (norm-wise %.3g)\n", c.atol_eff, c.norm_err);
	/* Exclusive instead of inclusive: off by one element everywhere. */
	memmove((float *)y.data + 1, y.data, sizeof(float) * (size_t)(n - 1));
	((float *)y.data)[0] = 0;
	assert_int_equal(pragma_compare(&y, &ref, &tol, &c), 1);
	pragma_tensor_release(&ref);
	pragma_tensor_release(&y);
}

/* Reduced precision: a float16 / bfloat16 output computed in float32 in
 * another order and rounded once passes; 5% off, zeros, the wrong order fail. */
static void test_tolerance_half(void **state)
{
	enum pk_dtype dts[2] = { PK_FLOAT16, PK_BFLOAT16 };

	(void)state;
	for (int d = 0; d < 2; d++) {
		struct pragma_err err = PRAGMA_ERR_INIT;
		struct pragma_tensor ref = PRAGMA_TENSOR_INIT, y = PRAGMA_TENSOR_INIT;
		struct pragma_tolerance tol = defaults(dts[d]);
		struct pragma_cmp c;
		int64_t rows = 256, len = 4096, shape[1] = { 256 };
		uint64_t seed = 7;
		float *x = malloc(sizeof(float) * (size_t)(rows * len));

		assert_true(tol.rtol == 1e-2 && tol.atol_rms);
		assert_int_equal(pragma_tensor_alloc(&ref, dts[d], 1, shape, &err), 0);
		assert_int_equal(pragma_tensor_alloc(&y, dts[d], 1, shape, &err), 0);
		/* Row means of normals, stored in half precision. */
		for (int64_t i = 0; i < rows * len; i++)
			x[i] = (float)randn(&seed);
		for (int64_t r = 0; r < rows; r++) {
			double s = 0;
			float lane[8] = { 0 };
			for (int64_t i = 0; i < len; i++) {
				s += x[r * len + i];
				lane[i % 8] += x[r * len + i];
			}
			pragma_tensor_set(&ref, r, 1 + s / (double)len);
			pragma_tensor_set(&y, r, 1 + (lane[0] + lane[1] + lane[2] + lane[3] + lane[4] + lane[5] + lane[6] +
						      lane[7]) / (float)len);
		}
		assert_int_equal(pragma_compare(&y, &ref, &tol, &c), 0);
		for (int64_t r = 0; r < rows; r++)
			pragma_tensor_set(&y, r, pragma_tensor_get(&ref, r) * 1.05);
		assert_int_equal(pragma_compare(&y, &ref, &tol, &c), 1);
		for (int64_t r = 0; r < rows; r++)
			pragma_tensor_set(&y, r, pragma_tensor_get(&ref, rows - 1 - r));
		assert_int_equal(pragma_compare(&y, &ref, &tol, &c), 1);
		free(x);
		pragma_tensor_release(&ref);
		pragma_tensor_release(&y);
	}
}

/* The audit: the default rule refuses every trivial answer on the wide
 * softmax; a fixed atol of 1e-4 without the norm bound does not, and says
 * why; degenerate references say what is left to check. */
static void test_tolerance_audit(void **state)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_tensor ref = PRAGMA_TENSOR_INIT, t = PRAGMA_TENSOR_INIT;
	struct pragma_tolerance tol = defaults(PK_FLOAT32), old = absolute(PK_FLOAT32, 1e-4, 1e-4);
	struct pragma_audit a;
	int64_t shape[1] = { 1000 }, one[1] = { 1 };

	(void)state;
	softmax_ref(&ref);
	assert_int_equal(pragma_tolerance_audit(&ref, &tol, &a, &err), 0);
	if (!a.discriminating)
		fail_msg("default rule on the softmax: %s", a.why);
	for (int k = 0; k < PRAGMA_TRIVIAL__COUNT; k++)
		assert_true(a.applicable[k] && a.refused[k]);
	assert_int_equal(pragma_tolerance_audit(&ref, &old, &a, &err), 0);
	assert_false(a.discriminating);
	assert_false(a.refused[PRAGMA_TRIVIAL_MEAN]);
	assert_false(a.refused[PRAGMA_TRIVIAL_SCALED]);
	assert_non_null(strstr(a.why, "the constant mean passes"));
	print_message("  fixed atol 1e-4 on the softmax: %s\n", a.why);
	pragma_tensor_release(&ref);

	/* All zeros: nothing can be told apart. */
	assert_int_equal(pragma_tensor_alloc(&t, PK_FLOAT32, 1, shape, &err), 0);
	assert_int_equal(pragma_tolerance_audit(&t, &tol, &a, &err), 0);
	assert_false(a.discriminating);
	assert_non_null(strstr(a.why, "all zeros"));
	/* Constant 3: zeros and scaling are refused, mean/permutation do not apply. */
	for (int i = 0; i < 1000; i++)
		((float *)t.data)[i] = 3;
	assert_int_equal(pragma_tolerance_audit(&t, &tol, &a, &err), 0);
	assert_true(a.discriminating);
	assert_false(a.applicable[PRAGMA_TRIVIAL_MEAN] || a.applicable[PRAGMA_TRIVIAL_PERMUTED]);
	/* Nearly constant: the mean passes, and the audit says so. */
	for (int i = 0; i < 1000; i++)
		((float *)t.data)[i] = 3 + 1e-6f * (float)(i % 7);
	assert_int_equal(pragma_tolerance_audit(&t, &tol, &a, &err), 0);
	assert_false(a.discriminating);
	assert_false(a.refused[PRAGMA_TRIVIAL_MEAN]);
	pragma_tensor_release(&t);
	/* A scalar loss: zeros and scaling apply. */
	assert_int_equal(pragma_tensor_alloc(&t, PK_FLOAT32, 0, one, &err), 0);
	((float *)t.data)[0] = 2.0f;
	assert_int_equal(pragma_tolerance_audit(&t, &tol, &a, &err), 0);
	assert_true(a.discriminating);
	assert_true(a.applicable[PRAGMA_TRIVIAL_ZEROS] && a.applicable[PRAGMA_TRIVIAL_SCALED]);
	pragma_tensor_release(&t);
	/* Integers: exact, so any change is refused. */
	assert_int_equal(pragma_tensor_alloc(&t, PK_INT64, 1, shape, &err), 0);
	for (int i = 0; i < 1000; i++)
		((int64_t *)t.data)[i] = i % 13;
	tol = defaults(PK_INT64);
	assert_int_equal(pragma_tolerance_audit(&t, &tol, &a, &err), 0);
	assert_true(a.discriminating);
	assert_false(a.applicable[PRAGMA_TRIVIAL_SCALED]);
	pragma_tensor_release(&t);
}

/* Per-dtype defaults, what a task states, and the command line. */
static void test_tolerance_resolve(void **state)
{
	struct pragma_tensor_spec outs[3] = {
		{ .name = "a", .dtype = PK_FLOAT32 }, { .name = "b", .dtype = PK_FLOAT64 }, { .name = "c", .dtype = PK_INT32 }
	};
	struct pragma_task t = { .outputs = outs, .n_outputs = 3 };
	struct pragma_tolerance tol;
	char buf[200];

	(void)state;
	pragma_tolerance_resolve(&t, 0, -1, -1, &tol);
	assert_true(tol.rtol == 1e-4 && tol.atol == 1e-4 && tol.atol_rms && tol.norm == 1e-4 && !tol.exact);
	assert_string_equal(pragma_tolerance_str(&tol, 2.0, buf, sizeof(buf)),
			    "rtol 0.0001, atol 0.0001 x RMS(ref) = 0.0002, norm-wise 0.0001");
	pragma_tolerance_resolve(&t, 1, -1, -1, &tol);
	assert_true(tol.rtol == 1e-6 && tol.atol == 1e-6 && tol.atol_rms);
	pragma_tolerance_resolve(&t, 2, -1, -1, &tol);
	assert_true(tol.exact);
	/* A stated absolute atol stays absolute; a stated norm is used. */
	t.rtol_stated = t.atol_stated = t.atol_abs = 1;
	t.rtol = 1e-5;
	t.atol = 1e-6;
	t.norm_tol = 3e-5;
	pragma_tolerance_resolve(&t, 0, -1, -1, &tol);
	assert_true(tol.rtol == 1e-5 && tol.atol == 1e-6 && !tol.atol_rms && tol.norm == 3e-5);
	assert_string_equal(pragma_tolerance_str(&tol, 2.0, buf, sizeof(buf)),
			    "rtol 1e-05, atol 1e-06 (absolute), norm-wise 3e-05");
	/* --atol/--rtol: absolute; 0/0 is exact. */
	pragma_tolerance_resolve(&t, 0, 0, 0, &tol);
	assert_true(tol.exact);
	assert_string_equal(pragma_tolerance_str(&tol, 2.0, buf, sizeof(buf)), "exact (atol = rtol = 0)");
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
		skip_because("no C compiler (gcc) to build the test kernels");
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
		skip_because("no C compiler (gcc) to build the test kernels");
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
		skip_because("no C compiler (gcc) to build the test kernels");
	verdict_of("evalgood", HEAD "  for (int64_t i = 0; i < n; i++) y[i] = x[i] + x[i];\n  return 0; }\n", 1, &v);
	if (v.status != PRAGMA_V_OK)
		fail_msg("eval: %s: %s", pragma_vstatus_name(v.status), v.message);
	/* 3 rounds of 6 calls, or more rounds when the machine was busy. */
	assert_true(v.cand.t.n_rounds >= 3 && v.cand.t.n_rounds <= 9);
	assert_int_equal(v.cand.stats.count, 6 * v.cand.t.n_rounds);
	assert_int_equal(v.base.stats.count, 6 * v.base.t.n_rounds);
	assert_true(v.speedup > 0);
	assert_true(v.speedup_lo <= v.speedup && v.speedup <= v.speedup_hi);
	assert_true(v.cand.estimate_ms > 0 && v.base.estimate_ms > 0);
	assert_true(fabs(v.speedup - v.base.estimate_ms / v.cand.estimate_ms) < 1e-9);
	assert_string_equal(v.baseline_kind, "c-reference");
	j = pragma_verdict_json(&v);
	assert_non_null(json_object_get(j, "time_ms"));
	assert_non_null(json_object_get(json_object_get(j, "baseline_ms"), "median"));
	assert_true(json_is_number(json_object_get(j, "speedup")));
	assert_int_equal(json_array_size(json_object_get(json_object_get(j, "speedup_spread"), "rounds")),
			 (size_t)v.cand.t.n_rounds);
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
		cmocka_unit_test(test_compare_bools),
		cmocka_unit_test(test_tolerance_resolve),
		cmocka_unit_test(test_tolerance_tiny_outputs),
		cmocka_unit_test(test_tolerance_large_outputs),
		cmocka_unit_test(test_tolerance_half),
		cmocka_unit_test(test_tolerance_audit),
		cmocka_unit_test(test_source),
		cmocka_unit_test(test_symbol_allow_list),
		cmocka_unit_test(test_symbols_read),
		cmocka_unit_test(test_symbols_malformed),
		cmocka_unit_test(test_names),
		cmocka_unit_test(test_verify_kernels),
		cmocka_unit_test(test_eval),
	};

	return pragma_run_tests(tests, setup, teardown);
}
