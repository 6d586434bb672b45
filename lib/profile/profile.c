/* The profile container: metrics, unavailable collectors, remarks, notes;
 * its JSON and its table. */
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pragma/profile.h"

void pragma_profile_init(struct pragma_profile *p)
{
	memset(p, 0, sizeof(*p));
	p->flops = -1;
}

void pragma_profile_release(struct pragma_profile *p)
{
	free(p->metrics);
	free(p->unavail);
	free(p->remarks);
	for (size_t i = 0; i < p->n_notes; i++)
		free(p->notes[i]);
	free(p->notes);
	pragma_profile_init(p);
}

static void *grow(void *ptr, size_t n, size_t size)
{
	void *q = realloc(ptr, (n + 1) * size);

	if (!q)
		abort();
	return q;
}

void pragma_profile_set(struct pragma_profile *p, const char *name, double value, const char *source)
{
	const struct pragma_metric_def *d = pragma_metric_find(name);
	struct pragma_metric *m = NULL;

	if (!isfinite(value))
		return;
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->metrics[i].name, name))
			m = &p->metrics[i];
	if (!m) {
		if (p->n == p->alloc) {
			p->alloc = p->alloc ? 2 * p->alloc : 32;
			p->metrics = realloc(p->metrics, p->alloc * sizeof(*p->metrics));
			if (!p->metrics)
				abort();
		}
		m = &p->metrics[p->n++];
		memset(m, 0, sizeof(*m));
		snprintf(m->name, sizeof(m->name), "%s", name);
	}
	m->value = value;
	snprintf(m->unit, sizeof(m->unit), "%s", d ? d->unit : "count");
	snprintf(m->source, sizeof(m->source), "%s", source);
}

const struct pragma_metric *pragma_profile_find(const struct pragma_profile *p, const char *name)
{
	for (size_t i = 0; i < p->n; i++)
		if (!strcmp(p->metrics[i].name, name))
			return &p->metrics[i];
	return NULL;
}

int pragma_profile_far_from_timed(const struct pragma_profile *p)
{
	double m;

	if (p->timed_ms <= 0 || !pragma_profile_get(p, "time.median_ms", &m) || m <= 0)
		return 0;
	return m > 1.3 * p->timed_ms || m < p->timed_ms / 1.3;
}

int pragma_profile_get(const struct pragma_profile *p, const char *name, double *v)
{
	const struct pragma_metric *m = pragma_profile_find(p, name);

	if (!m)
		return 0;
	if (v)
		*v = m->value;
	return 1;
}

void pragma_profile_unavailable(struct pragma_profile *p, const char *collector, const char *fmt, ...)
{
	struct pragma_unavailable *u = NULL;
	va_list ap;

	/* One reason per collector: the first one, which is the cause. */
	for (size_t i = 0; i < p->n_unavail; i++)
		if (!strcmp(p->unavail[i].collector, collector))
			return;
	p->unavail = grow(p->unavail, p->n_unavail, sizeof(*p->unavail));
	u = &p->unavail[p->n_unavail++];
	snprintf(u->collector, sizeof(u->collector), "%s", collector);
	va_start(ap, fmt);
	vsnprintf(u->reason, sizeof(u->reason), fmt, ap);
	va_end(ap);
}

const char *pragma_profile_why(const struct pragma_profile *p, const char *collector)
{
	for (size_t i = 0; i < p->n_unavail; i++)
		if (!strcmp(p->unavail[i].collector, collector))
			return p->unavail[i].reason;
	return NULL;
}

void pragma_profile_note(struct pragma_profile *p, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	for (size_t i = 0; i < p->n_notes; i++)
		if (!strcmp(p->notes[i], buf))
			return;
	p->notes = grow(p->notes, p->n_notes, sizeof(*p->notes));
	p->notes[p->n_notes] = strdup(buf);
	if (!p->notes[p->n_notes])
		abort();
	p->n_notes++;
}

