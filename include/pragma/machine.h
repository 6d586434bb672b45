/*
 * What the CPU can do: static facts (vendor, ISA, caches, cores, clock)
 * read from /proc and /sys, its micro-architecture decoded from a table,
 * and measured peaks (FP32 FLOP/s, memory bandwidth) that the roofline and
 * the impossible_speed check use (DESIGN 3.4, 3.6).
 *
 * Two bandwidth figures, kept apart (DESIGN 3.6):
 *  - peak_gbs, the highest bandwidth ever measured on this machine (best of
 *    several microbenchmarks and runs): the impossible_speed check compares
 *    kernels against it, so it must never be too low — a low one accuses
 *    honest kernels.
 *  - roof_gbs, the best a streaming kernel reaches under the timing protocol
 *    kernels are judged by (pk_forward kernels timed in pragma-harness, cold
 *    cache, all usable cores, bytes counted like a task's minimal bytes):
 *    the roof the prompts and "% of roof" use. A roof no kernel can reach
 *    sends a model after headroom that does not exist.
 */
#ifndef PRAGMA_MACHINE_H
#define PRAGMA_MACHINE_H

#include <jansson.h>
#include <stdint.h>

#include "pragma/buf.h"
#include "pragma/err.h"

#define PRAGMA_MACHINE_MAX_CACHES 8
#define PRAGMA_MACHINE_MAX_ROOFS 8

struct pragma_cache_level {
	int level;
	char type[16];       /* Data, Instruction, Unified */
	uint64_t size;       /* bytes */
	int ways;            /* 0 when the kernel does not say */
	int line;            /* bytes */
	int shared_cpus;     /* logical CPUs sharing one instance */
};

/* One streaming kernel timed under the protocol (pragma_machine_measure_roofs). */
struct pragma_roof_method {
	char name[16];       /* "read", "copy", "ntcopy", "triad", "scale" */
	char what[96];       /* "s = sum(x)", "y = x, ordinary stores", ... */
	double bytes;        /* counted per call: inputs read once + outputs written once */
	double median_ms;    /* best median over the runs */
	double min_ms;       /* fastest single call */
	double gbs;          /* bytes / median_ms: the figure the roof is taken from */
	int calls;           /* timed calls behind the median */
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
	double cpu_mhz;      /* /proc/cpuinfo "cpu MHz" of CPU 0 now (in a VM: what the host says); 0 unknown */
	double max_mhz;      /* cpufreq cpuinfo_max_freq; 0 without cpufreq (most VMs) */
	double base_mhz;     /* cpufreq base_frequency (intel_pstate); 0 unknown */

	/* Measured (all 0 until measured). */
	int measured;
	char measured_at[32];        /* ISO 8601 UTC, "2026-11-22T10:00:00Z" */
	double peak_gflops;          /* FP32 FMA, all usable cores, best vector ISA */
	char peak_isa[16];           /* the ISA that reached it: "avx512", "avx2", "sse" */
	double peak_gflops_1core;
	double bw_read_gbs;          /* read-only sum */
	double bw_triad_gbs;         /* a = b + s*c, 24 bytes per float64 element */
	double bw_ntcopy_gbs;        /* copy with non-temporal stores, 16 bytes/element */
	/* The highest bandwidth ever measured here (GB = 1e9 bytes): the
	 * microbenchmarks above, the protocol roofs below, and an earlier
	 * measurement of this machine if it was higher. For impossible_speed only. */
	double peak_gbs;
	char peak_gbs_how[128];      /* which measurement gave it */

	/* Bandwidth under the timing protocol (DESIGN 3.6): the roof for prompts
	 * and "% of roof". roof_gbs 0 when it could not be measured (roof_why). */
	struct pragma_roof_method roofs[PRAGMA_MACHINE_MAX_ROOFS];
	int n_roofs;
	double roof_gbs;             /* best of roofs[].gbs */
	char roof_method[16];        /* which one */
	char roof_protocol[256];     /* how they were timed, in words */
	char roof_why[256];          /* why roof_gbs is 0, else "" */
};

/* The micro-architecture behind a vendor/family/model, from a table with
 * sources (lib/machine/uarch.c). Latencies in core cycles, load-to-use; the
 * L3 figure is approximate (it depends on the mesh or CCX distance). */
