/*
 * The deterministic parts of the collectors, on recorded tool output
 * (tests/profile_kernels/fixtures: callgrind and objdump of the naive and
 * blocked matmul kernels at N=64, gcc and clang vectorization remarks),
 * plus the roofline arithmetic, the registry and the profile container.
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

#include "pragma/fs.h"
#include "pragma/profile.h"

static char *fixture(const char *name)
{
	struct pragma_buf b = PRAGMA_BUF_INIT, path = PRAGMA_BUF_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	const char *root = getenv("PRAGMA_TEST_DATA");

	pragma_buf_addf(&path, "%s/profile_kernels/fixtures/%s", root ? root : "tests", name);
	if (pragma_read_file(path.data, &b, 0, &err) < 0)
		fail_msg("%s", err.msg);
	pragma_buf_release(&path);
	return pragma_buf_detach(&b, NULL);
}

static double metric(const struct pragma_profile *p, const char *name)
{
	double v = NAN;

	if (!pragma_profile_get(p, name, &v))
		fail_msg("metric %s missing", name);
	return v;
}

static void near(double got, double want, double tol)
{
	if (fabs(got - want) > tol)
		fail_msg("got %.9g, want %.9g (+-%g)", got, want, tol);
}

static const struct pragma_remark *remark_at(const struct pragma_profile *p, int line)
{
	for (size_t i = 0; i < p->n_remarks; i++)
		if (p->remarks[i].line == line && p->remarks[i].kind != PRAGMA_REMARK_CALL)
			return &p->remarks[i];
	return NULL;
}

/* 01_matmul_square at N=64: 2 N^3 FLOPs, 3 N^2 floats of minimal traffic. */
static void matmul64(struct pragma_profile *p, const char *src)
{
	pragma_profile_init(p);
	p->flops = 2.0 * 64 * 64 * 64;
	p->bytes = 3.0 * 64 * 64 * 4;
	p->threads = 2;
	snprintf(p->source_name, sizeof(p->source_name), "%s", src);
}

static void callgrind_totals(void **state)
{
	struct pragma_profile p;
	struct pragma_err err = PRAGMA_ERR_INIT;
	char *text = fixture("matmul_naive.callgrind");

	(void)state;
	matmul64(&p, "matmul_naive.c");
	/* totals: Ir 1504031, Dr 393291, Dw 4166, I1mr 5, D1mr 516, D1mw 256,
	 * ILmr 5, DLmr 515, DLmw 256, Bc 143425, Bcm 4193 (Bi, Bim omitted: 0) */
	assert_int_equal(pragma_sim_parse(text, 1, 64, &p, &err), 0);
	near(metric(&p, "sim.instructions"), 1504031, 0);
	near(metric(&p, "sim.data_refs"), 393291 + 4166, 0);
	near(metric(&p, "sim.d1_misses"), 772, 0);
	near(metric(&p, "sim.d1_miss_rate"), 100.0 * 772 / 397457, 1e-9);
	near(metric(&p, "sim.ll_misses"), 771, 0);
	near(metric(&p, "sim.ll_miss_rate"), 100.0 * 771 / 772, 1e-9);
	near(metric(&p, "sim.dram_bytes"), 771 * 64, 0);
	near(metric(&p, "sim.traffic_ratio"), 771.0 * 64 / 49152, 1e-9);
	near(metric(&p, "sim.branches"), 143425, 0);
	near(metric(&p, "sim.branch_mispredicts"), 4193, 0);
	near(metric(&p, "sim.branch_mispredict_rate"), 100.0 * 4193 / 143425, 1e-9);
	near(metric(&p, "sim.insn_per_flop"), 1504031.0 / 524288, 1e-9);
	near(metric(&p, "sim.threads"), 1, 0);
	pragma_profile_release(&p);

	/* per call when several calls were simulated */
	matmul64(&p, "matmul_naive.c");
	assert_int_equal(pragma_sim_parse(text, 4, 64, &p, &err), 0);
	near(metric(&p, "sim.instructions"), 1504031 / 4.0, 1e-9);
	pragma_profile_release(&p);

	/* no totals, no instructions: an error, not zeros */
	matmul64(&p, "matmul_naive.c");
	assert_int_equal(pragma_sim_parse("events: Ir\n", 1, 64, &p, &err), -1);
	assert_int_equal(pragma_sim_parse("events: Ir Dr\ntotals: 0 0\n", 1, 64, &p, &err), -1);
	assert_non_null(strstr(err.msg, "pk_forward"));
	assert_int_equal(p.n, 0);
	pragma_profile_release(&p);
	free(text);
}

