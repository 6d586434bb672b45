/*
 * The GPU hardware model: what the device says about itself
 * (cudaDeviceGetAttribute: SMs, clocks, shared memory, L2, registers) and a
 * table of vendor peaks for common GPUs, for the roofline, the
 * impossible-speed check and the prompts.
 *
 * Peaks are dense (no 2:4 sparsity), at boost clock, from NVIDIA's
 * datasheets and architecture whitepapers (named per row). A device not in
 * the table gets peaks derived from its clocks: FP32 = 2 x FP32 lanes x SMs
 * x clock; bandwidth = 2 x memory clock x bus width (the attribute reports
 * the DDR base clock for GDDR and HBM alike).
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "cuda/cuda_int.h"
#include "pragma/cuda.h"
#include "pragma/machine.h"

#define DS_A100 "NVIDIA A100 Tensor Core GPU datasheet (2021) and Ampere GA100 whitepaper"
#define DS_H100 "NVIDIA H100 Tensor Core GPU datasheet (2023) and Hopper whitepaper"
#define DS_H200 "NVIDIA H200 Tensor Core GPU datasheet (2024)"
#define DS_L40S "NVIDIA L40S datasheet (2023)"
#define DS_L4 "NVIDIA L4 Tensor Core GPU datasheet (2023)"
#define DS_ADA "NVIDIA Ada Lovelace GPU architecture whitepaper v1.1, appendix A"
#define DS_GA102 "NVIDIA Ampere GA102 GPU architecture whitepaper v2.1"
#define DS_A10 "NVIDIA A10 Tensor Core GPU datasheet (2021)"
#define DS_T4 "NVIDIA T4 Tensor Core GPU datasheet (2019)"
#define DS_B200 "NVIDIA DGX B200 / HGX B200 datasheets (2024), per GPU (system figures / 8)"

/* name, match, cc, SMs, fp32, fp64, tf32, fp16, bf16, fp8, int8, GB/s, L2 MB, memory, source */
static const struct pragma_gpu_spec specs[] = {
	{ "A100 SXM4 80GB", "A100-SXM4-80GB|A100-SXM-80GB|A100 80GB HBM2e", 8, 0, 108, 19.5, 9.7, 156, 312, 312, 0, 624,
	  2039, 40, "HBM2e 80 GB", DS_A100 },
	{ "A100 SXM4 40GB", "A100-SXM4-40GB|A100-SXM-40GB|A100-SXM4", 8, 0, 108, 19.5, 9.7, 156, 312, 312, 0, 624, 1555,
	  40, "HBM2 40 GB", DS_A100 },
	{ "A100 PCIe 80GB", "A100 80GB PCIe|A100-PCIE-80GB", 8, 0, 108, 19.5, 9.7, 156, 312, 312, 0, 624, 1935, 40,
	  "HBM2e 80 GB", DS_A100 },
	{ "A100 PCIe 40GB", "A100-PCIE-40GB|A100 PCIe|A100", 8, 0, 108, 19.5, 9.7, 156, 312, 312, 0, 624, 1555, 40,
	  "HBM2 40 GB", DS_A100 },
	{ "H100 SXM5 80GB", "H100 80GB HBM3|H100 SXM|H100-SXM", 9, 0, 132, 67, 34, 494.7, 989.4, 989.4, 1978.9, 1978.9,
	  3350, 50, "HBM3 80 GB", DS_H100 },
	{ "H100 NVL 94GB", "H100 NVL", 9, 0, 132, 60, 30, 417.5, 835, 835, 1670.5, 1670.5, 3900, 50, "HBM3 94 GB",
	  DS_H100 },
	{ "H100 PCIe 80GB", "H100 PCIe|H100-PCIE|H100", 9, 0, 114, 51, 26, 378, 756, 756, 1513, 1513, 2000, 50,
	  "HBM2e 80 GB", DS_H100 },
	{ "GH200 96GB", "GH200", 9, 0, 132, 67, 34, 494.7, 989.4, 989.4, 1978.9, 1978.9, 4000, 50, "HBM3 96 GB",
	  "NVIDIA GH200 Grace Hopper Superchip datasheet (2023)" },
	{ "H200 SXM 141GB", "H200", 9, 0, 132, 67, 34, 494.7, 989.4, 989.4, 1978.9, 1978.9, 4800, 50, "HBM3e 141 GB",
	  DS_H200 },
	{ "B200", "B200", 10, 0, 148, 80, 40, 1100, 2250, 2250, 4500, 4500, 8000, 126, "HBM3e 180 GB", DS_B200 },
	{ "L40S", "L40S", 8, 9, 142, 91.6, 1.4, 183, 362, 362, 733, 733, 864, 96, "GDDR6 48 GB", DS_L40S },
	{ "L4", "L4$", 8, 9, 58, 30.3, 0.5, 60, 121, 121, 242, 242, 300, 48, "GDDR6 24 GB", DS_L4 },
	{ "GeForce RTX 4090", "RTX 4090", 8, 9, 128, 82.6, 1.3, 82.6, 165.2, 165.2, 330.3, 660.6, 1008, 72,
	  "GDDR6X 24 GB", DS_ADA },
	{ "GeForce RTX 3090", "RTX 3090", 8, 6, 82, 35.6, 0.56, 35.6, 71, 71, 0, 284, 936, 6, "GDDR6X 24 GB", DS_GA102 },
	{ "RTX A6000", "RTX A6000", 8, 6, 84, 38.7, 1.2, 77.4, 154.8, 154.8, 0, 309.7, 768, 6, "GDDR6 48 GB", DS_GA102 },
	{ "A10", "A10$", 8, 6, 72, 31.2, 0.98, 62.5, 125, 125, 0, 250, 600, 6, "GDDR6 24 GB", DS_A10 },
	{ "T4", "T4$|Tesla T4", 7, 5, 40, 8.1, 0.25, 0, 65, 0, 0, 130, 320, 4, "GDDR6 16 GB", DS_T4 },
};

