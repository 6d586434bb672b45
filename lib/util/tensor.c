/* Tensors and the NumPy .npy format (format spec: numpy.lib.format). */
#include <ctype.h>
#include <errno.h>
#include <limits.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include "pragma/buf.h"
#include "pragma/fs.h"
#include "pragma/tensor.h"

static const struct {
	const char *name;
	size_t size;
	const char *descr; /* little-endian .npy descr; "" where a byte order makes no sense */
} dtypes[] = {
	[PK_FLOAT32] = { "float32", 4, "<f4" },
	[PK_FLOAT64] = { "float64", 8, "<f8" },
	[PK_FLOAT16] = { "float16", 2, "<f2" },
	[PK_BFLOAT16] = { "bfloat16", 2, "<u2" },
	[PK_INT64] = { "int64", 8, "<i8" },
	[PK_INT32] = { "int32", 4, "<i4" },
	[PK_INT8] = { "int8", 1, "|i1" },
	[PK_UINT8] = { "uint8", 1, "|u1" },
	[PK_BOOL] = { "bool", 1, "|b1" },
};
#define N_DTYPES ((int)(sizeof(dtypes) / sizeof(dtypes[0])))

size_t pragma_dtype_size(enum pk_dtype t)
{
	return (int)t >= 0 && (int)t < N_DTYPES ? dtypes[t].size : 0;
}

const char *pragma_dtype_name(enum pk_dtype t)
{
	return (int)t >= 0 && (int)t < N_DTYPES ? dtypes[t].name : "unknown";
}

int pragma_dtype_from_name(const char *name, enum pk_dtype *out)
{
	for (int i = 0; i < N_DTYPES; i++)
		if (!strcmp(name, dtypes[i].name)) {
			*out = (enum pk_dtype)i;
			return 0;
		}
	return -1;
}

int pragma_dtype_is_float(enum pk_dtype t)
{
	return t == PK_FLOAT32 || t == PK_FLOAT64 || t == PK_FLOAT16 || t == PK_BFLOAT16;
}

int64_t pragma_shape_numel(const int64_t *shape, int ndim)
{
	int64_t n = 1;

	if (ndim < 0 || ndim > PK_MAX_DIMS)
		return -1;
	for (int i = 0; i < ndim; i++) {
		if (shape[i] < 0)
			return -1;
		if (shape[i] && n > INT64_MAX / shape[i])
			return -1;
		n *= shape[i];
	}
	return n;
}

const char *pragma_shape_str(const int64_t *shape, int ndim, char *buf, size_t len)
{
	size_t off = 0;

	off += (size_t)snprintf(buf, len, "[");
	for (int i = 0; i < ndim && off < len; i++)
		off += (size_t)snprintf(buf + off, len - off, "%s%lld", i ? ", " : "", (long long)shape[i]);
	if (off < len)
		snprintf(buf + off, len - off, "]");
	return buf;
}

int pragma_tensor_alloc(struct pragma_tensor *t, enum pk_dtype dtype, int ndim, const int64_t *shape,
			struct pragma_err *err)
{
	int64_t n = pragma_shape_numel(shape, ndim);
	size_t es = pragma_dtype_size(dtype);

	memset(t, 0, sizeof(*t));
	if (n < 0 || !es)
		return pragma_err_set(err, PRAGMA_E_INPUT, "invalid tensor shape or dtype");
	if ((uint64_t)n > SIZE_MAX / es / 2)
		return pragma_err_set(err, PRAGMA_E_INPUT, "tensor too large");
	t->dtype = dtype;
	t->ndim = ndim;
	if (ndim)
		memcpy(t->shape, shape, sizeof(int64_t) * (size_t)ndim);
	t->nbytes = (size_t)n * es;
	if (t->nbytes) {
		size_t alloc = (t->nbytes + 63) & ~(size_t)63;
		t->data = aligned_alloc(64, alloc);
		if (!t->data)
			return pragma_err_set(err, PRAGMA_E_INTERNAL, "out of memory allocating %zu bytes", alloc);
		memset(t->data, 0, alloc);
	}
	return 0;
}

void pragma_tensor_release(struct pragma_tensor *t)
{
	free(t->data);
	t->data = NULL;
	t->nbytes = 0;
}

int64_t pragma_tensor_numel(const struct pragma_tensor *t)
{
	return pragma_shape_numel(t->shape, t->ndim);
}

