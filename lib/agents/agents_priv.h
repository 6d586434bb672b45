/* Internals of lib/agents shared between its files. */
#ifndef PRAGMA_AGENTS_PRIV_H
#define PRAGMA_AGENTS_PRIV_H

#include "pragma/buf.h"
#include "pragma/machine.h"
#include "pragma/task.h"
#include "pragma/timing.h"

void agents_io_table(const struct pragma_task *t, struct pragma_buf *out);
void agents_machine_text(const struct pragma_machine *m, struct pragma_buf *out);
void agents_baseline_text(const struct pragma_task *t, const struct pragma_baseline *b, struct pragma_buf *out);
void agents_work_text(const struct pragma_task *t, const struct pragma_machine *m, const struct pragma_baseline *b,
		      struct pragma_buf *out);

#endif

/* ---- the loop's state and the evaluation adapter (lib/agents/eval.c) ---- */

#include <jansson.h>

#include "pragma/agents.h"
#include "pragma/llm.h"
#include "pragma/refdata.h"
#include "pragma/knowledge.h"
#include "pragma/store.h"

/* One evaluated candidate. */
struct agents_eval {
	char status[32];            /* "ok", a Verifier category, or "no_code" */
	char message[2048];
	char src_path[4096];
	char so_path[4096];
	struct pragma_stats time;   /* when ok */
	struct pragma_stats base;   /* the baseline in the same interleaved rounds */
	double speedup;             /* baseline median / candidate median */
	json_t *flags;              /* array of strings */
	json_t *tune;               /* chosen tunables {NAME: value} or null */
	json_t *tune_table;         /* [{"defines": ..., "time_ms", "status"}] */
	json_t *verdict;            /* the Verifier's JSON */
	struct pragma_buf compile_log;
	json_t *profile;            /* the whole profile (pragma_profile_json) */
	json_t *metrics;            /* its metrics {name: {value, unit, source}} */
	json_t *diagnosis;          /* [{"bottleneck", "evidence", "confidence"}] */
	struct pragma_buf profile_text, knowledge_text;
};

void agents_eval_init(struct agents_eval *e);
void agents_eval_release(struct agents_eval *e);

struct agents_run {
	const struct pragma_optimize_opts *o;
	char run_id[48];
	struct pragma_task task;
	struct pragma_machine machine;
	struct pragma_refset sets[PRAGMA_DEFAULT_SETS];
	int n_sets;
	struct pragma_baseline baseline;
	struct pragma_store *store;
	struct pragma_llm *llm;
	struct pragma_buf out_dir;
	int threads;
	struct pragma_knowledge *kb;   /* the compendium, opened on first profile */
};

/* Compile (with flags), verify and time one candidate source. Returns 0
 * when it was judged (ev->status says how), -1 when pragma itself failed. */
int agents_evaluate(struct agents_run *R, const char *src_path, json_t *flags, struct agents_eval *ev,
		    struct pragma_err *err);
/* Interleaved rounds of two verified candidates: *ratio = time(b) / time(a)
 * (> 1: a is faster), with the spread of the per-round ratios. */
int agents_compare(struct agents_run *R, const struct agents_eval *a, const struct agents_eval *b, double *ratio,
		   double *lo, double *hi, struct pragma_err *err);
/* Interleaved rounds of the baseline and a candidate: the final speedup. */
int agents_final_speedup(struct agents_run *R, const struct agents_eval *a, double *speedup, double *lo, double *hi,
			 struct pragma_err *err);
/* Profile a verified candidate (metrics, diagnosis, prompt text, compendium
 * entries); extra: requested metric names. Fills ev's profile fields. */
int agents_profile(struct agents_run *R, struct agents_eval *ev, json_t *extra, struct pragma_err *err);
/* "metric: best → current (change)" lines for the Conductor. */
void agents_compare_profiles(const struct agents_eval *cur, const struct agents_eval *best, struct pragma_buf *out);

/* The machine-wide measurement lock (<cache>/measure.lock): held around
 * every timing and profiling run so concurrent runs do not disturb each
 * other's numbers. Returns an fd for agents_measure_unlock (-1: no lock). */
int agents_measure_lock(void);
extern double agents_lock_wait_s;  /* seconds this process waited for it */
extern double agents_build_s;      /* seconds it spent compiling kernels */
void agents_measure_unlock(int fd);
