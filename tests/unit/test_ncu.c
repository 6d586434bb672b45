/* lib/cuda/ncu.c: the Nsight Compute raw-page CSV parser and the gpu.*
 * metrics made from it, on the fixtures in tests/cuda/ncu (single kernel,
 * several kernels per call, several passes, PC sampling, the permission
 * error, nothing profiled, a broken line). No GPU or ncu needed. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <unistd.h>
#include <cmocka.h>

#include "pragma_test.h"

#include "pragma/buf.h"
#include "pragma/cuda.h"
#include "pragma/fs.h"
#include "pragma/profile.h"

static char *fixture(const char *name)
{
	char path[4096];
	const char *data = getenv("PRAGMA_TEST_DATA");
	struct pragma_buf b = PRAGMA_BUF_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;

	snprintf(path, sizeof(path), "%s/cuda/ncu/%s", data ? data : PRAGMA_SOURCE_DIR "/tests", name);
	if (pragma_read_file(path, &b, 1 << 20, &err) < 0)
		fail_msg("%s: %s", path, err.msg);
	return pragma_buf_detach(&b, NULL);
}

static double metric(const struct pragma_profile *p, const char *name)
{
	double v = NAN;

	if (!pragma_profile_get(p, name, &v))
		fail_msg("metric %s missing", name);
	return v;
}

static int has_note(const struct pragma_profile *p, const char *needle)
{
	for (size_t i = 0; i < p->n_notes; i++)
		if (strstr(p->notes[i], needle))
			return 1;
	return 0;
}

static void test_single(void **state)
{
	struct pragma_ncu_result r;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_profile p;
	char *text = fixture("single_kernel.txt");
	double v;

	(void)state;
	assert_int_equal(pragma_ncu_parse(text, &r, &err), 0);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.passes, 9);
	assert_string_equal(r.error, "");
	assert_int_equal(r.l[0].id, 0);
	assert_int_equal(r.l[0].pid, 4242);
	assert_string_equal(r.l[0].kernel, "vadd_kernel(const float *, const float *, float *, long)");
	assert_string_equal(r.l[0].block, "(256, 1, 1)");
	assert_string_equal(r.l[0].grid, "(65536, 1, 1)");
	assert_string_equal(r.l[0].cc, "8.0");
	assert_true(pragma_ncu_get(&r.l[0], "gpu__time_duration.sum", &v));
	assert_float_equal(v, 136128, 1e-9);
	assert_false(pragma_ncu_get(&r.l[0], "no__such.metric", &v));

	pragma_profile_init(&p);
	pragma_ncu_metrics(&r, NULL, 0, &p);
	assert_float_equal(metric(&p, "gpu.duration_us"), 136.128, 1e-9);
	assert_float_equal(metric(&p, "gpu.kernels"), 1, 0);
	assert_float_equal(metric(&p, "gpu.achieved_occupancy"), 83.12, 1e-9);
	assert_float_equal(metric(&p, "gpu.theoretical_occupancy"), 100, 1e-9);
	assert_float_equal(metric(&p, "gpu.registers_per_thread"), 16, 0);
	assert_float_equal(metric(&p, "gpu.shared_mem_per_block"), 0, 0);
	assert_float_equal(metric(&p, "gpu.dram_throughput_pct"), 91.37, 1e-9);
	assert_float_equal(metric(&p, "gpu.sm_throughput_pct"), 14.21, 1e-9);
	assert_float_equal(metric(&p, "gpu.tensor_pipe_pct"), 0, 0);
	assert_float_equal(metric(&p, "gpu.l2_hit_rate"), 0.51, 1e-9);
	assert_float_equal(metric(&p, "gpu.warp_execution_efficiency"), 100, 1e-9);
	assert_float_equal(metric(&p, "gpu.dram_bytes"), 201326592, 0);
	/* 201326592 bytes in 136128 ns */
	assert_float_equal(metric(&p, "gpu.dram_gbs"), 201326592.0 / 136128, 1e-6);
	assert_float_equal(metric(&p, "gpu.block_size"), 256, 0);
	assert_float_equal(metric(&p, "gpu.grid_size"), 65536, 0);
	assert_float_equal(metric(&p, "gpu.waves"), 75.85, 1e-9);
	/* Stalls as shares of all stalls: 38.2 / (38.2 + 0.31 + 2.1 + 1.39) */
	assert_float_equal(metric(&p, "gpu.stall_long_scoreboard_pct"), 100 * 38.2 / 42.0, 1e-9);
	assert_float_equal(metric(&p, "gpu.stall_wait_pct"), 100 * 2.1 / 42.0, 1e-9);
	assert_true(has_note(&p, "stalled most on long_scoreboard"));
	assert_true(has_note(&p, "vadd_kernel"));
	/* Every gpu.* name produced is in the registry or the CUDA table. */
	for (size_t i = 0; i < p.n; i++)
		if (!strncmp(p.metrics[i].name, "gpu.", 4))
			assert_non_null(pragma_cuda_metric_def(p.metrics[i].name));
	pragma_profile_release(&p);
	pragma_ncu_release(&r);
	free(text);
}

