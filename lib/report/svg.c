/*
 * A small SVG writer for the report's plots: a plot area, a log-scale
 * speedup axis with a 1x reference line, integer axes, lines, markers and
 * text. Styling lives in classes the HTML's style sheet defines, with
 * presentation attributes as fallbacks so an SVG still reads when cut out
 * of the page.
 */
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "report/report_priv.h"

const char *const report_colours[REPORT_N_COLOURS] = {
	"#0072B2", /* blue */
	"#D55E00", /* vermillion */
	"#009E73", /* bluish green */
	"#CC79A7", /* reddish purple */
	"#E69F00", /* orange */
	"#56B4E9", /* sky blue */
};

void svg_open(struct svg *g, struct pragma_buf *out, double w, double h, const char *cls, const char *title)
{
	memset(g, 0, sizeof(*g));
	g->out = out;
	g->w = w;
	g->h = h;
	pragma_buf_addf(out,
			"<svg xmlns=\"http://www.w3.org/2000/svg\" class=\"plot %s\" viewBox=\"0 0 %.0f %.0f\" "
			"width=\"%.0f\" height=\"%.0f\" role=\"img\" font-family=\"system-ui, sans-serif\" font-size=\"12\">"
			"<title>",
			cls, w, h, w, h);
	report_esc(out, title);
	pragma_buf_adds(out, "</title>\n");
}

void svg_close(struct svg *g)
{
	pragma_buf_adds(g->out, "</svg>\n");
}

double svg_px(const struct svg *g, double x)
{
	if (g->xhi == g->xlo)
		return (g->left + g->right) / 2;
	return g->left + (x - g->xlo) / (g->xhi - g->xlo) * (g->right - g->left);
}

double svg_py(const struct svg *g, double y)
{
	double v = y, lo = g->ylo, hi = g->yhi;

	if (g->ylog) {
		v = log10(y > 0 ? y : 1e-9);
		lo = log10(lo);
		hi = log10(hi);
	}
	if (hi == lo)
		return (g->top + g->bottom) / 2;
	return g->bottom - (v - lo) / (hi - lo) * (g->bottom - g->top);
}

void svg_speedup_range(struct svg *g, double lo, double hi)
{
	if (!(lo > 0) || !isfinite(lo))
		lo = 1;
	if (!(hi > 0) || !isfinite(hi))
		hi = 1;
	lo = fmin(lo, 1);
	hi = fmax(hi, 1);
	/* At least a factor of 2 shown, so small differences do not look huge. */
	if (hi / lo < 2) {
		double pad = sqrt(2 / (hi / lo));
		lo /= pad;
		hi *= pad;
	}
	g->ylog = 1;
	g->ylo = lo / 1.15;
	g->yhi = hi * 1.15;
}

int svg_log_ticks(double lo, double hi, double *ticks, int max)
{
	static const double sets[][10] = {
		{ 1, 2, 5, 0 },
		{ 1, 1.5, 2, 3, 5, 7, 0 },
		{ 1, 1.25, 1.5, 2, 2.5, 3, 4, 5, 6, 8 },
	};
	int n = 0;

	if (!(lo > 0) || !(hi > lo))
		return 0;
	for (size_t s = 0; s < sizeof(sets) / sizeof(sets[0]); s++) {
		n = 0;
		for (int e = (int)floor(log10(lo)) - 1; e <= (int)ceil(log10(hi)) && n < max; e++)
			for (int k = 0; k < 10 && sets[s][k] > 0 && n < max; k++) {
				double t = sets[s][k] * pow(10, e);
				if (t >= lo * 0.9999 && t <= hi * 1.0001)
					ticks[n++] = t;
			}
		if (n >= 4)
			break;
	}
	return n;
}

static void fmt_tick(double t, char *buf, size_t len)
{
	if (t >= 10 || t == floor(t))
		snprintf(buf, len, "%.0fx", t);
	else if (t * 10 == floor(t * 10))
		snprintf(buf, len, "%.1fx", t);
	else
		snprintf(buf, len, "%.2gx", t);
}

void svg_speedup_axis(struct svg *g, const char *title)
{
	double ticks[24];
	int n = svg_log_ticks(g->ylo, g->yhi, ticks, 24);
	char lab[32];

	pragma_buf_addf(g->out, "<rect class=\"area\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"#fafafa\"/>\n",
			g->left, g->top, g->right - g->left, g->bottom - g->top);
	pragma_buf_adds(g->out, "<g class=\"yaxis\">\n");
	for (int i = 0; i < n; i++) {
		double y = svg_py(g, ticks[i]);
		if (fabs(ticks[i] - 1) > 1e-9)
			pragma_buf_addf(g->out, "<line class=\"grid\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#e3e3e3\"/>\n",
					g->left, g->right, y, y);
		fmt_tick(ticks[i], lab, sizeof(lab));
		svg_text(g, g->left - 6, y + 4, "end", "tick", lab);
	}
	/* The baseline: above it the kernel is faster than the reference. */
	if (g->ylo < 1 && g->yhi > 1) {
		double y = svg_py(g, 1);
		pragma_buf_addf(g->out,
				"<line class=\"ref\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#555\" "
				"stroke-dasharray=\"5 3\"/>\n",
				g->left, g->right, y, y);
		svg_text(g, g->left + 4, y - 4, "start", "reflabel", "baseline (1x)");
	}
	pragma_buf_addf(g->out, "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n",
			g->left, g->left, g->top, g->bottom);
	pragma_buf_addf(g->out,
			"<text class=\"atitle\" transform=\"translate(%.1f %.1f) rotate(-90)\" text-anchor=\"middle\">",
			g->left - 46, (g->top + g->bottom) / 2);
	report_esc(g->out, title);
	pragma_buf_adds(g->out, "</text>\n</g>\n");
}

