/*
 * The kernel's code as the static, sim and mca collectors read it, on
 * captured tool output (tests/unit/fixtures/mca: objdump of kernels in
 * tests/profile_kernels, llvm-mca's answers; regen.sh says how they were
 * made), plus a live run of llvm-mca on an AVX-512 and an AVX2 build made
 * by pragma's own build when llvm-mca is installed:
 *
 * - loops are natural loops: calls at the top level of pk_forward or in an
 *   OpenMP region outside its loop are not "inside an innermost loop";
 * - spills are vector registers stored to a fixed stack slot and loaded
 *   back, not stores into a stack array;
 * - llvm-mca's model of the hottest loop: an FMA loop with enough
 *   accumulators is port-bound, one with two is latency-bound;
 * - sim refuses a build with AVX-512 on a machine that has it.
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

#include "pragma/build.h"
#include "pragma/diagnose.h"
#include "pragma/fs.h"
#include "pragma/proc.h"
#include "pragma/profile.h"

static char *fixture(const char *name)
{
	struct pragma_buf b = PRAGMA_BUF_INIT, path = PRAGMA_BUF_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	const char *root = getenv("PRAGMA_TEST_DATA");

	pragma_buf_addf(&path, "%s/unit/fixtures/mca/%s", root ? root : "tests", name);
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

static void contains(const char *text, const char *want)
{
	if (!text || !strstr(text, want))
		fail_msg("'%s' lacks '%s'", text ? text : "(null)", want);
}

/* An AMD machine: Zen 3 (family 25 model 1, no AVX-512) or Zen 4 (model 0x11). */
static struct pragma_machine amd(int model)
{
	struct pragma_machine m;

	memset(&m, 0, sizeof(m));
	snprintf(m.vendor, sizeof(m.vendor), "AuthenticAMD");
	m.family = 25;
	m.model = model;
	m.has_avx2 = m.has_fma = 1;
	m.has_avx512f = model == 0x11;
	return m;
}

static void profile_for(struct pragma_profile *p, const char *source)
{
	pragma_profile_init(p);
	snprintf(p->source_name, sizeof(p->source_name), "%s", source);
	p->threads = 2;
}

static const struct pragma_remark *call_remark(const struct pragma_profile *p, const char *callee)
{
	for (size_t i = 0; i < p->n_remarks; i++)
		if (p->remarks[i].kind == PRAGMA_REMARK_CALL && !strncmp(p->remarks[i].text, callee, strlen(callee)) &&
		    p->remarks[i].text[strlen(callee)] == ' ')
			return &p->remarks[i];
	return NULL;
}

/* ---- where calls are ---- */

static void calls_located(void **state)
{
	struct pragma_profile p;
	char *dis = fixture("calls_toplevel.objdump");
	const struct pragma_remark *r;

	(void)state;
	profile_for(&p, "calls_toplevel.c");
	assert_int_equal(pragma_static_parse_objdump(dis, &p), 0);
	/* malloc, memcpy, free (twice), posix_memalign; GOMP_* are not calls */
	near(metric(&p, "static.calls"), 5, 0);
	for (size_t i = 0; i < p.n_remarks; i++)
		if (p.remarks[i].kind == PRAGMA_REMARK_CALL && strstr(p.remarks[i].text, "innermost"))
			fail_msg("a call is said to be in an innermost loop: %s (line %d)", p.remarks[i].text,
				 p.remarks[i].line);
	r = call_remark(&p, "malloc");
	assert_non_null(r);
	assert_int_equal(r->line, 21);
	assert_string_equal(r->text, "malloc (not in a loop: top level of pk_forward)");
	contains(call_remark(&p, "memcpy")->text, "top level of pk_forward");
	r = call_remark(&p, "posix_memalign");
	assert_non_null(r);
	assert_int_equal(r->line, 27);
	assert_string_equal(r->text, "posix_memalign (not in a loop: OpenMP parallel region pk_forward._omp_fn.0)");
	/* the relu loop is there, in the region, at depth 1 */
	assert_true(metric(&p, "static.loops") >= 2);

	/* the diagnosis has no calls-in-loop to report */
	struct pragma_diagnosis d;
	pragma_diagnose(&p, NULL, &d);
	for (size_t i = 0; i < d.n; i++)
		assert_string_not_equal(d.f[i].bottleneck, "calls-in-loop");
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);
	free(dis);
}

/* Hand-written: a cold block after the return jumps back into the main
 * path (not a loop); a real loop with a call inside; a call in an outer
 * loop; a helper called from inside a loop. */
