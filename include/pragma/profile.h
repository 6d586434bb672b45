/*
 * Profiling a verified kernel (DESIGN 3.6): collectors that turn one
 * candidate into metrics in a single namespace, each with value, unit and
 * the collector that produced it.
 *
 *   timing    time.*    median/min/spread of the timed calls (always)
 *   perf      cpu.*, topdown.*, perf:EVENT   hardware counters in the harness
 *   par       par.*     CPU utilization from the task-clock software event
 *   roofline  roof.*    achieved GFLOP/s and GB/s against `pragma machine` peaks
 *   static    static.*  instruction mix of the disassembly, vectorization remarks
 *   sim       sim.*     valgrind callgrind cache and branch simulation (of the verified build
 *                       only: unavailable when valgrind cannot run it, e.g. AVX-512)
 *   mca       mca.*     llvm-mca's model of the verified build's hot loops: cycles per
 *                       iteration, the busiest port, latency vs throughput
 *   ncu       gpu.*     Nsight Compute (CUDA backend; registry and compendium only)
 *
 * A collector that cannot run says why (no PMU, perf_event_paranoid, no
 * valgrind, over budget) in the profile's unavailable list and produces no
 * metric at all — never zeros.
 *
 * One registry (pragma_metric_defs) is the single list that collectors,
 * the knowledge compendium, the diagnosis, --metrics and prompts use.
 */
#ifndef PRAGMA_PROFILE_H
#define PRAGMA_PROFILE_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "pragma/buf.h"
#include "pragma/err.h"
#include "pragma/machine.h"
#include "pragma/refdata.h"
#include "pragma/task.h"

/* ---- collectors ---- */

enum pragma_collector {
	PRAGMA_COL_TIMING = 1u << 0,
	PRAGMA_COL_PERF = 1u << 1,
	PRAGMA_COL_PAR = 1u << 2,
	PRAGMA_COL_ROOFLINE = 1u << 3,
	PRAGMA_COL_STATIC = 1u << 4,
	PRAGMA_COL_SIM = 1u << 5,
	PRAGMA_COL_NCU = 1u << 6,
	PRAGMA_COL_MCA = 1u << 7,
};
/* The CPU collectors a profile runs by default. */
#define PRAGMA_COL_CPU_ALL                                                                              \
	(PRAGMA_COL_TIMING | PRAGMA_COL_PERF | PRAGMA_COL_PAR | PRAGMA_COL_ROOFLINE | PRAGMA_COL_STATIC |  \
	 PRAGMA_COL_SIM | PRAGMA_COL_MCA)

/* "perf", "sim", ...; NULL for an unknown bit. */
const char *pragma_collector_name(unsigned bit);
/* Parse "perf,sim,static" into a mask (timing is always added). Unknown
 * names fail with PRAGMA_E_INPUT listing the known ones. */
int pragma_collectors_parse(const char *list, unsigned *mask, struct pragma_err *err);

/* ---- the metric registry ---- */

enum pragma_better { PRAGMA_BETTER_NEUTRAL, PRAGMA_BETTER_HIGHER, PRAGMA_BETTER_LOWER };

struct pragma_metric_def {
	const char *name;        /* "cpu.ipc" */
	const char *unit;        /* "%", "ms", "GB/s", "GFLOP/s", "count", "ratio", "bits", ... */
	unsigned collector;      /* one PRAGMA_COL_* bit */
	const char *label;       /* short words for tables and comparisons: "IPC" */
	int is_default;          /* shown without being asked for */
	enum pragma_better better; /* for comparisons; NEUTRAL when it depends */
	double noise;            /* relative change a comparison ignores (0.03 = 3%) */
	const char *per;         /* "call" when the value is per pk_forward call, else NULL */
};

/* All registered metrics, in display order. */
const struct pragma_metric_def *pragma_metric_defs(size_t *n);
/* By name; NULL when unknown. "perf:EVENT" names are not in the registry. */
const struct pragma_metric_def *pragma_metric_find(const char *name);

