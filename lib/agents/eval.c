/*
 * The loop's adapter over the Verifier, the timing layer and the Profiler.
 *
 * One timing story per attempt: the kernel's time, its speedup over the
 * baseline and its ratio to the best all come from ONE session with the
 * baseline and the current best (lib/timing: interleaved rounds, fresh
 * processes per session), by the same estimator, and the numbers shown
 * divide to the ratios shown. With tunable variants, every correct one is
 * first timed in a selection session; the fastest there is chosen and
 * timed again in a session of its own with the baseline and the best,
 * which gives the attempt's numbers: the fastest of K measured in the
 * rounds that chose it is favored by their noise (the winner's curse),
 * and would beat the best more often than it should. The variant chosen
 * is the one profiled and shown.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "agents_priv.h"
#include "pragma/diagnose.h"
#include "pragma/fs.h"
#include "pragma/log.h"
#include "pragma/profile.h"
#include "pragma/run.h"
#include "pragma/tensor.h" /* verify.h uses struct pragma_tensor */
#include "pragma/verify.h"

static double mono_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

static void join_flags(json_t *flags, json_t *defines, struct pragma_buf *out)
{
	size_t i;
	json_t *f;
	const char *k;

	json_array_foreach(flags, i, f)
		pragma_buf_addf(out, "%s%s", out->len ? " " : "", json_string_value(f));
	json_object_foreach(defines, k, f)
		pragma_buf_addf(out, "%s-D%s=%s", out->len ? " " : "", k, json_string_value(f));
}

static void verify_opts(struct agents_run *R, struct pragma_verify_opts *vo, const char *flags)
{
	*vo = (struct pragma_verify_opts)PRAGMA_VERIFY_DEFAULTS;
	vo->flags = flags;
	vo->n_sets = R->n_sets;
	vo->threads = R->threads;
	vo->keep = 0; /* the .so lives in the build cache; work dirs hold outputs (GBs) */
	vo->backend = R->backend;
}

/* Fill ev's outcome from a verdict. */
static void take_verdict(struct agents_eval *ev, struct pragma_verdict *v)
{
	snprintf(ev->status, sizeof(ev->status), "%s", pragma_vstatus_name(v->status));
	snprintf(ev->message, sizeof(ev->message), "%s", v->message);
	if (v->status != PRAGMA_V_OK && pragma_vstatus_hint(v->status))
		snprintf(ev->message + strlen(ev->message), sizeof(ev->message) - strlen(ev->message), " (%s)",
			 pragma_vstatus_hint(v->status));
	snprintf(ev->so_path, sizeof(ev->so_path), "%s", v->so_path);
	pragma_buf_reset(&ev->compile_log);
	pragma_buf_add(&ev->compile_log, v->compile_log.data, v->compile_log.len);
	json_decref(ev->verdict);
	ev->verdict = pragma_verdict_json(v);
}

/* All combinations of the tunables, capped: the full grid when it fits,
 * else one tunable at a time around the first values (coordinate search,
 * one sweep). No tunables: one variant without defines. */
static json_t *variants(json_t *tune, int cap)
{
	json_t *out = json_array();
	const char *k;
	json_t *vals;
	size_t total = 1;

	if (!json_object_size(tune)) {
		json_array_append_new(out, json_object());
		return out;
	}
	json_object_foreach(tune, k, vals)
		total *= json_array_size(vals) ? json_array_size(vals) : 1;
	if (total <= (size_t)cap) {
		for (size_t idx = 0; idx < total; idx++) {
			json_t *d = json_object();
			size_t rest = idx;
			json_object_foreach(tune, k, vals) {
				size_t n = json_array_size(vals);
				json_object_set(d, k, json_array_get(vals, rest % n));
				rest /= n;
			}
			json_array_append_new(out, d);
		}
		return out;
	}
	json_t *base = json_object();
	json_object_foreach(tune, k, vals)
		json_object_set(base, k, json_array_get(vals, 0));
	json_array_append(out, base);
	json_object_foreach(tune, k, vals) {
		for (size_t i = 1; i < json_array_size(vals) && json_array_size(out) < (size_t)cap; i++) {
			json_t *d = json_deep_copy(base);
			json_object_set(d, k, json_array_get(vals, i));
			json_array_append_new(out, d);
		}
	}
	json_decref(base);
	return out;
}

