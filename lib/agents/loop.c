/*
 * pragma_optimize(): the closed loop of DESIGN 1.
 *
 * Each attempt: Coder → parse → evaluate (compile, verify, time; tunable
 * variants) → decide best (interleaved against the current best) →
 * profile (pragma mode) → Conductor (pragma, n-pragma) → next attempt.
 * Every stage is written to the store before the next starts, so a killed
 * run resumes from the last finished attempt.
 */
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "agents_priv.h"
#include "pragma/build.h"
#include "pragma/fs.h"
#include "pragma/log.h"
#include "pragma/reply.h"
#include "pragma/run.h"
#include "pragma/template.h"

const char *pragma_mode_name(enum pragma_mode m)
{
	return m == PRAGMA_MODE_PRAGMA ? "pragma" : m == PRAGMA_MODE_NPRAGMA ? "n-pragma" : "single";
}

int pragma_mode_parse(const char *s, enum pragma_mode *m)
{
	if (!strcmp(s, "pragma"))
		*m = PRAGMA_MODE_PRAGMA;
	else if (!strcmp(s, "n-pragma") || !strcmp(s, "npragma"))
		*m = PRAGMA_MODE_NPRAGMA;
	else if (!strcmp(s, "single"))
		*m = PRAGMA_MODE_SINGLE;
	else
		return -1;
	return 0;
}

void agents_eval_init(struct agents_eval *e)
{
	memset(e, 0, sizeof(*e));
	pragma_buf_init(&e->compile_log);
	pragma_buf_init(&e->profile_text);
}

void agents_eval_release(struct agents_eval *e)
{
	json_decref(e->flags);
	json_decref(e->tune);
	json_decref(e->tune_table);
	json_decref(e->verdict);
	json_decref(e->profile);
	json_decref(e->metrics);
	json_decref(e->diagnosis);
	json_decref(e->timing);
	pragma_buf_release(&e->compile_log);
	pragma_buf_release(&e->profile_text);
	agents_eval_init(e);
}

/* Everything the loop carries from one attempt to the next. */
struct loop {
	struct agents_run R;
	enum pragma_mode mode;
	int have_best;
	int best_n;
	struct agents_eval best;
	char *best_code;
	/* What the next Coder request builds on. */
	char *last_code;            /* the code the instructions refer to */
	struct {                    /* the best as the last attempt's session timed it (n: 0 when it did not) */
		int n;
		double ms, speedup;
	} best_seen;
	int last_code_n;            /* the attempt that wrote it (0: none) */
	double seen_base_ms;        /* the baseline in the latest timing session (0: none yet) */
	int seen_base_n;            /* timing sessions so far */
	struct pragma_buf instructions, feedback;
	json_t *extra_metrics;      /* requested by the Conductor */
	json_t *history;            /* [{"n", "status", "speedup", "lo", "hi", "vs_best", "message", "became_best"}] */
	int since_best;
	int stop;
	int model_failures;         /* consecutive attempts whose Coder request failed */
	char decision[512];         /* this attempt's "Decision: ..." line (ok attempts) */
	/* Resume: the attempt in flight when the run died, and its stored reply. */
	int resume_n;
	char *resume_reply;
	/* Seconds the attempt in flight spent per stage (lock waits apart). */
	double dur[6];
	/* --candidates K: this round's versions [{"version","idea","status",
	 * "message","speedup"}] (empty with one candidate). */
	json_t *round;
	char stop_reason[2100];
};

enum { D_LLM, D_VERIFY, D_TIMING, D_PROFILE, D_LOCK, D_COMPILE };

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* Time a stage: its wall time minus the time it waited for the lock, which
 * is counted apart. */
#define STAGE(L, which, call)                                                                 \
	({                                                                                     \
		double t0_ = mono_s(), w0_ = pragma_measure_lock_waited();                     \
		__auto_type r_ = (call);                                                       \
		double w_ = pragma_measure_lock_waited() - w0_;                                \
		(L)->dur[which] += mono_s() - t0_ - w_;                                        \
		(L)->dur[D_LOCK] += w_;                                                        \
		r_;                                                                            \
	})

static void progress(struct loop *L, int n, const char *stage, const char *line)
{
	struct pragma_progress p = { 0 };
	struct pragma_llm_usage u;

	if (!L->R.o->progress)
		return;
	pragma_llm_usage_get(L->R.llm, &u);
	p.run_id = L->R.run_id;
	p.attempt = n;
	p.max_attempts = L->R.o->attempts;
	p.stage = stage;
	p.best_speedup = L->have_best ? L->best.speedup : 0;
	p.best_attempt = L->have_best ? L->best_n : 0;
	p.tokens = u.prompt_tokens + u.completion_tokens;
	p.cost = u.cost;
	p.line = line;
	L->R.o->progress(L->R.o->progress_ctx, &p);
}

/* One LLM call, recorded in the store whatever happens. */
static int ask(struct loop *L, const char *agent, int n, const char *system, const char *user,
	       struct pragma_llm_reply *rep, struct pragma_err *err)
{
	struct pragma_llm_msg msgs[2] = { { "system", system }, { "user", user } };
	struct pragma_llm_request req = PRAGMA_LLM_REQUEST_INIT;
	struct pragma_err serr = PRAGMA_ERR_INIT;
	int rc;

	req.agent = agent;
	req.attempt = n;
	req.msgs = msgs;
	req.n_msgs = 2;
	rc = STAGE(L, D_LLM, pragma_llm_send(L->R.llm, &req, rep, err));
	json_t *f = json_pack("{s:i, s:s, s:s, s:s, s:I, s:I, s:I, s:b, s:f, s:f, s:s, s:b, s:s, s:s, s:s, s:s, s:i}",
			      "attempt", n, "role", agent, "provider", rep->provider, "model", rep->model,
			      "prompt_tokens", (json_int_t)rep->prompt_tokens, "completion_tokens",
			      (json_int_t)rep->completion_tokens, "reasoning_tokens", (json_int_t)rep->reasoning_tokens,
			      "estimated", rep->estimated, "cost", rep->cost, "latency_ms", rep->latency_ms,
			      "request_hash", rep->request_hash, "cached", rep->cached, "status",
			      rc == 0 ? "ok" : pragma_llm_fail_name(rep->fail), "prompt", user, "reply", rep->text.data,
			      "reasoning", rep->reasoning.data, "retries", rep->retries);
	if (!f || pragma_store_llm_call(L->R.store, L->R.run_id, f, &serr) < 0)
		pragma_warn("could not record an LLM call: %s", f ? serr.msg : "bad reply text");
	json_decref(f);
	return rc;
}

static int render(struct loop *L, const char *name, json_t *vars, struct pragma_buf *out, struct pragma_err *err)
{
	const char *suffix = L->R.backend->prompt_suffix;
	char own[96];
	struct pragma_buf p = PRAGMA_BUF_INIT;

	pragma_buf_reset(out);
	/* The backend's own prompts/<name><suffix>.md, where there is one. */
	if (suffix && strlen(name) + strlen(suffix) < 80) {
		snprintf(own, sizeof(own), "prompts/%.*s%s.md", (int)strlen(name) - 3, name, suffix);
		if (pragma_data_path(own, &p, NULL) == 0 && pragma_path_exists(p.data))
			name = own + 8;
		pragma_buf_release(&p);
	}
	return pragma_template_render_file(name, vars, out, err);
}

/* What every numbered listing is, said where it is shown. Only a run
 * that profiles has a profile that cites lines. */
static void listing_note(const char *fname, int profiled, char *out, size_t len)
{
	snprintf(out, len,
		 "Numbered as %s was compiled: `N | ` starts line N, the line %s cite as %s:N. The numbers are not "
		 "part of the file.",
		 fname, profiled ? "the compiler and the profile" : "the compiler's messages", fname);
}

static json_t *run_vars(struct loop *L, int n)
{
	struct agents_run *R = &L->R;
	struct pragma_buf io = PRAGMA_BUF_INIT, mach = PRAGMA_BUF_INIT, base = PRAGMA_BUF_INIT, work = PRAGMA_BUF_INIT;
	struct pragma_buf src = PRAGMA_BUF_INIT;
	json_t *v;

	agents_io_table(&R->task, &io);
	pragma_task_source_text(&R->task, &src);
	agents_machine_text(&R->machine, &mach);
	agents_baseline_text(&R->task, &R->baseline, L->seen_base_ms, L->seen_base_n, &base);
	agents_work_text(&R->task, &R->machine, &R->baseline, L->seen_base_ms, &work);
	v = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:i, s:f, s:f, s:i, s:i}",
		      "task_name", R->task.name, "category", R->task.category, "task_description",
		      R->task.description ? R->task.description : "", "io_table", io.data, "source_name",
		      R->task.source_name, "source_lang", R->task.kind == PRAGMA_TASK_NATIVE ? "c" : "python", "source",
		      src.data ? src.data : "", "machine", mach.data, "baseline", base.data, "work", work.data, "threads",
		      R->threads, "atol", R->task.atol, "rtol", R->task.rtol, "attempt", n, "max_attempts",
		      R->o->attempts);
	/* The target's own: kernel.h, the compile command, the hardware. */
	if (v)
		R->backend->prompt_vars(v, &R->task, &R->machine,
					L->seen_base_ms > 0 ? L->seen_base_ms : R->baseline.stats.median);
	if (v) { /* the name the compiler and the profile cite lines by (kernel.c:N) */
		char fname[64], note[400];
		snprintf(fname, sizeof(fname), "kernel%s", R->backend->ext);
		json_object_set_new(v, "file_name", json_string(fname));
		listing_note(fname, L->mode == PRAGMA_MODE_PRAGMA, note, sizeof(note));
		json_object_set_new(v, "listing_note", json_string(note));
	}
	if (v) { /* the verifier's rule, per output (docs/verifier.md) */
		char tol[1024];
		json_object_set_new(v, "tolerance", json_string(pragma_task_tolerance_str(&R->task, tol, sizeof(tol))));
	}
	pragma_buf_release(&io);
	pragma_buf_release(&mach);
	pragma_buf_release(&base);
	pragma_buf_release(&work);
	pragma_buf_release(&src);
	return v;
}