const struct pragma_gpu_spec *pragma_gpu_specs(size_t *n)
{
	*n = sizeof(specs) / sizeof(specs[0]);
	return specs;
}

/* One token: a substring, or with a trailing '$' a suffix of the name. */
static int token_match(const char *name, const char *tok, size_t len)
{
	char t[64];
	int anchored = len && tok[len - 1] == '$';
	size_t nl = strlen(name);

	if (anchored)
		len--;
	if (!len || len >= sizeof(t))
		return 0;
	memcpy(t, tok, len);
	t[len] = '\0';
	if (anchored)
		return nl >= len && !strcmp(name + nl - len, t);
	return strstr(name, t) != NULL;
}

const struct pragma_gpu_spec *pragma_gpu_spec_find(const char *device_name)
{
	if (!device_name || !*device_name)
		return NULL;
	/* Rows are ordered from specific to general. */
	for (size_t i = 0; i < sizeof(specs) / sizeof(specs[0]); i++) {
		const char *m = specs[i].match;
		while (*m) {
			size_t n = strcspn(m, "|");
			if (token_match(device_name, m, n))
				return &specs[i];
			m += n;
			if (*m == '|')
				m++;
		}
	}
	return NULL;
}

int pragma_gpu_fp32_lanes(int major, int minor)
{
	switch (major) {
	case 7:
		return 64;       /* Volta, Turing */
	case 8:
		return minor == 0 ? 64 : 128; /* GA100: 64; GA10x, AD10x: 128 */
	case 9:
	case 10:
	case 12:
		return 128;      /* Hopper, Blackwell */
	default:
		return 0;
	}
}

