/*
 * The HTML report: one self-contained file (inline style sheet, inline
 * SVG, no scripts, nothing fetched), readable on screen and in print.
 */
#include <ctype.h>
#include <stdio.h>
#include <string.h>

#include "pragma/bench.h"
#include "report/report_priv.h"

static const char css[] =
	":root{--fg:#1f2328;--muted:#59636e;--line:#d8dee4;--soft:#f6f8fa;--accent:#1f6feb}\n"
	"*{box-sizing:border-box}\n"
	"body{margin:0;color:var(--fg);background:#fff;font:15px/1.55 system-ui,-apple-system,'Segoe UI',Roboto,"
	"'DejaVu Sans',sans-serif}\n"
	"nav.toc{position:fixed;top:0;left:0;bottom:0;width:250px;overflow:auto;padding:24px 18px;"
	"background:var(--soft);border-right:1px solid var(--line);font-size:13.5px}\n"
	"nav.toc h2{font-size:12px;text-transform:uppercase;letter-spacing:.08em;color:var(--muted);margin:0 0 8px;border:0}\n"
	"nav.toc ol{list-style:none;padding-left:0;margin:0}nav.toc ol ol{padding-left:14px}\n"
	"nav.toc li{margin:3px 0}nav.toc a{color:var(--fg);text-decoration:none}nav.toc a:hover{color:var(--accent)}\n"
	"nav.toc .sp{float:right;color:var(--muted);font-variant-numeric:tabular-nums}\n"
	"main{margin-left:250px;padding:28px 40px 60px;max-width:1180px}\n"
	"h1{font-size:28px;margin:0 0 4px}h2{font-size:21px;margin:40px 0 12px;padding-bottom:6px;"
	"border-bottom:1px solid var(--line)}\n"
	"h3{font-size:17px;margin:26px 0 8px}h4{font-size:14.5px;margin:20px 0 6px;color:#333}\n"
	".sub{color:var(--muted);margin:0 0 18px}.note{color:var(--muted);font-size:13.5px}\n"
	"table{border-collapse:collapse;margin:8px 0 14px;font-size:13.5px}\n"
	"th,td{padding:5px 10px;border-bottom:1px solid var(--line);text-align:left;vertical-align:top}\n"
	"thead th{background:var(--soft);font-weight:600;border-bottom:2px solid var(--line)}\n"
	"tbody tr:nth-child(even){background:#fbfcfd}\n"
	"td.num,th.num{text-align:right;font-variant-numeric:tabular-nums;white-space:nowrap}\n"
	"td.ok{color:#1a7f37}td.bad{color:#cf222e;font-weight:600}td.newbest{font-weight:700}\n"
	"td.better{color:#1a7f37;font-weight:600}td.worse{color:#cf222e;font-weight:600}\n"
	"table.t1 td:first-child{color:#333}table.runs td:not(:nth-child(2)){white-space:nowrap}\n"
	".grid{display:grid;grid-template-columns:repeat(auto-fill,minmax(360px,1fr));gap:0 26px}\n"
	"figure{margin:14px 0 22px}figcaption{color:var(--muted);font-size:13px;max-width:900px}\n"
	"svg.plot{width:100%;height:auto;max-width:900px;display:block;background:#fff}\n"
	"svg .tick{font-size:11px;fill:#555}svg .atitle{font-size:12px;fill:#333}svg .legend{font-size:12px;fill:#222}\n"
	"svg .note{fill:#666;font-size:11.5px}svg .reflabel{font-size:10.5px;fill:#555}svg .catlabel{font-size:12.5px;"
	"fill:#222;font-weight:600}\n"
	"svg .pt,svg .final{stroke:#fff;stroke-width:1}svg .bestpt{stroke:#111;stroke-width:1.6}\n"
	"section.task{border-top:1px solid var(--line);margin-top:34px;padding-top:4px}\n"
	".meta{margin:6px 0 10px;padding-left:18px}.meta li{margin:3px 0}\n"
	".round{border:1px solid var(--line);border-radius:8px;padding:10px 14px;margin:10px 0;background:#fff}\n"
	".round h5{margin:0 0 6px;font-size:14px}\n"
	".round .body{display:grid;grid-template-columns:minmax(250px,max-content) 1fr;gap:4px 22px;align-items:start}\n"
	"@media (max-width:800px){.round .body{grid-template-columns:1fr}}\n"
	".badge{display:inline-block;padding:1px 8px;border-radius:10px;font-size:12px;font-weight:600;"
	"margin-left:6px;color:#fff;background:#6e7781}\n"
	".badge.newbest{background:#1a7f37}.badge.kept{background:#6e7781}.badge.samebuild{background:#8250df}"
	".badge.failure{background:#cf222e}\n"
	".cverdict{font-weight:400;font-size:12.5px;color:var(--muted);margin-left:8px}\n"
	".recorded{border-left:4px solid #9a6700;background:#fff8c5;padding:6px 10px;margin:8px 0;font-size:13.5px}\n"
	".warn{border-left:4px solid #cf222e;background:#ffebe9;padding:6px 10px;margin:8px 0;font-weight:600}\n"
	"td.changed-with-the-algorithm{color:#8250df}\n"
	".round table{margin:4px 0 8px}.round p{white-space:pre-wrap;margin:4px 0 8px}\n"
	".round .lab{font-weight:600;color:#333;margin-top:6px}\n"
	"pre{background:var(--soft);border:1px solid var(--line);border-radius:6px;padding:12px;overflow:auto;"
	"font:12.5px/1.45 ui-monospace,'DejaVu Sans Mono',Menlo,Consolas,monospace}\n"
	"details{margin:8px 0}summary{cursor:pointer;color:var(--accent);font-weight:600}\n"
	"@media (max-width:1000px){nav.toc{position:static;width:auto;border-right:0;border-bottom:1px solid var(--line)}"
	"main{margin-left:0;padding:20px}}\n"
	"@media print{nav.toc{display:none}main{margin:0;max-width:none}details{display:block}"
	"section.task{break-before:page}}\n";

