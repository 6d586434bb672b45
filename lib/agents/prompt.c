/*
 * Pieces of the Coder's and the Conductor's requests that need more than a
 * template: the glossary of the metrics a request shows, and code listings
 * whose line numbers are the ones the compiler and the profile cite.
 */
#include <ctype.h>
#include <stdlib.h>
#include <string.h>

#include "agents_priv.h"

/* name appears in text as a whole metric name ("sim.d1_miss_rate" is not
 * "sim.d1_miss_rate_x", nor "xsim.d1_miss_rate"). */
static int names(const char *text, const char *name)
{
	size_t n = strlen(name);

	for (const char *p = text; p && (p = strstr(p, name)); p++) {
		int before = p > text && (isalnum((unsigned char)p[-1]) || p[-1] == '_' || p[-1] == '.');
		int after = isalnum((unsigned char)p[n]) || p[n] == '_' || (p[n] == '.' && isalnum((unsigned char)p[n + 1]));
		if (!before && !after)
			return 1;
	}
	return 0;
}

static int listed(const char **l, size_t n, const char *s)
{
	for (size_t i = 0; i < n; i++)
		if (!strcmp(l[i], s))
			return 1;
	return 0;
}

void agents_glossary(const struct pragma_knowledge *kb, json_t *metrics, json_t *extra, json_t *diagnosis,
		     const char *shown, size_t max, struct pragma_buf *out)
{
	size_t nd, i, nm = 0, nb = 0;
	const struct pragma_metric_def *defs = pragma_metric_defs(&nd);
	const char **m = calloc(json_object_size(metrics) + 1, sizeof(*m));
	const char **b = calloc(json_array_size(diagnosis) + 1, sizeof(*b));
	json_t *x;

	if (!m || !b)
		abort();
	json_array_foreach(diagnosis, i, x)
		if (json_string_value(json_object_get(x, "bottleneck")))
			b[nb++] = json_string_value(json_object_get(x, "bottleneck"));
	/* Only metrics this request shows by name, most relevant first: those
	 * the Conductor asked for, then those the playbooks of the bottlenecks
	 * found point to, then the rest in the registry's (the table's) order;
	 * a budget cut drops the last. */
	for (int pass = 0; pass < 3; pass++) {
		for (size_t k = 0; k < nd; k++) {
			const char *name = defs[k].name;
			int want = 0;
			if (!json_object_get(metrics, name) || !names(shown, name) || listed(m, nm, name))
				continue;
			if (pass == 0) {
				json_array_foreach(extra, i, x)
					want |= json_is_string(x) && !strcmp(json_string_value(x), name);
			} else if (pass == 1) {
				for (size_t j = 0; j < nb && !want; j++) {
					const struct pragma_kentry *e = pragma_knowledge_get(kb, PRAGMA_KENTRY_PLAYBOOK, b[j]);
					for (int q = 0; e && e->metrics[q] && !want; q++)
						want = !strcmp(e->metrics[q], name);
				}
			} else {
				want = 1;
			}
			if (want)
				m[nm++] = name;
		}
	}
	pragma_knowledge_prompt(kb, m, nm, b, nb, max, out);
	free(m);
	free(b);
}

void agents_code_listing(const char *code, struct pragma_buf *out)
{
	size_t lines = 0;
	int width = 1;

	for (const char *p = code; *p; p++)
		lines += *p == '\n';
	if (*code && code[strlen(code) - 1] != '\n')
		lines++;
	for (size_t l = lines; l >= 10; l /= 10)
		width++;
	for (size_t n = 1; *code; n++) {
		size_t len = strcspn(code, "\n");
		pragma_buf_addf(out, "%*zu | %.*s\n", width, n, (int)len, code);
		code += len + (code[len] == '\n');
	}
}

/* "The best so far ...: attempt 3 — 12.36 ms, 1.59x over the baseline in
 * ...": rounds names the session when it is the one just shown. */
static void best_heading(const struct agents_best_view *b, const char *which, const char *rounds,
			 struct pragma_buf *h)
{
	char iv[72];