static void executed_mix(void **state)
{
	struct pragma_profile p;
	char *cg = fixture("matmul_naive.callgrind"), *dis = fixture("matmul_naive.objdump");

	(void)state;
	/* naive i-j-k: gcc's 8-byte "vectors" in the k loop, scalar otherwise */
	matmul64(&p, "matmul_naive.c");
	assert_int_equal(pragma_sim_parse_mix(cg, dis, "/tmp/fx/matmul_naive.so", 1, &p), 0);
	assert_true(metric(&p, "sim.fp_packed_pct") < 50);
	near(metric(&p, "sim.fma_pct"), 0, 0);
	assert_true(metric(&p, "sim.fp_ops") > 64 * 64 * 64); /* at least one per multiply-add */
	int hot = 0;
	for (size_t i = 0; i < p.n_notes; i++)
		hot |= strstr(p.notes[i], "execute at matmul_naive.c:20") != NULL;
	assert_true(hot);
	pragma_profile_release(&p);
	free(cg);
	free(dis);

	/* blocked i-k-j: the inner loop is 8-wide FMA */
	cg = fixture("matmul_blocked.callgrind");
	dis = fixture("matmul_blocked.objdump");
	matmul64(&p, "matmul_blocked.c");
	assert_int_equal(pragma_sim_parse_mix(cg, dis, "/tmp/fx/matmul_blocked.so", 1, &p), 0);
	near(metric(&p, "sim.fp_packed_pct"), 100, 1e-9);
	near(metric(&p, "sim.fma_pct"), 100, 1e-9);
	near(metric(&p, "sim.vector_bits"), 256, 0);
	near(metric(&p, "sim.fp_ops"), 64.0 * 64 * 64 / 8, 64); /* N^3 / 8 lanes */
	pragma_profile_release(&p);

	/* another object's name: nothing to join */
	matmul64(&p, "matmul_blocked.c");
	assert_int_equal(pragma_sim_parse_mix(cg, dis, "/x/other.so", 1, &p), -1);
	assert_false(pragma_profile_get(&p, "sim.fp_packed_pct", NULL));
	pragma_profile_release(&p);
	free(cg);
	free(dis);
}

static void objdump_mix(void **state)
{
	struct pragma_profile p;
	char *dis = fixture("matmul_blocked.objdump");

	(void)state;
	matmul64(&p, "matmul_blocked.c");
	assert_int_equal(pragma_static_parse_objdump(dis, &p), 0);
	/* the AVX2 build (-mno-avx512f): ymm FMA in the inner loop */
	near(metric(&p, "static.vector_bits"), 256, 0);
	assert_true(metric(&p, "static.fma") >= 1);
	assert_true(metric(&p, "static.ymm") >= 1);
	near(metric(&p, "static.zmm"), 0, 0);
	near(metric(&p, "static.nt_stores"), 0, 0);
	assert_true(metric(&p, "static.loads") >= 1 && metric(&p, "static.stores") >= 1);
	/* memset is called outside the loops; no OpenMP entry points counted */
	int memset_call = 0;
	for (size_t i = 0; i < p.n_remarks; i++)
		if (p.remarks[i].kind == PRAGMA_REMARK_CALL && strstr(p.remarks[i].text, "memset"))
			memset_call = !strstr(p.remarks[i].text, "inside");
	assert_true(memset_call);
	pragma_profile_release(&p);
	free(dis);

	dis = fixture("matmul_naive.objdump");
	matmul64(&p, "matmul_naive.c");
	assert_int_equal(pragma_static_parse_objdump(dis, &p), 0);
	/* mostly scalar: the 2-lane k loop and scalar remainders */
	near(metric(&p, "static.fp_packed_pct"), 25, 1e-9);
	near(metric(&p, "static.vector_bits"), 128, 0);
	near(metric(&p, "static.calls"), 0, 0);
	near(metric(&p, "static.stack_spills"), 0, 0);
	assert_true(metric(&p, "static.fp_mul") >= 1 && metric(&p, "static.fp_add") >= 1);
	pragma_profile_release(&p);
	free(dis);

	/* hand-written lines: packed/scalar, widths, FMA, a spill and its
	 * reload in a loop, streaming stores, calls; stubs and integer xmm
	 * parking ignored */
	const char *text =
		"0000000000001000 <frame_dummy>:\n"
		"    1000:\tvaddps %ymm0,%ymm1,%ymm2\n"
		"0000000000001100 <pk_forward>:\n"
		"pk_forward():\n"
		"/src/k.c:10\n"
		"    1100:\tvxorps %xmm0,%xmm0,%xmm0\n"
		"    1104:\tvmovq  %xmm5,0x8(%rsp)\n"
		"/src/k.c:12\n"
		"    1110:\tvfmadd231ps (%rdi,%rax,4),%zmm1,%zmm0\n"
		"    1116:\tvmovaps %zmm3,0x40(%rsp)\n"
		"    111c:\tvmovntps %zmm0,(%rsi)\n"
		"    1120:\tcall   1030 <expf@plt>\n"
		"    1125:\tvaddss %xmm1,%xmm2,%xmm2\n"
		"    1127:\tvmovaps 0x40(%rsp),%zmm3\n"
		"    1129:\tjne    1110 <pk_forward+0x10>\n"
		"    112b:\tvmulps (%rdx),%ymm4,%ymm4\n"
		"    1130:\tcall   1040 <GOMP_parallel@plt>\n"
		"    1135:\tret\n";
	pragma_profile_init(&p);
	snprintf(p.source_name, sizeof(p.source_name), "k.c");
	assert_int_equal(pragma_static_parse_objdump(text, &p), 0);
	near(metric(&p, "static.instructions"), 12, 0);
	near(metric(&p, "static.fp_ops"), 3, 0);
	near(metric(&p, "static.fp_packed_pct"), 100.0 * 2 / 3, 1e-9);
	near(metric(&p, "static.vector_bits"), 512, 0);
	near(metric(&p, "static.fma"), 1, 0);
	near(metric(&p, "static.stack_spills"), 2, 0);
	near(metric(&p, "static.nt_stores"), 1, 0);
	near(metric(&p, "static.calls"), 1, 0);
	near(metric(&p, "static.branches"), 1, 0);
	assert_int_equal(p.n_remarks, 1);
	assert_int_equal(p.remarks[0].line, 12);
	assert_non_null(strstr(p.remarks[0].text, "expf (inside an innermost loop: depth 1 of pk_forward)"));
	pragma_profile_release(&p);

	pragma_profile_init(&p);
	assert_int_equal(pragma_static_parse_objdump("no code here\n", &p), -1);
	pragma_profile_release(&p);
}

