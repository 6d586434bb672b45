/* lib/cuda/gpus.c: the table of GPU peaks (names matched, numbers sane,
 * sources named), models from a table row and from device properties
 * (derived peaks for unknown GPUs), the roofline with GPU peaks, and the
 * prompt texts (GPU model, CUDA ABI). */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "pragma_test.h"

#include "pragma/buf.h"
#include "pragma/cuda.h"
#include "pragma/diagnose.h"
#include "pragma/profile.h"
#include "pragma/task.h"
#include "pragma/template.h"

static const char *spec_name(const char *device)
{
	const struct pragma_gpu_spec *s = pragma_gpu_spec_find(device);

	return s ? s->name : "(none)";
}

static void test_match(void **state)
{
	(void)state;
	/* Names as cudaGetDeviceProperties reports them. */
	assert_string_equal(spec_name("NVIDIA A100-SXM4-40GB"), "A100 SXM4 40GB");
	assert_string_equal(spec_name("NVIDIA A100-SXM4-80GB"), "A100 SXM4 80GB");
	assert_string_equal(spec_name("NVIDIA A100 80GB PCIe"), "A100 PCIe 80GB");
	assert_string_equal(spec_name("NVIDIA A100-PCIE-40GB"), "A100 PCIe 40GB");
	assert_string_equal(spec_name("NVIDIA H100 80GB HBM3"), "H100 SXM5 80GB");
	assert_string_equal(spec_name("NVIDIA H100 PCIe"), "H100 PCIe 80GB");
	assert_string_equal(spec_name("NVIDIA H100 NVL"), "H100 NVL 94GB");
	assert_string_equal(spec_name("NVIDIA H200"), "H200 SXM 141GB");
	assert_string_equal(spec_name("NVIDIA GH200 480GB"), "GH200 96GB");
	assert_string_equal(spec_name("NVIDIA B200"), "B200");
	assert_string_equal(spec_name("NVIDIA L40S"), "L40S");
	assert_string_equal(spec_name("NVIDIA L4"), "L4");
	assert_string_equal(spec_name("NVIDIA GeForce RTX 4090"), "GeForce RTX 4090");
	assert_string_equal(spec_name("NVIDIA GeForce RTX 3090"), "GeForce RTX 3090");
	assert_string_equal(spec_name("NVIDIA RTX A6000"), "RTX A6000");
	assert_string_equal(spec_name("NVIDIA A10"), "A10");
	assert_string_equal(spec_name("Tesla T4"), "T4");
	/* Look-alikes that are not in the table. */
	assert_string_equal(spec_name("NVIDIA L40"), "(none)");
	assert_string_equal(spec_name("NVIDIA A10G"), "(none)");
	assert_string_equal(spec_name("NVIDIA A2"), "(none)");
	assert_string_equal(spec_name("NVIDIA GeForce RTX 4080"), "(none)");
	assert_string_equal(spec_name(""), "(none)");
	assert_null(pragma_gpu_spec_find(NULL));
}

static void test_table_sane(void **state)
{
	size_t n;
	const struct pragma_gpu_spec *s = pragma_gpu_specs(&n);

	(void)state;
	assert_true(n >= 10);
	for (size_t i = 0; i < n; i++) {
		int lanes = pragma_gpu_fp32_lanes(s[i].cc_major, s[i].cc_minor);
		if (!s[i].source || strlen(s[i].source) < 10)
			fail_msg("%s: no source", s[i].name);
		if (s[i].sms <= 0 || s[i].fp32_tflops <= 0 || s[i].mem_gbs <= 0 || s[i].l2_mb <= 0)
			fail_msg("%s: missing numbers", s[i].name);
		/* FP32 = 2 x lanes x SMs x clock: the implied boost clock must be
		 * a real one (1.0 .. 2.7 GHz). */
		double ghz = s[i].fp32_tflops * 1e3 / (2.0 * lanes * s[i].sms);
		if (!lanes || ghz < 1.0 || ghz > 2.7)
			fail_msg("%s: implied clock %.2f GHz", s[i].name, ghz);
		/* Tensor cores beat CUDA cores where there are any. */
		if (s[i].fp16_tflops > 0 && s[i].fp16_tflops < s[i].fp32_tflops)
			fail_msg("%s: FP16 tensor below FP32", s[i].name);
		/* Every row can be found by its own match pattern. */
		char name[96];
		size_t k = strcspn(s[i].match, "|$");
		snprintf(name, sizeof(name), "NVIDIA %.*s", (int)k, s[i].match);
		if (pragma_gpu_spec_find(name) != &s[i])
			fail_msg("%s: '%s' finds %s", s[i].name, name, spec_name(name));
	}
}