static double half_to_double(uint16_t h)
{
	int sign = h >> 15, exp = (h >> 10) & 31, man = h & 1023;
	double v;

	if (exp == 0)
		v = ldexp(man, -24);
	else if (exp == 31)
		v = man ? NAN : INFINITY;
	else
		v = ldexp(man + 1024, exp - 25);
	return sign ? -v : v;
}

static uint16_t double_to_half(double d)
{
	float f = (float)d;
	uint32_t x;
	uint16_t sign;
	int exp;
	uint32_t man;

	memcpy(&x, &f, 4);
	sign = (uint16_t)((x >> 16) & 0x8000);
	exp = (int)((x >> 23) & 255) - 127 + 15;
	man = x & 0x7fffff;
	if (((x >> 23) & 255) == 255)
		return sign | 0x7c00 | (man ? 0x200 : 0);
	if (exp >= 31)
		return sign | 0x7c00;
	if (exp <= 0) {
		if (exp < -10)
			return sign;
		man |= 0x800000;
		uint32_t shift = (uint32_t)(14 - exp);
		uint32_t h = man >> shift;
		uint32_t rem = man & ((1u << shift) - 1), half = 1u << (shift - 1);
		if (rem > half || (rem == half && (h & 1)))
			h++;
		return sign | (uint16_t)h;
	}
	uint32_t h = ((uint32_t)exp << 10) | (man >> 13);
	uint32_t rem = man & 0x1fff;
	if (rem > 0x1000 || (rem == 0x1000 && (h & 1)))
		h++;
	return sign | (uint16_t)h;
}

double pragma_tensor_get(const struct pragma_tensor *t, int64_t i)
{
	const char *p = t->data;

	switch (t->dtype) {
	case PK_FLOAT32: { float v; memcpy(&v, p + 4 * i, 4); return v; }
	case PK_FLOAT64: { double v; memcpy(&v, p + 8 * i, 8); return v; }
	case PK_FLOAT16: { uint16_t v; memcpy(&v, p + 2 * i, 2); return half_to_double(v); }
	case PK_BFLOAT16: {
		uint16_t v;
		uint32_t w;
		float f;
		memcpy(&v, p + 2 * i, 2);
		w = (uint32_t)v << 16;
		memcpy(&f, &w, 4);
		return f;
	}
	case PK_INT64: { int64_t v; memcpy(&v, p + 8 * i, 8); return (double)v; }
	case PK_INT32: { int32_t v; memcpy(&v, p + 4 * i, 4); return v; }
	case PK_INT8: return (int8_t)p[i];
	case PK_UINT8: return (uint8_t)p[i];
	case PK_BOOL: return p[i] ? 1 : 0;
	}
	return NAN;
}

void pragma_tensor_set(struct pragma_tensor *t, int64_t i, double v)
{
	char *p = t->data;

	switch (t->dtype) {
	case PK_FLOAT32: { float f = (float)v; memcpy(p + 4 * i, &f, 4); break; }
	case PK_FLOAT64: memcpy(p + 8 * i, &v, 8); break;
	case PK_FLOAT16: { uint16_t h = double_to_half(v); memcpy(p + 2 * i, &h, 2); break; }
	case PK_BFLOAT16: {
		float f = (float)v;
		uint32_t w;
		memcpy(&w, &f, 4);
		if ((w & 0x7fffffff) > 0x7f800000) {
			w = 0x7fc00000 | (w & 0x80000000);
		} else {
			w += 0x7fff + ((w >> 16) & 1); /* round to nearest even */
		}
		uint16_t h = (uint16_t)(w >> 16);
		memcpy(p + 2 * i, &h, 2);
		break;
	}
	case PK_INT64: { int64_t x = (int64_t)v; memcpy(p + 8 * i, &x, 8); break; }
	case PK_INT32: { int32_t x = (int32_t)v; memcpy(p + 4 * i, &x, 4); break; }
	case PK_INT8: p[i] = (char)(int8_t)v; break;
	case PK_UINT8: p[i] = (char)(uint8_t)v; break;
	case PK_BOOL: p[i] = v != 0; break;
	}
}

/* ---- .npy ---- */

struct hdr_parser {
	const char *p, *end;
};

static void skip_ws(struct hdr_parser *h)
{
	while (h->p < h->end && (*h->p == ' ' || *h->p == '\t' || *h->p == '\n' || *h->p == '\r'))
		h->p++;
}

