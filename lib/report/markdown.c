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
		report_wrap(out, "Speedups are each task's final interleaved comparison of its best kernel with the "
				 "baseline, over tasks with a correct kernel; fast_p is the share of tasks whose kernel is "
				 "correct and more than p times faster. With several trajectories each figure is their "
				 "mean ± standard deviation [min – max].", WIDTH, 0);
		pragma_buf_addch(out, '\n');
		common_table1(model, g, NULL, &t);
		table(&t, out);
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

	pragma_buf_addf(out, "Attempt %lld: %s%s%s\n", (long long)json_integer_value(json_object_get(r, "n")),
			*report_str(r, "verdict") ? report_str(r, "verdict") : "(no verdict)",
			strcmp(report_str(r, "status"), "ok") ? " — " : "",
			strcmp(report_str(r, "status"), "ok") ? report_str(r, "status") : "");
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
			pragma_buf_addf(out, "#### %s: the Conductor's reasoning\n\n```text\n", lab);
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
			json_t *rows = report_profile_rows(json_object_get(first, "metrics"), json_object_get(best, "metrics")), *row;
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
				}
				table(&t, out);
			}
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
			"- Final speedup: the best kernel timed interleaved with the baseline at the end of its run; the "
			"spread is the one the run recorded (its method is quoted with each task).\n"
			"- Attempt speedups: each attempt's own timing against the baseline of its session; noisier than "
			"the final comparison.\n"
			"- Best so far: the loop's historical best, replaced only when a correct kernel beat it in an "
			"interleaved comparison beyond the spread (column \"vs best, interleaved\").\n"
			"- Fraction of roofline: roof.pct_roof of the best kernel's profile (pragma mode only): its time "
			"against the bound from the FP32 peak and the bandwidth roof (what a streaming kernel reaches under "
			"the timing protocol). A kernel that runs the task's FLOP count above the FP32 peak does fewer "
			"FLOPs than counted (Winograd, Strassen): its fraction is of the bandwidth roof, and says so.\n"
			"- Tokens and cost: the LLM calls the store recorded for the run.\n");
	return 0;
}
