/*
 * The bottleneck rules and the comparison helper, on profiles built the way
 * the collectors fill them: each rule fires on its evidence and stays quiet
 * on the look-alikes an expert would dismiss (compulsory misses of a
 * streaming kernel, mispredicted loop exits, a memset per row tile).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "pragma_test.h"
#include <string.h>

#include "pragma/diagnose.h"

static struct pragma_machine machine(void)
{
	struct pragma_machine m;

	memset(&m, 0, sizeof(m));
	m.measured = 1;
	m.peak_gflops = 230;
	m.peak_gbs = 25.2;
	m.has_avx2 = m.has_fma = m.has_avx512f = 1;
	return m;
}

static const struct pragma_finding *find(const struct pragma_diagnosis *d, const char *name)
{
	for (size_t i = 0; i < d->n; i++)
		if (!strcmp(d->f[i].bottleneck, name))
			return &d->f[i];
	return NULL;
}

static void has(const struct pragma_finding *f, const char *text)
{
	if (!f)
		fail_msg("finding missing (wanted evidence '%s')", text);
	if (!strstr(f->evidence, text))
		fail_msg("evidence lacks '%s': %s", text, f->evidence);
}

static void base(struct pragma_profile *p, double flops, double bytes, int threads)
{
	pragma_profile_init(p);
	p->flops = flops;
	p->bytes = bytes;
	p->threads = threads;
	p->cores = 2;
	snprintf(p->source_name, sizeof(p->source_name), "kernel.c");
}

static void roof(struct pragma_profile *p, const struct pragma_machine *m, double ms)
{
	pragma_roofline(p->flops, p->bytes, ms, m, p);
}

static void memory_bound(void **state)
{
	struct pragma_machine m = machine();
	struct pragma_profile p;
	struct pragma_diagnosis d;

	(void)state;
	/* a streaming kernel: 0.25 FLOP/B, 21.7 GB/s of a 25.2 GB/s peak */
	base(&p, 0.25 * 217e6, 217e6, 2);
	roof(&p, &m, 10);
	pragma_profile_set(&p, "sim.ll_miss_rate", 38, "sim");
	pragma_profile_set(&p, "sim.ll_misses", 3.39e6, "sim");
	pragma_profile_set(&p, "static.nt_stores", 0, "static");
	pragma_diagnose(&p, &m, &d);
	has(find(&d, "memory-bound"), "21.7 GB/s = 86% of the bandwidth roof (25.2 GB/s, the best a streaming kernel "
				      "reaches under the same timing protocol)");
	has(find(&d, "memory-bound"), "LL miss rate 38% (3.39M misses per call)");
	has(find(&d, "memory-bound"), "simulated on 1 of 2 threads");
	has(find(&d, "memory-bound"), "no streaming stores");
	assert_true(find(&d, "memory-bound")->confidence > 0.85);
	has(find(&d, "near-roof"), "86%");
	assert_null(find(&d, "far-from-roof"));
	assert_string_equal(d.f[0].bottleneck, "memory-bound"); /* most confident first */
	pragma_diagnosis_release(&d);
	/* One core busy in the profiled run: one thread, the simulation saw
	 * it whole; unless that run was far slower than the timed one (a
	 * disturbed run's idle core says nothing about the kernel). */
	pragma_profile_set(&p, "par.busy_cores", 1.02, "par");
	pragma_diagnose(&p, &m, &d);
	has(find(&d, "memory-bound"), "the kernel runs on one thread");
	pragma_diagnosis_release(&d);
	pragma_profile_set(&p, "time.median_ms", 25, "timing");
	p.timed_ms = 10;
	pragma_diagnose(&p, &m, &d);
	has(find(&d, "memory-bound"), "simulated on 1 of 2 threads");
	assert_null(strstr(find(&d, "memory-bound")->evidence, "runs on one thread"));
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);

	/* the same kernel at a third of the bandwidth: headroom, not memory-bound */
	base(&p, 0.25 * 217e6, 217e6, 2);
	roof(&p, &m, 30);
	pragma_diagnose(&p, &m, &d);
	assert_null(find(&d, "memory-bound"));
	has(find(&d, "far-from-roof"), "29% of the bandwidth roof");
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);
}

