/*
 * The report model: stored runs and suite runs as columns, their outcomes
 * and Table I metrics (lib/bench), and the tasks they cover. Plus the
 * helpers both formats share: the historical best as the loop held it, the
 * Conductor's trace, metric-by-metric profile comparisons.
 */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pragma/bench.h"
#include "pragma/diagnose.h"
#include "pragma/profile.h"
#include "pragma/store.h"
#include "pragma/timing.h"
#include "report/report_priv.h"

void report_esc(struct pragma_buf *out, const char *s)
{
	for (; s && *s; s++) {
		switch (*s) {
		case '&': pragma_buf_adds(out, "&amp;"); break;
		case '<': pragma_buf_adds(out, "&lt;"); break;
		case '>': pragma_buf_adds(out, "&gt;"); break;
		case '"': pragma_buf_adds(out, "&quot;"); break;
		case '\'': pragma_buf_adds(out, "&#39;"); break;
		default:
			/* Control characters other than tab and newline are not
			 * allowed in XML; a stored message may hold them. */
			if ((unsigned char)*s < 0x20 && *s != '\n' && *s != '\t' && *s != '\r')
				pragma_buf_addch(out, '?');
			else
				pragma_buf_addch(out, *s);
		}
	}
}

const char *report_str(json_t *o, const char *k)
{
	return json_string_value(json_object_get(o, k));
}

int report_num(json_t *o, const char *k, double *v)
{
	json_t *x = json_object_get(o, k);

	if (!json_is_number(x))
		return 0;
	*v = json_number_value(x);
	return 1;
}

const char *report_fmt_x(double v, char *buf, size_t len)
{
	if (!isfinite(v))
		snprintf(buf, len, "-");
	else if (v >= 100)
		snprintf(buf, len, "%.0fx", v);
	else if (v >= 10)
		snprintf(buf, len, "%.1fx", v);
	else
		snprintf(buf, len, "%.2fx", v);
	return buf;
}

/* ---- loading ---- */

json_t *pragma_report_load(struct pragma_store *s, const char *const *ids, int n, struct pragma_err *err)
{
	json_t *out = json_array();

	for (int i = 0; i < n; i++) {
		const char *id = ids[i];
		json_t *o = NULL;
		struct pragma_err e2 = PRAGMA_ERR_INIT;

		if (id[0] == 's')
			o = pragma_store_suite_get(s, id, err);
		else if (id[0] == 'r')
			o = pragma_store_run_get(s, id, err);
		else if (!(o = pragma_store_run_get(s, id, &e2)) && !(o = pragma_store_suite_get(s, id, err)))
			pragma_err_set(err, PRAGMA_E_INPUT, "no run or suite run '%s' in %s", id, pragma_store_path(s));
		if (!o) {
			pragma_err_hint(err, "'pragma runs' lists the runs in the store; a suite id starts with 's', a run "
					     "id with 'r'");
			json_decref(out);
			return NULL;
		}
		json_array_append_new(out, o);
	}
	return out;
}

/* ---- the model ---- */

static int category_rank(const char *c)
{
	for (int i = 0; i < PRAGMA_BENCH_N_CATEGORIES; i++)
		if (c && !strcmp(c, pragma_bench_categories[i]))
			return i;
	return PRAGMA_BENCH_N_CATEGORIES;
}

static int task_cmp(const void *pa, const void *pb)
{
	json_t *a = *(json_t *const *)pa, *b = *(json_t *const *)pb;
	int ka = !strcmp(report_str(a, "kind"), "native"), kb = !strcmp(report_str(b, "kind"), "native");
	int ca = category_rank(report_str(a, "category")), cb = category_rank(report_str(b, "category"));

	if (ka != kb)
		return ka - kb;
	if (ca != cb)
		return ca - cb;
	return strcmp(report_str(a, "name"), report_str(b, "name"));
}

/* "openai:gpt-4o" -> "gpt-4o"; "exec:/x/y.sh ask (…)" -> "y.sh". */
static void llm_short(const char *llm, char *buf, size_t len)
{
	const char *p = llm ? strchr(llm, ':') : NULL, *e, *slash;

	p = p ? p + 1 : (llm ? llm : "?");
	e = p + strcspn(p, " ");
	for (slash = p; slash < e; slash++)
		if (*slash == '/')
			p = slash + 1;
	snprintf(buf, len, "%.*s", (int)(e - p), p);
}

static void label_columns(json_t *cols)
{
	size_t n = json_array_size(cols), i, j;
	json_t *c;

	for (int pass = 0; pass < 3; pass++) {
		int clash = 0;
		for (i = 0; i < n && !clash; i++)
			for (j = i + 1; j < n; j++)
				if (!strcmp(report_str(json_array_get(cols, i), "label"),
					    report_str(json_array_get(cols, j), "label")))
					clash = 1;
		if (!clash)
			return;
		json_array_foreach(cols, i, c) {
			char lab[256], m[96];
			const char *mode = report_str(c, "mode") ? report_str(c, "mode") : "?";
			llm_short(report_str(c, "llm"), m, sizeof(m));
			if (pass == 0)
				snprintf(lab, sizeof(lab), "%s · %s", mode, m);
			else
				snprintf(lab, sizeof(lab), "%s · %s", mode, report_str(c, "id"));
			json_object_set_new(c, "label", json_string(lab));
		}
	}
}