static void test_multi_kernel(void **state)
{
	struct pragma_ncu_result r;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_profile p;
	char *text = fixture("multi_kernel.txt");
	double v, w1 = 1250.5, w2 = 24.5;

	(void)state;
	assert_int_equal(pragma_ncu_parse(text, &r, &err), 0);
	assert_int_equal(r.n, 2);
	assert_int_equal(r.passes, 37);
	/* Doubled quotes and commas inside a quoted name. */
	assert_string_equal(r.l[0].kernel, "void matmul_tiled<32, \"fast\">(const float *, const float *, float *, int)");
	/* Scaled units and thousands separators, to base units. */
	assert_true(pragma_ncu_get(&r.l[0], "gpu__time_duration.sum", &v));
	assert_float_equal(v, 1250500, 1e-6);
	assert_true(pragma_ncu_get(&r.l[0], "launch__shared_mem_per_block_static", &v));
	assert_float_equal(v, 8320, 1e-9);
	assert_true(pragma_ncu_get(&r.l[0], "dram__bytes.sum", &v));
	assert_float_equal(v, 50.33e6, 1e-3);
	assert_true(pragma_ncu_get(&r.l[0], "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", &v));
	assert_float_equal(v, 16777216, 0);
	/* n/a is not a number, and not zero. */
	assert_false(pragma_ncu_get(&r.l[0], "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active", &v));

	pragma_profile_init(&p);
	pragma_ncu_metrics(&r, NULL, 0, &p);
	assert_float_equal(metric(&p, "gpu.kernels"), 2, 0);
	assert_float_equal(metric(&p, "gpu.duration_us"), 1275.0, 1e-9);
	/* Rates weighted by duration. */
	assert_float_equal(metric(&p, "gpu.sm_throughput_pct"), (88.1 * w1 + 10.4 * w2) / (w1 + w2), 1e-9);
	assert_float_equal(metric(&p, "gpu.achieved_occupancy"), (49.7 * w1 + 81.0 * w2) / (w1 + w2), 1e-9);
	/* Only the launch that has it counts. */
	assert_float_equal(metric(&p, "gpu.tensor_pipe_pct"), 0, 0);
	assert_float_equal(metric(&p, "gpu.registers_per_thread"), 24, 0);
	assert_float_equal(metric(&p, "gpu.shared_mem_per_block"), 8320, 1e-9);
	assert_float_equal(metric(&p, "gpu.dram_bytes"), 83.88e6, 1e-3);
	assert_float_equal(metric(&p, "gpu.sectors_per_request"), (16777216.0 + 524288) / (4194304 + 131072), 1e-9);
	assert_float_equal(metric(&p, "gpu.smem_bank_conflicts"), 1048576, 0);
	/* The longest launch describes the shape. */
	assert_int_equal(pragma_profile_get(&p, "gpu.block_size", &v), 0);
	/* Stall shares over both launches, duration-weighted:
	 * barrier 3.2*w1, long_sb 0.9*w1 + 2.5*w2, mio 1.1*w1, short 0.3*w1 + 0.1*w2 */
	{
		double b = 3.2 * w1, l = 0.9 * w1 + 2.5 * w2, m = 1.1 * w1, s = 0.3 * w1 + 0.1 * w2, t = b + l + m + s;
		assert_float_equal(metric(&p, "gpu.stall_barrier_pct"), 100 * b / t, 1e-9);
		assert_float_equal(metric(&p, "gpu.stall_long_scoreboard_pct"), 100 * l / t, 1e-9);
		assert_float_equal(metric(&p, "gpu.stall_mio_throttle_pct"), 100 * m / t, 1e-9);
	}
	assert_true(has_note(&p, "stalled most on barrier"));
	assert_true(has_note(&p, "replayed each kernel 37 times"));
	assert_true(has_note(&p, "scale(float *, float, long)"));
	pragma_profile_release(&p);
	pragma_ncu_release(&r);
	free(text);
}