struct pragma_remark *pragma_profile_remark(struct pragma_profile *p, enum pragma_remark_kind kind, int line,
					    const char *text, const char *code)
{
	struct pragma_remark *r;

	for (size_t i = 0; i < p->n_remarks; i++)
		if (p->remarks[i].kind == kind && p->remarks[i].line == line && !strcmp(p->remarks[i].text, text))
			return &p->remarks[i];
	p->remarks = grow(p->remarks, p->n_remarks, sizeof(*p->remarks));
	r = &p->remarks[p->n_remarks++];
	memset(r, 0, sizeof(*r));
	r->kind = kind;
	r->line = line;
	r->runs = -1;
	snprintf(r->text, sizeof(r->text), "%s", text);
	snprintf(r->code, sizeof(r->code), "%s", code ? code : "");
	return r;
}

int pragma_profile_shown(const char *name, const char *const *extra, size_t n_extra)
{
	const struct pragma_metric_def *d = pragma_metric_find(name);

	if (d && d->is_default)
		return 1;
	for (size_t i = 0; i < n_extra; i++)
		if (!strcmp(extra[i], "all") || !strcmp(extra[i], name))
			return 1;
	return 0;
}

static const char *remark_kind_name(enum pragma_remark_kind k)
{
	switch (k) {
	case PRAGMA_REMARK_VECTORIZED:
		return "vectorized";
	case PRAGMA_REMARK_NOT_VECTORIZED:
		return "not_vectorized";
	case PRAGMA_REMARK_LOOP:
		return "loop";
	default:
		return "call";
	}
}

/* Registry order first, then the names outside it (perf:EVENT) in the
 * order they were set. */
static void ordered(const struct pragma_profile *p, const struct pragma_metric **out, size_t *n)
{
	size_t nd, k = 0;
	const struct pragma_metric_def *defs = pragma_metric_defs(&nd);

	for (size_t i = 0; i < nd; i++) {
		const struct pragma_metric *m = pragma_profile_find(p, defs[i].name);
		if (m)
			out[k++] = m;
	}
	for (size_t i = 0; i < p->n; i++)
		if (!pragma_metric_find(p->metrics[i].name))
			out[k++] = &p->metrics[i];
	*n = k;
}

json_t *pragma_profile_json(const struct pragma_profile *p, const char *const *extra, size_t n_extra)
{
	json_t *o = json_object(), *metrics = json_object(), *un = json_object(), *rem = json_array(),
	       *notes = json_array();
	const struct pragma_metric **ord = calloc(p->n + 1, sizeof(*ord));
	size_t n;

	ordered(p, ord, &n);
	for (size_t i = 0; i < n; i++) {
		if (!pragma_profile_shown(ord[i]->name, extra, n_extra))
			continue;
		json_object_set_new(metrics, ord[i]->name,
				    json_pack("{s:f, s:s, s:s}", "value", ord[i]->value, "unit", ord[i]->unit, "source",
					      ord[i]->source));
	}
	free(ord);
	for (size_t i = 0; i < p->n_unavail; i++)
		json_object_set_new(un, p->unavail[i].collector, json_string(p->unavail[i].reason));
	for (size_t i = 0; i < p->n_remarks; i++) {
		const struct pragma_remark *r = &p->remarks[i];
		json_t *j = json_pack("{s:s, s:s}", "kind", remark_kind_name(r->kind), "text", r->text);
		if (r->line > 0)
			json_object_set_new(j, "line", json_integer(r->line));
		if (r->code[0])
			json_object_set_new(j, "code", json_string(r->code));
		if (r->runs >= 0)
			json_object_set_new(j, "runs", json_real(r->runs));
		json_array_append_new(rem, j);
	}
	for (size_t i = 0; i < p->n_notes; i++)
		json_array_append_new(notes, json_string(p->notes[i]));
	json_object_set_new(o, "metrics", metrics);
	json_object_set_new(o, "unavailable", un);
	json_object_set_new(o, "remarks", rem);
	json_object_set_new(o, "notes", notes);
	if (p->source_name[0])
		json_object_set_new(o, "source", json_string(p->source_name));
	json_object_set_new(o, "threads", json_integer(p->threads));
	json_object_set_new(o, "cores", json_integer(p->cores));
	if (p->timed_ms > 0)
		json_object_set_new(o, "timed_ms", json_real(p->timed_ms));
	return o;
}