/* Verdict text for the Conductor or the Coder: status, message, timing. */
static void round_text(struct loop *L, struct pragma_buf *out)
{
	char iv[72];
	size_t i;
	json_t *v;

	if (json_array_size(L->round) < 2)
		return;
	pragma_buf_addf(out, "\nThis round's %zu versions (each verified and timed against the baseline; the fastest "
			     "correct one goes forward):", json_array_size(L->round));
	json_array_foreach(L->round, i, v) {
		json_t *sp = json_object_get(v, "speedup");
		pragma_buf_addf(out, "\n- version %lld", (long long)json_integer_value(json_object_get(v, "version")));
		const char *idea = json_string_value(json_object_get(v, "idea"));
		if (idea && *idea)
			pragma_buf_addf(out, " (%.160s)", idea);
		pragma_buf_addf(out, ": %s", json_string_value(json_object_get(v, "status")));
		if (json_is_number(sp))
			pragma_buf_addf(out, ", %.2fx", json_number_value(sp));
		else
			pragma_buf_addf(out, " — %.200s", json_string_value(json_object_get(v, "message")) ?: "");
		if (json_is_true(json_object_get(v, "chosen"))) {
			json_t *again = json_object_get(v, "timed_again");
			pragma_buf_adds(out, " ← chosen");
			if (json_is_number(json_object_get(again, "speedup")))
				pragma_buf_addf(out, "; timed again alone (the fastest of several is favored by its own "
						     "noise): %.2fx [%s], the attempt's number",
						json_number_value(json_object_get(again, "speedup")),
						pragma_interval_str(json_number_value(json_object_get(again, "lo")),
								    json_number_value(json_object_get(again, "hi")), iv,
								    sizeof(iv)));
			else if (again)
				pragma_buf_addf(out, "; timed again alone: %s",
						json_string_value(json_object_get(again, "status")) ?: "failed");
		}
	}
}

/* How an interval was made, for the JSON's "method". */
static json_t *interval_method(const struct pragma_ratio *r, const char *whose)
{
	return json_sprintf("95%% interval: a bootstrap over %s sessions and rounds, stretched for few sessions%s",
			    whose, r->looks > 1 ? " and for the looks of a comparison decided as it went" : "");
}

/* How the loop keeps its best, stated the same way everywhere. */
static const char best_rule[] =
	"How the best is kept: every correct attempt is timed in one session together with the baseline and the "
	"current best (interleaved rounds of 5 calls per side, cold cache; a time is the median of its calls). "
	"It replaces the best only when it is faster than the best by at least 3% "
	"and the 95% interval of that ratio lies above 1 (an interval widened because the session checks it each "
	"time it adds rounds); otherwise the best stays and the difference is reported "
	"as not distinguishable.";

static const char *cmp_word(const struct pragma_ratio *r)
{
	if (r->cmp == PRAGMA_CMP_FASTER)
		return "faster";
	if (r->cmp == PRAGMA_CMP_SLOWER)
		return "slower";
	if (r->lo >= 1 / (1 + r->margin) && r->hi <= 1 + r->margin)
		return "the same within the noise";
	return "not distinguishable";
}

/* The session's numbers, each with what it is. */
static void timing_text(struct loop *L, const struct agents_eval *ev, struct pragma_buf *out)
{
	char iv[72];
	json_t *p = json_object_get(ev->timing, "protocol");

	long long kept = json_integer_value(json_object_get(p, "rounds")),
		  made = json_integer_value(json_object_get(p, "rounds_made"));

	pragma_buf_addf(out, "Timing (one session: %lld interleaved rounds kept of %lld, %lld calls per round and side, "
			     "%s, %d threads):",
			kept, made, (long long)json_integer_value(json_object_get(p, "reps_per_round")),
			json_is_true(json_object_get(p, "cold")) ? "cache flushed before every call" : "warm cache",
			L->R.threads);
	if (kept < made)
		pragma_buf_addf(out, "\n- rounds are dropped, on every side alike, when other processes took over %.0f%% of "
				     "a side's time in them (on a machine too busy to leave a third of them, none are "
				     "dropped and the numbers carry a warning)",
				100 * PRAGMA_DISTURBANCE_OK);
	pragma_buf_addf(out, "\n- this kernel%s: %.4g ms (the spread of its calls: min %.4g, max %.4g)",
			json_array_size(ev->tune_table) ? " (the chosen variant)" : "", ev->time_ms, ev->time.min,
			ev->time.max);
	pragma_buf_addf(out, "\n- the baseline (%s), same rounds: %.4g ms → speedup %.2fx [%s]", L->R.baseline.kind,
			ev->base_ms, ev->speedup, pragma_interval_str(ev->vs_base.lo, ev->vs_base.hi, iv, sizeof(iv)));
	if (ev->vs_best_n)
		pragma_buf_addf(out,
				"\n- the best (attempt %d), same rounds: %.4g ms (%.2fx over the baseline) → this kernel vs "
				"the best: %.2fx [%s], %s",
				ev->vs_best_n, ev->best_ms, ev->best_vs_base.ratio, ev->vs_best.ratio,
				pragma_interval_str(ev->vs_best.lo, ev->vs_best.hi, iv, sizeof(iv)), cmp_word(&ev->vs_best));
	/* What the noise lets these rounds resolve: players could not tell
	 * whether a 5% idea was worth an attempt. */
	if (ev->vs_best_n && !strcmp(cmp_word(&ev->vs_best), "not distinguishable") && ev->vs_best.lo > 0)
		pragma_buf_addf(out, " (at this noise the interval spans about ±%.0f%%: a smaller change cannot be told "
				     "apart in one attempt's rounds)",
				100 * (sqrt(ev->vs_best.hi / ev->vs_best.lo) - 1));
	if (ev->busy)
		pragma_buf_adds(out, "\n- warning: the machine was busy during these rounds (few ran undisturbed): the "
				     "numbers are less reliable than usual");
}

static void verdict_text(struct loop *L, const struct agents_eval *ev, struct pragma_buf *out)
{
	char iv[72];

	if (!strcmp(ev->status, "ok")) {
		pragma_buf_addf(out, "Correct on all %d input sets.\n", L->R.n_sets);
		timing_text(L, ev, out);
		if (json_array_size(ev->tune_table)) {
			size_t i;
			json_t *row;
			/* "profiled" only where the mode profiles: players of
			 * n-pragma and single looked for a profile that was not
			 * there. */
			int profiled = L->mode == PRAGMA_MODE_PRAGMA;
			if (ev->confirmed)
				pragma_buf_addf(out, "\nTunable variants (each verified, then timed side by side in a "
						     "session of their own; the fastest there was timed again with the "
						     "baseline and the best, above%s: the fastest of several is favored "
						     "by the noise of the rounds that chose it):",
						profiled ? ", and profiled" : "");
			else
				pragma_buf_addf(out, "\nTunable variants (each verified; the one correct variant is the "
						     "one timed above%s):",
						profiled ? " and profiled" : "");
			json_array_foreach(ev->tune_table, i, row) {
				char *d = json_dumps(json_object_get(row, "defines"), JSON_COMPACT);
				json_t *t = json_object_get(row, "time_ms");
				pragma_buf_addf(out, "\n- %s → ", d ? d : "?");
				if (json_is_number(t))
					pragma_buf_addf(out, "%.4g ms, %.2fx [%s]%s", json_number_value(t),
							json_number_value(json_object_get(row, "speedup")),
							pragma_interval_str(json_number_value(json_object_get(row, "lo")),
									    json_number_value(json_object_get(row, "hi")),
									    iv, sizeof(iv)),
							json_is_true(json_object_get(row, "chosen")) ? " ← chosen" : "");
				else {
					/* A rejected variant's reason, not just its category:
					 * "forbidden_syscall" alone left the Conductor guessing
					 * which call it was. */
					const char *m = json_string_value(json_object_get(row, "message"));
					pragma_buf_addf(out, "%s", json_string_value(json_object_get(row, "status")));
					if (m && *m)
						pragma_buf_addf(out, ": %.400s", m);
				}
				free(d);
			}
		}
		if (L->decision[0])
			pragma_buf_addf(out, "\n%s %s", L->decision, best_rule);
	} else {
		pragma_buf_addf(out, "REJECTED — %s: %s", ev->status, ev->message);
		if (ev->compile_log.len && !strcmp(ev->status, "compile_error")) {
			size_t n = ev->compile_log.len > 3000 ? 3000 : ev->compile_log.len;
			pragma_buf_addf(out, "\nCompiler output (first %zu bytes):\n```\n%.*s\n```", n, (int)n,
					ev->compile_log.data);
		}
	}
	round_text(L, out);
}