/* Single runs of different tasks with the same mode and model make one
 * series (a trial of several tasks run one by one); a task seen again
 * starts another series, so runs of one task are compared side by side.
 * A suite run is always a series of its own. */
static json_t *series_of(json_t *sources, struct pragma_err *err)
{
	json_t *series = json_array(), *src, *s, *r;
	size_t i, j, k;

	json_array_foreach(sources, i, src) {
		json_t *home = NULL;
		if (json_is_array(json_object_get(src, "runs"))) {
			json_array_append_new(series, json_pack("{s:s, s:O, s:O}", "kind", "suite", "src", src, "runs",
								json_object_get(src, "runs")));
			continue;
		}
		if (!json_is_array(json_object_get(src, "attempts"))) {
			pragma_err_set(err, PRAGMA_E_INPUT, "source %zu is neither a run (no \"attempts\") nor a suite run "
							    "(no \"runs\")", i + 1);
			json_decref(series);
			return NULL;
		}
		json_array_foreach(series, j, s) {
			json_t *first = json_object_get(s, "src");
			int clash = 0;
			if (strcmp(report_str(s, "kind"), "run") ||
			    strcmp(report_str(first, "mode") ?: "", report_str(src, "mode") ?: "") ||
			    strcmp(report_str(first, "llm") ?: "", report_str(src, "llm") ?: ""))
				continue;
			json_array_foreach(json_object_get(s, "runs"), k, r)
				clash |= !strcmp(report_str(r, "task_name") ?: "", report_str(src, "task_name") ?: "");
			if (!clash) {
				home = s;
				break;
			}
		}
		if (home)
			json_array_append(json_object_get(home, "runs"), src);
		else
			json_array_append_new(series, json_pack("{s:s, s:O, s:[O]}", "kind", "run", "src", src, "runs", src));
	}
	return series;
}

json_t *pragma_report_model(json_t *sources, struct pragma_err *err)
{
	json_t *model = NULL, *cols = json_array(), *tasks = json_object(), *series = NULL, *ser, *list = NULL;
	size_t i, j;

	if (!json_is_array(sources) || !json_array_size(sources)) {
		pragma_err_set(err, PRAGMA_E_INPUT, "a report needs at least one run or suite run");
		goto out;
	}
	if (!(series = series_of(sources, err)))
		goto out;
	json_array_foreach(series, i, ser) {
		json_t *src = json_object_get(ser, "src"), *runs = json_object_get(ser, "runs"), *col, *r;
		json_t *outcomes = json_array(), *by_outcome = json_array(); /* the run behind each outcome, or null */
		int is_suite = !strcmp(report_str(ser, "kind"), "suite");
		struct pragma_buf ids = PRAGMA_BUF_INIT;

		if (is_suite && json_is_array(json_object_get(json_object_get(src, "config"), "tasks"))) {
			json_t *so = pragma_bench_suite_outcomes(src, by_outcome);
			json_array_extend(outcomes, so);
			json_decref(so);
		} else {
			json_array_foreach(runs, j, r) {
				json_array_append_new(outcomes, pragma_bench_outcome(r));
				json_array_append(by_outcome, r);
			}
		}
		if (is_suite)
			pragma_buf_adds(&ids, report_str(src, "id") ?: "?");
		else
			json_array_foreach(runs, j, r)
				pragma_buf_addf(&ids, "%s%s", j ? ", " : "", report_str(r, "id") ?: "?");
		col = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:O, s:o, s:o, s:O}", "id", ids.data, "kind",
				is_suite ? "suite" : "run", "label", report_str(src, "mode") ?: "?", "mode",
				report_str(src, "mode") ?: "?", "llm", report_str(src, "llm") ?: "?", "status",
				report_str(src, "status") ?: "?", "runs", runs, "metrics", pragma_bench_metrics(outcomes),
				"outcomes", outcomes, "source", src);
		pragma_buf_release(&ids);
		if (is_suite && report_str(src, "suite_path"))
			json_object_set_new(col, "suite_path", json_string(report_str(src, "suite_path")));
		json_array_append_new(cols, col);

		/* The tasks this column covers, one entry per trajectory. */
		json_t *o;
		json_array_foreach(outcomes, j, o) {
			const char *name = report_str(o, "task");
			json_t *t = json_object_get(tasks, name);
			if (!t) {
				t = json_pack("{s:s, s:s, s:s, s:[]}", "name", name, "category", report_str(o, "category"),
					      "kind", report_str(o, "kind"), "entries");
				json_object_set_new(tasks, name, t);
			}
			json_array_append_new(json_object_get(t, "entries"),
					      json_pack("{s:i, s:I, s:O, s:O}", "col", (int)i, "trajectory",
							json_integer_value(json_object_get(o, "trajectory")), "run",
							json_array_get(by_outcome, j), "outcome", o));
		}
		json_decref(by_outcome);
	}
	label_columns(cols);

	/* Tasks in report order. */
	size_t nt = json_object_size(tasks), k = 0;
	json_t **tv = calloc(nt + 1, sizeof(*tv)), *t;
	const char *key;
	if (!tv)
		abort();
	json_object_foreach(tasks, key, t)
		tv[k++] = t;
	qsort(tv, nt, sizeof(*tv), task_cmp);
	list = json_array();
	for (k = 0; k < nt; k++)
		json_array_append(list, tv[k]);
	free(tv);
	model = json_pack("{s:O, s:O}", "columns", cols, "tasks", list);
