/*
 * Pieces both formats print the same way: the Table I rows, the runs
 * table, the one-line summary of a task's run, the attempts table.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "pragma/bench.h"
#include "pragma/timing.h"
#include "report/report_priv.h"

static const struct {
	const char *key;       /* in M (fast: "fast.P") */
	const char *spread;    /* its name in M.spread */
	const char *label;
	char kind;             /* '%' fraction shown as percent, 'x' speedup, 't' tokens, '$' cost */
} rows[] = {
	{ "success", "success", "Success (correct kernel)", '%' },
	{ "fast.0", "fast_0", "fast_0 (correct, speedup > 0)", '%' },
	{ "fast.1", "fast_1", "fast_1 (correct, speedup > 1)", '%' },
	{ "fast.1.5", "fast_1.5", "fast_1.5 (correct, speedup > 1.5)", '%' },
	{ "fast.2", "fast_2", "fast_2 (correct, speedup > 2)", '%' },
	{ "mean", "mean", "mean speedup (correct kernels)", 'x' },
	{ "geomean", "geomean", "geometric mean speedup (correct kernels)", 'x' },
	{ "median_roof", "median_roof", "median fraction of roofline (best kernels)", '%' },
	{ "tokens_per_task", "tokens_per_task", "tokens per task", 't' },
	{ "cost_per_task", "cost_per_task", "cost per task", '$' },
};

static json_t *metric_value(json_t *m, const char *key)
{
	if (!strncmp(key, "fast.", 5))
		return json_object_get(json_object_get(m, "fast"), key + 5);
	return json_object_get(m, key);
}

static void fmt_value(double v, char kind, char *buf, size_t len)
{
	switch (kind) {
	case '%': snprintf(buf, len, "%.1f%%", 100 * v); break;
	case 'x': snprintf(buf, len, "%.2fx", v); break;
	case 't': snprintf(buf, len, "%.0f", v); break;
	default: snprintf(buf, len, "$%.4f", v); break;
	}
}

/* "92.0% ± 3.1 [88.0–95.0%]" with a spread; "-" when null. */
static void fmt_metric(json_t *m, int row, char *buf, size_t len)
{
	json_t *v = metric_value(m, rows[row].key);
	json_t *sp = json_object_get(json_object_get(m, "spread"), rows[row].spread);
	char a[32], lo[32], hi[32];
	double sd, mn, mx;
	char kind = rows[row].kind;

	if (!json_is_number(v)) {
		snprintf(buf, len, "-");
		return;
	}
	fmt_value(json_number_value(v), kind, a, sizeof(a));
	if (sp && report_num(sp, "min", &mn) && report_num(sp, "max", &mx)) {
		fmt_value(mn, kind, lo, sizeof(lo));
		fmt_value(mx, kind, hi, sizeof(hi));
		if (report_num(sp, "sd", &sd)) {
			char s[32];
			fmt_value(sd, kind, s, sizeof(s));
			snprintf(buf, len, "%s ± %s [%s – %s]", a, s, lo, hi);
		} else {
			snprintf(buf, len, "%s [%s – %s]", a, lo, hi);
		}
		return;
	}
	snprintf(buf, len, "%s", a);
}

int common_group_present(json_t *model, const char *group)
{
	json_t *col;
	size_t i;

	json_array_foreach(json_object_get(model, "columns"), i, col)
		if (json_object_get(json_object_get(col, "metrics"), group))
			return 1;
	return 0;
}

void common_table1(json_t *model, const char *group, const char *category, struct rtable *t)
{
	json_t *cols = json_object_get(model, "columns"), *col;
	size_t nc = json_array_size(cols), i;
	char align[16] = "l", buf[192];

	for (i = 0; i < nc && i < 14; i++)
		align[i + 1] = 'r';
	align[i + 1] = 0;
	rtable_init(t, (int)(i + 1), align);
	rtable_cell(t, "%s", category ? category : "metric");
	for (i = 0; i < nc && i < 14; i++)
		rtable_cell(t, "%s", report_str(json_array_get(cols, i), "label"));

	/* tasks and trajectories */
	rtable_cell(t, "tasks × trajectories");
	for (i = 0; i < nc && i < 14; i++) {
		json_t *m = common_metrics(json_array_get(cols, i), group, category);
		if (m)
			rtable_cell(t, "%lld × %lld", (long long)json_integer_value(json_object_get(m, "tasks")),
				    (long long)json_integer_value(json_object_get(m, "trajectories")));
		else
			rtable_cell(t, "-");
	}
	for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
		rtable_cell(t, "%s", rows[r].label);
		for (i = 0; i < nc && i < 14; i++) {
			json_t *m = common_metrics(json_array_get(cols, i), group, category);
			json_t *rn = json_object_get(m, "roof_notes");
			fmt_metric(m, (int)r, buf, sizeof(buf));
			if (m && !strcmp(rows[r].key, "median_roof") && strcmp(buf, "-"))
				rtable_cell(t, "%s%s%s", buf, json_integer_value(json_object_get(rn, "above_roof")) ? " †" : "",
					    json_integer_value(json_object_get(rn, "fewer_flops")) ? " ‡" : "");
			else
				rtable_cell(t, "%s", m ? buf : "-");
		}
	}
	(void)col;
}

