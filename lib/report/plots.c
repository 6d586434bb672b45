/*
 * The report's two figures, after the paper: Fig. 4 (one task's speedup over
 * attempts, with the best-so-far line and the failed attempts marked) and
 * Fig. 3 (per category, the distribution of speedups across tasks, one
 * series per compared run). Every value drawn is a stored one; each mark
 * carries a tooltip with its number and where it came from.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pragma/bench.h"
#include "report/report_priv.h"

static const char *const dashes[] = { NULL, "7 4", "2 3", "9 3 2 3" };

static const char *colour_of(int col)
{
	return report_colours[col % REPORT_N_COLOURS];
}

static double text_width(const char *s)
{
	int n = 0;

	for (; *s; s++)
		n += ((unsigned char)*s & 0xC0) != 0x80;
	return 6.0 * n;
}

/* A legend row from x to right edge, wrapping; returns the y under it. */
struct legend {
	struct svg *g;
	double x, y, x0, xmax;
};

static void legend_room(struct legend *l, double w)
{
	if (l->x + w > l->xmax && l->x > l->x0) {
		l->x = l->x0;
		l->y += 18;
	}
}

static void legend_series(struct legend *l, const char *label, const char *colour, enum svg_shape shape,
			  const char *dash)
{
	double w = 40 + text_width(label) + 18;

	legend_room(l, w);
	pragma_buf_addf(l->g->out,
			"<line class=\"legend-line\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
			"stroke-width=\"2.4\"%s%s%s/>\n",
			l->x, l->x + 30, l->y - 4, l->y - 4, colour, dash ? " stroke-dasharray=\"" : "", dash ? dash : "",
			dash ? "\"" : "");
	svg_marker(l->g, l->x + 15, l->y - 4, shape, 4, colour, "legend-mark", NULL);
	svg_text(l->g, l->x + 36, l->y, "start", "legend", label);
	l->x += w;
}

static void legend_note(struct legend *l, const char *label)
{
	legend_room(l, text_width(label) + 18);
	svg_text(l->g, l->x, l->y, "start", "legend note", label);
	l->x += text_width(label) + 18;
}

/* ---- Fig. 4 ---- */

struct series {
	json_t *entry, *atts;
	int n;
	int *best_n;
	double *best_x;
	double final, lo, hi;
	const char *kind;        /* what lo..hi is: the outcome's spread_kind */
	char label[200];
};

