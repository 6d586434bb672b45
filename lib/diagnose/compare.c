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

int pragma_profile_compare(const struct pragma_profile *best, const struct pragma_profile *cur,
			   struct pragma_change **out, size_t *n)
{
	size_t nd, k = 0;
	const struct pragma_metric_def *defs = pragma_metric_defs(&nd);
	/* the headline first */
	static const char *const first[] = { "time.speedup", "time.median_ms" };
	int have_speedup = pragma_profile_find(best, "time.speedup") && pragma_profile_find(cur, "time.speedup");

	*out = calloc(cur->n + 2, sizeof(**out));
	if (!*out)
		abort();
	for (int i = 0; i < 2; i++) {
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
		    !strcmp(name, "roof.ridge_ai"))
			continue;
		mb = pragma_profile_find(best, name);
		mc = pragma_profile_find(cur, name);
		if (mb && mc && changed(&defs[i], mc->unit, mb->value, mc->value))
			fill(&(*out)[k++], mb, mc);
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

void pragma_profile_compare_text(const struct pragma_profile *best, const struct pragma_profile *cur,
				 struct pragma_buf *out)
{
	struct pragma_change *c;
	size_t n;
	int sim = 0, timing_only = 1;
	double tb, tc;

	pragma_profile_compare(best, cur, &c, &n);
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
	if (pragma_profile_get(best, "time.median_ms", &tb) && pragma_profile_get(cur, "time.median_ms", &tc) &&
	    tb > 0 && fabs(tc - tb) / tb < 0.3)
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
						   c[i].assessment > 0 ? "better" : c[i].assessment < 0 ? "worse" : "neutral",
						   "text", c[i].text));
	free(c);
	return a;
}
