/* Integer size expressions in task.json: N, "N+1", "2*N*(M-2)", "NNZ/4". */
#include <ctype.h>
#include <limits.h>
#include <string.h>

#include "pragma/task.h"

struct ex {
	const char *s, *p;
	json_t *sizes;
	struct pragma_err *err;
	int failed;
};

static int64_t fail(struct ex *e, const char *what)
{
	if (!e->failed)
		pragma_err_set(e->err, PRAGMA_E_INPUT, "in size expression '%s': %s at offset %d", e->s, what,
			       (int)(e->p - e->s));
	e->failed = 1;
	return 0;
}

static void ws(struct ex *e)
{
	while (*e->p == ' ')
		e->p++;
}

static int64_t sum(struct ex *e);

static int64_t atom(struct ex *e)
{
	ws(e);
	if (*e->p == '(') {
		e->p++;
		int64_t v = sum(e);
		ws(e);
		if (*e->p != ')')
			return fail(e, "missing ')'");
		e->p++;
		return v;
	}
	if (*e->p == '-') {
		e->p++;
		return -atom(e);
	}
	if (isdigit((unsigned char)*e->p)) {
		int64_t v = 0;
		while (isdigit((unsigned char)*e->p)) {
			if (v > (INT64_MAX - 9) / 10)
				return fail(e, "number too large");
			v = v * 10 + (*e->p++ - '0');
		}
		return v;
	}
	if (isalpha((unsigned char)*e->p) || *e->p == '_') {
		char name[64];
		size_t n = 0;
		while ((isalnum((unsigned char)*e->p) || *e->p == '_') && n < sizeof(name) - 1)
			name[n++] = *e->p++;
		name[n] = '\0';
		json_t *v = json_object_get(e->sizes, name);
		if (!json_is_integer(v)) {
			if (!e->failed)
				pragma_err_set(e->err, PRAGMA_E_INPUT, "in size expression '%s': unknown size '%s'",
					       e->s, name);
			e->failed = 1;
			return 0;
		}
		return json_integer_value(v);
	}
	return fail(e, "expected a number, a size name or '('");
}

static int64_t product(struct ex *e)
{
	int64_t v = atom(e);

	for (;;) {
		ws(e);
		char op = *e->p;
		if (op != '*' && op != '/' && op != '%')
			return v;
		e->p++;
		int64_t r = atom(e);
		if (op == '*') {
			if (r && (v > INT64_MAX / (r < 0 ? -r : r) || v < -INT64_MAX / (r < 0 ? -r : r)))
				return fail(e, "overflow");
			v *= r;
		} else {
			if (!r)
				return fail(e, "division by zero");
			v = op == '/' ? v / r : v % r;
		}
	}
}

static int64_t sum(struct ex *e)
{
	int64_t v = product(e);

	for (;;) {
		ws(e);
		char op = *e->p;
		if (op != '+' && op != '-')
			return v;
		e->p++;
		int64_t r = product(e);
		v = op == '+' ? v + r : v - r;
	}
}

int pragma_size_expr(const char *expr, json_t *sizes, int64_t *out, struct pragma_err *err)
{
	struct ex e = { expr, expr, sizes, err, 0 };
	int64_t v = sum(&e);

	ws(&e);
	if (!e.failed && *e.p)
		fail(&e, "unexpected character");
	if (e.failed)
		return -1;
	*out = v;
	return 0;
}