static void test_multi_pass(void **state)
{
	struct pragma_ncu_result r;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_profile p;
	char *text = fixture("multi_pass.txt");

	(void)state;
	assert_int_equal(pragma_ncu_parse(text, &r, &err), 0);
	assert_int_equal(r.n, 1);
	assert_int_equal(r.passes, 12);
	assert_int_equal(r.n_warnings, 1);
	assert_non_null(strstr(r.warnings[0], "clock reset"));
	assert_int_equal(r.l[0].pid, 7002);
	pragma_profile_init(&p);
	pragma_ncu_metrics(&r, NULL, 0, &p);
	assert_float_equal(metric(&p, "gpu.duration_us"), 1250, 1e-9);
	assert_float_equal(metric(&p, "gpu.registers_per_thread"), 40, 0);
	pragma_profile_release(&p);
	pragma_ncu_release(&r);
	free(text);
}

static void test_pcsamp(void **state)
{
	struct pragma_ncu_result r;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_profile p;
	char *text = fixture("pcsamp.txt");
	double v;

	(void)state;
	assert_int_equal(pragma_ncu_parse(text, &r, &err), 0);
	pragma_profile_init(&p);
	pragma_ncu_metrics(&r, NULL, 0, &p);
	/* 6000 of 10000 samples */
	assert_float_equal(metric(&p, "gpu.stall_barrier_pct"), 60, 1e-9);
	assert_float_equal(metric(&p, "gpu.stall_math_pipe_throttle_pct"), 20, 1e-9);
	assert_float_equal(metric(&p, "gpu.stall_long_scoreboard_pct"), 10, 1e-9);
	/* "selected" counts in the total but has no name of its own. */
	assert_int_equal(pragma_profile_get(&p, "gpu.stall_selected_pct", &v), 0);
	assert_float_equal(metric(&p, "gpu.duration_us"), 40.96, 1e-9);
	pragma_profile_release(&p);
	pragma_ncu_release(&r);
	free(text);
}

static void test_perm_error(void **state)
{
	struct pragma_ncu_result r;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_profile p;
	char *text = fixture("err_perm.txt");
	char why[1024];
	const char *reason;

	(void)state;
	assert_int_equal(pragma_ncu_parse(text, &r, &err), 0);
	assert_int_equal(r.n, 0);
	assert_true(r.perm_error);
	assert_true(r.no_kernels);
	assert_non_null(strstr(r.error, "ERR_NVGPUCTRPERM"));
	pragma_ncu_explain(&r, why, sizeof(why));
	assert_non_null(strstr(why, "NVreg_RestrictProfilingToAdminUsers=0"));
	pragma_profile_init(&p);
	pragma_ncu_metrics(&r, NULL, 0, &p);
	assert_int_equal(p.n, 0);
	reason = pragma_profile_why(&p, "ncu");
	assert_non_null(reason);
	assert_non_null(strstr(reason, "ERR_NVGPUCTRPERM"));
	pragma_profile_release(&p);
	pragma_ncu_release(&r);
	free(text);
}