/* A Winograd-style convolution: the task counts more FLOPs than the kernel
 * does, so by that count it runs at 1.33x the FP32 peak. The near-roof rule
 * must not read that as "133% of the compute roof"; its roof is bandwidth,
 * which it uses little of (no far-from-roof either: it is compute-bound on
 * FLOPs nobody counted). */
static void fewer_flops_than_counted(void **state)
{
	struct pragma_machine m = machine();
	struct pragma_profile p;
	struct pragma_diagnosis d;

	(void)state;
	m.roof_gbs = 20;
	/* 3.06 GFLOP counted over 50 MB in 10 ms: 306 GFLOP/s (1.33x), 5 GB/s (25%) */
	base(&p, 3.059e9, 5e7, 2);
	roof(&p, &m, 10);
	assert_true(pragma_profile_get(&p, "roof.flops_over_peak", NULL));
	pragma_diagnose(&p, &m, &d);
	assert_null(find(&d, "near-roof"));
	assert_null(find(&d, "far-from-roof"));
	for (size_t i = 0; i < d.n; i++)
		if (strstr(d.f[i].evidence, "133%"))
			fail_msg("an impossible fraction in %s: %s", d.f[i].bottleneck, d.f[i].evidence);
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);

	/* The same kernel moving its bytes near the roof: memory-bound and
	 * near-roof on the bandwidth fraction, saying why. */
	base(&p, 3.059e9, 1.7e8, 2);
	roof(&p, &m, 10);                 /* 17 GB/s = 85% of 20 */
	pragma_diagnose(&p, &m, &d);
	has(find(&d, "memory-bound"), "85% of the bandwidth roof");
	has(find(&d, "memory-bound"), "fewer FLOPs than counted");
	has(find(&d, "near-roof"), "85% of what the bandwidth roof allows");
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);

	/* A profile stored before pragma knew (roof.pct_roof = 133 from the
	 * compute side, as Table I once showed): still no near-roof. */
	base(&p, 3.059e9, 5e7, 2);
	pragma_profile_set(&p, "roof.pct_roof", 133, "roofline");
	pragma_profile_set(&p, "roof.pct_peak_flops", 133, "roofline");
	pragma_profile_set(&p, "roof.gflops", 306, "roofline");
	pragma_profile_set(&p, "roof.peak_gflops", 230, "roofline");
	pragma_profile_set(&p, "roof.ai", 61, "roofline");
	pragma_profile_set(&p, "roof.ridge_ai", 9, "roofline");
	pragma_profile_set(&p, "roof.gbs", 5, "roofline");
	pragma_profile_set(&p, "roof.pct_peak_bw", 20, "roofline");
	pragma_profile_set(&p, "roof.peak_gbs", 25.2, "roofline");
	pragma_diagnose(&p, &m, &d);
	assert_null(find(&d, "near-roof"));
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);

	/* An honest compute-bound kernel at 95% of the peak: near-roof, with
	 * the other reading named. */
	base(&p, 2.185e9, 1e7, 2);
	roof(&p, &m, 10);                 /* 218.5 GFLOP/s of 230 */
	pragma_diagnose(&p, &m, &d);
	has(find(&d, "near-roof"), "95% of what the compute roof allows");
	has(find(&d, "near-roof"), "fewer FLOPs than the task counts");
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);
}