/* Likely causes per rejection category: what a reviewer would say first. */
static const char *likely_causes(const char *status)
{
	static const struct { const char *s, *c; } t[] = {
		{ "compile_error", "- a syntax or type error at the line the compiler names; a missing include; an intrinsic that needs a -m flag" },
		{ "link_forbidden", "- a call to a library function outside libc/libm/OpenMP/pthreads (file I/O, BLAS, dlopen, system)" },
		{ "wrong_output", "- an index or stride error (check the layout: row-major, inputs in the order listed)\n- a reduction or tail loop that misses elements\n- a race between threads writing the same output\n- lost precision, when every element is a little off rather than a few far off (the worst element and the norm-wise error say which): a long float sum in one accumulator, a fast exp/division approximation, a normalizer computed in a different order" },
		{ "nan_output", "- outputs not fully written (they arrive as NaN)\n- division by zero or log/sqrt of a negative value\n- reading uninitialized memory" },
		{ "modified_input", "- writing into an input buffer (use a temporary or the output)" },
		{ "output_cached", "- results kept between calls (a static buffer or a memo): every call must compute from its inputs" },
		{ "nondeterministic", "- a data race: threads writing the same location, or reductions without atomics/private accumulators" },
		{ "crash", "- an out-of-bounds access (a tail loop past the end, a wrong shape), a stack overflow from a large local array, misaligned aligned loads" },
		{ "timeout", "- an infinite loop or an algorithm far slower than the reference" },
		{ "memory_limit", "- allocating far more memory than the task needs" },
		{ "forbidden_syscall", "- a system call the sandbox forbids (files, processes, network)" },
		{ "impossible_speed", "- the kernel skipped work: the time is below what reading the inputs once needs" },
		{ "no_code", "- the reply held no complete C code block defining pk_forward" },
	};
	for (size_t i = 0; i < sizeof(t) / sizeof(t[0]); i++)
		if (!strcmp(t[i].s, status))
			return t[i].c;
	return NULL;
}

/* Every attempt, with its own session's numbers and its comparison with
 * the best of its time: the best kept follows from these lines. */
static void history_text(struct loop *L, struct pragma_buf *out)
{
	char iv[72];
	size_t i;
	json_t *h;
	long long best_now = 0;

	json_array_foreach(L->history, i, h) {
		json_t *sp = json_object_get(h, "speedup"), *vb = json_object_get(h, "vs_best");
		if (json_is_true(json_object_get(h, "became_best")))
			best_now = json_integer_value(json_object_get(h, "n"));
		pragma_buf_addf(out, "- attempt %lld: %s", (long long)json_integer_value(json_object_get(h, "n")),
				json_string_value(json_object_get(h, "status")));
		if (json_is_number(sp))
			pragma_buf_addf(out, ", %.2fx [%s] over the baseline", json_number_value(sp),
					pragma_interval_str(json_number_value(json_object_get(h, "lo")),
							    json_number_value(json_object_get(h, "hi")), iv, sizeof(iv)));
		if (json_is_object(vb))
			pragma_buf_addf(out, "; vs the best then (attempt %lld): %.2fx [%s], %s",
					(long long)json_integer_value(json_object_get(vb, "attempt")),
					json_number_value(json_object_get(vb, "ratio")),
					pragma_interval_str(json_number_value(json_object_get(vb, "lo")),
							    json_number_value(json_object_get(vb, "hi")), iv, sizeof(iv)),
					json_string_value(json_object_get(vb, "verdict")));
		if (json_is_true(json_object_get(h, "became_best")))
			pragma_buf_adds(out, " → new best");
		else if (json_is_number(sp))
			pragma_buf_adds(out, " → best kept");
		const char *m = json_string_value(json_object_get(h, "message"));
		if (m && *m)
			pragma_buf_addf(out, " — %.160s", m);
		pragma_buf_addch(out, '\n');
	}
	/* From the lines above, not the loop's state: the Conductor reads this
	 * before the loop adopts an attempt that has just become the best (a
	 * request once said "Decision: attempt 2 is the new best" and "The
	 * best now: attempt 1"). */
	if (best_now)
		pragma_buf_addf(out, "The best now: attempt %lld.\n", best_now);
	else if (L->have_best)
		pragma_buf_addf(out, "The best now: attempt %d.\n", L->best_n);
}

/* The compendium, opened for the first request that needs it. */
static const struct pragma_knowledge *compendium(struct agents_run *R)
{
	struct pragma_err kerr = PRAGMA_ERR_INIT;

	if (!R->kb && pragma_knowledge_open(&R->kb, NULL, &kerr) < 0)
		pragma_warn("the profiling compendium is unavailable: %s", kerr.msg);
	return R->kb;
}

static int conduct(struct loop *L, int n, const struct agents_eval *ev, const char *code, int became_best,
		   json_t *attempt_fields, struct pragma_err *err)
{
	struct pragma_buf sys = PRAGMA_BUF_INIT, user = PRAGMA_BUF_INIT, v = PRAGMA_BUF_INIT;
	struct pragma_buf cmp = PRAGMA_BUF_INIT, hist = PRAGMA_BUF_INIT, summary = PRAGMA_BUF_INIT, gloss = PRAGMA_BUF_INIT;
	struct pragma_llm_reply rep = PRAGMA_LLM_REPLY_INIT;
	struct pragma_conductor_reply cr = PRAGMA_CONDUCTOR_REPLY_INIT;
	struct pragma_err perr = PRAGMA_ERR_INIT;
	json_t *vars = run_vars(L, n);
	int full = L->mode == PRAGMA_MODE_PRAGMA, ret = -1, rc;
	size_t budget = L->R.o->prompt_chars > 0 ? (size_t)L->R.o->prompt_chars : 60000;

	if (!vars) {
		pragma_err_set(err, PRAGMA_E_INPUT, "cannot build the prompt: the task's text is not UTF-8");
		goto out;
	}

	/* n-pragma's Conductor is told it gets no profile (players were
	 * promised one and asked for metrics from an empty list) */
	json_object_set_new(vars, "profiled", json_boolean(full));
	if (render(L, "conductor_system.md", vars, &sys, err) < 0)
		goto out;
	verdict_text(L, ev, &v);
	pragma_buf_addf(&summary,
			"Baseline: %.3f ms (%s, measured when the run began; each verdict below times it again in its own "
			"rounds). ",
			L->R.baseline.stats.median, L->R.baseline.kind);
	agents_work_text(&L->R.task, &L->R.machine, &L->R.baseline, L->seen_base_ms, &summary);
	json_object_set_new(vars, "task_summary", json_string(summary.data));
	/* The code numbered, from the very text written to the file the
	 * compiler saw (the profile's and the compiler's kernel.c:N are these
	 * lines); the best first, under a heading that says what it is and its
	 * numbers (a player read past it when it came after the current
	 * kernel's code and profile). L->best is still the best this attempt
	 * was measured against. */
	{
		struct agents_best_view bv = { 0 };
		if (L->have_best) {
			bv.n = L->best_n;
			bv.code = L->best_code;
			bv.same_rounds = ev->vs_best_n != 0;
			bv.ms = bv.same_rounds ? ev->best_ms : L->best.time_ms;
			bv.speedup = bv.same_rounds ? ev->best_vs_base.ratio : L->best.speedup;
			bv.lo = L->best.vs_base.lo;
			bv.hi = L->best.vs_base.hi;
			bv.replaced = became_best;
		}
		agents_conductor_code_vars(vars, n, code, &bv);
	}
	json_object_set_new(vars, "verdict", json_string(v.data));
	if (strcmp(ev->status, "ok") && likely_causes(ev->status))
		json_object_set_new(vars, "error_causes", json_string(likely_causes(ev->status)));
	if (full && !strcmp(ev->status, "ok")) {
		json_object_set_new(vars, "profile", json_string(ev->profile_text.data));
		if (json_array_size(ev->diagnosis)) {
			struct pragma_buf d = PRAGMA_BUF_INIT;
			size_t i;
			json_t *x;
			json_array_foreach(ev->diagnosis, i, x)
				pragma_buf_addf(&d, "- %s (confidence %.2f): %s\n",
						json_string_value(json_object_get(x, "bottleneck")),
						json_number_value(json_object_get(x, "confidence")),
						json_string_value(json_object_get(x, "evidence")));
			json_object_set_new(vars, "diagnosis", json_string(d.data));
			pragma_buf_release(&d);
		}
	}
	if (L->have_best) {
		if (full && L->best.profile_text.len)
			json_object_set_new(vars, "best_profile", json_string(L->best.profile_text.data));
		if (full && !strcmp(ev->status, "ok")) {
			agents_compare_profiles(ev, &L->best, &cmp);
			json_object_set_new(vars, "comparison", json_string(cmp.data));
		}
	}
	history_text(L, &hist);
	json_object_set_new(vars, "history", json_string(hist.data));
	/* The last attempt's Conductor summarizes the run for the report
	 * instead of instructing a Coder who will not come. */
	if (n >= L->R.o->attempts)
		json_object_set_new(vars, "last", json_true());
	else if (n + 1 == L->R.o->attempts)
		json_object_set_new(vars, "next_last", json_true());
	if (render(L, "conductor.md", vars, &user, err) < 0)
		goto out;
	/* The glossary goes in last, into the room the rest leaves (at most a
	 * sixth of the budget), with entries only for the metrics this very
	 * text shows; the history gives way first when that room is small.
	 * Entries that do not fit are left out whole and named (a request once
	 * ended its glossary "(16 more compe"). */
	if (full && !strcmp(ev->status, "ok") && compendium(&L->R)) {
		const size_t head = 64; /* the section's heading */
		size_t want = budget / 6;
		if (user.len + head + want / 2 > budget && hist.len) {
			pragma_buf_reset(&hist);
			json_object_set_new(vars, "history", json_string(""));
			if (render(L, "conductor.md", vars, &user, err) < 0)
				goto out;
		}
		size_t room = user.len + head < budget ? budget - user.len - head : 0;
		agents_glossary(L->R.kb, ev->metrics, L->extra_metrics, ev->diagnosis, user.data,
				room < want ? room : want, &gloss);
		json_object_set_new(vars, "knowledge", json_string(gloss.data));
		if (gloss.len && render(L, "conductor.md", vars, &user, err) < 0)
			goto out;
	}
	/* Still over budget: the history goes. */
	if (user.len > budget && hist.len) {
		pragma_buf_reset(&hist);
		json_object_set_new(vars, "history", json_string(""));
		if (render(L, "conductor.md", vars, &user, err) < 0)
			goto out;
	}
	progress(L, n, "conducting", NULL);
	rc = ask(L, "conductor", n, sys.data, user.data, &rep, err);
	if (rc == PRAGMA_LLM_STOP) {
		L->stop = 1;
		snprintf(L->stop_reason, sizeof(L->stop_reason), "%s", err->msg);
		ret = 0;
		goto out;
	}
	if (rc < 0) {
		/* The Conductor failed: the Coder gets the raw verdict instead. */
		pragma_warn("attempt %d: the Conductor failed (%s); passing the verdict on", n, err->msg);
		pragma_buf_reset(&L->instructions);
		pragma_buf_addf(&L->instructions, "(The Conductor was unavailable.) %s", v.data);
		ret = 0;
		goto out;
	}
	pragma_reply_parse_conductor(rep.text.data, rep.text.len, &cr, &perr);
	pragma_buf_reset(&L->instructions);
	if (cr.found) {
		if (cr.bottleneck.len)
			pragma_buf_addf(&L->instructions, "Bottleneck: %s\n\n", cr.bottleneck.data);
		pragma_buf_addf(&L->instructions, "%s\n", cr.actions.len ? cr.actions.data : rep.text.data);
		if (cr.algorithm.len)
			pragma_buf_addf(&L->instructions, "\nA different algorithm to consider: %s\n", cr.algorithm.data);
	} else {
		pragma_buf_adds(&L->instructions, rep.text.data);
	}
	json_decref(L->extra_metrics);
	L->extra_metrics = json_array();
	for (int i = 0; i < cr.n_metrics; i++)
		json_array_append_new(L->extra_metrics, json_string(cr.metrics[i]));
	json_object_set_new(attempt_fields, "conductor",
			    json_pack("{s:s, s:s, s:s, s:s, s:O, s:s, s:s, s:s, s:b}", "verdict",
				      pragma_verdict_name(cr.verdict), "bottleneck", cr.bottleneck.data, "actions",
				      cr.actions.data, "algorithm", cr.algorithm.data, "metrics", L->extra_metrics, "missing",
				      cr.missing.data, "text", rep.text.data, "summary", cr.summary.data, "last",
				      n >= L->R.o->attempts));
	ret = 0;
out:
	json_decref(vars);
	pragma_conductor_reply_release(&cr);
	pragma_llm_reply_release(&rep);
	pragma_buf_release(&sys);
	pragma_buf_release(&user);
	pragma_buf_release(&v);
	pragma_buf_release(&cmp);
	pragma_buf_release(&hist);
	pragma_buf_release(&summary);
	pragma_buf_release(&gloss);
	return ret;
}

