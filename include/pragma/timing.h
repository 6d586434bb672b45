/* The timing protocol (DESIGN 3.5) and the baseline it is applied to. */
#ifndef PRAGMA_TIMING_H
#define PRAGMA_TIMING_H

#include <jansson.h>
#include <stdint.h>

#include "pragma/backend.h"
#include "pragma/err.h"
#include "pragma/refdata.h"
#include "pragma/run.h"
#include "pragma/task.h"

struct pragma_stats {
	double median, mean, stdev, min, max;
	int count;
};

void pragma_stats_compute(const double *v, int n, struct pragma_stats *s);
json_t *pragma_stats_json(const struct pragma_stats *s);

struct pragma_timing_opts {
	int warmup;              /* calls before timing, cycling the input sets */
	int reps;                /* timed calls */
	int cold;                /* flush the cache before every call (default) */
	int threads;             /* 0: all usable cores */
	uint64_t flush_bytes;    /* 0: pragma_flush_bytes() */
};

#define PRAGMA_TIMING_DEFAULTS { .warmup = 3, .reps = 20, .cold = 1 }

struct pragma_baseline {
	char kind[24];           /* "pytorch", "c-reference", "c-baseline" */
	double *times_ms;
	int n_times;
	struct pragma_stats stats;
	double estimate_ms;      /* from a timing session: the median of its calls (0: none) */
	json_t *config;          /* what ran: torch, BLAS, threads, allocator, compiler, protocol */
};

/* Time the task's reference by the protocol, on the given input sets (the
 * PyTorch bridge for KernelBench tasks, the C reference or baseline.c in
 * the CPU harness for native ones): the CPU backend's baseline. Takes the
 * measurement lock. */
int pragma_baseline_measure(const struct pragma_task *t, const struct pragma_refset *sets, int n_sets,
			    const struct pragma_timing_opts *o, struct pragma_baseline *b, struct pragma_err *err);
void pragma_baseline_release(struct pragma_baseline *b);
json_t *pragma_baseline_json(const struct pragma_baseline *b);

/* ---- the measurement lock (lib/timing/lock.c) ----
 * One lock per host (a file in /dev/shm, or $PRAGMA_LOCK_DIR): every run of
 * a kernel or a baseline that measures anything — verification, timing,
 * profiling, machine peaks — holds it exclusively, so two pragma processes
 * (a `bench --jobs 4`, a hand-run `eval` beside it) never measure on a CPU
 * the other is using; compiling holds it shared, so builds overlap one
 * another but never a measurement. Re-entrant within a process (an
 * exclusive hold inside a shared one upgrades it). A waiter says who holds
 * it. Waiters are served in the order they came, and an exclusive waiter
 * keeps later shared ones out (a queue of tickets beside the lock file).
 * $PRAGMA_LOCK_LOG=FILE appends every outermost hold as
 * "pid acquired released EX|SH" (wall-clock seconds). */
enum pragma_lock_kind { PRAGMA_LOCK_SHARED, PRAGMA_LOCK_EXCLUSIVE };

/* Take the lock; what ("timing 18_softmax attempt 3") is shown to
 * waiters. Returns a token for pragma_measure_unlock. Never fails: without
 * a lock file it warns once and goes on unlocked. */
int pragma_measure_lock(enum pragma_lock_kind kind, const char *what);
void pragma_measure_unlock(int token);
/* In a child forked without exec that is to measure on its own: drop the
 * parent's descriptor (which holds the parent's locks) and its counts, so
 * the child queues and locks as a process of its own. */
void pragma_measure_lock_forget(void);
/* Seconds this process has spent waiting for the lock. */
double pragma_measure_lock_waited(void);
/* The lock file's path. */
const char *pragma_measure_lock_path(void);

/* ---- timing sessions (lib/timing/session.c) ----
 * The one interleaved-rounds routine (DESIGN 3.5) every comparison uses: a
 * kernel against the baseline (eval), an attempt against the best and the
 * baseline (the loop), tunable variants side by side. Each side runs in
 * its own warm process — a kernel in its backend's harness in serve mode,
 * the baseline in the PyTorch bridge's serve mode or the native reference
 * in the CPU harness — and the sides are asked for rounds of timed calls in
 * turn, the order rotating every round and reversed every n rounds. Fresh
 * processes per session (default one session per 2 rounds), started in a
 * random order mirrored in the next session, average over where each
 * process's buffers landed. A round during which other processes took the
 * CPU from a side (its threads' run-queue delay) is measured again, and
 * only rounds undisturbed on every side count when enough of them are. */