static void gcc_remarks(void **state)
{
	struct pragma_profile p;
	char *text = fixture("matmul_naive.gcc-remarks"), *src = fixture("../matmul_naive.c");
	const struct pragma_remark *r;

	(void)state;
	pragma_profile_init(&p);
	assert_int_equal(pragma_static_parse_remarks(text, "matmul_naive.c", src, &p), 0);
	/* the i loop (16) is an outer loop: not news */
	assert_null(remark_at(&p, 16));
	r = remark_at(&p, 17);
	assert_non_null(r);
	assert_int_equal(r->kind, PRAGMA_REMARK_NOT_VECTORIZED);
	assert_non_null(strstr(r->text, "strided"));
	assert_null(strstr(r->text, "_13")); /* no GIMPLE */
	assert_non_null(strstr(r->code, "for (int64_t j = 0"));
	r = remark_at(&p, 19);
	assert_non_null(r);
	assert_int_equal(r->kind, PRAGMA_REMARK_VECTORIZED);
	near(metric(&p, "static.loops_not_vectorized"), 1, 0);
	near(metric(&p, "static.loops_vectorized"), 1, 0);
	pragma_profile_release(&p);
	free(text);
	free(src);

	/* intrinsics: gcc's complaints live in avxintrin.h, not in the kernel */
	text = fixture("relu_avx2.gcc-remarks");
	pragma_profile_init(&p);
	assert_int_equal(pragma_static_parse_remarks(text, "relu_avx2.c", NULL, &p), 0);
	assert_null(remark_at(&p, 20));
	r = remark_at(&p, 26);
	assert_non_null(r);
	assert_int_equal(r->kind, PRAGMA_REMARK_VECTORIZED);
	assert_non_null(strstr(r->text, "run-time alias check"));
	near(metric(&p, "static.loops_not_vectorized"), 0, 0);
	pragma_profile_release(&p);
	free(text);
}

static void clang_remarks(void **state)
{
	struct pragma_profile p;
	char *text = fixture("sum_rows.clang-remarks"), *src = fixture("sum_rows.c");
	const struct pragma_remark *r;

	(void)state;
	pragma_profile_init(&p);
	assert_int_equal(pragma_static_parse_remarks(text, "sum_rows.c", src, &p), 0);
	/* clang gives the reason at the statement (8), then the loop (7) */
	r = remark_at(&p, 7);
	assert_non_null(r);
	assert_int_equal(r->kind, PRAGMA_REMARK_NOT_VECTORIZED);
	assert_non_null(strstr(r->text, "FP reduction in order"));
	assert_null(strstr(r->text, "#pragma clang loop")); /* the advice after ';' is cut */
	assert_null(remark_at(&p, 8));
	r = remark_at(&p, 14);
	assert_non_null(r);
	assert_int_equal(r->kind, PRAGMA_REMARK_VECTORIZED);
	assert_non_null(strstr(r->text, "width 16"));
	pragma_profile_release(&p);
	free(text);
	free(src);
}

