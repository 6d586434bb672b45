/*
 * The paper's metrics (Table I) from stored runs: a run is reduced to one
 * outcome, and outcomes are summarized per trajectory, then across
 * trajectories (mean and spread). Every number comes from the run store.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pragma/bench.h"

const char *const pragma_bench_categories[] = {
	"matmul", "activation", "normalization", "pooling_reduction", "conv", "others",
};

const double pragma_bench_fast_p[] = { 0, 1, 1.5, 2 };

static const char *const fast_names[] = { "0", "1", "1.5", "2" };

static double num(json_t *v, double dflt)
{
	return json_is_number(v) ? json_number_value(v) : dflt;
}

static const char *category_of(const char *c)
{
	if (!c)
		return "others";
	for (int i = 0; i < PRAGMA_BENCH_N_CATEGORIES; i++)
		if (!strcmp(c, pragma_bench_categories[i]))
			return c;
	/* Spellings used elsewhere. */
	if (!strcmp(c, "pooling") || !strcmp(c, "reduction"))
		return "pooling_reduction";
	if (!strcmp(c, "convolution"))
		return "conv";
	if (!strcmp(c, "norm"))
		return "normalization";
	return "others";
}

double pragma_bench_roof(json_t *mets, char *note, size_t len)
{
	double roof = num(json_object_get(json_object_get(mets, "roof.pct_roof"), "value"), NAN) / 100;
	double over = num(json_object_get(json_object_get(mets, "roof.flops_over_peak"), "value"), NAN);
	double pfl = num(json_object_get(json_object_get(mets, "roof.pct_peak_flops"), "value"), NAN);
	double pbw = num(json_object_get(json_object_get(mets, "roof.pct_peak_bw"), "value"), NAN);
	size_t k = 0;

	if (len)
		note[0] = '\0';
	/* A task FLOP rate above the FP32 peak is a cheaper algorithm
	 * (Winograd, Strassen), not 133% of a roof: its roof is bandwidth.
	 * Profiles recorded before pragma knew that stored the compute
	 * fraction; take their bandwidth fraction instead. */
	if (isnan(over) && pfl > 100)
		over = pfl / 100;
	if (!isnan(over)) {
		roof = pbw / 100;
		k = (size_t)snprintf(note, len, "bandwidth roof: the task's FLOP count runs at %.2fx the FP32 peak, so the "
						"kernel does fewer FLOPs than counted (Winograd/Strassen-like)", over);
	}
	if (roof > 1 && k < len)
		snprintf(note + k, len - k, "%sabove 100%%: it moved the task's minimal bytes faster than pragma's "
					    "streaming kernels did when the roof was measured (data that stays in cache "
					    "between calls, or a roof measured on a busier machine): read it as at the roof",
			 k ? "; " : "");
	return roof;
}

const char *pragma_bench_spread_kind(json_t *spread)
{
	const char *m = json_string_value(json_object_get(spread, "method"));

	if (!json_is_number(json_object_get(spread, "lo")) || !json_is_number(json_object_get(spread, "hi")))
		return NULL;
	if (m && strstr(m, "95%"))
		return "95% interval";
	if (m && (strstr(m, "interquartile") || strstr(m, "IQR") || strstr(m, "middle half")))
		return "interquartile range (older run)";
	return "spread (older run, method not recorded)";
}

int pragma_bench_final_text(json_t *final, char *buf, size_t len)
{
	double worst = num(json_object_get(final, "worst_run_delay_share"), NAN);
	json_int_t made = json_integer_value(json_object_get(final, "rounds_made"));
	json_int_t clean = json_integer_value(json_object_get(final, "rounds_clean"));
	int busy = json_is_true(json_object_get(final, "busy"));

	if (len)
		buf[0] = '\0';
	if (!json_is_object(final))
		return 0;
	snprintf(buf, len, "%s%lld of %lld rounds undisturbed, the worst round kept lost %.0f%% of its time to other "
			   "processes",
		 busy ? "a BUSY machine: " : "", (long long)clean, (long long)made, isnan(worst) ? 0 : 100 * worst);
	return busy;
}

