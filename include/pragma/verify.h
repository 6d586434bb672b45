/*
 * The Verifier (DESIGN 3.4, 3.5): decides what counts.
 *
 *   source check → flags → compile (jailed) → imported-symbol check →
 *   reference data → sandboxed harness run over the input sets → compare in
 *   this process → (eval) interleaved timing against the baseline → timed
 *   outputs checked → impossible-speed check.
 *
 * Every rejection is one category (enum pragma_vstatus) and one line a
 * Conductor can act on. The library never prints or exits; the verdict
 * carries everything the CLI and the optimization loop need.
 */
#ifndef PRAGMA_VERIFY_H
#define PRAGMA_VERIFY_H

#include <jansson.h>
#include <stdint.h>

#include "pragma/buf.h"
#include "pragma/err.h"
#include "pragma/refdata.h"
#include "pragma/task.h"
#include "pragma/tensor.h"
#include "pragma/timing.h"

enum pragma_vstatus {
	PRAGMA_V_OK = 0,
	PRAGMA_V_INVALID_SOURCE,     /* empty, too large, not UTF-8 text, NUL bytes */
	PRAGMA_V_FORBIDDEN_FLAG,     /* a compiler flag off the allow-list */
	PRAGMA_V_COMPILE_ERROR,
	PRAGMA_V_LINK_FORBIDDEN,     /* imports a forbidden symbol or library */
	PRAGMA_V_CRASH,              /* a fatal signal */
	PRAGMA_V_TIMEOUT,            /* wall-clock deadline or CPU limit */
	PRAGMA_V_MEMORY_LIMIT,       /* allocation failed under the limit, OOM */
	PRAGMA_V_KERNEL_ERROR,       /* pk_forward returned nonzero */
	PRAGMA_V_FORBIDDEN_SYSCALL,  /* seccomp trapped a system call */
	PRAGMA_V_MODIFIED_INPUT,     /* an input changed (during or after a call) */
	PRAGMA_V_WORK_AFTER_RETURN,  /* outputs changed after pk_forward returned */
	PRAGMA_V_UNWRITTEN_OUTPUT,   /* elements still hold the poison */
	PRAGMA_V_NAN_OUTPUT,         /* NaN/Inf where the reference is finite */
	PRAGMA_V_WRONG_OUTPUT,       /* outside atol + rtol·|ref| */
	PRAGMA_V_OUTPUT_CACHED,      /* output did not follow the inputs */
	PRAGMA_V_NONDETERMINISTIC,   /* identical inputs, different outputs */
	PRAGMA_V_TIMED_MISMATCH,     /* right while verified, wrong while timed */
	PRAGMA_V_IMPOSSIBLE_SPEED,   /* faster than the memory system allows */
	PRAGMA_V_SANDBOX_ERROR,      /* the harness could not confine itself */
	PRAGMA_V_NO_DEVICE,          /* CUDA: built and checked, but no device to run on (an environment problem) */
	PRAGMA_V__COUNT
};

/* "wrong_output" */
const char *pragma_vstatus_name(enum pragma_vstatus s);
/* The likely cause and what to try, one sentence, for the Conductor. */
const char *pragma_vstatus_hint(enum pragma_vstatus s);
/* From a name (harness answers); PRAGMA_V_CRASH when unknown. */
enum pragma_vstatus pragma_vstatus_from_name(const char *name);

struct pragma_verify_opts {
	const char *compiler;        /* "gcc" (default) or "clang" */
	const char *flags;           /* extra flags (whitespace-separated), filtered like the kernel's own */
	int n_sets;                  /* input sets; 0: PRAGMA_DEFAULT_SETS */
	double atol, rtol;           /* < 0: the task's (per-dtype defaults, task override) */
	int timeout_ms;              /* harness deadline for the verification run; 0: 60 s */
	int threads;                 /* 0: all usable cores (both candidate and baseline) */
	int no_sandbox;              /* debugging only: no seccomp/Landlock (verdict says so) */
	int no_compile_jail;         /* debugging only */
	size_t max_source;           /* bytes; 0: 1 MiB */
	const char *work_dir;        /* NULL: a fresh dir under <cache>/verify, removed unless keep */
	int keep;                    /* keep the work dir (outputs, request, logs) */
	int compile_only;            /* stop after the build (a cached build makes the next call's free) */
	/* eval */
	int time;                    /* also time against the baseline */
	int warmup;                  /* per process, before the first round; default 3 */
	int rounds;                  /* interleaved rounds undisturbed on both sides; default 15
	                              * (up to 3x as many are made on a busy machine) */
	int reps;                    /* timed calls per round per side; default 5 */
	int cold;                    /* flush the cache before every call (default 1) */
	int round_timeout_ms;        /* per round; 0: 10x the verification run, within 30 s..10 min */
	double speed_margin;         /* impossible_speed when achieved GB/s > margin x peak; 0: 1.5 */
	int max_attempts;            /* per round and side, when other processes disturbed it; 0: 3 */
	int max_wait_ms;             /* total wait for a quiet machine before rounds; 0: 20 s, < 0: none */
	int sessions;                /* fresh process pairs the rounds are spread over; 0: 4 */
	int backend;                 /* enum pragma_backend (pragma/cuda.h): 0 C on the CPU, 1 CUDA (nvcc, GPU) */
};