/* A remark quotes the whole statement at its line, not its first line: a
 * loop header split over lines or an expression continued on the next
 * (players saw "for (int64_t i = 0;" and nothing of the loop), at most 4
 * lines, without the lines' // comments. */
static void remarks_quote_statements(void **state)
{
	static const char src[] = "#include \"pragma_kernel.h\"\n"                      /* 1 */
				  "void f(float *restrict y, const float *x, long n, long m)\n" /* 2 */
				  "{\n"                                                       /* 3 */
				  "\tfor (long i = 0; // rows\n"                             /* 4 */
				  "\t     i < n;\n"                                           /* 5 */
				  "\t     i += 2) {\n"                                        /* 6 */
				  "\t\ty[i] = x[i] * 2.0f +\n"                                /* 7 */
				  "\t\t       x[i + 1];\n"                                    /* 8 */
				  "\t\tfor (long j = 0; j < m; j++)\n"                         /* 9 */
				  "\t\t\ty[j] += x[j];\n"                                      /* 10 */
				  "\t\tfor (long j = 0; j < m;\n"                              /* 11 */
				  "\t\t     j++)\n"                                           /* 12 */
				  "\t\t\ty[j] += x[j]\n"                                       /* 13 */
				  "\t\t\t\t* (x[j] /* ) */ +\n"                                /* 14 */
				  "\t\t\t\t   1.0f);\n"                                        /* 15 */
				  "\t}\n"                                                      /* 16 */
				  "}\n";
	static const char text[] = "k.c:4:9: missed: couldn't vectorize loop\n"
				   "k.c:4:9: missed: not vectorized: control flow in loop.\n"
				   "k.c:7:8: optimized: loop vectorized using 32 byte vectors\n"
				   "k.c:9:17: optimized: loop vectorized using 32 byte vectors\n"
				   "k.c:11:17: optimized: loop vectorized using 32 byte vectors\n";
	struct pragma_profile p;
	struct pragma_buf out = PRAGMA_BUF_INIT;
	const struct pragma_remark *r;

	(void)state;
	pragma_profile_init(&p);
	snprintf(p.source_name, sizeof(p.source_name), "k.c");
	assert_int_equal(pragma_static_parse_remarks(text, "k.c", src, &p), 0);
	/* a header over three lines, its comment left out */
	r = remark_at(&p, 4);
	assert_non_null(r);
	assert_string_equal(r->code, "for (long i = 0; i < n; i += 2) {");
	/* gcc cites a split loop at its condition's line: the quote starts
	 * at the header's first line all the same */
	pragma_profile_release(&p);
	pragma_profile_init(&p);
	assert_int_equal(pragma_static_parse_remarks("k.c:5:13: missed: couldn't vectorize loop\n"
						     "k.c:5:13: missed: not vectorized: control flow in loop.\n"
						     "k.c:8:14: optimized: loop vectorized using 32 byte vectors\n",
						     "k.c", src, &p), 0);
	r = remark_at(&p, 5);
	assert_non_null(r);
	assert_string_equal(r->code, "for (long i = 0; i < n; i += 2) {");
	/* and a continued expression at its last line */
	r = remark_at(&p, 8);
	assert_non_null(r);
	assert_string_equal(r->code, "y[i] = x[i] * 2.0f + x[i + 1];");
	pragma_profile_release(&p);
	pragma_profile_init(&p);
	snprintf(p.source_name, sizeof(p.source_name), "k.c");
	assert_int_equal(pragma_static_parse_remarks(text, "k.c", src, &p), 0);
	/* an expression continued on the next line */
	r = remark_at(&p, 7);
	assert_non_null(r);
	assert_string_equal(r->code, "y[i] = x[i] * 2.0f + x[i + 1];");
	/* a header without a brace takes its body's statement */
	r = remark_at(&p, 9);
	assert_non_null(r);
	assert_string_equal(r->code, "for (long j = 0; j < m; j++) y[j] += x[j];");
	/* longer than 4 lines: cut, and says so; a ')' in a comment does
	 * not close the parenthesis */
	r = remark_at(&p, 11);
	assert_non_null(r);
	assert_string_equal(r->code, "for (long j = 0; j < m; j++) y[j] += x[j] * (x[j] /* ) */ + …");
	/* the profile's text shows the statement */
	pragma_profile_table(&p, NULL, 0, &out);
	if (!strstr(out.data, "k.c:4 loop not vectorized: ") ||
	    !strstr(out.data, "   | for (long i = 0; i < n; i += 2) {\n"))
		fail_msg("the profile does not quote the statement:\n%s", out.data);
	pragma_buf_release(&out);
	pragma_profile_release(&p);

	/* A preprocessor line alone; a statement cut by the quote's room
	 * ends at a whole character. */
	static const char src2[] = "#pragma omp parallel for\n"
				   "for (;;) {\n";
	pragma_profile_init(&p);
	assert_int_equal(pragma_static_parse_remarks("k.c:1:1: optimized: loop vectorized using 32 byte vectors\n",
						     "k.c", src2, &p), 0);
	r = remark_at(&p, 1);
	assert_non_null(r);
	assert_string_equal(r->code, "#pragma omp parallel for");
	pragma_profile_release(&p);

	struct pragma_buf big = PRAGMA_BUF_INIT;
	pragma_buf_adds(&big, "x = ");
	for (int i = 0; i < 100; i++)
		pragma_buf_adds(&big, "é + ");
	pragma_buf_adds(&big, "\n1;\n");
	pragma_profile_init(&p);
	assert_int_equal(pragma_static_parse_remarks("k.c:1:1: optimized: loop vectorized using 32 byte vectors\n",
						     "k.c", big.data, &p), 0);
	r = remark_at(&p, 1);
	assert_non_null(r);
	size_t n = strlen(r->code);
	assert_true(n < sizeof(r->code));
	assert_true(n > sizeof(r->code) - 16);
	assert_string_equal(r->code + n - strlen(" …"), " …");
	for (size_t i = 0; i + strlen(" …") < n; i++) /* no cut inside an 'é' */
		if ((unsigned char)r->code[i] == 0xC3)
			assert_int_equal((unsigned char)r->code[i + 1], 0xA9);
	pragma_profile_release(&p);
	pragma_buf_release(&big);
}