out:
	json_decref(series);
	json_decref(list);
	json_decref(cols);
	json_decref(tasks);
	return model;
}

void report_series_label(json_t *model, json_t *entry, char *buf, size_t len)
{
	json_t *col = json_array_get(json_object_get(model, "columns"), (size_t)json_integer_value(json_object_get(entry, "col")));
	json_t *m = json_object_get(json_object_get(json_object_get(col, "metrics"), "pytorch"), "all");
	json_int_t t = json_integer_value(json_object_get(entry, "trajectory"));

	if (!m)
		m = json_object_get(json_object_get(json_object_get(col, "metrics"), "native"), "all");
	if (json_integer_value(json_object_get(m, "trajectories")) > 1)
		snprintf(buf, len, "%s, trajectory %lld", report_str(col, "label"), (long long)t + 1);
	else
		snprintf(buf, len, "%s", report_str(col, "label"));
}

/* ---- attempts and the historical best ---- */

json_t *report_attempts(json_t *run)
{
	json_t *out = json_array(), *a;
	size_t i;

	json_array_foreach(json_object_get(run, "attempts"), i, a)
		if (json_integer_value(json_object_get(a, "candidate")) == 0)
			json_array_append(out, a);
	return out;
}

int report_is_best(json_t *a)
{
	json_t *v = json_object_get(a, "is_best");

	return json_is_true(v) || json_integer_value(v) != 0;
}

json_t *report_attempt(json_t *attempts, int n)
{
	json_t *a;
	size_t i;

	json_array_foreach(attempts, i, a)
		if (json_integer_value(json_object_get(a, "n")) == n)
			return a;
	return NULL;
}

/* The vs_best text of an attempt: the new store's session comparison, or
 * an older store's (IQR-era) one. */
static int vs_text(json_t *a, char *buf, size_t len)
{
	json_t *vb = json_object_get(a, "vs_best"), *spr = json_object_get(a, "speedup_spread");
	double r, lo, hi;

	if (json_is_object(vb) && report_num(vb, "ratio", &r) && report_num(vb, "lo", &lo) && report_num(vb, "hi", &hi)) {
		const char *v = report_str(vb, "verdict");
		char iv[72];
		snprintf(buf, len, "%.2fx vs #%lld [%s], %s", r, (long long)json_integer_value(json_object_get(vb, "attempt")),
			 pragma_interval_str(lo, hi, iv, sizeof(iv)), json_is_true(json_object_get(vb, "same_build")) ? "the same build" : v ? v : "?");
		return 1;
	}
	if (report_num(spr, "vs_best", &r) && report_num(spr, "vs_best_lo", &lo) && report_num(spr, "vs_best_hi", &hi)) {
		snprintf(buf, len, "%.2fx vs #%lld [%.2f–%.2f] (older run: interquartile range)", r,
			 (long long)json_integer_value(json_object_get(spr, "vs_best_attempt")), lo, hi);
		return 1;
	}
	return 0;
}

void report_decide(json_t *attempts, struct report_decision *d)
{
	int cur = 0;
	double cur_x = NAN, lo, sp = NAN;
	json_t *a;
	size_t i;

	json_array_foreach(attempts, i, a) {
		const char *st = report_str(a, "status");
		json_t *vb = json_object_get(a, "vs_best"), *spr = json_object_get(a, "speedup_spread");
		struct report_decision *x = &d[i];

		memset(x, 0, sizeof(*x));
		x->n = (int)json_integer_value(json_object_get(a, "n"));
		x->ok = st && !strcmp(st, "ok") && report_num(a, "speedup", &sp);
		x->best_x = NAN;
		vs_text(a, x->vs, sizeof(x->vs));
		if (x->ok) {
			/* DESIGN 3.5: the first correct kernel is the best; a later
			 * one replaces it only when its session found it faster
			 * beyond the interval and the margin; an identical build
			 * never does. Older stores kept vs_best_lo > 1 as the rule. */
			if (json_is_object(vb)) {
				x->same_build = json_is_true(json_object_get(vb, "same_build")) ||
						!strcmp(report_str(vb, "verdict") ?: "", "the same build");
				x->became_best = !x->same_build && !strcmp(report_str(vb, "verdict") ?: "", "faster");
			} else if (report_num(spr, "vs_best_lo", &lo)) {
				x->became_best = lo > 1.0;
			} else {
				x->became_best = !cur;
			}
			/* The store's last word: the run's best became it. */
			if (report_is_best(a))
				x->became_best = 1;
			if (!cur)
				x->became_best = 1;
			if (x->became_best) {
				cur = x->n;
				cur_x = sp;
			}
		}
		x->best_n = cur;
		/* The best as timed beside this attempt, in its session, where it
		 * was: the two figures compared are the same session's. */
		x->best_x = cur_x;
		x->best_in_session = 0;
		if (x->ok && !x->became_best && json_is_object(vb) && report_num(vb, "best_speedup", &sp) && sp > 0 &&
		    (int)json_integer_value(json_object_get(vb, "attempt")) == cur) {
			x->best_x = sp;
			x->best_in_session = 1;
		}
		if (!x->ok)
			snprintf(x->badge, sizeof(x->badge), "%s", st ? st : "?");
		else if (x->became_best)
			snprintf(x->badge, sizeof(x->badge), "new best");
		else if (x->same_build)
			snprintf(x->badge, sizeof(x->badge), "the same build");
		else
			snprintf(x->badge, sizeof(x->badge), "best kept");
	}
}