/* The session's check of a kernel side's timed outputs. */
static int check_timed(void *ctx, const struct pragma_side *sd, const char *dir, json_t *timed_calls, char *why,
		       size_t why_len, struct pragma_err *err)
{
	struct agents_run *R = ctx;
	char w[1800] = "";
	int r;

	(void)sd;
	r = pragma_verify_saved(&R->task, R->sets, R->n_sets, dir, "timed", timed_calls, -1, -1, w, sizeof(w), err);
	if (r > 0)
		snprintf(why, why_len,
			 "%s in a timed call, though the verified calls were right: the kernel behaves differently on "
			 "later calls",
			 w);
	return r;
}

static void session_opts(struct agents_run *R, struct pragma_session_opts *so, int rounds, const char *what)
{
	memset(so, 0, sizeof(*so));
	so->task = &R->task;
	so->sets = R->sets;
	so->n_sets = R->n_sets;
	so->threads = R->threads;
	so->warmup = 3;
	so->cold = 1;
	so->reps = 5;
	so->rounds = rounds;
	so->max_rounds = 3 * rounds;
	so->sessions = 0;             /* one per 2 rounds: lib/timing/estimate.c says why */
	so->sandbox = 1;
	so->check = check_timed;
	so->check_ctx = R;
	so->what = what;
}

/* The session as stored with the attempt: protocol, interference, and
 * per side its estimate and round medians. */
static json_t *session_json(const struct pragma_session *s, const struct pragma_side *sides, int n)
{
	json_t *j = json_pack("{s:O, s:i, s:i, s:i, s:i, s:f, s:b, s:[]}", "protocol", s->protocol ?: json_null(),
			      "rounds_made", s->rounds_made, "rounds_clean", s->rounds_clean, "rounds_used",
			      s->rounds_used, "retried_rounds", s->retried_rounds, "worst_run_delay_share",
			      s->worst_disturbance, "busy", s->busy, "sides");
	for (int i = 0; i < n; i++) {
		json_t *rm = json_array();
		for (int r = 0; r < sides[i].t.n_rounds; r++)
			json_array_append_new(rm, json_real(sides[i].t.round_median[r]));
		json_array_append_new(json_object_get(j, "sides"),
				      json_pack("{s:s, s:f, s:o}", "label", sides[i].label, "estimate_ms",
						sides[i].estimate_ms, "round_medians_ms", rm));
	}
	return j;
}

/* ev's numbers from a session: side c is the kernel, side 0 the baseline,
 * side 1 the best when best_n (its attempt) is not 0. */
static void take_session(struct agents_eval *ev, struct pragma_side *sides, int n, int c, int best_n,
			 const struct pragma_session *s)
{
	ev->time_ms = sides[c].estimate_ms;
	ev->base_ms = sides[0].estimate_ms;
	pragma_stats_compute(sides[c].t.times_ms, sides[c].t.n_times, &ev->time);
	pragma_stats_compute(sides[0].t.times_ms, sides[0].t.n_times, &ev->base);
	pragma_ratio_compute(&sides[c].t, &sides[0].t, 0, &ev->vs_base);
	ev->speedup = ev->vs_base.ratio;
	ev->busy = s->busy;
	ev->vs_best_n = 0;
	if (best_n) {
		pragma_ratio_compute(&sides[c].t, &sides[1].t, 0, &ev->vs_best);
		pragma_ratio_compute(&sides[1].t, &sides[0].t, 0, &ev->best_vs_base);
		ev->best_ms = sides[1].estimate_ms;
		ev->vs_best_n = best_n;
	}
	json_decref(ev->timing);
	ev->timing = session_json(s, sides, n);
	json_object_set_new(ev->timing, "baseline_config", json_incref(sides[0].config));
	if (sides[0].note[0])
		json_object_set_new(ev->timing, "baseline_note", json_string(sides[0].note));
}

/* The physical limits, on the chosen kernel's time: a time the memory
 * system cannot deliver makes the attempt impossible_speed. */