static struct pragma_machine machine(void)
{
	struct pragma_machine m;

	memset(&m, 0, sizeof(m));
	m.measured = 1;
	m.peak_gflops = 200;
	m.peak_gbs = 40;
	m.caches[0] = (struct pragma_cache_level){ 1, "Data", 32768, 8, 64, 1 };
	m.caches[1] = (struct pragma_cache_level){ 1, "Instruction", 32768, 8, 64, 1 };
	m.caches[2] = (struct pragma_cache_level){ 2, "Unified", 1 << 20, 8, 64, 1 };
	m.caches[3] = (struct pragma_cache_level){ 3, "Unified", 32 << 20, 16, 64, 2 };
	m.n_caches = 4;
	return m;
}

static void roofline(void **state)
{
	struct pragma_machine m = machine();
	struct pragma_profile p;

	(void)state;
	/* 1 GFLOP over 100 MB in 10 ms: 100 GFLOP/s (50%), 10 GB/s (25%);
	 * intensity 10 above the ridge 5; bound max(5 ms, 2.5 ms) = 50% */
	pragma_profile_init(&p);
	pragma_roofline(1e9, 1e8, 10, &m, &p);
	near(metric(&p, "roof.gflops"), 100, 1e-9);
	near(metric(&p, "roof.pct_peak_flops"), 50, 1e-9);
	near(metric(&p, "roof.gbs"), 10, 1e-9);
	near(metric(&p, "roof.pct_peak_bw"), 25, 1e-9);
	near(metric(&p, "roof.ai"), 10, 1e-12);
	near(metric(&p, "roof.ridge_ai"), 5, 1e-12);
	near(metric(&p, "roof.pct_roof"), 50, 1e-9);
	assert_non_null(strstr(p.notes[0], "compute roof binds"));
	pragma_profile_release(&p);

	/* memory side, no FLOP count: bandwidth roof only */
	pragma_profile_init(&p);
	pragma_roofline(-1, 2e8, 10, &m, &p);
	near(metric(&p, "roof.gbs"), 20, 1e-9);
	near(metric(&p, "roof.pct_roof"), 50, 1e-9);
	assert_false(pragma_profile_get(&p, "roof.gflops", NULL));
	assert_false(pragma_profile_get(&p, "roof.ai", NULL));
	pragma_profile_release(&p);

	/* no measured peaks: says so, no numbers */
	m.measured = 0;
	pragma_profile_init(&p);
	pragma_roofline(1e9, 1e8, 10, &m, &p);
	assert_int_equal(p.n, 0);
	assert_non_null(strstr(pragma_profile_why(&p, "roofline"), "pragma machine"));
	pragma_profile_release(&p);
}

