/* Growable, always NUL-terminated byte buffer (after git's strbuf). */
#ifndef PRAGMA_BUF_H
#define PRAGMA_BUF_H

#include <stdarg.h>
#include <stddef.h>

struct pragma_buf {
	char *data;   /* never NULL after init: points at "" when empty */
	size_t len;
	size_t alloc;
};

#define PRAGMA_BUF_INIT { .data = pragma_buf_empty, .len = 0, .alloc = 0 }
extern char pragma_buf_empty[];

void pragma_buf_init(struct pragma_buf *b);
void pragma_buf_release(struct pragma_buf *b);
/* Hand the bytes to the caller (free() them); the buffer is empty again. */
char *pragma_buf_detach(struct pragma_buf *b, size_t *len);
void pragma_buf_grow(struct pragma_buf *b, size_t extra);
void pragma_buf_add(struct pragma_buf *b, const void *data, size_t len);
void pragma_buf_adds(struct pragma_buf *b, const char *s);
void pragma_buf_addch(struct pragma_buf *b, char c);
__attribute__((format(printf, 2, 3)))
void pragma_buf_addf(struct pragma_buf *b, const char *fmt, ...);
void pragma_buf_vaddf(struct pragma_buf *b, const char *fmt, va_list ap);
void pragma_buf_reset(struct pragma_buf *b);
void pragma_buf_setlen(struct pragma_buf *b, size_t len);
/* Strip trailing whitespace. */
void pragma_buf_rtrim(struct pragma_buf *b);
/* Append LEN bytes of S with every FROM (non-empty) in them written as TO. */
void pragma_buf_add_replacing(struct pragma_buf *b, const char *s, size_t len, const char *from, const char *to);

#endif