void report_best_so_far(json_t *attempts, int *best_n, double *best_x)
{
	size_t n = json_array_size(attempts);
	struct report_decision *d = calloc(n + 1, sizeof(*d));

	if (!d)
		abort();
	report_decide(attempts, d);
	for (size_t i = 0; i < n; i++) {
		best_n[i] = d[i].best_n;
		best_x[i] = d[i].best_x;
	}
	free(d);
}

const char pragma_report_replay_note[] =
	"recorded on another machine; the numbers it cites are that machine's (the measurements shown beside it are "
	"this run's)";

int pragma_report_replayed(json_t *run)
{
	const char *llm = report_str(run, "llm"), *spec = report_str(json_object_get(run, "config"), "llm_spec");

	return (llm && !strncmp(llm, "replay:", 7)) || (spec && !strncmp(spec, "replay:", 7));
}

json_t *pragma_report_decisions(json_t *run)
{
	json_t *atts = report_attempts(run), *out = json_array(), *a;
	size_t n = json_array_size(atts), i;
	struct report_decision *d = calloc(n + 1, sizeof(*d));

	if (!d)
		abort();
	report_decide(atts, d);
	json_array_foreach(atts, i, a) {
		const char *cv = report_str(json_object_get(a, "conductor"), "verdict");
		json_array_append_new(out, json_pack("{s:i, s:s, s:s, s:b, s:b, s:i, s:o, s:o}", "n", d[i].n, "status",
						     report_str(a, "status") ?: "?", "badge", d[i].badge, "became_best",
						     d[i].became_best, "same_build", d[i].same_build, "best_n", d[i].best_n,
						     "vs_best", d[i].vs[0] ? json_string(d[i].vs) : json_null(), "conductor",
						     cv && *cv ? json_string(cv) : json_null()));
	}
	free(d);
	json_decref(atts);
	return out;
}

/* ---- profiles ---- */

static int profile_of(json_t *metrics, struct pragma_profile *p)
{
	json_t *wrap;
	int rc;

	pragma_profile_init(p);
	if (!json_is_object(metrics))
		return -1;
	wrap = json_pack("{s:O}", "metrics", metrics);
	rc = pragma_profile_from_json(wrap, p, NULL);
	json_decref(wrap);
	return rc;
}

static void metric_text(json_t *metrics, const char *name, char *buf, size_t len)
{
	json_t *m = json_object_get(metrics, name);
	double v;

	if (!report_num(m, "value", &v)) {
		snprintf(buf, len, "-");
		return;
	}
	pragma_metric_format(v, report_str(m, "unit") ? report_str(m, "unit") : "", buf, len);
}

/* A "% of roofline" figure as every table shows it: the fraction
 * pragma_bench_roof takes (of the bandwidth roof for a kernel that does
 * fewer FLOPs than counted, whatever an older profile stored), with " *"
 * when it needs the note beside it. note gets the note ("" when none). */
static void roof_text(json_t *metrics, char *buf, size_t len, char *note, size_t nlen)
{
	double f = pragma_bench_roof(metrics, note, nlen);

	if (isnan(f)) {
		metric_text(metrics, "roof.pct_roof", buf, len);
		return;
	}
	snprintf(buf, len, "%.1f%%%s", 100 * f, note[0] ? " *" : "");
}

static int name_cmp(const void *a, const void *b)
{
	return strcmp(*(const char *const *)a, *(const char *const *)b);
}

enum pragma_time_verdict report_time_verdict(json_t *first, json_t *best)
{
	json_t *vb = json_object_get(best, "vs_best");
	double lo;

	if (!first || !best || first == best)
		return PRAGMA_TIME_UNKNOWN;
	/* The best took over by beating the best of its day in its session,
	 * and that best had beaten the one before, back to the first. */
	if (json_is_object(vb))
		return !strcmp(report_str(vb, "verdict") ?: "", "faster") ? PRAGMA_TIME_FASTER : PRAGMA_TIME_UNKNOWN;
	if (report_num(json_object_get(best, "speedup_spread"), "vs_best_lo", &lo) && lo > 1)
		return PRAGMA_TIME_FASTER;
	return PRAGMA_TIME_UNKNOWN;
}