static int expect(struct hdr_parser *h, char c)
{
	skip_ws(h);
	if (h->p < h->end && *h->p == c) {
		h->p++;
		return 0;
	}
	return -1;
}

static int parse_str(struct hdr_parser *h, char *out, size_t cap)
{
	char q;
	size_t n = 0;

	skip_ws(h);
	if (h->p >= h->end || (*h->p != '\'' && *h->p != '"'))
		return -1;
	q = *h->p++;
	while (h->p < h->end && *h->p != q) {
		if (n + 1 >= cap)
			return -1;
		out[n++] = *h->p++;
	}
	if (h->p >= h->end)
		return -1;
	h->p++;
	out[n] = '\0';
	return 0;
}

static int parse_shape(struct hdr_parser *h, int64_t *shape, int *ndim)
{
	*ndim = 0;
	if (expect(h, '('))
		return -1;
	for (;;) {
		skip_ws(h);
		if (h->p < h->end && *h->p == ')') {
			h->p++;
			return 0;
		}
		if (*ndim >= PK_MAX_DIMS)
			return -1;
		if (h->p >= h->end || !isdigit((unsigned char)*h->p))
			return -1;
		int64_t v = 0;
		while (h->p < h->end && isdigit((unsigned char)*h->p)) {
			if (v > (INT64_MAX - 9) / 10)
				return -1;
			v = v * 10 + (*h->p++ - '0');
		}
		/* Python 2 era writers emit 3L. */
		if (h->p < h->end && *h->p == 'L')
			h->p++;
		shape[(*ndim)++] = v;
		skip_ws(h);
		if (h->p < h->end && *h->p == ',') {
			h->p++;
			continue;
		}
		if (expect(h, ')'))
			return -1;
		return 0;
	}
}

static int parse_header(const char *hdr, size_t len, int want, struct pragma_tensor *t, struct pragma_err *err)
{
	struct hdr_parser h = { hdr, hdr + len };
	char key[32], descr[16] = "";
	int have_descr = 0, have_order = 0, have_shape = 0, fortran = 0;

	if (expect(&h, '{'))
		return pragma_err_set(err, PRAGMA_E_INPUT, "header is not a dict");
	for (;;) {
		skip_ws(&h);
		if (h.p < h.end && *h.p == '}')
			break;
		if (parse_str(&h, key, sizeof(key)) || expect(&h, ':'))
			return pragma_err_set(err, PRAGMA_E_INPUT, "malformed header key");
		if (!strcmp(key, "descr")) {
			if (parse_str(&h, descr, sizeof(descr)))
				return pragma_err_set(err, PRAGMA_E_INPUT, "unsupported descr (structured dtype?)");
			have_descr = 1;
		} else if (!strcmp(key, "fortran_order")) {
			skip_ws(&h);
			if ((size_t)(h.end - h.p) >= 4 && !memcmp(h.p, "True", 4)) {
				fortran = 1;
				h.p += 4;
			} else if ((size_t)(h.end - h.p) >= 5 && !memcmp(h.p, "False", 5)) {
				h.p += 5;
			} else {
				return pragma_err_set(err, PRAGMA_E_INPUT, "fortran_order is not True/False");
			}
			have_order = 1;
		} else if (!strcmp(key, "shape")) {
			if (parse_shape(&h, t->shape, &t->ndim))
				return pragma_err_set(err, PRAGMA_E_INPUT, "malformed shape (at most %d dims)", PK_MAX_DIMS);
			have_shape = 1;
		} else {
			return pragma_err_set(err, PRAGMA_E_INPUT, "unknown header key '%s'", key);
		}
		skip_ws(&h);
		if (h.p < h.end && *h.p == ',') {
			h.p++;
			continue;
		}
		if (expect(&h, '}'))
			return pragma_err_set(err, PRAGMA_E_INPUT, "malformed header dict");
		break;
	}
	if (!have_descr || !have_order || !have_shape)
		return pragma_err_set(err, PRAGMA_E_INPUT, "header lacks %s", !have_descr ? "descr" :
				      !have_order ? "fortran_order" : "shape");
	if (fortran)
		return pragma_err_set(err, PRAGMA_E_INPUT, "Fortran-order arrays are not supported (save C order)");

	/* '=' is native order, little-endian here; single bytes may say '|'. */
	if (descr[0] == '=' || (descr[0] == '|' && descr[2] == '1' && descr[3] == '\0'))
		descr[0] = descr[2] == '1' && descr[3] == '\0' ? '|' : '<';
	if (descr[0] == '<' && descr[2] == '1' && descr[3] == '\0')
		descr[0] = '|';
	if (descr[0] == '>')
		return pragma_err_set(err, PRAGMA_E_INPUT, "big-endian data ('%s') is not supported", descr);
	int found = -1;
	for (int i = 0; i < N_DTYPES; i++)
		if (!strcmp(descr, dtypes[i].descr) && i != PK_BFLOAT16)
			found = i;
	if (!strcmp(descr, "<u2")) {
		if (want != PK_BFLOAT16)
			return pragma_err_set(err, PRAGMA_E_INPUT,
					      "uint16 data is only read as bfloat16, and nothing says this is bfloat16");
		found = PK_BFLOAT16;
	}
	if (found < 0)
		return pragma_err_set(err, PRAGMA_E_INPUT, "unsupported dtype '%s'", descr);
	if (want >= 0 && found != want)
		return pragma_err_set(err, PRAGMA_E_INPUT, "dtype is %s, expected %s", dtypes[found].name,
				      pragma_dtype_name((enum pk_dtype)want));
	t->dtype = (enum pk_dtype)found;
	if (pragma_shape_numel(t->shape, t->ndim) < 0)
		return pragma_err_set(err, PRAGMA_E_INPUT, "shape overflows");
	return 0;
}

