#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pragma/buf.h"

char pragma_buf_empty[1];

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q) {
		fputs("pragma: out of memory\n", stderr);
		abort();
	}
	return q;
}

void pragma_buf_init(struct pragma_buf *b)
{
	b->data = pragma_buf_empty;
	b->len = 0;
	b->alloc = 0;
}

void pragma_buf_release(struct pragma_buf *b)
{
	if (b->alloc)
		free(b->data);
	pragma_buf_init(b);
}

char *pragma_buf_detach(struct pragma_buf *b, size_t *len)
{
	char *p;

	if (!b->alloc)
		pragma_buf_grow(b, 0);
	p = b->data;
	if (len)
		*len = b->len;
	pragma_buf_init(b);
	return p;
}

void pragma_buf_grow(struct pragma_buf *b, size_t extra)
{
	size_t need = b->len + extra + 1;

	if (need < b->len)
		abort();
	if (need <= b->alloc)
		return;
	size_t n = b->alloc ? b->alloc : 64;
	while (n < need)
		n = n * 3 / 2 + 16;
	if (!b->alloc) {
		b->data = xrealloc(NULL, n);
		b->data[0] = '\0';
	} else {
		b->data = xrealloc(b->data, n);
	}
	b->alloc = n;
}

void pragma_buf_add(struct pragma_buf *b, const void *data, size_t len)
{
	pragma_buf_grow(b, len);
	memcpy(b->data + b->len, data, len);
	b->len += len;
	b->data[b->len] = '\0';
}

void pragma_buf_adds(struct pragma_buf *b, const char *s)
{
	pragma_buf_add(b, s, strlen(s));
}

void pragma_buf_addch(struct pragma_buf *b, char c)
{
	pragma_buf_add(b, &c, 1);
}

void pragma_buf_vaddf(struct pragma_buf *b, const char *fmt, va_list ap)
{
	va_list cp;
	int n;

	va_copy(cp, ap);
	n = vsnprintf(b->data + b->len, b->alloc ? b->alloc - b->len : 0, fmt, cp);
	va_end(cp);
	if (n < 0)
		return;
	if ((size_t)n >= (b->alloc ? b->alloc - b->len : 0)) {
		pragma_buf_grow(b, (size_t)n);
		vsnprintf(b->data + b->len, b->alloc - b->len, fmt, ap);
	}
	b->len += (size_t)n;
}

void pragma_buf_addf(struct pragma_buf *b, const char *fmt, ...)
{
	va_list ap;

	va_start(ap, fmt);
	pragma_buf_vaddf(b, fmt, ap);
	va_end(ap);
}

void pragma_buf_reset(struct pragma_buf *b)
{
	pragma_buf_setlen(b, 0);
}

void pragma_buf_setlen(struct pragma_buf *b, size_t len)
{
	if (!b->alloc)
		return;
	if (len > b->len)
		abort();
	b->len = len;
	b->data[len] = '\0';
}

void pragma_buf_rtrim(struct pragma_buf *b)
{
	while (b->len && strchr(" \t\r\n", b->data[b->len - 1]))
		b->len--;
	if (b->alloc)
		b->data[b->len] = '\0';
}

void pragma_buf_add_replacing(struct pragma_buf *b, const char *s, size_t len, const char *from, const char *to)
{
	size_t fl = from ? strlen(from) : 0;
	const char *end = s + len, *at;

	if (!fl) {
		pragma_buf_add(b, s, len);
		return;
	}
	while ((at = memmem(s, (size_t)(end - s), from, fl))) {
		pragma_buf_add(b, s, (size_t)(at - s));
		pragma_buf_adds(b, to);
		s = at + fl;
	}
	pragma_buf_add(b, s, (size_t)(end - s));
}