/* ---- a profile ---- */

struct pragma_metric {
	char name[96];
	double value;
	char unit[16];
	char source[16];         /* collector name */
};

enum pragma_remark_kind {
	PRAGMA_REMARK_VECTORIZED,     /* the compiler vectorized this loop */
	PRAGMA_REMARK_NOT_VECTORIZED, /* it tried and failed; text says why */
	PRAGMA_REMARK_CALL,           /* the kernel calls this function (libm, OpenMP runtime, ...) */
	PRAGMA_REMARK_LOOP,           /* llvm-mca's reading of one hot loop of the build */
};

/* A source-level fact from the static or mca collector. */
struct pragma_remark {
	enum pragma_remark_kind kind;
	int line;                /* in the kernel source; 0 unknown */
	char text[384];          /* "possible aliasing", "expf (inside an innermost loop: ...)", a loop's model */
	char code[384];          /* the source statement at line, its lines trimmed and joined */
	double runs;             /* a call: times it ran per kernel call (sim, this build); < 0 unknown */
};

struct pragma_unavailable {
	char collector[16];
	char reason[512];
};

struct pragma_profile {
	struct pragma_metric *metrics;
	size_t n, alloc;
	struct pragma_unavailable *unavail;
	size_t n_unavail;
	struct pragma_remark *remarks;
	size_t n_remarks;
	char **notes;            /* caveats and context, one sentence each */
	size_t n_notes;
	char source_name[64];    /* the kernel file's base name, for "kernel.c:31" */
	int threads;             /* threads the timed run was given; 0 unknown */
	int cores;               /* usable cores of the machine */
	double flops, bytes;     /* the task's counts (flops < 0: unknown) */
	double out_bytes;        /* of bytes, the outputs'; 0 unknown (picks the roof by traffic shape) */
	double timed_ms;         /* the timing session's time of this build, 0 unknown: rates of a
				  * profiled run far from it (busy cores) are not the timed kernel's */
};

#define PRAGMA_PROFILE_INIT { .flops = -1 }

void pragma_profile_init(struct pragma_profile *p);
void pragma_profile_release(struct pragma_profile *p);

/* Set a metric (replacing a previous value). The unit comes from the
 * registry; a name outside it (perf:EVENT) gets unit "count". A NaN or
 * infinite value is dropped: a collector that cannot compute a figure says
 * nothing rather than a wrong number. */
void pragma_profile_set(struct pragma_profile *p, const char *name, double value, const char *source);
/* 1 when the profiled run's median (time.median_ms) is far from the timing
 * session's time of the same build (timed_ms): more than 1.3x off either
 * way, so the rates derived from that run may not describe the timed
 * kernel. 0 when close or when either is unknown. */
int pragma_profile_far_from_timed(const struct pragma_profile *p);
/* 1 and *v when present, else 0. */
int pragma_profile_get(const struct pragma_profile *p, const char *name, double *v);
const struct pragma_metric *pragma_profile_find(const struct pragma_profile *p, const char *name);
__attribute__((format(printf, 3, 4)))
void pragma_profile_unavailable(struct pragma_profile *p, const char *collector, const char *fmt, ...);
/* The reason a collector did not run, or NULL. */
const char *pragma_profile_why(const struct pragma_profile *p, const char *collector);
__attribute__((format(printf, 2, 3)))
void pragma_profile_note(struct pragma_profile *p, const char *fmt, ...);
/* Adds a remark (or finds the same one) and returns it. */
struct pragma_remark *pragma_profile_remark(struct pragma_profile *p, enum pragma_remark_kind kind, int line,
					    const char *text, const char *code);

/* Is this metric shown: in the default set, or named in extra (registry
 * names and perf:EVENT; "all" shows everything)? */
int pragma_profile_shown(const char *name, const char *const *extra, size_t n_extra);