void report_svg_attempts(struct pragma_buf *out, json_t *model, json_t *task)
{
	json_t *entries = json_object_get(task, "entries"), *e;
	size_t ns = json_array_size(entries), i;
	struct series *S = calloc(ns + 1, sizeof(*S));
	double ymin = INFINITY, ymax = -INFINITY, v;
	int nmax = 1, any_final = 0, any_fail = 0;
	struct svg g;
	char title[300], tip[600], xb[32], xb2[32], xb3[32];

	if (!S)
		abort();
	json_array_foreach(entries, i, e) {
		struct series *s = &S[i];
		json_t *a, *o = json_object_get(e, "outcome");
		size_t k;
		s->entry = e;
		s->atts = report_attempts(json_object_get(e, "run"));
		s->n = (int)json_array_size(s->atts);
		s->best_n = calloc((size_t)s->n + 1, sizeof(int));
		s->best_x = calloc((size_t)s->n + 1, sizeof(double));
		if (!s->best_n || !s->best_x)
			abort();
		report_best_so_far(s->atts, s->best_n, s->best_x);
		report_series_label(model, e, s->label, sizeof(s->label));
		json_array_foreach(s->atts, k, a) {
			int n = (int)json_integer_value(json_object_get(a, "n"));
			if (n > nmax)
				nmax = n;
			if (report_num(a, "speedup", &v) && v > 0 && !strcmp(report_str(a, "status") ?: "", "ok")) {
				ymin = fmin(ymin, v);
				ymax = fmax(ymax, v);
			} else {
				any_fail = 1;
			}
		}
		s->final = s->lo = s->hi = NAN;
		s->kind = report_str(o, "spread_kind");
		if (report_num(o, "speedup", &s->final) && s->final > 0) {
			any_final = 1;
			ymin = fmin(ymin, s->final);
			ymax = fmax(ymax, s->final);
			if (report_num(o, "speedup_lo", &s->lo) && report_num(o, "speedup_hi", &s->hi) && s->lo > 0) {
				ymin = fmin(ymin, s->lo);
				ymax = fmax(ymax, s->hi);
			}
		}
	}

	snprintf(title, sizeof(title), "%s: speedup over attempts", report_str(task, "name"));
	svg_open(&g, out, 760, 360, "fig4", title);
	g.left = 72;
	g.right = 740;
	g.top = 22;
	double plot_bottom = 360 - 44;
	g.bottom = plot_bottom - (any_fail ? 30 : 0);
	g.xlo = 0.5;
	g.xhi = nmax + (any_final ? 1.4 : 0.5);
	svg_speedup_range(&g, ymin, ymax);

	/* Legend above the plot: one entry per series, then the mark keys. */
	struct legend L = { &g, g.left, 16, g.left, g.right };
	json_array_foreach(entries, i, e) {
		int col = (int)json_integer_value(json_object_get(e, "col"));
		legend_series(&L, S[i].label, colour_of(col), (enum svg_shape)(col % SVG_N_SHAPES),
			      dashes[json_integer_value(json_object_get(e, "trajectory")) % 4]);
	}
	legend_note(&L, "thick: best so far · thin: each attempt");
	if (any_fail)
		legend_note(&L, "×: failed attempt");
	if (any_final)
		legend_note(&L, "right: final speedup (a session of its own) with its interval");
	double shift = L.y - 16;
	g.top += shift + 12;

	svg_speedup_axis(&g, "speedup over baseline (log)");
	if (any_fail) {
		pragma_buf_addf(out,
				"<rect class=\"failband\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fdecea\"/>\n",
				g.left, g.bottom + 4, g.right - g.left, plot_bottom - g.bottom - 4);
		svg_text(&g, g.left - 6, (g.bottom + plot_bottom) / 2 + 4, "end", "tick", "failed");
	}
	double ybottom = g.bottom;
	g.bottom = plot_bottom;
	svg_int_axis(&g, 1, nmax, "attempt");
	if (any_final) {
		double x = svg_px(&g, nmax + 0.9);
		svg_text(&g, x, plot_bottom + 16, "middle", "tick", "final");
		pragma_buf_addf(out, "<line class=\"sep\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#bbb\" stroke-dasharray=\"2 3\"/>\n",
				svg_px(&g, nmax + 0.5), svg_px(&g, nmax + 0.5), g.top, plot_bottom);
	}
	g.bottom = ybottom;

	json_array_foreach(entries, i, e) {
		struct series *s = &S[i];
		int col = (int)json_integer_value(json_object_get(e, "col"));
		const char *c = colour_of(col), *dash = dashes[json_integer_value(json_object_get(e, "trajectory")) % 4];
		enum svg_shape shape = (enum svg_shape)(col % SVG_N_SHAPES);
		double *xs = calloc(2 * (size_t)s->n + 2, sizeof(double)), *ys = calloc(2 * (size_t)s->n + 2, sizeof(double));
		struct pragma_buf data = PRAGMA_BUF_INIT;
		json_t *a;
		size_t k;
		int m = 0, nfail = 0;
		double off = ((double)i - (double)(ns - 1) / 2) * 0.06;

		if (!xs || !ys)
			abort();
		pragma_buf_addf(out, "<g class=\"series\" data-series=\"");
		report_esc(out, s->label);
		pragma_buf_adds(out, "\">\n");
		/* each attempt: a thin line through the correct ones */
		json_array_foreach(s->atts, k, a)
			if (!strcmp(report_str(a, "status") ?: "", "ok") && report_num(a, "speedup", &v) && v > 0) {
				xs[m] = (double)json_integer_value(json_object_get(a, "n")) + off;
				ys[m++] = v;
			}
		svg_line(&g, xs, ys, m, "att", c, 1.2, dash, NULL);
		/* the best so far: a step line (data-best: its value per attempt) */
		m = 0;
		pragma_buf_adds(&data, "data-best=\"");
		for (k = 0; k < (size_t)s->n; k++) {
			double x = (double)json_integer_value(json_object_get(json_array_get(s->atts, k), "n"));
			pragma_buf_addf(&data, "%s%.3f", k ? " " : "", s->best_x[k]);
			if (!isfinite(s->best_x[k]))
				continue;
			if (m) {
				xs[m] = x + off;
				ys[m] = ys[m - 1];
				m++;
			}
			xs[m] = x + off;
			ys[m++] = s->best_x[k];
		}
		if (m) {
			xs[m] = xs[m - 1] + 0.45;
			ys[m] = ys[m - 1];
			m++;
		}
		pragma_buf_addch(&data, '"');
		svg_line(&g, xs, ys, m, "best", c, 2.6, dash, data.data);
		pragma_buf_release(&data);
		/* the marks */
		json_array_foreach(s->atts, k, a) {
			int n = (int)json_integer_value(json_object_get(a, "n"));
			const char *st = report_str(a, "status") ?: "?";
			if (!strcmp(st, "ok") && report_num(a, "speedup", &v) && v > 0) {
				double t = 0;
				report_num(a, "time_ms", &t);
				snprintf(tip, sizeof(tip), "%s, attempt %d: %s (%.3f ms, baseline timed in the same session)%s",
					 s->label, n, report_fmt_x(v, xb, sizeof(xb)), t,
					 report_is_best(a) ? "; the run's best kernel" : "");
				svg_marker(&g, svg_px(&g, n + off), svg_py(&g, v), shape,
					   report_is_best(a) ? 6 : 4.2, c,
					   report_is_best(a) ? "pt bestpt" : "pt", tip);
			} else {
				snprintf(tip, sizeof(tip), "%s, attempt %d: %s%s%.300s", s->label, n, st,
					 report_str(a, "message") && *report_str(a, "message") ? ": " : "",
					 report_str(a, "message") ?: "");
				double yb = ybottom + 4, yt = plot_bottom;
				svg_cross(&g, svg_px(&g, n + off), yb + (yt - yb) * (0.5 + 0.25 * off / 0.06 / (double)(ns + 1)),
					  4.5, c, "fail", tip);
				nfail++;
			}
		}
		/* the final interleaved comparison of the best with the baseline */
		if (isfinite(s->final)) {
			double x = svg_px(&g, nmax + 0.9 + off * 3);
			if (isfinite(s->lo) && isfinite(s->hi))
				pragma_buf_addf(out,
						"<path class=\"spread\" d=\"M%.1f %.1fV%.1fM%.1f %.1fH%.1fM%.1f %.1fH%.1f\" stroke=\"%s\" "
						"stroke-width=\"1.6\"/>\n",
						x, svg_py(&g, s->lo), svg_py(&g, s->hi), x - 5, svg_py(&g, s->lo), x + 5, x - 5,
						svg_py(&g, s->hi), x + 5, c);
			/* The interval named for what the run stored: a 95% interval,
			 * or an older run's interquartile range. */
			int ci = s->kind && !strcmp(s->kind, "95% interval");
			snprintf(tip, sizeof(tip), "%s: final speedup of the best kernel %s (%s%s%s%s–%s), measured interleaved "
						   "with the baseline",
				 s->label, report_fmt_x(s->final, xb, sizeof(xb)), ci ? "95% interval " : "spread: ",
				 ci ? "" : s->kind ? s->kind : "interquartile range (older run)", ci ? "" : ", ",
				 report_fmt_x(s->lo, xb2, sizeof(xb2)), report_fmt_x(s->hi, xb3, sizeof(xb3)));
			svg_marker(&g, x, svg_py(&g, s->final), shape, 4.5, c, "final", tip);
		}
		pragma_buf_adds(out, "</g>\n");
		free(xs);
		free(ys);
		(void)nfail;
	}
	svg_close(&g);
	for (i = 0; i < ns; i++) {
		json_decref(S[i].atts);
		free(S[i].best_n);
		free(S[i].best_x);
	}
	free(S);
}