static void natural_loops(void **state)
{
	struct pragma_profile p;
	const char *text = "0000000000001100 <pk_forward>:\n"
			   "/src/k.c:10\n"
			   "    1100:\ttest   %rdi,%rdi\n"
			   "    1103:\tje     1140 <pk_forward+0x40>\n"
			   "/src/k.c:11\n"
			   "    1105:\tcall   1030 <malloc@plt>\n"
			   "/src/k.c:12\n"
			   "    110a:\txor    %ecx,%ecx\n"
			   "/src/k.c:13\n"
			   "    110c:\tcall   1040 <memset@plt>\n"  /* outer loop head */
			   "/src/k.c:14\n"
			   "    1111:\tcall   1050 <expf@plt>\n"    /* inner loop */
			   "    1116:\tdec    %rdx\n"
			   "    1119:\tjne    1111 <pk_forward+0x11>\n"
			   "    111b:\tinc    %rcx\n"
			   "    111e:\tcmp    %rcx,%rsi\n"
			   "    1121:\tjne    110c <pk_forward+0xc>\n"
			   "/src/k.c:16\n"
			   "    1123:\tcall   1060 <free@plt>\n"
			   "    1128:\tret\n"
			   "    1129:\tnopl   0x0(%rax)\n"            /* padding after ret falls into the cold block */
			   "/src/k.c:10\n"
			   "    1140:\tmov    $0x1,%edi\n"
			   "    1145:\tjmp    1105 <pk_forward+0x5>\n"; /* back into the main path: no loop */

	(void)state;
	profile_for(&p, "k.c");
	assert_int_equal(pragma_static_parse_objdump(text, &p), 0);
	near(metric(&p, "static.loops"), 2, 0);
	contains(call_remark(&p, "malloc")->text, "not in a loop: top level of pk_forward");
	contains(call_remark(&p, "free")->text, "not in a loop: top level of pk_forward");
	assert_string_equal(call_remark(&p, "memset")->text,
			    "memset (in a loop, not the innermost: depth 1 of pk_forward)");
	assert_string_equal(call_remark(&p, "expf")->text, "expf (inside an innermost loop: depth 2 of pk_forward)");
	struct pragma_diagnosis d;
	pragma_diagnose(&p, NULL, &d);
	const struct pragma_finding *f = NULL;
	for (size_t i = 0; i < d.n; i++)
		if (!strcmp(d.f[i].bottleneck, "calls-in-loop"))
			f = &d.f[i];
	assert_non_null(f);
	contains(f->evidence, "expf inside an innermost loop at k.c:14, depth 2 of pk_forward");
	assert_null(strstr(f->evidence, "memset"));
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);
}

/* ---- spills ---- */

static void stack_tile_is_not_spilling(void **state)
{
	struct pragma_profile p;
	char *dis = fixture("transpose_stack_tile.objdump");

	(void)state;
	profile_for(&p, "transpose_stack_tile.c");
	assert_int_equal(pragma_static_parse_objdump(dis, &p), 0);
	/* vmovss %xmm0,0x60(%rsp,%r13,4) in the innermost loop: a store into
	 * the tile (indexed), not a spill */
	assert_non_null(strstr(dis, "vmovss %xmm0,0x60(%rsp,%r13,4)"));
	near(metric(&p, "static.stack_spills"), 0, 0);
	struct pragma_diagnosis d;
	pragma_diagnose(&p, NULL, &d);
	for (size_t i = 0; i < d.n; i++)
		assert_string_not_equal(d.f[i].bottleneck, "register-spills");
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);
	free(dis);
}

static void real_spills_found(void **state)
{
	struct pragma_profile p;
	char *dis = fixture("matmul_tile_spills.objdump");
	const char *note = NULL;

	(void)state;
	profile_for(&p, "matmul_tile_spills.c");
	assert_int_equal(pragma_static_parse_objdump(dis, &p), 0);
	/* broadcasts of A stored to 0x60(%rsp).. and reloaded in the innermost
	 * loop; the tile itself (address taken by memset) is not counted */
	assert_true(metric(&p, "static.stack_spills") >= 10);
	for (size_t i = 0; i < p.n_notes; i++)
		if (strstr(p.notes[i], "spill and reload instructions"))
			note = p.notes[i];
	contains(note, "in innermost loops (the first at matmul_tile_spills.c:");
	contains(note, "inside an innermost loop: depth 4 of pk_forward");
	contains(note, "stores into stack arrays, indexed or with their address taken, are not spills");
	struct pragma_machine m = amd(1);
	struct pragma_diagnosis d;
	pragma_diagnose(&p, &m, &d);
	const struct pragma_finding *f = NULL;
	for (size_t i = 0; i < d.n; i++)
		if (!strcmp(d.f[i].bottleneck, "register-spills"))
			f = &d.f[i];
	assert_non_null(f);
	contains(f->evidence, "the first at matmul_tile_spills.c:");
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);
	free(dis);
}

/* Hand-written slots: a spill and its reload; an indexed store; a slot in
 * an array whose address is taken; a value stored in the loop and read
 * only after it. */
