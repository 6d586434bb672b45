/*
 * The Markdown report: for terminals and repositories. Tables are padded
 * to line up in a terminal; the plots become tables (Fig. 3) and text bars
 * (Fig. 4); the Conductor's trace reads like the paper's Listing 1.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pragma/bench.h"
#include "report/report_priv.h"

#define WIDTH 100

static void table(struct rtable *t, struct pragma_buf *out)
{
	rtable_md(t, out);
	rtable_release(t);
	pragma_buf_addch(out, '\n');
}

static void summary(json_t *model, struct pragma_buf *out)
{
	static const char *const groups[] = { "pytorch", "native" };
	struct rtable t;

	pragma_buf_adds(out, "## Summary (Table I)\n\n");
	for (int gi = 0; gi < 2; gi++) {
		const char *g = groups[gi];
		json_t *cols = json_object_get(model, "columns"), *col, *m;
		size_t i;
		int ncat = 0;

		if (!common_group_present(model, g))
			continue;
		pragma_buf_addf(out, "### %s\n\n", common_group_title(g));
		report_wrap(out, common_group_note(g), WIDTH, 0);
		report_wrap(out, "Speedups are each task's final comparison of its best kernel with the baseline (a "
				 "timing session of its own, interleaved rounds; its 95% interval and how disturbed the "
				 "machine was are in each task's line), over tasks with a correct kernel; fast_p is the "
				 "share of tasks whose kernel is correct and more than p times faster. With several "
				 "trajectories each figure is their mean ± standard deviation [min – max].", WIDTH, 0);
		pragma_buf_addch(out, '\n');
		common_table1(model, g, NULL, &t);
		table(&t, out);
		{
			struct pragma_buf nb = PRAGMA_BUF_INIT;
			common_table1_notes(model, g, NULL, &nb, 1);
			if (nb.len)
				pragma_buf_addf(out, "%s\n", nb.data);
			pragma_buf_release(&nb);
		}
		if (json_array_size(cols) > 1) {
			common_judgements(model, g, out, 1);
			pragma_buf_addch(out, '\n');
		}
		for (int c = 0; c < PRAGMA_BENCH_N_CATEGORIES; c++) {
			int have = 0;
			json_array_foreach(cols, i, col)
				have |= (m = common_metrics(col, g, pragma_bench_categories[c])) != NULL;
			ncat += have;
		}
		if (ncat < 2)
			continue;
		pragma_buf_addf(out, "#### %s by category\n\n", common_group_title(g));
		for (int c = 0; c < PRAGMA_BENCH_N_CATEGORIES; c++) {
			int have = 0;
			json_array_foreach(cols, i, col)
				have |= common_metrics(col, g, pragma_bench_categories[c]) != NULL;
			if (!have)
				continue;
			common_table1(model, g, pragma_bench_categories[c], &t);
			table(&t, out);
			struct pragma_buf nb = PRAGMA_BUF_INIT;
			common_table1_notes(model, g, pragma_bench_categories[c], &nb, 1);
			if (nb.len)
				pragma_buf_addf(out, "%s\n", nb.data);
			pragma_buf_release(&nb);
		}
	}
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Fig. 3 as a table: per category and series, the spread of final speedups. */
static void fig3(json_t *model, struct pragma_buf *out)
{
	static const char *const groups[] = { "pytorch", "native" };
	json_t *cols = json_object_get(model, "columns"), *col, *o;
	size_t i, j;
	char a[32], b[32], c3[32], d[32];

	pragma_buf_adds(out, "## Speedup by category (Fig. 3)\n\n"
			     "Final interleaved speedups of each task's best kernel (every trajectory counts once); "
			     "geometric mean as in Table I.\n\n");
	for (int gi = 0; gi < 2; gi++) {
		struct rtable t;
		if (!common_group_present(model, groups[gi]))
			continue;
		pragma_buf_addf(out, "### %s\n\n", common_group_title(groups[gi]));
		rtable_init(&t, 7, "llrrrrr");
		rtable_cell(&t, "category");
		rtable_cell(&t, "series");
		rtable_cell(&t, "correct");
		rtable_cell(&t, "min");
		rtable_cell(&t, "median");
		rtable_cell(&t, "max");
		rtable_cell(&t, "geomean");
		for (int c = 0; c < PRAGMA_BENCH_N_CATEGORIES; c++) {
			const char *cat = pragma_bench_categories[c];
			json_array_foreach(cols, i, col) {
				json_t *m = common_metrics(col, groups[gi], cat);
				json_t *outs = json_object_get(col, "outcomes");
				double *v = calloc(json_array_size(outs) + 1, sizeof(double)), x;
				int n = 0, all = 0;
				if (!v)
					abort();
				if (!m) {
					free(v);
					continue;
				}
				json_array_foreach(outs, j, o) {
					int native = !strcmp(report_str(o, "kind") ? report_str(o, "kind") : "", "native");
					if (native != (gi == 1) || strcmp(report_str(o, "category") ? report_str(o, "category") : "", cat))
						continue;
					all++;
					if (json_is_true(json_object_get(o, "correct")) && report_num(o, "speedup", &x) && x > 0)
						v[n++] = x;
				}
				qsort(v, (size_t)n, sizeof(double), cmp_double);
				rtable_cell(&t, "%s", cat);
				rtable_cell(&t, "%s", report_str(col, "label"));
				rtable_cell(&t, "%d of %d", n, all);
				rtable_cell(&t, "%s", n ? report_fmt_x(v[0], a, sizeof(a)) : "-");
				rtable_cell(&t, "%s", n ? report_fmt_x(n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2, b, sizeof(b)) : "-");
				rtable_cell(&t, "%s", n ? report_fmt_x(v[n - 1], c3, sizeof(c3)) : "-");
				rtable_cell(&t, "%s", report_num(m, "geomean", &x) ? report_fmt_x(x, d, sizeof(d)) : "-");
				free(v);
			}
		}
		table(&t, out);
	}
}

