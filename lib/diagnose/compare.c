/*
 * What changed between the best kernel so far and a candidate, metric by
 * metric, in the words the paper's Conductor uses ("speedup dropped from
 * 2.93x to 2.54x; IPC higher; backend bound lower"). A change inside a
 * metric's noise (registry) is not reported.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pragma/diagnose.h"

static int changed(const struct pragma_metric_def *d, const char *unit, double a, double b)
{
	double noise = d ? d->noise : 0.05, scale = fmax(fabs(a), fabs(b));

	if (a == b)
		return 0;
	if (fabs(a - b) <= noise * scale)
		return 0;
	/* Percentages: also at least one point. */
	if (!strcmp(unit, "%") && fabs(a - b) < 1)
		return 0;
	return 1;
}

/* Counts that measure how much work the code does, which a different
 * algorithm changes whatever its quality. */
static const char *const work_counts[] = {
	"static.fma", "static.fp_ops", "static.fp_mul", "static.fp_add", "static.instructions", "static.loads",
	"static.stores", "static.branches", "cpu.instructions", "cpu.branches", "sim.instructions", "sim.fp_ops",
	"sim.data_refs", "sim.branches", "sim.insn_per_flop", "sim.fma_pct", "mca.uops_per_iter",
	"mca.cycles_per_iter",
};

static int is_work_count(const char *name)
{
	for (size_t i = 0; i < sizeof(work_counts) / sizeof(work_counts[0]); i++)
		if (!strcmp(name, work_counts[i]))
			return 1;
	return 0;
}

/* Rates the roofline takes from each attempt's own timing session: two
 * attempts' values come from two sessions, which the session that timed
 * them side by side supersedes (a player saw "% of roofline 93% -> 69%
 * (worse)" beside "1.20x, not distinguishable"). */
int pragma_metric_session_rate(const char *name)
{
	return !strcmp(name, "roof.gbs") || !strcmp(name, "roof.gflops") || !strncmp(name, "roof.pct_", 9);
}

/* A rate and the count it divides: a rate that moved while its count did
 * not moved with the number of accesses, not with the misses. */
static const char *const rate_counts[][2] = {
	{ "sim.d1_miss_rate", "sim.d1_misses" },
	{ "sim.ll_miss_rate", "sim.ll_misses" },
	{ "sim.branch_mispredict_rate", "sim.branch_mispredicts" },
};

static void judge_rate(struct pragma_change *c, const struct pragma_profile *best, const struct pragma_profile *cur)
{
	for (size_t i = 0; i < sizeof(rate_counts) / sizeof(rate_counts[0]); i++) {
		const struct pragma_metric *mb, *mc;
		if (strcmp(c->name, rate_counts[i][0]))
			continue;
		mb = pragma_profile_find(best, rate_counts[i][1]);
		mc = pragma_profile_find(cur, rate_counts[i][1]);
		if (mb && mc && !changed(pragma_metric_find(mb->name), mc->unit, mb->value, mc->value)) {
			size_t k = strlen(c->text);
			c->assessment = 0;
			snprintf(c->text + k, sizeof(c->text) - k,
				 " (the count, %s, did not change: the rate moved with the number of accesses)",
				 rate_counts[i][1]);
		}
	}
}

/* The compiler's "loop vectorized" remarks count the loops it vectorized,
 * not how vector the code is: loops written with intrinsics are vector code
 * already and get no remark (a player read "loops vectorized lower (worse)"
 * of an intrinsics kernel whose FP instructions were all packed). */
static void judge_remarks(struct pragma_change *c, const struct pragma_profile *cur)
{
	double packed;

	if (strcmp(c->name, "static.loops_vectorized") && strcmp(c->name, "static.loops_not_vectorized"))
		return;
	if (pragma_profile_get(cur, "static.fp_packed_pct", &packed) && packed >= 50) {
		size_t k = strlen(c->text);
		c->assessment = 0;
		snprintf(c->text + k, sizeof(c->text) - k,
			 " (not judged: %.0f%% of the FP instructions are packed, and loops written as vector code "
			 "get no remark)",
			 packed);
	}
}

/* +1 cur faster, -1 slower, 0 the same or unknown: from the profiles when
 * the caller has no session verdict. The roofline's rates come first: in
 * the loop they use the attempt's session time (one profiled run's time is
 * 10-30% off); then a speedup both have, then the median times. */