static void under_vectorized(void **state)
{
	struct pragma_machine m = machine();
	struct pragma_profile p;
	struct pragma_diagnosis d;

	(void)state;
	base(&p, 2.0 * 256 * 256 * 256, 3.0 * 256 * 256 * 4, 1);
	roof(&p, &m, 15);
	pragma_profile_set(&p, "sim.fp_ops", 2e6, "sim");
	pragma_profile_set(&p, "sim.fp_packed_pct", 4, "sim");
	pragma_profile_set(&p, "sim.insn_per_flop", 2.8, "sim");
	pragma_profile_remark(&p, PRAGMA_REMARK_NOT_VECTORIZED, 31,
			      "possible aliasing (mark pointers restrict); compiler: can't determine dependence", NULL);
	pragma_diagnose(&p, &m, &d);
	has(find(&d, "under-vectorized"), "4% of the FP instructions executed are packed");
	has(find(&d, "under-vectorized"), "loop at kernel.c:31 not vectorized: possible aliasing");
	has(find(&d, "far-from-roof"), "of the measured FP32 peak");
	has(find(&d, "far-from-roof"), "2.80 instructions per FLOP");
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);

	/* static evidence only: a mostly vector binary with scalar remainders
	 * (22% packed in the code) is not called under-vectorized ... */
	base(&p, 1e9, 1e7, 1);
	pragma_profile_set(&p, "static.fp_ops", 27, "static");
	pragma_profile_set(&p, "static.fp_packed_pct", 22, "static");
	pragma_diagnose(&p, &m, &d);
	assert_null(find(&d, "under-vectorized"));
	pragma_diagnosis_release(&d);
	/* ... an all-scalar one is */
	pragma_profile_set(&p, "static.fp_packed_pct", 0, "static");
	pragma_diagnose(&p, &m, &d);
	has(find(&d, "under-vectorized"), "0% of the FP instructions in the code are packed");
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);
}

static void vector_details(void **state)
{
	struct pragma_machine m = machine();
	struct pragma_profile p;
	struct pragma_diagnosis d;

	(void)state;
	base(&p, 1e9, 1e7, 1);
	pragma_profile_set(&p, "sim.fp_ops", 1e6, "sim");
	pragma_profile_set(&p, "sim.fp_packed_pct", 98, "sim");
	pragma_profile_set(&p, "sim.vector_bits", 128, "sim");
	pragma_profile_set(&p, "static.fma", 0, "static");
	pragma_profile_set(&p, "static.fp_mul", 4, "static");
	pragma_profile_set(&p, "static.fp_add", 4, "static");
	pragma_profile_set(&p, "static.stack_spills", 6, "static");
	pragma_profile_remark(&p, PRAGMA_REMARK_CALL, 12, "expf (inside an innermost loop)", NULL);
	pragma_profile_remark(&p, PRAGMA_REMARK_CALL, 30, "memset (inside a loop)", NULL);
	pragma_profile_remark(&p, PRAGMA_REMARK_NOT_VECTORIZED, 8,
			      "FP reduction in order (several accumulators, or #pragma omp simd reduction); compiler: "
			      "cannot prove it is safe to reorder floating-point operations",
			      NULL);
	pragma_diagnose(&p, &m, &d);
	assert_null(find(&d, "under-vectorized"));
	has(find(&d, "narrow-vectors"), "128-bit");
	has(find(&d, "no-fma"), "4 multiplies and 4 adds");
	has(find(&d, "register-spills"), "6 vector-register moves");
	has(find(&d, "register-spills"), "32 vector registers");
	has(find(&d, "calls-in-loop"), "expf inside an innermost loop at kernel.c:12");
	assert_null(strstr(find(&d, "calls-in-loop")->evidence, "memset"));
	assert_null(strstr(find(&d, "calls-in-loop")->evidence, "it ran")); /* no counts without sim */
	has(find(&d, "latency-bound-reduction"), "kernel.c:8");
	pragma_diagnosis_release(&d);
	/* without a machine, ISA-dependent rules stay quiet */
	pragma_diagnose(&p, NULL, &d);
	assert_null(find(&d, "narrow-vectors"));
	assert_null(find(&d, "no-fma"));
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);
}

/* Calls the simulation counted: one that ran a handful of times (a tail
 * loop) is not a bottleneck, whatever loop holds it; one that runs per
 * element is, with its count. */