static void check_limits(struct agents_run *R, struct agents_eval *ev)
{
	struct pragma_verdict lim;

	pragma_verdict_init(&lim);
	pragma_verify_limits(&R->task, R->backend, 1, 0, ev->time_ms, &lim);
	if (lim.status != PRAGMA_V_OK) {
		snprintf(ev->status, sizeof(ev->status), "%s", pragma_vstatus_name(lim.status));
		snprintf(ev->message, sizeof(ev->message), "%s (%s)", lim.message, pragma_vstatus_hint(lim.status) ?: "");
	}
	json_object_set_new(ev->verdict, "status", json_string(ev->status));
	json_object_set_new(ev->verdict, "message", json_string(ev->message));
	json_object_set_new(ev->verdict, "gbs", lim.gbs > 0 ? json_real(lim.gbs) : json_null());
	json_object_set_new(ev->verdict, "gflops", lim.gflops > 0 ? json_real(lim.gflops) : json_null());
	pragma_verdict_release(&lim);
}

/* The verdict of a kernel side that failed in a timing session: its
 * timed outputs were wrong (timed_mismatch), or its process failed. */
static void side_failure(const struct pragma_side *sd, const char *when, struct pragma_verdict *fv)
{
	pragma_verdict_init(fv);
	if (!strcmp(sd->fail.status, "timed_mismatch")) {
		fv->status = PRAGMA_V_TIMED_MISMATCH;
		snprintf(fv->message, sizeof(fv->message), "%.1000s", sd->fail.message);
	} else {
		pragma_verdict_from_run(fv, &sd->fail, when);
	}
}

/* fv becomes the attempt's outcome: ev's status and message (with the
 * category's hint, as take_verdict() words it), and in ev->verdict. */
static void take_failure(struct agents_eval *ev, const struct pragma_verdict *fv)
{
	const char *hint = pragma_vstatus_hint(fv->status);

	snprintf(ev->status, sizeof(ev->status), "%s", pragma_vstatus_name(fv->status));
	snprintf(ev->message, sizeof(ev->message), "%s%s%s%s", fv->message, hint ? " (" : "", hint ? hint : "",
		 hint ? ")" : "");
	json_object_set_new(ev->verdict, "status", json_string(ev->status));
	json_object_set_new(ev->verdict, "message", json_string(fv->message));
}

/* A tunable variant's row in the attempt's table: its time and speedup
 * over the baseline, with the interval, from the session that timed it. */
static void tune_row_set(json_t *row, double time_ms, const struct pragma_ratio *vs_base, int chosen)
{
	json_object_set_new(row, "time_ms", json_real(time_ms));
	json_object_set_new(row, "speedup", json_real(vs_base->ratio));
	json_object_set_new(row, "lo", json_real(vs_base->lo));
	json_object_set_new(row, "hi", json_real(vs_base->hi));
	json_object_set_new(row, "chosen", json_boolean(chosen));
}

/* The sides an attempt's session starts with: the baseline, then the best
 * (labelled with its attempt) when there is one. Returns how many. */
static int lead_sides(struct agents_run *R, struct pragma_side *sides, const struct agents_eval *best, int best_n,
		      char *label, size_t label_len)
{
	int n = 0;

	sides[n].label = "baseline";
	sides[n++].backend = R->backend;
	if (best && best->so_path[0]) {
		snprintf(label, label_len, "best (attempt %d)", best_n);
		sides[n].label = label;
		sides[n].so = best->so_path;
		sides[n++].backend = R->backend;
	}
	return n;
}

/* Runs an attempt's session (its kernel sides from first on) and charges
 * its lock wait and time to ev. The best failing while every kernel side
 * passes is an error: it passed before, so pragma cannot judge the others. */
static int run_attempt_session(struct pragma_side *sides, int n, int first, const struct pragma_session_opts *so,
			       struct pragma_session *s, struct agents_eval *ev, struct pragma_err *err)
{
	double t0 = mono_s(), w0 = pragma_measure_lock_waited(), waited;
	int kernel_failed = 0;

	if (pragma_session_run(sides, n, so, s, err) < 0)
		return -1;
	waited = pragma_measure_lock_waited() - w0;
	ev->lock_s += waited;
	ev->timing_s += mono_s() - t0 - waited;
	for (int k = first; k < n; k++)
		kernel_failed |= sides[k].failed;
	if (first == 2 && sides[1].failed && !kernel_failed)
		return pragma_err_set(err, PRAGMA_E_INTERNAL, "the best kernel failed while timed: %s: %s",
				      sides[1].fail.status, sides[1].fail.message);
	return 0;
}