static void test_no_kernels(void **state)
{
	struct pragma_ncu_result r;
	struct pragma_err err = PRAGMA_ERR_INIT;
	char *text = fixture("no_kernels.txt");
	char why[1024];

	(void)state;
	assert_int_equal(pragma_ncu_parse(text, &r, &err), 0);
	assert_int_equal(r.n, 0);
	assert_false(r.perm_error);
	assert_true(r.no_kernels);
	assert_int_equal(r.n_warnings, 2);
	pragma_ncu_explain(&r, why, sizeof(why));
	assert_non_null(strstr(why, "profiled no kernel"));
	pragma_ncu_release(&r);
	free(text);

	/* Empty output: no table at all. */
	assert_int_equal(pragma_ncu_parse("", &r, &err), 0);
	pragma_ncu_explain(&r, why, sizeof(why));
	assert_non_null(strstr(why, "no results"));
	pragma_ncu_release(&r);
}

static void test_bad(void **state)
{
	struct pragma_ncu_result r;
	struct pragma_err err = PRAGMA_ERR_INIT;
	char *text = fixture("bad_quote.txt");

	(void)state;
	assert_int_equal(pragma_ncu_parse(text, &r, &err), -1);
	assert_int_equal(err.kind, PRAGMA_E_INPUT);
	assert_non_null(strstr(err.msg, "unterminated quote"));
	free(text);

	/* A row with a different number of fields than the header. */
	err = (struct pragma_err)PRAGMA_ERR_INIT;
	assert_int_equal(pragma_ncu_parse("\"ID\",\"Process ID\",\"Kernel Name\",\"m\"\n\"0\",\"1\",\"k\"\n", &r, &err),
			 -1);
	assert_non_null(strstr(err.msg, "3 fields"));
}

static void test_metric_list(void **state)
{
	struct pragma_buf b = PRAGMA_BUF_INIT;
	const char *extra[] = { "gpu.l2_hit_rate", "gpu.stall_barrier_pct", "ncu:sm__inst_executed.sum",
				"ncu:sm__inst_executed.sum" };
	const char *const *raw;

	(void)state;
	raw = pragma_ncu_metrics_for("gpu.achieved_occupancy");
	assert_non_null(raw);
	assert_string_equal(raw[0], "sm__warps_active.avg.pct_of_peak_sustained_active");
	raw = pragma_ncu_metrics_for("gpu.stall_tex_throttle_pct");
	assert_non_null(raw);
	assert_string_equal(raw[0], "smsp__average_warps_issue_stalled_tex_throttle_per_issue_active.ratio");
	assert_null(pragma_ncu_metrics_for("cpu.ipc"));
	pragma_ncu_metric_list(extra, 4, &b);
	assert_non_null(strstr(b.data, "gpu__time_duration.sum"));
	assert_non_null(strstr(b.data, "lts__t_sector_hit_rate.pct"));
	/* Listed once, even when asked for twice or already a default. */
	assert_non_null(strstr(b.data, ",sm__inst_executed.sum"));
	assert_null(strstr(strstr(b.data, ",sm__inst_executed.sum") + 1, ",sm__inst_executed.sum"));
	assert_null(strstr(strstr(b.data, "lts__t_sector_hit_rate.pct") + 1, "lts__t_sector_hit_rate.pct"));
	assert_null(strchr(b.data, ' '));
	pragma_buf_release(&b);
}