static void trace_text(json_t *r, struct pragma_buf *out)
{
	json_t *f;
	size_t i;
	const char *s;

	/* The measurement's word first; the Conductor's beside it, as its. */
	pragma_buf_addf(out, "Attempt %lld: %s — the Conductor's verdict: %s%s\n",
			(long long)json_integer_value(json_object_get(r, "n")), report_str(r, "badge"),
			*report_str(r, "verdict") ? report_str(r, "verdict") : "(none)",
			json_is_true(json_object_get(r, "recorded")) ? " (recorded)" : "");
	if (json_integer_value(json_object_get(r, "best_n"))) {
		pragma_buf_addf(out, "Historical best (attempt %lld):\n", (long long)json_integer_value(json_object_get(r, "best_n")));
		json_array_foreach(json_object_get(r, "best"), i, f)
			pragma_buf_addf(out, "  %-22s = %s\n", report_str(f, "label"), report_str(f, "text"));
	} else {
		pragma_buf_adds(out, "Historical best: none yet\n");
	}
	pragma_buf_addf(out, "Current code (attempt %lld):\n", (long long)json_integer_value(json_object_get(r, "n")));
	json_array_foreach(json_object_get(r, "cur"), i, f)
		pragma_buf_addf(out, "  %-22s = %s\n", report_str(f, "label"), report_str(f, "text"));
	if ((s = report_str(r, "roof_note"))) {
		pragma_buf_adds(out, "  * ");
		report_wrap(out, s, WIDTH - 4, 0);
	}
	if (*(s = report_str(r, "message"))) {
		pragma_buf_adds(out, "  message:\n");
		report_wrap(out, s, WIDTH, 4);
	}
	if ((s = report_str(r, "vs_best")))
		report_wrap(out, s, WIDTH, 2);
	if (*(s = report_str(r, "analysis"))) {
		pragma_buf_adds(out, "Analysis:\n");
		report_wrap(out, s, WIDTH, 2);
	}
	if (*(s = report_str(r, "actions"))) {
		pragma_buf_adds(out, "Action:\n");
		report_wrap(out, s, WIDTH, 2);
	}
	if (*(s = report_str(r, "algorithm"))) {
		pragma_buf_adds(out, "Algorithm:\n");
		report_wrap(out, s, WIDTH, 2);
	}
	if (*(s = report_str(r, "summary"))) {
		pragma_buf_adds(out, "Summary of the run:\n");
		report_wrap(out, s, WIDTH, 2);
	}
	if (*(s = report_str(r, "requested")))
		pragma_buf_addf(out, "Metrics requested: %s\n", s);
}