int agents_evaluate(struct agents_run *R, const char *src_path, json_t *flags, const struct agents_eval *best,
		    int best_n, struct agents_eval *ev, struct pragma_err *err)
{
	struct pragma_buf fl = PRAGMA_BUF_INIT;
	int cap = R->o->max_tune_variants > 0 ? R->o->max_tune_variants : 12;
	json_t *vars, *d, **verdicts = NULL;
	struct pragma_side *sides = NULL;
	struct pragma_session s = { 0 };
	char (*labels)[48] = NULL;
	size_t nv, i;
	int *ok = NULL, n_ok = 0, first_side, ret = -1, confirm = 0;
	double t0 = mono_s(), w0 = pragma_measure_lock_waited();

	snprintf(ev->src_path, sizeof(ev->src_path), "%s", src_path);
	if (!ev->flags)
		ev->flags = flags ? json_incref(flags) : json_array();
	vars = variants(ev->tune, cap);
	nv = json_array_size(vars);
	verdicts = calloc(nv + 1, sizeof(*verdicts));
	ok = calloc(nv + 1, sizeof(int));
	labels = calloc(nv + 3, sizeof(*labels));
	if (json_object_size(ev->tune))
		ev->tune_table = json_array();

	/* 1. Correctness of every variant (each build shared-locked, each run
	 * exclusive: pragma_verify takes the measurement lock itself). */
	json_array_foreach(vars, i, d) {
		struct pragma_verify_opts vo;
		struct pragma_verdict v;
		pragma_buf_reset(&fl);
		join_flags(ev->flags, d, &fl);
		verify_opts(R, &vo, fl.data);
		pragma_verdict_init(&v);
		if (pragma_verify(&R->task, src_path, &vo, &v, err) < 0) {
			pragma_verdict_release(&v);
			goto out;
		}
		ev->build_s += v.compile_ms / 1000;
		if (ev->tune_table)
			json_array_append_new(ev->tune_table, json_pack("{s:O, s:s, s:s}", "defines", d, "status",
									pragma_vstatus_name(v.status), "message", v.message));
		if (v.status == PRAGMA_V_OK)
			ok[n_ok++] = (int)i;
		/* The verdict of the first variant stands when none is correct. */
		if (v.status == PRAGMA_V_OK || i == 0) {
			struct agents_eval tmp;
			agents_eval_init(&tmp);
			take_verdict(&tmp, &v);
			verdicts[i] = json_pack("{s:s, s:s, s:s, s:o, s:s}", "status", tmp.status, "message", tmp.message,
						"so", tmp.so_path, "verdict", json_incref(tmp.verdict), "log",
						tmp.compile_log.data);
			agents_eval_release(&tmp);
		}
		pragma_verdict_release(&v);
	}
	ev->lock_s = pragma_measure_lock_waited() - w0;
	ev->verify_s = mono_s() - t0 - ev->build_s - ev->lock_s;
	if (n_ok == 0) {
		json_t *v0 = verdicts[0];
		snprintf(ev->status, sizeof(ev->status), "%s", json_string_value(json_object_get(v0, "status")));
		snprintf(ev->message, sizeof(ev->message), "%s", json_string_value(json_object_get(v0, "message")));
		pragma_buf_reset(&ev->compile_log);
		pragma_buf_adds(&ev->compile_log, json_string_value(json_object_get(v0, "log")));
		json_decref(ev->verdict);
		ev->verdict = json_incref(json_object_get(v0, "verdict"));
		if (json_object_size(ev->tune)) {
			json_decref(ev->tune);
			ev->tune = json_incref(json_array_get(vars, 0));
		}
		ret = 0;
		goto out;
	}

	/* 2. One timing session: the baseline, the best, the correct variants.
	 * A variant that fails while timed leaves, and the rest are timed
	 * again. With several, this session only chooses (3.), and the chosen
	 * one comes back here to be timed alone (confirm). */
again:
	for (;;) {
		struct pragma_session_opts so;
		char what[200];
		int n, failed = -1;

		sides = calloc((size_t)n_ok + 2, sizeof(*sides));
		n = first_side = lead_sides(R, sides, best, best_n, labels[nv + 1], sizeof(labels[0]));
		for (int k = 0; k < n_ok; k++) {
			json_t *vd = verdicts[ok[k]];
			snprintf(labels[ok[k]], sizeof(labels[0]), n_ok > 1 ? "variant %d" : "candidate", ok[k] + 1);
			sides[n].label = labels[ok[k]];
			sides[n].so = json_string_value(json_object_get(vd, "so"));
			sides[n++].backend = R->backend;
		}
		snprintf(what, sizeof(what), "%s %s", n_ok > 1 ? "time the variants of" : "time", R->task.name);
		session_opts(R, &so, 9, what);
		/* Decide the one comparison that matters: against the best
		 * (or, with no best, the baseline), when there is one variant. */
		if (n_ok == 1) {
			so.decide_a = first_side;
			so.decide_b = best && best->so_path[0] ? 1 : 0;
		}
		pragma_session_release(&s);
		if (run_attempt_session(sides, n, first_side, &so, &s, ev, err) < 0)
			goto out;
		for (int k = first_side; k < n; k++)
			if (sides[k].failed)
				failed = k;
		if (failed < 0)
			break;
		/* Drop the variant that failed. */
		int vi = ok[failed - first_side];
		struct pragma_verdict fv;
		side_failure(&sides[failed], " while timed", &fv);
		if (ev->tune_table) {
			json_t *row = json_array_get(ev->tune_table, (size_t)vi);
			json_object_set_new(row, "status", json_string(pragma_vstatus_name(fv.status)));
			json_object_set_new(row, "message", json_string(fv.message));
		}
		if (n_ok == 1) {
			/* The only one: its failure is the attempt's verdict. */
			json_decref(ev->verdict);
			ev->verdict = json_incref(json_object_get(verdicts[vi], "verdict"));
			take_failure(ev, &fv);
			pragma_verdict_release(&fv);
			ret = 0;
			goto out;
		}
		pragma_verdict_release(&fv);
		memmove(ok + (failed - first_side), ok + (failed - first_side) + 1,
			sizeof(int) * (size_t)(n_ok - (failed - first_side) - 1));
		n_ok--;
		for (int k = 0; k < n; k++)
			pragma_side_release(&sides[k]);
		free(sides);
		sides = NULL;
	}

	/* 3. The fastest variant is the attempt. With several, their table
	 * gets this session's numbers, and the chosen one is timed again. */
	{
		int n = first_side + n_ok, c = first_side;
		for (int k = first_side; k < n; k++)
			if (sides[k].estimate_ms < sides[c].estimate_ms)
				c = k;
		int vi = ok[c - first_side];
		if (n_ok > 1) {
			for (int k = first_side; k < n; k++) {
				struct pragma_ratio vr;
				pragma_ratio_compute(&sides[k].t, &sides[0].t, 0, &vr);
				tune_row_set(json_array_get(ev->tune_table, (size_t)ok[k - first_side]),
					     sides[k].estimate_ms, &vr, k == c);
			}
			for (int k = 0; k < n; k++)
				pragma_side_release(&sides[k]);
			free(sides);
			sides = NULL;
			ok[0] = vi;
			n_ok = 1;
			confirm = 1;
			goto again;
		}
		json_t *vd = verdicts[vi];

		snprintf(ev->status, sizeof(ev->status), "ok");
		ev->message[0] = '\0';
		snprintf(ev->so_path, sizeof(ev->so_path), "%s", json_string_value(json_object_get(vd, "so")));
		pragma_buf_reset(&ev->compile_log);
		pragma_buf_adds(&ev->compile_log, json_string_value(json_object_get(vd, "log")));
		json_decref(ev->verdict);
		ev->verdict = json_deep_copy(json_object_get(vd, "verdict"));
		take_session(ev, sides, n, c, first_side == 2 ? best_n : 0, &s);
		if (json_object_size(ev->tune)) {
			/* One variant alone (the others failed): its row has
			 * this session's numbers; a chosen one keeps its
			 * selection numbers beside the attempt's. */
			if (!confirm)
				tune_row_set(json_array_get(ev->tune_table, (size_t)vi), ev->time_ms, &ev->vs_base, 1);
			ev->confirmed = confirm;
			json_decref(ev->tune);
			ev->tune = json_incref(json_array_get(vars, (size_t)vi));
		}
		check_limits(R, ev);
	}
	ret = 0;
out:
	for (size_t k = 0; k < nv; k++)
		json_decref(verdicts[k]);
	free(verdicts);
	if (sides)
		for (int k = 0; k < n_ok + 2; k++)
			pragma_side_release(&sides[k]);
	free(sides);
	free(ok);
	free(labels);
	json_decref(vars);
	pragma_session_release(&s);
	pragma_buf_release(&fl);
	return ret;
}