static int has_note(const struct pragma_profile *p, const char *text)
{
	for (size_t i = 0; i < p->n_notes; i++)
		if (strstr(p->notes[i], text))
			return 1;
	return 0;
}

/* The bandwidth roof is the protocol one (roof_gbs), not the highest peak. */
static void roofline_protocol_roof(void **state)
{
	struct pragma_machine m = machine();
	struct pragma_profile p;

	(void)state;
	m.roof_gbs = 25;                 /* a streaming kernel timed like candidates */
	snprintf(m.roof_method, sizeof(m.roof_method), "ntcopy");
	pragma_profile_init(&p);
	pragma_roofline(-1, 2e8, 10, &m, &p);   /* 20 GB/s */
	near(metric(&p, "roof.peak_gbs"), 25, 1e-12);
	near(metric(&p, "roof.pct_peak_bw"), 80, 1e-9);
	near(metric(&p, "roof.pct_roof"), 80, 1e-9);
	assert_true(has_note(&p, "the best streaming kernel (ntcopy)"));
	assert_true(has_note(&p, "bytes = inputs read once + outputs written once, write-allocate not counted"));
	assert_true(has_note(&p, "40.0 GB/s) is only the impossible-speed limit"));
	pragma_profile_release(&p);

	/* A reduction (writes 0.1% of its bytes): the read kernel's roof. */
	m.n_roofs = 2;
	snprintf(m.roofs[0].name, sizeof(m.roofs[0].name), "read");
	m.roofs[0].gbs = 16;
	snprintf(m.roofs[1].name, sizeof(m.roofs[1].name), "ntcopy");
	m.roofs[1].gbs = 25;
	pragma_profile_init(&p);
	p.out_bytes = 0.2e6;
	pragma_roofline(-1, 2e8, 20, &m, &p);   /* 10 GB/s */
	near(metric(&p, "roof.peak_gbs"), 16, 1e-12);
	near(metric(&p, "roof.pct_roof"), 62.5, 1e-9);
	assert_true(has_note(&p, "a read-only stream"));
	assert_true(has_note(&p, "the read kernel"));
	assert_true(has_note(&p, "writes 0.1% of its bytes"));
	assert_true(has_note(&p, "bytes = inputs read once + outputs written once, write-allocate not counted"));
	pragma_profile_release(&p);

	/* Not measured: the peak, and the note says the fraction reads low. */
	m.roof_gbs = 0;
	snprintf(m.roof_why, sizeof(m.roof_why), "cannot find pragma-harness");
	pragma_profile_init(&p);
	pragma_roofline(-1, 2e8, 10, &m, &p);
	near(metric(&p, "roof.peak_gbs"), 40, 1e-12);
	assert_true(has_note(&p, "cannot find pragma-harness"));
	assert_true(has_note(&p, "bytes = inputs read once + outputs written once"));
	pragma_profile_release(&p);
}

/* A Winograd-style kernel: the task counts 3 GFLOP, the kernel does fewer,
 * and runs in 10 ms: 300 GFLOP/s by the count against a 200 GFLOP/s peak.
 * No fraction above 100%: the roof is bandwidth (the 100 MB it must move,
 * 10 GB/s of a 25 GB/s roof = 40%), and the note says why. */
static void roofline_fewer_flops(void **state)
{
	struct pragma_machine m = machine();
	struct pragma_profile p;
	struct pragma_buf h = PRAGMA_BUF_INIT;

	(void)state;
	m.roof_gbs = 25;
	snprintf(m.roof_method, sizeof(m.roof_method), "ntcopy");
	pragma_profile_init(&p);
	pragma_roofline(3e9, 1e8, 10, &m, &p);
	near(metric(&p, "roof.gflops"), 300, 1e-9);
	near(metric(&p, "roof.flops_over_peak"), 1.5, 1e-12);
	assert_false(pragma_profile_get(&p, "roof.pct_peak_flops", NULL));   /* no 150% */
	near(metric(&p, "roof.pct_peak_bw"), 40, 1e-9);
	near(metric(&p, "roof.pct_roof"), 40, 1e-9);                       /* the bandwidth roof */
	for (size_t i = 0; i < p.n; i++)
		if (!strcmp(p.metrics[i].unit, "%") && p.metrics[i].value > 100)
			fail_msg("%s = %.1f%%: a fraction above 100%%", p.metrics[i].name, p.metrics[i].value);
	assert_true(has_note(&p, "fewer FLOPs than the task counts"));
	assert_true(has_note(&p, "1.50x the measured FP32 peak"));
	assert_true(has_note(&p, "compute roof does not apply"));
	assert_false(has_note(&p, "the compute roof binds"));
	pragma_profile_headline(&p, &h);
	assert_non_null(strstr(h.data, "40% of the bandwidth roof"));
	assert_non_null(strstr(h.data, "fewer FLOPs done than counted"));
	pragma_buf_release(&h);
	pragma_profile_release(&p);

	/* Close to the peak (95%): both readings are named, the roof stays compute. */
	pragma_profile_init(&p);
	pragma_roofline(1.9e9, 1e8, 10, &m, &p);
	near(metric(&p, "roof.pct_peak_flops"), 95, 1e-9);
	assert_false(pragma_profile_get(&p, "roof.flops_over_peak", NULL));
	assert_true(has_note(&p, "the roofline cannot tell them apart"));
	pragma_profile_release(&p);
}

