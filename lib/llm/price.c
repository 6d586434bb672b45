/*
 * Cost per call from a price table: USD per million prompt and completion
 * tokens. Reasoning tokens are part of the completion count for every
 * provider we speak to, so they are not billed twice. The built-in list
 * prices were copied from the providers' pages and go stale: a price file
 * (--prices, PRAGMA_LLM_PRICES, config llm.price_file) overrides them:
 *
 *   { "gpt-4o": { "input": 2.5, "output": 10 },
 *     "my-local-model*": [0, 0] }
 *
 * Names match exactly, or by prefix when they end in '*'; the longest match
 * wins; a vendor prefix ("openai/gpt-4o" on OpenRouter) is ignored.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm_int.h"
#include "pragma/fs.h"

static const struct pragma_llm_price builtin[] = {
	{ "gpt-4o*", 2.50, 10.00 },
	{ "gpt-4o-mini*", 0.15, 0.60 },
	{ "gpt-4.1*", 2.00, 8.00 },
	{ "gpt-4.1-mini*", 0.40, 1.60 },
	{ "gpt-4.1-nano*", 0.10, 0.40 },
	{ "gpt-5*", 1.25, 10.00 },
	{ "gpt-5-mini*", 0.25, 2.00 },
	{ "gpt-5-nano*", 0.05, 0.40 },
	{ "o1*", 15.00, 60.00 },
	{ "o1-mini*", 1.10, 4.40 },
	{ "o3*", 2.00, 8.00 },
	{ "o3-mini*", 1.10, 4.40 },
	{ "o4-mini*", 1.10, 4.40 },
	{ "deepseek-chat", 0.27, 1.10 },
	{ "deepseek-reasoner", 0.55, 2.19 },
	{ "claude-opus-4*", 15.00, 75.00 },
	{ "claude-opus-4-5*", 5.00, 25.00 },
	{ "claude-sonnet-4*", 3.00, 15.00 },
	{ "claude-haiku-4-5*", 1.00, 5.00 },
	{ "claude-3-7-sonnet*", 3.00, 15.00 },
	{ "claude-3-5-sonnet*", 3.00, 15.00 },
	{ "claude-3-5-haiku*", 0.80, 4.00 },
	{ NULL, 0, 0 },
};

const struct pragma_llm_price *pragma_llm_builtin_prices(void)
{
	return builtin;
}

void llm_prices_free(struct pragma_llm *c)
{
	for (size_t i = 0; i < c->n_prices; i++)
		free(c->prices[i].model);
	free(c->prices);
	c->prices = NULL;
	c->n_prices = 0;
}

static int price_number(json_t *v, double *out)
{
	if (!json_is_number(v) || json_number_value(v) < 0)
		return -1;
	*out = json_number_value(v);
	return 0;
}

int llm_prices_load(struct pragma_llm *c, const char *path, struct pragma_err *err)
{
	struct pragma_buf text = PRAGMA_BUF_INIT;
	json_error_t jerr;
	json_t *root = NULL, *v;
	const char *name;
	int ret = -1;

	if (pragma_read_file(path, &text, (size_t)4 << 20, err) < 0) {
		pragma_err_prefix(err, "price file");
		goto out;
	}
	root = json_loadb(text.data, text.len, 0, &jerr);
	if (!json_is_object(root)) {
		pragma_err_set(err, PRAGMA_E_INPUT, "price file %s:%d: %s", path, jerr.line,
			       root ? "expected an object of model: {input, output}" : jerr.text);
		goto out;
	}
	c->prices = calloc(json_object_size(root) + 1, sizeof(*c->prices));
	if (!c->prices)
		abort();
	json_object_foreach(root, name, v) {
		double in, out;
		if (json_is_array(v) && json_array_size(v) == 2 && !price_number(json_array_get(v, 0), &in) &&
		    !price_number(json_array_get(v, 1), &out)) {
			/* [input, output] */
		} else if (json_is_object(v) &&
			   !price_number(json_object_get(v, "input") ? json_object_get(v, "input") :
					 json_object_get(v, "input_per_mtok"), &in) &&
			   !price_number(json_object_get(v, "output") ? json_object_get(v, "output") :
					 json_object_get(v, "output_per_mtok"), &out)) {
			/* {input, output} */
		} else {
			pragma_err_set(err, PRAGMA_E_INPUT, "price file %s: '%s' needs {\"input\": USD, \"output\": USD} "
				       "per million tokens", path, name);
			goto out;
		}
		c->prices[c->n_prices].model = strdup(name);
		if (!c->prices[c->n_prices].model)
			abort();
		c->prices[c->n_prices].in = in;
		c->prices[c->n_prices].out = out;
		c->n_prices++;
	}
	ret = 0;
out:
	json_decref(root);
	pragma_buf_release(&text);
	return ret;
}

/* Match length of pattern against model: exact beats any prefix. */
static size_t match(const char *pat, const char *model)
{
	size_t n = strlen(pat);

	if (n && pat[n - 1] == '*')
		return !strncmp(pat, model, n - 1) ? n - 1 : 0;
	return !strcmp(pat, model) ? (size_t)-1 : 0;
}

int pragma_llm_price_of(struct pragma_llm *c, const char *model, double *in, double *out)
{
	const char *slash;
	size_t best = 0;

	if (!model || !*model)
		return 0;
	slash = strrchr(model, '/');
	if (slash && slash[1])
		model = slash + 1;
	/* Overrides first: any match there wins over the built-in table. */
	for (int pass = 0; pass < 2 && !best; pass++) {
		size_t n = pass == 0 ? (c ? c->n_prices : 0) : sizeof(builtin) / sizeof(builtin[0]) - 1;
		for (size_t i = 0; i < n; i++) {
			const char *pat = pass == 0 ? c->prices[i].model : builtin[i].model;
			size_t m = match(pat, model);
			if (m > best) {
				best = m;
				*in = pass == 0 ? c->prices[i].in : builtin[i].input_per_mtok;
				*out = pass == 0 ? c->prices[i].out : builtin[i].output_per_mtok;
			}
		}
	}
	return best > 0;
}