int agents_retime(struct agents_run *R, struct agents_eval *ev, const struct agents_eval *best, int best_n,
		  struct pragma_err *err)
{
	struct pragma_side sides[3];
	struct pragma_session_opts so;
	struct pragma_session s = { 0 };
	char what[200], label[48];
	int n, c, ret = -1;

	memset(sides, 0, sizeof(sides));
	n = c = lead_sides(R, sides, best, best_n, label, sizeof(label));
	sides[n].label = "candidate";
	sides[n].so = ev->so_path;
	sides[n++].backend = R->backend;
	snprintf(what, sizeof(what), "time again the chosen version of %s", R->task.name);
	session_opts(R, &so, 9, what);
	so.decide_a = c;
	so.decide_b = c == 2 ? 1 : 0;
	if (run_attempt_session(sides, n, c, &so, &s, ev, err) < 0)
		goto out;
	if (sides[c].failed) {
		/* It passed when it was chosen and fails now: that is its verdict. */
		struct pragma_verdict fv;
		side_failure(&sides[c], " while timed again", &fv);
		take_failure(ev, &fv);
		pragma_verdict_release(&fv);
		ret = 0;
		goto out;
	}
	take_session(ev, sides, n, c, c == 2 ? best_n : 0, &s);
	check_limits(R, ev);
	ret = 0;
out:
	for (int k = 0; k < n; k++)
		pragma_side_release(&sides[k]);
	pragma_session_release(&s);
	return ret;
}