static void test_model_from_spec(void **state)
{
	struct pragma_gpu_model m;
	struct pragma_buf t = PRAGMA_BUF_INIT;
	json_t *j;

	(void)state;
	pragma_gpu_model_from_spec(pragma_gpu_spec_find("NVIDIA A100-SXM4-40GB"), &m);
	assert_false(m.have_device);
	assert_float_equal(m.peak_fp32_gflops, 19500, 1e-9);
	assert_float_equal(m.peak_tensor_gflops, 312000, 1e-9);
	assert_float_equal(m.peak_gbs, 1555, 1e-9);
	assert_non_null(strstr(m.peak_source, "datasheet"));
	pragma_gpu_model_text(&m, &t);
	assert_non_null(strstr(t.data, "compute capability 8.0"));
	assert_non_null(strstr(t.data, "-arch=sm_80"));
	assert_non_null(strstr(t.data, "108 SMs"));
	assert_non_null(strstr(t.data, "ridge point"));
	assert_non_null(strstr(t.data, "FP16 312"));
	assert_non_null(strstr(t.data, "1555 GB/s"));
	j = pragma_gpu_model_json(&m);
	assert_string_equal(json_string_value(json_object_get(j, "arch")), "sm_80");
	assert_string_equal(json_string_value(json_object_get(json_object_get(j, "table"), "name")), "A100 SXM4 40GB");
	json_decref(j);
	pragma_buf_release(&t);
}

static void test_model_derived(void **state)
{
	struct pragma_gpu_device d;
	struct pragma_gpu_model m;
	struct pragma_buf t = PRAGMA_BUF_INIT;

	(void)state;
	/* An RTX 4080 (not in the table): 76 SMs, 2.505 GHz boost, 22.4 Gbps
	 * GDDR6X on 256 bits (the attribute reports 11.2 GHz). */
	memset(&d, 0, sizeof(d));
	snprintf(d.name, sizeof(d.name), "NVIDIA GeForce RTX 4080");
	d.cc_major = 8;
	d.cc_minor = 9;
	d.sms = 76;
	d.clock_khz = 2505000;
	d.mem_clock_khz = 11201000;
	d.mem_bus_bits = 256;
	d.l2_bytes = 64 << 20;
	d.max_threads_per_sm = 1536;
	d.max_blocks_per_sm = 24;
	d.regs_per_sm = 65536;
	d.smem_per_sm = 102400;
	d.max_threads_per_block = 1024;
	d.regs_per_block = 65536;
	d.smem_per_block = 49152;
	d.smem_per_block_optin = 101376;
	d.warp_size = 32;
	pragma_gpu_model_from_device(&d, &m);
	assert_null(m.spec);
	assert_true(m.have_device);
	/* 2 x 128 x 76 x 2.505 GHz = 48.7 TFLOP/s (NVIDIA: 48.7) */
	assert_float_equal(m.peak_fp32_gflops, 2.0 * 128 * 76 * 2.505, 1e-6);
	/* 2 x 11.201 GHz x 32 bytes = 716.9 GB/s (NVIDIA: 716.8) */
	assert_float_equal(m.peak_gbs, 2 * 11.201e9 * 32 / 1e9, 1e-6);
	assert_non_null(strstr(m.peak_source, "derived from clocks"));
	pragma_gpu_model_text(&m, &t);
	assert_non_null(strstr(t.data, "per SM: 1536 threads"));
	assert_non_null(strstr(t.data, "99 KiB with"));
	pragma_buf_release(&t);

	/* A table GPU with fewer SMs than the datasheet: derived FP32. */
	snprintf(d.name, sizeof(d.name), "NVIDIA A100-SXM4-40GB");
	d.cc_major = 8;
	d.cc_minor = 0;
	d.sms = 98;
	d.clock_khz = 1410000;
	pragma_gpu_model_from_device(&d, &m);
	assert_non_null(m.spec);
	assert_float_equal(m.peak_fp32_gflops, 2.0 * 64 * 98 * 1.41, 1e-6);
	assert_float_equal(m.peak_gbs, 1555, 1e-9);
}