static void cache_args(void **state)
{
	struct pragma_machine m = machine();
	char out[3][64];

	(void)state;
	assert_int_equal(pragma_sim_cache_args(&m, out), 3);
	assert_string_equal(out[0], "--I1=32768,8,64");
	assert_string_equal(out[1], "--D1=32768,8,64");
	assert_string_equal(out[2], "--LL=33554432,16,64"); /* the last level, not L2 */
	/* a geometry valgrind would refuse is left to its own detection */
	m.caches[3].line = 48;
	assert_int_equal(pragma_sim_cache_args(&m, out), 2);
	assert_string_equal(out[1], "--D1=32768,8,64");
	m.n_caches = 0;
	assert_int_equal(pragma_sim_cache_args(&m, out), 0);
}

static void registry(void **state)
{
	size_t n;
	const struct pragma_metric_def *d = pragma_metric_defs(&n);
	static const struct {
		const char *prefix;
		unsigned collector;
	} ns[] = { { "time.", PRAGMA_COL_TIMING }, { "roof.", PRAGMA_COL_ROOFLINE }, { "static.", PRAGMA_COL_STATIC },
		   { "par.", PRAGMA_COL_PAR },	   { "cpu.", PRAGMA_COL_PERF },	   { "topdown.", PRAGMA_COL_PERF },
		   { "sim.", PRAGMA_COL_SIM },	   { "gpu.", PRAGMA_COL_NCU },	   { "mca.", PRAGMA_COL_MCA } };
	unsigned mask;
	struct pragma_err err = PRAGMA_ERR_INIT;

	(void)state;
	assert_true(n >= 60);
	for (size_t i = 0; i < n; i++) {
		int ok = 0;
		for (size_t k = 0; k < i; k++)
			if (!strcmp(d[i].name, d[k].name))
				fail_msg("%s registered twice", d[i].name);
		for (size_t k = 0; k < sizeof(ns) / sizeof(ns[0]); k++)
			if (!strncmp(d[i].name, ns[k].prefix, strlen(ns[k].prefix)))
				ok = d[i].collector == ns[k].collector;
		if (!ok)
			fail_msg("%s: namespace and collector disagree", d[i].name);
		assert_non_null(pragma_collector_name(d[i].collector));
		assert_true(d[i].label && *d[i].label && d[i].unit && *d[i].unit);
		assert_ptr_equal(pragma_metric_find(d[i].name), &d[i]);
	}
	assert_null(pragma_metric_find("cpu.nonsense"));
	assert_int_equal(pragma_collectors_parse("perf, sim", &mask, &err), 0);
	assert_int_equal(mask, PRAGMA_COL_TIMING | PRAGMA_COL_PERF | PRAGMA_COL_SIM);
	assert_int_equal(pragma_collectors_parse("perf,bogus", &mask, &err), -1);
	assert_int_equal(err.kind, PRAGMA_E_INPUT);
	assert_non_null(strstr(err.hint, "roofline"));
}