/* A time of the profiled run (counters on), not the attempt's time. */
static int profiled_time(const char *name)
{
	return !strncmp(name, "time.", 5);
}

json_t *report_profile_rows(json_t *att_a, json_t *att_b, enum pragma_time_verdict tv)
{
	json_t *a = json_object_get(att_a, "metrics"), *b = json_object_get(att_b, "metrics");
	struct pragma_profile pa, pb;
	struct pragma_change *ch = NULL;
	size_t nch = 0, nd, i, nx = 0;
	const struct pragma_metric_def *defs = pragma_metric_defs(&nd);
	json_t *rows = json_array();
	const char *extra[256], *k;
	json_t *v;
	double ta_ms, tb_ms;

	int ra = profile_of(a, &pa), rb = profile_of(b, &pb);

	if (ra == 0 && rb == 0)
		pragma_profile_compare_timed(&pa, &pb, tv, &ch, &nch);
	pragma_profile_release(&pa);
	pragma_profile_release(&pb);

	/* The attempt's time is its session's (DESIGN 3.5), the one every
	 * other table shows; the profile's own time.* rows below are the
	 * profiled run's, and say so. */
	if ((json_is_object(a) || json_is_object(b)) &&
	    (report_num(att_a, "time_ms", &ta_ms) | report_num(att_b, "time_ms", &tb_ms))) {
		char sa[64] = "-", sb[64] = "-";
		if (report_num(att_a, "time_ms", &ta_ms))
			snprintf(sa, sizeof(sa), "%.3f ms", ta_ms);
		if (report_num(att_b, "time_ms", &tb_ms))
			snprintf(sb, sizeof(sb), "%.3f ms", tb_ms);
		json_array_append_new(rows, json_pack("{s:s, s:s, s:s, s:s, s:s}", "name", "time", "label",
						      "time (its attempt's timing session)", "a", sa, "b", sb, "change",
						      tv == PRAGMA_TIME_FASTER ? "better" :
						      tv == PRAGMA_TIME_SLOWER ? "worse" : ""));
	}

	/* Names outside the registry (perf:EVENT), sorted, after it. */
	for (int side = 0; side < 2; side++)
		json_object_foreach(side ? b : a, k, v)
			if (!pragma_metric_find(k) && nx < 256) {
				int dup = 0;
				for (size_t q = 0; q < nx; q++)
					dup |= !strcmp(extra[q], k);
				if (!dup)
					extra[nx++] = k;
			}
	qsort(extra, nx, sizeof(*extra), name_cmp);

	for (i = 0; i < nd + nx; i++) {
		const char *name = i < nd ? defs[i].name : extra[i - nd];
		const char *label = i < nd ? defs[i].label : name;
		const char *change = "";
		char ta[96], tb[96], lab[160];
		json_t *row;
		if (!json_object_get(a, name) && !json_object_get(b, name))
			continue;
		metric_text(a, name, ta, sizeof(ta));
		metric_text(b, name, tb, sizeof(tb));
		for (size_t c = 0; c < nch; c++)
			if (!strcmp(ch[c].name, name))
				change = pragma_change_label(&ch[c], "changed");
		/* Left out of the comparison for being each attempt's own
		 * session's: judged like the time row, by the verdict. */
		if (!*change && tv != PRAGMA_TIME_UNKNOWN && pragma_metric_session_rate(name) &&
		    json_object_get(a, name) && json_object_get(b, name))
			change = tv == PRAGMA_TIME_FASTER ? "better" : tv == PRAGMA_TIME_SLOWER ? "worse" : "";
		if (profiled_time(name)) {
			snprintf(lab, sizeof(lab), "profiled run: %s (counters on)", label);
			label = lab;
			if (*change)
				change = "not judged: one profiled run each";
		}
		row = json_pack("{s:s, s:s, s:s, s:s, s:s}", "name", name, "label", label, "a", ta, "b", tb, "change", change);
		if (!strcmp(name, "roof.pct_roof")) {
			/* A fraction above 100%, or of the bandwidth roof because
			 * the kernel does fewer FLOPs than counted, is explained
			 * where it appears. */
			char na[512], nb[512];
			struct pragma_buf note = PRAGMA_BUF_INIT;
			if (json_object_get(a, name)) {
				roof_text(a, ta, sizeof(ta), na, sizeof(na));
				json_object_set_new(row, "a", json_string(ta));
			} else {
				na[0] = '\0';
			}
			if (json_object_get(b, name)) {
				roof_text(b, tb, sizeof(tb), nb, sizeof(nb));
				json_object_set_new(row, "b", json_string(tb));
			} else {
				nb[0] = '\0';
			}
			if (na[0])
				pragma_buf_addf(&note, "#%lld: %s", (long long)json_integer_value(json_object_get(att_a, "n")), na);
			if (nb[0])
				pragma_buf_addf(&note, "%s#%lld: %s", note.len ? "; " : "",
						(long long)json_integer_value(json_object_get(att_b, "n")), nb);
			if (note.len)
				json_object_set_new(row, "note", json_string(note.data));
			pragma_buf_release(&note);
		}
		json_array_append_new(rows, row);
	}
	free(ch);
	return rows;
}