static void calls_counted(void **state)
{
	struct pragma_machine m = machine();
	struct pragma_profile p;
	struct pragma_diagnosis d;

	(void)state;
	base(&p, 1e9, 1e7, 1);
	pragma_profile_set(&p, "sim.instructions", 2e6, "sim");
	pragma_profile_remark(&p, PRAGMA_REMARK_CALL, 30, "relu_rare (inside an innermost loop: depth 1 of pk_forward)",
			      NULL)->runs = 2;
	pragma_profile_remark(&p, PRAGMA_REMARK_CALL, 33, "relu_hot (inside an innermost loop: depth 2 of pk_forward)",
			      NULL)->runs = 16382;
	pragma_diagnose(&p, &m, &d);
	has(find(&d, "calls-in-loop"), "calls relu_hot inside an innermost loop at kernel.c:33");
	has(find(&d, "calls-in-loop"), "it ran 16.4K times per pk_forward call (simulated on this build)");
	assert_null(strstr(find(&d, "calls-in-loop")->evidence, "relu_rare"));
	pragma_diagnosis_release(&d);
	/* the hot one counted rare too: no finding at all */
	p.remarks[1].runs = 100;
	pragma_diagnose(&p, &m, &d);
	assert_null(find(&d, "calls-in-loop"));
	pragma_diagnosis_release(&d);
	/* the counts survive the profile's JSON */
	json_t *j = pragma_profile_json(&p, NULL, 0);
	struct pragma_profile q;
	pragma_profile_init(&q);
	struct pragma_err err = PRAGMA_ERR_INIT;
	assert_int_equal(pragma_profile_from_json(j, &q, &err), 0);
	assert_true(q.remarks[0].runs == 2 && q.remarks[1].runs == 100);
	pragma_profile_release(&q);
	json_decref(j);
	pragma_profile_release(&p);
}

static void parallelism(void **state)
{
	struct pragma_profile p;
	struct pragma_diagnosis d;

	(void)state;
	base(&p, 1e9, 1e7, 2);
	pragma_profile_set(&p, "par.threads", 2, "par");
	pragma_profile_set(&p, "par.busy_cores", 1.01, "par");
	pragma_profile_set(&p, "par.utilization", 50.5, "par");
	pragma_diagnose(&p, NULL, &d);
	has(find(&d, "low-parallelism"), "one core busy of two");
	assert_true(find(&d, "low-parallelism")->confidence >= 0.8);
	pragma_diagnosis_release(&d);
	/* The profiled run took 16.6 ms where the timing session measured the
	 * same build at 6.8 ms: a disturbed run, whose idle core says nothing
	 * about the timed kernel (a trial's players were told "low
	 * parallelism" of statically split kernels this way). */
	pragma_profile_set(&p, "time.median_ms", 16.6, "timing");
	p.timed_ms = 6.8;
	assert_true(pragma_profile_far_from_timed(&p));
	pragma_diagnose(&p, NULL, &d);
	assert_null(find(&d, "low-parallelism"));
	pragma_diagnosis_release(&d);
	p.timed_ms = 15.0; /* close: the run is the timed kernel's */
	assert_false(pragma_profile_far_from_timed(&p));
	pragma_diagnose(&p, NULL, &d);
	has(find(&d, "low-parallelism"), "one core busy of two");
	pragma_diagnosis_release(&d);
	pragma_profile_set(&p, "par.busy_cores", 1.9, "par");
	pragma_profile_set(&p, "par.utilization", 95, "par");
	pragma_diagnose(&p, NULL, &d);
	assert_null(find(&d, "low-parallelism"));
	pragma_diagnosis_release(&d);
	/* one thread given: nothing to say */
	pragma_profile_set(&p, "par.threads", 1, "par");
	pragma_profile_set(&p, "par.busy_cores", 1, "par");
	pragma_profile_set(&p, "par.utilization", 100, "par");
	pragma_diagnose(&p, NULL, &d);
	assert_null(find(&d, "low-parallelism"));
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);
}

