/* The machine, task and work text every Coder and Conductor request carries
 * (lib/agents/context.c): the decoded micro-architecture, the bandwidth roof
 * with how it was measured and how bytes are counted, the task's settings,
 * and no roofline fraction above 100% for a baseline doing fewer FLOPs. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "pragma_test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents/agents_priv.h"

static struct pragma_machine zen4(void)
{
	struct pragma_machine m;

	memset(&m, 0, sizeof(m));
	snprintf(m.vendor, sizeof(m.vendor), "AuthenticAMD");
	snprintf(m.cpu_model, sizeof(m.cpu_model), "AMD EPYC");
	m.family = 25;
	m.model = 17;
	m.cores = 2;
	m.hypervisor = 1;
	m.cpu_mhz = 2596.1;
	m.measured = 1;
	m.peak_gflops = 230;
	m.peak_gflops_1core = 115;
	snprintf(m.peak_isa, sizeof(m.peak_isa), "avx512");
	m.peak_gbs = 85.1;
	m.roof_gbs = 36.5;
	snprintf(m.roof_method, sizeof(m.roof_method), "ntcopy");
	m.n_roofs = 2;
	snprintf(m.roofs[0].name, sizeof(m.roofs[0].name), "read");
	m.roofs[0].gbs = 30.2;
	snprintf(m.roofs[1].name, sizeof(m.roofs[1].name), "ntcopy");
	m.roofs[1].gbs = 36.5;
	return m;
}

static void has(const struct pragma_buf *b, const char *want)
{
	if (!b->data || !strstr(b->data, want))
		fail_msg("lacks '%s':\n%s", want, b->data ? b->data : "(empty)");
}

static void machine_text(void **state)
{
	struct pragma_machine m = zen4();
	struct pragma_buf b = PRAGMA_BUF_INIT;

	(void)state;
	agents_machine_text(&m, &b);
	/* "AMD EPYC family 25 model 17" decoded. */
	has(&b, "Micro-architecture: Zen 4");
	has(&b, "512-bit ISA on 256-bit units");
	has(&b, "double-pumped");
	has(&b, "latency 4 cycles");
	has(&b, "L2 14");
	has(&b, "Clock: 2596 MHz");
	/* The roof, how bytes are counted, and the peak named as what it is. */
	has(&b, "Memory bandwidth roof: 36.5 GB/s reached by a streaming kernel under pragma's timing protocol");
	has(&b, "read 30.2, ntcopy 36.5");
	has(&b, "bytes = inputs read once + outputs written once, write-allocate not counted");
	has(&b, "not the 85.1 GB/s that warm microbenchmarks show");
	assert_null(strstr(b.data, "85.1 GB/s (best of"));   /* the old, unreachable "roof" */
	assert_null(strstr(b.data, "Caches:"));               /* none known */
	pragma_buf_reset(&b);

	/* Caches: a private one is "per core" (not "shared by 1 CPUs"), and a
	 * VM's shared one may hold the other guests' data too. */
	m.n_caches = 2;
	m.caches[0] = (struct pragma_cache_level){ .level = 1, .type = "Data", .size = 32768, .ways = 8, .line = 64,
						   .shared_cpus = 1 };
	m.caches[1] = (struct pragma_cache_level){ .level = 3, .type = "Unified", .size = 32 << 20, .ways = 16,
						   .line = 64, .shared_cpus = 2 };
	agents_machine_text(&m, &b);
	has(&b, "- Caches: L1d 32 KiB (8-way, per core); L3 32768 KiB (16-way, shared by 2 CPUs). The sizes are what the "
		"virtual machine reports: the host's other guests may use the shared cache too");
	assert_null(strstr(b.data, "shared by 1 CPUs"));
	pragma_buf_reset(&b);
	m.hypervisor = 0;
	agents_machine_text(&m, &b);
	assert_null(strstr(b.data, "other guests"));
	pragma_buf_release(&b);
}

/* "What to beat" says what a cold cache is, from the baseline's protocol. */
static void baseline_text(void **state)
{
	struct pragma_task t;
	struct pragma_baseline b;
	struct pragma_buf out = PRAGMA_BUF_INIT;

	(void)state;
	memset(&t, 0, sizeof(t));
	memset(&b, 0, sizeof(b));
	snprintf(b.kind, sizeof(b.kind), "pytorch");
	b.stats.median = 13.2;
	b.stats.min = 11.5;
	b.stats.mean = 13.3;
	b.stats.stdev = 1.3;
	b.stats.count = 30;
	b.config = json_pack("{s:s, s:{s:b, s:I}}", "torch", "1.13.0", "protocol", "cold", 1, "flush_bytes",
			     (json_int_t)64 << 20);
	agents_baseline_text(&t, &b, 0, 0, &out);
	has(&out, "PyTorch 1.13.0 eager on the same cores: median 13.200 ms (min 11.500, stdev 9.8%, 30 calls, cold cache).");
	has(&out, " Cold cache: before every call (yours and the baseline's alike) pragma writes a 64 MiB buffer, more "
		  "than the last-level cache, so each call's inputs start in memory");
	assert_null(strstr(out.data, "timing session"));
	pragma_buf_reset(&out);
	/* after a timing session: which figure the speedups are against */
	agents_baseline_text(&t, &b, 7.9, 3, &out);
	has(&out, "That was measured when the run began; each attempt's timing session times the baseline again beside "
		  "the kernel (3 so far, the latest: 7.900 ms), and every speedup is against those rounds.");
	pragma_buf_reset(&out);
	/* a warm protocol (or none recorded): no such sentence */
	json_object_set_new(json_object_get(b.config, "protocol"), "cold", json_false());
	agents_baseline_text(&t, &b, 0, 0, &out);
	assert_null(strstr(out.data, "Cold cache:"));
	pragma_buf_release(&out);
	json_decref(b.config);
}