#define PRAGMA_VERIFY_DEFAULTS { .atol = -1, .rtol = -1, .warmup = 3, .rounds = 15, .reps = 5, .cold = 1 }

/* One side of a timing comparison. */
struct pragma_vtiming {
	double *times_ms;            /* all timed calls, round after round */
	int n_times;
	double *round_median;        /* per round */
	double *round_delay;         /* per round: share of its time lost to other processes */
	int *round_count;            /* per round: timed calls */
	int n_rounds;
	struct pragma_stats stats;
};

struct pragma_verdict {
	enum pragma_vstatus status;
	char message[1024];          /* one line; empty when ok */
	char task[128];
	int n_sets;
	double atol, rtol;
	/* build */
	char compiler[96];           /* "gcc 12.2.0" */
	char **flags;                /* the flags used (allowed ones) */
	int n_flags;
	struct pragma_buf compile_log;
	char so_path[4096];
	char work_dir[4096];
	/* sandbox, as the harness enforced it */
	int sandboxed;
	int seccomp;
	char landlock[160];          /* "abi 7" or "unavailable: ..." or "off (...)" */
	int compile_jailed;
	/* correctness */
	double max_abs_err, max_rel_err;
	double compile_ms;           /* building the kernel (a cached build: ~0) */
	/* resources of the verification run */
	double wall_ms, user_s, sys_s;
	long maxrss_kb;
	/* eval */
	int timed;
	struct pragma_vtiming cand, base;
	char baseline_kind[24];
	json_t *baseline_config;
	double speedup;              /* base median / candidate median; 0 unless timed and ok */
	double speedup_min, speedup_max, speedup_q1, speedup_q3; /* over per-round ratios */
	int retried_rounds;          /* rounds measured again because others took the CPU */
	double worst_disturbance;    /* run-queue delay / round time of the worst round kept */
	double waited_ms;            /* spent waiting for a quiet machine */
	int rounds_used;             /* rounds whose calls the statistics use (undisturbed on both sides) */
	int rounds_clean, rounds_made; /* rounds undisturbed on both sides, of all made */
	double gbs, gflops;          /* achieved, candidate median; 0 when unknown */
	double peak_gbs, peak_gflops;/* machine peaks used for the checks; 0 when unknown */
	char **warnings;
	int n_warnings;
};

void pragma_verdict_init(struct pragma_verdict *v);
void pragma_verdict_release(struct pragma_verdict *v);
/* The verdict as JSON: {"status", "message", "hint", "task", "sandbox",
 * "compile", "resources", ...; with timing "time_ms", "baseline_ms",
 * "speedup", "speedup_spread"}. Caller owns the reference. */
json_t *pragma_verdict_json(const struct pragma_verdict *v);

/* Verify (and with o->time, time) kernel_path for task t. Returns 0 when a
 * verdict was reached, whatever it is (v->status); -1 with err when pragma
 * could not judge (missing compiler, torch, harness: PRAGMA_E_ENV; bad
 * options: PRAGMA_E_INPUT; I/O: PRAGMA_E_INTERNAL). */
int pragma_verify(const struct pragma_task *t, const char *kernel_path, const struct pragma_verify_opts *o,
		  struct pragma_verdict *v, struct pragma_err *err);

/* The pieces, for callers that have their own flow. */

/* Source acceptance (src NUL-terminated at len): not empty, not over max
 * bytes (0: 1 MiB), no NUL bytes, strict UTF-8, mentions pk_forward. 0, or
 * -1 with a PRAGMA_V_INVALID_SOURCE message in why. */
int pragma_verify_source(const char *src, size_t len, size_t max, char *why, size_t why_len);

/* Element-wise comparison of one output with its reference. */
struct pragma_cmp {
	int64_t n;                   /* elements */
	int64_t bad;                 /* outside tolerance (includes the two below) */
	int64_t unwritten;           /* still the poison pattern */
	int64_t nonfinite;           /* NaN/Inf where the reference is finite */
	int64_t first_bad;           /* flat index, -1 when none */
	double got, want;            /* at first_bad */
	double max_abs_err, max_rel_err;
};
/* Shapes and dtypes must match (-1 otherwise). Integers and bools are
 * compared exactly; floats within atol + rtol·|want|; NaN in want needs NaN. */
int pragma_compare(const struct pragma_tensor *got, const struct pragma_tensor *want, double atol, double rtol,
		   struct pragma_cmp *c);
/* "(3, 17)" for a flat index of shape. */
const char *pragma_index_str(int64_t flat, const int64_t *shape, int ndim, char *buf, size_t len);

#endif