static void esc(struct pragma_buf *out, const char *s)
{
	report_esc(out, s);
}

static void anchor(struct pragma_buf *out, const char *name)
{
	pragma_buf_adds(out, "task-");
	for (; *name; name++)
		pragma_buf_addch(out, isalnum((unsigned char)*name) || *name == '-' || *name == '_' ? *name : '_');
}

static void table(struct rtable *t, const char *cls, struct pragma_buf *out)
{
	rtable_html(t, cls, out);
	rtable_release(t);
}

static void toc(json_t *model, struct pragma_buf *out)
{
	static const char *const groups[] = { "pytorch", "native" };
	json_t *task, *e;
	size_t i, j;

	pragma_buf_adds(out, "<nav class=\"toc\"><h2>Contents</h2><ol>\n<li><a href=\"#series\">Series compared</a></li>\n"
			     "<li><a href=\"#summary\">Summary (Table I)</a><ol>\n");
	for (int g = 0; g < 2; g++)
		if (common_group_present(model, groups[g]))
			pragma_buf_addf(out, "<li><a href=\"#t1-%s\">%s</a></li>\n", groups[g], common_group_title(groups[g]));
	pragma_buf_adds(out, "</ol></li>\n<li><a href=\"#fig3\">Speedup by category (Fig. 3)</a></li>\n"
			     "<li><a href=\"#tasks\">Tasks</a><ol>\n");
	json_array_foreach(json_object_get(model, "tasks"), i, task) {
		char xb[32] = "";
		double best = 0, v;
		json_array_foreach(json_object_get(task, "entries"), j, e)
			if (report_num(json_object_get(e, "outcome"), "speedup", &v) && v > best)
				best = v;
		pragma_buf_adds(out, "<li><a href=\"#");
		anchor(out, report_str(task, "name"));
		pragma_buf_adds(out, "\">");
		esc(out, report_str(task, "name"));
		pragma_buf_addf(out, "</a><span class=\"sp\">%s</span></li>\n", best > 0 ? report_fmt_x(best, xb, sizeof(xb)) : "✗");
	}
	pragma_buf_adds(out, "</ol></li>\n<li><a href=\"#sources\">Where the numbers come from</a></li>\n</ol></nav>\n");
}