static void spill_rules(void **state)
{
	struct pragma_profile p;
	const char *text = "0000000000001100 <pk_forward>:\n"
			   "/src/k.c:5\n"
			   "    1100:\tlea    0x100(%rsp),%rdi\n"            /* an array from 0x100 on */
			   "    1108:\tcall   1040 <memset@plt>\n"
			   "/src/k.c:7\n"
			   "    1110:\tvmovaps %ymm3,0x40(%rsp)\n"          /* spill */
			   "    1116:\tvfmadd231ps 0x40(%rsp),%ymm1,%ymm2\n" /* folded reload */
			   "    111c:\tvmovups %ymm2,0x200(%rsp,%rax,4)\n"    /* indexed: an array from 0x200 */
			   "    1122:\tvmovaps %ymm2,0x120(%rsp)\n"         /* in the memset array (0x100-0x200) */
			   "    1128:\tvmovaps 0x120(%rsp),%ymm5\n"
			   "    112e:\tvmovaps %ymm4,0x60(%rsp)\n"          /* stored here, read after the loop */
			   "    1134:\tjne    1110 <pk_forward+0x10>\n"
			   "/src/k.c:9\n"
			   "    1136:\tvmovaps 0x60(%rsp),%ymm0\n"
			   "    113c:\tret\n";

	(void)state;
	profile_for(&p, "k.c");
	assert_int_equal(pragma_static_parse_objdump(text, &p), 0);
	near(metric(&p, "static.stack_spills"), 2, 0);
	int found = 0;
	for (size_t i = 0; i < p.n_notes; i++)
		if (strstr(p.notes[i], "2 vector spill and reload instructions in innermost loops (the first at k.c:7, "
				       "inside an innermost loop: depth 1 of pk_forward), 2 elsewhere"))
			found = 1;
	if (!found)
		fail_msg("no spill note: %s", p.n_notes ? p.notes[0] : "(none)");
	pragma_profile_release(&p);
}

/* A compiler's "not vectorized" on an intrinsics loop is about its own
 * vectorizer: the remark says the code is vector already (a player read
 * such remarks as advice to vectorize a hand-vectorized loop). */
static void vector_loops_marked(void **state)
{
	struct pragma_profile p;
	char *dis = fixture("matmul_fma256.objdump");

	(void)state;
	profile_for(&p, "matmul_fma256.c");
	pragma_profile_remark(&p, PRAGMA_REMARK_NOT_VECTORIZED, 23, "trip count unknown to the compiler", NULL);
	pragma_profile_remark(&p, PRAGMA_REMARK_NOT_VECTORIZED, 1, "no vectype for stmt", NULL);
	pragma_static_mark_vector_loops(dis, &p);
	contains(p.remarks[0].text, "trip count unknown to the compiler (its code is packed vector instructions already");
	assert_string_equal(p.remarks[1].text, "no vectype for stmt");
	pragma_profile_release(&p);
	free(dis);
}

/* ---- AVX-512 and sim ---- */

static void sim_refuses_avx512(void **state)
{
	char *z = fixture("matmul_fma512.objdump"), *y = fixture("matmul_fma256.objdump");
	struct pragma_machine zen4 = amd(0x11), zen3 = amd(1);
	const char *why;

	(void)state;
	why = pragma_sim_refuse(z, "matmul_fma512.c", &zen4);
	contains(why, "AVX-512 instructions");
	contains(why, "valgrind cannot execute AVX-512");
	contains(why, "in tile at matmul_fma512.c:");
	contains(why, "mca collector");
	/* unknown machine: refuse too (the native run may have used them) */
	assert_non_null(pragma_sim_refuse(z, "matmul_fma512.c", NULL));
	/* no AVX-512 on the machine: the native run took another path, so
	 * does valgrind: same code */
	assert_null(pragma_sim_refuse(z, "matmul_fma512.c", &zen3));
	assert_null(pragma_sim_refuse(y, "matmul_fma256.c", &zen4));
	/* without raw bytes (--no-show-raw-insn), the registers tell */
	const char *nobytes = "0000000000001100 <pk_forward>:\n"
			      "    1100:\tvfmadd231ps (%rax){1to16},%zmm1,%zmm0\n"
			      "    1106:\tret\n";
	assert_non_null(pragma_sim_refuse(nobytes, "k.c", &zen4));
	const char *ymm16 = "0000000000001100 <pk_forward>:\n"
			    "    1100:\tvaddps %ymm17,%ymm1,%ymm0\n"
			    "    1106:\tret\n";
	assert_non_null(pragma_sim_refuse(ymm16, "k.c", &zen4));
	const char *avx2 = "0000000000001100 <pk_forward>:\n"
			   "    1100:\tvfmadd231ps (%rax),%ymm1,%ymm0\n"
			   "    1106:\tvpgatherdd %ymm2,(%rax,%ymm3,4),%ymm4\n"
			   "    110c:\tret\n";
	assert_null(pragma_sim_refuse(avx2, "k.c", &zen4));

	/* static counts the EVEX instructions */
	struct pragma_profile p;
	profile_for(&p, "matmul_fma512.c");
	assert_int_equal(pragma_static_parse_objdump(z, &p), 0);
	assert_true(metric(&p, "static.avx512") >= 24);
	assert_true(metric(&p, "static.zmm") >= 12);
	pragma_profile_release(&p);
	free(z);
	free(y);
}