static void test_lanes(void **state)
{
	(void)state;
	assert_int_equal(pragma_gpu_fp32_lanes(8, 0), 64);
	assert_int_equal(pragma_gpu_fp32_lanes(8, 6), 128);
	assert_int_equal(pragma_gpu_fp32_lanes(8, 9), 128);
	assert_int_equal(pragma_gpu_fp32_lanes(9, 0), 128);
	assert_int_equal(pragma_gpu_fp32_lanes(7, 5), 64);
	assert_int_equal(pragma_gpu_fp32_lanes(3, 5), 0);
}

static void test_roofline(void **state)
{
	struct pragma_gpu_model m;
	struct pragma_profile p;
	double v;
	/* vadd over 2^24 floats: 16.8 MFLOP, 201 MB, at 150 us */
	double n = 1 << 24, flops = n, bytes = 12 * n, ms = 0.150;

	(void)state;
	pragma_gpu_model_from_spec(pragma_gpu_spec_find("NVIDIA A100-SXM4-40GB"), &m);
	pragma_profile_init(&p);
	pragma_gpu_roofline(flops, bytes, ms, &m, &p);
	assert_true(pragma_profile_get(&p, "roof.gbs", &v));
	assert_float_equal(v, bytes / (ms / 1e3) / 1e9, 1e-6);
	assert_true(pragma_profile_get(&p, "roof.pct_peak_bw", &v));
	assert_float_equal(v, 100 * bytes / (ms / 1e3) / 1e9 / 1555, 1e-6);
	assert_true(pragma_profile_get(&p, "roof.peak_gflops", &v));
	assert_float_equal(v, 19500, 1e-9);
	assert_true(pragma_profile_get(&p, "roof.ridge_ai", &v));
	assert_float_equal(v, 19500.0 / 1555, 1e-9);
	assert_true(pragma_profile_get(&p, "roof.pct_roof", &v));
	assert_true(v > 80 && v < 90);
	/* The roof is the datasheet's, and the words say so, not "what a
	 * streaming kernel reaches under the timing protocol" (an H100's
	 * diagnosis said that of its 3350 GB/s). */
	{
		int noted = 0;
		size_t named = 0;
		struct pragma_diagnosis d;
		for (size_t i = 0; i < p.n_notes; i++)
			noted |= strstr(p.notes[i], "bandwidth roof 1555 GB/s is the device's peak (table") != NULL;
		assert_true(noted);
		pragma_diagnose(&p, NULL, &d);
		assert_true(d.n > 0);
		for (size_t i = 0; i < d.n; i++) {
			/* where a finding names the roof's figure, it says what it is */
			named += strstr(d.f[i].evidence, "of the bandwidth roof (") != NULL;
			if (strstr(d.f[i].evidence, "of the bandwidth roof (") &&
			    !strstr(d.f[i].evidence, "the device's peak, not measured under the timing protocol"))
				fail_msg("%s", d.f[i].evidence);
			assert_null(strstr(d.f[i].evidence, "streaming kernel reaches"));
		}
		assert_true(named > 0);
		pragma_diagnosis_release(&d);
	}
	pragma_profile_release(&p);

	/* Unknown peaks: unavailable, not zero. */
	memset(&m, 0, sizeof(m));
	pragma_profile_init(&p);
	pragma_gpu_roofline(flops, bytes, ms, &m, &p);
	assert_int_equal(p.n, 0);
	assert_non_null(pragma_profile_why(&p, "roofline"));
	pragma_profile_release(&p);
}

