/*
 * Errors: library calls return 0 on success or -1 and fill a struct
 * pragma_err; only src/ turns the kind into an exit code (DESIGN 3.9).
 * A message says what happened; a hint (optional) says what to do.
 */
#ifndef PRAGMA_ERR_H
#define PRAGMA_ERR_H

#include <stddef.h>

enum pragma_err_kind {
	PRAGMA_OK = 0,
	PRAGMA_E_NEGATIVE = 1, /* a negative verdict: kernel rejected, target missed */
	PRAGMA_E_INPUT = 2,    /* usage or input error: bad flags, malformed task */
	PRAGMA_E_ENV = 3,      /* environment: missing compiler, torch, LLM, GPU */
	PRAGMA_E_INTERNAL = 4, /* a bug or an I/O failure of pragma itself */
};

struct pragma_err {
	enum pragma_err_kind kind;
	char msg[2048];
	char hint[1024];
};

#define PRAGMA_ERR_INIT { .kind = PRAGMA_OK }

/* Set kind and message; returns -1 so callers can `return pragma_err_set(...)`.
 * A NULL err is allowed (the error is dropped). */
__attribute__((format(printf, 3, 4)))
int pragma_err_set(struct pragma_err *e, enum pragma_err_kind kind, const char *fmt, ...);
__attribute__((format(printf, 2, 3)))
void pragma_err_hint(struct pragma_err *e, const char *fmt, ...);
/* Prefix the existing message with "context: ". */
__attribute__((format(printf, 2, 3)))
void pragma_err_prefix(struct pragma_err *e, const char *fmt, ...);
void pragma_err_clear(struct pragma_err *e);
/* Exit code for a kind: 0, 1, 2 or 3 (internal errors exit 3). */
int pragma_err_exit_code(const struct pragma_err *e);
const char *pragma_err_kind_name(enum pragma_err_kind kind);

#endif