/* The Coder's user prompt for attempt n. */
static int coder_prompt(struct loop *L, int n, struct pragma_buf *user, struct pragma_err *err)
{
	json_t *vars = run_vars(L, n);
	int ret;

	if (!vars)
		return pragma_err_set(err, PRAGMA_E_INPUT, "cannot build the prompt: the task's text is not UTF-8");
	if (n == 1 || !L->last_code) {
		ret = render(L, "coder_first.md", vars, user, err);
	} else {
		/* The best before the last kernel, each under a heading that
		 * says what it is (agents_coder_code_vars). */
		struct agents_best_view bv = { 0 };
		if (L->have_best) {
			bv.n = L->best_n;
			bv.code = L->best_code;
			bv.ms = L->best.time_ms;
			bv.speedup = L->best.speedup;
			bv.lo = L->best.vs_base.lo;
			bv.hi = L->best.vs_base.hi;
			if (L->best_seen.n == L->best_n) {
				bv.same_rounds = 1;
				bv.ms = L->best_seen.ms;
				bv.speedup = L->best_seen.speedup;
			}
		}
		agents_coder_code_vars(vars, n, L->last_code, L->last_code_n, &bv);
		json_object_set_new(vars, "feedback", json_string(L->feedback.data));
		json_object_set_new(vars, "instructions", json_string(L->instructions.data));
		if (n >= L->R.o->attempts)
			json_object_set_new(vars, "last", json_true());
		ret = render(L, L->mode == PRAGMA_MODE_SINGLE ? "single_refine.md" : "coder_refine.md", vars, user, err);
	}
	if (ret == 0 && L->R.o->candidates > 1) {
		/* K versions per round; how far the best is from its roof says how
		 * different they should be. */
		struct pragma_buf more = PRAGMA_BUF_INIT;
		json_t *rf = L->have_best ? json_object_get(json_object_get(L->best.metrics, "roof.pct_roof"), "value") : NULL;
		json_object_set_new(vars, "candidates", json_integer(L->R.o->candidates));
		if (json_is_number(rf)) {
			char t[160];
			snprintf(t, sizeof(t), "%.0f%%", json_number_value(rf));
			json_object_set_new(vars, "roof_pct", json_string(t));
			if (json_number_value(rf) < 50)
				json_object_set_new(vars, "far_from_roof", json_true());
		}
		if (!L->have_best || json_is_true(json_object_get(vars, "far_from_roof")) || L->since_best >= 2)
			json_object_set_new(vars, "different_algorithms", json_true());
		ret = render(L, "coder_candidates.md", vars, &more, err);
		if (ret == 0)
			pragma_buf_addf(user, "\n\n%s", more.data);
		pragma_buf_release(&more);
	}
	json_decref(vars);
	return ret;
}

static void attempt_dir(struct loop *L, int n, struct pragma_buf *out)
{
	pragma_buf_reset(out);
	pragma_buf_addf(out, "%s/attempt-%02d", L->R.out_dir.data, n);
}

#define MAX_VERSIONS 8
/* Consecutive attempts whose Coder request failed before the run stops. */
#define MAX_MODEL_FAILURES 2

/* --candidates K: the Coder's reply holds up to K versions, each a fenced
 * block (with the prose before it, where its "Version i: idea" line is).
 * Splits the reply into one piece per block that defines pk_forward;
 * returns how many. */
static int split_versions(const char *text, size_t len, struct pragma_buf *out, int max)
{
	size_t seg = 0, i = 0;
	int n = 0, in_fence = 0;
	size_t open_at = 0;

	while (i < len && n < max) {
		size_t eol = i;
		while (eol < len && text[eol] != '\n')
			eol++;
		size_t k = i;
		while (k < eol && (text[k] == ' ' || text[k] == '\t'))
			k++;
		int fence = eol - k >= 3 && (!strncmp(text + k, "```", 3) || !strncmp(text + k, "~~~", 3));
		if (fence && !in_fence) {
			in_fence = 1;
			open_at = i;
		} else if (fence && in_fence && eol == k + 3 + strspn(text + k + 3, "`~")) {
			/* A closing fence: the line is only the fence. */
			in_fence = 0;
			size_t end = eol < len ? eol + 1 : eol;
			if (memmem(text + open_at, end - open_at, "pk_forward", 10)) {
				pragma_buf_reset(&out[n]);
				pragma_buf_add(&out[n], text + seg, end - seg);
				n++;
				seg = end;
			}
		}
		i = eol < len ? eol + 1 : eol;
	}
	return n;
}

/* The one-line idea a version announces ("Version 2: im2col + GEMM"). */
static void version_idea(const char *piece, char *out, size_t len)
{
	const char *p = piece, *fence = strstr(piece, "```");
	const char *best = NULL;

	out[0] = '\0';
	while (p && (!fence || p < fence)) {
		const char *q = p;
		while (*q == ' ' || *q == '#' || *q == '*' || *q == '-')
			q++;
		if (!strncasecmp(q, "version", 7))
			best = q;
		p = strchr(p, '\n');
		if (p)
			p++;
	}
	if (!best)
		return;
	size_t n = strcspn(best, "\n");
	/* Markdown emphasis at its ends is noise; inside ("64*3") it is content. */
	while (n > 0 && (best[n - 1] == '*' || best[n - 1] == ' ' || best[n - 1] == '\r'))
		n--;
	snprintf(out, len, "%.*s", (int)(n < len ? n : len - 1), best);
	char *bold = strstr(out, "**");
	if (bold && bold - out < 16) /* "Version 2:** idea": the closing of a bold label */
		memmove(bold, bold + 2, strlen(bold + 2) + 1);
}

/* Compile, verify and time one version of the code; fields is the store
 * row (n, cand) and gets what the Verifier said. */
static int evaluate_code(struct loop *L, int n, int cand, const struct pragma_code_reply *code, const char *dir,
			 struct agents_eval *ev, json_t *fields, struct pragma_err *err)
{
	struct agents_run *R = &L->R;
	struct pragma_buf src = PRAGMA_BUF_INIT;
	struct pragma_err perr = PRAGMA_ERR_INIT;
	int ret = -1;

	pragma_buf_addf(&src, "%s/kernel%s", dir, R->backend->ext);
	if (pragma_mkdir_p(dir, 0755, err) < 0 || pragma_write_file_atomic(src.data, code->code.data, code->code.len, err) < 0)
		goto out;
	json_t *flags = json_array();
	for (int i = 0; i < code->n_flags; i++)
		json_array_append_new(flags, json_string(code->flags[i]));
	json_t *tunes = json_object();
	for (int i = 0; i < code->n_tunables; i++) {
		json_t *vals = json_array();
		for (int k = 0; k < code->tunables[i].n_values; k++)
			json_array_append_new(vals, json_string(code->tunables[i].values[k]));
		json_object_set_new(tunes, code->tunables[i].name, vals);
	}
	json_decref(ev->flags);
	json_decref(ev->tune);
	ev->flags = flags;
	ev->tune = tunes;
	json_object_set_new(fields, "code", json_string(code->code.data));
	json_object_set_new(fields, "flags", json_incref(flags));
	json_object_set_new(fields, "stage", json_string("verifying"));
	pragma_store_attempt_put(R->store, R->run_id, n, cand, fields, &perr);
	progress(L, n, "verifying", NULL);
	if (agents_evaluate(R, src.data, flags, L->have_best ? &L->best : NULL, L->best_n, ev, err) < 0)
		goto out;
	/* Where the evaluation's time went: builds (tunable variants
	 * included), checking, and the timing session; lock waits apart. */
	L->dur[D_COMPILE] += ev->build_s;
	L->dur[D_VERIFY] += ev->verify_s;
	L->dur[D_TIMING] += ev->timing_s;
	L->dur[D_LOCK] += ev->lock_s;
	ret = 0;
out:
	pragma_buf_release(&src);
	return ret;
}