/* Parses magic and header; *data_off receives where the data starts. */
static int parse_preamble(const unsigned char *b, size_t len, int want, struct pragma_tensor *t,
			  size_t *data_off, struct pragma_err *err)
{
	size_t hlen, off = 0;

	if (len < 10 || memcmp(b, "\x93NUMPY", 6))
		return pragma_err_set(err, PRAGMA_E_INPUT, "not a .npy file (bad magic)");
	if (b[6] == 1) {
		hlen = (size_t)b[8] | (size_t)b[9] << 8;
		off = 10;
	} else if (b[6] == 2 || b[6] == 3) {
		if (len < 12)
			return pragma_err_set(err, PRAGMA_E_INPUT, "truncated .npy header");
		hlen = (size_t)b[8] | (size_t)b[9] << 8 | (size_t)b[10] << 16 | (size_t)b[11] << 24;
		off = 12;
	} else {
		return pragma_err_set(err, PRAGMA_E_INPUT, "unsupported .npy version %d.%d", b[6], b[7]);
	}
	if (hlen > PRAGMA_NPY_MAX_HEADER)
		return pragma_err_set(err, PRAGMA_E_INPUT, ".npy header too large (%zu bytes)", hlen);
	if (hlen > len - off)
		return pragma_err_set(err, PRAGMA_E_INPUT, "truncated .npy header");
	memset(t, 0, sizeof(*t));
	if (parse_header((const char *)b + off, hlen, want, t, err) < 0)
		return -1;
	*data_off = off + hlen;
	return 0;
}

int pragma_npy_parse(const void *buf, size_t len, int want, struct pragma_tensor *t, struct pragma_err *err)
{
	struct pragma_tensor hdr;
	size_t off, need;

	memset(t, 0, sizeof(*t));
	if (parse_preamble(buf, len, want, &hdr, &off, err) < 0)
		return -1;
	int64_t n = pragma_shape_numel(hdr.shape, hdr.ndim);
	size_t es = pragma_dtype_size(hdr.dtype);
	if ((uint64_t)n > (SIZE_MAX - off) / es)
		return pragma_err_set(err, PRAGMA_E_INPUT, "shape too large");
	need = (size_t)n * es;
	if (len - off < need)
		return pragma_err_set(err, PRAGMA_E_INPUT, "truncated .npy data: %zu bytes, shape needs %zu",
				      len - off, need);
	if (len - off > need)
		return pragma_err_set(err, PRAGMA_E_INPUT, ".npy has %zu bytes of trailing data", len - off - need);
	if (pragma_tensor_alloc(t, hdr.dtype, hdr.ndim, hdr.shape, err) < 0)
		return -1;
	if (need)
		memcpy(t->data, (const char *)buf + off, need);
	return 0;
}

/* Reads the data straight into the aligned tensor: no second copy of a
 * large input in memory. */