static int in_scope(json_t *o, const char *group, const char *category)
{
	int native = !strcmp(report_str(o, "kind") ?: "", "native");

	if (native != !strcmp(group, "native"))
		return 0;
	return !category || !strcmp(report_str(o, "category") ?: "", category);
}

void common_table1_notes(json_t *model, const char *group, const char *category, struct pragma_buf *out, int md)
{
	json_t *cols = json_object_get(model, "columns"), *col, *o;
	size_t i, j;
	int above = 0, fewer = 0, busy = 0;
	struct pragma_buf bl = PRAGMA_BUF_INIT;

	json_array_foreach(cols, i, col)
		json_array_foreach(json_object_get(col, "outcomes"), j, o) {
			double rf;
			const char *note = report_str(o, "roof_note");
			if (!in_scope(o, group, category) || !json_is_true(json_object_get(o, "correct")))
				continue;
			if (report_num(o, "roof", &rf) && note) {
				above += rf > 1;
				fewer += strstr(note, "fewer FLOPs") != NULL;
			}
			if (json_is_true(json_object_get(o, "busy"))) {
				pragma_buf_addf(&bl, "%s%s (%s, trajectory %lld)", busy ? ", " : "", report_str(o, "task"),
						report_str(col, "label"), (long long)json_integer_value(json_object_get(o, "trajectory")) + 1);
				busy++;
			}
		}
	if (category) {
		/* The whole group's notes say it once. */
		if (above || fewer)
			pragma_buf_addf(out, "%s%s: see the notes under the group's table.\n", md ? "- " : "",
					above && fewer ? "† and ‡" : above ? "†" : "‡");
		pragma_buf_release(&bl);
		return;
	}
	if (above)
		pragma_buf_addf(out, "%s† %d roofline fraction%s above 100%%: the kernel moved the task's minimal bytes faster "
				     "than pragma's streaming kernels did when the roof was measured (data that stays in "
				     "cache between calls, or a roof measured on a busier machine): read it as at the roof; "
				     "each task's line says which.\n",
				md ? "- " : "", above, above == 1 ? " is" : "s are");
	if (fewer)
		pragma_buf_addf(out, "%s‡ %d best kernel%s the task's FLOP count above the FP32 peak: %s fewer FLOPs than "
				     "counted (Winograd, Strassen), so %s fraction is of the bandwidth roof, not of the compute "
				     "roof (never a percentage above it).\n",
				md ? "- " : "", fewer, fewer == 1 ? " runs" : "s run", fewer == 1 ? "it does" : "they do",
				fewer == 1 ? "its" : "their");
	if (busy)
		pragma_buf_addf(out, "%sWARNING: %d final comparison%s ran on a busy machine, so %s speedup%s unreliable: "
				     "%s. Measure %s again on a quieter machine (pragma eval).\n",
				md ? "- " : "", busy, busy == 1 ? "" : "s", busy == 1 ? "its" : "their",
				busy == 1 ? " is" : "s are", bl.data, busy == 1 ? "it" : "them");
	pragma_buf_release(&bl);
}

json_t *common_metrics(json_t *col, const char *group, const char *category)
{
	json_t *g = json_object_get(json_object_get(col, "metrics"), group);

	if (!category)
		return json_object_get(g, "all");
	return json_object_get(json_object_get(g, "categories"), category);
}