/* ---- the Conductor's trace (Listing 1) ---- */

/* The figures a round shows for the best and the current kernel, in
 * Listing 1's spirit: the roofline fraction and instruction-level facts
 * first (DESIGN 4), then whatever the Conductor asked for. */
static const char *const trace_metrics[] = {
	"roof.pct_roof", "cpu.ipc", "cpu.instructions", "cpu.cycles", "topdown.frontend_bound",
	"topdown.backend_bound", "par.busy_cores", "static.fp_packed_pct", "static.fma", "static.stack_spills",
	"gpu.achieved_occupancy", "gpu.dram_throughput_pct", "gpu.sm_throughput_pct",
};
#define TRACE_MAX_METRICS 8

static json_t *figures(json_t *att, const char *const *names, int n)
{
	json_t *out = json_array(), *metrics = json_object_get(att, "metrics");
	char buf[64];
	double v;

	if (report_num(att, "speedup", &v)) {
		report_fmt_x(v, buf, sizeof(buf));
		json_array_append_new(out, json_pack("{s:s, s:s}", "label", "speedup", "text", buf));
	}
	if (report_num(att, "time_ms", &v)) {
		snprintf(buf, sizeof(buf), "%.3f ms", v);
		json_array_append_new(out, json_pack("{s:s, s:s}", "label", "time (its session)", "text", buf));
	}
	for (int i = 0; i < n; i++) {
		const struct pragma_metric_def *d = pragma_metric_find(names[i]);
		char note[512], lab[160];
		if (!json_object_get(metrics, names[i]))
			continue;
		if (!strcmp(names[i], "roof.pct_roof"))
			roof_text(metrics, buf, sizeof(buf), note, sizeof(note));
		else
			metric_text(metrics, names[i], buf, sizeof(buf));
		if (profiled_time(names[i])) {
			snprintf(lab, sizeof(lab), "profiled run: %s", d ? d->label : names[i]);
			json_array_append_new(out, json_pack("{s:s, s:s}", "label", lab, "text", buf));
			continue;
		}
		json_array_append_new(out, json_pack("{s:s, s:s}", "label", d ? d->label : names[i], "text", buf));
	}
	return out;
}

/* Why a round's roofline figures carry a " *". */
static void roof_notes(json_t *round, json_t *best, json_t *cur)
{
	struct pragma_buf b = PRAGMA_BUF_INIT;
	char note[512];
	json_t *who[2] = { best, cur };

	for (int i = 0; i < 2; i++) {
		if (!who[i] || !json_object_get(json_object_get(who[i], "metrics"), "roof.pct_roof"))
			continue;
		pragma_bench_roof(json_object_get(who[i], "metrics"), note, sizeof(note));
		if (note[0])
			pragma_buf_addf(&b, "%s%% of roofline of #%lld: %s", b.len ? "; " : "",
					(long long)json_integer_value(json_object_get(who[i], "n")), note);
	}
	if (b.len)
		json_object_set_new(round, "roof_note", json_string(b.data));
	pragma_buf_release(&b);
}

static const char *text_or(json_t *o, const char *k)
{
	const char *s = report_str(o, k);

	return s ? s : "";
}

