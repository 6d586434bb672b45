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

#include "pragma/backend.h"
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

/*
 * The tolerance rule (docs/verifier.md, "The tolerance rule"), one for every
 * consumer: the verifier's checks, the timed outputs, the profilers. An
 * output passes when
 *   every element:  |got - ref| <= atol_eff + rtol * |ref|
 *   the whole:      ||got - ref||_2 <= norm * ||ref||_2
 * where atol_eff is atol itself when the task states an absolute one, and
 * otherwise atol * RMS(ref): the absolute slack scales with the output, so an
 * output far below 1e-4 is not accepted whatever it holds, and a sum of
 * large terms is not refused for rounding that scales with it. Integers,
 * bools and floats with atol = rtol = 0 compare exactly (bools as 0 or 1).
 */
struct pragma_tolerance {
	enum pk_dtype dtype;
	int exact;                   /* integers, bools, or a float tolerance of 0 */
	double rtol;                 /* per element, times |ref| */
	double atol;                 /* per element: absolute, or times RMS(ref) when atol_rms */
	int atol_rms;                /* 1: atol scales with the reference's RMS (the default) */
	double norm;                 /* bound on ||got - ref|| / ||ref||; < 0: none */
	const char *source;          /* "float32 default", "task", "--atol/--rtol" (static) */
};

/* Output k of task t: the task's stated tolerance, per-dtype defaults
 * where it states none (float32: rtol 1e-4, atol 1e-4 x RMS; float64: 1e-6;
 * float16/bfloat16: 1e-2), and the command line's --atol/--rtol (absolute;
 * < 0: not given). norm defaults to rtol. */
void pragma_tolerance_resolve(const struct pragma_task *t, int k, double atol_override, double rtol_override,
			      struct pragma_tolerance *tol);
/* "rtol 1e-4, atol 1e-4 x RMS (= 6.3e-10), norm-wise 1e-4" or "exact"; rms < 0
 * leaves the value of a scaled atol out. */
const char *pragma_tolerance_str(const struct pragma_tolerance *tol, double rms, char *buf, size_t len);

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
	int max_rounds;              /* keep measuring while the speedup's interval straddles 1; 0: rounds */
	int reps;                    /* timed calls per round per side; default 5 */
	int cold;                    /* flush the cache before every call (default 1) */
	int round_timeout_ms;        /* per round; 0: 10x the verification run, within 30 s..10 min */
	double speed_margin;         /* impossible_speed when achieved GB/s > margin x peak; 0: 1.5 */
	int max_attempts;            /* per round and side, when other processes disturbed it; 0: 3 */
	int max_wait_ms;             /* total wait for a quiet machine before rounds; 0: 20 s, < 0: none */
	int sessions;                /* fresh process pairs the rounds are spread over; 0: one per 2 rounds, >= 4 */
	const struct pragma_backend *backend; /* the target (pragma/backend.h); NULL: the CPU */
};

#define PRAGMA_VERIFY_DEFAULTS { .atol = -1, .rtol = -1, .warmup = 3, .rounds = 15, .reps = 5, .cold = 1 }

/* One side of a timing comparison: the timing layer's times, kept. */
struct pragma_vtiming {
	struct pragma_side_times t;  /* the timed calls of the rounds kept, round by round */
	struct pragma_stats stats;   /* over every call kept */
	double estimate_ms;          /* the time shown: pragma_estimate() (the median of every call kept) */
};