static void cache_reuse(void **state)
{
	struct pragma_profile p;
	struct pragma_diagnosis d;

	(void)state;
	/* naive matmul N=256: 16.9M D1 misses for 12288 lines of data */
	base(&p, 2.0 * 256 * 256 * 256, 786432, 1);
	pragma_profile_set(&p, "sim.instructions", 93.3e6, "sim");
	pragma_profile_set(&p, "sim.data_refs", 25.2e6, "sim");
	pragma_profile_set(&p, "sim.d1_misses", 16.9e6, "sim");
	pragma_profile_set(&p, "sim.d1_miss_rate", 67, "sim");
	pragma_diagnose(&p, NULL, &d);
	has(find(&d, "cache-thrashing"), "D1 miss rate 67% (16.90M misses of 25.20M data references per call)");
	has(find(&d, "cache-thrashing"), "misses D1 1375 times");
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);

	/* a streaming kernel: one compulsory miss per line is all there is */
	base(&p, 0.125 * 2097152, 2097152, 1);
	pragma_profile_set(&p, "sim.instructions", 131e3, "sim");
	pragma_profile_set(&p, "sim.data_refs", 65.5e3, "sim");
	pragma_profile_set(&p, "sim.d1_misses", 32768, "sim");
	pragma_profile_set(&p, "sim.d1_miss_rate", 50, "sim");
	pragma_profile_set(&p, "sim.traffic_ratio", 1.0, "sim");
	pragma_diagnose(&p, NULL, &d);
	assert_null(find(&d, "cache-thrashing"));
	pragma_diagnosis_release(&d);
	/* re-fetching from memory is poor reuse whatever D1 says */
	pragma_profile_set(&p, "sim.traffic_ratio", 6.5, "sim");
	pragma_diagnose(&p, NULL, &d);
	has(find(&d, "cache-thrashing"), "memory traffic 6.5x the minimal bytes");
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);
}

static void speculation_and_topdown(void **state)
{
	struct pragma_profile p;
	struct pragma_diagnosis d;

	(void)state;
	/* mispredicted loop exits: a high rate of very few branches */
	base(&p, 1e6, 1e6, 1);
	pragma_profile_set(&p, "sim.instructions", 131e3, "sim");
	pragma_profile_set(&p, "sim.branch_mispredicts", 12, "sim");
	pragma_profile_set(&p, "sim.branch_mispredict_rate", 8, "sim");
	pragma_diagnose(&p, NULL, &d);
	assert_null(find(&d, "bad-speculation"));
	pragma_diagnosis_release(&d);
	/* data-dependent branches: thousands per call */
	pragma_profile_set(&p, "sim.branch_mispredicts", 5000, "sim");
	pragma_profile_set(&p, "sim.branch_mispredict_rate", 25, "sim");
	pragma_diagnose(&p, NULL, &d);
	has(find(&d, "bad-speculation"), "5000 per call");
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);

	/* counted top-down, as on a machine with a PMU */
	base(&p, 1e9, 1e9, 1);
	pragma_profile_set(&p, "topdown.retiring", 20, "perf");
	pragma_profile_set(&p, "topdown.bad_speculation", 4, "perf");
	pragma_profile_set(&p, "topdown.frontend_bound", 30, "perf");
	pragma_profile_set(&p, "topdown.backend_bound", 61.8, "perf");
	pragma_profile_set(&p, "cpu.ipc", 0.52, "perf");
	pragma_diagnose(&p, NULL, &d);
	has(find(&d, "backend-bound"), "62% of issue slots stalled");
	has(find(&d, "backend-bound"), "IPC 0.52");
	has(find(&d, "frontend-bound"), "30%");
	assert_null(find(&d, "bad-speculation"));
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);
}

static void names_are_playbooks(void **state)
{
	size_t n;
	const char *const *names = pragma_bottleneck_names(&n);

	(void)state;
	assert_true(n >= 10);
	for (size_t i = 0; i < n; i++)
		assert_true(strlen(names[i]) < sizeof(((struct pragma_finding *)0)->bottleneck));
}