/* Table I's notes, one paragraph each (the busy-machine one as a warning). */
static void notes(json_t *model, const char *g, const char *category, struct pragma_buf *out)
{
	struct pragma_buf nb = PRAGMA_BUF_INIT;

	common_table1_notes(model, g, category, &nb, 0);
	for (char *p = nb.data, *nl; p && *p; p = nl ? nl + 1 : NULL) {
		nl = strchr(p, '\n');
		if (nl)
			*nl = 0;
		pragma_buf_addf(out, "<p class=\"%s\">", !strncmp(p, "WARNING", 7) ? "warn" : "note");
		esc(out, p);
		pragma_buf_adds(out, "</p>\n");
	}
	pragma_buf_release(&nb);
}

static void summary(json_t *model, struct pragma_buf *out)
{
	static const char *const groups[] = { "pytorch", "native" };
	json_t *cols = json_object_get(model, "columns"), *col;
	struct rtable t;
	size_t i;

	pragma_buf_adds(out, "<section id=\"summary\"><h2>Summary (Table I)</h2>\n"
			     "<p class=\"note\">Speedups are each task's final comparison of its best kernel with the baseline "
			     "(a timing session of its own, interleaved rounds; its 95% interval and how disturbed the machine "
			     "was are in each task's line), averaged over tasks with a correct kernel. fast_p: the share of tasks whose "
			     "kernel is correct and more than p times faster. With several trajectories (<code>--repeat</code>) "
			     "every figure is their mean ± standard deviation [min – max].</p>\n");
	for (int gi = 0; gi < 2; gi++) {
		const char *g = groups[gi];
		int ncat = 0;
		if (!common_group_present(model, g))
			continue;
		pragma_buf_addf(out, "<h3 id=\"t1-%s\">%s</h3>\n<p class=\"note\">", g, common_group_title(g));
		esc(out, common_group_note(g));
		pragma_buf_adds(out, "</p>\n");
		common_table1(model, g, NULL, &t);
		table(&t, "t1", out);
		notes(model, g, NULL, out);
		if (json_array_size(cols) > 1) {
			struct pragma_buf j = PRAGMA_BUF_INIT;
			common_judgements(model, g, &j, 0);
			pragma_buf_adds(out, "<p class=\"note\">");
			for (char *p = j.data, *nl; *p; p = nl + 1) {
				nl = strchr(p, '\n');
				*nl = 0;
				esc(out, p);
				pragma_buf_adds(out, "<br>");
			}
			pragma_buf_adds(out, "</p>\n");
			pragma_buf_release(&j);
		}
		for (int c = 0; c < PRAGMA_BENCH_N_CATEGORIES; c++) {
			int have = 0;
			json_array_foreach(cols, i, col)
				have |= common_metrics(col, g, pragma_bench_categories[c]) != NULL;
			ncat += have;
		}
		if (ncat < 2)
			continue;
		pragma_buf_addf(out, "<h4>%s by category</h4>\n<div class=\"grid\">\n", common_group_title(g));
		for (int c = 0; c < PRAGMA_BENCH_N_CATEGORIES; c++) {
			int have = 0;
			json_array_foreach(cols, i, col)
				have |= common_metrics(col, g, pragma_bench_categories[c]) != NULL;
			if (!have)
				continue;
			pragma_buf_adds(out, "<div>");
			common_table1(model, g, pragma_bench_categories[c], &t);
			table(&t, "t1 cat", out);
			notes(model, g, pragma_bench_categories[c], out);
			pragma_buf_adds(out, "</div>\n");
		}
		pragma_buf_adds(out, "</div>\n");
	}
	pragma_buf_adds(out, "</section>\n");
}

