/*
 * Suites (issue 7, DESIGN 3.12): `pragma bench` runs `pragma optimize` over
 * every task of a suite, and the paper's metrics are computed from what the
 * run store holds — never from numbers kept anywhere else.
 *
 * A suite run is a row of the store's `suites` table; each of its tasks is an
 * ordinary run whose suite_id names it (and whose config.trajectory says
 * which of the --repeat trajectories it is).
 */
#ifndef PRAGMA_BENCH_H
#define PRAGMA_BENCH_H

#include <jansson.h>

#include "pragma/err.h"

/* The task categories of DESIGN 3.2 (the paper's six), in report order;
 * anything else counts as "others". */
extern const char *const pragma_bench_categories[];
#define PRAGMA_BENCH_N_CATEGORIES 6

/* The thresholds p of fast_p, in order: 0, 1, 1.5, 2. */
extern const double pragma_bench_fast_p[];
#define PRAGMA_BENCH_N_FAST 4

/* One task's outcome in one trajectory, reduced from a stored run (as given
 * by pragma_store_run_get: the run row plus "attempts" and "llm_calls").
 *   {"task", "category", "kind": "kernelbench"|"native", "baseline_kind",
 *    "trajectory", "run", "status", "correct": bool, "speedup": number|null
 *    (the final interleaved speedup of the best kernel), "speedup_lo",
 *    "speedup_hi", "best_attempt", "roof": fraction|null, "attempts",
 *    "failed": {"status": count}, "tokens", "cost", "seconds":
 *    {"llm", "verify", "timing", "profile", "lock_wait", "total"}} */
json_t *pragma_bench_outcome(json_t *run);
/* The outcome also holds, for a correct kernel: "roof_note" (why the
 * fraction is of the bandwidth roof, or above 100%), "spread_kind"
 * (pragma_bench_spread_kind), and from the final comparison "final" (its
 * rounds and interference as the run stored them), "busy", "warning", and
 * "in_its_attempt" (the best's numbers in its own attempt's session). */

/* A stored profile's fraction of its roofline (metrics as an attempt holds
 * them), NaN when none: the bandwidth fraction for a kernel that runs the
 * task's FLOP count above the FP32 peak (it does fewer FLOPs than counted;
 * older profiles stored the compute fraction). note (len > 0) gets why,
 * whenever the fraction needs explaining (that, or above 100%), else "". */
double pragma_bench_roof(json_t *metrics, char *note, size_t len);

/* What a stored speedup_spread {lo, hi, method} is: "95% interval" (a
 * bootstrap over a timing session's sessions and rounds, DESIGN 3.5),
 * "interquartile range (older run)" (runs stored before), or NULL when it
 * holds no interval. */
const char *pragma_bench_spread_kind(json_t *speedup_spread);

/* The final comparison's conditions (a run summary's best.final): "14 of 15
 * rounds undisturbed, the worst round kept lost 4% of its time to other
 * processes", prefixed "a BUSY machine: " when too few rounds were clean.
 * Returns 1 when busy (its figures are unreliable: say so), 0 otherwise or
 * when final is not an object (buf ""). */
int pragma_bench_final_text(json_t *final, char *buf, size_t len);

/* A suite run's outcomes (suite as pragma_store_suite_get gives it): every
 * task of its configuration in every trajectory, from the task's last run
 * in that trajectory, else a "not run" outcome — a task that never ran
 * still counts against Success. With by_outcome, the run behind each
 * outcome (or null) is appended to it, in the same order. */
json_t *pragma_bench_suite_outcomes(json_t *suite, json_t *by_outcome);

/* The metrics over a list of outcomes:
 *   {"pytorch": GROUP, "native": GROUP}  (a group absent when it has no task)
 * GROUP = {"all": M, "categories": {"matmul": M, ...}}
 * M = {"tasks", "trajectories", "success", "fast": {"0": f, "1": f, "1.5": f,
 *      "2": f}, "mean", "geomean", "median_roof", "tokens_per_task",
 *      "cost_per_task", "roof_notes": {"fewer_flops", "above_roof"}: how many
 *      of the roof fractions (all trajectories) are of the bandwidth roof
 *      because the kernel does fewer FLOPs than counted, and how many are
 *      above 100%}; each number is the mean over trajectories, and with
 *      more than one trajectory M also holds "spread": {name: {"min","max",
 *      "sd"}} for every metric. Speedup means are over correct kernels only;
 *      null when there are none. */
json_t *pragma_bench_metrics(json_t *outcomes);

/* Is the difference between two metrics larger than the spread of either?
 * Returns a short verdict text ("larger than the spread", "inside the
 * spread", "one trajectory each: no evidence"). */
const char *pragma_bench_judge(json_t *a_metric, json_t *a_spread, json_t *b_metric, json_t *b_spread);

#endif