int agents_baseline(struct agents_run *R, struct pragma_err *err)
{
	struct pragma_side side;
	struct pragma_session_opts so;
	struct pragma_session s = { 0 };
	char what[200];
	int ret = -1;

	memset(&side, 0, sizeof(side));
	side.label = "baseline";
	side.backend = R->backend;
	snprintf(what, sizeof(what), "time the baseline of %s", R->task.name);
	session_opts(R, &so, 6, what);
	if (pragma_session_run(&side, 1, &so, &s, err) < 0)
		goto out;
	pragma_baseline_release(&R->baseline);
	snprintf(R->baseline.kind, sizeof(R->baseline.kind), "%s",
		 json_string_value(json_object_get(side.config, "kind")) ?: "?");
	R->baseline.times_ms = side.t.times_ms;
	R->baseline.n_times = side.t.n_times;
	side.t.times_ms = NULL;
	pragma_stats_compute(R->baseline.times_ms, R->baseline.n_times, &R->baseline.stats);
	R->baseline.estimate_ms = side.estimate_ms;
	R->baseline.config = json_incref(side.config);
	if (side.note[0])
		json_object_set_new(R->baseline.config, "note", json_string(side.note));
	ret = 0;
out:
	pragma_side_release(&side);
	pragma_session_release(&s);
	return ret;
}

int agents_final(struct agents_run *R, const struct agents_eval *a, struct agents_final *f, struct pragma_err *err)
{
	struct pragma_side sides[2];
	struct pragma_session_opts so;
	struct pragma_session s = { 0 };
	char what[200];
	int ret = -1;

	memset(sides, 0, sizeof(sides));
	memset(f, 0, sizeof(*f));
	sides[0].label = "baseline";
	sides[0].backend = R->backend;
	sides[1].label = "best";
	sides[1].so = a->so_path;
	sides[1].backend = R->backend;
	snprintf(what, sizeof(what), "final comparison %s", R->task.name);
	session_opts(R, &so, 15, what);
	so.decide_a = 1;
	so.decide_b = 0;
	if (pragma_session_run(sides, 2, &so, &s, err) < 0)
		goto out;
	if (sides[1].failed) {
		pragma_err_set(err, PRAGMA_E_NEGATIVE, "the best kernel failed its final check: %s: %s",
			       sides[1].fail.status, sides[1].fail.message);
		goto out;
	}
	f->time_ms = sides[1].estimate_ms;
	f->base_ms = sides[0].estimate_ms;
	pragma_ratio_compute(&sides[1].t, &sides[0].t, 0, &f->speedup);
	f->rounds = s.rounds_used;
	f->rounds_made = s.rounds_made;
	f->rounds_clean = s.rounds_clean;
	f->worst_disturbance = s.worst_disturbance;
	f->busy = s.busy;
	f->timing = session_json(&s, sides, 2);
	ret = 0;
out:
	pragma_side_release(&sides[0]);
	pragma_side_release(&sides[1]);
	pragma_session_release(&s);
	return ret;
}