void svg_int_axis(struct svg *g, int from, int to, const char *title)
{
	char lab[32];
	int step = 1;

	while ((to - from) / step > 15)
		step = step == 1 ? 2 : step == 2 ? 5 : step * 2;
	pragma_buf_adds(g->out, "<g class=\"xaxis\">\n");
	pragma_buf_addf(g->out, "<line class=\"axis\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n",
			g->left, g->right, g->bottom, g->bottom);
	for (int i = from; i <= to; i += step) {
		double x = svg_px(g, i);
		pragma_buf_addf(g->out, "<line class=\"tickmark\" x1=\"%.1f\" x2=\"%.1f\" y1=\"%.1f\" y2=\"%.1f\" stroke=\"#333\"/>\n",
				x, x, g->bottom, g->bottom + 4);
		snprintf(lab, sizeof(lab), "%d", i);
		svg_text(g, x, g->bottom + 16, "middle", "tick", lab);
	}
	svg_text(g, (g->left + g->right) / 2, g->bottom + 34, "middle", "atitle", title);
	pragma_buf_adds(g->out, "</g>\n");
}

void svg_line(struct svg *g, const double *x, const double *y, int n, const char *cls, const char *colour,
	      double width, const char *dash, const char *data_attr)
{
	int open = 0;

	for (int i = 0; i < n; i++) {
		if (!isfinite(y[i])) {
			if (open)
				pragma_buf_adds(g->out, "\"/>\n");
			open = 0;
			continue;
		}
		if (!open) {
			pragma_buf_addf(g->out, "<polyline class=\"%s\" fill=\"none\" stroke=\"%s\" stroke-width=\"%.1f\"%s%s%s ",
					cls, colour, width, dash ? " stroke-dasharray=\"" : "", dash ? dash : "",
					dash ? "\"" : "");
			if (data_attr)
				pragma_buf_addf(g->out, "%s ", data_attr);
			pragma_buf_adds(g->out, "points=\"");
			open = 1;
		} else {
			pragma_buf_addch(g->out, ' ');
		}
		pragma_buf_addf(g->out, "%.1f,%.1f", svg_px(g, x[i]), svg_py(g, y[i]));
	}
	if (open)
		pragma_buf_adds(g->out, "\"/>\n");
}

static void tooltip(struct svg *g, const char *t)
{
	if (!t)
		return;
	pragma_buf_adds(g->out, "<title>");
	report_esc(g->out, t);
	pragma_buf_adds(g->out, "</title>");
}

void svg_marker(struct svg *g, double px, double py, enum svg_shape shape, double r, const char *colour,
		const char *cls, const char *tip)
{
	const char *close = tip ? ">" : "/>";

	switch (shape) {
	case SVG_SQUARE:
		pragma_buf_addf(g->out, "<rect class=\"%s\" x=\"%.1f\" y=\"%.1f\" width=\"%.1f\" height=\"%.1f\" fill=\"%s\"%s",
				cls, px - r * 0.9, py - r * 0.9, 1.8 * r, 1.8 * r, colour, close);
		break;
	case SVG_TRIANGLE:
		pragma_buf_addf(g->out, "<polygon class=\"%s\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f\" fill=\"%s\"%s", cls, px,
				py - 1.2 * r, px + 1.1 * r, py + 0.8 * r, px - 1.1 * r, py + 0.8 * r, colour, close);
		break;
	case SVG_DIAMOND:
		pragma_buf_addf(g->out, "<polygon class=\"%s\" points=\"%.1f,%.1f %.1f,%.1f %.1f,%.1f %.1f,%.1f\" fill=\"%s\"%s",
				cls, px, py - 1.25 * r, px + 1.25 * r, py, px, py + 1.25 * r, px - 1.25 * r, py, colour, close);
		break;
	default:
		pragma_buf_addf(g->out, "<circle class=\"%s\" cx=\"%.1f\" cy=\"%.1f\" r=\"%.1f\" fill=\"%s\"%s", cls, px, py, r,
				colour, close);
		break;
	}
	if (tip) {
		tooltip(g, tip);
		pragma_buf_adds(g->out, shape == SVG_SQUARE ? "</rect>" : shape == SVG_CIRCLE ? "</circle>" : "</polygon>");
	}
	pragma_buf_addch(g->out, '\n');
}

void svg_cross(struct svg *g, double px, double py, double r, const char *colour, const char *cls, const char *tip)
{
	pragma_buf_addf(g->out,
			"<path class=\"%s\" d=\"M%.1f %.1fL%.1f %.1fM%.1f %.1fL%.1f %.1f\" stroke=\"%s\" stroke-width=\"2.2\" "
			"stroke-linecap=\"round\">",
			cls, px - r, py - r, px + r, py + r, px - r, py + r, px + r, py - r, colour);
	tooltip(g, tip);
	pragma_buf_adds(g->out, "</path>\n");
}

void svg_text(struct svg *g, double px, double py, const char *anchor, const char *cls, const char *text)
{
	pragma_buf_addf(g->out, "<text class=\"%s\" x=\"%.1f\" y=\"%.1f\" text-anchor=\"%s\">", cls, px, py, anchor);
	report_esc(g->out, text);
	pragma_buf_adds(g->out, "</text>\n");
}