static void fig3(json_t *model, struct pragma_buf *out)
{
	static const char *const groups[] = { "pytorch", "native" };

	pragma_buf_adds(out, "<section id=\"fig3\"><h2>Speedup by category (Fig. 3)</h2>\n");
	for (int g = 0; g < 2; g++) {
		if (!common_group_present(model, groups[g]))
			continue;
		pragma_buf_addf(out, "<figure><h3>%s</h3>\n", common_group_title(groups[g]));
		report_svg_categories(out, model, groups[g]);
		pragma_buf_adds(out, "<figcaption>Each point is one task's final interleaved speedup (every trajectory "
				     "counts once); boxes span the quartiles, the line marks the median, whiskers the range; "
				     "the hollow diamond is the category's geometric mean from Table I. Tasks without a "
				     "correct kernel are counted under ×. Hover a mark for its task and run.</figcaption>"
				     "</figure>\n");
	}
	pragma_buf_adds(out, "</section>\n");
}

static void figures_table(json_t *r, struct pragma_buf *out)
{
	json_t *best = json_object_get(r, "best"), *cur = json_object_get(r, "cur"), *f, *b;
	json_int_t bn = json_integer_value(json_object_get(r, "best_n")), n = json_integer_value(json_object_get(r, "n"));
	struct rtable t;
	size_t i, k;

	if (!json_array_size(cur) && !json_array_size(best))
		return;
	rtable_init(&t, 3, "lrr");
	rtable_cell(&t, " ");
	if (bn)
		rtable_cell(&t, "historical best (#%lld)", (long long)bn);
	else
		rtable_cell(&t, "historical best");
	rtable_cell(&t, "current (#%lld)", (long long)n);
	/* rows: the current kernel's figures, then any only the best has */
	json_array_foreach(cur, i, f) {
		const char *bt = "-";
		json_array_foreach(best, k, b)
			if (!strcmp(report_str(b, "label"), report_str(f, "label")))
				bt = report_str(b, "text");
		rtable_cell(&t, "%s", report_str(f, "label"));
		rtable_cell(&t, "%s", bn ? bt : "none yet");
		rtable_cell(&t, "%s", report_str(f, "text"));
	}
	json_array_foreach(best, k, b) {
		int seen = 0;
		json_array_foreach(cur, i, f)
			seen |= !strcmp(report_str(b, "label"), report_str(f, "label"));
		if (seen)
			continue;
		rtable_cell(&t, "%s", report_str(b, "label"));
		rtable_cell(&t, "%s", report_str(b, "text"));
		rtable_cell(&t, "-");
	}
	table(&t, "fig", out);
}

static void para(struct pragma_buf *out, const char *label, const char *text)
{
	if (!text || !*text)
		return;
	pragma_buf_addf(out, "<div class=\"lab\">%s</div><p>", label);
	esc(out, text);
	pragma_buf_adds(out, "</p>\n");
}

/* The badge's class: the measurement's decision. */
static const char *badge_class(const char *badge)
{
	if (!strcmp(badge, "new best"))
		return "newbest";
	if (!strcmp(badge, "best kept"))
		return "kept";
	if (!strcmp(badge, "the same build"))
		return "samebuild";
	return "failure";
}

static void trace(json_t *run, const char *lab, struct pragma_buf *out)
{
	json_t *rounds = report_trace(run), *r;
	size_t i;

	if (json_array_size(rounds)) {
		pragma_buf_adds(out, "<details open><summary>");
		esc(out, lab);
		pragma_buf_addf(out, ": the Conductor's reasoning, %zu rounds</summary>\n", json_array_size(rounds));
		if (pragma_report_replayed(run)) {
			pragma_buf_adds(out, "<p class=\"recorded\">The Conductor's text in this run was ");
			esc(out, pragma_report_replay_note);
			pragma_buf_adds(out, ".</p>\n");
		}
		pragma_buf_adds(out, "<p class=\"note\">Each badge is the measurement's decision (new best, best kept, the "
				     "same build, or the failure); the Conductor's own verdict is shown beside it.</p>\n");
		json_array_foreach(rounds, i, r) {
			const char *v = report_str(r, "verdict"), *b = report_str(r, "badge");
			pragma_buf_addf(out, "<div class=\"round\"><h5>Attempt %lld", (long long)json_integer_value(json_object_get(r, "n")));
			pragma_buf_addf(out, "<span class=\"badge %s\">", badge_class(b));
			esc(out, b);
			pragma_buf_adds(out, "</span><span class=\"cverdict\">the Conductor's verdict: ");
			esc(out, *v ? v : "none");
			if (json_is_true(json_object_get(r, "recorded")))
				pragma_buf_adds(out, " (recorded)");
			pragma_buf_adds(out, "</span>");
			pragma_buf_adds(out, "</h5>\n<div class=\"body\"><div>");
			figures_table(r, out);
			if (report_str(r, "roof_note")) {
				pragma_buf_adds(out, "<p class=\"note\">* ");
				esc(out, report_str(r, "roof_note"));
				pragma_buf_adds(out, "</p>");
			}
			pragma_buf_adds(out, "</div><div>");
			para(out, "Verifier", report_str(r, "message"));
			para(out, "Against the best, in this attempt's session", report_str(r, "vs_best"));
			para(out, json_is_true(json_object_get(r, "recorded")) ? "Analysis (recorded)" : "Analysis",
			     report_str(r, "analysis"));
			para(out, "Action", report_str(r, "actions"));
			para(out, "Algorithm", report_str(r, "algorithm"));
			para(out, "Summary of the run", report_str(r, "summary"));
			para(out, "Metrics requested", report_str(r, "requested"));
			pragma_buf_adds(out, "</div></div></div>\n");
		}
		pragma_buf_adds(out, "</details>\n");
	}
	json_decref(rounds);
}