int pragma_profile_from_json(json_t *j, struct pragma_profile *p, struct pragma_err *err)
{
	json_t *metrics = json_object_get(j, "metrics"), *un = json_object_get(j, "unavailable"), *v;
	const char *k;
	size_t i;

	pragma_profile_init(p);
	if (!json_is_object(metrics))
		return pragma_err_set(err, PRAGMA_E_INPUT, "a profile needs a \"metrics\" object");
	json_object_foreach(metrics, k, v) {
		json_t *val = json_object_get(v, "value");
		const char *src = json_string_value(json_object_get(v, "source"));
		if (!json_is_number(val)) {
			pragma_profile_release(p);
			return pragma_err_set(err, PRAGMA_E_INPUT, "metric %s has no numeric value", k);
		}
		pragma_profile_set(p, k, json_number_value(val), src ? src : "?");
	}
	json_object_foreach(un, k, v)
		pragma_profile_unavailable(p, k, "%s", json_string_value(v) ? json_string_value(v) : "");
	json_array_foreach(json_object_get(j, "notes"), i, v)
		if (json_string_value(v))
			pragma_profile_note(p, "%s", json_string_value(v));
	json_array_foreach(json_object_get(j, "remarks"), i, v) {
		const char *kind = json_string_value(json_object_get(v, "kind"));
		const char *text = json_string_value(json_object_get(v, "text"));
		enum pragma_remark_kind rk = PRAGMA_REMARK_CALL;
		if (!kind || !text)
			continue;
		if (!strcmp(kind, "vectorized"))
			rk = PRAGMA_REMARK_VECTORIZED;
		else if (!strcmp(kind, "not_vectorized"))
			rk = PRAGMA_REMARK_NOT_VECTORIZED;
		else if (!strcmp(kind, "loop"))
			rk = PRAGMA_REMARK_LOOP;
		struct pragma_remark *r = pragma_profile_remark(p, rk, (int)json_integer_value(json_object_get(v, "line")),
								text, json_string_value(json_object_get(v, "code")));
		if (json_is_number(json_object_get(v, "runs")))
			r->runs = json_number_value(json_object_get(v, "runs"));
	}
	if (json_string_value(json_object_get(j, "source")))
		snprintf(p->source_name, sizeof(p->source_name), "%s",
			 json_string_value(json_object_get(j, "source")));
	p->threads = (int)json_integer_value(json_object_get(j, "threads"));
	p->cores = (int)json_integer_value(json_object_get(j, "cores"));
	p->timed_ms = json_number_value(json_object_get(j, "timed_ms"));
	return 0;
}

const char *pragma_metric_format(double v, const char *unit, char *buf, size_t len)
{
	double a = fabs(v);

	if (!strcmp(unit, "count") || !strcmp(unit, "B")) {
		const char *suffix = !strcmp(unit, "B") ? " B" : "";
		if (a >= 1e9)
			snprintf(buf, len, "%.2fG%s", v / 1e9, suffix);
		else if (a >= 1e6)
			snprintf(buf, len, "%.2fM%s", v / 1e6, suffix);
		else if (a >= 1e4)
			snprintf(buf, len, "%.1fK%s", v / 1e3, suffix);
		else if (a == floor(a))
			snprintf(buf, len, "%.0f%s", v, suffix);
		else
			snprintf(buf, len, "%.1f%s", v, suffix);
	} else if (!strcmp(unit, "%")) {
		snprintf(buf, len, a < 1 && a > 0 ? "%.2f%%" : "%.1f%%", v);
	} else if (!strcmp(unit, "x")) {
		snprintf(buf, len, "%.2fx", v);
	} else if (!strcmp(unit, "bits") || !strcmp(unit, "threads")) {
		snprintf(buf, len, "%.0f %s", v, unit);
	} else if (!strcmp(unit, "ms")) {
		snprintf(buf, len, a >= 100 ? "%.1f ms" : a >= 1 ? "%.3f ms" : "%.4f ms", v);
	} else {
		snprintf(buf, len, a >= 100 ? "%.1f %s" : a >= 1 ? "%.2f %s" : "%.3g %s", v, unit);
	}
	return buf;
}