static void container(void **state)
{
	struct pragma_profile p, q;
	struct pragma_err err = PRAGMA_ERR_INIT;
	const char *extra[] = { "static.loads", "perf:r01c2" };
	struct pragma_buf t = PRAGMA_BUF_INIT;
	char buf[64];

	(void)state;
	pragma_profile_init(&p);
	pragma_profile_set(&p, "cpu.ipc", 1.25, "perf");
	pragma_profile_set(&p, "cpu.ipc", 1.5, "perf"); /* replaces */
	pragma_profile_set(&p, "static.loads", 12, "static");
	pragma_profile_set(&p, "perf:r01c2", 3e6, "perf");
	pragma_profile_set(&p, "roof.gbs", NAN, "roofline"); /* dropped: never a wrong number */
	pragma_profile_unavailable(&p, "sim", "valgrind is not installed");
	pragma_profile_unavailable(&p, "sim", "a second reason is not kept");
	pragma_profile_remark(&p, PRAGMA_REMARK_NOT_VECTORIZED, 31, "possible aliasing", "for (;;)");
	assert_int_equal(p.n, 3);
	near(metric(&p, "cpu.ipc"), 1.5, 0);
	assert_string_equal(pragma_profile_find(&p, "perf:r01c2")->unit, "count");
	assert_string_equal(pragma_profile_why(&p, "sim"), "valgrind is not installed");
	assert_true(pragma_profile_shown("cpu.ipc", NULL, 0));
	assert_false(pragma_profile_shown("static.loads", NULL, 0));
	assert_true(pragma_profile_shown("static.loads", extra, 2));

	json_t *j = pragma_profile_json(&p, NULL, 0);
	assert_non_null(json_object_get(json_object_get(j, "metrics"), "cpu.ipc"));
	assert_null(json_object_get(json_object_get(j, "metrics"), "static.loads"));
	assert_null(json_object_get(json_object_get(j, "metrics"), "perf:r01c2"));
	json_decref(j);
	j = pragma_profile_json(&p, extra, 2);
	json_t *m = json_object_get(json_object_get(j, "metrics"), "perf:r01c2");
	assert_non_null(m);
	assert_string_equal(json_string_value(json_object_get(m, "source")), "perf");
	assert_int_equal(pragma_profile_from_json(j, &q, &err), 0);
	near(metric(&q, "static.loads"), 12, 0);
	assert_string_equal(pragma_profile_why(&q, "sim"), "valgrind is not installed");
	assert_int_equal(q.n_remarks, 1);
	assert_int_equal(q.remarks[0].line, 31);
	json_decref(j);

	pragma_profile_table(&p, extra, 2, &t);
	assert_non_null(strstr(t.data, "cpu.ipc"));
	assert_non_null(strstr(t.data, "unavailable"));
	assert_non_null(strstr(t.data, "possible aliasing"));
	pragma_buf_release(&t);
	assert_string_equal(pragma_metric_format(21.7, "GB/s", buf, sizeof(buf)), "21.70 GB/s");
	assert_string_equal(pragma_metric_format(38.2, "%", buf, sizeof(buf)), "38.2%");
	assert_string_equal(pragma_metric_format(1234567, "count", buf, sizeof(buf)), "1.23M");
	assert_string_equal(pragma_metric_format(2.93, "x", buf, sizeof(buf)), "2.93x");
	pragma_profile_release(&p);
	pragma_profile_release(&q);

	/* the headline leads with the roofline and the executed mix */
	pragma_profile_init(&p);
	pragma_profile_set(&p, "roof.pct_roof", 86, "roofline");
	pragma_profile_set(&p, "roof.ai", 0.25, "roofline");
	pragma_profile_set(&p, "roof.ridge_ai", 4.9, "roofline");
	pragma_profile_set(&p, "roof.gbs", 21.7, "roofline");
	pragma_profile_set(&p, "sim.fp_packed_pct", 100, "sim");
	pragma_profile_set(&p, "sim.vector_bits", 256, "sim");
	pragma_profile_set(&p, "static.nt_stores", 0, "static");
	pragma_profile_set(&p, "par.busy_cores", 1.02, "par");
	pragma_profile_set(&p, "par.threads", 2, "par");
	pragma_profile_table(&p, NULL, 0, &t);
	assert_int_equal(strncmp(t.data, "summary: 86% of the bandwidth roof (21.7 GB/s); executed FP 100% packed at 256 bits; "
				       "no streaming stores; 1.0 of 2 cores busy\n", 112), 0);
	pragma_buf_release(&t);
	pragma_profile_release(&p);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(callgrind_totals), cmocka_unit_test(executed_mix), cmocka_unit_test(objdump_mix),
		cmocka_unit_test(gcc_remarks),	    cmocka_unit_test(clang_remarks),
		cmocka_unit_test(remarks_quote_statements), cmocka_unit_test(roofline),
		cmocka_unit_test(roofline_protocol_roof),
		cmocka_unit_test(roofline_fewer_flops),
		cmocka_unit_test(cache_args),	    cmocka_unit_test(registry),	     cmocka_unit_test(container),
	};
	return pragma_run_tests(tests, NULL, NULL);
}