/* A profile where sim could not run: a stray sim.* figure (another
 * build's) must not reach any finding. */
static void no_diagnosis_from_another_build(void **state)
{
	struct pragma_profile p;
	struct pragma_machine m = amd(0x11);
	struct pragma_diagnosis d;

	(void)state;
	profile_for(&p, "k.c");
	pragma_profile_set(&p, "static.fp_ops", 40, "static");
	pragma_profile_set(&p, "static.fp_packed_pct", 100, "static");
	pragma_profile_set(&p, "static.vector_bits", 512, "static");
	pragma_profile_set(&p, "sim.fp_ops", 1e6, "sim");
	pragma_profile_set(&p, "sim.fp_packed_pct", 0, "sim");
	pragma_profile_set(&p, "sim.vector_bits", 0, "sim");
	pragma_profile_set(&p, "sim.d1_miss_rate", 40, "sim");
	pragma_profile_set(&p, "sim.d1_misses", 1e7, "sim");
	pragma_profile_set(&p, "sim.data_refs", 2.5e7, "sim");
	pragma_profile_set(&p, "sim.instructions", 1e8, "sim");
	pragma_profile_unavailable(&p, "sim", "this build has 30 AVX-512 instructions ... valgrind cannot execute AVX-512");
	pragma_diagnose(&p, &m, &d);
	for (size_t i = 0; i < d.n; i++) {
		assert_null(strstr(d.f[i].evidence, "simulated"));
		assert_string_not_equal(d.f[i].bottleneck, "under-vectorized");
		assert_string_not_equal(d.f[i].bottleneck, "cache-thrashing");
	}
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);
}

/* ---- llvm-mca ---- */

static void mca_model_choice(void **state)
{
	struct pragma_machine zen3 = amd(1), zen4 = amd(0x11), skx, none;
	char cpu[32], cav[256];

	(void)state;
	pragma_mca_cpu(&zen3, 0, 19, cpu, sizeof(cpu), cav, sizeof(cav));
	assert_string_equal(cpu, "znver3");
	assert_string_equal(cav, "");
	pragma_mca_cpu(&zen3, 0, 14, cpu, sizeof(cpu), cav, sizeof(cav));
	assert_string_equal(cpu, "znver3");
	contains(cav, "FMA a throughput of one per cycle where Zen 3 issues two");
	/* AVX-512 code on a machine without it: a model that can take it */
	pragma_mca_cpu(&zen3, 1, 14, cpu, sizeof(cpu), cav, sizeof(cav));
	assert_string_equal(cpu, "icelake-server");
	contains(cav, "this machine has no AVX-512, so it cannot run this code");
	/* Zen 4: its own model from llvm-mca 17 on */
	pragma_mca_cpu(&zen4, 1, 19, cpu, sizeof(cpu), cav, sizeof(cav));
	assert_string_equal(cpu, "znver4");
	contains(cav, "two cycles of a 256-bit pipe");
	pragma_mca_cpu(&zen4, 1, 14, cpu, sizeof(cpu), cav, sizeof(cav));
	assert_string_equal(cpu, "icelake-server");
	contains(cav, "Zen 4 runs each 512-bit operation on its 256-bit units");
	pragma_mca_cpu(&zen4, 0, 14, cpu, sizeof(cpu), cav, sizeof(cav));
	assert_string_equal(cpu, "znver3");
	contains(cav, "Zen 4 modeled as Zen 3");
	memset(&skx, 0, sizeof(skx));
	snprintf(skx.vendor, sizeof(skx.vendor), "GenuineIntel");
	skx.family = 6;
	skx.model = 0x55;
	skx.has_avx512f = skx.has_avx2 = 1;
	pragma_mca_cpu(&skx, 1, 14, cpu, sizeof(cpu), cav, sizeof(cav));
	assert_string_equal(cpu, "skylake-avx512");
	assert_string_equal(cav, "");
	skx.model = 0x8f;
	pragma_mca_cpu(&skx, 1, 19, cpu, sizeof(cpu), cav, sizeof(cav));
	assert_string_equal(cpu, "sapphirerapids");
	memset(&none, 0, sizeof(none));
	pragma_mca_cpu(&none, 0, 14, cpu, sizeof(cpu), cav, sizeof(cav));
	assert_string_equal(cpu, "x86-64");
	contains(cav, "no llvm-mca model for this CPU");
}

static const struct pragma_remark *loop_remark(const struct pragma_profile *p, int k)
{
	for (size_t i = 0; i < p->n_remarks; i++)
		if (p->remarks[i].kind == PRAGMA_REMARK_LOOP && k-- == 0)
			return &p->remarks[i];
	return NULL;
}

