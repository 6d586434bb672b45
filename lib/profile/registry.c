/*
 * The metric registry (DESIGN 3.6): the one list of metric names. The
 * compendium (knowledge/metrics/NAMESPACE.json) has an entry for each, and a unit
 * test holds the two to each other.
 */
#include <stdio.h>
#include <string.h>

#include "pragma/buf.h"
#include "pragma/profile.h"

#define T PRAGMA_COL_TIMING
#define P PRAGMA_COL_PERF
#define PAR PRAGMA_COL_PAR
#define R PRAGMA_COL_ROOFLINE
#define S PRAGMA_COL_STATIC
#define SIM PRAGMA_COL_SIM
#define G PRAGMA_COL_NCU
#define MCA PRAGMA_COL_MCA
#define HI PRAGMA_BETTER_HIGHER
#define LO PRAGMA_BETTER_LOWER
#define NE PRAGMA_BETTER_NEUTRAL

/* Timing-derived figures carry the noise of one run on a shared VM (10–30%,
 * DESIGN 4); counts and instruction mix are exact or nearly so. */
static const struct pragma_metric_def defs[] = {
	/* name, unit, collector, label, default, better, noise, per */
	{ "time.median_ms", "ms", T, "median time", 1, LO, 0.10, "call" },
	{ "time.min_ms", "ms", T, "min time", 0, LO, 0.10, "call" },
	{ "time.stdev_pct", "%", T, "time spread", 1, LO, 0.50, NULL },
	{ "time.speedup", "x", T, "speedup", 1, HI, 0.10, NULL },
	{ "time.baseline_ms", "ms", T, "baseline time", 0, NE, 0.10, "call" },

	{ "roof.pct_roof", "%", R, "% of roofline", 1, HI, 0.10, NULL },
	{ "roof.gflops", "GFLOP/s", R, "GFLOP/s", 1, HI, 0.10, NULL },
	{ "roof.pct_peak_flops", "%", R, "% of FLOP peak", 1, HI, 0.10, NULL },
	{ "roof.flops_over_peak", "x", R, "task FLOP rate over the FLOP peak: fewer FLOPs done than counted", 1, NE, 0.10, NULL },
	{ "roof.gbs", "GB/s", R, "GB/s (minimal bytes)", 1, HI, 0.10, NULL },
	{ "roof.pct_peak_bw", "%", R, "% of bandwidth roof", 1, HI, 0.10, NULL },
	{ "roof.ai", "FLOP/B", R, "arithmetic intensity", 1, NE, 0.01, NULL },
	{ "roof.ridge_ai", "FLOP/B", R, "ridge point", 0, NE, 0.01, NULL },
	{ "roof.peak_gflops", "GFLOP/s", R, "FLOP peak", 0, NE, 0.01, NULL },
	{ "roof.peak_gbs", "GB/s", R, "bandwidth roof (timing protocol)", 0, NE, 0.01, NULL },

	{ "static.fp_packed_pct", "%", S, "packed FP share", 1, HI, 0.02, NULL },
	{ "static.vector_bits", "bits", S, "vector width", 1, HI, 0.01, NULL },
	{ "static.fma", "count", S, "FMA instructions", 1, HI, 0.01, NULL },
	{ "static.fp_ops", "count", S, "FP arithmetic instructions", 0, NE, 0.01, NULL },
	{ "static.fp_mul", "count", S, "FP multiplies (not FMA)", 0, NE, 0.01, NULL },
	{ "static.fp_add", "count", S, "FP adds and subtracts (not FMA)", 0, NE, 0.01, NULL },
	{ "static.stack_spills", "count", S, "vector stack spills", 1, LO, 0.01, NULL },
	{ "static.nt_stores", "count", S, "streaming stores", 1, NE, 0.01, NULL },
	{ "static.prefetches", "count", S, "prefetch instructions", 0, NE, 0.01, NULL },
	{ "static.calls", "count", S, "calls", 1, LO, 0.01, NULL },
	{ "static.loops_vectorized", "count", S, "loops vectorized", 1, HI, 0.01, NULL },
	{ "static.loops_not_vectorized", "count", S, "loops not vectorized", 1, LO, 0.01, NULL },
	{ "static.instructions", "count", S, "static instructions", 0, NE, 0.01, NULL },
	{ "static.loads", "count", S, "loads", 0, NE, 0.01, NULL },
	{ "static.stores", "count", S, "stores", 0, NE, 0.01, NULL },
	{ "static.branches", "count", S, "branches", 0, NE, 0.01, NULL },
	{ "static.zmm", "count", S, "512-bit instructions", 0, NE, 0.01, NULL },
	{ "static.ymm", "count", S, "256-bit instructions", 0, NE, 0.01, NULL },
	{ "static.xmm", "count", S, "128-bit instructions", 0, NE, 0.01, NULL },
	{ "static.avx512", "count", S, "AVX-512 (EVEX) instructions", 0, NE, 0.01, NULL },
	{ "static.loops", "count", S, "loops in the code", 0, NE, 0.01, NULL },

	/* llvm-mca's model of the hottest loop of this very build: a model
	 * (all loads hit L1), exact for the same code and model. */
	{ "mca.cycles_per_iter", "cycles", MCA, "cycles per iteration (hot loop, model)", 1, NE, 0.02, NULL },
	{ "mca.port_cycles_per_iter", "cycles", MCA, "cycles per iteration with an ideal spread over the ports", 1, NE, 0.02, NULL },
	{ "mca.port_pressure_pct", "%", MCA, "busiest port's share of the cycles", 1, NE, 0.03, NULL },
	{ "mca.latency_pct", "%", MCA, "cycles the ports do not explain (dependency chains)", 1, LO, 0.05, NULL },
	{ "mca.flops_per_cycle", "FLOP/cycle", MCA, "FP operations per cycle (hot loop, model)", 1, HI, 0.02, NULL },
	{ "mca.peak_flops_per_cycle", "FLOP/cycle", MCA, "FP32 peak per cycle of the modeled core", 0, NE, 0.01, NULL },
	{ "mca.ipc", "ratio", MCA, "instructions per cycle (hot loop, model)", 0, NE, 0.02, NULL },
	{ "mca.uops_per_iter", "count", MCA, "micro-ops per iteration (hot loop)", 0, LO, 0.02, NULL },
	{ "mca.hot_loop_pct", "%", MCA, "hot loop's share of the executed instructions", 1, NE, 0.05, NULL },
	{ "mca.loops_analyzed", "count", MCA, "loops modeled", 0, NE, 0.01, NULL },

	{ "par.utilization", "%", PAR, "CPU utilization", 1, HI, 0.10, NULL },
	{ "par.busy_cores", "cores", PAR, "busy cores", 1, HI, 0.10, NULL },
	{ "par.threads", "threads", PAR, "threads given", 1, NE, 0.01, NULL },
	{ "par.cpu_ms", "ms", PAR, "CPU time", 0, LO, 0.10, "call" },

	{ "cpu.cycles", "count", P, "cycles", 1, LO, 0.05, "call" },
	{ "cpu.instructions", "count", P, "instructions", 1, LO, 0.02, "call" },
	{ "cpu.ipc", "ratio", P, "IPC", 1, NE, 0.05, NULL },
	{ "cpu.branches", "count", P, "branches", 0, NE, 0.02, "call" },
	{ "cpu.branch_misses", "count", P, "branch misses", 1, LO, 0.10, "call" },
	{ "cpu.branch_miss_rate", "%", P, "branch miss rate", 1, LO, 0.10, NULL },
	{ "cpu.l1d_misses", "count", P, "L1D misses", 1, LO, 0.05, "call" },
	{ "cpu.l1d_mpki", "MPKI", P, "L1D misses per 1000 instructions", 0, LO, 0.05, NULL },
	{ "cpu.llc_misses", "count", P, "LLC misses", 1, LO, 0.05, "call" },
	{ "cpu.llc_mpki", "MPKI", P, "LLC misses per 1000 instructions", 0, LO, 0.05, NULL },
	{ "topdown.retiring", "%", P, "retiring", 1, HI, 0.05, NULL },
	{ "topdown.bad_speculation", "%", P, "bad speculation", 1, LO, 0.10, NULL },
	{ "topdown.frontend_bound", "%", P, "frontend bound", 1, LO, 0.10, NULL },
	{ "topdown.backend_bound", "%", P, "backend bound", 1, LO, 0.05, NULL },

	{ "sim.instructions", "count", SIM, "instructions (sim)", 1, LO, 0.01, "call" },
	{ "sim.insn_per_flop", "ratio", SIM, "instructions per FLOP", 1, LO, 0.02, NULL },
	{ "sim.fp_packed_pct", "%", SIM, "packed FP share (executed)", 1, HI, 0.02, NULL },
	{ "sim.vector_bits", "bits", SIM, "vector width (executed)", 1, HI, 0.01, NULL },
	{ "sim.fma_pct", "%", SIM, "FMA share of FP (executed)", 0, HI, 0.02, NULL },
	{ "sim.fp_ops", "count", SIM, "FP instructions (executed)", 0, LO, 0.01, "call" },
	{ "sim.d1_miss_rate", "%", SIM, "D1 miss rate", 1, LO, 0.03, NULL },
	{ "sim.d1_misses", "count", SIM, "D1 misses", 1, LO, 0.03, "call" },
	{ "sim.ll_miss_rate", "%", SIM, "LL miss rate", 1, LO, 0.03, NULL },
	{ "sim.ll_misses", "count", SIM, "LL misses", 1, LO, 0.03, "call" },
	{ "sim.traffic_ratio", "x", SIM, "memory traffic / minimal bytes", 1, LO, 0.03, NULL },
	{ "sim.branch_mispredict_rate", "%", SIM, "branch mispredict rate", 1, LO, 0.05, NULL },
	{ "sim.branch_mispredicts", "count", SIM, "branch mispredicts", 1, LO, 0.05, "call" },
	{ "sim.threads", "threads", SIM, "threads simulated", 1, NE, 0.01, NULL },
	{ "sim.data_refs", "count", SIM, "data references", 0, LO, 0.01, "call" },
	{ "sim.branches", "count", SIM, "branches (sim)", 0, NE, 0.01, "call" },
	{ "sim.dram_bytes", "B", SIM, "bytes from memory", 0, LO, 0.03, "call" },
	{ "sim.i1_misses", "count", SIM, "I1 misses", 0, LO, 0.05, "call" },

	{ "gpu.duration_us", "us", G, "kernel duration", 1, LO, 0.05, "call" },
	{ "gpu.achieved_occupancy", "%", G, "achieved occupancy", 1, HI, 0.05, NULL },
	{ "gpu.theoretical_occupancy", "%", G, "theoretical occupancy", 0, HI, 0.01, NULL },
	{ "gpu.registers_per_thread", "count", G, "registers per thread", 1, NE, 0.01, NULL },
	{ "gpu.shared_mem_per_block", "B", G, "shared memory per block", 1, NE, 0.01, NULL },
	{ "gpu.tensor_pipe_pct", "%", G, "tensor pipe activity", 1, HI, 0.05, NULL },
	{ "gpu.dram_throughput_pct", "%", G, "DRAM throughput", 1, NE, 0.05, NULL },
	{ "gpu.sm_throughput_pct", "%", G, "SM throughput", 1, HI, 0.05, NULL },
	{ "gpu.l1_hit_rate", "%", G, "L1 hit rate", 0, HI, 0.05, NULL },
	{ "gpu.l2_hit_rate", "%", G, "L2 hit rate", 0, HI, 0.05, NULL },
	{ "gpu.warp_execution_efficiency", "%", G, "warp execution efficiency", 0, HI, 0.05, NULL },
	{ "gpu.stall_long_scoreboard_pct", "%", G, "stalls on long scoreboard", 0, LO, 0.05, NULL },
	/* The CUDA backend's further figures (lib/cuda: ptxas resource report,
	 * ncu), taken into the one list. */
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

const struct pragma_metric_def *pragma_metric_defs(size_t *n)
{
	*n = sizeof(defs) / sizeof(defs[0]);
	return defs;
}

const struct pragma_metric_def *pragma_metric_find(const char *name)
{
	for (size_t i = 0; i < sizeof(defs) / sizeof(defs[0]); i++)
		if (!strcmp(defs[i].name, name))
			return &defs[i];
	return NULL;
}

static const struct {
	unsigned bit;
	const char *name;
} collectors[] = {
	{ PRAGMA_COL_TIMING, "timing" }, { PRAGMA_COL_PERF, "perf" },	      { PRAGMA_COL_PAR, "par" },
	{ PRAGMA_COL_ROOFLINE, "roofline" }, { PRAGMA_COL_STATIC, "static" }, { PRAGMA_COL_SIM, "sim" },
	{ PRAGMA_COL_NCU, "ncu" }, { PRAGMA_COL_MCA, "mca" },
};

const char *pragma_collector_name(unsigned bit)
{
	for (size_t i = 0; i < sizeof(collectors) / sizeof(collectors[0]); i++)
		if (collectors[i].bit == bit)
			return collectors[i].name;
	return NULL;
}

int pragma_collectors_parse(const char *list, unsigned *mask, struct pragma_err *err)
{
	char buf[512];
	char *save = NULL;

	*mask = PRAGMA_COL_TIMING;
	snprintf(buf, sizeof(buf), "%s", list);
	for (char *tok = strtok_r(buf, ", ", &save); tok; tok = strtok_r(NULL, ", ", &save)) {
		unsigned bit = 0;

		if (!strcmp(tok, "all")) {
			*mask |= PRAGMA_COL_CPU_ALL;
			continue;
		}
		for (size_t i = 0; i < sizeof(collectors) / sizeof(collectors[0]); i++)
			if (!strcmp(collectors[i].name, tok))
				bit = collectors[i].bit;
		if (!bit) {
			pragma_err_set(err, PRAGMA_E_INPUT, "unknown collector '%s'", tok);
			pragma_err_hint(err, "collectors: perf, par, roofline, static, sim, mca (timing always runs; "
					     "ncu is for CUDA kernels)");
			return -1;
		}
		*mask |= bit;
	}
	return 0;
}