void common_judgements(json_t *model, const char *group, struct pragma_buf *out, int md)
{
	json_t *cols = json_object_get(model, "columns");
	json_t *m0 = common_metrics(json_array_get(cols, 0), group, NULL);
	static const int key_rows[] = { 0, 2, 6 }; /* success, fast_1, geomean */
	char a[192], b[192];

	for (size_t i = 1; i < json_array_size(cols); i++) {
		json_t *col = json_array_get(cols, i), *m = common_metrics(col, group, NULL);
		if (!m || !m0)
			continue;
		for (size_t k = 0; k < sizeof(key_rows) / sizeof(key_rows[0]); k++) {
			int r = key_rows[k];
			json_t *sp0 = json_object_get(json_object_get(m0, "spread"), rows[r].spread);
			json_t *sp = json_object_get(json_object_get(m, "spread"), rows[r].spread);
			fmt_metric(m, r, a, sizeof(a));
			fmt_metric(m0, r, b, sizeof(b));
			pragma_buf_addf(out, "%s%s, %s vs %s: %s vs %s — %s\n", md ? "- " : "", rows[r].label,
					report_str(col, "label"), report_str(json_array_get(cols, 0), "label"), a, b,
					pragma_bench_judge(metric_value(m, rows[r].key), sp, metric_value(m0, rows[r].key), sp0));
		}
	}
}

void common_runs_table(json_t *model, struct rtable *t)
{
	json_t *col;
	size_t i;

	rtable_init(t, 7, "llllllr");
	rtable_cell(t, "series");
	rtable_cell(t, "id");
	rtable_cell(t, "kind");
	rtable_cell(t, "mode");
	rtable_cell(t, "model");
	rtable_cell(t, "status");
	rtable_cell(t, "tasks");
	json_array_foreach(json_object_get(model, "columns"), i, col) {
		rtable_cell(t, "%s", report_str(col, "label"));
		rtable_cell(t, "%s", report_str(col, "id"));
		if (!strcmp(report_str(col, "kind"), "suite"))
			rtable_cell(t, "suite %s", report_str(col, "suite_path") ? report_str(col, "suite_path") : "");
		else
			rtable_cell(t, "run");
		rtable_cell(t, "%s", report_str(col, "mode"));
		/* the provider and model, without the endpoint the description adds */
		rtable_cell(t, "%.*s", (int)strcspn(report_str(col, "llm"), " "), report_str(col, "llm"));
		rtable_cell(t, "%s", report_str(col, "status"));
		rtable_cell(t, "%zu", json_array_size(json_object_get(col, "outcomes")));
	}
}

void common_machine(json_t *model, struct pragma_buf *out)
{
	json_t *col = json_array_get(json_object_get(model, "columns"), 0);
	json_t *run = json_array_get(json_object_get(col, "runs"), 0), *m = json_object_get(run, "machine");
	json_t *bc = json_object_get(json_object_get(run, "baseline"), "config");
	double v;
	time_t t;
	char date[64] = "?";

	if (report_num(run, "created", &v)) {
		struct tm tm;
		t = (time_t)v;
		gmtime_r(&t, &tm);
		strftime(date, sizeof(date), "%Y-%m-%d %H:%M UTC", &tm);
	}
	pragma_buf_addf(out, "machine: %s, %lld cores", report_str(m, "cpu_model") ? report_str(m, "cpu_model") : "?",
			(long long)json_integer_value(json_object_get(m, "cores")));
	if (report_num(m, "peak_gflops", &v))
		pragma_buf_addf(out, ", measured peak %.0f GFLOP/s", v);
	/* Runs recorded since machine.json format 2 carry the protocol roof,
	 * which the fractions use; older ones only the highest peak. */
	if (report_num(m, "roof_gbs", &v) && v > 0)
		pragma_buf_addf(out, ", bandwidth roof %.1f GB/s (streaming kernels under the timing protocol)", v);
	else if (report_num(m, "peak_gbs", &v))
		pragma_buf_addf(out, " and %.0f GB/s", v);
	pragma_buf_addf(out, " (first run, started %s)", date);
	if (report_str(bc, "torch"))
		pragma_buf_addf(out, "; PyTorch baseline: torch %s, %lld threads, allocator %s", report_str(bc, "torch"),
				(long long)json_integer_value(json_object_get(bc, "threads")),
				report_str(bc, "allocator") ? report_str(bc, "allocator") : "?");
}