/* ---- Fig. 3 ---- */

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double quantile(const double *v, int n, double q)
{
	double pos = q * (n - 1);
	int i = (int)floor(pos);

	if (i + 1 >= n)
		return v[n - 1];
	return v[i] + (pos - i) * (v[i + 1] - v[i]);
}

static int in_group(json_t *o, const char *group)
{
	int native = !strcmp(report_str(o, "kind") ?: "", "native");

	return !strcmp(group, "native") ? native : !native;
}

int report_svg_categories(struct pragma_buf *out, json_t *model, const char *group)
{
	json_t *cols = json_object_get(model, "columns"), *col, *o;
	size_t nc = json_array_size(cols), i, j;
	const char *cats[PRAGMA_BENCH_N_CATEGORIES];
	int ncat = 0, any_fail = 0;
	double ymin = INFINITY, ymax = -INFINITY, v;
	char title[200], tip[400], xb[32], xb2[32], xb3[32];
	struct svg g;

	for (int c = 0; c < PRAGMA_BENCH_N_CATEGORIES; c++) {
		int have = 0;
		json_array_foreach(cols, i, col)
			json_array_foreach(json_object_get(col, "outcomes"), j, o)
				if (in_group(o, group) && !strcmp(report_str(o, "category") ?: "", pragma_bench_categories[c])) {
					have = 1;
					if (report_num(o, "speedup", &v) && v > 0 && json_is_true(json_object_get(o, "correct"))) {
						ymin = fmin(ymin, v);
						ymax = fmax(ymax, v);
					} else {
						any_fail = 1;
					}
				}
		if (have)
			cats[ncat++] = pragma_bench_categories[c];
	}
	if (!ncat)
		return 0;

	double slot = fmax(120, 46.0 * (double)nc + 40), w = fmax(640, 90 + slot * ncat + 20), h = 400;
	snprintf(title, sizeof(title), "Speedup by category (%s tasks), one series per run",
		 !strcmp(group, "native") ? "native C" : "PyTorch-baselined");
	svg_open(&g, out, w, h, "fig3", title);
	g.left = 80;
	g.right = w - 20;
	g.top = 22;
	double plot_bottom = h - 70;
	g.bottom = plot_bottom - (any_fail ? 30 : 0);
	g.xlo = 0;
	g.xhi = ncat;
	svg_speedup_range(&g, ymin, ymax);

	struct legend L = { &g, g.left, 16, g.left, g.right };
	json_array_foreach(cols, i, col)
		legend_series(&L, report_str(col, "label"), colour_of((int)i), (enum svg_shape)(i % SVG_N_SHAPES), NULL);
	legend_note(&L, "box: quartiles · line: median · whiskers: range · ◇ geometric mean (Table I)");
	if (any_fail)
		legend_note(&L, "× n: tasks without a correct kernel");
	g.top += L.y - 16 + 12;

	svg_speedup_axis(&g, "final speedup over baseline (log)");
	if (any_fail) {
		pragma_buf_addf(out,
				"<rect class=\"failband\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fdecea\"/>\n",
				g.left, g.bottom + 4, g.right - g.left, plot_bottom - g.bottom - 4);
		svg_text(&g, g.left - 6, (g.bottom + plot_bottom) / 2 + 4, "end", "tick", "failed");
	}
	pragma_buf_addf(out, "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n",
			g.left, g.right, plot_bottom, plot_bottom);

	for (int c = 0; c < ncat; c++) {
		double cx = svg_px(&g, c + 0.5), bw = (slot - 30) / (double)nc;
		int ntasks = 0;
		char lab[64];

		if (c)
			pragma_buf_addf(out, "<line class=\"sep\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#ddd\"/>\n",
					svg_px(&g, c), svg_px(&g, c), g.top, plot_bottom);
		json_array_foreach(cols, i, col) {
			json_t *outs = json_object_get(col, "outcomes");
			double *pts = calloc(json_array_size(outs) + 1, sizeof(double));
			const char *colour = colour_of((int)i);
			enum svg_shape shape = (enum svg_shape)(i % SVG_N_SHAPES);
			double x = cx + ((double)i - (double)(nc - 1) / 2) * bw;
			int n = 0, nfail = 0, idx = 0;
			struct pragma_buf failed = PRAGMA_BUF_INIT;

			if (!pts)
				abort();
			pragma_buf_addf(out, "<g class=\"cat\" data-category=\"%s\" data-series=\"", cats[c]);
			report_esc(out, report_str(col, "label"));
			pragma_buf_adds(out, "\">\n");
			json_array_foreach(outs, j, o) {
				if (!in_group(o, group) || strcmp(report_str(o, "category") ?: "", cats[c]))
					continue;
				if (report_num(o, "speedup", &v) && v > 0 && json_is_true(json_object_get(o, "correct")))
					pts[n++] = v;
				else
					pragma_buf_addf(&failed, "%s%s", nfail++ ? ", " : "", report_str(o, "task"));
			}
			qsort(pts, (size_t)n, sizeof(double), cmp_double);
			if (n >= 2) {
				double q1 = quantile(pts, n, 0.25), q2 = quantile(pts, n, 0.5), q3 = quantile(pts, n, 0.75);
				double hw = fmin(16, bw * 0.36);
				snprintf(tip, sizeof(tip), "%s, %s: median %s, quartiles %s–%s, %d correct kernels",
					 report_str(col, "label"), cats[c], report_fmt_x(q2, xb, sizeof(xb)),
					 report_fmt_x(q1, xb2, sizeof(xb2)), report_fmt_x(q3, xb3, sizeof(xb3)), n);
				pragma_buf_addf(out,
						"<path class=\"whisker\" d=\"M%.1f %.1fV%.1f\" stroke=\"%s\" stroke-width=\"1.2\"/>\n",
						x, svg_py(&g, pts[0]), svg_py(&g, pts[n - 1]), colour);
				pragma_buf_addf(out,
						"<rect class=\"box\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\" "
						"fill-opacity=\"0.16\" stroke=\"%s\" stroke-width=\"1.4\"><title>",
						x - hw, svg_py(&g, q3), 2 * hw, fmax(1, svg_py(&g, q1) - svg_py(&g, q3)), colour,
						colour);
				report_esc(out, tip);
				pragma_buf_adds(out, "</title></rect>\n");
				pragma_buf_addf(out,
						"<line class=\"median\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"%s\" "
						"stroke-width=\"2.6\"/>\n",
						x - hw, x + hw, svg_py(&g, q2), svg_py(&g, q2), colour);
			}
			/* the tasks themselves, spread sideways so equal values show */
			json_array_foreach(outs, j, o) {
				if (!in_group(o, group) || strcmp(report_str(o, "category") ?: "", cats[c]))
					continue;
				if (!(report_num(o, "speedup", &v) && v > 0 && json_is_true(json_object_get(o, "correct"))))
					continue;
				double jx = x + ((double)((idx * 7) % 9) - 4) / 4 * fmin(10, bw * 0.25);
				idx++;
				snprintf(tip, sizeof(tip), "%s (%s, trajectory %lld, run %s): %s final interleaved speedup",
					 report_str(o, "task"), report_str(col, "label"),
					 (long long)json_integer_value(json_object_get(o, "trajectory")) + 1, report_str(o, "run"),
					 report_fmt_x(v, xb, sizeof(xb)));
				svg_marker(&g, jx, svg_py(&g, v), shape, 3.6, colour, "pt", tip);
			}
			/* the geometric mean of the same outcomes, from Table I */
			json_t *m = json_object_get(json_object_get(json_object_get(json_object_get(col, "metrics"), group),
								    "categories"),
						    cats[c]);
			if (report_num(m, "geomean", &v) && v > 0) {
				snprintf(tip, sizeof(tip), "%s, %s: geometric mean %s over correct kernels (Table I)",
					 report_str(col, "label"), cats[c], report_fmt_x(v, xb, sizeof(xb)));
				pragma_buf_addf(out,
						"<polygon class=\"geomean\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\" "
						"fill=\"#fff\" stroke=\"%s\" stroke-width=\"1.6\"><title>",
						x + bw * 0.42, svg_py(&g, v) - 5, x + bw * 0.42 + 5, svg_py(&g, v), x + bw * 0.42,
						svg_py(&g, v) + 5, x + bw * 0.42 - 5, svg_py(&g, v), colour);
				report_esc(out, tip);
				pragma_buf_adds(out, "</title></polygon>\n");
			}
			if (nfail) {
				char cnt[32];
				double y = (g.bottom + 4 + plot_bottom) / 2;
				snprintf(tip, sizeof(tip), "%s, %s: %d without a correct kernel: %.300s", report_str(col, "label"),
					 cats[c], nfail, failed.data);
				svg_cross(&g, x - 5, y, 4, colour, "fail", tip);
				snprintf(cnt, sizeof(cnt), "%d", nfail);
				svg_text(&g, x + 2, y + 4, "start", "tick", cnt);
			}
			pragma_buf_adds(out, "</g>\n");
			pragma_buf_release(&failed);
			free(pts);
		}
		json_t *t;
		json_array_foreach(json_object_get(model, "tasks"), j, t)
			if (in_group(t, group) && !strcmp(report_str(t, "category") ?: "", cats[c]))
				ntasks++;
		svg_text(&g, cx, plot_bottom + 18, "middle", "catlabel", cats[c]);
		snprintf(lab, sizeof(lab), "%d task%s", ntasks, ntasks == 1 ? "" : "s");
		svg_text(&g, cx, plot_bottom + 33, "middle", "tick", lab);
	}
	svg_close(&g);
	return 1;
}