int agents_profile(struct agents_run *R, struct agents_eval *ev, json_t *extra, struct pragma_err *err)
{
	const struct pragma_backend *b = R->backend;
	struct pragma_profile_opts po = { 0 };
	struct pragma_profile p;
	struct pragma_diagnosis d = PRAGMA_DIAGNOSIS_INIT;
	const char **ex = NULL, **fl = NULL;
	size_t n_ex = 0, n_fl = 0, i;
	json_t *x;
	const char *k;
	char (*defs)[192] = NULL;
	int ret = -1;

	pragma_profile_init(&p);
	ex = calloc(json_array_size(extra) + 1, sizeof(char *));
	json_array_foreach(extra, i, x)
		if (pragma_metric_find(json_string_value(x)) ||
		    !strncmp(json_string_value(x), b->raw_metric_prefix, strlen(b->raw_metric_prefix)))
			ex[n_ex++] = json_string_value(x);
	fl = calloc(json_array_size(ev->flags) + json_object_size(ev->tune) + 1, sizeof(char *));
	defs = calloc(json_object_size(ev->tune) + 1, sizeof(*defs));
	json_array_foreach(ev->flags, i, x)
		fl[n_fl++] = json_string_value(x);
	i = 0;
	json_object_foreach(ev->tune, k, x) {
		snprintf(defs[i], sizeof(defs[i]), "-D%s=%s", k, json_string_value(x));
		fl[n_fl++] = defs[i++];
	}
	po.task = &R->task;
	po.kernel_src = ev->src_path;
	po.sets = R->sets;
	po.n_sets = R->n_sets;
	po.extra = ex;
	po.n_extra = n_ex;
	po.threads = R->threads;
	po.machine = &R->machine;
	po.flags = fl;
	/* The attempt's session timed this very build beside the baseline:
	 * the roofline uses that time, as the verdict does. */
	po.time_ms = ev->time_ms;
	if (b->profile(&po, &p, err) < 0)
		goto out;
	b->diagnose(&p, &R->machine, &d);
	json_decref(ev->profile);
	ev->profile = pragma_profile_json(&p, ex, n_ex);
	json_decref(ev->metrics);
	ev->metrics = json_incref(json_object_get(ev->profile, "metrics"));
	json_decref(ev->diagnosis);
	ev->diagnosis = pragma_diagnosis_json(&d);
	pragma_buf_reset(&ev->profile_text);
	pragma_profile_table(&p, ex, n_ex, &ev->profile_text);
	/* The compendium's entries are picked when the request is built
	 * (agents_glossary): from what it shows and the room it has. */
	ret = 0;
out:
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);
	free(ex);
	free(fl);
	free(defs);
	return ret;
}

void agents_compare_profiles(const struct agents_eval *cur, const struct agents_eval *best, struct pragma_buf *out)
{
	struct pragma_profile a, b;
	struct pragma_err e = PRAGMA_ERR_INIT;

	pragma_profile_init(&a);
	pragma_profile_init(&b);
	/* The attempt's session timed it beside the best: that decides the
	 * time, not the two profiled runs (and counts of work are judged by
	 * it: Winograd's falling FMA count is not "worse"). */
	enum pragma_time_verdict t = !cur->vs_best_n ? PRAGMA_TIME_UNKNOWN :
				     cur->vs_best.cmp == PRAGMA_CMP_FASTER ? PRAGMA_TIME_FASTER :
				     cur->vs_best.cmp == PRAGMA_CMP_SLOWER ? PRAGMA_TIME_SLOWER : PRAGMA_TIME_SAME;
	if (cur->profile && best->profile && pragma_profile_from_json(best->profile, &b, &e) == 0 &&
	    pragma_profile_from_json(cur->profile, &a, &e) == 0)
		pragma_profile_compare_text_timed(&b, &a, t, out);
	pragma_profile_release(&a);
	pragma_profile_release(&b);
}
