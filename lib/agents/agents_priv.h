/* Internals of lib/agents shared between its files. */
#ifndef PRAGMA_AGENTS_PRIV_H
#define PRAGMA_AGENTS_PRIV_H

#include "pragma/buf.h"
#include "pragma/machine.h"
#include "pragma/task.h"
#include "pragma/timing.h"

void agents_io_table(const struct pragma_task *t, struct pragma_buf *out);
void agents_machine_text(const struct pragma_machine *m, struct pragma_buf *out);
/* seen_ms: the baseline in the latest timing session (0: none yet), which
 * every comparison in a request is against; seen_n: how many sessions. */
void agents_baseline_text(const struct pragma_task *t, const struct pragma_baseline *b, double seen_ms, int seen_n,
			  struct pragma_buf *out);
void agents_work_text(const struct pragma_task *t, const struct pragma_machine *m, const struct pragma_baseline *b,
		      double seen_ms, struct pragma_buf *out);

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
	char so_path[4096];         /* the chosen variant's object */
	/* When ok: one timing session with the baseline and the best. */
	double time_ms;             /* the estimate (median of the round minima) */
	double base_ms;             /* the baseline's, in the same rounds */
	struct pragma_stats time;   /* every call kept: the spread */
	struct pragma_stats base;
	double speedup;             /* base_ms / time_ms */
	struct pragma_ratio vs_base;/* the speedup with its interval */
	int vs_best_n;              /* the best it was measured against (0: none) */
	struct pragma_ratio vs_best;/* best's time / this one's: > 1 when this one is faster */
	double best_ms;             /* the best's time in the same rounds */
	struct pragma_ratio best_vs_base; /* the best's speedup in the same rounds */
	int busy;                   /* too few undisturbed rounds */
	json_t *timing;             /* the session: protocol, interference, per side its round minima */
	double build_s, verify_s, timing_s; /* where its evaluation spent its time, */
	double lock_s;              /* waiting for the measurement lock apart */
	json_t *flags;              /* array of strings */
	json_t *tune;               /* chosen tunables {NAME: value} or null */
	json_t *tune_table;         /* [{"defines", "status", "message", "time_ms", "speedup", "lo", "hi", "chosen"}] */
	int confirmed;              /* the chosen variant was timed again alone (several were correct) */
	json_t *verdict;            /* the Verifier's JSON (the chosen variant's) */
	struct pragma_buf compile_log;
	json_t *profile;            /* the whole profile (pragma_profile_json) */
	json_t *metrics;            /* its metrics {name: {value, unit, source}} */
	json_t *diagnosis;          /* [{"bottleneck", "evidence", "confidence"}] */
	struct pragma_buf profile_text;
};

void agents_eval_init(struct agents_eval *e);
void agents_eval_release(struct agents_eval *e);

struct agents_run {
	const struct pragma_optimize_opts *o;
	const struct pragma_backend *backend;
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
	struct pragma_knowledge *kb;   /* the compendium, opened for the first glossary */
};

/* Verify one candidate source (every tunable variant), then time the
 * correct variants in one session with the baseline and best (NULL: none
 * yet; best_n its attempt). The fastest variant is chosen; ev gets its
 * verdict, time, speedup and ratio to the best, all from that session.
 * Returns 0 when it was judged (ev->status says how), -1 when pragma
 * itself failed. */
int agents_evaluate(struct agents_run *R, const char *src_path, json_t *flags, const struct agents_eval *best,
		    int best_n, struct agents_eval *ev, struct pragma_err *err);

/* Time ev's kernel (ev->so_path) again in a session of its own with the
 * baseline and the best, and replace ev's numbers with that session's:
 * for a kernel chosen as the fastest of several, whose numbers came from
 * the rounds that chose it (the winner's curse). A kernel that fails now
 * gets that verdict. 0 judged, -1 when pragma itself failed. */
int agents_retime(struct agents_run *R, struct agents_eval *ev, const struct agents_eval *best, int best_n,
		  struct pragma_err *err);

/* The baseline by the same protocol and estimator as every comparison (a
 * session of the baseline alone), into R->baseline. */
int agents_baseline(struct agents_run *R, struct pragma_err *err);

/* The final comparison of the best with the baseline: a session of its own. */
struct agents_final {
	double time_ms, base_ms;
	struct pragma_ratio speedup;
	int rounds, rounds_made, rounds_clean;
	double worst_disturbance;
	int busy;
	json_t *timing;
};
int agents_final(struct agents_run *R, const struct agents_eval *a, struct agents_final *f, struct pragma_err *err);

/* Profile a verified candidate (metrics, diagnosis, prompt text); extra:
 * requested metric names. Fills ev's profile fields. */
int agents_profile(struct agents_run *R, struct agents_eval *ev, json_t *extra, struct pragma_err *err);
/* "metric: best → current (change)" lines for the Conductor. */
void agents_compare_profiles(const struct agents_eval *cur, const struct agents_eval *best, struct pragma_buf *out);

/* ---- pieces of the requests (lib/agents/prompt.c) ---- */

/* The Conductor's glossary: the compendium's playbooks for the diagnosis's
 * bottlenecks, then entries only for the metrics (names in the object
 * metrics) that the rest of the request shows by name (shown), those asked
 * for (extra: an array of names) first, then those the playbooks point to,
 * then the others; within max bytes (0: no limit), cut between entries
 * with a last line naming what was left out (pragma_knowledge_prompt). */
void agents_glossary(const struct pragma_knowledge *kb, json_t *metrics, json_t *extra, json_t *diagnosis,
		     const char *shown, size_t max, struct pragma_buf *out);

/* code as a numbered listing, "N | line" per line, N right-aligned: the
 * line numbers the compiler and the profile cite (kernel.c:N) for the
 * file written from this very text. */
void agents_code_listing(const char *code, struct pragma_buf *out);

/* The best as a request shows it beside other code. */
struct agents_best_view {
	int n;                      /* its attempt (0: no best yet) */
	const char *code;
	double ms, speedup, lo, hi; /* its time and its speedup with the interval */
	int same_rounds;            /* ms and speedup are from the rounds of the attempt the request is about
	                             * (the Conductor's) or of the last one (the Coder's); no interval */
	int replaced;               /* this attempt replaces it (the Conductor's request) */
};

/* The Conductor's code variables: code (attempt n's, numbered; NULL: it
 * had none), and with a best, best_heading (what it is and its numbers),
 * best_text and best_code (numbered; empty when it is the same code). */
void agents_conductor_code_vars(json_t *vars, int n, const char *code, const struct agents_best_view *b);
/* The Coder's for attempt n: code (last_code, numbered; attempt
 * last_code_n's, 0: none) under code_heading, which says whose it is, and
 * best_heading and best_code when the best is other code. */
void agents_coder_code_vars(json_t *vars, int n, const char *last_code, int last_code_n,
			    const struct agents_best_view *b);