/* A fence longer than any run of backticks in the text. */
static void fence(struct pragma_buf *out, const char *code, const char *lang)
{
	int run = 0, longest = 0;

	for (const char *p = code; p && *p; p++) {
		run = *p == '`' ? run + 1 : 0;
		if (run > longest)
			longest = run;
	}
	for (int i = 0; i < (longest >= 3 ? longest + 1 : 3); i++)
		pragma_buf_addch(out, '`');
	pragma_buf_addf(out, "%s\n", lang);
}

static void code_block(struct pragma_buf *out, const char *code, const char *lang)
{
	fence(out, code, lang);
	pragma_buf_adds(out, code);
	if (code[0] && code[strlen(code) - 1] != '\n')
		pragma_buf_addch(out, '\n');
	fence(out, code, "");
	pragma_buf_addch(out, '\n');
}

static void task_section(json_t *model, json_t *task, struct pragma_buf *out)
{
	json_t *e;
	size_t i;
	struct rtable t;

	pragma_buf_addf(out, "### %s\n\n%s · %s\n\n", report_str(task, "name"), report_str(task, "category"),
			strcmp(report_str(task, "kind"), "native") ? "PyTorch baseline" : "native C baseline");
	json_array_foreach(json_object_get(task, "entries"), i, e) {
		struct pragma_buf line = PRAGMA_BUF_INIT;
		common_entry_line(model, e, &line);
		pragma_buf_adds(out, "- ");
		pragma_buf_adds(out, line.data);
		pragma_buf_adds(out, "\n");
		pragma_buf_release(&line);
	}
	pragma_buf_addch(out, '\n');
	json_array_foreach(json_object_get(task, "entries"), i, e) {
		struct pragma_buf w = PRAGMA_BUF_INIT;
		if (common_entry_warning(model, e, &w)) {
			pragma_buf_adds(out, "> **WARNING** ");
			pragma_buf_adds(out, w.data);
			pragma_buf_adds(out, "\n\n");
		}
		pragma_buf_release(&w);
	}
	json_array_foreach(json_object_get(task, "entries"), i, e) {
		json_t *run = json_object_get(e, "run"), *atts = report_attempts(run), *trace, *r, *first = NULL, *best = NULL, *a;
		char lab[200];
		size_t k;

		report_series_label(model, e, lab, sizeof(lab));
		if (!json_is_object(run)) {
			json_decref(atts);
			continue;
		}
		pragma_buf_addf(out, "#### %s: attempts (Fig. 4)\n\n", lab);
		common_attempts_table(run, &t, 1);
		table(&t, out);

		trace = report_trace(run);
		if (json_array_size(trace)) {
			pragma_buf_addf(out, "#### %s: the Conductor's reasoning\n\n", lab);
			if (pragma_report_replayed(run)) {
				pragma_buf_adds(out, "> The Conductor's text in this run was ");
				pragma_buf_adds(out, pragma_report_replay_note);
				pragma_buf_adds(out, ".\n\n");
			}
			pragma_buf_adds(out, "Each attempt's first word is the measurement's decision (new best, best kept, "
					     "the same build, or the failure); the Conductor's own verdict follows it.\n\n"
					     "```text\n");
			json_array_foreach(trace, k, r) {
				if (k)
					pragma_buf_addch(out, '\n');
				trace_text(r, out);
			}
			pragma_buf_adds(out, "```\n\n");
		}
		json_decref(trace);

		json_array_foreach(atts, k, a) {
			if (!first && !strcmp(report_str(a, "status") ? report_str(a, "status") : "", "ok"))
				first = a;
			if (report_is_best(a))
				best = a;
		}
		if (first && best && first != best) {
			json_t *rows = report_profile_rows(first, best, report_time_verdict(first, best)), *row;
			struct pragma_buf notes = PRAGMA_BUF_INIT;
			pragma_buf_addf(out, "#### %s: profile of the best kernel vs the first correct one\n\n", lab);
			if (!json_array_size(rows)) {
				pragma_buf_adds(out, "No profile stored for either kernel (n-pragma and single modes do not profile).\n\n");
			} else {
				rtable_init(&t, 4, "lrrl");
				rtable_cell(&t, "metric");
				rtable_cell(&t, "first correct (#%lld)", (long long)json_integer_value(json_object_get(first, "n")));
				rtable_cell(&t, "best (#%lld)", (long long)json_integer_value(json_object_get(best, "n")));
				rtable_cell(&t, "change beyond noise");
				json_array_foreach(rows, k, row) {
					rtable_cell(&t, "%s", report_str(row, "label"));
					rtable_cell(&t, "%s", report_str(row, "a"));
					rtable_cell(&t, "%s", report_str(row, "b"));
					rtable_cell(&t, "%s", report_str(row, "change"));
					if (report_str(row, "note"))
						pragma_buf_addf(&notes, "\\* %s: %s\n", report_str(row, "label"), report_str(row, "note"));
				}
				table(&t, out);
				pragma_buf_adds(out, "The first row is each attempt's time as its timing session measured it (the "
						     "time shown everywhere for it); \"profiled run\" rows are the profiler's own run "
						     "with counters on. Counts of work (FMAs, instructions) are judged by the time: "
						     "where the algorithm changed they are neither better nor worse.\n\n");
				if (notes.len)
					pragma_buf_addf(out, "%s\n", notes.data);
			}
			pragma_buf_release(&notes);
			json_decref(rows);
		} else if (best) {
			pragma_buf_addf(out, "#### %s: profile\n\nThe first correct kernel (attempt %lld) stayed the best: "
					     "nothing to compare.\n\n",
					lab, (long long)json_integer_value(json_object_get(best, "n")));
		}
		if (best && report_str(best, "code")) {
			pragma_buf_addf(out, "#### %s: best kernel (attempt %lld)\n\n", lab,
					(long long)json_integer_value(json_object_get(best, "n")));
			code_block(out, report_str(best, "code"), "c");
		}
		json_decref(atts);
	}
}