static void compare(void **state)
{
	struct pragma_profile best, cur;
	struct pragma_buf out = PRAGMA_BUF_INIT;
	struct pragma_change *c;
	size_t n;

	(void)state;
	/* the paper's Listing 1, round 1 */
	base(&best, 1e9, 1e7, 2);
	base(&cur, 1e9, 1e7, 2);
	pragma_profile_set(&best, "time.speedup", 2.93, "timing");
	pragma_profile_set(&cur, "time.speedup", 2.54, "timing");
	pragma_profile_set(&best, "cpu.ipc", 1.37, "perf");
	pragma_profile_set(&cur, "cpu.ipc", 1.49, "perf");
	pragma_profile_set(&best, "topdown.frontend_bound", 5.10, "perf");
	pragma_profile_set(&cur, "topdown.frontend_bound", 7.68, "perf");
	pragma_profile_set(&best, "topdown.backend_bound", 61.76, "perf");
	pragma_profile_set(&cur, "topdown.backend_bound", 57.24, "perf");
	/* within noise: not reported */
	pragma_profile_set(&best, "sim.instructions", 945e3, "sim");
	pragma_profile_set(&cur, "sim.instructions", 946e3, "sim");
	pragma_profile_compare_text(&best, &cur, &out);
	assert_non_null(strstr(out.data, "speedup dropped from 2.93x to 2.54x (worse)"));
	assert_non_null(strstr(out.data, "IPC higher (1.37 ratio -> 1.49 ratio)"));
	assert_non_null(strstr(out.data, "backend bound lower (61.8% -> 57.2%) (better)"));
	assert_non_null(strstr(out.data, "frontend bound higher (5.1% -> 7.7%) (worse)"));
	assert_null(strstr(out.data, "instructions (sim)"));
	/* the speedup leads */
	assert_int_equal(strncmp(out.data, "speedup dropped", 15), 0);
	pragma_buf_release(&out);

	/* round 2: fewer instructions, lower IPC, faster */
	pragma_profile_set(&best, "sim.instructions", 945e3, "sim");
	pragma_profile_set(&cur, "sim.instructions", 136e3, "sim");
	pragma_profile_set(&cur, "time.speedup", 4.71, "timing");
	pragma_profile_compare(&best, &cur, &c, &n);
	assert_true(n >= 3);
	assert_string_equal(c[0].name, "time.speedup");
	assert_int_equal(c[0].assessment, 1);
	int found = 0;
	for (size_t i = 0; i < n; i++)
		if (!strcmp(c[i].name, "sim.instructions"))
			found = c[i].direction == -1 && c[i].assessment == 1;
	assert_true(found);
	free(c);
	/* the simulated figures of a two-thread kernel come with a caveat */
	pragma_profile_compare_text(&best, &cur, &out);
	assert_non_null(strstr(out.data, "simulate 1 of 2 threads"));
	pragma_buf_release(&out);
	pragma_profile_release(&best);
	pragma_profile_release(&cur);

	/* times without a speedup: the change and the noise caveat */
	base(&best, 1e9, 1e7, 1);
	base(&cur, 1e9, 1e7, 1);
	pragma_profile_set(&best, "time.median_ms", 1.20, "timing");
	pragma_profile_set(&cur, "time.median_ms", 1.50, "timing");
	pragma_profile_compare_text(&best, &cur, &out);
	assert_non_null(strstr(out.data, "median time rose from 1.200 ms to 1.500 ms (+25%) (worse)"));
	assert_non_null(strstr(out.data, "interleaved run"));
	json_t *j = pragma_profile_compare_json(&best, &cur);
	assert_int_equal(json_array_size(j), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(j, 0), "assessment")), "worse");
	json_decref(j);
	pragma_buf_release(&out);
	pragma_profile_release(&best);
	pragma_profile_release(&cur);
}

/* A Winograd-style candidate: fewer FMAs and instructions (it does fewer
 * multiplies) and faster. Its falling FMA count must not read "worse":
 * counts of work are judged by the time, and with one kernel above the FP32
 * peak by the task's FLOP count the algorithm changed. */