/* A round of K versions: each parsed, verified and timed against the
 * baseline (its own row (n, 1..K)); the fastest correct one becomes the
 * attempt's code and evaluation. */
static int evaluate_round(struct loop *L, int n, struct pragma_buf *versions, int n_versions, const char *dir,
			  struct pragma_code_reply *code, struct agents_eval *ev, json_t *fields, struct pragma_err *err)
{
	struct agents_run *R = &L->R;
	struct pragma_buf vdir = PRAGMA_BUF_INIT;
	int win = -1, n_ok = 0;
	double win_speedup = 0;

	for (int i = 0; i < n_versions; i++) {
		struct pragma_code_reply c = PRAGMA_CODE_REPLY_INIT;
		struct pragma_err perr = PRAGMA_ERR_INIT;
		struct agents_eval e;
		json_t *f = json_object();
		char idea[200];

		agents_eval_init(&e);
		version_idea(versions[i].data, idea, sizeof(idea));
		if (pragma_reply_parse_code(versions[i].data, versions[i].len, 0, &c, &perr) < 0 || !c.defines_forward) {
			snprintf(e.status, sizeof(e.status), "no_code");
			snprintf(e.message, sizeof(e.message), "%s", perr.msg[0] ? perr.msg : "the block does not define pk_forward");
		} else {
			pragma_buf_reset(&vdir);
			pragma_buf_addf(&vdir, "%s/version-%d", dir, i + 1);
			if (evaluate_code(L, n, i + 1, &c, vdir.data, &e, f, err) < 0) {
				agents_eval_release(&e);
				pragma_code_reply_release(&c);
				json_decref(f);
				pragma_buf_release(&vdir);
				return -1;
			}
		}
		int ok = !strcmp(e.status, "ok");
		n_ok += ok;
		json_object_set_new(f, "status", json_string(e.status));
		json_object_set_new(f, "message", json_string(e.message));
		json_object_set_new(f, "stage", json_string("done"));
		if (ok) {
			json_object_set_new(f, "time_ms", json_real(e.time_ms));
			json_object_set_new(f, "time_stats", pragma_stats_json(&e.time));
			json_object_set_new(f, "speedup", json_real(e.speedup));
		}
		pragma_store_attempt_put(R->store, R->run_id, n, i + 1, f, &perr);
		json_decref(f);
		json_array_append_new(L->round, json_pack("{s:i, s:s, s:s, s:s, s:o, s:b}", "version", i + 1, "idea", idea,
							  "status", e.status, "message", e.message, "speedup",
							  ok ? json_real(e.speedup) : json_null(), "chosen", 0));
		/* The fastest correct version, each against the baseline in its own
		 * interleaved rounds (the ratio cancels drift between versions). */
		if ((ok && (win < 0 || e.speedup > win_speedup)) || (i == 0 && !ok)) {
			if (ok) {
				win = i;
				win_speedup = e.speedup;
			}
			agents_eval_release(ev);
			*ev = e;
			pragma_code_reply_release(code);
			*code = c;
		} else {
			agents_eval_release(&e);
			pragma_code_reply_release(&c);
		}
	}
	pragma_buf_release(&vdir);
	if (win >= 0) {
		json_t *row = json_array_get(L->round, (size_t)win);
		json_object_set_new(row, "chosen", json_true());
		json_object_set_new(fields, "code", json_string(code->code.data));
		json_object_set_new(fields, "flags", json_incref(ev->flags)); /* set by evaluate_code() */
		/* The fastest of several is favored by the noise of the session
		 * that measured it (the winner's curse): its numbers, and its
		 * comparison with the best, come from a session of its own. The
		 * round's table keeps each version's own numbers. */
		if (n_ok > 1) {
			progress(L, n, "timing again", NULL);
			if (agents_retime(R, ev, L->have_best ? &L->best : NULL, L->best_n, err) < 0)
				return -1;
			json_object_set_new(row, "timed_again",
					    !strcmp(ev->status, "ok") ? json_pack("{s:f, s:f, s:f}", "speedup", ev->speedup,
									  "lo", ev->vs_base.lo, "hi", ev->vs_base.hi) :
									json_pack("{s:s}", "status", ev->status));
		}
		char m[sizeof(ev->message)];
		snprintf(m, sizeof(m), "version %d of %d (the fastest correct one of this round%s)", win + 1, n_versions,
			 n_ok > 1 ? ", timed again alone" : "");
		if (!ev->message[0])
			snprintf(ev->message, sizeof(ev->message), "%s", m);
	} else if (code->code.len) {
		json_object_set_new(fields, "code", json_string(code->code.data));
	}
	json_object_set_new(fields, "round", json_incref(L->round));
	return 0;
}