static void peaks(struct pragma_gpu_model *m)
{
	const struct pragma_gpu_spec *s = m->spec;
	const struct pragma_gpu_device *d = &m->dev;

	if (s) {
		m->peak_fp32_gflops = s->fp32_tflops * 1e3;
		m->peak_tensor_gflops = fmax(s->fp16_tflops, s->bf16_tflops) * 1e3;
		m->peak_gbs = s->mem_gbs;
		snprintf(m->peak_source, sizeof(m->peak_source), "table (%s): %s", s->name, s->source);
		/* A board clocked differently from the datasheet (SM count
		 * differs: a cut-down part) gets the derived figure. */
		if (m->have_device && d->sms && s->sms && d->sms != s->sms && d->clock_khz) {
			int lanes = pragma_gpu_fp32_lanes(d->cc_major, d->cc_minor);
			if (lanes) {
				m->peak_fp32_gflops = 2.0 * lanes * d->sms * d->clock_khz / 1e6;
				snprintf(m->peak_source, sizeof(m->peak_source),
					 "derived from clocks (%d SMs, the table's %s has %d)", d->sms, s->name, s->sms);
			}
		}
		return;
	}
	if (m->have_device) {
		int lanes = pragma_gpu_fp32_lanes(d->cc_major, d->cc_minor);
		if (lanes && d->clock_khz)
			m->peak_fp32_gflops = 2.0 * lanes * d->sms * d->clock_khz / 1e6;
		if (d->mem_clock_khz && d->mem_bus_bits)
			m->peak_gbs = 2.0 * d->mem_clock_khz * 1e3 * (d->mem_bus_bits / 8.0) / 1e9;
		snprintf(m->peak_source, sizeof(m->peak_source),
			 "derived from clocks (not in pragma's table): 2 x %d FP32 lanes x %d SMs x %.0f MHz; 2 x %.0f MHz x "
			 "%d bits",
			 lanes, d->sms, d->clock_khz / 1e3, d->mem_clock_khz / 1e3, d->mem_bus_bits);
	}
}

void pragma_gpu_model_from_device(const struct pragma_gpu_device *d, struct pragma_gpu_model *m)
{
	memset(m, 0, sizeof(*m));
	m->have_device = 1;
	m->dev = *d;
	m->spec = pragma_gpu_spec_find(d->name);
	peaks(m);
}

int pragma_gpu_model_load(int index, struct pragma_gpu_model *m, struct pragma_err *err)
{
	struct pragma_gpu_probe p;

	memset(m, 0, sizeof(*m));
	pragma_gpu_probe(&p);
	if (p.n_devices <= 0) {
		pragma_err_set(err, PRAGMA_E_ENV, "%s", p.reason);
		if (p.hint[0])
			pragma_err_hint(err, "%s", p.hint);
		return -1;
	}
	if (index < 0 || index >= p.n_devices)
		return pragma_err_set(err, PRAGMA_E_ENV, "no CUDA device %d (this machine has %d)", index, p.n_devices);
	pragma_gpu_model_from_device(&p.dev[index], m);
	return 0;
}

void pragma_gpu_model_from_spec(const struct pragma_gpu_spec *s, struct pragma_gpu_model *m)
{
	memset(m, 0, sizeof(*m));
	m->spec = s;
	snprintf(m->dev.name, sizeof(m->dev.name), "%s (from pragma's table; no device present)", s->name);
	m->dev.cc_major = s->cc_major;
	m->dev.cc_minor = s->cc_minor;
	m->dev.sms = s->sms;
	m->dev.l2_bytes = (long)(s->l2_mb * 1024 * 1024);
	m->dev.warp_size = 32;
	peaks(m);
}