static void task_section(json_t *model, json_t *task, struct pragma_buf *out)
{
	json_t *e;
	size_t i;
	struct rtable t;
	const char *method = NULL;

	pragma_buf_adds(out, "<section class=\"task\" id=\"");
	anchor(out, report_str(task, "name"));
	pragma_buf_adds(out, "\"><h3>");
	esc(out, report_str(task, "name"));
	pragma_buf_adds(out, "</h3>\n<p class=\"sub\">");
	esc(out, report_str(task, "category"));
	pragma_buf_addf(out, " · %s</p>\n<ul class=\"meta\">\n",
			strcmp(report_str(task, "kind"), "native") ? "PyTorch baseline" : "native C baseline");
	json_array_foreach(json_object_get(task, "entries"), i, e) {
		struct pragma_buf line = PRAGMA_BUF_INIT;
		common_entry_line(model, e, &line);
		pragma_buf_adds(out, "<li>");
		esc(out, line.data);
		pragma_buf_adds(out, "</li>\n");
		pragma_buf_release(&line);
		if (!method)
			method = report_str(json_object_get(json_object_get(json_object_get(json_object_get(e, "run"), "summary"),
									    "best"),
							    "speedup_spread"),
					    "method");
	}
	pragma_buf_adds(out, "</ul>\n");
	json_array_foreach(json_object_get(task, "entries"), i, e) {
		struct pragma_buf w = PRAGMA_BUF_INIT;
		if (common_entry_warning(model, e, &w)) {
			pragma_buf_adds(out, "<p class=\"warn\">WARNING: ");
			esc(out, w.data);
			pragma_buf_adds(out, "</p>\n");
		}
		pragma_buf_release(&w);
	}
	int any_run = 0;
	json_array_foreach(json_object_get(task, "entries"), i, e)
		any_run |= json_is_object(json_object_get(e, "run"));
	if (!any_run) {
		pragma_buf_adds(out, "<p class=\"note\">No run of this task is stored: nothing to plot.</p></section>\n");
		return;
	}
	pragma_buf_adds(out, "<figure>\n");
	report_svg_attempts(out, model, task);
	pragma_buf_adds(out, "<figcaption>Fig. 4 style: each attempt's speedup (its timing session, with the baseline "
			     "and the best: thin line), the best so far as the loop held it, at the speedup it had in "
			     "each attempt's session (thick line: replaced only when a correct kernel was faster beyond "
			     "the 95% interval and a 3% margin), failed attempts as ×, and at the right the best "
			     "kernel's final speedup (a session of its own) with its interval");
	if (method) {
		pragma_buf_adds(out, " (");
		esc(out, method);
		pragma_buf_adds(out, ")");
	}
	pragma_buf_adds(out, ".</figcaption></figure>\n");

	json_array_foreach(json_object_get(task, "entries"), i, e) {
		json_t *run = json_object_get(e, "run"), *atts = report_attempts(run), *first = NULL, *best = NULL, *a;
		char lab[200];
		size_t k;

		report_series_label(model, e, lab, sizeof(lab));
		if (!json_is_object(run)) {
			json_decref(atts);
			continue;
		}
		pragma_buf_adds(out, "<h4>");
		esc(out, lab);
		pragma_buf_adds(out, ": attempts</h4>\n");
		common_attempts_table(run, &t, 0);
		table(&t, "att", out);
		trace(run, lab, out);

		json_array_foreach(atts, k, a) {
			if (!first && !strcmp(report_str(a, "status") ? report_str(a, "status") : "", "ok"))
				first = a;
			if (report_is_best(a))
				best = a;
		}
		if (first && best && first != best) {
			json_t *rows = report_profile_rows(first, best, report_time_verdict(first, best)), *row;
			struct pragma_buf pn = PRAGMA_BUF_INIT;
			pragma_buf_adds(out, "<h4>");
			esc(out, lab);
			pragma_buf_adds(out, ": profile of the best kernel vs the first correct one</h4>\n");
			if (!json_array_size(rows)) {
				pragma_buf_adds(out, "<p class=\"note\">No profile stored for either kernel (n-pragma and single "
						     "modes do not profile).</p>\n");
			} else {
				rtable_init(&t, 4, "lrrl");
				rtable_cell(&t, "metric");
				rtable_cell(&t, "first correct (#%lld)", (long long)json_integer_value(json_object_get(first, "n")));
				rtable_cell(&t, "best (#%lld)", (long long)json_integer_value(json_object_get(best, "n")));
				rtable_cell(&t, "change beyond noise");
				json_array_foreach(rows, k, row) {
					const char *ch = report_str(row, "change");
					char cls[64];
					size_t q;
					/* a class name: the words joined by '-' */
					for (q = 0; ch[q] && ch[q] != ':' && q < sizeof(cls) - 1; q++)
						cls[q] = ch[q] == ' ' ? '-' : ch[q];
					cls[q] = 0;
					rtable_cell(&t, "%s", report_str(row, "label"));
					rtable_cell(&t, "%s", report_str(row, "a"));
					rtable_cell(&t, "%s", report_str(row, "b"));
					rtable_cell(&t, "\x01%s\x02%s", cls, ch);
					if (report_str(row, "note")) {
						pragma_buf_adds(&pn, "<p class=\"note\">* ");
						esc(&pn, report_str(row, "label"));
						pragma_buf_adds(&pn, ": ");
						esc(&pn, report_str(row, "note"));
						pragma_buf_adds(&pn, "</p>\n");
					}
				}
				table(&t, "prof", out);
				pragma_buf_adds(out, "<p class=\"note\">The first row is each attempt's time as its timing session "
						     "measured it (the time shown everywhere for it); “profiled run” rows are the "
						     "profiler's own run with counters on. Counts of work (FMAs, instructions) are "
						     "judged by the time: where the algorithm changed they are neither better nor "
						     "worse.</p>\n");
				pragma_buf_adds(out, pn.data ? pn.data : "");
			}
			pragma_buf_release(&pn);
			json_decref(rows);
		} else if (best) {
			pragma_buf_addf(out, "<p class=\"note\">The first correct kernel (attempt %lld) stayed the best: no "
					     "profile to compare.</p>\n",
					(long long)json_integer_value(json_object_get(best, "n")));
		}
		if (best && report_str(best, "code")) {
			const char *code = report_str(best, "code");
			int lines = 0;
			for (const char *p = code; *p; p++)
				lines += *p == '\n';
			pragma_buf_adds(out, "<details><summary>");
			esc(out, lab);
			pragma_buf_addf(out, ": best kernel source (attempt %lld, %d lines)</summary>\n<pre><code class=\"kernel\">",
					(long long)json_integer_value(json_object_get(best, "n")), lines);
			esc(out, code);
			pragma_buf_adds(out, "</code></pre></details>\n");
		}
		json_decref(atts);
	}
	pragma_buf_adds(out, "</section>\n");
}