json_t *report_trace(json_t *run)
{
	json_t *atts = report_attempts(run), *rounds = json_array(), *a, *prev_req = NULL;
	size_t n = json_array_size(atts), i;
	struct report_decision *dec = calloc(n + 1, sizeof(*dec));
	int recorded = pragma_report_replayed(run);

	if (!dec)
		abort();
	report_decide(atts, dec);
	json_array_foreach(atts, i, a) {
		json_t *c = json_object_get(a, "conductor"), *best = NULL, *round, *req;
		const char *names[TRACE_MAX_METRICS + 8];
		int nn = 0, bn = i ? dec[i - 1].best_n : 0;
		struct pragma_buf rq = PRAGMA_BUF_INIT;
		size_t k;

		if (!json_is_object(c))
			continue;
		if (bn)
			best = report_attempt(atts, bn);
		/* The metrics the Conductor asked for last round, then the defaults,
		 * as far as either kernel has them. */
		json_array_foreach(prev_req, k, req) {
			const char *r = json_string_value(req);
			if (r && nn < TRACE_MAX_METRICS &&
			    (json_object_get(json_object_get(a, "metrics"), r) ||
			     json_object_get(json_object_get(best, "metrics"), r)))
				names[nn++] = r;
		}
		for (k = 0; k < sizeof(trace_metrics) / sizeof(trace_metrics[0]) && nn < TRACE_MAX_METRICS; k++) {
			int dup = 0;
			for (int q = 0; q < nn; q++)
				dup |= !strcmp(names[q], trace_metrics[k]);
			if (!dup && (json_object_get(json_object_get(a, "metrics"), trace_metrics[k]) ||
				     json_object_get(json_object_get(best, "metrics"), trace_metrics[k])))
				names[nn++] = trace_metrics[k];
		}
		json_array_foreach(json_object_get(c, "metrics"), k, req)
			if (json_string_value(req))
				pragma_buf_addf(&rq, "%s%s", rq.len ? ", " : "", json_string_value(req));

		/* The badge is the measurement's; the Conductor's own word rides
		 * beside it as "verdict", never in its place. */
		round = json_pack("{s:I, s:s, s:s, s:s, s:s, s:i, s:o, s:o, s:s, s:s, s:s, s:s, s:s, s:b, s:b}", "n",
				  json_integer_value(json_object_get(a, "n")), "badge", dec[i].badge, "verdict",
				  text_or(c, "verdict"), "status", text_or(a, "status"), "message", text_or(a, "message"),
				  "best_n", bn, "best", best ? figures(best, names, nn) : json_array(), "cur",
				  figures(a, names, nn), "analysis", text_or(c, "bottleneck"), "actions", text_or(c, "actions"),
				  "algorithm", text_or(c, "algorithm"), "requested", rq.data, "summary", text_or(c, "summary"),
				  "recorded", recorded, "last", json_is_true(json_object_get(c, "last")));
		roof_notes(round, best, a);
		json_t *vb = json_object_get(a, "vs_best"), *spr = json_object_get(a, "speedup_spread");
		double r, lo, hi, bms, bx;
		char t[400], iv[72];
		if (json_is_object(vb) && report_num(vb, "ratio", &r) && report_num(vb, "lo", &lo) && report_num(vb, "hi", &hi)) {
			int k2 = snprintf(t, sizeof(t), "vs the best (attempt %lld), timed side by side in this attempt's session: "
							"%.2fx [%s, 95%% interval], %s: %s",
					  (long long)json_integer_value(json_object_get(vb, "attempt")), r,
					  pragma_interval_str(lo, hi, iv, sizeof(iv)),
					  dec[i].same_build ? "the same build" : report_str(vb, "verdict") ?: "?",
					  dec[i].became_best ? "new best" : dec[i].same_build ? "the best stays" : "best kept");
			if (report_num(vb, "best_ms", &bms) && report_num(vb, "best_speedup", &bx) && k2 > 0 &&
			    (size_t)k2 < sizeof(t))
				snprintf(t + k2, sizeof(t) - (size_t)k2, " (the best in this session: %.3f ms, %.2fx)", bms, bx);
			json_object_set_new(round, "vs_best", json_string(t));
		} else if (report_num(spr, "vs_best", &r) && report_num(spr, "vs_best_lo", &lo) &&
			   report_num(spr, "vs_best_hi", &hi)) {
			snprintf(t, sizeof(t), "%.2fx the best's speed, measured interleaved with attempt %lld (interquartile "
					       "range, older run: %.2f–%.2f)%s",
				 r, (long long)json_integer_value(json_object_get(spr, "vs_best_attempt")), lo, hi,
				 lo > 1 ? ": new best" : hi < 1 ? ": slower, best kept" : ": inside the range, best kept");
			json_object_set_new(round, "vs_best", json_string(t));
		}
		json_array_append_new(rounds, round);
		prev_req = json_object_get(c, "metrics");
		pragma_buf_release(&rq);
	}
	free(dec);
	json_decref(atts);
	return rounds;
}

int pragma_report_render(json_t *model, enum pragma_report_format fmt, const char *origin, struct pragma_buf *out,
			 struct pragma_err *err)
{
	if (!json_is_array(json_object_get(model, "columns")))
		return pragma_err_set(err, PRAGMA_E_INTERNAL, "report: not a report model");
	if (fmt == PRAGMA_REPORT_HTML)
		return report_html(model, origin, out);
	return report_markdown(model, origin, out);
}

/* ---- tables and text ---- */

void rtable_init(struct rtable *t, int ncols, const char *align)
{
	memset(t, 0, sizeof(*t));
	t->ncols = ncols;
	for (int i = 0; i < ncols && i < 15; i++)
		t->align[i] = align && align[i] ? align[i] : 'l';
}

void rtable_release(struct rtable *t)
{
	for (int i = 0; i < t->ncells; i++)
		free(t->cells[i]);
	free(t->cells);
	memset(t, 0, sizeof(*t));
}

void rtable_cell(struct rtable *t, const char *fmt, ...)
{
	struct pragma_buf b = PRAGMA_BUF_INIT;
	va_list ap;

	va_start(ap, fmt);
	pragma_buf_vaddf(&b, fmt, ap);
	va_end(ap);
	if (t->ncells == t->alloc) {
		t->alloc = t->alloc ? 2 * t->alloc : 32;
		t->cells = realloc(t->cells, (size_t)t->alloc * sizeof(*t->cells));
		if (!t->cells)
			abort();
	}
	t->cells[t->ncells++] = pragma_buf_detach(&b, NULL);
}