/* The plan for the AVX-512 kernel: the hottest loop is the k loop of the
 * register tile; its input is what the fixture holds. */
static void mca_plan_avx512(void **state)
{
	char *dis = fixture("matmul_fma512.objdump"), *want = fixture("matmul_fma512.s");
	struct pragma_machine zen4 = amd(0x11);
	struct pragma_mca_plan plan;

	(void)state;
	assert_int_equal(pragma_mca_plan(dis, "matmul_fma512.c", NULL, "x.so", &zen4, 19, 8, &plan), 0);
	assert_string_equal(plan.cpu, "znver4");
	assert_false(plan.measured);
	assert_true(plan.n >= 2 && plan.n_found >= plan.n && plan.n_innermost >= plan.n);
	const struct pragma_mca_loop *l = &plan.loops[0];
	assert_string_equal(l->fn, "tile");
	assert_int_equal(l->line_lo, 20);
	assert_int_equal(l->line_hi, 39);
	/* named by its jump back to the head: the k loop's `for`, not the
	 * line most of its (inlined intrinsics') instructions carry */
	assert_int_equal(l->line, 20);
	assert_int_equal(l->depth, 1);
	assert_int_equal(l->outer_depth, 2); /* tile() is called from the i and j loops */
	assert_true(l->avx512);
	near(l->flops, 12 * 16 * 2, 0);
	assert_string_equal(l->input, want);
	contains(l->chain, "vfmadd231ps into %zmm14, %zmm13, %zmm12, %zmm11, ...: 12 accumulators");
	pragma_mca_plan_release(&plan);
	/* llvm-mca 14: no Zen 4 model */
	assert_int_equal(pragma_mca_plan(dis, "matmul_fma512.c", NULL, "x.so", &zen4, 14, 8, &plan), 0);
	assert_string_equal(plan.cpu, "icelake-server");
	pragma_mca_plan_release(&plan);
	free(dis);
	free(want);
}

/* A loop whose instructions mostly carry an inlined helper's line (17)
 * is named by its own `for` (28), where its jump back to the head is: a
 * player read "the loop at kernel.c:17", the helper's body. */
static void loop_named_by_its_statement(void **state)
{
	char *dis = fixture("helper_inlined.objdump");
	struct pragma_machine zen3 = amd(1);
	struct pragma_mca_plan plan;

	(void)state;
	assert_int_equal(pragma_mca_plan(dis, "helper_inlined.c", NULL, "x.so", &zen3, 19, 8, &plan), 0);
	assert_true(plan.n >= 1);
	for (size_t k = 0; k < plan.n; k++) {
		assert_string_equal(plan.loops[k].fn, "pk_forward");
		assert_int_equal(plan.loops[k].line, 28);
		assert_true(plan.loops[k].line_lo <= 17 && plan.loops[k].line_hi >= 28);
	}
	pragma_mca_plan_release(&plan);
	free(dis);
}