json_t *pragma_bench_outcome(json_t *run)
{
	json_t *cfg = json_object_get(run, "config"), *att = json_object_get(run, "attempts"), *a, *best = NULL;
	json_t *sum = json_object_get(run, "summary"), *sbest = json_object_get(sum, "best");
	json_t *calls = json_object_get(run, "llm_calls"), *failed = json_object(), *o;
	json_int_t best_n = json_integer_value(json_object_get(run, "best_attempt"));
	double sec[6] = { 0 };
	static const char *const sec_names[] = { "llm", "verify", "timing", "profile", "lock_wait", "compile" };
	int attempts = 0;
	size_t i;

	json_array_foreach(att, i, a) {
		const char *st = json_string_value(json_object_get(a, "status"));
		const char *stage = json_string_value(json_object_get(a, "stage"));
		json_t *d = json_object_get(a, "durations");
		if (json_integer_value(json_object_get(a, "candidate")) != 0)
			continue;
		if (!stage || strcmp(stage, "done"))
			continue; /* in flight when the run stopped */
		attempts++;
		if (best_n && json_integer_value(json_object_get(a, "n")) == best_n)
			best = a;
		if (st && strcmp(st, "ok"))
			json_object_set_new(failed, st, json_integer(json_integer_value(json_object_get(failed, st)) + 1));
		for (int k = 0; k < 6; k++)
			sec[k] += num(json_object_get(d, sec_names[k]), 0);
	}
	/* The run's closing comparison of the best against the baseline. */
	sec[2] += num(json_object_get(json_object_get(sum, "final_seconds"), "timing"), 0);
	sec[4] += num(json_object_get(json_object_get(sum, "final_seconds"), "lock_wait"), 0);
	int correct = best && !strcmp(json_string_value(json_object_get(best, "status")) ?: "", "ok");
	double sp = NAN, lo = NAN, hi = NAN, roof = NAN;
	char roof_note[512] = "";
	if (correct) {
		/* The final interleaved comparison when the run got that far. */
		sp = num(json_object_get(sbest, "speedup"), num(json_object_get(run, "best_speedup"),
								num(json_object_get(best, "speedup"), NAN)));
		lo = num(json_object_get(json_object_get(sbest, "speedup_spread"), "lo"), NAN);
		hi = num(json_object_get(json_object_get(sbest, "speedup_spread"), "hi"), NAN);
		roof = pragma_bench_roof(json_object_get(best, "metrics"), roof_note, sizeof(roof_note));
	}
	double total = 0;
	for (int k = 0; k < 6; k++)
		total += sec[k];
	const char *kind = json_string_value(json_object_get(run, "task_kind"));
	o = json_pack("{s:s, s:s, s:s, s:s, s:I, s:s, s:s, s:b, s:o, s:o, s:o, s:o, s:o, s:i, s:o, s:I, s:f}",
		      "task", json_string_value(json_object_get(run, "task_name")) ?: "?", "category",
		      category_of(json_string_value(json_object_get(run, "category"))), "kind",
		      kind && !strcmp(kind, "native") ? "native" : "kernelbench", "baseline_kind",
		      json_string_value(json_object_get(json_object_get(run, "baseline"), "kind")) ?: "?", "trajectory",
		      json_integer_value(json_object_get(cfg, "trajectory")), "run",
		      json_string_value(json_object_get(run, "id")) ?: "?", "status",
		      json_string_value(json_object_get(run, "status")) ?: "?", "correct", correct, "speedup",
		      isnan(sp) ? json_null() : json_real(sp), "speedup_lo", isnan(lo) ? json_null() : json_real(lo),
		      "speedup_hi", isnan(hi) ? json_null() : json_real(hi), "best_attempt",
		      correct ? json_integer(best_n) : json_null(), "roof", isnan(roof) ? json_null() : json_real(roof),
		      "attempts", attempts, "failed", failed, "tokens",
		      (json_int_t)(json_integer_value(json_object_get(calls, "prompt_tokens")) +
				   json_integer_value(json_object_get(calls, "completion_tokens"))),
		      "cost", num(json_object_get(calls, "cost"), 0));
	if (roof_note[0])
		json_object_set_new(o, "roof_note", json_string(roof_note));
	if (correct) {
		/* How far to trust the final comparison: the machine's state
		 * while it ran, and which kind of spread the run recorded. */
		json_t *fin = json_object_get(sbest, "final");
		const char *skind = pragma_bench_spread_kind(json_object_get(sbest, "speedup_spread"));
		if (skind)
			json_object_set_new(o, "spread_kind", json_string(skind));
		if (json_is_object(fin)) {
			json_object_set(o, "final", fin);
			json_object_set_new(o, "busy", json_boolean(json_is_true(json_object_get(fin, "busy"))));
		}
		if (json_is_string(json_object_get(sbest, "warning")))
			json_object_set(o, "warning", json_object_get(sbest, "warning"));
		if (json_is_object(json_object_get(sbest, "in_its_attempt")))
			json_object_set(o, "in_its_attempt", json_object_get(sbest, "in_its_attempt"));
	}
	/* exec providers: counted from characters, not by the model. */
	json_object_set_new(o, "tokens_estimated", json_boolean(json_integer_value(json_object_get(calls, "estimated")) > 0));
	json_object_set_new(o, "seconds", json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f}", "llm", sec[0], "compile",
						     sec[5], "verify", sec[1], "timing", sec[2], "profile", sec[3],
						     "lock_wait", sec[4], "total", total));
	return o;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double median(double *v, int n)
{
	if (n == 0)
		return NAN;
	qsort(v, (size_t)n, sizeof(*v), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The metrics of one trajectory's outcomes (all of the same group). */
enum { M_SUCCESS, M_FAST0, M_MEAN = M_FAST0 + PRAGMA_BENCH_N_FAST, M_GEOMEAN, M_ROOF, M_TOKENS, M_COST, M_N };
static const char *const m_names[M_N] = { "success", "fast_0", "fast_1", "fast_1.5", "fast_2", "mean", "geomean",
					  "median_roof", "tokens_per_task", "cost_per_task" };

static void trajectory_metrics(json_t **o, int n, double m[M_N])
{
	double *roofs = calloc((size_t)n + 1, sizeof(double)), tok = 0, cost = 0, sum = 0, lsum = 0;
	int ok = 0, nroof = 0, fast[PRAGMA_BENCH_N_FAST] = { 0 };

	for (int i = 0; i < n; i++) {
		json_t *sp = json_object_get(o[i], "speedup"), *rf = json_object_get(o[i], "roof");
		tok += num(json_object_get(o[i], "tokens"), 0);
		cost += num(json_object_get(o[i], "cost"), 0);
		if (!json_is_true(json_object_get(o[i], "correct")) || !json_is_number(sp) || json_number_value(sp) <= 0)
			continue;
		double s = json_number_value(sp);
		ok++;
		sum += s;
		lsum += log(s);
		for (int p = 0; p < PRAGMA_BENCH_N_FAST; p++)
			if (s > pragma_bench_fast_p[p])
				fast[p]++;
		if (json_is_number(rf))
			roofs[nroof++] = json_number_value(rf);
	}
	m[M_SUCCESS] = (double)ok / n;
	for (int p = 0; p < PRAGMA_BENCH_N_FAST; p++)
		m[M_FAST0 + p] = (double)fast[p] / n;
	m[M_MEAN] = ok ? sum / ok : NAN;
	m[M_GEOMEAN] = ok ? exp(lsum / ok) : NAN;
	m[M_ROOF] = median(roofs, nroof);
	m[M_TOKENS] = tok / n;
	m[M_COST] = cost / n;
	free(roofs);
}

static json_t *jnum(double v)
{
	return isnan(v) ? json_null() : json_real(v);
}

/* Summarize outcomes o[0..n) over their trajectories. */
static json_t *summarize(json_t **o, int n)
{
	int max_t = 0, n_traj = 0;
	json_t *res, *fast, *spread;

	for (int i = 0; i < n; i++) {
		int t = (int)json_integer_value(json_object_get(o[i], "trajectory"));
		if (t > max_t)
			max_t = t;
	}
	double(*per)[M_N] = calloc((size_t)max_t + 1, sizeof(*per));
	json_t **sel = calloc((size_t)n + 1, sizeof(*sel));
	int tasks = 0;
	for (int t = 0; t <= max_t; t++) {
		int k = 0;
		for (int i = 0; i < n; i++)
			if (json_integer_value(json_object_get(o[i], "trajectory")) == t)
				sel[k++] = o[i];
		if (!k)
			continue;
		if (k > tasks)
			tasks = k;
		trajectory_metrics(sel, k, per[n_traj++]);
	}
	double mean[M_N], mn[M_N], mx[M_N], sd[M_N];
	for (int j = 0; j < M_N; j++) {
		double s = 0, s2 = 0;
		int c = 0;
		mn[j] = INFINITY;
		mx[j] = -INFINITY;
		for (int t = 0; t < n_traj; t++) {
			if (isnan(per[t][j]))
				continue;
			s += per[t][j];
			s2 += per[t][j] * per[t][j];
			c++;
			mn[j] = fmin(mn[j], per[t][j]);
			mx[j] = fmax(mx[j], per[t][j]);
		}
		mean[j] = c ? s / c : NAN;
		sd[j] = c > 1 ? sqrt(fmax(0, (s2 - s * s / c) / (c - 1))) : NAN;
		if (!c)
			mn[j] = mx[j] = NAN;
	}
	fast = json_object();
	for (int p = 0; p < PRAGMA_BENCH_N_FAST; p++)
		json_object_set_new(fast, fast_names[p], jnum(mean[M_FAST0 + p]));
	res = json_pack("{s:i, s:i, s:o, s:o, s:o, s:o, s:o, s:o, s:o}", "tasks", tasks, "trajectories", n_traj,
			"success", jnum(mean[M_SUCCESS]), "fast", fast, "mean", jnum(mean[M_MEAN]), "geomean",
			jnum(mean[M_GEOMEAN]), "median_roof", jnum(mean[M_ROOF]), "tokens_per_task",
			jnum(mean[M_TOKENS]), "cost_per_task", jnum(mean[M_COST]));
	{
		/* Roof fractions that need a word (Table I's footnotes). */
		int fewer = 0, above = 0;
		for (int i = 0; i < n; i++) {
			json_t *rf = json_object_get(o[i], "roof");
			const char *note = json_string_value(json_object_get(o[i], "roof_note"));
			if (!json_is_true(json_object_get(o[i], "correct")) || !json_is_number(rf))
				continue;
			fewer += note && strstr(note, "fewer FLOPs") != NULL;
			above += json_number_value(rf) > 1;
		}
		json_object_set_new(res, "roof_notes", json_pack("{s:i, s:i}", "fewer_flops", fewer, "above_roof", above));
	}
	if (n_traj > 1) {
		spread = json_object();
		for (int j = 0; j < M_N; j++)
			json_object_set_new(spread, m_names[j],
					    json_pack("{s:o, s:o, s:o}", "min", jnum(mn[j]), "max", jnum(mx[j]), "sd",
						      jnum(sd[j])));
		json_object_set_new(res, "spread", spread);
	}
	free(per);
	free(sel);
	return res;
}

static json_t *group(json_t *outcomes, const char *kind)
{
	size_t n = json_array_size(outcomes), i;
	json_t **all = calloc(n + 1, sizeof(*all)), **cat = calloc(n + 1, sizeof(*cat)), *o, *cats, *g;
	int k = 0;

	json_array_foreach(outcomes, i, o)
		if (!strcmp(json_string_value(json_object_get(o, "kind")) ?: "", kind))
			all[k++] = o;
	if (!k) {
		free(all);
		free(cat);
		return NULL;
	}
	cats = json_object();
	for (int c = 0; c < PRAGMA_BENCH_N_CATEGORIES; c++) {
		int m = 0;
		for (int j = 0; j < k; j++)
			if (!strcmp(json_string_value(json_object_get(all[j], "category")), pragma_bench_categories[c]))
				cat[m++] = all[j];
		if (m)
			json_object_set_new(cats, pragma_bench_categories[c], summarize(cat, m));
	}
	g = json_pack("{s:o, s:o}", "all", summarize(all, k), "categories", cats);
	free(all);
	free(cat);
	return g;
}

json_t *pragma_bench_metrics(json_t *outcomes)
{
	json_t *m = json_object(), *g;

	if ((g = group(outcomes, "kernelbench")))
		json_object_set_new(m, "pytorch", g);
	if ((g = group(outcomes, "native")))
		json_object_set_new(m, "native", g);
	return m;
}

const char *pragma_bench_judge(json_t *a, json_t *a_spread, json_t *b, json_t *b_spread)
{
	if (!json_is_number(a) || !json_is_number(b))
		return "not comparable (no value on one side)";
	if (!a_spread || !b_spread || !json_is_object(a_spread) || !json_is_object(b_spread))
		return "one trajectory: no evidence either way";
	double x = json_number_value(a), y = json_number_value(b);
	double xlo = num(json_object_get(a_spread, "min"), x), xhi = num(json_object_get(a_spread, "max"), x);
	double ylo = num(json_object_get(b_spread, "min"), y), yhi = num(json_object_get(b_spread, "max"), y);
	/* Larger than the spread: the ranges across trajectories do not overlap. */
	if (xlo > yhi || ylo > xhi)
		return "larger than the spread across trajectories";
	return "inside the spread across trajectories";
}

json_t *pragma_bench_suite_outcomes(json_t *suite, json_t *by_outcome)
{
	json_t *cfg = json_object_get(suite, "config"), *runs = json_object_get(suite, "runs");
	json_t *out = json_array(), *t, *r;
	int repeat = (int)json_integer_value(json_object_get(cfg, "repeat"));
	size_t i, j;

	for (int k = 0; k < (repeat < 1 ? 1 : repeat); k++)
		json_array_foreach(json_object_get(cfg, "tasks"), i, t) {
			json_t *found = NULL;
			/* The last run of the task in this trajectory. */
			json_array_foreach(runs, j, r)
				if (!strcmp(json_string_value(json_object_get(r, "task_path")) ?: "",
					    json_string_value(json_object_get(t, "path")) ?: "") &&
				    json_integer_value(json_object_get(json_object_get(r, "config"), "trajectory")) == k)
					found = r;
			if (by_outcome)
				json_array_append(by_outcome, found ? found : json_null());
			if (found) {
				json_array_append_new(out, pragma_bench_outcome(found));
				continue;
			}
			const char *kind = json_string_value(json_object_get(t, "kind"));
			json_array_append_new(
				out, json_pack("{s:s, s:s, s:s, s:s, s:i, s:n, s:s, s:b, s:n, s:n, s:n, s:n, s:n, s:i, s:{},"
					       " s:i, s:f, s:{s:f, s:f, s:f, s:f, s:f, s:f, s:f}}",
					       "task", json_string_value(json_object_get(t, "name")) ?: "?", "category",
					       category_of(json_string_value(json_object_get(t, "category"))), "kind",
					       kind && !strcmp(kind, "native") ? "native" : "kernelbench", "baseline_kind", "?",
					       "trajectory", k, "run", "status", "not run", "correct", 0, "speedup",
					       "speedup_lo", "speedup_hi", "best_attempt", "roof", "attempts", 0, "failed",
					       "tokens", 0, "cost", 0.0, "seconds", "llm", 0.0, "compile", 0.0, "verify", 0.0,
					       "timing", 0.0, "profile", 0.0, "lock_wait", 0.0, "total", 0.0));
		}
	return out;
}