/* Skip a leading "\x01class\x02". */
static const char *cell_text(const char *c)
{
	const char *e;

	if (c[0] == '\x01' && (e = strchr(c, '\x02')))
		return e + 1;
	return c;
}

/* Display width: UTF-8 code points (the report's symbols are one column). */
static int width_of(const char *s)
{
	int w = 0;

	for (; *s; s++)
		w += ((unsigned char)*s & 0xC0) != 0x80;
	return w;
}

static void md_cell(struct pragma_buf *out, const char *s)
{
	for (; *s; s++) {
		if (*s == '|')
			pragma_buf_adds(out, "\\|");
		else if (*s == '\n' || *s == '\r')
			pragma_buf_addch(out, ' ');
		else
			pragma_buf_addch(out, *s);
	}
}

void rtable_md(const struct rtable *t, struct pragma_buf *out)
{
	int w[16] = { 0 }, nrows = (t->ncells + t->ncols - 1) / t->ncols;
	struct pragma_buf c = PRAGMA_BUF_INIT;

	for (int k = 0; k < t->ncols; k++)
		w[k] = 3;
	for (int i = 0; i < t->ncells; i++) {
		pragma_buf_reset(&c);
		md_cell(&c, cell_text(t->cells[i]));
		if (width_of(c.data) > w[i % t->ncols])
			w[i % t->ncols] = width_of(c.data);
	}
	for (int r = 0; r < nrows; r++) {
		for (int k = 0; k < t->ncols; k++) {
			int i = r * t->ncols + k, pad;
			pragma_buf_reset(&c);
			if (i < t->ncells)
				md_cell(&c, cell_text(t->cells[i]));
			pad = w[k] - width_of(c.data);
			pragma_buf_adds(out, k ? " " : "| ");
			if (t->align[k] == 'r')
				pragma_buf_addf(out, "%*s", pad, "");
			pragma_buf_adds(out, c.data);
			if (t->align[k] != 'r')
				pragma_buf_addf(out, "%*s", pad, "");
			pragma_buf_adds(out, " |");
		}
		pragma_buf_addch(out, '\n');
		if (r == 0) {
			for (int k = 0; k < t->ncols; k++) {
				pragma_buf_adds(out, k ? " " : "| ");
				for (int d = 0; d < w[k]; d++)
					pragma_buf_addch(out, d == w[k] - 1 && t->align[k] == 'r' ? ':' : '-');
				pragma_buf_adds(out, " |");
			}
			pragma_buf_addch(out, '\n');
		}
	}
	pragma_buf_release(&c);
}

void rtable_html(const struct rtable *t, const char *cls, struct pragma_buf *out)
{
	int nrows = (t->ncells + t->ncols - 1) / t->ncols;

	pragma_buf_addf(out, "<table class=\"%s\">\n", cls ? cls : "");
	for (int r = 0; r < nrows; r++) {
		pragma_buf_adds(out, r == 0 ? "<thead><tr>" : "<tr>");
		for (int k = 0; k < t->ncols; k++) {
			int i = r * t->ncols + k;
			const char *c = i < t->ncells ? t->cells[i] : "", *e;
			pragma_buf_addf(out, "<%s", r ? "td" : "th");
			if (c[0] == '\x01' && (e = strchr(c, '\x02'))) {
				pragma_buf_addf(out, " class=\"%.*s%s\"", (int)(e - c - 1), c + 1, t->align[k] == 'r' ? " num" : "");
				c = e + 1;
			} else if (t->align[k] == 'r') {
				pragma_buf_adds(out, " class=\"num\"");
			}
			pragma_buf_addch(out, '>');
			report_esc(out, c);
			pragma_buf_addf(out, "</%s>", r ? "td" : "th");
		}
		pragma_buf_adds(out, r == 0 ? "</tr></thead>\n<tbody>\n" : "</tr>\n");
	}
	pragma_buf_adds(out, nrows ? "</tbody></table>\n" : "</table>\n");
}

void report_wrap(struct pragma_buf *out, const char *text, int width, int indent)
{
	const char *p = text ? text : "";

	while (*p) {
		const char *eol = p + strcspn(p, "\n");
		/* one source line, wrapped at spaces */
		while (p < eol) {
			const char *cut = eol, *q;
			int cols = 0;
			for (q = p; q < eol; q++) {
				if (((unsigned char)*q & 0xC0) != 0x80 && ++cols > width - indent)
					break;
			}
			if (q < eol) {
				const char *sp = q;
				while (sp > p && *sp != ' ')
					sp--;
				cut = sp > p ? sp : q;
			}
			pragma_buf_addf(out, "%*s%.*s\n", indent, "", (int)(cut - p), p);
			p = cut;
			while (p < eol && *p == ' ')
				p++;
		}
		if (*eol == '\n' && (p == eol) && eol > text && eol[-1] == '\n')
			pragma_buf_addch(out, '\n');
		p = *eol ? eol + 1 : eol;
	}
}
