/* Comparing outputs with references, and accepting source text. */
#include <inttypes.h>
#include <math.h>
#include <stdio.h>
#include <string.h>

#include "pragma/run.h"
#include "pragma/tensor.h"
#include "pragma/verify.h"

const char *pragma_index_str(int64_t flat, const int64_t *shape, int ndim, char *buf, size_t len)
{
	int64_t idx[PK_MAX_DIMS];
	size_t n = 0;

	if (ndim <= 0) {
		snprintf(buf, len, "()");
		return buf;
	}
	for (int d = ndim - 1; d >= 0; d--) {
		int64_t s = shape[d] > 0 ? shape[d] : 1;
		idx[d] = flat % s;
		flat /= s;
	}
	n += (size_t)snprintf(buf + n, len - n, "(");
	for (int d = 0; d < ndim && n < len; d++)
		n += (size_t)snprintf(buf + n, len - n, "%" PRId64 "%s", idx[d], d + 1 < ndim ? ", " : ")");
	return buf;
}

static int is_poison(const struct pragma_tensor *t, int64_t i)
{
	const unsigned char *p = (const unsigned char *)t->data;

	switch (t->dtype) {
	case PK_FLOAT32: {
		uint32_t v;
		memcpy(&v, p + 4 * i, 4);
		return v == PRAGMA_POISON_F32;
	}
	case PK_FLOAT64: {
		uint64_t v;
		memcpy(&v, p + 8 * i, 8);
		return v == PRAGMA_POISON_F64;
	}
	case PK_FLOAT16:
	case PK_BFLOAT16: {
		uint16_t v;
		memcpy(&v, p + 2 * i, 2);
		return v == (t->dtype == PK_FLOAT16 ? PRAGMA_POISON_F16 : PRAGMA_POISON_BF16);
	}
	case PK_BOOL:
		return p[i] == PRAGMA_POISON_BOOL;
	default: {
		size_t es = pragma_dtype_size(t->dtype);
		for (size_t b = 0; b < es; b++)
			if (p[(size_t)i * es + b] != PRAGMA_POISON_BYTE)
				return 0;
		return 1;
	}
	}
}

int pragma_compare(const struct pragma_tensor *got, const struct pragma_tensor *want, double atol, double rtol,
		   struct pragma_cmp *c)
{
	int is_float = pragma_dtype_is_float(want->dtype);
	int64_t n = pragma_tensor_numel(want);

	memset(c, 0, sizeof(*c));
	c->first_bad = -1;
	if (got->dtype != want->dtype || got->ndim != want->ndim ||
	    memcmp(got->shape, want->shape, sizeof(int64_t) * (size_t)want->ndim) || got->nbytes != want->nbytes)
		return -1;
	c->n = n;
	/* Identical bytes are equal whatever the tolerance (and fast). */
	if (!want->nbytes || !memcmp(got->data, want->data, want->nbytes))
		return 0;
	for (int64_t i = 0; i < n; i++) {
		double g = pragma_tensor_get(got, i), w = pragma_tensor_get(want, i);
		int bad, poison = 0, nonfinite = 0;

		if (!is_float) {
			bad = g != w;
			poison = bad && is_poison(got, i);
		} else if (isnan(w)) {
			bad = !isnan(g);
		} else if (isinf(w)) {
			bad = g != w;
			poison = bad && is_poison(got, i);
		} else if (!isfinite(g)) {
			bad = 1;
			poison = is_poison(got, i);
			nonfinite = !poison;
		} else {
			double d = fabs(g - w);
			bad = d > atol + rtol * fabs(w);
			if (d > c->max_abs_err)
				c->max_abs_err = d;
			if (w != 0 && d / fabs(w) > c->max_rel_err)
				c->max_rel_err = d / fabs(w);
		}
		if (!bad)
			continue;
		if (c->first_bad < 0) {
			c->first_bad = i;
			c->got = g;
			c->want = w;
		}
		c->bad++;
		c->unwritten += poison;
		c->nonfinite += nonfinite;
	}
	return 0;
}

/* Strict UTF-8 (no overlongs, surrogates or code points past U+10FFFF).
 * Returns the offset of the first bad byte, or -1. */
static long utf8_bad(const unsigned char *s, size_t n)
{
	size_t i = 0;

	while (i < n) {
		unsigned char c = s[i];
		size_t k;
		uint32_t cp;

		if (c < 0x80) {
			i++;
			continue;
		}
		if (c >= 0xc2 && c <= 0xdf) {
			k = 1;
			cp = c & 0x1f;
		} else if (c >= 0xe0 && c <= 0xef) {
			k = 2;
			cp = c & 0x0f;
		} else if (c >= 0xf0 && c <= 0xf4) {
			k = 3;
			cp = c & 0x07;
		} else {
			return (long)i;
		}
		for (size_t j = 1; j <= k; j++) {
			if (i + j >= n || (s[i + j] & 0xc0) != 0x80)
				return (long)i;
			cp = (cp << 6) | (s[i + j] & 0x3f);
		}
		if ((k == 2 && (cp < 0x800 || (cp >= 0xd800 && cp <= 0xdfff))) || (k == 3 && (cp < 0x10000 || cp > 0x10ffff)))
			return (long)i;
		i += k + 1;
	}
	return -1;
}

int pragma_verify_source(const char *src, size_t len, size_t max, char *why, size_t why_len)
{
	const char *nul;
	long bad;
	size_t i;

	if (!max)
		max = 1 << 20;
	if (len > max) {
		snprintf(why, why_len, "the kernel source is %.1f MB; the limit is %.1f MB", len / 1e6, max / 1e6);
		return -1;
	}
	for (i = 0; i < len && strchr(" \t\r\n\f\v", src[i]); i++)
		;
	if (i == len) {
		snprintf(why, why_len, "the kernel source is empty");
		return -1;
	}
	nul = memchr(src, 0, len);
	if (nul) {
		snprintf(why, why_len, "the kernel source contains a NUL byte at offset %zu: not text", (size_t)(nul - src));
		return -1;
	}
	bad = utf8_bad((const unsigned char *)src, len);
	if (bad >= 0) {
		size_t line = 1;
		for (long k = 0; k < bad; k++)
			line += src[k] == '\n';
		snprintf(why, why_len, "the kernel source is not UTF-8 text (byte 0x%02x at offset %ld, line %zu)",
			 (unsigned char)src[bad], bad, line);
		return -1;
	}
	if (!strstr(src, "pk_forward")) {
		snprintf(why, why_len, "the kernel source does not define pk_forward");
		return -1;
	}
	return 0;
}
