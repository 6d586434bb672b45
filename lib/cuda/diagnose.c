/*
 * GPU bottleneck rules over the gpu.* and static.gpu_* metrics, in the
 * manner of lib/diagnose: each finding names a playbook
 * (knowledge/gpu/playbooks.json) and carries the numbers that made it fire.
 * Thresholds follow the Nsight Compute Profiling Guide's rules and the CUDA
 * C++ Best Practices Guide; coarse on purpose (a lead, not a verdict). The
 * roofline rules of lib/diagnose apply unchanged to the GPU's roof.* metrics.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pragma/cuda.h"

static const char *const names[] = { "low-occupancy",	     "uncoalesced-access", "bank-conflicts",
				     "local-memory-spills", "tensor-cores-unused", "launch-bound" };

const char *const *pragma_gpu_bottleneck_names(size_t *n)
{
	*n = sizeof(names) / sizeof(names[0]);
	return names;
}

static int get(const struct pragma_profile *p, const char *name, double *v)
{
	return pragma_profile_get(p, name, v);
}

__attribute__((format(printf, 4, 5))) static void add(struct pragma_diagnosis *d, const char *bottleneck,
						      double conf, const char *fmt, ...)
{
	struct pragma_finding *f;
	va_list ap;

	d->f = realloc(d->f, (d->n + 1) * sizeof(*d->f));
	if (!d->f)
		abort();
	f = &d->f[d->n++];
	memset(f, 0, sizeof(*f));
	snprintf(f->bottleneck, sizeof(f->bottleneck), "%s", bottleneck);
	f->confidence = conf < 0.05 ? 0.05 : conf > 0.99 ? 0.99 : conf;
	va_start(ap, fmt);
	vsnprintf(f->evidence, sizeof(f->evidence), fmt, ap);
	va_end(ap);
}

static void occupancy(const struct pragma_profile *p, const struct pragma_gpu_model *m, struct pragma_diagnosis *d)
{
	double ach, theo = -1, dram = -1, sm = -1, regs = -1, smem = -1, block = -1, waves = -1;
	char why[256] = "";

	if (!get(p, "gpu.achieved_occupancy", &ach) || ach >= 35)
		return;
	get(p, "gpu.theoretical_occupancy", &theo);
	get(p, "gpu.dram_throughput_pct", &dram);
	get(p, "gpu.sm_throughput_pct", &sm);
	/* Busy units hide latency without many warps. */
	if (dram >= 70 || sm >= 70)
		return;
	if (!get(p, "gpu.registers_per_thread", &regs))
		get(p, "static.gpu_registers", &regs);
	if (!get(p, "gpu.shared_mem_per_block", &smem))
		get(p, "static.gpu_smem_bytes", &smem);
	get(p, "gpu.block_size", &block);
	get(p, "gpu.waves", &waves);
	if (theo >= 0 && theo < 50) {
		if (regs >= 64)
			snprintf(why, sizeof(why), "; %.0f registers per thread limit the warps per SM", regs);
		else if (smem > 0 && m && m->dev.smem_per_sm > 0 && smem > m->dev.smem_per_sm / 4.0)
			snprintf(why, sizeof(why), "; %.0f KiB of shared memory per block limits the blocks per SM",
				 smem / 1024);
		else if (block > 0 && block < 128)
			snprintf(why, sizeof(why), "; blocks of %.0f threads are too small to fill an SM", block);
	} else if (waves >= 0 && waves < 1) {
		snprintf(why, sizeof(why), "; the grid is %.2f waves: too few blocks for the SMs", waves);
	} else if (theo >= 0 && ach < theo / 2) {
		snprintf(why, sizeof(why), "; far below the theoretical %.0f%%: imbalanced blocks or a tail wave", theo);
	}
	add(d, "low-occupancy", 0.45 + (35 - ach) / 70 + (*why ? 0.1 : 0),
	    "achieved occupancy %.1f%% (theoretical %s%.0f%%), with DRAM at %.0f%% and SM at %.0f%% of peak: too few "
	    "warps to hide latency%s",
	    ach, theo < 0 ? "unknown, " : "", theo < 0 ? 0 : theo, dram < 0 ? 0 : dram, sm < 0 ? 0 : sm, why);
}