static void test_extra_raw(void **state)
{
	struct pragma_ncu_result r;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_profile p;
	char *text = fixture("multi_kernel.txt");
	const char *extra[] = { "ncu:l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum", "ncu:made__up.metric" };

	(void)state;
	assert_int_equal(pragma_ncu_parse(text, &r, &err), 0);
	pragma_profile_init(&p);
	pragma_ncu_metrics(&r, extra, 2, &p);
	assert_float_equal(metric(&p, "ncu:l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"), 16777216.0 + 524288, 0);
	assert_true(has_note(&p, "made__up.metric was not collected"));
	pragma_profile_release(&p);
	pragma_ncu_release(&r);
	free(text);
}

/* ncu's directory for the profiler sandbox, resolved through symlinks (issue
 * 12): the layouts a CUDA toolkit, a launcher script and a standalone
 * install give. */
static void touch_exec(const char *path)
{
	FILE *f = fopen(path, "w");
	assert_non_null(f);
	fputs("#!/bin/sh\n", f);
	fclose(f);
	assert_int_equal(chmod(path, 0755), 0);
}

static void test_tool_dir(void **state)
{
	char root[] = "/tmp/pragma-ncu-XXXXXX", p[600], q[700], *real;
	struct pragma_buf out = PRAGMA_BUF_INIT;

	(void)state;
	assert_non_null(mkdtemp(root));
	/* a toolkit: bin/ncu -> ../nsight-compute-2025.3.1/ncu, target/ beside the real one */
	snprintf(p, sizeof(p), "%s/cuda", root);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/cuda/bin", root);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/cuda/nsight-compute-2025.3.1", root);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/cuda/nsight-compute-2025.3.1/target", root);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/cuda/nsight-compute-2025.3.1/ncu", root);
	touch_exec(p);
	snprintf(q, sizeof(q), "%s/cuda/bin/ncu", root);
	assert_int_equal(symlink("../nsight-compute-2025.3.1/ncu", q), 0);
	pragma_ncu_tool_dir(q, &out);
	snprintf(p, sizeof(p), "%s/cuda/nsight-compute-2025.3.1", root);
	real = realpath(p, NULL);
	assert_string_equal(out.data, real);
	free(real);
	/* the same toolkit through a launcher script in bin/ (not a link),
	 * with an older nsight-compute beside the newer one */
	unlink(q);
	touch_exec(q);
	snprintf(p, sizeof(p), "%s/cuda/nsight-compute-2024.1.0", root);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(p, sizeof(p), "%s/cuda/nsight-compute-2024.1.0/target", root);
	assert_int_equal(mkdir(p, 0755), 0);
	pragma_ncu_tool_dir(q, &out);
	assert_non_null(strstr(out.data, "/cuda/nsight-compute-2025.3.1"));
	/* ncu run from target/<platform>/: the installation is two up */
	snprintf(p, sizeof(p), "%s/cuda/nsight-compute-2025.3.1/target/linux-desktop-glibc_2_11_3-x64", root);
	assert_int_equal(mkdir(p, 0755), 0);
	snprintf(q, sizeof(q), "%s/ncu", p);
	touch_exec(q);
	pragma_ncu_tool_dir(q, &out);
	assert_non_null(strstr(out.data, "/cuda/nsight-compute-2025.3.1"));
	assert_null(strstr(out.data, "/target"));
	pragma_buf_release(&out);
	snprintf(p, sizeof(p), "rm -rf '%s'", root);
	assert_int_equal(system(p), 0);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single),	    cmocka_unit_test(test_multi_kernel), cmocka_unit_test(test_multi_pass),
		cmocka_unit_test(test_pcsamp),	    cmocka_unit_test(test_perm_error),	 cmocka_unit_test(test_no_kernels),
		cmocka_unit_test(test_bad),	    cmocka_unit_test(test_metric_list),	 cmocka_unit_test(test_extra_raw),
		cmocka_unit_test(test_tool_dir),
	};
	return pragma_run_tests(tests, NULL, NULL);
}
