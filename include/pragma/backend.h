/*
 * Backends: one interface per target (DESIGN 3.11, lib/backend). A backend is
 * everything that differs between running a candidate on the CPU and on a
 * GPU — which compiler and flags, what the object may import, which harness
 * runs it and under which limits, what the baseline is, which collectors
 * profile it, what the prompts say about the hardware. Everything above it
 * (verify, the timing layer, the loop, profile, optimize, bench, report)
 * takes a backend and never asks which one it has.
 *
 * Adding a backend (OpenCL on PoCL, HIP, ...) is one file in lib/backend/
 * that fills a struct pragma_backend, its harness in runtime/ (a main()
 * that hands the shared protocol, runtime/protocol.c, a struct harness_ops
 * of what differs: where tensors live, how a call is timed and checked, the
 * sandbox; runtime/protocol.h), and one line in the registry
 * (lib/backend/backend.c). DESIGN.md §3.11 lists the members; each one's contract is
 * its comment below.
 */
#ifndef PRAGMA_BACKEND_H
#define PRAGMA_BACKEND_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "pragma/buf.h"
#include "pragma/err.h"

struct pragma_task;
struct pragma_refset;
struct pragma_flags;
struct pragma_symbols;
struct pragma_run_opts;
struct pragma_rlimits;
struct pragma_timing_opts;
struct pragma_baseline;
struct pragma_profile;
struct pragma_profile_opts;
struct pragma_diagnosis;
struct pragma_machine;

/* One line of `pragma doctor`. */
struct pragma_check {
	char name[32];               /* "cuda nvcc" */
	char level[8];               /* "ok", "warn" or "fail" */
	char detail[640];
	char hint[512];
};

/* What the hardware can do, for the impossible-speed check and rates. The
 * roofline's roof (what a kernel reaches timed by the protocol) is the
 * machine's roof_gbs (pragma/machine.h), not a peak. */
struct pragma_peaks {
	double max_gbs;              /* the highest bandwidth ever measured (impossible_speed) */
	double gflops;               /* FP32 compute peak */
	uint64_t cache_bytes;        /* the last-level cache (warm timing of data that fits may beat DRAM) */
	char source[256];            /* "measured by pragma machine", "table: NVIDIA H100 datasheet" */
};

/* How a candidate is built. */
struct pragma_backend_build {
	const char *compiler;        /* NULL: the backend's default ($PRAGMA_CC, gcc; nvcc) */
	const char *const *flags;    /* allowed extra flags, NULL-terminated or NULL */
	int confine;                 /* compile in the jail (untrusted sources) */
};

struct pragma_backend {
	const char *name;            /* "cpu", "cuda" */
	const char *ext;             /* the candidate file's extension: ".c", ".cu" */
	const char *lang;            /* the Coder's code fence tag: "c", "cuda" */
	const char *prompt_suffix;   /* prompts/<name><suffix>.md is used where it exists; NULL: none */
	const char *raw_metric_prefix; /* "perf:EVENT" / "ncu:METRIC" names --metrics accepts */
	unsigned collectors;         /* the profile collectors it offers (PRAGMA_COL_*) */
	int init_entries;            /* constructor entries its toolchain puts in every object */

	/* Can kernels run here? 0, or -1 with PRAGMA_E_ENV saying why
	 * ("no CUDA device: ..."). Static checks work either way. */
	int (*require)(struct pragma_err *err);
	/* Its `pragma doctor` lines (NULL: none beyond the common ones); fills
	 * up to cap, returns how many. */
	int (*doctor)(struct pragma_check *c, int cap);
	/* The peaks rates and the impossible-speed check are judged against. */
	int (*peaks)(struct pragma_peaks *pk, struct pragma_err *err);

