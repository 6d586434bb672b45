/*
 * Reports (DESIGN 3.9, `pragma report`): one or more stored runs or suite
 * runs rendered as Markdown (terminals, repositories) or as one
 * self-contained HTML file with SVG plots drawn here (no scripts, fonts,
 * style sheets or images fetched from anywhere).
 *
 * A report only renders what the store holds: per-task outcomes and the
 * Table I metrics come from pragma_bench_outcome() and
 * pragma_bench_metrics(), attempts, profiles and the Conductor's analyses
 * from the attempts as stored. Several sources are compared side by side
 * (Table I columns, Fig. 3 series, Fig. 4 curves).
 */
#ifndef PRAGMA_REPORT_H
#define PRAGMA_REPORT_H

#include <jansson.h>

#include "pragma/buf.h"
#include "pragma/err.h"

struct pragma_store;

enum pragma_report_format { PRAGMA_REPORT_MARKDOWN, PRAGMA_REPORT_HTML };

/* Read the sources named by ids (run ids "r…", suite ids "s…", or unique
 * prefixes of either) from the store. Returns a new array of run and suite
 * objects as pragma_store_run_get / pragma_store_suite_get give them, or
 * NULL (err: PRAGMA_E_INPUT for an unknown or ambiguous id). */
json_t *pragma_report_load(struct pragma_store *s, const char *const *ids, int n, struct pragma_err *err);

/* The report model over sources (runs: objects with "attempts"; suites:
 * objects with "runs"), which it references, not copies:
 * Single runs of different tasks with the same mode and model form one
 * series (a task seen again starts another); a suite run is a series.
 *   {"columns": [{"id", "kind": "run"|"suite", "label", "mode", "llm",
 *                 "status", "runs": [...], "outcomes": [...],
 *                 "metrics": pragma_bench_metrics(outcomes)}],
 *    "tasks": [{"name", "category", "kind", "entries": [{"col", "trajectory",
 *               "run", "outcome"}]}]}
 * Tasks are ordered PyTorch-baselined first, then native, by category, then
 * by name. NULL with err when sources is empty or malformed. */
json_t *pragma_report_model(json_t *sources, struct pragma_err *err);

/* Render the model; origin (may be NULL) says where the data came from (the
 * store's path), shown in the report. Appends to out. */
int pragma_report_render(json_t *model, enum pragma_report_format fmt, const char *origin, struct pragma_buf *out,
			 struct pragma_err *err);

/* The loop's decisions over a stored run (as pragma_store_run_get gives
 * it), replayed from the measurements (DESIGN 3.5), one per own attempt row
 * in order: [{"n", "status", "badge": "new best"|"best kept"|"the same
 * build"|the failure category, "became_best", "same_build", "best_n" (the
 * best after it; 0: none), "vs_best": "1.03x vs #2 [0.97–1.09], not
 * distinguishable"|null, "conductor": the Conductor's own verdict
 * word|null}]. The badge is the measurement's; the Conductor's word is
 * only ever shown beside it. */
json_t *pragma_report_decisions(json_t *run);

/* Whether a run's model replies were replayed from a recording (its llm is
 * "replay:…"): the Conductor's text then cites another machine's numbers,
 * and pragma_report_replay_note says so. */
int pragma_report_replayed(json_t *run);
extern const char pragma_report_replay_note[];

#endif
