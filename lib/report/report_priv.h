/* Internals of lib/report, shared by its files and its unit test. */
#ifndef PRAGMA_REPORT_PRIV_H
#define PRAGMA_REPORT_PRIV_H

#include <jansson.h>

#include "pragma/buf.h"
#include "pragma/report.h"

/* ---- svg.c: a small SVG plot writer ---- */

/* Colours that stay apart for colour-blind readers and in print (Okabe-Ito),
 * and a marker shape per series for grey-scale print. */
#define REPORT_N_COLOURS 6
extern const char *const report_colours[REPORT_N_COLOURS];
enum svg_shape { SVG_CIRCLE, SVG_SQUARE, SVG_TRIANGLE, SVG_DIAMOND, SVG_N_SHAPES };

struct svg {
	struct pragma_buf *out;
	double w, h;            /* viewBox */
	double left, right;     /* plot area, in viewBox units */
	double top, bottom;
	double xlo, xhi;        /* data range, x (linear) */
	double ylo, yhi;        /* data range, y (log10 when ylog) */
	int ylog;
};

/* <svg> with a <title> (escaped); close with svg_close. */
void svg_open(struct svg *g, struct pragma_buf *out, double w, double h, const char *cls, const char *title);
void svg_close(struct svg *g);
/* Data to viewBox coordinates. */
double svg_px(const struct svg *g, double x);
double svg_py(const struct svg *g, double y);
/* A log-scale y range around [lo, hi] (always holding 1x), with margins. */
void svg_speedup_range(struct svg *g, double lo, double hi);
/* Ticks for a log axis over [lo, hi]: 1-2-5 steps, denser when the range is
 * narrow. Returns how many (at most max). */
int svg_log_ticks(double lo, double hi, double *ticks, int max);
/* The y axis of speedups: grid, tick labels ("2x"), the 1x reference line
 * and the axis title. */
void svg_speedup_axis(struct svg *g, const char *title);
/* Integer x ticks from..to with a title. */
void svg_int_axis(struct svg *g, int from, int to, const char *title);
/* A polyline through n points (data coordinates; NaN y breaks the line). */
void svg_line(struct svg *g, const double *x, const double *y, int n, const char *cls, const char *colour,
	      double width, const char *dash, const char *data_attr);
void svg_marker(struct svg *g, double px, double py, enum svg_shape shape, double r, const char *colour,
		const char *cls, const char *tooltip);
void svg_cross(struct svg *g, double px, double py, double r, const char *colour, const char *cls,
	       const char *tooltip);
/* Text (escaped) at viewBox coordinates; anchor "start", "middle", "end". */
void svg_text(struct svg *g, double px, double py, const char *anchor, const char *cls, const char *text);

/* ---- report.c: the model's helpers, shared by both formats ---- */

/* XML/HTML-escape s (NULL: nothing). */
void report_esc(struct pragma_buf *out, const char *s);
const char *report_str(json_t *o, const char *k);            /* NULL when absent */
int report_num(json_t *o, const char *k, double *v);          /* 1 and *v when a number */
/* "2.27x", "0.93x", "12.4x"; "-" for NaN. */
const char *report_fmt_x(double v, char *buf, size_t len);

/* Is the attempt the run's best (stored as 1, or true)? */
int report_is_best(json_t *attempt);
/* The run's own attempt rows (candidate 0), in order; a new array. */
json_t *report_attempts(json_t *run);
/* Replays the loop's rule for the historical best (DESIGN 3.5: the first
 * correct kernel, then a correct one only when it beat the best in an
 * interleaved comparison beyond the spread: speedup_spread.vs_best_lo > 1).
 * best_n[i] is the attempt number held as best after attempt i (0: none
 * yet), best_x[i] that attempt's own measured speedup (NaN: none). */
void report_best_so_far(json_t *attempts, int *best_n, double *best_x);
/* The attempt with number n, or NULL. */
json_t *report_attempt(json_t *attempts, int n);

/* Metric-by-metric comparison of two stored profiles (attempt "metrics"
 * objects; either may be NULL): an array of {"name", "label", "a", "b"
 * (formatted, "-" when absent), "change": "better"|"worse"|"changed"|""}
 * in registry order; "change" is empty inside the metric's noise. */
json_t *report_profile_rows(json_t *a, json_t *b);

/* The Conductor's trace (Listing 1), one round per attempt the Conductor
 * analysed: {"n", "verdict", "status", "message", "best_n", "best":
 * [{"label", "text"}], "cur": [{"label", "text"}], "vs_best", "analysis",
 * "actions", "algorithm", "requested"}. */
json_t *report_trace(json_t *run);

/* A task's label for a column: "pragma", or "pragma #2" for a repeat. */
void report_series_label(json_t *model, json_t *entry, char *buf, size_t len);

/* A table both formats print: the first row is the header. */
struct rtable {
	int ncols;
	int ncells, alloc;
	char **cells;
	char align[16];          /* 'l' or 'r' per column */
};
void rtable_init(struct rtable *t, int ncols, const char *align);
void rtable_release(struct rtable *t);
__attribute__((format(printf, 2, 3)))
void rtable_cell(struct rtable *t, const char *fmt, ...);
/* Markdown, columns padded to line up in a terminal ('|' in cells escaped). */
void rtable_md(const struct rtable *t, struct pragma_buf *out);
/* HTML <table> (cells escaped); a cell starting with "\x01CLASS\x02" gets
 * that class. */
void rtable_html(const struct rtable *t, const char *cls, struct pragma_buf *out);

/* Text wrapped to width columns, each line indented by indent spaces
 * (existing line breaks kept). */
void report_wrap(struct pragma_buf *out, const char *text, int width, int indent);

/* ---- common.c: what both formats print alike ---- */

int common_group_present(json_t *model, const char *group);     /* "pytorch", "native" */
const char *common_group_title(const char *group);
const char *common_group_note(const char *group);
/* A column's metrics M for the group, all tasks or one category; NULL. */
json_t *common_metrics(json_t *col, const char *group, const char *category);
/* Table I: metric rows, one column per series (with spreads). */
void common_table1(json_t *model, const char *group, const char *category, struct rtable *t);
/* Each series against the first on success, fast_1 and the geometric
 * mean: pragma_bench_judge's verdict, one line each. */
void common_judgements(json_t *model, const char *group, struct pragma_buf *out, int md);
void common_runs_table(json_t *model, struct rtable *t);
void common_machine(json_t *model, struct pragma_buf *out);
/* One line on a task's run: attempts, failures, final speedup and spread,
 * baseline, stop reason, tokens, time. */
void common_entry_line(json_t *model, json_t *entry, struct pragma_buf *out);
/* The attempts of a run; bars: a text bar column (Markdown). */
void common_attempts_table(json_t *run, struct rtable *t, int bars);

/* ---- plots.c ---- */

/* Fig. 4: one task, speedup over attempts, one series per entry, the
 * best-so-far line, failed attempts marked, the final interleaved speedup
 * with its spread. */
void report_svg_attempts(struct pragma_buf *out, json_t *model, json_t *task);
/* Fig. 3: the distribution of final speedups per category for one group
 * ("pytorch" or "native"), one series per column. Returns 0 when the
 * group has no task (nothing written). */
int report_svg_categories(struct pragma_buf *out, json_t *model, const char *group);

/* ---- markdown.c, html.c ---- */
int report_markdown(json_t *model, const char *origin, struct pragma_buf *out);
int report_html(json_t *model, const char *origin, struct pragma_buf *out);

#endif
