#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "pragma/err.h"

int pragma_err_set(struct pragma_err *e, enum pragma_err_kind kind, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return -1;
	e->kind = kind;
	e->hint[0] = '\0';
	va_start(ap, fmt);
	vsnprintf(e->msg, sizeof(e->msg), fmt, ap);
	va_end(ap);
	return -1;
}

void pragma_err_hint(struct pragma_err *e, const char *fmt, ...)
{
	va_list ap;

	if (!e)
		return;
	va_start(ap, fmt);
	vsnprintf(e->hint, sizeof(e->hint), fmt, ap);
	va_end(ap);
}

void pragma_err_prefix(struct pragma_err *e, const char *fmt, ...)
{
	char pre[512], old[sizeof(e->msg)];
	va_list ap;

	if (!e)
		return;
	va_start(ap, fmt);
	vsnprintf(pre, sizeof(pre), fmt, ap);
	va_end(ap);
	memcpy(old, e->msg, sizeof(old));
	size_t n = strlen(pre);
	if (n > sizeof(e->msg) - 3)
		n = sizeof(e->msg) - 3;
	memcpy(e->msg, pre, n);
	memcpy(e->msg + n, ": ", 2);
	size_t rest = sizeof(e->msg) - n - 3;
	size_t olen = strnlen(old, rest);
	memcpy(e->msg + n + 2, old, olen);
	e->msg[n + 2 + olen] = '\0';
}

void pragma_err_clear(struct pragma_err *e)
{
	e->kind = PRAGMA_OK;
	e->msg[0] = e->hint[0] = '\0';
}

int pragma_err_exit_code(const struct pragma_err *e)
{
	switch (e->kind) {
	case PRAGMA_OK:
		return 0;
	case PRAGMA_E_NEGATIVE:
		return 1;
	case PRAGMA_E_INPUT:
		return 2;
	case PRAGMA_E_ENV:
	case PRAGMA_E_INTERNAL:
		return 3;
	}
	return 3;
}

const char *pragma_err_kind_name(enum pragma_err_kind kind)
{
	switch (kind) {
	case PRAGMA_OK:
		return "ok";
	case PRAGMA_E_NEGATIVE:
		return "rejected";
	case PRAGMA_E_INPUT:
		return "input_error";
	case PRAGMA_E_ENV:
		return "environment_error";
	case PRAGMA_E_INTERNAL:
		return "internal_error";
	}
	return "error";
}