/* Run one attempt. Returns -1 only when pragma itself cannot go on. */
static int attempt(struct loop *L, int n, struct pragma_err *err)
{
	struct agents_run *R = &L->R;
	struct pragma_buf sys = PRAGMA_BUF_INIT, user = PRAGMA_BUF_INIT, dir = PRAGMA_BUF_INIT, src = PRAGMA_BUF_INIT;
	struct pragma_llm_reply rep = PRAGMA_LLM_REPLY_INIT;
	struct pragma_code_reply code = PRAGMA_CODE_REPLY_INIT;
	struct pragma_err perr = PRAGMA_ERR_INIT;
	struct agents_eval ev;
	json_t *fields = json_object(), *vars = run_vars(L, n);
	struct pragma_buf versions[MAX_VERSIONS];
	int ret = -1, rc, became_best = 0, same_build = 0, n_versions = 0;
	char line[512];
	double ev_time = 0, ev_speedup = 0, ev_lo = 0, ev_hi = 0;

	agents_eval_init(&ev);
	for (int i = 0; i < MAX_VERSIONS; i++)
		pragma_buf_init(&versions[i]);
	memset(L->dur, 0, sizeof(L->dur));
	json_decref(L->round);
	L->round = json_array();
	if (!vars) {
		pragma_err_set(err, PRAGMA_E_INPUT, "cannot build the prompt: the task's text is not UTF-8");
		goto out;
	}
	attempt_dir(L, n, &dir);
	if (pragma_mkdir_p(dir.data, 0755, err) < 0)
		goto out;
	json_object_set_new(fields, "stage", json_string("coding"));
	json_object_set_new(fields, "status", json_string("running"));
	pragma_store_attempt_put(R->store, R->run_id, n, 0, fields, &perr);

	progress(L, n, "coding", NULL);
	/* single mode has no profile and no Conductor, n-pragma no profile:
	 * the system prompt says so */
	json_object_set_new(vars, "single", json_boolean(L->mode == PRAGMA_MODE_SINGLE));
	json_object_set_new(vars, "profiled", json_boolean(L->mode == PRAGMA_MODE_PRAGMA));
	if (render(L, "coder_system.md", vars, &sys, err) < 0 || coder_prompt(L, n, &user, err) < 0)
		goto out;
	if (L->resume_reply && L->resume_n == n) {
		/* The reply that came before the interruption (stored with the
		 * attempt): used again, not asked for again. */
		pragma_buf_adds(&rep.text, L->resume_reply);
		free(L->resume_reply);
		L->resume_reply = NULL;
		pragma_info("attempt %d: using the Coder's reply stored before the run was interrupted", n);
		rc = 0;
	} else {
		rc = ask(L, "coder", n, sys.data, user.data, &rep, err);
	}
	if (rc == PRAGMA_LLM_STOP) {
		L->stop = 1;
		snprintf(L->stop_reason, sizeof(L->stop_reason), "%s", err->msg);
		json_object_set_new(fields, "status", json_string("stopped"));
		json_object_set_new(fields, "message", json_string(err->msg));
		pragma_store_attempt_put(R->store, R->run_id, n, 0, fields, &perr);
		pragma_err_clear(err);
		ret = 0;
		goto out;
	}
	if (rc < 0) {
		/* A model that keeps failing (a dead server, a bad key, an exec
		 * command that exits non-zero) ends the run, resumable, rather
		 * than burning the attempts: exit 3 from the CLI. */
		if (++L->model_failures >= MAX_MODEL_FAILURES) {
			struct pragma_err e = *err;
			pragma_err_set(err, PRAGMA_E_ENV, "the model failed %d attempts in a row; the last time: %.1800s",
				       L->model_failures, e.msg);
			pragma_err_hint(err, "%s", e.hint[0] ? e.hint :
					"check the model settings with 'pragma llm ping', then continue with 'pragma optimize --resume RUN'");
			json_object_set_new(fields, "status", json_string("llm_error"));
			json_object_set_new(fields, "message", json_string(e.msg));
			pragma_store_attempt_put(R->store, R->run_id, n, 0, fields, &perr);
			goto out;
		}
		snprintf(ev.status, sizeof(ev.status), "llm_error");
		snprintf(ev.message, sizeof(ev.message), "the Coder's request failed: %.1900s", err->msg);
		pragma_warn("attempt %d: %s", n, ev.message);
		pragma_err_clear(err);
	} else {
		L->model_failures = 0;
		json_object_set_new(fields, "coder_reply", json_string(rep.text.data));
		if (R->o->candidates > 1)
			n_versions = split_versions(rep.text.data, rep.text.len, versions,
						    R->o->candidates < MAX_VERSIONS ? R->o->candidates : MAX_VERSIONS);
		if (n_versions > 1) {
			/* parsed one by one in evaluate_round() */
		} else if (pragma_reply_parse_code(rep.text.data, rep.text.len, rep.truncated, &code, &perr) < 0 ||
		    !code.defines_forward) {
			snprintf(ev.status, sizeof(ev.status), "no_code");
			snprintf(ev.message, sizeof(ev.message), "%s", code.truncated ? "the code block was cut off by the token limit" :
				 perr.msg[0] ? perr.msg : "the reply's code does not define pk_forward");
		}
	}
	if (!ev.status[0] && n_versions > 1) {
		if (evaluate_round(L, n, versions, n_versions, dir.data, &code, &ev, fields, err) < 0)
			goto out;
	} else if (!ev.status[0]) {
		if (evaluate_code(L, n, 0, &code, dir.data, &ev, fields, err) < 0)
			goto out;
	}

	/* The best is replaced only by a verified candidate that is faster
	 * than it in the same session, beyond the interval and the margin
	 * (DESIGN 3.5; best_rule). An identical build is never faster. */
	if (!strcmp(ev.status, "ok")) {
		if (!L->have_best)
			became_best = 1;
		else if (!strcmp(ev.so_path, L->best.so_path))
			same_build = 1;
		else
			became_best = ev.vs_best_n && ev.vs_best.cmp == PRAGMA_CMP_FASTER;
		if (L->mode == PRAGMA_MODE_PRAGMA) {
			progress(L, n, "profiling", NULL);
			if (STAGE(L, D_PROFILE, agents_profile(R, &ev, L->extra_metrics, &perr)) < 0)
				pragma_warn("attempt %d: profile failed: %s", n, perr.msg);
		}
	}
	json_object_set_new(fields, "status", json_string(ev.status));
	json_object_set_new(fields, "message", json_string(ev.message));
	if (ev.compile_log.len)
		json_object_set_new(fields, "compile_log", json_string(ev.compile_log.data));
	if (!strcmp(ev.status, "ok")) {
		json_object_set_new(fields, "time_ms", json_real(ev.time_ms));
		json_object_set_new(fields, "time_stats", pragma_stats_json(&ev.time));
		json_object_set_new(fields, "baseline_ms", json_real(ev.base_ms));
		if (ev.base_ms > 0) {
			L->seen_base_ms = ev.base_ms;
			L->seen_base_n++;
		}
		json_object_set_new(fields, "speedup", json_real(ev.speedup));
		json_object_set_new(fields, "speedup_spread",
				    json_pack("{s:f, s:f, s:o}", "lo", ev.vs_base.lo, "hi", ev.vs_base.hi, "method",
					      interval_method(&ev.vs_base, "the session's")));
		if (ev.vs_best_n)
			json_object_set_new(fields, "vs_best",
					    json_pack("{s:i, s:f, s:f, s:f, s:s, s:f, s:f, s:b}", "attempt", ev.vs_best_n,
						      "ratio", ev.vs_best.ratio, "lo", ev.vs_best.lo, "hi", ev.vs_best.hi,
						      "verdict", same_build ? "the same build" : cmp_word(&ev.vs_best),
						      "best_ms", ev.best_ms, "best_speedup", ev.best_vs_base.ratio,
						      "same_build", same_build));
		if (ev.timing)
			json_object_set_new(fields, "timing", json_incref(ev.timing));
		if (ev.tune_table)
			json_object_set_new(fields, "tunables",
					    json_pack("{s:O, s:O, s:b}", "chosen", ev.tune ? ev.tune : json_null(), "table",
						      ev.tune_table, "timed_again", ev.confirmed));
		if (ev.metrics)
			json_object_set_new(fields, "metrics", json_incref(ev.metrics));
		if (ev.diagnosis)
			json_object_set_new(fields, "diagnosis", json_incref(ev.diagnosis));
	}
	/* The history line of this attempt, before the Conductor reads it. */
	{
		json_t *h = json_pack("{s:i, s:s, s:o, s:s, s:b}", "n", n, "status", ev.status, "speedup",
				      strcmp(ev.status, "ok") ? json_null() : json_real(ev.speedup), "message", ev.message,
				      "became_best", became_best);
		if (!strcmp(ev.status, "ok")) {
			json_object_set_new(h, "lo", json_real(ev.vs_base.lo));
			json_object_set_new(h, "hi", json_real(ev.vs_base.hi));
			if (json_object_get(fields, "vs_best"))
				json_object_set(h, "vs_best", json_object_get(fields, "vs_best"));
		}
		json_array_append_new(L->history, h);
	}

	/* The Conductor (or, in single mode, the plain feedback). */
	L->decision[0] = '\0';
	if (!strcmp(ev.status, "ok")) {
		if (became_best)
			snprintf(L->decision, sizeof(L->decision), "Decision: attempt %d is the new best%s.", n,
				 ev.vs_base.hi < 1 ? ", though still slower than the baseline"
				 : ev.vs_base.lo <= 1 ? ", though not distinguishable from the baseline" : "");
		else if (same_build)
			snprintf(L->decision, sizeof(L->decision),
				 "Decision: the same build as the best (attempt %d), which stays.", L->best_n);
		else
			snprintf(L->decision, sizeof(L->decision), "Decision: the best stays attempt %d.", L->best_n);
	}
	pragma_buf_reset(&L->feedback);
	verdict_text(L, &ev, &L->feedback);
	/* The Coder's next request shows the best by the numbers of the
	 * session it just read, not its own older ones. */
	L->best_seen.n = !strcmp(ev.status, "ok") && ev.vs_best_n && !became_best ? ev.vs_best_n : 0;
	L->best_seen.ms = ev.best_ms;
	L->best_seen.speedup = ev.best_vs_base.ratio;
	free(L->last_code);
	L->last_code = strdup(code.code.len ? code.code.data : (L->best_code ? L->best_code : ""));
	L->last_code_n = code.code.len ? n : L->best_code ? L->best_n : 0;
	/* No Conductor for an attempt whose Coder never answered: there is
	 * nothing to conduct, and the model is likely down too. */
	if (L->mode != PRAGMA_MODE_SINGLE && strcmp(ev.status, "llm_error")) {
		json_object_set_new(fields, "stage", json_string("conducting"));
		pragma_store_attempt_put(R->store, R->run_id, n, 0, fields, &perr);
		if (conduct(L, n, &ev, code.code.len ? code.code.data : NULL, became_best, fields, err) < 0)
			goto out;
	}

	ev_time = ev.time_ms;
	ev_speedup = ev.speedup;
	ev_lo = ev.vs_base.lo;
	ev_hi = ev.vs_base.hi;
	if (became_best) {
		agents_eval_release(&L->best);
		L->best = ev;
		agents_eval_init(&ev);
		free(L->best_code);
		L->best_code = strdup(code.code.data);
		if (L->have_best) {
			json_t *old = json_pack("{s:b}", "is_best", 0);
			pragma_store_attempt_put(R->store, R->run_id, L->best_n, 0, old, &perr);
			json_decref(old);
		}
		L->best_n = n;
		L->have_best = 1;
		L->since_best = 0;
		json_object_set_new(fields, "is_best", json_true());
		struct pragma_buf bp = PRAGMA_BUF_INIT;
		pragma_buf_addf(&bp, "%s/best%s", R->out_dir.data, R->backend->ext);
		pragma_write_file_atomic(bp.data, L->best_code, strlen(L->best_code), &perr);
		pragma_buf_release(&bp);
		json_t *rf = json_pack("{s:i, s:f, s:f}", "best_attempt", n, "best_speedup", L->best.speedup, "best_time_ms",
				       L->best.time_ms);
		pragma_store_run_update(R->store, R->run_id, rf, &perr);
		json_decref(rf);
	} else {
		L->since_best++;
	}
	json_object_set_new(fields, "durations",
			    json_pack("{s:f, s:f, s:f, s:f, s:f, s:f}", "llm", L->dur[D_LLM], "compile", L->dur[D_COMPILE],
				      "verify", L->dur[D_VERIFY], "timing", L->dur[D_TIMING], "profile", L->dur[D_PROFILE],
				      "lock_wait", L->dur[D_LOCK]));
	json_object_set_new(fields, "stage", json_string("done"));
	if (pragma_store_attempt_put(R->store, R->run_id, n, 0, fields, err) < 0)
		goto out;

	if (!strcmp(json_string_value(json_object_get(fields, "status")), "ok")) {
		char iv[72];
		int k = snprintf(line, sizeof(line), "attempt %d/%d: ok, %.4g ms, %.2fx [%s]", n, R->o->attempts,
				 ev_time, ev_speedup, pragma_interval_str(ev_lo, ev_hi, iv, sizeof(iv)));
		if (json_object_get(fields, "vs_best"))
			snprintf(line + k, sizeof(line) - (size_t)k, "; vs best (attempt %lld): %.2fx, %s",
				 (long long)json_integer_value(json_object_get(json_object_get(fields, "vs_best"), "attempt")),
				 json_number_value(json_object_get(json_object_get(fields, "vs_best"), "ratio")),
				 became_best ? "new best" : "best kept");
		else if (became_best)
			snprintf(line + k, sizeof(line) - (size_t)k, " (new best)");
	} else {
		snprintf(line, sizeof(line), "attempt %d/%d: %s: %.300s", n, R->o->attempts,
			 json_string_value(json_object_get(fields, "status")), json_string_value(json_object_get(fields, "message")));
	}
	progress(L, n, "done", line);
	ret = 0;
out:
	json_decref(fields);
	json_decref(vars);
	agents_eval_release(&ev);
	pragma_code_reply_release(&code);
	pragma_llm_reply_release(&rep);
	pragma_buf_release(&sys);
	pragma_buf_release(&user);
	pragma_buf_release(&dir);
	pragma_buf_release(&src);
	for (int i = 0; i < MAX_VERSIONS; i++)
		pragma_buf_release(&versions[i]);
	return ret;
}