struct pragma_uarch {
	const char *name;            /* "Zen 4" */
	const char *parts;           /* "EPYC 9004 Genoa, Ryzen 7000 Raphael, ..." */
	int vector_bits;             /* widest vector ISA the core runs (512: AVX-512) */
	int datapath_bits;           /* width of its FP execution units */
	const char *vector_note;     /* how the widest vectors execute */
	int fma_units;               /* FMA pipes per core, each datapath_bits wide */
	const char *fma_note;        /* SKU differences and the like; may be NULL */
	int fma_latency;             /* cycles */
	const char *l1_latency, *l2_latency, *l3_latency;   /* cycles, as the sources give them */
	const char *source;          /* where these numbers come from */
};

/* The table row for this CPU, or NULL when pragma does not know it (an
 * unknown CPU is said to be unknown, never guessed). Pure lookup. */
const struct pragma_uarch *pragma_uarch_lookup(const char *vendor, int family, int model, int stepping);

/* The decoded micro-architecture and the clock, in a few lines for people
 * and prompts ("- " bullets); says so when the CPU or its clock is unknown. */
void pragma_machine_uarch_text(const struct pragma_machine *m, struct pragma_buf *out);

/* The bandwidth roof for "% of roof": roof_gbs when measured, else peak_gbs
 * (then *fallback is set, when given). 0 when neither is known. */
double pragma_machine_bw_roof(const struct pragma_machine *m, int *fallback);

/* The bandwidth roof for a task that moves bytes, out_bytes of them
 * written (0: unknown). A read-only stream (writes under 1/8 of the bytes:
 * a reduction) cannot use streaming stores, and under the protocol it
 * reaches less than a copy does: its roof is the read kernel's. Anything
 * else gets the best kernel's (roof_gbs). *method names the kernel ("read",
 * "ntcopy", or "peak" for the fallback); *fallback as pragma_machine_bw_roof. */
double pragma_machine_bw_roof_for(const struct pragma_machine *m, double bytes, double out_bytes, const char **method,
				  int *fallback);

/* "how the roof was measured" in one line (for prompts and reports). */
void pragma_machine_roof_text(const struct pragma_machine *m, struct pragma_buf *out);

/* Static facts only (no benchmark; a few milliseconds). Fails (PRAGMA_E_ENV)
 * only when /proc/cpuinfo cannot be read; missing sysfs cache entries leave
 * n_caches 0 and the sizes 0. Clears the measured fields. */
int pragma_machine_detect(struct pragma_machine *m, struct pragma_err *err);

/* Run the microbenchmarks on a detected m (a few seconds, all usable cores)
 * and fill the measured fields, then the protocol roofs
 * (pragma_machine_measure_roofs). Fails (PRAGMA_E_ENV) when the buffers
 * cannot be allocated; roofs that cannot be measured (no compiler, no
 * harness) leave roof_gbs 0 with roof_why, not a failure. The numbers are
 * best-of: on a busy machine they come out low, never high. */
int pragma_machine_measure(struct pragma_machine *m, struct pragma_err *err);

/* The protocol roofs alone: streaming kernels (read-only sum, copy with
 * ordinary stores, copy with non-temporal stores, triad, scale) compiled like
 * candidates (-O3 -march=native -fopenmp) and timed in pragma-harness in
 * time mode with the cold-cache flush, all usable cores, several runs; fills
 * roofs[], roof_gbs, roof_method, roof_protocol and raises peak_gbs when a
 * roof beats it. Work files go under <cache dir>/roofs-*. -1 with err
 * (PRAGMA_E_ENV) when a kernel cannot be built or run. */
int pragma_machine_measure_roofs(struct pragma_machine *m, struct pragma_err *err);

/* Detect, then take the measured peaks from <pragma_cache_dir()>/machine.json
 * when that file describes this machine (vendor, model string,
 * family/model/stepping, cores, isa, kernel). Otherwise — or with remeasure —
 * measure and rewrite the file atomically. A corrupt cache file is ignored
 * with a warning; a cache that cannot be written costs a warning, not a
 * failure. Concurrent callers measure one at a time (a lock file next to it). */
int pragma_machine_load(struct pragma_machine *m, int remeasure, struct pragma_err *err);

/* Detect, then take the measured peaks from the cache file only: never
 * measures. -1 (PRAGMA_E_ENV) when there is no valid cache for this machine
 * (for displays that must not start a benchmark). */
int pragma_machine_cached(struct pragma_machine *m, struct pragma_err *err);

/* A new JSON object with every field of m (caller owns the reference). */
json_t *pragma_machine_json(const struct pragma_machine *m);

#endif