/* Times of one side, round after round. */
struct pragma_side_times {
	double *times_ms;            /* every timed call */
	int n_times;
	double *round_median;        /* per round: the median of its calls (for reports) */
	double *round_delay;         /* per round: share of its time lost to other processes */
	int *round_count;            /* per round: timed calls */
	int *round_session;          /* per round: the session (fresh processes) it belongs to */
	int n_rounds;
	/* The adaptive comparison this side was in (decide_a/decide_b) was
	 * checked up to this many times: a ratio of two such sides has its
	 * interval widened for them (0: none). */
	int looks;
};

struct pragma_side {
	/* in */
	const char *label;           /* "baseline", "attempt 3", "best (attempt 2)" */
	const char *so;              /* a verified kernel's object; NULL: the task's baseline */
	const struct pragma_backend *backend; /* whose harness runs it (and, for the baseline, whose PyTorch) */
	const char *const *preload;  /* libraries its harness loads before the sandbox */
	/* out */
	struct pragma_side_times t;
	double estimate_ms;          /* the time estimate (pragma_estimate: the median of its calls) */
	json_t *config;              /* the baseline: what ran (torch, BLAS, threads, protocol...) */
	char note[512];              /* where the baseline ran, when not on the kernel's device */
	int failed;                  /* a kernel that failed while timed: what its harness said */
	struct pragma_run_result fail;
	char work_dir[4096];         /* where its timed outputs are (kernel sides; the last session's) */
};

struct pragma_session_opts {
	const struct pragma_task *task;
	const struct pragma_refset *sets;
	int n_sets;
	int threads;                 /* 0: all usable cores */
	int warmup;                  /* per process; default 3 */
	int cold;                    /* flush the cache before every call */
	int reps;                    /* timed calls per round per side; 0: 5 */
	int rounds;                  /* rounds undisturbed on every side to aim for; 0: 15 */
	int max_rounds;              /* with decide: keep going up to this many; 0: rounds */
	int sessions;                /* fresh process sets the rounds are spread over; 0: one per 2 rounds, >= 4 */
	int sandbox;
	int round_timeout_ms;        /* a kernel's round; 0: 120 s */
	int base_timeout_ms;         /* the baseline's start and round; 0: 10 min */
	int max_attempts;            /* per round and side, when others disturbed it; 0: 3 */
	int max_wait_ms;             /* total wait for a quiet machine; 0: 20 s, < 0: none */
	const char *work_dir;        /* where sides keep their outputs; NULL: a temp dir, removed */
	/* Adaptive: after `rounds`, continue (up to max_rounds) while the
	 * ratio of side decide_a to side decide_b is not yet decided: its
	 * interval still straddles 1 ± margin and is wider than 2 x margin. */
	int decide_a, decide_b;      /* side indices; both 0: none */
	double margin;               /* 0: PRAGMA_SAME_MARGIN */
	/* Called when a kernel side's process ends its session: check the
	 * outputs of its timed calls (dir/set<k>/timed_NNN.npy for the sets
	 * in timed_calls). Return 0 ok, 1 wrong (why set), -1 error. */
	int (*check)(void *ctx, const struct pragma_side *sd, const char *dir, json_t *timed_calls, char *why,
		     size_t why_len, struct pragma_err *err);
	void *check_ctx;
	const char *what;            /* for the lock's waiters: "eval 18_softmax" */
};

struct pragma_session {
	int rounds_made;             /* rounds measured (all sides) */
	int rounds_clean;            /* of them undisturbed on every side */
	int rounds_used;             /* the rounds the estimates use */
	int retried_rounds;
	double worst_disturbance;    /* run-queue delay / round time, the worst round kept */
	double waited_ms;            /* waiting for a quiet machine */
	int sessions;
	int busy;                    /* too few clean rounds: the estimates are unreliable */
	json_t *protocol;            /* the protocol, as JSON (for the baseline's config) */
};