/* llvm-mca's answers for that loop: port-bound on the FMA pipes. */
static void mca_port_bound_avx512(void **state)
{
	char *dis = fixture("matmul_fma512.objdump"), *icx = fixture("matmul_fma512.icx-14.mca"),
	     *zn4 = fixture("matmul_fma512.znver4-19.mca");
	struct pragma_machine zen4 = amd(0x11);
	struct pragma_mca_plan plan;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_profile p;

	(void)state;
	/* Ice Lake server (llvm-mca 14): two 512-bit FMA ports, 12 FMAs */
	assert_int_equal(pragma_mca_plan(dis, "matmul_fma512.c", NULL, "x.so", &zen4, 14, 8, &plan), 0);
	struct pragma_mca_loop *l = &plan.loops[0];
	assert_int_equal(pragma_mca_parse(icx, l, &err), 0);
	near(l->cycles, 1413 / 200.0, 1e-9);
	near(l->resource_cycles, 6.0, 0);
	assert_string_equal(l->bound, "port");
	assert_string_equal(l->resource, "ICXPort0");
	contains(l->resource_desc, "FMA");
	near(l->resource_load, 6.69, 1e-9);
	near(l->res_pct, 83.23, 1e-9);
	near(l->dep_pct, 9.48, 1e-9);
	profile_for(&p, "matmul_fma512.c");
	pragma_mca_report(&plan, "matmul_fma512.c", &p);
	near(metric(&p, "mca.cycles_per_iter"), 7.065, 1e-9);
	near(metric(&p, "mca.port_cycles_per_iter"), 6, 0);
	near(metric(&p, "mca.port_pressure_pct"), 100 * 6.69 / 7.065, 1e-6);
	near(metric(&p, "mca.flops_per_cycle"), 384 / 7.065, 1e-6);
	assert_false(pragma_profile_get(&p, "mca.hot_loop_pct", NULL)); /* no sim: chosen statically */
	const struct pragma_remark *r = loop_remark(&p, 0);
	assert_non_null(r);
	assert_int_equal(r->line, plan.loops[0].line);
	contains(r->text, "7.07 cycles per iteration (an ideal spread over the ports needs 6.00): bound by port "
			  "ICXPort0 (vector ALU/FMA");
	contains(r->text, "384 FP operations per iteration = 54.4 per cycle");
	contains(r->text, "lines 20-39, depth 1 in tile (+ outer loops)");
	int caveat = 0;
	for (size_t i = 0; i < p.n_notes; i++)
		caveat |= strstr(p.notes[i], "Zen 4 runs each 512-bit operation on its 256-bit units") != NULL;
	assert_true(caveat);
	/* the diagnosis: port-bound, from the model, saying so */
	struct pragma_diagnosis d;
	pragma_diagnose(&p, &zen4, &d);
	const struct pragma_finding *f = NULL;
	for (size_t i = 0; i < d.n; i++)
		if (!strcmp(d.f[i].bottleneck, "port-bound"))
			f = &d.f[i];
	assert_non_null(f);
	contains(f->evidence, "bound by port ICXPort0 (vector ALU/FMA, divides, branches), busy 95% of its 7.07 cycles");
	contains(f->evidence, "llvm-mca 14's icelake-server model of this build");
	contains(f->evidence, "execution ports are the limit");
	/* two 512-bit FMA units: 64 per cycle; 54.4 is 85% of it */
	contains(f->evidence, "54.4 FP operations per cycle, 85% of the modeled core's FP32 peak (64): the loop itself is done");
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);
	pragma_mca_plan_release(&plan);

	/* Zen 4 (llvm-mca 19): 512-bit FMAs take two cycles of a pipe, and
	 * the broadcasts crowd FP1: port-bound there */
	assert_int_equal(pragma_mca_plan(dis, "matmul_fma512.c", NULL, "x.so", &zen4, 19, 8, &plan), 0);
	l = &plan.loops[0];
	assert_int_equal(pragma_mca_parse(zn4, l, &err), 0);
	assert_string_equal(l->bound, "port");
	assert_string_equal(l->resource, "Zn4FP1");
	contains(l->resource_desc, "FP/vector pipe");
	assert_true(l->cycles > 12 && l->cycles < 20);
	pragma_mca_plan_release(&plan);
	free(dis);
	free(icx);
	free(zn4);
}

static void mca_port_bound_avx2(void **state)
{
	char *dis = fixture("matmul_fma256.objdump"), *out = fixture("matmul_fma256.znver3-19.mca"),
	     *want = fixture("matmul_fma256.s");
	struct pragma_machine zen3 = amd(1);
	struct pragma_mca_plan plan;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_profile p;

	(void)state;
	assert_int_equal(pragma_mca_plan(dis, "matmul_fma256.c", NULL, "x.so", &zen3, 19, 8, &plan), 0);
	assert_string_equal(plan.cpu, "znver3");
	assert_string_equal(plan.caveat, "");
	struct pragma_mca_loop *l = &plan.loops[0];
	assert_string_equal(l->input, want);
	assert_false(l->avx512);
	near(l->flops, 12 * 8 * 2, 0);
	assert_int_equal(pragma_mca_parse(out, l, &err), 0);
	assert_string_equal(l->bound, "port");
	assert_true(!strncmp(l->resource, "Zn3FP", 5));
	near(l->resource_cycles, 6.0, 0);
	assert_true(l->cycles >= 6.0 && l->cycles < 6.3);
	profile_for(&p, "matmul_fma256.c");
	pragma_mca_report(&plan, "matmul_fma256.c", &p);
	/* two 256-bit FMA pipes: 32 FP operations per cycle at most */
	assert_true(metric(&p, "mca.flops_per_cycle") > 30 && metric(&p, "mca.flops_per_cycle") <= 32);
	assert_true(metric(&p, "mca.latency_pct") < 5);
	contains(loop_remark(&p, 0)->text, "bound by port Zn3FP");
	near(metric(&p, "mca.peak_flops_per_cycle"), 32, 0);
	struct pragma_diagnosis d;
	pragma_diagnose(&p, &zen3, &d);
	int at_peak = 0;
	for (size_t i = 0; i < d.n; i++)
		at_peak |= !strcmp(d.f[i].bottleneck, "port-bound") && strstr(d.f[i].evidence, "of the modeled core's FP32 peak (32)");
	assert_true(at_peak);
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);
	pragma_mca_plan_release(&plan);
	free(dis);
	free(out);
	free(want);
}