void common_entry_line(json_t *model, json_t *entry, struct pragma_buf *out)
{
	json_t *run = json_object_get(entry, "run"), *o = json_object_get(entry, "outcome");
	json_t *sum = json_object_get(run, "summary"), *failed = json_object_get(o, "failed"), *v;
	char lab[200], a[32], b[32], c[32];
	double x, lo, hi, med;
	const char *k;
	int first = 1;

	report_series_label(model, entry, lab, sizeof(lab));
	if (!json_is_object(run)) {
		pragma_buf_addf(out, "%s: not run (the suite holds no run of this task in this trajectory; it counts as "
				     "failed)", lab);
		return;
	}
	pragma_buf_addf(out, "%s (run %s, %s): %lld attempts", lab, report_str(run, "id"), report_str(run, "status"),
			(long long)json_integer_value(json_object_get(o, "attempts")));
	json_object_foreach(failed, k, v) {
		pragma_buf_addf(out, "%s%lld %s", first ? " (failed: " : ", ", (long long)json_integer_value(v), k);
		first = 0;
	}
	if (!first)
		pragma_buf_addch(out, ')');
	if (json_is_true(json_object_get(o, "correct")) && report_num(o, "speedup", &x)) {
		const char *kind = report_str(o, "spread_kind");
		json_t *fin = json_object_get(o, "final"), *own = json_object_get(o, "in_its_attempt");
		char cond[320];
		pragma_buf_addf(out, "; best: attempt %lld, final speedup %s",
				(long long)json_integer_value(json_object_get(o, "best_attempt")), report_fmt_x(x, a, sizeof(a)));
		if (report_num(o, "speedup_lo", &lo) && report_num(o, "speedup_hi", &hi)) {
			if (kind && !strcmp(kind, "95% interval"))
				pragma_buf_addf(out, " (95%% interval %s–%s)", report_fmt_x(lo, b, sizeof(b)),
						report_fmt_x(hi, c, sizeof(c)));
			else
				pragma_buf_addf(out, " (spread: %s, %s–%s)", kind ? kind : "interquartile range (older run)",
						report_fmt_x(lo, b, sizeof(b)), report_fmt_x(hi, c, sizeof(c)));
		}
		if (json_is_object(fin)) {
			double fms, bms;
			pragma_bench_final_text(fin, cond, sizeof(cond));
			pragma_buf_adds(out, ", from the final comparison");
			if (report_num(fin, "time_ms", &fms) && report_num(fin, "baseline_ms", &bms))
				pragma_buf_addf(out, " (%.3f ms against the baseline's %.3f ms)", fms, bms);
			pragma_buf_addf(out, ": %s", cond);
		}
		if (json_is_object(own) && report_num(own, "speedup", &x)) {
			double t;
			pragma_buf_addf(out, "; in its own attempt's session %s", report_fmt_x(x, a, sizeof(a)));
			if (report_num(own, "lo", &lo) && report_num(own, "hi", &hi))
				pragma_buf_addf(out, " [%s–%s]", report_fmt_x(lo, b, sizeof(b)), report_fmt_x(hi, c, sizeof(c)));
			if (report_num(own, "time_ms", &t))
				pragma_buf_addf(out, " at %.3f ms", t);
		}
		if (report_num(o, "roof", &x)) {
			pragma_buf_addf(out, ", %.1f%% of its roofline", 100 * x);
			if (report_str(o, "roof_note"))
				pragma_buf_addf(out, " (%s)", report_str(o, "roof_note"));
		}
	} else {
		pragma_buf_adds(out, "; no correct kernel");
	}
	if (report_num(json_object_get(sum, "baseline"), "median", &med) ||
	    report_num(json_object_get(json_object_get(run, "baseline"), "stats"), "median", &med))
		pragma_buf_addf(out, "; baseline (%s) median %.3f ms",
				report_str(o, "baseline_kind") ? report_str(o, "baseline_kind") : "?", med);
	if (report_str(sum, "stop_reason"))
		pragma_buf_addf(out, "; stopped: %s", report_str(sum, "stop_reason"));
	if (pragma_report_replayed(run))
		pragma_buf_adds(out, "; the model's replies were replayed from a recording");
	pragma_buf_addf(out, "; %lld tokens", (long long)json_integer_value(json_object_get(o, "tokens")));
	if (report_num(o, "cost", &x) && x > 0)
		pragma_buf_addf(out, ", $%.4f", x);
	json_t *sec = json_object_get(o, "seconds");
	if (report_num(sec, "total", &x) && x > 0) {
		double l = 0, co = 0, ve = 0, ti = 0, pr = 0, lw = 0;
		report_num(sec, "llm", &l);
		report_num(sec, "compile", &co);
		report_num(sec, "verify", &ve);
		report_num(sec, "timing", &ti);
		report_num(sec, "profile", &pr);
		report_num(sec, "lock_wait", &lw);
		pragma_buf_addf(out, "; %.0f s (model %.0f, compile %.0f, verify %.0f, timing %.0f, profile %.0f, lock wait %.0f)",
				x, l, co, ve, ti, pr, lw);
	}
}