/* One output's check in a verdict (worst input set). */
struct pragma_vout {
	struct pragma_tolerance tol;
	double rms;                  /* of the reference (input set 0) */
	double atol_eff;             /* the absolute slack (input set 0) */
	double max_abs_err, max_rel_err, norm_err;
	int audited, discriminating;
	unsigned applicable, refused; /* bit k: trivial answer k (enum pragma_trivial) */
	char why[512];               /* when not discriminating */
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
	int sandbox_unconfirmed;     /* the harness ended before reporting: seccomp/landlock as requested */
	struct pragma_buf output;    /* what the kernel printed (stdout and stderr), the first 8 KiB */
	/* correctness */
	double max_abs_err, max_rel_err;
	double norm_err;             /* worst output's ||out - ref|| / ||ref|| */
	double norm_bound;           /* that output's bound */
	struct pragma_vout *outs;    /* per output: its tolerance and errors (n_outs) */
	int n_outs;
	int certified;               /* every output's check refuses the trivial answers */
	char not_certified[640];     /* why not: which trivial answer passes, on which output */
	double compile_ms;           /* building the kernel (a cached build: ~0) */
	/* resources of the verification run */
	double wall_ms, user_s, sys_s;
	long maxrss_kb;
	/* eval */
	int timed;
	struct pragma_vtiming cand, base;
	char baseline_kind[24];
	json_t *baseline_config;
	double speedup;              /* base estimate / candidate estimate; 0 unless timed and ok */
	double speedup_lo, speedup_hi; /* its 95% interval (bootstrap: sessions, then rounds) */
	int retried_rounds;          /* rounds measured again because others took the CPU */
	double worst_disturbance;    /* run-queue delay / round time of the worst round kept */
	double waited_ms;            /* spent waiting for a quiet machine */
	int rounds_used;             /* rounds whose calls the statistics use (undisturbed on both sides) */
	int rounds_clean, rounds_made; /* rounds undisturbed on both sides, of all made */
	int busy;                    /* too few undisturbed rounds: the numbers are unreliable (a warning says so) */
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
/* Each output's tolerance rule with its value on input set 0, "; " between
 * outputs: "rtol 0.0001, atol 0.0001 x RMS(ref) = 6.3e-10, norm-wise 0.0001". */
const char *pragma_verdict_tolerance_str(const struct pragma_verdict *v, char *buf, size_t len);

/* Verify (and with o->time, time) kernel_path for task t. Returns 0 when a
 * verdict was reached, whatever it is (v->status); -1 with err when pragma
 * could not judge (missing compiler, torch, harness: PRAGMA_E_ENV; bad
 * options: PRAGMA_E_INPUT; I/O: PRAGMA_E_INTERNAL). */
int pragma_verify(const struct pragma_task *t, const char *kernel_path, const struct pragma_verify_opts *o,
		  struct pragma_verdict *v, struct pragma_err *err);

/* The pieces, for callers that have their own flow. */

/* The audit of a whole task, as `pragma tasks show` and `tasks list
 * --check` print it: reference data for input set 0 (made or taken from the
 * cache), then each output's tolerance (outs[k].tol, with --atol/--rtol
 * overrides when >= 0), its value there and pragma_tolerance_audit()'s
 * answer. outs has t->n_outputs entries. 0, or -1 with err (no reference). */
int pragma_task_audit(const struct pragma_task *t, double atol_override, double rtol_override,
		      struct pragma_vout *outs, struct pragma_err *err);
/* Map a failed harness run to the verdict (its category and message; a
 * crash right after a failed allocation is memory_limit). when: "" or
 * " while timed". */
struct pragma_run_result;
void pragma_verdict_from_run(struct pragma_verdict *v, const struct pragma_run_result *r, const char *when);

/* A timed kernel's rates against the backend's peaks (DESIGN 3.4): sets
 * v->gbs, gflops, peak_gbs, peak_gflops; impossible_speed when ms is below
 * what the task's minimal bytes need at speed_margin (0: 1.5) times the
 * highest bandwidth ever measured; a warning above the compute peak. */
void pragma_verify_limits(const struct pragma_task *t, const struct pragma_backend *b, int cold, double speed_margin,
			  double ms, struct pragma_verdict *v);

/* Source acceptance (src NUL-terminated at len): not empty, not over max
 * bytes (0: 1 MiB), no NUL bytes, strict UTF-8, mentions pk_forward. 0, or
 * -1 with a PRAGMA_V_INVALID_SOURCE message in why. */
int pragma_verify_source(const char *src, size_t len, size_t max, char *why, size_t why_len);

/* One output against its reference. */
struct pragma_cmp {
	int64_t n;                   /* elements */
	int64_t bad;                 /* outside the element-wise tolerance (includes the three below) */
	int64_t unwritten;           /* still the poison pattern */
	int64_t nonfinite;           /* NaN/Inf where the reference is finite */
	int64_t not_bool;            /* bool outputs holding a byte other than 0 or 1 */
	int64_t first_bad;           /* flat index, -1 when none */
	double got, want;            /* at first_bad (raw byte for not_bool) */
	double max_abs_err, max_rel_err;
	double rms;                  /* of the reference's finite elements */
	double atol_eff;             /* the absolute slack used */
	double norm_err;             /* ||got - ref|| / ||ref|| over finite elements (inf: ref 0, got not) */
	int norm_bad;                /* norm_err above the bound */
	int64_t worst;               /* element using most of its tolerance, -1 when none */
	double worst_got, worst_want;
};
/* Returns 0 when got is within tol of want, 1 when not (c says how), -1
 * when shapes or dtypes differ. NaN in want needs NaN in got; Inf needs the
 * same Inf. */
int pragma_compare(const struct pragma_tensor *got, const struct pragma_tensor *want,
		   const struct pragma_tolerance *tol, struct pragma_cmp *c);

/* Trivial answers a check must refuse, or it proves nothing. */
enum pragma_trivial {
	PRAGMA_TRIVIAL_ZEROS,        /* all zeros */
	PRAGMA_TRIVIAL_MEAN,         /* the reference's mean everywhere */
	PRAGMA_TRIVIAL_PERMUTED,     /* the reference's elements in another order */
	PRAGMA_TRIVIAL_SCALED,       /* the reference times (1 + 10 rtol) */
	PRAGMA_TRIVIAL__COUNT
};
const char *pragma_trivial_name(enum pragma_trivial a);

struct pragma_audit {
	int discriminating;          /* every applicable trivial answer is refused */
	int applicable[PRAGMA_TRIVIAL__COUNT]; /* 0: the answer equals the reference (constant, zeros, ...) */
	int refused[PRAGMA_TRIVIAL__COUNT];
	double norm_err[PRAGMA_TRIVIAL__COUNT];
	double rms, atol_eff;
	char why[512];               /* what passes and why; or why nothing applies */
};
/* Would the check of ref under tol refuse the trivial answers? Nonfinite
 * reference elements are kept as they are in every answer. 0, or -1 (out of
 * memory, with err). */
int pragma_tolerance_audit(const struct pragma_tensor *ref, const struct pragma_tolerance *tol,
			   struct pragma_audit *a, struct pragma_err *err);

/* Check the outputs a harness run saved under dir (set<s>/<name>_NNN.npy)
 * against the reference with the Verifier's
 * rule (pragma_tolerance_resolve; atol/rtol >= 0 override the task's): the timing layer's check of timed
 * calls and the profilers'. 0 all right; 1 one is wrong (why says which
 * and how); -1 on I/O errors. calls is the harness's count of calls per
 * set ("timed_calls"): a set it made no call on is skipped (its file, opened
 * before the sandbox, is empty), one it did call must have a saved output.
 * NULL checks the files present. */
int pragma_verify_saved(const struct pragma_task *t, const struct pragma_refset *sets, int n_sets, const char *dir,
			const char *name, json_t *calls, double atol, double rtol, char *why, size_t why_len,
			struct pragma_err *err);
/* "(3, 17)" for a flat index of shape. */
const char *pragma_index_str(int64_t flat, const int64_t *shape, int ndim, char *buf, size_t len);

#endif