/* Two accumulators for a 4-cycle FMA: the ports wait on the chain. */
static void mca_latency_bound(void **state)
{
	char *icx = fixture("dot2.icx-14.mca"), *zn3 = fixture("dot2_avx2.znver3-19.mca");
	struct pragma_mca_loop l;
	struct pragma_err err = PRAGMA_ERR_INIT;

	(void)state;
	memset(&l, 0, sizeof(l));
	assert_int_equal(pragma_mca_parse(zn3, &l, &err), 0);
	assert_string_equal(l.bound, "latency"); /* the analysis: 68% dependencies, 2% resources */
	near(l.dep_pct, 68.19, 1e-9);
	assert_true(l.cycles > 1.9 * l.resource_cycles);
	/* llvm-mca 14's analysis finds little either way here: the cycles
	 * against what the ports need decide */
	memset(&l, 0, sizeof(l));
	assert_int_equal(pragma_mca_parse(icx, &l, &err), 0);
	assert_true(l.res_pct + l.dep_pct < 10);
	assert_string_equal(l.bound, "latency");
	contains(l.chain, "vfmadd231ps"); /* llvm-mca's critical sequence, as no plan gave one */

	/* the diagnosis names it with the chain */
	struct pragma_profile p;
	struct pragma_mca_plan plan;
	memset(&plan, 0, sizeof(plan));
	snprintf(plan.cpu, sizeof(plan.cpu), "znver3");
	plan.version = 19;
	plan.n = 1;
	plan.n_found = plan.n_innermost = 1;
	plan.loops = &l;
	memset(&l, 0, sizeof(l));
	snprintf(l.fn, sizeof(l.fn), "pk_forward");
	l.line = l.line_lo = 12;
	l.line_hi = 14;
	l.depth = 1;
	l.n_insns = 8;
	l.flops = 32;
	snprintf(l.chain, sizeof(l.chain), "vfmadd231ps into %%ymm0, %%ymm1: 2 accumulators");
	assert_int_equal(pragma_mca_parse(zn3, &l, &err), 0);
	profile_for(&p, "k.c");
	pragma_mca_report(&plan, "k.c", &p);
	assert_true(metric(&p, "mca.latency_pct") > 40);
	struct pragma_diagnosis d;
	pragma_diagnose(&p, NULL, &d);
	const struct pragma_finding *f = NULL;
	for (size_t i = 0; i < d.n; i++)
		if (!strcmp(d.f[i].bottleneck, "latency-bound-loop"))
			f = &d.f[i];
	assert_non_null(f);
	contains(f->evidence, "the hottest loop at k.c:12 takes 4.0");
	contains(f->evidence, "(vfmadd231ps into %ymm0, %ymm1: 2 accumulators)");
	contains(f->evidence, "llvm-mca 19's znver3 model of this build");
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);
	/* the same loop calling a function: the model leaves the callee out,
	 * so no finding rests on its cycles */
	l.calls = 1;
	profile_for(&p, "k.c");
	pragma_mca_report(&plan, "k.c", &p);
	contains(loop_remark(&p, 0)->text, "calls inside: the callee is not modeled");
	pragma_diagnose(&p, NULL, &d);
	for (size_t i = 0; i < d.n; i++)
		assert_string_not_equal(d.f[i].bottleneck, "latency-bound-loop");
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);
	free(icx);
	free(zn3);
}

static void mca_fix_input(void **state)
{
	struct pragma_mca_loop l;

	(void)state;
	memset(&l, 0, sizeof(l));
	l.input = strdup("# loop\n.Lmca_head:\n\tvaddps %ymm1,%ymm2,%ymm3\n\tfoo %eax\n\tjne .Lmca_head\n");
	assert_int_equal(pragma_mca_fix_input(&l, "<stdin>:4:2: error: invalid instruction mnemonic 'foo'\n"), 1);
	assert_string_equal(l.input, "# loop\n.Lmca_head:\n\tvaddps %ymm1,%ymm2,%ymm3\n# left out: foo %eax\n\tjne .Lmca_head\n");
	assert_int_equal(l.dropped, 1);
	assert_int_equal(pragma_mca_fix_input(&l, "error: found an unsupported instruction in the input assembly "
						  "sequence.\nnote: instruction: \tvaddps\t%ymm1, %ymm2, %ymm3\n"),
			 1);
	assert_null(strstr(l.input, "\tvaddps"));
	assert_int_equal(l.dropped, 2);
	/* nothing it can place */
	assert_int_equal(pragma_mca_fix_input(&l, "error: something else\n"), 0);
	free(l.input);
}

/* ---- llvm-mca for real, on builds made by pragma's build ---- */

static int find_tool(const char **names, struct pragma_buf *path)
{
	for (int i = 0; names[i]; i++)
		if (pragma_which(names[i], path))
			return i;
	return -1;
}