	pragma_buf_addf(h, "%s (the historical best): attempt %d — %.4g ms, %.2fx", which, b->n, b->ms, b->speedup);
	if (b->same_rounds)
		pragma_buf_addf(h, " over the baseline in %s", rounds);
	else
		pragma_buf_addf(h, " [%s] over the baseline in its own attempt's session",
				pragma_interval_str(b->lo, b->hi, iv, sizeof(iv)));
}

void agents_conductor_code_vars(json_t *vars, int n, const char *code, const struct agents_best_view *b)
{
	struct pragma_buf l = PRAGMA_BUF_INIT, h = PRAGMA_BUF_INIT, t = PRAGMA_BUF_INIT;
	int same = code && b->n && b->code && !strcmp(code, b->code);

	if (code) {
		agents_code_listing(code, &l);
		json_object_set_new(vars, "code", json_string(l.data));
	}
	pragma_buf_reset(&l);
	if (b->n && b->code) {
		best_heading(b, b->replaced ? "The best before this attempt" : "The best so far", "this attempt's rounds",
			     &h);
		/* The current kernel by its section's name, not a number: the
		 * numbers depend on which sections a request holds. */
		if (b->replaced)
			pragma_buf_addf(&t, "Until attempt %d, the kernel pragma kept as the best; the current kernel "
					    "(section \"Current kernel\" below) measured faster and replaces it.", n);
		else
			pragma_buf_adds(&t, "The kernel pragma keeps as the best; the current kernel (section \"Current "
					    "kernel\" below) is measured against it.");
		if (same)
			pragma_buf_adds(&t, " Its code is the current kernel's: see \"Current kernel\" below.");
		else
			agents_code_listing(b->code, &l);
		json_object_set_new(vars, "best_heading", json_string(h.data));
		json_object_set_new(vars, "best_text", json_string(t.data));
		json_object_set_new(vars, "best_code", json_string(l.data));
		json_object_set_new(vars, "best_attempt", json_integer(b->n));
	}
	pragma_buf_release(&l);
	pragma_buf_release(&h);
	pragma_buf_release(&t);
}

void agents_coder_code_vars(json_t *vars, int n, const char *last_code, int last_code_n,
			    const struct agents_best_view *b)
{
	struct pragma_buf l = PRAGMA_BUF_INIT, h = PRAGMA_BUF_INIT;
	int same = b->n && b->code && last_code && !strcmp(b->code, last_code);

	/* The code the instructions refer to, named for what it is. */
	if (last_code && *last_code)
		agents_code_listing(last_code, &l);
	json_object_set_new(vars, "code", json_string(l.data));
	if (same && last_code_n == b->n && b->n == n - 1)
		pragma_buf_addf(&h, "Your last kernel (attempt %d), now the best so far", n - 1);
	else if (same && last_code_n == b->n)
		pragma_buf_addf(&h, "The best so far (attempt %d): your last reply (attempt %d) held no usable code",
				b->n, n - 1);
	else if (same)
		pragma_buf_addf(&h, "Your last kernel (attempt %d), the same code as the best so far (attempt %d)",
				n - 1, b->n);
	else if (last_code_n == n - 1)
		pragma_buf_addf(&h, "Your last kernel (attempt %d)", n - 1);
	else
		pragma_buf_addf(&h, "Your last kernel: none (your last reply, attempt %d, held no usable code)", n - 1);
	json_object_set_new(vars, "code_heading", json_string(h.data));
	/* The best, when it is other code, comes before it under a heading
	 * with its numbers. */
	if (b->n && b->code && !same) {
		pragma_buf_reset(&h);
		pragma_buf_reset(&l);
		char rounds[64];
		snprintf(rounds, sizeof(rounds), "the rounds of your last kernel (attempt %d)", n - 1);
		best_heading(b, "The best so far", rounds, &h);
		agents_code_listing(b->code, &l);
		json_object_set_new(vars, "best_heading", json_string(h.data));
		json_object_set_new(vars, "best_code", json_string(l.data));
		json_object_set_new(vars, "best_attempt", json_integer(b->n));
	}
	pragma_buf_release(&l);
	pragma_buf_release(&h);
}