/* JSON: {"metrics": {name: {value, unit, source}}, "unavailable": {collector:
 * reason}, "remarks": [...], "notes": [...]} with the shown metrics only
 * (extra as above; NULL extra with n_extra 0 = the default set). */
json_t *pragma_profile_json(const struct pragma_profile *p, const char *const *extra, size_t n_extra);
/* Read back what pragma_profile_json wrote (for stored profiles). */
int pragma_profile_from_json(json_t *j, struct pragma_profile *p, struct pragma_err *err);
/* A human table of the shown metrics, grouped by collector, with the
 * unavailable collectors and their reasons. */
void pragma_profile_table(const struct pragma_profile *p, const char *const *extra, size_t n_extra,
			  struct pragma_buf *out);
/* One line leading with what DESIGN 4 found helps most: the roofline
 * fraction, the (executed) instruction mix, spills, streaming stores,
 * instructions per FLOP, busy cores. Nothing when none is known. The table
 * starts with it. */
void pragma_profile_headline(const struct pragma_profile *p, struct pragma_buf *out);
/* Format one value with its unit ("21.7 GB/s", "38.2%", "1.2M"). */
const char *pragma_metric_format(double v, const char *unit, char *buf, size_t len);

/* ---- running the collectors ---- */

struct pragma_profile_opts {
	const struct pragma_task *task;
	const char *kernel_src;          /* the candidate's C source file */
	const struct pragma_refset *sets; /* input sets (verified against the reference) */
	int n_sets;
	unsigned collectors;             /* PRAGMA_COL_* mask; 0: PRAGMA_COL_CPU_ALL */
	const char *const *extra;        /* extra metrics: registry names and perf:EVENT */
	size_t n_extra;
	int threads;                     /* 0: all usable cores */
	int warmup, reps;                /* timed run; 0: 2 and 10 */
	int warm;                        /* do not flush the cache between calls */
	double sim_budget_s;             /* 0: [profile] sim_budget from the config, else 300 s */
	const struct pragma_machine *machine; /* NULL: pragma_machine_load() */
	const char *const *flags;        /* extra compile flags (already allowed) */
	int check_outputs;               /* compare the timed run's outputs with the reference */
	int timeout_ms;                  /* the profiled run's deadline; 0: the collector's default */
	int no_sandbox;                  /* debugging only */
	/* The kernel's time in its timing session (0: unknown): the roofline
	 * uses it, so the fraction shown matches the time shown, and a
	 * profiled run far from it is flagged. */
	double time_ms;
};

/* Build the kernel, time it in the harness with counters around pk_forward,
 * and run the requested collectors. Returns 0 with p filled (collectors that
 * could not run are listed in p->unavail); -1 with err when the kernel does
 * not build (PRAGMA_E_NEGATIVE), fails in the harness or gives wrong
 * outputs (PRAGMA_E_NEGATIVE), or pragma cannot run at all. Extra names
 * that are neither registry metrics nor perf events of this CPU are left
 * out with a note (check them first with pragma_profile_check_extra() to
 * refuse them instead). */
int pragma_profile_run(const struct pragma_profile_opts *o, struct pragma_profile *p, struct pragma_err *err);

/* Check --metrics names: registry names, "all", and perf:EVENT with an
 * event the perf collector knows. Fails (PRAGMA_E_INPUT) listing the known
 * names. */
int pragma_profile_check_extra(const char *const *extra, size_t n_extra, struct pragma_err *err);

/* One run of a verified candidate in its backend's harness for a profile
 * (the CPU collectors, lib/profile/run.c; the CUDA profile,
 * lib/cuda/profile.c): warm-up and timed calls, each set's last timed
 * outputs kept (timed_NNN.npy) for the output check, holding the
 * measurement lock exclusive. What differs per backend is set here. */
