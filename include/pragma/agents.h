/*
 * The optimization loop (DESIGN 1): Coder → Verifier → Profiler → Conductor
 * → Coder, with the historical best kept for the whole run, every step
 * stored in the run store so a killed run resumes losing at most the
 * attempt in flight.
 */
#ifndef PRAGMA_AGENTS_H
#define PRAGMA_AGENTS_H

#include <jansson.h>

#include "pragma/backend.h"
#include "pragma/err.h"
#include "pragma/llm.h"

enum pragma_mode {
	PRAGMA_MODE_PRAGMA,   /* everything: profile, diagnosis, compendium, best's profile */
	PRAGMA_MODE_NPRAGMA,  /* Conductor sees code, errors, times and speedups — no metrics */
	PRAGMA_MODE_SINGLE,   /* no Conductor: the Coder gets correctness and time feedback */
};

const char *pragma_mode_name(enum pragma_mode m);
int pragma_mode_parse(const char *s, enum pragma_mode *m);

/* What the loop reports while it runs (for a live status line). */
struct pragma_progress {
	const char *run_id;
	int attempt, max_attempts;
	const char *stage;        /* coding, compiling, verifying, timing, profiling, conducting, done */
	double best_speedup;      /* 0: none yet */
	int best_attempt;
	unsigned long long tokens;
	double cost;
	const char *line;         /* a finished step, for plain logs; NULL otherwise */
};

struct pragma_optimize_opts {
	const char *task;                 /* path or built-in name */
	const char *const *overrides;     /* --set */
	int n_overrides;
	struct pragma_llm_options llm;    /* spec etc. */
	enum pragma_mode mode;
	const struct pragma_backend *backend; /* the target (pragma/backend.h); NULL: the CPU */
	int attempts;                     /* default 15 */
	int candidates;                   /* per round, default 1 */
	double target_speedup;            /* stop when reached (0: off) */
	double target_roof;               /* stop at this fraction of the binding roof (0: off) */
	int patience;                     /* stop after N attempts without a new best (0: off) */
	int prompt_chars;                 /* prompt size budget (0: 60000) */
	int max_tune_variants;            /* autotuning cap per candidate (0: 12) */
	const char *db;                   /* run store file */
	const char *out;                  /* artifacts dir (NULL: <db dir>/runs/<run>) */
	const char *resume;               /* run id to continue */
	const char *suite_id;             /* the `pragma bench` suite run this run belongs to (NULL: none) */
	int trajectory;                   /* which of the suite's --repeat trajectories (0-based) */
	void (*progress)(void *ctx, const struct pragma_progress *p);
	void *progress_ctx;
};

/* Run (or resume) an optimization. Returns 0 when the run ended normally
 * (budget or early stop), with *result holding the JSON summary of
 * DESIGN/issue 6: {"run", "task", "mode", "best": {...}, "attempts": [...],
 * "usage": {...}}; -1 with err otherwise (the run is left resumable). */
int pragma_optimize(const struct pragma_optimize_opts *o, json_t **result, struct pragma_err *err);

#endif