	/* "gcc 12.2.0", "nvcc 13.0" (compiler may be NULL: the default). */
	const char *(*compiler_version)(const char *compiler);
	/* The allowed flags: the source's "// pragma:flags" lines, then extra
	 * (the caller's, whitespace-separated; may be NULL). A refused flag is
	 * PRAGMA_E_NEGATIVE naming it. atol/rtol: the task's tolerance, for
	 * flags that trade accuracy (fast math). */
	int (*flags)(struct pragma_flags *f, const char *src, size_t len, const char *extra, double atol, double rtol,
		     struct pragma_err *err);
	/* Build src into a shared object, cached by everything the object
	 * depends on; so_path receives it, log the compiler's output. A failed
	 * compile is PRAGMA_E_NEGATIVE, a missing compiler PRAGMA_E_ENV. */
	int (*build)(const char *src, const struct pragma_backend_build *b, struct pragma_buf *so_path,
		     struct pragma_buf *log, struct pragma_err *err);
	/* Read the object's imports into syms and check them: 0 allowed; -1
	 * with PRAGMA_E_NEGATIVE naming the first forbidden one. */
	int (*check_imports)(const char *so_path, struct pragma_symbols *syms, struct pragma_err *err);
	/* A summary of the compiler's log worth showing (ptxas resources);
	 * NULL when the backend has none. */
	void (*compile_report)(const char *log, const char *indent, struct pragma_buf *out);
	/* The same as JSON (the --json "resources" member); NULL: none. */
	json_t *(*compile_report_json)(const char *log);

	/* The harness that runs its objects (same protocol for all). */
	int (*harness)(struct pragma_buf *path, struct pragma_err *err);
	/* Libraries to load before the sandbox: out[] gets up to cap-1 names
	 * (borrowed) and a NULL; returns how many. */
	int (*preload)(const struct pragma_symbols *syms, const char **out, int cap);
	/* The rlimits a sandboxed run gets. */
	void (*limits)(const struct pragma_run_opts *o, struct pragma_rlimits *l);
	/* Extra environment of its harness ("K=V"), NULL-terminated or NULL. */
	const char *const *env;

	/* The PyTorch timing script for KernelBench baselines (the bridge's
	 * `time` command line); note says where it runs when that is not the
	 * candidate's device. */
	int (*torch_script)(struct pragma_buf *path, char *note, size_t len, struct pragma_err *err);
	/* The task's baseline by the timing protocol. */
	int (*baseline)(const struct pragma_task *t, const struct pragma_refset *sets, int n_sets,
			const struct pragma_timing_opts *o, struct pragma_baseline *b, struct pragma_err *err);

	/* The second, named baseline (torch.compile where the backend's
	 * PyTorch has it) for a KernelBench task: {"name", "kind",
	 * "median_ms", "speedup" against cand_ms, "config", ...} or {"name",
	 * "unavailable": why}. */
	json_t *(*second_baseline)(const struct pragma_task *t, int n_sets, const struct pragma_timing_opts *o,
				   double cand_ms);

	/* Profile a verified candidate with its collectors. */
	int (*profile)(const struct pragma_profile_opts *o, struct pragma_profile *p, struct pragma_err *err);
	/* Its diagnosis rules (m: the CPU's model; may be NULL). */
	void (*diagnose)(const struct pragma_profile *p, const struct pragma_machine *m, struct pragma_diagnosis *d);

	/* Template variables of the Coder/Conductor prompts that describe the
	 * target: machine, kernel_h, compile_cmd, and the backend's own (cuda_abi,
	 * fast_math, ...), set in vars. baseline_ms: the baseline's time (0
	 * unknown). */
	void (*prompt_vars)(json_t *vars, const struct pragma_task *t, const struct pragma_machine *m,
			    double baseline_ms);
};

extern const struct pragma_backend pragma_backend_cpu;
extern const struct pragma_backend pragma_backend_cuda;

/* All registered backends, NULL-terminated. */
const struct pragma_backend *const *pragma_backends(void);
/* By name ("cpu"/"c", "cuda"/"gpu"); NULL and PRAGMA_E_INPUT listing the
 * known names otherwise. */
const struct pragma_backend *pragma_backend_find(const char *name, struct pragma_err *err);
/* The backend whose extension a kernel file has; the CPU otherwise. */
const struct pragma_backend *pragma_backend_for_path(const char *path);
/* b, or the CPU backend when b is NULL (the default everywhere). */
const struct pragma_backend *pragma_backend_or_default(const struct pragma_backend *b);

#endif