static int time_sign(const struct pragma_profile *best, const struct pragma_profile *cur, enum pragma_time_verdict t)
{
	static const struct {
		const char *name;
		int higher_is_faster;
	} order[] = { { "roof.gbs", 1 }, { "roof.gflops", 1 }, { "time.speedup", 1 }, { "time.median_ms", 0 } };
	double a, b;

	if (t == PRAGMA_TIME_FASTER)
		return 1;
	if (t == PRAGMA_TIME_SLOWER)
		return -1;
	if (t == PRAGMA_TIME_SAME)
		return 0;
	for (size_t i = 0; i < sizeof(order) / sizeof(order[0]); i++) {
		const struct pragma_metric_def *d = pragma_metric_find(order[i].name);
		if (!pragma_profile_get(best, order[i].name, &b) || !pragma_profile_get(cur, order[i].name, &a) || a <= 0 ||
		    b <= 0)
			continue;
		if (fabs(a - b) <= (d ? d->noise : 0.10) * fmax(a, b))
			return 0;
		return (a > b) == order[i].higher_is_faster ? 1 : -1;
	}
	return 0;
}

/* One kernel runs the task's FLOP count above the FP32 peak and the other
 * does not, or both do at clearly different rates: different amounts of
 * arithmetic, a different algorithm. */
static int algorithm_changed(const struct pragma_profile *best, const struct pragma_profile *cur)
{
	double a, b;
	int hb = pragma_profile_get(best, "roof.flops_over_peak", &b), hc = pragma_profile_get(cur, "roof.flops_over_peak", &a);

	if (hb != hc)
		return 1;
	return hb && fabs(a - b) > 0.25 * fmax(a, b);
}

static void fill(struct pragma_change *c, const struct pragma_metric *mb, const struct pragma_metric *mc)
{
	const struct pragma_metric_def *d = pragma_metric_find(mc->name);
	char a[48], b[48];

	memset(c, 0, sizeof(*c));
	snprintf(c->name, sizeof(c->name), "%s", mc->name);
	c->before = mb->value;
	c->after = mc->value;
	c->direction = mc->value > mb->value ? 1 : -1;
	if (d && d->better != PRAGMA_BETTER_NEUTRAL)
		c->assessment = (d->better == PRAGMA_BETTER_HIGHER) == (c->direction > 0) ? 1 : -1;
	pragma_metric_format(mb->value, mc->unit, a, sizeof(a));
	pragma_metric_format(mc->value, mc->unit, b, sizeof(b));
	if (!strcmp(mc->name, "time.speedup"))
		snprintf(c->text, sizeof(c->text), "speedup %s from %s to %s", c->direction > 0 ? "rose" : "dropped", a, b);
	else if (!strcmp(mc->name, "time.median_ms"))
		snprintf(c->text, sizeof(c->text), "median time %s from %s to %s (%+.0f%%)",
			 c->direction > 0 ? "rose" : "fell", a, b, 100 * (mc->value - mb->value) / mb->value);
	else
		snprintf(c->text, sizeof(c->text), "%s %s (%s -> %s)", d ? d->label : mc->name,
			 c->direction > 0 ? "higher" : "lower", a, b);
}

/* A count of work judged by the time: never worse while the time improved
 * (the algorithm did less, or other, work), never better while it got
 * worse; with a different algorithm on the two sides, neither. */
static void judge_work(struct pragma_change *c, int tsign, int algo)
{
	size_t k = strlen(c->text);

	if (algo) {
		c->assessment = 0;
		c->algorithm = 1;
		snprintf(c->text + k, sizeof(c->text) - k, " (changed with the algorithm: one kernel does fewer FLOPs "
							   "than the task counts)");
	} else if (c->assessment && tsign && c->assessment != tsign) {
		/* A new tile or unroll moves counts as much as an algorithm
		 * does: players read "changed with the algorithm" of a tile. */
		c->assessment = 0;
		c->algorithm = 2;
		snprintf(c->text + k, sizeof(c->text) - k, " (not judged: %s of this work, yet %s: the work is done "
							   "another way, and the time decides)",
			 c->direction < 0 ? "less" : "more", tsign > 0 ? "faster" : "slower");
	}
}

int pragma_profile_compare_timed(const struct pragma_profile *best, const struct pragma_profile *cur,
				 enum pragma_time_verdict t, struct pragma_change **out, size_t *n)
{
	size_t nd, k = 0;
	const struct pragma_metric_def *defs = pragma_metric_defs(&nd);
	/* the headline first */
	static const char *const first[] = { "time.speedup", "time.median_ms" };
	int have_speedup = pragma_profile_find(best, "time.speedup") && pragma_profile_find(cur, "time.speedup");
	int tsign = time_sign(best, cur, t), algo = algorithm_changed(best, cur);