void pragma_profile_headline(const struct pragma_profile *p, struct pragma_buf *out)
{
	double v, w, x;
	size_t start = out->len;

	/* DESIGN 4: the roofline fraction and the instruction-level facts first */
	if (pragma_profile_get(p, "roof.pct_roof", &v)) {
		/* Above the FLOP peak the kernel does fewer FLOPs than counted:
		 * its roof is the bandwidth one (lib/profile/roofline.c). */
		int fewer = pragma_profile_get(p, "roof.flops_over_peak", &x);
		int mem = fewer || (pragma_profile_get(p, "roof.ai", &w) && pragma_profile_get(p, "roof.ridge_ai", &x)
					    ? w < x
					    : !pragma_profile_get(p, "roof.gflops", NULL));
		pragma_buf_addf(out, "%.0f%% of the %s roof", v, mem ? "bandwidth" : "compute");
		if (mem && pragma_profile_get(p, "roof.gbs", &w))
			pragma_buf_addf(out, " (%.1f GB/s)", w);
		else if (!mem && pragma_profile_get(p, "roof.gflops", &w))
			pragma_buf_addf(out, " (%.1f GFLOP/s)", w);
		if (fewer && pragma_profile_get(p, "roof.flops_over_peak", &x))
			pragma_buf_addf(out, "; the task's FLOP count runs at %.2fx the FP32 peak: fewer FLOPs done than "
					     "counted (Winograd/Strassen-like), so the compute roof does not apply", x);
	}
	if (pragma_profile_get(p, "sim.fp_packed_pct", &v)) {
		pragma_buf_addf(out, "%sexecuted FP %.0f%% packed", out->len > start ? "; " : "", v);
		if (pragma_profile_get(p, "sim.vector_bits", &w) && w > 0)
			pragma_buf_addf(out, " at %.0f bits", w);
		if (pragma_profile_get(p, "sim.fma_pct", &w))
			pragma_buf_addf(out, ", %.0f%% FMA", w);
	} else if (pragma_profile_get(p, "static.fp_packed_pct", &v)) {
		pragma_buf_addf(out, "%sFP in the code %.0f%% packed", out->len > start ? "; " : "", v);
		if (pragma_profile_get(p, "static.vector_bits", &w) && w > 0)
			pragma_buf_addf(out, ", up to %.0f bits", w);
		if (pragma_profile_get(p, "static.fma", &w))
			pragma_buf_addf(out, ", %.0f FMA", w);
	}
	if (pragma_profile_get(p, "static.stack_spills", &v) && v > 0)
		pragma_buf_addf(out, "%s%.0f vector spill/reload instructions in innermost loops", out->len > start ? "; " : "", v);
	if (pragma_profile_get(p, "mca.cycles_per_iter", &v)) {
		pragma_buf_addf(out, "%shot loop %.2f cycles/iteration (model)", out->len > start ? "; " : "", v);
		if (pragma_profile_get(p, "mca.latency_pct", &w) && w >= 25)
			pragma_buf_addf(out, ", %.0f%% waiting on dependencies", w);
		else if (pragma_profile_get(p, "mca.port_pressure_pct", &w))
			pragma_buf_addf(out, ", busiest port %.0f%% busy", w);
	}
	if (pragma_profile_get(p, "static.nt_stores", &v))
		pragma_buf_addf(out, "%s%s streaming stores", out->len > start ? "; " : "", v > 0 ? "with" : "no");
	if (pragma_profile_get(p, "sim.insn_per_flop", &v))
		pragma_buf_addf(out, "%s%.2f instructions per FLOP", out->len > start ? "; " : "", v);
	if (pragma_profile_get(p, "par.busy_cores", &v) && pragma_profile_get(p, "par.threads", &w))
		pragma_buf_addf(out, "%s%.1f of %.0f cores busy", out->len > start ? "; " : "", v, w);
	if (out->len > start)
		pragma_buf_addch(out, '\n');
}