int report_html(json_t *model, const char *origin, struct pragma_buf *out)
{
	struct rtable t;
	struct pragma_buf line = PRAGMA_BUF_INIT;
	json_t *task, *col;
	size_t i;

	pragma_buf_adds(out, "<!DOCTYPE html>\n<html lang=\"en\"><head><meta charset=\"utf-8\">\n"
			     "<meta name=\"viewport\" content=\"width=device-width, initial-scale=1\">\n<title>pragma report: ");
	json_array_foreach(json_object_get(model, "columns"), i, col) {
		if (i)
			pragma_buf_adds(out, " vs ");
		esc(out, report_str(col, "label"));
	}
	pragma_buf_addf(out, "</title>\n<style>\n%s</style>\n</head>\n<body>\n", css);
	toc(model, out);
	pragma_buf_adds(out, "<main>\n<h1>pragma report</h1>\n<p class=\"sub\">");
	if (origin) {
		pragma_buf_adds(out, "From the run store <code>");
		esc(out, origin);
		pragma_buf_adds(out, "</code>. ");
	}
	common_machine(model, &line);
	esc(out, line.data);
	pragma_buf_adds(out, ".</p>\n");
	pragma_buf_release(&line);

	pragma_buf_adds(out, "<section id=\"series\"><h2>Series compared</h2>\n");
	common_runs_table(model, &t);
	table(&t, "runs", out);
	pragma_buf_adds(out, "</section>\n");

	summary(model, out);
	fig3(model, out);

	pragma_buf_addf(out, "<section id=\"tasks\"><h2>Tasks</h2>\n");
	json_array_foreach(json_object_get(model, "tasks"), i, task)
		task_section(model, task, out);
	pragma_buf_adds(out, "</section>\n");

	pragma_buf_adds(out,
			"<section id=\"sources\"><h2>Where the numbers come from</h2><ul>\n"
			"<li>Every number is read from the run store; the Table I metrics are lib/bench's "
			"(<code>pragma_bench_metrics</code> over one outcome per task and trajectory).</li>\n"
			"<li><b>Final speedup</b>: the best kernel and the baseline timed in a session of their own at the "
			"end of the run (interleaved rounds in fresh processes); the interval is a 95% bootstrap interval "
			"over that session's sessions and rounds (runs stored before this said “interquartile range (older "
			"run)”). Each task's line says how many rounds ran undisturbed by other processes; a final "
			"comparison on a busy machine carries a warning.</li>\n"
			"<li><b>Attempt time and speedup</b>: each correct attempt was timed in one session with the "
			"baseline and the best so far; its time (the median of its timed calls), speedup with a 95% "
			"interval and comparison with the best come from that session, and that time is the one every "
			"table shows for it. A profile's own times are the profiled run's, labelled “profiled run”.</li>\n"
			"<li><b>Badges</b>: the measurement's decision on each attempt — new best (faster than the best "
			"beyond the interval and a 3% margin, or the first correct kernel), best kept, the same build, or the "
			"failure category. The Conductor's verdict is its own opinion, shown beside the badge.</li>\n"
			"<li><b>Best so far</b>: the loop's historical best, with its speedup as timed beside each attempt "
			"in that attempt's session where it was (column “vs best, same session”).</li>\n"
			"<li><b>Fraction of roofline</b>: <code>roof.pct_roof</code> of the best kernel's profile (pragma "
			"mode only): the session's time against the bound from the FP32 peak and the bandwidth roof (what a "
			"streaming kernel reaches under the timing protocol). A kernel that runs the task's FLOP count above "
			"the FP32 peak does fewer FLOPs than counted (Winograd, Strassen): its fraction is of the bandwidth "
			"roof, and says so; a fraction above 100% is explained where it appears.</li>\n"
			"<li><b>Replayed runs</b>: a run whose model replies came from a recording shows the Conductor's "
			"text as recorded on another machine; the numbers it cites are that machine's.</li>\n"
			"<li><b>Tokens and cost</b>: the LLM calls the store recorded for the run.</li>\n"
			"</ul></section>\n</main>\n</body></html>\n");
	return 0;
}