json_t *pragma_gpu_model_json(const struct pragma_gpu_model *m)
{
	const struct pragma_gpu_device *d = &m->dev;
	json_t *j = json_pack("{s:b, s:s, s:s, s:i, s:i, s:i, s:I, s:I, s:I, s:I, s:i, s:i, s:i, s:i, s:i, s:f, s:f, "
			      "s:f, s:s}",
			      "device", m->have_device, "name", d->name, "arch", "", "sms", d->sms, "clock_khz",
			      d->clock_khz, "mem_clock_khz", d->mem_clock_khz, "l2_bytes", (json_int_t)d->l2_bytes,
			      "smem_per_block", (json_int_t)d->smem_per_block, "smem_per_block_optin",
			      (json_int_t)d->smem_per_block_optin, "smem_per_sm", (json_int_t)d->smem_per_sm,
			      "regs_per_sm", d->regs_per_sm, "regs_per_block", d->regs_per_block, "max_threads_per_sm",
			      d->max_threads_per_sm, "max_blocks_per_sm", d->max_blocks_per_sm, "mem_bus_bits",
			      d->mem_bus_bits, "peak_fp32_gflops", m->peak_fp32_gflops, "peak_tensor_gflops",
			      m->peak_tensor_gflops, "peak_gbs", m->peak_gbs, "peak_source", m->peak_source);
	char arch[16];

	snprintf(arch, sizeof(arch), "sm_%d%d", d->cc_major, d->cc_minor);
	json_object_set_new(j, "arch", json_string(arch));
	if (d->total_mem)
		json_object_set_new(j, "total_mem", json_integer((json_int_t)d->total_mem));
	if (m->spec)
		json_object_set_new(j, "table", json_pack("{s:s, s:f, s:f, s:f, s:f, s:f, s:f, s:s, s:s}", "name",
							  m->spec->name, "fp64_tflops", m->spec->fp64_tflops,
							  "tf32_tflops", m->spec->tf32_tflops, "fp16_tflops",
							  m->spec->fp16_tflops, "bf16_tflops", m->spec->bf16_tflops,
							  "fp8_tflops", m->spec->fp8_tflops, "l2_mb", m->spec->l2_mb,
							  "memory", m->spec->memory, "source", m->spec->source));
	return j;
}

void pragma_gpu_model_text(const struct pragma_gpu_model *m, struct pragma_buf *out)
{
	const struct pragma_gpu_device *d = &m->dev;
	const struct pragma_gpu_spec *s = m->spec;

	pragma_buf_addf(out, "GPU: %s, compute capability %d.%d (build: -arch=sm_%d%d)\n", d->name, d->cc_major,
			d->cc_minor, d->cc_major, d->cc_minor);
	pragma_buf_addf(out, "- %d SMs", d->sms);
	if (d->clock_khz)
		pragma_buf_addf(out, " at up to %.0f MHz", d->clock_khz / 1e3);
	if (pragma_gpu_fp32_lanes(d->cc_major, d->cc_minor))
		pragma_buf_addf(out, ", %d FP32 lanes per SM", pragma_gpu_fp32_lanes(d->cc_major, d->cc_minor));
	pragma_buf_addf(out, ", warp size %d\n", d->warp_size ? d->warp_size : 32);
	if (d->max_threads_per_sm)
		pragma_buf_addf(out, "- per SM: %d threads, %d blocks, %d registers, %ld KiB shared memory\n",
				d->max_threads_per_sm, d->max_blocks_per_sm, d->regs_per_sm, d->smem_per_sm / 1024);
	if (d->max_threads_per_block)
		pragma_buf_addf(out,
				"- per block: %d threads, %d registers, %ld KiB shared memory (%ld KiB with "
				"cudaFuncSetAttribute(..., cudaFuncAttributeMaxDynamicSharedMemorySize, ...))\n",
				d->max_threads_per_block, d->regs_per_block, d->smem_per_block / 1024,
				d->smem_per_block_optin / 1024);
	if (d->l2_bytes)
		pragma_buf_addf(out, "- L2 cache: %.1f MiB", d->l2_bytes / 1048576.0);
	if (s)
		pragma_buf_addf(out, "; memory: %s", s->memory);
	pragma_buf_addch(out, '\n');
	if (m->peak_fp32_gflops > 0 || m->peak_gbs > 0) {
		pragma_buf_addf(out, "- peaks: FP32 %.1f TFLOP/s (CUDA cores)", m->peak_fp32_gflops / 1e3);
		if (s && s->tf32_tflops > 0)
			pragma_buf_addf(out, ", TF32 %.0f", s->tf32_tflops);
		if (s && s->fp16_tflops > 0)
			pragma_buf_addf(out, ", FP16 %.0f", s->fp16_tflops);
		if (s && s->bf16_tflops > 0)
			pragma_buf_addf(out, ", BF16 %.0f", s->bf16_tflops);
		if (s && s->fp8_tflops > 0)
			pragma_buf_addf(out, ", FP8 %.0f", s->fp8_tflops);
		if (s)
			pragma_buf_addf(out, " TFLOP/s on tensor cores (dense), FP64 %.1f", s->fp64_tflops);
		pragma_buf_addf(out, "; DRAM %.0f GB/s\n", m->peak_gbs);
		if (m->peak_gbs > 0)
			pragma_buf_addf(out,
					"- ridge point (FP32): %.1f FLOP/byte: below it a kernel is bound by DRAM "
					"bandwidth, above it by arithmetic\n",
					m->peak_fp32_gflops / m->peak_gbs);
		pragma_buf_addf(out, "- source of the peaks: %s\n", m->peak_source);
	}
}