struct pragma_profile_harness {
	const struct pragma_backend *backend; /* NULL: the CPU's */
	const char *so;
	const struct pragma_task *task;
	const struct pragma_refset *sets;
	int n_sets;
	const char *dir;                 /* request and outputs; made when missing */
	int warmup, reps, cold;
	uint64_t flush_bytes;            /* 0: the run's default (2 x LLC, at least 64 MiB) */
	int threads;                     /* 0: all usable cores */
	int sandbox;
	int final_settle_ms;             /* after the last call, check nothing changed */
	int timeout_ms;                  /* 0: the run's default */
	const char *const *preload;      /* sonames loaded before the sandbox; NULL: none */
	/* A tool the harness runs under (valgrind ..., ncu ...); NULL: none.
	 * Sandboxed, it gets the backend's limits without those on CPU time,
	 * file size and open files: a profiler replays kernels, writes its
	 * report and holds its own files. */
	const char *const *wrapper;
	json_t *request;                 /* further request members; borrowed, may be NULL */
	const char *what;                /* for the lock's waiters; NULL: "profile a kernel" */
};

struct pragma_run_result;

/* Returns as pragma_run_kernel(): 0 when the harness ran and answered
 * (r->ok says whether the kernel behaved; release r either way), -1 with
 * err when pragma could not run it. */
int pragma_profile_harness_run(const struct pragma_profile_harness *h, struct pragma_run_result *r,
			       struct pragma_err *err);

/* ---- the perf collector's pieces (lib/profile/perf.c), exposed for tests ---- */

enum pragma_pmu_kind {
	PRAGMA_PMU_GENERIC,      /* architectural events only, no top-down */
	PRAGMA_PMU_INTEL_TMA4,   /* Sandy Bridge .. Skylake/Cascade Lake: 4 slots per cycle, uop events */
	PRAGMA_PMU_INTEL_SLOTS,  /* Ice Lake and later: slots + topdown-* metric events */
	PRAGMA_PMU_AMD_ZEN,      /* Zen 1-3: no dispatch-slot events */
	PRAGMA_PMU_AMD_ZEN4,     /* 6 dispatch slots per cycle */
	PRAGMA_PMU_AMD_ZEN5,     /* 8 dispatch slots per cycle */
};

/* From the vendor string ("GenuineIntel", "AuthenticAMD") and family/model. */
enum pragma_pmu_kind pragma_pmu_classify(const char *vendor, int family, int model);
const char *pragma_pmu_kind_name(enum pragma_pmu_kind k);

/* An event as perf_event_open wants it. */
struct pragma_perf_event {
	char name[64];
	uint32_t type;           /* PERF_TYPE_* */
	uint64_t config;
};

/* Look up a named event for this CPU: perf's generic names (cycles,
 * instructions, branch-misses, L1-dcache-load-misses, task-clock, ...), the
 * vendor events in our table (ls_dmnd_fills_from_sys.dram_io_near, ...),
 * and raw "rXXXX" codes. 0, or -1 when unknown. */
int pragma_perf_event_lookup(enum pragma_pmu_kind k, const char *name, struct pragma_perf_event *ev);
/* The names pragma_perf_event_lookup knows for this CPU, comma-separated. */
void pragma_perf_event_names(enum pragma_pmu_kind k, struct pragma_buf *out);

/* The "perf" section of a harness request: the counter groups for the
 * default set on this CPU, plus the raw extra events (perf:EVENT in extra),
 * plus the software group (task-clock) when with_par. with_hw 0 leaves the
 * hardware groups out (no PMU). */
json_t *pragma_perf_request(enum pragma_pmu_kind k, int with_hw, int with_par, const char *const *extra,
			    size_t n_extra, struct pragma_err *err);

/* Turn the harness's "perf" answer into metrics (cpu.*, topdown.*, par.*,
 * perf:EVENT), per call. threads: the threads the kernel was given, for
 * par.utilization. Groups that failed become unavailable reasons with a
 * hint (ENOENT: no PMU; EACCES: perf_event_paranoid). */
void pragma_perf_derive(enum pragma_pmu_kind k, json_t *answer, int threads, struct pragma_profile *p);