static void test_abi_text(void **state)
{
	struct pragma_buf t = PRAGMA_BUF_INIT;

	(void)state;
	pragma_cuda_abi_text(&t);
	assert_non_null(strstr(t.data, "extern \"C\" int pk_forward"));
	assert_non_null(strstr(t.data, "DEVICE pointer"));
	assert_non_null(strstr(t.data, "synchronizes the whole device"));
	assert_non_null(strstr(t.data, "cuBLAS"));
	assert_non_null(strstr(t.data, "pragma:flags"));
	pragma_buf_release(&t);
}

/* The Coder's system prompt for CUDA shows the GPU model and the CUDA ABI. */
static void test_coder_prompt(void **state)
{
	struct pragma_task t;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_buf out = PRAGMA_BUF_INIT;
	char path[4096];
	const char *data = getenv("PRAGMA_TEST_DATA");
	json_t *vars;

	(void)state;
	snprintf(path, sizeof(path), "%s/cuda/tasks/vadd", data ? data : PRAGMA_SOURCE_DIR "/tests");
	if (pragma_task_load(path, NULL, 0, &t, &err) < 0)
		fail_msg("%s", err.msg);
	vars = json_pack("{s:f, s:f}", "atol", t.atol, "rtol", t.rtol);
	pragma_cuda_prompt_vars(vars, &t, 0.25);
	if (pragma_template_render_file("coder_system_cuda.md", vars, &out, &err) < 0)
		fail_msg("%s", err.msg);
	/* the ABI, with device pointers */
	assert_non_null(strstr(out.data, "int pk_forward(const struct pk_tensor *inputs"));
	assert_non_null(strstr(out.data, "DEVICE pointer"));
	assert_non_null(strstr(out.data, "extern \"C\""));
	/* the GPU model: the device, or the table's A100 when there is none */
	assert_non_null(strstr(out.data, "## The GPU\nGPU: "));
	assert_non_null(strstr(out.data, "SMs"));
	assert_non_null(strstr(out.data, "ridge point"));
	assert_non_null(strstr(out.data, "nvcc"));
	/* the task's tolerance (1e-6) rules fast math out */
	assert_non_null(strstr(out.data, "No fast math"));
	assert_null(strstr(out.data, "{{"));
	assert_non_null(strstr(json_string_value(json_object_get(vars, "work")), "Lower bounds on this GPU"));
	/* The loop's other CUDA prompts render with the same variables. */
	if (pragma_template_render_file("coder_first_cuda.md", vars, &out, &err) < 0)
		fail_msg("%s", err.msg);
	assert_non_null(strstr(out.data, "## The GPU\nGPU: "));
	assert_non_null(strstr(out.data, "Lower bounds on this GPU"));
	assert_non_null(strstr(out.data, "coalesced"));
	pragma_buf_reset(&out);
	if (pragma_template_render_file("conductor_system_cuda.md", vars, &out, &err) < 0)
		fail_msg("%s", err.msg);
	assert_non_null(strstr(out.data, "CUDA kernels on NVIDIA GPUs"));
	assert_non_null(strstr(out.data, "occupancy"));
	json_decref(vars);
	pragma_buf_release(&out);
	pragma_task_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_match),	      cmocka_unit_test(test_table_sane), cmocka_unit_test(test_model_from_spec),
		cmocka_unit_test(test_model_derived), cmocka_unit_test(test_lanes),	 cmocka_unit_test(test_roofline),
		cmocka_unit_test(test_abi_text),      cmocka_unit_test(test_coder_prompt),
	};
	return pragma_run_tests(tests, NULL, NULL);
}