	*out = calloc(cur->n + 2, sizeof(**out));
	if (!*out)
		abort();
	/* With a session verdict, the time is that verdict's alone: the
	 * profiled runs' times (counters on) and the roof rates from each
	 * attempt's own session are not compared at all. */
	for (int i = 0; i < 2 && t == PRAGMA_TIME_UNKNOWN; i++) {
		const struct pragma_metric *mb = pragma_profile_find(best, first[i]), *mc = pragma_profile_find(cur, first[i]);
		if (!mb || !mc || (i == 1 && have_speedup))
			continue;
		if (changed(pragma_metric_find(first[i]), mc->unit, mb->value, mc->value))
			fill(&(*out)[k++], mb, mc);
	}
	for (size_t i = 0; i < nd; i++) {
		const char *name = defs[i].name;
		const struct pragma_metric *mb, *mc;
		if (!strcmp(name, "time.speedup") || !strcmp(name, "time.median_ms") ||
		    !strcmp(name, "time.min_ms") || !strcmp(name, "time.stdev_pct") || !strncmp(name, "roof.peak", 9) ||
		    !strcmp(name, "roof.ridge_ai") || (t != PRAGMA_TIME_UNKNOWN && pragma_metric_session_rate(name)))
			continue;
		mb = pragma_profile_find(best, name);
		mc = pragma_profile_find(cur, name);
		if (mb && mc && changed(&defs[i], mc->unit, mb->value, mc->value)) {
			fill(&(*out)[k], mb, mc);
			if (is_work_count(name))
				judge_work(&(*out)[k], tsign, algo);
			judge_rate(&(*out)[k], best, cur);
			judge_remarks(&(*out)[k], cur);
			k++;
		}
	}
	/* raw perf:EVENT metrics, in the candidate's order */
	for (size_t i = 0; i < cur->n && k < cur->n + 2; i++) {
		const struct pragma_metric *mc = &cur->metrics[i], *mb;
		if (pragma_metric_find(mc->name) || !(mb = pragma_profile_find(best, mc->name)))
			continue;
		if (changed(NULL, mc->unit, mb->value, mc->value))
			fill(&(*out)[k++], mb, mc);
	}
	*n = k;
	return 0;
}

int pragma_profile_compare(const struct pragma_profile *best, const struct pragma_profile *cur,
			   struct pragma_change **out, size_t *n)
{
	return pragma_profile_compare_timed(best, cur, PRAGMA_TIME_UNKNOWN, out, n);
}

void pragma_profile_compare_text_timed(const struct pragma_profile *best, const struct pragma_profile *cur,
				       enum pragma_time_verdict t, struct pragma_buf *out)
{
	struct pragma_change *c;
	size_t n;
	int sim = 0, timing_only = 1;
	double tb, tc;

	pragma_profile_compare_timed(best, cur, t, &c, &n);
	if (t != PRAGMA_TIME_UNKNOWN)
		pragma_buf_adds(out, "time and roofline: the timing session that ran both side by side decides (the "
				     "verdict); each profile's time and roof fraction come from its own attempt's session, "
				     "so they are not compared here\n");
	if (!n)
		pragma_buf_adds(out, "no metric changed beyond its noise\n");
	for (size_t i = 0; i < n; i++) {
		pragma_buf_addf(out, "%s%s\n", c[i].text,
				c[i].assessment > 0 ? " (better)" : c[i].assessment < 0 ? " (worse)" : "");
		if (!strncmp(c[i].name, "sim.", 4))
			sim = 1;
		if (strncmp(c[i].name, "time.", 5))
			timing_only = 0;
	}
	if (t == PRAGMA_TIME_UNKNOWN && pragma_profile_get(best, "time.median_ms", &tb) &&
	    pragma_profile_get(cur, "time.median_ms", &tc) && tb > 0 && fabs(tc - tb) / tb < 0.3)
		pragma_buf_addf(out, "note: the times differ by %.0f%%, within the 10-30%% one run can be off; "
				     "only an interleaved run decides which is faster\n",
				100 * fabs(tc - tb) / tb);
	if (sim && (cur->threads > 1 || best->threads > 1))
		pragma_buf_addf(out, "note: sim.* figures simulate 1 of %d threads; a version that simulates better can "
				     "run slower\n",
				cur->threads > best->threads ? cur->threads : best->threads);
	(void)timing_only;
	free(c);
}

void pragma_profile_compare_text(const struct pragma_profile *best, const struct pragma_profile *cur,
				 struct pragma_buf *out)
{
	pragma_profile_compare_text_timed(best, cur, PRAGMA_TIME_UNKNOWN, out);
}

const char *pragma_change_label(const struct pragma_change *c, const char *neutral)
{
	if (c->algorithm == 1)
		return "changed with the algorithm";
	if (c->algorithm == 2)
		return "not judged: moved against the time";
	return c->assessment > 0 ? "better" : c->assessment < 0 ? "worse" : neutral;
}

json_t *pragma_profile_compare_json(const struct pragma_profile *best, const struct pragma_profile *cur)
{
	struct pragma_change *c;
	size_t n;
	json_t *a = json_array();

	pragma_profile_compare(best, cur, &c, &n);
	for (size_t i = 0; i < n; i++)
		json_array_append_new(a, json_pack("{s:s, s:f, s:f, s:s, s:s, s:s}", "name", c[i].name, "before",
						   c[i].before, "after", c[i].after, "change",
						   c[i].direction > 0 ? "higher" : "lower", "assessment",
						   pragma_change_label(&c[i], "neutral"), "text", c[i].text));
	free(c);
	return a;
}