static void compare_algorithm_change(void **state)
{
	struct pragma_machine m = machine();
	struct pragma_profile best, cur;
	struct pragma_buf out = PRAGMA_BUF_INIT;
	struct pragma_change *c;
	size_t n;

	(void)state;
	/* 2.3 GFLOP direct: 20 ms is 50% of the 230 GFLOP/s peak; 8 ms is 1.25x it */
	base(&best, 2.3e9, 8e6, 2);
	base(&cur, 2.3e9, 8e6, 2);
	roof(&best, &m, 20);
	roof(&cur, &m, 8);
	assert_true(pragma_profile_find(&cur, "roof.flops_over_peak") != NULL);
	pragma_profile_set(&best, "static.fma", 48, "static");
	pragma_profile_set(&cur, "static.fma", 12, "static");
	pragma_profile_set(&best, "cpu.instructions", 4e9, "perf");
	pragma_profile_set(&cur, "cpu.instructions", 1.5e9, "perf");
	pragma_profile_set(&best, "static.stack_spills", 0, "static");
	pragma_profile_set(&cur, "static.stack_spills", 6, "static");
	pragma_profile_compare(&best, &cur, &c, &n);
	int fma = 0, insn = 0, spills = 0;
	for (size_t i = 0; i < n; i++) {
		if (!strcmp(c[i].name, "static.fma")) {
			fma = 1;
			assert_int_equal(c[i].direction, -1);
			assert_int_equal(c[i].assessment, 0);
			assert_int_equal(c[i].algorithm, 1);
			assert_non_null(strstr(c[i].text, "changed with the algorithm"));
		}
		if (!strcmp(c[i].name, "cpu.instructions")) {
			insn = 1;
			assert_int_equal(c[i].algorithm, 1);
		}
		if (!strcmp(c[i].name, "static.stack_spills")) {
			spills = 1; /* not a count of work: still judged */
			assert_int_equal(c[i].assessment, -1);
		}
	}
	assert_true(fma && insn && spills);
	free(c);
	pragma_profile_compare_text(&best, &cur, &out);
	assert_null(strstr(out.data, "FMA instructions lower (48 count -> 12 count) (worse)"));
	assert_non_null(strstr(out.data, "FMA instructions lower"));
	assert_non_null(strstr(out.data, "changed with the algorithm"));
	json_t *j = pragma_profile_compare_json(&best, &cur), *x;
	size_t i;
	int seen = 0;
	json_array_foreach(j, i, x)
		if (!strcmp(json_string_value(json_object_get(x, "name")), "static.fma")) {
			seen = 1;
			assert_string_equal(json_string_value(json_object_get(x, "assessment")), "changed with the algorithm");
		}
	assert_true(seen);
	json_decref(j);
	pragma_buf_release(&out);
	pragma_profile_release(&best);
	pragma_profile_release(&cur);

	/* Fewer "loop vectorized" remarks for an intrinsics kernel whose FP
	 * instructions are all packed: not worse; for scalar code, worse. */
	base(&best, 1e9, 1e7, 1);
	base(&cur, 1e9, 1e7, 1);
	pragma_profile_set(&best, "static.loops_vectorized", 4, "static");
	pragma_profile_set(&cur, "static.loops_vectorized", 0, "static");
	pragma_profile_set(&cur, "static.fp_packed_pct", 100, "static");
	pragma_profile_set(&best, "static.fp_packed_pct", 100, "static");
	pragma_profile_compare(&best, &cur, &c, &n);
	assert_int_equal(n, 1);
	assert_string_equal(c[0].name, "static.loops_vectorized");
	assert_int_equal(c[0].assessment, 0);
	assert_non_null(strstr(c[0].text, "not judged: 100% of the FP instructions are packed"));
	free(c);
	pragma_profile_set(&cur, "static.fp_packed_pct", 10, "static");
	pragma_profile_set(&best, "static.fp_packed_pct", 10, "static");
	pragma_profile_compare(&best, &cur, &c, &n);
	assert_int_equal(n, 1);
	assert_int_equal(c[0].assessment, -1);
	free(c);
	pragma_profile_release(&best);
	pragma_profile_release(&cur);

	/* No roofline, the same algorithm's count: fewer FMAs while the
	 * session says faster is not worse either; fewer FMAs and slower is. */
	base(&best, 1e9, 1e7, 1);
	base(&cur, 1e9, 1e7, 1);
	pragma_profile_set(&best, "static.fma", 48, "static");
	pragma_profile_set(&cur, "static.fma", 12, "static");
	pragma_profile_compare_timed(&best, &cur, PRAGMA_TIME_FASTER, &c, &n);
	assert_int_equal(n, 1);
	assert_int_equal(c[0].assessment, 0);
	assert_int_equal(c[0].algorithm, 2);
	/* a tile or an unroll does that as well as an algorithm: not named one */
	assert_non_null(strstr(c[0].text, "(not judged: less of this work, yet faster: the work is done another way, "
					  "and the time decides)"));
	assert_null(strstr(c[0].text, "algorithm"));
	assert_string_equal(pragma_change_label(&c[0], "neutral"), "not judged: moved against the time");
	free(c);
	pragma_profile_compare_timed(&best, &cur, PRAGMA_TIME_SLOWER, &c, &n);
	assert_int_equal(n, 1);
	assert_int_equal(c[0].assessment, -1);
	assert_int_equal(c[0].algorithm, 0);
	free(c);
	/* with no session verdict, the profiles' speedups tell the time */
	pragma_profile_set(&best, "time.speedup", 1.5, "timing");
	pragma_profile_set(&cur, "time.speedup", 2.5, "timing");
	pragma_profile_compare(&best, &cur, &c, &n);
	assert_int_equal(n, 2);
	assert_string_equal(c[1].name, "static.fma");
	assert_int_equal(c[1].assessment, 0);
	free(c);
	pragma_profile_release(&best);
	pragma_profile_release(&cur);

	/* A session verdict: the profiled runs' own times and the roof rates
	 * from each attempt's own session are not compared (one said +25% and
	 * "% of roofline 93% -> 69% (worse)", the session "not
	 * distinguishable"); the text says the verdict decides. */
	base(&best, 1e9, 1e7, 1);
	base(&cur, 1e9, 1e7, 1);
	pragma_profile_set(&best, "time.median_ms", 1.20, "timing");
	pragma_profile_set(&cur, "time.median_ms", 1.50, "timing");
	pragma_profile_set(&best, "roof.pct_roof", 93.4, "timing");
	pragma_profile_set(&cur, "roof.pct_roof", 68.9, "timing");
	pragma_profile_set(&best, "roof.gbs", 20.6, "timing");
	pragma_profile_set(&cur, "roof.gbs", 15.2, "timing");
	pragma_profile_compare_text_timed(&best, &cur, PRAGMA_TIME_SAME, &out);
	assert_null(strstr(out.data, "median time"));
	assert_null(strstr(out.data, "1.500 ms"));
	assert_null(strstr(out.data, "68.9"));
	assert_null(strstr(out.data, "(worse)"));
	assert_non_null(strstr(out.data, "the timing session that ran both side by side decides"));
	pragma_buf_release(&out);
	/* Without one (pragma profile --compare), the times are compared. */
	pragma_profile_compare_text(&best, &cur, &out);
	assert_non_null(strstr(out.data, "median time rose from 1.200 ms to 1.500 ms (+25%)"));
	pragma_buf_release(&out);
	pragma_profile_release(&best);
	pragma_profile_release(&cur);

	/* A miss rate that rose while the misses stayed: fewer accesses, not
	 * more misses; not judged. */
	base(&best, 1e9, 1e7, 1);
	base(&cur, 1e9, 1e7, 1);
	pragma_profile_set(&best, "sim.d1_miss_rate", 21.9, "sim");
	pragma_profile_set(&cur, "sim.d1_miss_rate", 27.7, "sim");
	pragma_profile_set(&best, "sim.d1_misses", 3.15e6, "sim");
	pragma_profile_set(&cur, "sim.d1_misses", 3.15e6, "sim");
	pragma_profile_compare_text_timed(&best, &cur, PRAGMA_TIME_FASTER, &out);
	assert_non_null(strstr(out.data, "did not change: the rate moved with the number of accesses"));
	assert_null(strstr(out.data, "(worse)"));
	pragma_buf_release(&out);
	pragma_profile_release(&best);
	pragma_profile_release(&cur);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(memory_bound),	 cmocka_unit_test(fewer_flops_than_counted), cmocka_unit_test(under_vectorized),
		cmocka_unit_test(vector_details), cmocka_unit_test(calls_counted), cmocka_unit_test(parallelism),
		cmocka_unit_test(cache_reuse),	 cmocka_unit_test(speculation_and_topdown),
		cmocka_unit_test(names_are_playbooks), cmocka_unit_test(compare),
		cmocka_unit_test(compare_algorithm_change),
	};
	return pragma_run_tests(tests, NULL, NULL);
}
