/*
 * eval's timing (DESIGN 3.5): the verified candidate against the task's
 * baseline in one timing session (lib/timing/session.c: interleaved rounds,
 * fresh processes per session, disturbed rounds measured again), then the
 * outputs of the timed calls checked like any other (timed_mismatch), and
 * a time below what the task's minimal bytes need at the backend's highest
 * measured bandwidth is impossible_speed.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pragma/log.h"
#include "verify/verify_priv.h"

/* The session's check of a candidate's timed outputs. */
static int check_timed(void *ctx, const struct pragma_side *sd, const char *dir, json_t *timed_calls, char *why,
		       size_t why_len, struct pragma_err *err)
{
	struct vctx *c = ctx;
	char w[1800] = "";
	int r;

	(void)sd;
	r = pragma_verify_saved(c->t, c->sets, c->n_sets, dir, "timed", timed_calls, c->o->atol, c->o->rtol, w, sizeof(w), err);
	if (r > 0)
		snprintf(why, why_len,
			 "%s in a timed call, though the verified calls were right: the kernel behaves differently on "
			 "later calls",
			 w);
	return r;
}

static void take_times(struct pragma_vtiming *v, struct pragma_side *sd)
{
	v->t = sd->t;
	v->estimate_ms = sd->estimate_ms;
	memset(&sd->t, 0, sizeof(sd->t));
	pragma_stats_compute(v->t.times_ms, v->t.n_times, &v->stats);
}

void pragma_verify_limits(const struct pragma_task *t, const struct pragma_backend *b, int cold, double speed_margin,
			  double ms, struct pragma_verdict *v)
{
	struct pragma_peaks pk;
	struct pragma_err e = PRAGMA_ERR_INIT;

	b = pragma_backend_or_default(b);
	if (ms > 0) {
		if (t->bytes > 0)
			v->gbs = t->bytes / ms / 1e6;
		if (t->flops > 0)
			v->gflops = t->flops / ms / 1e6;
	}
	if (b->peaks(&pk, &e) < 0) {
		vwarn(v, "no machine peaks (%s): impossible_speed not checked", e.msg);
		return;
	}
	double margin = speed_margin > 0 ? speed_margin : 1.5;
	v->peak_gbs = pk.max_gbs;
	v->peak_gflops = pk.gflops;
	/* Warm-cache timing of data that fits in cache may beat DRAM
	 * honestly; cold runs flush more than the LLC before each call. */
	int cache_resident = !cold && pk.cache_bytes && t->bytes < 2.0 * (double)pk.cache_bytes;
	if (pk.max_gbs > 0 && v->gbs > margin * pk.max_gbs && !cache_resident)
		vreject(v, PRAGMA_V_IMPOSSIBLE_SPEED,
			"%.4g ms for %.1f MB of minimal traffic is %.1f GB/s, above %.1fx the highest bandwidth ever "
			"measured here (%.1f GB/s): the timed call cannot have done the work",
			ms, t->bytes / 1e6, v->gbs, margin, pk.max_gbs);
	else if (pk.gflops > 0 && v->gflops > pk.gflops)
		vwarn(v,
		      "%.1f GFLOP/s is above the FP32 peak of %.1f GFLOP/s: fine for algorithms that do fewer FLOPs "
		      "than the task's count (Winograd, Strassen), suspicious otherwise",
		      v->gflops, pk.gflops);
}

int verify_time(struct vctx *c, const char *cand_so, struct pragma_err *err)
{
	struct pragma_verdict *v = c->v;
	const struct pragma_verify_opts *o = c->o;
	struct pragma_side sides[2];
	struct pragma_session_opts so = { 0 };
	struct pragma_session s;
	struct pragma_ratio r;
	char what[200];
	int ret = -1;

	memset(sides, 0, sizeof(sides));
	sides[0].label = "baseline";
	sides[0].backend = c->b;
	sides[1].label = "candidate";
	sides[1].so = cand_so;
	sides[1].backend = c->b;
	sides[1].preload = c->preload;
	snprintf(what, sizeof(what), "time %s", c->t->name);
	so.task = c->t;
	so.sets = c->sets;
	so.n_sets = c->n_sets;
	so.threads = c->threads;
	so.warmup = o->warmup >= 0 ? o->warmup : 3;
	so.cold = o->cold;
	so.reps = o->reps;
	so.rounds = o->rounds;
	so.max_rounds = o->max_rounds;
	so.sessions = o->sessions;
	so.sandbox = !o->no_sandbox;
	so.max_attempts = o->max_attempts;
	so.max_wait_ms = o->max_wait_ms;
	/* A round is a few calls; the verification run made 3 per set with
	 * checks. Ten times that, within [30 s, 10 min], before calling a
	 * round hung. */
	so.round_timeout_ms = o->round_timeout_ms > 0 ? o->round_timeout_ms :
			      c->verify_wall_ms * 10 < 30000 ? 30000 : c->verify_wall_ms * 10 > 600000 ? 600000 :
										   (int)(c->verify_wall_ms * 10);
	so.base_timeout_ms = o->round_timeout_ms > 0 ? o->round_timeout_ms : 600000;
	so.decide_a = 1;
	so.decide_b = 0;
	so.check = check_timed;
	so.check_ctx = c;
	so.what = what;
	v->timed = 1;
	if (pragma_session_run(sides, 2, &so, &s, err) < 0)
		goto out;
	if (sides[0].note[0])
		vwarn(v, "%s", sides[0].note);
	snprintf(v->baseline_kind, sizeof(v->baseline_kind), "%s",
		 json_string_value(json_object_get(sides[0].config, "kind")) ?: "?");
	v->baseline_config = json_incref(sides[0].config);
	v->retried_rounds = s.retried_rounds;
	v->worst_disturbance = s.worst_disturbance;
	v->waited_ms = s.waited_ms;
	v->rounds_made = s.rounds_made;
	v->rounds_clean = s.rounds_clean;
	v->rounds_used = s.rounds_used;
	v->busy = s.busy;
	if (sides[1].failed) {
		if (!strcmp(sides[1].fail.status, "timed_mismatch"))
			vreject(v, PRAGMA_V_TIMED_MISMATCH, "%s", sides[1].fail.message);
		else
			pragma_verdict_from_run(v, &sides[1].fail, " while timed");
		ret = 0;
		goto out;
	}
	if (s.busy)
		vwarn(v,
		      "the machine was busy: only %d of %d rounds ran undisturbed on both sides (the worst lost %.0f%% of "
		      "its time to other processes); these timings are unreliable, measure again when the machine is "
		      "quieter",
		      s.rounds_clean, s.rounds_made, 100 * s.worst_disturbance);
	take_times(&v->cand, &sides[1]);
	take_times(&v->base, &sides[0]);
	pragma_ratio_compute(&v->cand.t, &v->base.t, 0, &r);
	v->speedup = r.ratio;
	v->speedup_lo = r.lo;
	v->speedup_hi = r.hi;
	pragma_verify_limits(c->t, c->b, o->cold, o->speed_margin, v->cand.estimate_ms, v);
	if (v->status)
		v->speedup = 0;
	ret = 0;
out:
	pragma_side_release(&sides[0]);
	pragma_side_release(&sides[1]);
	pragma_session_release(&s);
	return ret;
}