static int setup(struct loop *L, struct pragma_err *err)
{
	struct agents_run *R = &L->R;
	const struct pragma_optimize_opts *o = R->o;
	uint64_t seeds[PRAGMA_DEFAULT_SETS];
	char *path = NULL;
	int ret = -1;

	if (pragma_store_open(&R->store, o->db, err) < 0)
		return -1;
	if (o->resume) {
		json_t *run = pragma_store_run_get(R->store, o->resume, err);
		if (!run)
			return -1;
		snprintf(R->run_id, sizeof(R->run_id), "%s", json_string_value(json_object_get(run, "id")));
		/* Artifacts go where the run put them before. */
		const char *prev = json_string_value(json_object_get(json_object_get(run, "config"), "out"));
		if (prev && !o->out)
			pragma_buf_adds(&R->out_dir, prev);
		json_decref(run);
	} else {
		pragma_store_new_run_id(R->run_id);
	}
	if (pragma_task_resolve(o->task, &path, err) < 0)
		goto out;
	if (pragma_task_load(path, o->overrides, o->n_overrides, &R->task, err) < 0)
		goto out;
	/* For exec providers (a person or a helper playing the model per task). */
	setenv("PRAGMA_TASK", R->task.name, 1);
	setenv("PRAGMA_MODE", pragma_mode_name(o->mode), 1);
	{
		char tr[16];
		snprintf(tr, sizeof(tr), "%d", o->trajectory);
		setenv("PRAGMA_TRAJECTORY", tr, 1);
	}
	/* No place to run kernels: stop before any model call (exit 3). */
	if (R->backend->require(err) < 0)
		goto out;
	if (pragma_llm_open(&R->llm, &o->llm, err) < 0)
		goto out;
	if (pragma_machine_load(&R->machine, 0, err) < 0)
		goto out;
	R->threads = pragma_usable_cores();
	R->n_sets = PRAGMA_DEFAULT_SETS;
	for (int i = 0; i < R->n_sets; i++)
		seeds[i] = pragma_ref_seed(i);
	if (pragma_ref_ensure(&R->task, seeds, R->n_sets, R->sets, err) < 0)
		goto out;
	if (agents_baseline(R, err) < 0)
		goto out;
	if (R->out_dir.len) {
		/* resumed: kept from the stored run */
	} else if (o->out) {
		pragma_buf_adds(&R->out_dir, o->out);
	} else {
		const char *slash = strrchr(o->db, '/');
		if (slash)
			pragma_buf_addf(&R->out_dir, "%.*s/runs/%s", (int)(slash - o->db), o->db, R->run_id);
		else
			pragma_buf_addf(&R->out_dir, "runs/%s", R->run_id);
	}
	if (pragma_mkdir_p(R->out_dir.data, 0755, err) < 0)
		goto out;
	ret = 0;
out:
	free(path);
	return ret;
}

static int create_run(struct loop *L, struct pragma_err *err)
{
	struct agents_run *R = &L->R;
	const struct pragma_optimize_opts *o = R->o;
	json_t *ov = json_array();
	char *settings = pragma_llm_settings_json(R->llm);

	for (int i = 0; i < o->n_overrides; i++)
		json_array_append_new(ov, json_string(o->overrides[i]));
	json_t *f = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:{s:i, s:i, s:f, s:f, s:i, s:o, s:s, s:s}, s:o, s:o}",
			      "task_path", R->task.path, "task_name", R->task.name, "category", R->task.category,
			      "task_kind", R->task.kind == PRAGMA_TASK_NATIVE ? "native" : "kernelbench", "task_hash",
			      R->task.content_hash, "mode", pragma_mode_name(o->mode), "llm", pragma_llm_describe(R->llm),
			      "status", "running", "config", "attempts", o->attempts, "candidates", o->candidates,
			      "target_speedup", o->target_speedup, "target_roof", o->target_roof, "patience", o->patience,
			      "overrides", ov, "out", R->out_dir.data, "llm_settings", settings ? settings : "{}",
			      "machine", pragma_machine_json(&R->machine), "baseline", pragma_baseline_json(&R->baseline));
	free(settings);
	/* What --resume needs to talk to the same model again. */
	const char *spec = o->llm.spec ? o->llm.spec : getenv("PRAGMA_LLM");
	if (spec)
		json_object_set_new(json_object_get(f, "config"), "llm_spec", json_string(spec));
	json_object_set_new(json_object_get(f, "config"), "backend", json_string(R->backend->name));
	if (o->suite_id) {
		json_object_set_new(f, "suite_id", json_string(o->suite_id));
		json_object_set_new(json_object_get(f, "config"), "trajectory", json_integer(o->trajectory));
	}
	int r = pragma_store_run_create(R->store, R->run_id, f, err);
	json_decref(f);
	return r;
}

/* The stored best's chosen tunables as one-value lists, so its evaluation
 * builds exactly that variant. */
static int restore_tune(struct agents_eval *ev, json_t *chosen)
{
	const char *k;
	json_t *v;

	json_decref(ev->tune);
	ev->tune = json_object();
	json_object_foreach(chosen, k, v)
		json_object_set_new(ev->tune, k, json_pack("[O]", v));
	return 0;
}

/* Rebuild the loop state of a stored run: the history, the best (evaluated
 * again, since its timing belongs to this process), the last instructions.
 * Returns the next attempt number. */
static int restore(struct loop *L, struct pragma_err *err)
{
	struct agents_run *R = &L->R;
	json_t *run = pragma_store_run_get(R->store, R->run_id, err), *att, *a;
	size_t i;
	int next = 1;

	if (!run)
		return -1;
	att = json_object_get(run, "attempts");
	json_array_foreach(att, i, a) {
		int n = (int)json_integer_value(json_object_get(a, "n"));
		const char *stage = json_string_value(json_object_get(a, "stage"));
		const char *status = json_string_value(json_object_get(a, "status"));
		if (json_integer_value(json_object_get(a, "candidate")) != 0)
			continue; /* a version of a --candidates round: its attempt's row speaks for it */
		if (!stage || strcmp(stage, "done")) {
			/* The attempt in flight when the run died is redone, with
			 * the Coder's reply if it had come: the model was paid for
			 * it, and a scripted or replayed model has moved on. */
			const char *reply = json_string_value(json_object_get(a, "coder_reply"));
			free(L->resume_reply);
			L->resume_reply = reply && *reply ? strdup(reply) : NULL;
			L->resume_n = n;
			continue;
		}
		next = n + 1;
		{
			json_t *h = json_pack("{s:i, s:s, s:O, s:s, s:b}", "n", n, "status", status ? status : "?", "speedup",
					      json_object_get(a, "speedup") ?: json_null(), "message",
					      json_string_value(json_object_get(a, "message")) ?: "", "became_best",
					      json_is_true(json_object_get(a, "became_best")) ||
						      json_integer_value(json_object_get(a, "is_best")));
			json_t *sp = json_object_get(a, "speedup_spread");
			if (json_is_number(json_object_get(sp, "lo"))) {
				json_object_set(h, "lo", json_object_get(sp, "lo"));
				json_object_set(h, "hi", json_object_get(sp, "hi"));
			}
			if (json_object_get(a, "vs_best"))
				json_object_set(h, "vs_best", json_object_get(a, "vs_best"));
			json_array_append_new(L->history, h);
		}
		const char *code = json_string_value(json_object_get(a, "code"));
		free(L->last_code);
		L->last_code = strdup(code ? code : (L->best_code ? L->best_code : ""));
		L->last_code_n = code ? n : L->best_code ? L->best_n : 0;
		pragma_buf_reset(&L->instructions);
		json_t *c = json_object_get(a, "conductor");
		const char *act = json_string_value(json_object_get(c, "actions"));
		const char *text = json_string_value(json_object_get(c, "text"));
		if (act && *act)
			pragma_buf_adds(&L->instructions, act);
		else if (text)
			pragma_buf_adds(&L->instructions, text);
		pragma_buf_reset(&L->feedback);
		pragma_buf_addf(&L->feedback, "%s: %s", status ? status : "?",
				json_string_value(json_object_get(a, "message")) ?: "");
		if (json_integer_value(json_object_get(a, "is_best")) && code) {
			struct pragma_buf dir = PRAGMA_BUF_INIT, src = PRAGMA_BUF_INIT;
			agents_eval_release(&L->best);
			attempt_dir(L, n, &dir);
			pragma_buf_addf(&src, "%s/kernel%s", dir.data, R->backend->ext);
			if (pragma_mkdir_p(dir.data, 0755, err) == 0 &&
			    pragma_write_file_atomic(src.data, code, strlen(code), err) == 0 &&
			    restore_tune(&L->best, json_object_get(json_object_get(a, "tunables"), "chosen")) == 0 &&
			    agents_evaluate(R, src.data, json_object_get(a, "flags"), NULL, 0, &L->best, err) == 0 &&
			    !strcmp(L->best.status, "ok")) {
				L->have_best = 1;
				L->best_n = n;
				free(L->best_code);
				L->best_code = strdup(code);
				if (L->mode == PRAGMA_MODE_PRAGMA)
					agents_profile(R, &L->best, NULL, err);
			} else {
				pragma_warn("resume: the stored best (attempt %d) no longer verifies: %s", n,
					    L->best.status[0] ? L->best.message : err->msg);
			}
			pragma_buf_release(&dir);
			pragma_buf_release(&src);
		}
	}
	json_decref(run);
	pragma_err_clear(err);
	return next;
}

