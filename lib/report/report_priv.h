/* Internals of lib/report, shared by its files and its unit test. */
#ifndef PRAGMA_REPORT_PRIV_H
#define PRAGMA_REPORT_PRIV_H

#include <jansson.h>

#include "pragma/buf.h"
#include "pragma/diagnose.h"
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
/* The loop's decisions replayed from the measurements (DESIGN 3.5): the
 * first correct kernel is the best; a later one replaces it only when its
 * attempt's session found it faster (vs_best.verdict "faster"; older
 * stores: speedup_spread.vs_best_lo > 1); an identical build never does;
 * the run's stored best (is_best) always became it. */
struct report_decision {
	int n, ok;
	int became_best, same_build;
	int best_n;              /* the best after this attempt (0: none yet) */
	double best_x;           /* that best's speedup: as timed beside this attempt in its session when it was
				  * (best_in_session), else as measured in its own attempt; NaN: none */
	int best_in_session;
	char badge[48];          /* the measurement's word: "new best", "best kept", "the same build", or the status */
	char vs[200];            /* "1.03x vs #2 [0.97–1.09], not distinguishable", or "" */
};
void report_decide(json_t *attempts, struct report_decision *d);
/* The same, as best_n[i] / best_x[i] per attempt i. */
void report_best_so_far(json_t *attempts, int *best_n, double *best_x);
/* The attempt with number n, or NULL. */
json_t *report_attempt(json_t *attempts, int n);

/* Metric-by-metric comparison of two stored attempts' profiles (their
 * "metrics"; either may be absent): an array of {"name", "label", "a", "b"
 * (formatted, "-" when absent), "change": "better"|"worse"|"changed"|
 * "changed with the algorithm"|"not judged: …"|"", and "note" where a value
 * needs one (a roofline fraction above 100% or of the bandwidth roof; the
 * value then ends in " *")}. The first row is each attempt's time from its
 * timing session; the profile's own time.* rows are the profiled runs',
 * labelled so. tv: what the sessions said about b against a (counts of work
 * are judged by it, lib/diagnose/compare.c); "change" is empty inside the
 * metric's noise. */
json_t *report_profile_rows(json_t *att_a, json_t *att_b, enum pragma_time_verdict tv);
/* What the sessions said about the run's best against its first correct
 * attempt: faster when the best took over by a "faster" comparison (a
 * chain of them leads back to the first), else unknown. */
enum pragma_time_verdict report_time_verdict(json_t *first, json_t *best);

/* The Conductor's trace (Listing 1), one round per attempt the Conductor
 * analysed: {"n", "badge" (the measurement's: report_decision), "verdict"
 * (the Conductor's own word, shown beside the badge), "status", "message",
 * "best_n", "best": [{"label", "text"}], "cur": [{"label", "text"}],
 * "vs_best", "roof_note" (why a "% of roofline" figure carries " *"),
 * "analysis", "actions", "algorithm", "requested", "summary" (the last
 * attempt's summary of the run), "last", "recorded" (the model's replies
 * were replayed: its text cites another machine's numbers)}. */
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
/* Table I: metric rows, one column per series (with spreads). A roofline
 * cell that needs a word is marked (†: a fraction above 100%, ‡: of the
 * bandwidth roof, fewer FLOPs than counted), and common_table1_notes says
 * what the marks mean and which final comparisons ran on a busy machine. */
void common_table1(json_t *model, const char *group, const char *category, struct rtable *t);
/* The notes under a Table I: one line each (md: "- " lines); "" when none. */
void common_table1_notes(json_t *model, const char *group, const char *category, struct pragma_buf *out, int md);
/* Each series against the first on success, fast_1 and the geometric
 * mean: pragma_bench_judge's verdict, one line each. */
void common_judgements(json_t *model, const char *group, struct pragma_buf *out, int md);
void common_runs_table(json_t *model, struct rtable *t);
void common_machine(json_t *model, struct pragma_buf *out);
/* One line on a task's run: attempts, failures, final speedup and its
 * interval (the kind the run recorded), the final comparison's interference,
 * the best in its own attempt, baseline, stop reason, tokens, time. */
void common_entry_line(json_t *model, json_t *entry, struct pragma_buf *out);
/* The warning to show prominently for an entry (its final comparison ran
 * on a busy machine), or "" (returns 0). */
int common_entry_warning(json_t *model, json_t *entry, struct pragma_buf *out);
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
