/*
 * Metrics only the CUDA backend produces and that the profiler's registry
 * (lib/profile/registry.c) does not list yet: the ptxas resource report
 * (static.gpu_*) and the ncu figures beyond the registry's first gpu.*
 * set. Same fields as the registry; the registry's pragma_metric_find()
 * is meant to fall back to pragma_cuda_metric_def(), or take these rows
 * verbatim (docs/gpu.md, "Metrics").
 */
#include <string.h>

#include "pragma/cuda.h"

#define S PRAGMA_COL_STATIC
#define G PRAGMA_COL_NCU
#define HI PRAGMA_BETTER_HIGHER
#define LO PRAGMA_BETTER_LOWER
#define NE PRAGMA_BETTER_NEUTRAL

static const struct pragma_metric_def defs[] = {
	/* name, unit, collector, label, default, better, noise, per */
	{ "static.gpu_kernels", "count", S, "CUDA kernels (__global__)", 1, NE, 0.01, NULL },
	{ "static.gpu_registers", "count", S, "registers per thread (ptxas, max)", 1, NE, 0.01, NULL },
	{ "static.gpu_smem_bytes", "B", S, "static shared memory per block (ptxas, max)", 1, NE, 0.01, NULL },
	{ "static.gpu_stack_bytes", "B", S, "stack frame per thread (ptxas, max)", 0, LO, 0.01, NULL },
	{ "static.gpu_spill_bytes", "B", S, "register spill bytes per thread (ptxas, max)", 1, LO, 0.01, NULL },

	{ "gpu.kernels", "count", G, "kernel launches per call", 1, LO, 0.01, "call" },
	{ "gpu.dram_bytes", "B", G, "DRAM bytes moved", 0, LO, 0.03, "call" },
	{ "gpu.dram_gbs", "GB/s", G, "DRAM bandwidth achieved", 1, HI, 0.05, NULL },
	{ "gpu.block_size", "threads", G, "threads per block (longest launch)", 0, NE, 0.01, NULL },
	{ "gpu.grid_size", "blocks", G, "blocks per grid (longest launch)", 0, NE, 0.01, NULL },
	{ "gpu.waves", "ratio", G, "waves per SM (longest launch)", 0, NE, 0.01, NULL },
	{ "gpu.sectors_per_request", "ratio", G, "32-byte sectors per global request", 0, LO, 0.02, NULL },
	{ "gpu.smem_bank_conflicts", "count", G, "shared-memory bank conflicts", 0, LO, 0.05, "call" },
	{ "gpu.launch_gap_pct", "%", G, "time outside kernels", 1, LO, 0.10, NULL },
	{ "gpu.stall_short_scoreboard_pct", "%", G, "stalls on short scoreboard", 0, LO, 0.05, NULL },
	{ "gpu.stall_barrier_pct", "%", G, "stalls at barriers", 0, LO, 0.05, NULL },
	{ "gpu.stall_mio_throttle_pct", "%", G, "stalls on MIO throttle", 0, LO, 0.05, NULL },
	{ "gpu.stall_lg_throttle_pct", "%", G, "stalls on LG throttle", 0, LO, 0.05, NULL },
	{ "gpu.stall_math_pipe_throttle_pct", "%", G, "stalls on math pipe throttle", 0, LO, 0.05, NULL },
	{ "gpu.stall_wait_pct", "%", G, "stalls on fixed-latency waits", 0, LO, 0.05, NULL },
	{ "gpu.stall_not_selected_pct", "%", G, "eligible but not selected", 0, NE, 0.05, NULL },
	{ "gpu.stall_no_instruction_pct", "%", G, "stalls on instruction fetch", 0, LO, 0.05, NULL },
	{ "gpu.stall_membar_pct", "%", G, "stalls on memory barriers", 0, LO, 0.05, NULL },
	{ "gpu.stall_branch_resolving_pct", "%", G, "stalls on branch resolution", 0, LO, 0.05, NULL },
	{ "gpu.stall_tex_throttle_pct", "%", G, "stalls on TEX throttle", 0, LO, 0.05, NULL },
};

const struct pragma_metric_def *pragma_cuda_metric_defs(size_t *n)
{
	*n = sizeof(defs) / sizeof(defs[0]);
	return defs;
}

const struct pragma_metric_def *pragma_cuda_metric_def(const char *name)
{
	const struct pragma_metric_def *d = pragma_metric_find(name);

	if (d)
		return d;
	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
		if (!strcmp(defs[i].name, name))
			return &defs[i];
	return NULL;
}
