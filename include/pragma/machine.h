/*
 * What the CPU can do: static facts (vendor, ISA, caches, cores) read from
 * /proc and /sys, and measured peaks (FP32 FLOP/s, memory bandwidth) that
 * the roofline and the impossible_speed check use (DESIGN 3.4, 3.6).
 *
 * Peaks are maxima, not typical values: the best of several runs and, for
 * bandwidth, the best of several methods. A peak set too low would flag
 * honest kernels as impossibly fast.
 */
#ifndef PRAGMA_MACHINE_H
#define PRAGMA_MACHINE_H

#include <jansson.h>
#include <stdint.h>

#include "pragma/err.h"

#define PRAGMA_MACHINE_MAX_CACHES 8

struct pragma_cache_level {
	int level;
	char type[16];       /* Data, Instruction, Unified */
	uint64_t size;       /* bytes */
	int ways;            /* 0 when the kernel does not say */
	int line;            /* bytes */
	int shared_cpus;     /* logical CPUs sharing one instance */
};

struct pragma_machine {
	char vendor[32], cpu_model[128];
	int family, model, stepping;
	int cores;           /* CPUs this process may use (sched_getaffinity) */
	int online_cpus;
	char isa[512];       /* space-separated relevant flags, in a fixed order */
	int has_avx2, has_fma, has_avx512f;
	struct pragma_cache_level caches[PRAGMA_MACHINE_MAX_CACHES];
	int n_caches;        /* from /sys/devices/system/cpu/cpu0/cache/index* */
	uint64_t l1d_bytes, l2_bytes, llc_bytes;   /* one instance each; 0 if unknown */
	char kernel[128];    /* uname -r */
	int hypervisor;      /* the "hypervisor" cpuinfo flag is present */

	/* Measured (all 0 until measured). */
	int measured;
	char measured_at[32];        /* ISO 8601 UTC, "2026-11-22T10:00:00Z" */
	double peak_gflops;          /* FP32 FMA, all usable cores, best vector ISA */
	char peak_isa[16];           /* the ISA that reached it: "avx512", "avx2", "sse" */
	double peak_gflops_1core;
	double bw_read_gbs;          /* read-only sum */
	double bw_triad_gbs;         /* a = b + s*c, 24 bytes per float64 element */
	double bw_ntcopy_gbs;        /* copy with non-temporal stores, 16 bytes/element */
	double peak_gbs;             /* max of the three; GB = 1e9 bytes */
};

/* Static facts only (no benchmark; a few milliseconds). Fails (PRAGMA_E_ENV)
 * only when /proc/cpuinfo cannot be read; missing sysfs cache entries leave
 * n_caches 0 and the sizes 0. Clears the measured fields. */
int pragma_machine_detect(struct pragma_machine *m, struct pragma_err *err);

/* Run the microbenchmarks on a detected m (a few seconds, all usable cores)
 * and fill the measured fields. Fails (PRAGMA_E_ENV) when the buffers cannot
 * be allocated. The numbers are best-of: on a busy machine they come out low,
 * never high. */
int pragma_machine_measure(struct pragma_machine *m, struct pragma_err *err);

/* Detect, then take the measured peaks from <pragma_cache_dir()>/machine.json
 * when that file describes this machine (vendor, model string,
 * family/model/stepping, cores, isa, kernel). Otherwise — or with remeasure —
 * measure and rewrite the file atomically. A corrupt cache file is ignored
 * with a warning; a cache that cannot be written costs a warning, not a
 * failure. Concurrent callers measure one at a time (a lock file next to it). */
int pragma_machine_load(struct pragma_machine *m, int remeasure, struct pragma_err *err);

/* A new JSON object with every field of m (caller owns the reference). */
json_t *pragma_machine_json(const struct pragma_machine *m);

#endif