static void coalescing(const struct pragma_profile *p, struct pragma_diagnosis *d)
{
	double spr, bytes, min_bytes = p->bytes;

	if (get(p, "gpu.sectors_per_request", &spr) && spr > 8) {
		add(d, "uncoalesced-access", 0.4 + fmin(0.5, (spr - 8) / 48),
		    "%.1f 32-byte sectors per global memory request (4 when a warp reads 128 contiguous bytes, 32 when "
		    "every thread touches its own sector): neighbouring threads do not access neighbouring addresses",
		    spr);
		return;
	}
	if (min_bytes > 0 && get(p, "gpu.dram_bytes", &bytes) && bytes > 3 * min_bytes)
		add(d, "uncoalesced-access", 0.35,
		    "%.3g bytes moved from DRAM for a task whose inputs and outputs are %.3g bytes (%.1fx): data is "
		    "read more than once or in partly used sectors",
		    bytes, min_bytes, bytes / min_bytes);
}

static void bank_conflicts(const struct pragma_profile *p, struct pragma_diagnosis *d)
{
	double bc, mio = 0, ssb = 0;

	if (!get(p, "gpu.smem_bank_conflicts", &bc) || bc <= 0)
		return;
	get(p, "gpu.stall_mio_throttle_pct", &mio);
	get(p, "gpu.stall_short_scoreboard_pct", &ssb);
	if (bc < 1000 && mio + ssb < 20)
		return;
	add(d, "bank-conflicts", mio + ssb >= 20 ? 0.7 : 0.35,
	    "%.3g shared-memory bank conflicts per call; warps stall %.0f%% on MIO throttle and %.0f%% on short "
	    "scoreboard (shared-memory waits)",
	    bc, mio, ssb);
}

static void spills(const struct pragma_profile *p, struct pragma_diagnosis *d)
{
	double sp, regs = 0, lsb = 0;

	if (!get(p, "static.gpu_spill_bytes", &sp) || sp <= 0)
		return;
	get(p, "static.gpu_registers", &regs);
	get(p, "gpu.stall_long_scoreboard_pct", &lsb);
	add(d, "local-memory-spills", sp >= 64 ? 0.7 : 0.45,
	    "ptxas spills %.0f bytes per thread to local memory (at %.0f registers per thread); spilled values go "
	    "through L1/L2 like global memory%s",
	    sp, regs, lsb >= 30 ? " and warps already wait on memory (long scoreboard)" : "");
}

static void tensor(const struct pragma_profile *p, const struct pragma_gpu_model *m, struct pragma_diagnosis *d)
{
	double tp, ai, ridge;

	if (!m || m->peak_tensor_gflops <= 0 || !get(p, "gpu.tensor_pipe_pct", &tp) || tp >= 5)
		return;
	if (!get(p, "roof.ai", &ai) || !get(p, "roof.ridge_ai", &ridge) || ai < ridge)
		return;
	add(d, "tensor-cores-unused", 0.55,
	    "arithmetic intensity %.1f FLOP/byte is above the FP32 ridge point %.1f, so the kernel is bound by "
	    "arithmetic, yet the tensor pipe is %.1f%% active: tensor cores (%.0f TFLOP/s in FP16/BF16) do the "
	    "same math many times faster than CUDA cores (%.1f TFLOP/s FP32)",
	    ai, ridge, tp, m->peak_tensor_gflops / 1e3, m->peak_fp32_gflops / 1e3);
}

static void launches(const struct pragma_profile *p, struct pragma_diagnosis *d)
{
	double gap, k = 1, dur = 0;

	if (!get(p, "gpu.launch_gap_pct", &gap) || gap < 30)
		return;
	get(p, "gpu.kernels", &k);
	get(p, "gpu.duration_us", &dur);
	add(d, "launch-bound", 0.4 + fmin(0.5, (gap - 30) / 100),
	    "%.0f%% of the call's time is outside kernels (%.0f launch%s, %.1f us of kernel time): launch and "
	    "synchronization overhead dominates",
	    gap, k, k == 1 ? "" : "es", dur);
}

static int by_confidence(const void *a, const void *b)
{
	const struct pragma_finding *x = a, *y = b;

	return x->confidence < y->confidence ? 1 : x->confidence > y->confidence ? -1 : 0;
}

void pragma_gpu_diagnose(const struct pragma_profile *p, const struct pragma_gpu_model *m, struct pragma_diagnosis *d)
{
	occupancy(p, m, d);
	coalescing(p, d);
	bank_conflicts(p, d);
	spills(p, d);
	tensor(p, m, d);
	launches(p, d);
	if (d->n > 1)
		qsort(d->f, d->n, sizeof(*d->f), by_confidence);
}

void pragma_cuda_diagnose(const struct pragma_profile *p, struct pragma_diagnosis *d)
{
	struct pragma_gpu_model m;

	pragma_cuda_target_model(&m, NULL, 0);
	pragma_gpu_diagnose(p, &m, d);
}