/* The reason hardware counters cannot be used here, or NULL when a probe
 * (cycles, user space only, this thread) opens. Static buffer. */
const char *pragma_perf_probe(void);

/* ---- the sim collector's pieces (lib/profile/sim.c) ---- */

/* valgrind arguments for the machine's cache geometry ("--I1=32768,8,64",
 * "--D1=...", "--LL=..."); n_out receives how many (0..3). */
int pragma_sim_cache_args(const struct pragma_machine *m, char out[3][64]);
/* Parse a callgrind.out file's text: events and totals. Sets sim.* metrics,
 * divided by calls. line_bytes: the LL line size for sim.dram_bytes. */
int pragma_sim_parse(const char *text, int calls, int line_bytes, struct pragma_profile *p,
		     struct pragma_err *err);

/* The dynamic instruction mix: callgrind's per-instruction counts
 * (--dump-instr=yes) joined with the disassembly of the same .so (so_name,
 * as callgrind names the object). Sets sim.fp_packed_pct, sim.fp_ops,
 * sim.fma_pct, sim.vector_bits and notes naming the hottest source lines.
 * -1 when the output has no per-instruction counts for that object. */
int pragma_sim_parse_mix(const char *callgrind_text, const char *objdump_text, const char *so_name, int calls,
			 struct pragma_profile *p);

/* ---- the static collector's pieces (lib/profile/static.c) ---- */

/* Instruction mix from `objdump -d -l -w [--inlines] [--no-show-raw-insn]`
 * text of the kernel's .so, counting only the kernel's own functions (not
 * crt stubs or PLT entries). Sets static.* metrics, a call remark per call
 * saying where it is (inside an innermost loop, in an outer loop with its
 * depth, or not in a loop: the top level or an OpenMP parallel region), and
 * a note locating vector spills (a register stored to a fixed stack slot
 * and loaded back from it; stores into stack arrays are not spills).
 * Loops are the natural loops of each function's control flow. */
int pragma_static_parse_objdump(const char *text, struct pragma_profile *p);
/* A "not vectorized" remark on a line whose code is packed vector
 * instructions (intrinsics) says so: the compiler speaks of its own
 * auto-vectorization, and the loop is vector code already. objdump_text is
 * the build's disassembly (pragma_static_parse_objdump's). */
void pragma_static_mark_vector_loops(const char *objdump_text, struct pragma_profile *p);

/* Vectorization remarks from gcc -fopt-info-vec-all or clang
 * -Rpass=loop-vectorize -Rpass-missed=loop-vectorize
 * -Rpass-analysis=loop-vectorize output, for the file named source_name;
 * source (may be NULL) gives the code of each line. */
int pragma_static_parse_remarks(const char *text, const char *source_name, const char *source,
				struct pragma_profile *p);

/* ---- the mca collector's pieces (lib/profile/mca.c) ---- */

/* The llvm-mca model (-mcpu) for this machine's cores, this code
 * (code_avx512: the loops hold AVX-512 instructions) and this llvm-mca
 * (version: its major version; Zen 4 has a model from 17 on). caveat (may
 * be empty) says how the model differs from the machine: llvm-mca 14 has
 * no Zen 4 model (an AVX-512 loop is modeled as Ice Lake server, and Zen 4
 * runs each 512-bit operation on its 256-bit units), its Zen 3 model gives
 * FMA half its throughput. m NULL or unknown: a generic choice by ISA. */
void pragma_mca_cpu(const struct pragma_machine *m, int code_avx512, int version, char *cpu, size_t len,
		    char *caveat, size_t clen);

