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