static void work_text(void **state)
{
	struct pragma_machine m = zen4();
	struct pragma_task t;
	struct pragma_baseline base;
	struct pragma_buf b = PRAGMA_BUF_INIT;

	(void)state;
	memset(&t, 0, sizeof(t));
	memset(&base, 0, sizeof(base));
	/* A streaming task: 73 MB at the 36.5 GB/s roof is 2 ms; baseline 4 ms. */
	t.flops = -1;
	t.bytes = 73e6;
	base.stats.median = 4;
	agents_work_text(&t, &m, &base, 0, &b);
	has(&b, "2.000 ms from bandwidth (36.5 GB/s roof, the ntcopy kernel's under the timing protocol)");
	has(&b, "The baseline runs at 50% of the bandwidth roof (2.000 ms at the roof / its 4.000 ms when the run began).");
	/* A measured roof can be beaten by a kernel's noise: the text says so. */
	has(&b, "That roof is measured, not proven: a kernel a few percent under its time is at the roof");
	pragma_buf_reset(&b);
	/* Once a timing session has timed the baseline again, the share is
	 * that session's (the comparisons' rounds), and says so. */
	agents_work_text(&t, &m, &base, 2.5, &b);
	has(&b, "The baseline runs at 80% of the bandwidth roof (2.000 ms at the roof / its 2.500 ms in the latest timing "
		"session).");
	pragma_buf_reset(&b);

	/* A reduction writes almost nothing: the read kernel's roof. */
	struct pragma_tensor_spec o1 = { .name = "out", .role = "output", .dtype = PK_FLOAT32, .ndim = 1, .shape = { 1024 } };
	t.outputs = &o1;
	t.n_outputs = 1;
	t.bytes = 30.2e6;
	agents_work_text(&t, &m, &base, 0, &b);
	has(&b, "1.000 ms from bandwidth (30.2 GB/s roof, the read kernel's: this task writes almost nothing, so it is "
		"a read-only stream");
	pragma_buf_reset(&b);
	t.outputs = NULL;
	t.n_outputs = 0;

	/* No roof under the protocol: the bound says it is the peak. */
	m.roof_gbs = 0;
	t.bytes = 85.1e6;
	agents_work_text(&t, &m, &base, 0, &b);
	has(&b, "1.000 ms from bandwidth (85.1 GB/s roof, the microbenchmark peak: no kernel timed like yours reaches it)");
	assert_null(strstr(b.data, "measured, not proven"));
	pragma_buf_reset(&b);
	m.roof_gbs = 36.5;

	/* A convolution whose baseline runs the task's FLOP count at 1.5x the
	 * FP32 peak (a Winograd baseline): no "150% of the roof". */
	t.flops = 230e9 * 1.5 * 0.010;   /* 10 ms at 1.5x the peak */
	t.bytes = 36.5e6;                 /* 1 ms at the roof */
	base.stats.median = 10;
	agents_work_text(&t, &m, &base, 0, &b);
	has(&b, "the compute roof binds");
	has(&b, "at 1.50x the FP32 peak, so it does fewer FLOPs than counted");
	has(&b, "against the bandwidth roof it reaches 10%");
	assert_null(strstr(b.data, "150%"));
	assert_null(strstr(b.data, "measured, not proven")); /* the compute roof binds */
	assert_null(strstr(b.data, "exp/log/tanh-like"));
	pragma_buf_reset(&b);

	/* A softmax: its exps count as 1 FLOP each, and the text says so. */
	t.flops = 8.39e7;
	t.flops_transcendental = 1.68e7;
	strcpy(t.flops_method, "aten-dispatch");
	agents_work_text(&t, &m, &base, 0, &b);
	has(&b, "8.39e+07 FLOP (aten-dispatch; 1.68e+07 of them exp/log/tanh-like evaluations, counted as 1 FLOP each "
		"though each takes 10-20 instructions, so the compute bound understates this task), ");
	pragma_buf_release(&b);
}

static void io_table_settings(void **state)
{
	struct pragma_task t;
	struct pragma_tensor_spec in = { .name = "x", .role = "input", .dtype = PK_FLOAT32, .ndim = 2, .shape = { 8, 16 } };
	struct pragma_buf b = PRAGMA_BUF_INIT;
	json_error_t je;

	(void)state;
	memset(&t, 0, sizeof(t));
	t.kind = PRAGMA_TASK_KERNELBENCH;
	t.inputs = &in;
	t.n_inputs = 1;
	t.outputs = &in;
	t.n_outputs = 1;
	t.meta = json_loads("{\"init_args\": [{\"name\": \"dim\", \"value\": 1, \"text\": \"1\"}],"
			    " \"constants\": {\"BATCH\": 8, \"SCAN_DIM\": 1}}", 0, &je);
	pragma_task_facts_fill(&t);
	agents_io_table(&t, &b);
	has(&b, "| inputs[0] | x | input | float32 | [8, 16] |");
	has(&b, "Settings the forward pass depends on");
	has(&b, "- Model(dim=1)");
	has(&b, "- module constants: BATCH=8, SCAN_DIM=1");
	pragma_buf_release(&b);
	json_decref(t.meta);
	free(t.facts);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(machine_text),
		cmocka_unit_test(baseline_text),
		cmocka_unit_test(work_text),
		cmocka_unit_test(io_table_settings),
	};

	return pragma_run_tests(tests, NULL, NULL);
}