int common_entry_warning(json_t *model, json_t *entry, struct pragma_buf *out)
{
	json_t *o = json_object_get(entry, "outcome");
	char lab[200];

	if (!json_is_true(json_object_get(o, "busy")) && !report_str(o, "warning"))
		return 0;
	report_series_label(model, entry, lab, sizeof(lab));
	pragma_buf_addf(out, "%s, run %s: %s", lab, report_str(o, "run") ?: "?",
			report_str(o, "warning") ? report_str(o, "warning") :
						   "the machine was busy during the final comparison: its speedup is unreliable");
	return 1;
}

void common_attempts_table(json_t *run, struct rtable *t, int bars)
{
	json_t *atts = report_attempts(run), *a;
	size_t n = json_array_size(atts), i;
	struct report_decision *d = calloc(n + 1, sizeof(*d));
	char xb[32], yb[32], iv[72];

	if (!d)
		abort();
	report_decide(atts, d);
	rtable_init(t, bars ? 9 : 8, bars ? "rlrrllllll" : "rlrrlllll");
	rtable_cell(t, "#");
	rtable_cell(t, "status");
	rtable_cell(t, "time ms");
	rtable_cell(t, "speedup [95%%]");
	if (bars)
		rtable_cell(t, "(8 cells = 1x, +8 per doubling)");
	rtable_cell(t, "vs best, same session");
	rtable_cell(t, "decision");
	rtable_cell(t, "best so far");
	rtable_cell(t, "note");
	json_array_foreach(atts, i, a) {
		const char *st = report_str(a, "status") ? report_str(a, "status") : "?";
		int ok = d[i].ok;
		double v, lo, hi;
		json_t *spr = json_object_get(a, "speedup_spread");
		rtable_cell(t, "%lld", (long long)json_integer_value(json_object_get(a, "n")));
		rtable_cell(t, "\x01%s\x02%s", ok ? "ok" : "bad", st);
		/* The attempt's one time: its timing session's. */
		if (report_num(a, "time_ms", &v))
			rtable_cell(t, "%.3f", v);
		else
			rtable_cell(t, "-");
		if (ok && report_num(a, "speedup", &v)) {
			if (report_num(spr, "lo", &lo) && report_num(spr, "hi", &hi) &&
			    !strcmp(pragma_bench_spread_kind(spr) ?: "", "95% interval"))
				rtable_cell(t, "%s [%s]", report_fmt_x(v, xb, sizeof(xb)), pragma_interval_str(lo, hi, iv, sizeof(iv)));
			else
				rtable_cell(t, "%s", report_fmt_x(v, xb, sizeof(xb)));
		} else {
			rtable_cell(t, "-");
		}
		if (bars) {
			struct pragma_buf bar = PRAGMA_BUF_INIT;
			if (ok && report_num(a, "speedup", &v) && v > 0) {
				int cells = (int)lround(8 + 8 * log2(v));
				for (int k = 0; k < (cells < 1 ? 1 : cells > 48 ? 48 : cells); k++)
					pragma_buf_adds(&bar, "█");
			} else {
				pragma_buf_adds(&bar, "✗");
			}
			rtable_cell(t, "%s", bar.data);
			pragma_buf_release(&bar);
		}
		rtable_cell(t, "%s", d[i].vs[0] ? d[i].vs : "-");
		if (ok)
			rtable_cell(t, "\x01%s\x02%s", d[i].became_best ? "newbest" : "kept", d[i].badge);
		else
			rtable_cell(t, "\x01" "bad\x02%s", d[i].badge);
		if (d[i].best_n)
			rtable_cell(t, "\x01%s\x02#%d (%s%s)", d[i].best_n == d[i].n && ok ? "newbest" : "kept", d[i].best_n,
				    report_fmt_x(d[i].best_x, yb, sizeof(yb)), d[i].best_in_session ? " in this session" : "");
		else
			rtable_cell(t, "-");
		const char *msg = report_str(a, "message");
		rtable_cell(t, "%s%.120s%s", report_is_best(a) ? "best kernel. " : "",
			    msg ? msg : "", msg && strlen(msg) > 120 ? "…" : "");
	}
	free(d);
	json_decref(atts);
}

const char *common_group_title(const char *group)
{
	return !strcmp(group, "native") ? "Native C tasks" : "PyTorch-baselined tasks";
}

const char *common_group_note(const char *group)
{
	return !strcmp(group, "native")
		       ? "Baseline: the task's C reference built with -O3 -march=native -fopenmp, or its baseline.c; "
			 "reported apart from PyTorch-baselined tasks, never averaged with them."
		       : "Baseline: PyTorch eager on the same machine (threads = usable cores, OpenBLAS, tcmalloc); "
			 "reported apart from native C tasks, never averaged with them.";
}