int pragma_npy_read(const char *path, int want, struct pragma_tensor *t, struct pragma_err *err)
{
	unsigned char b[PRAGMA_NPY_MAX_HEADER + 12];
	struct pragma_tensor hdr;
	struct stat st;
	size_t off, n, need;
	int ret = -1;
	int fd = open(path, O_RDONLY | O_CLOEXEC);

	memset(t, 0, sizeof(*t));
	if (fd < 0)
		return pragma_err_set(err, PRAGMA_E_INPUT, "cannot open %s: %s", path, strerror(errno));
	if (fstat(fd, &st) < 0 || !S_ISREG(st.st_mode)) {
		pragma_err_set(err, PRAGMA_E_INPUT, "%s is not a regular file", path);
		goto out;
	}
	n = 0;
	while (n < sizeof(b)) {
		ssize_t r = read(fd, b + n, sizeof(b) - n);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		n += (size_t)r;
	}
	if (parse_preamble(b, n, want, &hdr, &off, err) < 0)
		goto out;
	need = (size_t)pragma_shape_numel(hdr.shape, hdr.ndim) * pragma_dtype_size(hdr.dtype);
	if ((uint64_t)st.st_size != off + need) {
		pragma_err_set(err, PRAGMA_E_INPUT, "%s of .npy data: %llu bytes, shape needs %zu",
			       (uint64_t)st.st_size < off + need ? "truncated" : "trailing bytes after",
			       (unsigned long long)(st.st_size - (off_t)off), need);
		goto out;
	}
	if (pragma_tensor_alloc(t, hdr.dtype, hdr.ndim, hdr.shape, err) < 0)
		goto out;
	for (size_t got = 0; got < need;) {
		ssize_t r = pread(fd, (char *)t->data + got, need - got, (off_t)(off + got));
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0) {
			pragma_err_set(err, PRAGMA_E_INPUT, "short read");
			pragma_tensor_release(t);
			goto out;
		}
		got += (size_t)r;
	}
	ret = 0;
out:
	if (ret < 0)
		pragma_err_prefix(err, "%s", path);
	close(fd);
	return ret;
}

int pragma_npy_read_header(const char *path, int want, struct pragma_tensor *t, struct pragma_err *err)
{
	unsigned char b[PRAGMA_NPY_MAX_HEADER + 12];
	size_t off, n;
	FILE *f = fopen(path, "rb");

	memset(t, 0, sizeof(*t));
	if (!f)
		return pragma_err_set(err, PRAGMA_E_INPUT, "cannot open %s: %s", path, strerror(errno));
	n = fread(b, 1, sizeof(b), f);
	fclose(f);
	if (parse_preamble(b, n, want, t, &off, err) < 0) {
		pragma_err_prefix(err, "%s", path);
		return -1;
	}
	return 0;
}

int pragma_npy_write(const char *path, const struct pragma_tensor *t, struct pragma_err *err)
{
	struct pragma_buf hdr = PRAGMA_BUF_INIT, out = PRAGMA_BUF_INIT;
	size_t pre, total;
	int ret;

	pragma_buf_addf(&hdr, "{'descr': '%s', 'fortran_order': False, 'shape': (", dtypes[t->dtype].descr);
	for (int i = 0; i < t->ndim; i++)
		pragma_buf_addf(&hdr, "%lld,%s", (long long)t->shape[i], i + 1 < t->ndim ? " " : "");
	pragma_buf_adds(&hdr, "), }");
	pre = hdr.len + 1 + 10 > 65535 ? 12 : 10;
	total = (pre + hdr.len + 1 + 63) & ~(size_t)63;
	while (pre + hdr.len + 1 < total)
		pragma_buf_addch(&hdr, ' ');
	pragma_buf_addch(&hdr, '\n');

	pragma_buf_grow(&out, total + t->nbytes);
	pragma_buf_add(&out, "\x93NUMPY", 6);
	if (pre == 10) {
		unsigned char v[4] = { 1, 0, (unsigned char)(hdr.len & 255), (unsigned char)(hdr.len >> 8) };
		pragma_buf_add(&out, v, 4);
	} else {
		unsigned char v[6] = { 2, 0, (unsigned char)(hdr.len & 255), (unsigned char)(hdr.len >> 8),
				       (unsigned char)(hdr.len >> 16), (unsigned char)(hdr.len >> 24) };
		pragma_buf_add(&out, v, 6);
	}
	pragma_buf_add(&out, hdr.data, hdr.len);
	if (t->nbytes)
		pragma_buf_add(&out, t->data, t->nbytes);
	ret = pragma_write_file_atomic(path, out.data, out.len, err);
	pragma_buf_release(&hdr);
	pragma_buf_release(&out);
	return ret;
}