int report_markdown(json_t *model, const char *origin, struct pragma_buf *out)
{
	struct rtable t;
	struct pragma_buf line = PRAGMA_BUF_INIT;
	json_t *task;
	size_t i;

	pragma_buf_adds(out, "# pragma report\n\n");
	if (origin)
		pragma_buf_addf(out, "From the run store %s. ", origin);
	common_machine(model, &line);
	pragma_buf_addf(out, "%s.\n\n", line.data);
	pragma_buf_release(&line);

	pragma_buf_adds(out, "## Series\n\n");
	common_runs_table(model, &t);
	table(&t, out);

	summary(model, out);
	fig3(model, out);

	pragma_buf_adds(out, "## Tasks\n\n");
	json_array_foreach(json_object_get(model, "tasks"), i, task)
		task_section(model, task, out);

	pragma_buf_adds(out,
			"## Where the numbers come from\n\n"
			"- Every number is read from the run store; the Table I metrics are lib/bench's "
			"(pragma_bench_metrics over one outcome per task and trajectory).\n"
			"- Final speedup: the best kernel and the baseline timed in a session of their own at the end of "
			"the run (interleaved rounds in fresh processes); the interval is a 95% bootstrap interval over that "
			"session's sessions and rounds (runs stored before this said \"interquartile range (older run)\"). "
			"Each task's line says how many of its rounds ran undisturbed by other processes; a final comparison "
			"on a busy machine carries a WARNING.\n"
			"- Attempt time and speedup: each correct attempt was timed in ONE session with the baseline and the "
			"best so far (DESIGN 3.5); its time (the median of its timed calls), its speedup with a 95% interval "
			"and its comparison with the best all come from that session, and that time is the one every table "
			"shows for it. A profile's own times are the profiled run's, labelled \"profiled run\".\n"
			"- Decision: the measurement's word on each attempt — new best (faster than the best beyond the "
			"interval and a 3% margin, or the first correct kernel), best kept, the same build, or the failure "
			"category. The Conductor's verdict is its own opinion and is shown beside it, never as it.\n"
			"- Best so far: the loop's historical best, with its speedup as timed beside each attempt in that "
			"attempt's session where it was (column \"vs best, same session\").\n"
			"- Fraction of roofline: roof.pct_roof of the best kernel's profile (pragma mode only): the session's "
			"time against the bound from the FP32 peak and the bandwidth roof (what a streaming kernel reaches "
			"under the timing protocol). A kernel that runs the task's FLOP count above the FP32 peak does fewer "
			"FLOPs than counted (Winograd, Strassen): its fraction is of the bandwidth roof, and says so; a "
			"fraction above 100% is explained where it appears.\n"
			"- Replayed runs: a run whose model replies came from a recording (--llm replay:FILE) shows the "
			"Conductor's text as recorded on another machine; the numbers it cites are that machine's.\n"
			"- Tokens and cost: the LLM calls the store recorded for the run.\n");
	return 0;
}