/* One loop given to llvm-mca. */
struct pragma_mca_loop {
	char fn[64];                 /* its function */
	unsigned long addr;          /* its header's address in the .so */
	int line, line_lo, line_hi;  /* kernel source lines (line: most of its instructions) */
	int depth;                   /* nesting depth in its function (1 outermost) */
	int outer_depth;             /* the loop depth its function runs at (helpers, OpenMP regions) */
	int n_insns, branches, calls;
	double weight;               /* measured: % of the kernel's executed instructions; else a rank */
	int measured;                /* weight from callgrind's counts of this very build */
	double flops;                /* FP operations per iteration (lanes; an FMA is 2) */
	int avx512;                  /* holds AVX-512 instructions */
	char *input;                 /* llvm-mca's input (malloc'ed) */
	int dropped;                 /* instructions llvm-mca could not read, left out */
	/* from llvm-mca */
	int analyzed;
	double cycles;               /* simulated cycles per iteration */
	double resource_cycles;      /* Block RThroughput: what the ports alone need */
	double ipc, uops;            /* uops per iteration */
	int dispatch_width;
	char resource[48];           /* the busiest resource (llvm-mca's name) */
	char resource_desc[64];      /* what it executes ("loads", "FP/vector pipe") */
	double resource_load;        /* its cycles per iteration */
	char bound[16];              /* "latency", "port", "dispatch" */
	double res_pct, dep_pct;     /* bottleneck analysis: % of cycles held up by resources, by dependencies */
	char pressed[48];            /* the resource the bottleneck analysis names most */
	char chain[96];              /* loop-carried chains: the accumulators of the body, else the
	                              * register dependency llvm-mca names */
	char error[200];             /* why it was not analyzed */
};

struct pragma_mca_plan {
	struct pragma_mca_loop *loops; /* the hottest first */
	size_t n;
	size_t n_found, n_innermost;  /* loops in the code */
	int measured;                 /* weights from callgrind's counts of this build */
	int iterations;               /* -iterations for llvm-mca */
	int version;                  /* llvm-mca's major version */
	char cpu[32];
	char caveat[256];
};

/* Choose up to max_loops innermost loops of the kernel's code, hottest
 * first (by callgrind's per-instruction counts of the same .so when
 * callgrind_text is given and they cover a loop, else statically: deepest
 * nesting, vector bodies before their scalar remainders, FP work and
 * OpenMP regions first), and write llvm-mca's input for each.
 * -1 when the code has no loops. */
int pragma_mca_plan(const char *objdump_text, const char *source_name, const char *callgrind_text,
		    const char *so_name, const struct pragma_machine *m, int version, int max_loops,
		    struct pragma_mca_plan *plan);
void pragma_mca_plan_release(struct pragma_mca_plan *plan);
/* Drop the input lines llvm-mca refused (its stderr: "<file>:12:5: error:
 * ...", or "unsupported instruction" with the instruction). 1 when lines
 * were dropped (run it again), 0 when nothing could be matched. */
int pragma_mca_fix_input(struct pragma_mca_loop *l, const char *stderr_text);
/* Parse llvm-mca's text output (with -bottleneck-analysis) for one loop. */
int pragma_mca_parse(const char *text, struct pragma_mca_loop *l, struct pragma_err *err);
/* mca.* from the hottest analyzed loop, a loop remark for each analyzed
 * loop, and the notes (model, caveats, what a loop's figures assume). */
void pragma_mca_report(const struct pragma_mca_plan *plan, const char *source_name, struct pragma_profile *p);

/* Why valgrind cannot run this build, or NULL: AVX-512 instructions in the
 * .so's own code (from its disassembly) on a machine that has AVX-512 (so
 * the native run may execute them; valgrind 3.x decodes none). Static
 * buffer (thread-local). */
const char *pragma_sim_refuse(const char *objdump_text, const char *source_name, const struct pragma_machine *m);

/* ---- the roofline (lib/profile/roofline.c) ---- */

/* roof.* from the task's FLOPs and minimal bytes, the median time and the
 * machine's measured peaks. Unavailable (with a reason) when the machine
 * has no measured peaks. */
void pragma_roofline(double flops, double bytes, double median_ms, const struct pragma_machine *m,
		     struct pragma_profile *p);

#endif