static void live_one(const char *kernel, const char *const *flags, const struct pragma_machine *m, int version,
		     const char *mca, double flops)
{
	struct pragma_buf src = PRAGMA_BUF_INIT, so = PRAGMA_BUF_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_build_opts bo = { .flags = flags };
	struct pragma_child c = PRAGMA_CHILD_INIT;
	struct pragma_mca_plan plan;
	const char *root = getenv("PRAGMA_TEST_DATA");

	pragma_buf_addf(&src, "%s/profile_kernels/%s", root ? root : "tests", kernel);
	if (pragma_build_cached(src.data, &bo, &so, &err) < 0)
		fail_msg("build %s: %s", kernel, err.msg);
	const char *od[] = { "objdump", "-d", "-l", "-w", "--inlines", "-j", ".text", so.data, NULL };
	c.argv = od;
	c.out_cap = 64 << 20;
	assert_int_equal(pragma_child_run(&c, &err), 0);
	assert_int_equal(c.exit_code, 0);
	assert_int_equal(pragma_mca_plan(c.out.data, kernel, NULL, so.data, m, version, 8, &plan), 0);
	pragma_child_release(&c);
	struct pragma_mca_loop *l = &plan.loops[0];
	near(l->flops, flops, 0);
	char cpu[64];
	snprintf(cpu, sizeof(cpu), "-mcpu=%s", plan.cpu);
	const char *argv[] = { mca, "-mtriple=x86_64-unknown-linux-gnu", cpu, "-iterations=200", "-bottleneck-analysis",
			       "-", NULL };
	c = (struct pragma_child)PRAGMA_CHILD_INIT;
	c.argv = argv;
	c.stdin_data = l->input;
	c.stdin_len = strlen(l->input);
	c.timeout_ms = 60000;
	assert_int_equal(pragma_child_run(&c, &err), 0);
	if (c.exit_code)
		fail_msg("llvm-mca -mcpu=%s failed: %s", plan.cpu, c.err.data);
	assert_int_equal(pragma_mca_parse(c.out.data, l, &err), 0);
	pragma_child_release(&c);
	/* twelve FMAs on two FMA pipes: port-bound on an FP/vector port,
	 * at 6 cycles (full-width pipes) to 12-18 (Zen 4's 512-bit halves) */
	if (strcmp(l->bound, "port"))
		fail_msg("%s on %s: %s-bound at %.2f cycles (ports %.2f)", kernel, plan.cpu, l->bound, l->cycles,
			 l->resource_cycles);
	if (!strstr(l->resource_desc, "FMA") && !strstr(l->resource_desc, "FP/vector"))
		fail_msg("%s on %s: bound by %s (%s), not an FMA port", kernel, plan.cpu, l->resource, l->resource_desc);
	assert_true(l->cycles >= 5.5 && l->cycles <= 20);
	print_message("%s: llvm-mca %d -mcpu=%s: %.2f cycles per iteration, %s-bound on %s, %.1f FLOP/cycle\n", kernel,
		      version, plan.cpu, l->cycles, l->bound, l->resource, l->flops / l->cycles);
	pragma_mca_plan_release(&plan);
	pragma_buf_release(&src);
	pragma_buf_release(&so);
}

static void mca_live(void **state)
{
	static const char *names[] = { "llvm-mca-19", "llvm-mca-18", "llvm-mca-17", "llvm-mca", "llvm-mca-14", NULL };
	static const int versions[] = { 19, 18, 17, 0, 14 };
	struct pragma_buf mca = PRAGMA_BUF_INIT, od = PRAGMA_BUF_INIT;
	int k = find_tool(names, &mca);

	(void)state;
	if (k < 0 || !pragma_which("objdump", &od)) {
		pragma_buf_release(&mca);
		pragma_buf_release(&od);
		skip_because("llvm-mca or objdump not installed: scripts/install-deps.sh");
	}
	int version = versions[k] ? versions[k] : 14; /* Debian 12's plain llvm-mca is 14 */
	struct pragma_machine zen4 = amd(0x11), zen3 = amd(1);
	/* AVX-512 with -mavx512f -mfma, as pragma builds a kernel with those
	 * flags: static analysis needs no AVX-512 hardware */
	static const char *const f512[] = { "-mavx512f", "-mfma", NULL };
	live_one("matmul_fma512.c", f512, &zen4, version, mca.data, 12 * 16 * 2);
	static const char *const f256[] = { "-mavx2", "-mfma", NULL };
	live_one("matmul_fma256.c", f256, &zen3, version, mca.data, 12 * 8 * 2);
	pragma_buf_release(&mca);
	pragma_buf_release(&od);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(calls_located),	  cmocka_unit_test(natural_loops),
		cmocka_unit_test(stack_tile_is_not_spilling), cmocka_unit_test(real_spills_found),
		cmocka_unit_test(spill_rules),		  cmocka_unit_test(vector_loops_marked),
		cmocka_unit_test(sim_refuses_avx512),
		cmocka_unit_test(no_diagnosis_from_another_build), cmocka_unit_test(mca_model_choice),
		cmocka_unit_test(mca_plan_avx512),	  cmocka_unit_test(loop_named_by_its_statement),
		cmocka_unit_test(mca_port_bound_avx512),
		cmocka_unit_test(mca_port_bound_avx2),	  cmocka_unit_test(mca_latency_bound),
		cmocka_unit_test(mca_fix_input),	  cmocka_unit_test(mca_live),
	};

	return pragma_run_tests(tests, NULL, NULL);
}