static json_t *summary(struct loop *L, const char *status, const struct agents_final *f)
{
	struct agents_run *R = &L->R;
	struct pragma_llm_usage u;
	json_t *att = json_array(), *best = json_null();
	size_t i;
	json_t *h;

	pragma_llm_usage_get(R->llm, &u);
	/* A resumed run's usage is the whole run's: every call is in the store. */
	{
		struct pragma_err e = PRAGMA_ERR_INIT;
		json_t *run = pragma_store_run_get(R->store, R->run_id, &e);
		json_t *c = json_object_get(run, "llm_calls");
		if (json_is_object(c)) {
			u.calls = (uint64_t)json_integer_value(json_object_get(c, "count")) -
				  (uint64_t)json_integer_value(json_object_get(c, "cached"));
			u.prompt_tokens = (uint64_t)json_integer_value(json_object_get(c, "prompt_tokens"));
			u.completion_tokens = (uint64_t)json_integer_value(json_object_get(c, "completion_tokens"));
			u.cost = json_number_value(json_object_get(c, "cost"));
			u.estimated_calls = (uint64_t)json_integer_value(json_object_get(c, "estimated"));
		}
		json_decref(run);
	}
	json_array_foreach(L->history, i, h) {
		json_t *a = json_pack("{s:O, s:O, s:O, s:O}", "n", json_object_get(h, "n"), "status",
				      json_object_get(h, "status"), "speedup", json_object_get(h, "speedup"), "message",
				      json_object_get(h, "message"));
		if (json_is_number(json_object_get(h, "lo")))
			json_object_set_new(a, "speedup_spread", json_pack("{s:O, s:O}", "lo", json_object_get(h, "lo"), "hi",
									   json_object_get(h, "hi")));
		if (json_object_get(h, "vs_best"))
			json_object_set(a, "vs_best", json_object_get(h, "vs_best"));
		json_object_set(a, "became_best", json_object_get(h, "became_best"));
		json_array_append_new(att, a);
	}
	if (L->have_best) {
		char path[4200];
		snprintf(path, sizeof(path), "%s/best%s", R->out_dir.data, R->backend->ext);
		/* The final comparison is the headline when it ran; the attempt's
		 * own session stays beside it, labelled. */
		best = json_pack("{s:i, s:f, s:f, s:s, s:o, s:{s:f, s:f, s:f, s:f}}", "attempt", L->best_n, "speedup",
				 f ? f->speedup.ratio : L->best.speedup, "time_ms", f ? f->time_ms : L->best.time_ms, "path",
				 path, "time_stats", pragma_stats_json(&L->best.time), "in_its_attempt", "speedup",
				 L->best.speedup, "lo", L->best.vs_base.lo, "hi", L->best.vs_base.hi, "time_ms",
				 L->best.time_ms);
		if (f) {
			json_object_set_new(best, "speedup_spread",
					    json_pack("{s:f, s:f, s:o}", "lo", f->speedup.lo, "hi", f->speedup.hi, "method",
						      interval_method(&f->speedup, "the final comparison's")));
			json_object_set_new(best, "final",
					    json_pack("{s:f, s:f, s:i, s:i, s:i, s:f, s:b}", "time_ms", f->time_ms, "baseline_ms",
						      f->base_ms, "rounds", f->rounds, "rounds_made", f->rounds_made,
						      "rounds_clean", f->rounds_clean, "worst_run_delay_share",
						      f->worst_disturbance, "busy", f->busy));
			if (f->busy)
				json_object_set_new(best, "warning",
						    json_sprintf("the machine was busy during the final comparison: only %d of %d "
								 "rounds ran undisturbed (the worst lost %.0f%% of its time to "
								 "other processes); measure again when it is quieter "
								 "(pragma eval)",
								 f->rounds_clean, f->rounds_made, 100 * f->worst_disturbance));
		} else {
			json_object_set_new(best, "speedup_spread",
					    json_pack("{s:f, s:f, s:o}", "lo", L->best.vs_base.lo, "hi", L->best.vs_base.hi,
						      "method", interval_method(&L->best.vs_base, "its attempt's")));
		}
	}
	return json_pack("{s:s, s:s, s:s, s:s, s:s, s:o, s:o, s:o, s:{s:I, s:I, s:I, s:f, s:b, s:I}, s:s}", "run", R->run_id,
			 "task", R->task.name, "mode", pragma_mode_name(L->mode), "status", status, "baseline_kind",
			 R->baseline.kind, "baseline", pragma_stats_json(&R->baseline.stats), "best", best, "attempts", att,
			 "usage", "tokens", (json_int_t)(u.prompt_tokens + u.completion_tokens), "prompt_tokens",
			 (json_int_t)u.prompt_tokens, "completion_tokens", (json_int_t)u.completion_tokens, "cost", u.cost,
			 "tokens_estimated", u.estimated_calls > 0, "calls", (json_int_t)u.calls, "stop_reason",
			 L->stop_reason);
}

int pragma_optimize(const struct pragma_optimize_opts *o, json_t **result, struct pragma_err *err)
{
	struct loop L;
	struct pragma_err perr = PRAGMA_ERR_INIT;
	struct agents_final fin = { 0 };
	int have_final = 0, n, ret = -1;

	memset(&L, 0, sizeof(L));
	*result = NULL;
	L.R.o = o;
	L.R.backend = pragma_backend_or_default(o->backend);
	L.mode = o->mode;
	pragma_buf_init(&L.R.out_dir);
	pragma_buf_init(&L.instructions);
	pragma_buf_init(&L.feedback);
	agents_eval_init(&L.best);
	L.history = json_array();
	L.extra_metrics = json_array();
	if (o->attempts < 1) {
		pragma_err_set(err, PRAGMA_E_INPUT, "--attempts must be at least 1");
		goto out;
	}
	if (setup(&L, err) < 0)
		goto out;
	if (o->resume) {
		n = restore(&L, err);
		if (n < 0)
			goto out;
		/* A recording picks up where the run stopped. */
		json_t *roles = pragma_store_calls_by_role(L.R.store, L.R.run_id, &perr);
		const char *role;
		json_t *cnt;
		json_object_foreach(roles, role, cnt)
			pragma_llm_skip(L.R.llm, role, (int)json_integer_value(cnt));
		json_decref(roles);
		json_t *rf = json_pack("{s:s}", "status", "running");
		pragma_store_run_update(L.R.store, L.R.run_id, rf, &perr);
		json_decref(rf);
		pragma_info("resuming %s at attempt %d", L.R.run_id, n);
	} else {
		if (create_run(&L, err) < 0)
			goto out;
		n = 1;
	}
	for (; n <= o->attempts && !L.stop; n++) {
		if (attempt(&L, n, err) < 0)
			goto out;
		if (L.have_best && o->target_speedup > 0 && L.best.speedup >= o->target_speedup) {
			snprintf(L.stop_reason, sizeof(L.stop_reason), "target speedup %.2fx reached", o->target_speedup);
			break;
		}
		if (o->patience > 0 && L.since_best >= o->patience && n < o->attempts) {
			snprintf(L.stop_reason, sizeof(L.stop_reason), "%d attempts without a new best", o->patience);
			break;
		}
		if (L.have_best && o->target_roof > 0) {
			json_t *rf = json_object_get(json_object_get(L.best.metrics, "roof.pct_roof"), "value");
			if (json_is_number(rf) && json_number_value(rf) / 100 >= o->target_roof) {
				snprintf(L.stop_reason, sizeof(L.stop_reason), "%.0f%% of the roofline reached",
					 100 * o->target_roof);
				break;
			}
		}
	}
	if (!L.stop_reason[0])
		snprintf(L.stop_reason, sizeof(L.stop_reason), "attempt budget (%d) used", o->attempts);
	if (L.have_best) {
		progress(&L, o->attempts, "final", NULL);
		memset(L.dur, 0, sizeof(L.dur));
		if (STAGE(&L, D_TIMING, agents_final(&L.R, &L.best, &fin, &perr)) == 0)
			have_final = 1;
		else
			pragma_warn("final interleaved comparison failed: %s", perr.msg);
	}
	*result = summary(&L, L.stop ? "stopped" : "done", have_final ? &fin : NULL);
	json_object_set_new(*result, "final_seconds",
			    json_pack("{s:f, s:f}", "timing", L.dur[D_TIMING], "lock_wait", L.dur[D_LOCK]));
	json_t *f = json_pack("{s:s, s:O, s:O}", "status", L.stop ? "stopped" : "done", "usage",
			      json_object_get(*result, "usage"), "summary", *result);
	if (have_final) {
		json_object_set_new(f, "best_speedup", json_real(fin.speedup.ratio));
		json_decref(fin.timing);
	}
	pragma_store_run_update(L.R.store, L.R.run_id, f, &perr);
	json_decref(f);
	progress(&L, o->attempts, "done", NULL);
	ret = 0;
out:
	if (ret < 0 && L.R.store && L.R.run_id[0]) {
		json_t *sf = json_pack("{s:s}", "status", "interrupted");
		pragma_store_run_update(L.R.store, L.R.run_id, sf, &perr);
		json_decref(sf);
	}
	agents_eval_release(&L.best);
	free(L.best_code);
	free(L.last_code);
	free(L.resume_reply);
	json_decref(L.history);
	json_decref(L.extra_metrics);
	json_decref(L.round);
	pragma_buf_release(&L.instructions);
	pragma_buf_release(&L.feedback);
	pragma_buf_release(&L.R.out_dir);
	pragma_baseline_release(&L.R.baseline);
	pragma_task_release(&L.R.task);
	pragma_llm_free(L.R.llm);
	if (L.R.kb)
		pragma_knowledge_free(L.R.kb);
	pragma_store_close(L.R.store);
	return ret;
}