/* Run the session over n sides. Returns 0 when measured (a kernel side
 * that failed has failed set and the session stops there), -1 with err
 * when pragma could not (the baseline failed: PRAGMA_E_INPUT; no bridge:
 * PRAGMA_E_ENV). Takes the measurement lock. */
int pragma_session_run(struct pragma_side *sides, int n, const struct pragma_session_opts *o,
		       struct pragma_session *s, struct pragma_err *err);
void pragma_session_release(struct pragma_session *s);
/* The order session sess (0, 1, ...) starts n sides in: a random
 * permutation (from *rng, xorshift64*) for an even session, kept in last,
 * and its mirror image for the odd session after it, so every side starts
 * before every other as often as after (lib/timing/session.c says why). */
void pragma_start_order(int n, int sess, uint64_t *rng, int *last, int *order);
void pragma_side_release(struct pragma_side *sd);
void pragma_side_times_release(struct pragma_side_times *t);

/* ---- estimates and comparisons (lib/timing/estimate.c) ----
 * A side's time is the median of its timed calls (bench/estimators.sh
 * compares the median with minima, low quantiles, means and paired ratios
 * on this machine; lib/timing/estimate.c says why the median). A ratio of
 * two sides is the ratio of their medians, so the numbers shown always
 * divide to the ratio shown; its 95% interval is a bootstrap that resamples
 * sessions, then rounds within them, the same rounds on both sides (they
 * were measured back to back), stretched for few sessions (a process's
 * memory placement moves its times for its life: sessions are the units). */

/* The relative difference below which two kernels are "the same": a
 * kernel compared with itself must never come out faster or slower. */
#define PRAGMA_SAME_MARGIN 0.03
/* Run-queue delay (share of a round's wall time) above which a session
 * counts a round as disturbed by other processes. */
#define PRAGMA_DISTURBANCE_OK 0.05

double pragma_estimate(const struct pragma_side_times *t);
/* The median of v[0..n) (v is sorted in place); 0 when n is 0. */
double pragma_median(double *v, int n);

enum pragma_verdict_cmp { PRAGMA_CMP_SAME, PRAGMA_CMP_FASTER, PRAGMA_CMP_SLOWER };

struct pragma_ratio {
	double ratio;                /* estimate(b) / estimate(a): > 1 when a is faster */
	double lo, hi;               /* 95% interval */
	int rounds;                  /* paired rounds it rests on */
	int sessions;                /* and the sessions they came in (rounds, when one) */
	double stretch;              /* the bootstrap interval's widening: few sessions, repeated looks */
	int looks;                   /* the looks it is widened for (1: a single look) */
	double margin;               /* the margin it was judged with */
	enum pragma_verdict_cmp cmp; /* FASTER: a is faster by more than the margin, beyond the interval */
};

/* How a compares with b over their common rounds: FASTER when the
 * interval lies above 1 and the ratio is at least 1 + margin, SLOWER the
 * mirror image, SAME otherwise. margin 0: PRAGMA_SAME_MARGIN. The
 * bootstrap's seed is fixed, so the same numbers give the same interval. */
void pragma_ratio_compute(const struct pragma_side_times *a, const struct pragma_side_times *b, double margin,
			  struct pragma_ratio *r);
/* How much a 95% bootstrap interval over `clusters` sessions is widened
 * (on the log scale): t(0.975, clusters - 1) / 1.96 * sqrt(clusters /
 * (clusters - 1)); 1 below 2 clusters. 2.69 for 3 sessions, 1.58 for 5,
 * 1.29 for 8. */
double pragma_interval_stretch(int clusters);
/* And for an adaptive comparison checked up to `looks` times: Pocock's
 * constant for that many looks / 1.96 (1.30 for 10 looks; 1 for one). */
double pragma_looks_stretch(int looks);
/* "1.03x [0.97–1.09], not distinguishable" */
const char *pragma_ratio_str(const struct pragma_ratio *r, char *buf, size_t len);
/* "lo–hi" of a ratio's interval: two decimals, three for a bound that two
 * would show as 1.00 without being 1 ("1.004–1.06", not "1.00–1.06", for an
 * interval that lies above 1). Every interval pragma prints uses it. */
const char *pragma_interval_str(double lo, double hi, char *buf, size_t len);
#endif