void pragma_cuda_abi_text(struct pragma_buf *out)
{
	pragma_buf_adds(
		out,
		"CUDA kernel ABI: one .cu file, compiled with nvcc -O3 -arch=sm_XX -shared -cudart shared, defining\n"
		"\n"
		"    #include <pragma/kernel.h>   /* struct pk_tensor, enum pk_dtype; extern \"C\" inside */\n"
		"    extern \"C\" int pk_forward(const struct pk_tensor *inputs, int n_inputs,\n"
		"                              struct pk_tensor *outputs, int n_outputs);\n"
		"\n"
		"- Every tensor's data is a DEVICE pointer (cudaMalloc'ed, 256-byte aligned, contiguous row-major);\n"
		"  shapes and dtypes are in host memory. Launch your __global__ kernels from pk_forward.\n"
		"- The harness poisons outputs (NaN) before every call, synchronizes the whole device after\n"
		"  pk_forward returns, checks cudaGetLastError, then copies the outputs back: write every output\n"
		"  element, never write inputs, keep nothing between calls. Return 0 on success; check your\n"
		"  launches (cudaGetLastError()) and return nonzero on failure.\n"
		"- Allowed: the CUDA runtime for launches, errors, device attributes, cudaMalloc/cudaFree scratch,\n"
		"  copies and fills, streams, events, graphs, occupancy queries; cooperative groups, warp\n"
		"  intrinsics, shared memory, tensor cores (wmma/mma.sync/inline PTX). Not allowed: cuBLAS, cuDNN,\n"
		"  CUTLASS-prebuilt libraries or any other library, host callbacks, cudaDeviceReset, files, processes.\n"
		"- Timing: CUDA events around the call, L2 flushed between calls; work on other streams counts\n"
		"  (the device is synchronized inside the timed region).\n"
		"- Flags: '// pragma:flags -maxrregcount=64 -Xptxas -dlcm=ca' (allow-list: -O*, -arch=sm_NN,\n"
		"  -lineinfo, -maxrregcount=N, -D/-U, -std=c++17, -Xptxas/-Xcompiler options, --use_fast_math only\n"
		"  when the task's tolerance is 1e-3 or looser); tunables with '// pragma:tune NAME=v1,v2'.\n");
}

void pragma_gpu_roofline(double flops, double bytes, double median_ms, const struct pragma_gpu_model *m,
			 struct pragma_profile *p)
{
	struct pragma_machine fake;

	if (!m || m->peak_fp32_gflops <= 0 || m->peak_gbs <= 0) {
		pragma_profile_unavailable(p, "roofline", "the GPU's peaks are unknown (not in the table, no clocks)");
		return;
	}
	/* The CPU roofline's arithmetic, with the GPU's peaks. */
	memset(&fake, 0, sizeof(fake));
	fake.measured = 1;
	fake.peak_gflops = m->peak_fp32_gflops;
	fake.peak_gbs = m->peak_gbs;
	pragma_roofline(flops, bytes, median_ms, &fake, p);
	if (bytes > 0)
		pragma_profile_note(p, "roofline: bandwidth roof %.0f GB/s is the device's peak (%s), not a figure "
				       "measured under the timing protocol: streaming kernels reach less than it; bytes = "
				       "inputs read once + outputs written once",
				    m->peak_gbs, m->peak_source);
	if (m->peak_tensor_gflops > 0)
		pragma_profile_note(p,
				    "roofline: FLOP peak is FP32 on CUDA cores (%.1f TFLOP/s); tensor cores reach %.0f "
				    "TFLOP/s in FP16/BF16 (peaks: %s)",
				    m->peak_fp32_gflops / 1e3, m->peak_tensor_gflops / 1e3, m->peak_source);
}