void pragma_profile_table(const struct pragma_profile *p, const char *const *extra, size_t n_extra,
			  struct pragma_buf *out)
{
	const struct pragma_metric **ord = calloc(p->n + 1, sizeof(*ord));
	const char *last = "";
	size_t n;

	{
		struct pragma_buf h = PRAGMA_BUF_INIT;
		pragma_profile_headline(p, &h);
		if (h.len)
			pragma_buf_addf(out, "summary: %s\n", h.data);
		pragma_buf_release(&h);
	}

	ordered(p, ord, &n);
	for (size_t i = 0; i < n; i++) {
		const struct pragma_metric *m = ord[i];
		const struct pragma_metric_def *d = pragma_metric_find(m->name);
		char v[64];

		if (!pragma_profile_shown(m->name, extra, n_extra))
			continue;
		if (strcmp(last, m->source)) {
			pragma_buf_addf(out, "%s%s\n", *last ? "\n" : "", m->source);
			last = m->source;
		}
		pragma_metric_format(m->value, m->unit, v, sizeof(v));
		pragma_buf_addf(out, "  %-30s %14s  %s%s\n", m->name, v, d ? d->label : "raw event",
				d && d->per ? " (per call)" : !d ? " (per call)" : "");
	}
	free(ord);
	if (p->n_remarks) {
		pragma_buf_adds(out, "\ncompiler and code\n");
		for (size_t i = 0; i < p->n_remarks; i++) {
			const struct pragma_remark *r = &p->remarks[i];
			char where[96] = "";
			if (r->line > 0)
				snprintf(where, sizeof(where), "%s:%d ", p->source_name[0] ? p->source_name : "kernel.c",
					 r->line);
			if (r->kind == PRAGMA_REMARK_CALL && r->runs >= 0)
				pragma_buf_addf(out, "  %scalls %s; runs %.0f times per pk_forward call (sim)\n", where, r->text, r->runs);
			else if (r->kind == PRAGMA_REMARK_CALL)
				pragma_buf_addf(out, "  %scalls %s\n", where, r->text);
			else if (r->kind == PRAGMA_REMARK_LOOP)
				pragma_buf_addf(out, "  %sloop (llvm-mca): %s\n", where, r->text);
			else
				pragma_buf_addf(out, "  %sloop %s%s%s%s%s\n", where,
						r->kind == PRAGMA_REMARK_VECTORIZED ? "vectorized" : "not vectorized",
						r->text[0] ? ": " : "", r->text, r->code[0] ? "   | " : "", r->code);
		}
	}
	if (p->n_unavail) {
		pragma_buf_adds(out, "\nunavailable\n");
		for (size_t i = 0; i < p->n_unavail; i++)
			pragma_buf_addf(out, "  %-9s %s\n", p->unavail[i].collector, p->unavail[i].reason);
	}
	if (p->n_notes) {
		pragma_buf_adds(out, "\nnotes\n");
		for (size_t i = 0; i < p->n_notes; i++)
			pragma_buf_addf(out, "  - %s\n", p->notes[i]);
	}
}
