/* Comparing outputs with references, and accepting source text. */
#include <inttypes.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <string.h>

#include "pragma/refdata.h"
#include "pragma/run.h"
#include "pragma/task.h"
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

/* ------------------------------------------------------------ the rule */

/* Per-dtype defaults: rtol, and atol as a fraction of RMS(ref). float32:
 * 1e-4, which honest kernels of every built-in task stay well inside
 * (docs/verifier.md has the measurements; KernelBench allows 1e-2); float64
 * 1e-6 (tasks that need float64 state tighter ones); half types 1e-2 (one
 * rounding to bfloat16 moves a value by up to 2^-8). */
static double dtype_default(enum pk_dtype d)
{
	switch (d) {
	case PK_FLOAT64:
		return 1e-6;
	case PK_FLOAT16:
	case PK_BFLOAT16:
		return 1e-2;
	default:
		return 1e-4;
	}
}

void pragma_tolerance_resolve(const struct pragma_task *t, int k, double atol_override, double rtol_override,
			      struct pragma_tolerance *tol)
{
	enum pk_dtype d = t->outputs[k].dtype;
	double def = dtype_default(d);

	memset(tol, 0, sizeof(*tol));
	tol->dtype = d;
	tol->norm = -1;
	if (!pragma_dtype_is_float(d)) {
		tol->exact = 1;
		tol->source = "exact for integers and bools";
		return;
	}
	tol->source = d == PK_FLOAT64 ? "float64 default" : d == PK_FLOAT32 ? "float32 default" : "half default";
	tol->rtol = def;
	tol->atol = def;
	tol->atol_rms = 1;
	if (t->rtol_stated) {
		tol->rtol = t->rtol;
		tol->source = "the task";
	}
	if (t->atol_stated) {
		tol->atol = t->atol;
		tol->atol_rms = !t->atol_abs;
		tol->source = "the task";
	}
	if (rtol_override >= 0) {
		tol->rtol = rtol_override;
		tol->source = "--atol/--rtol";
	}
	if (atol_override >= 0) {
		tol->atol = atol_override;
		tol->atol_rms = 0;
		tol->source = "--atol/--rtol";
	}
	if (tol->atol == 0 && tol->rtol == 0) {
		tol->exact = 1;
		return;
	}
	/* An output whose every element is within rtol of its reference is
	 * within rtol as a whole: the bound only limits the absolute slack. */
	tol->norm = t->norm_tol > 0 ? t->norm_tol : tol->rtol > 0 ? tol->rtol : -1;
}

const char *pragma_tolerance_str(const struct pragma_tolerance *tol, double rms, char *buf, size_t len)
{
	char a[96], nb[48];

	if (tol->exact) {
		snprintf(buf, len, "exact%s", tol->dtype == PK_BOOL ? " (bools: 0 or 1)" :
						!pragma_dtype_is_float(tol->dtype) ? " (integers)" : " (atol = rtol = 0)");
		return buf;
	}
	if (!tol->atol_rms)
		snprintf(a, sizeof(a), "atol %.3g (absolute)", tol->atol);
	else if (rms >= 0)
		snprintf(a, sizeof(a), "atol %.3g x RMS(ref) = %.3g", tol->atol, tol->atol * rms);
	else
		snprintf(a, sizeof(a), "atol %.3g x RMS(ref)", tol->atol);
	if (tol->norm >= 0)
		snprintf(nb, sizeof(nb), "norm-wise %.3g", tol->norm);
	else
		snprintf(nb, sizeof(nb), "no norm-wise bound");
	snprintf(buf, len, "rtol %.3g, %s, %s", tol->rtol, a, nb);
	return buf;
}

const char *pragma_task_tolerance_str(const struct pragma_task *t, char *buf, size_t len)
{
	size_t at = 0;
	int same = 1;
	struct pragma_tolerance first, tol;
	char rule[200];

	buf[0] = '\0';
	if (t->n_outputs <= 0)
		return buf;
	pragma_tolerance_resolve(t, 0, -1, -1, &first);
	for (int k = 1; k < t->n_outputs && same; k++) {
		pragma_tolerance_resolve(t, k, -1, -1, &tol);
		same = tol.exact == first.exact && tol.dtype == first.dtype && tol.rtol == first.rtol &&
		       tol.atol == first.atol && tol.atol_rms == first.atol_rms && tol.norm == first.norm;
	}
	if (same)
		return pragma_tolerance_str(&first, -1, buf, len);
	for (int k = 0; k < t->n_outputs && at < len; k++) {
		pragma_tolerance_resolve(t, k, -1, -1, &tol);
		at += (size_t)snprintf(buf + at, len - at, "%soutput[%d] %s: %s", k ? "; " : "", k, t->outputs[k].name,
				       pragma_tolerance_str(&tol, -1, rule, sizeof(rule)));
	}
	return buf;
}

/* Element i as a double, inlined for the common float types: the checks
 * read every element of outputs of up to hundreds of MB several times. */
static inline double elem(const struct pragma_tensor *t, int64_t i)
{
	switch (t->dtype) {
	case PK_FLOAT32:
		return ((const float *)t->data)[i];
	case PK_FLOAT64:
		return ((const double *)t->data)[i];
	default:
		return pragma_tensor_get(t, i);
	}
}

static inline void elem_set(struct pragma_tensor *t, int64_t i, double v)
{
	switch (t->dtype) {
	case PK_FLOAT32:
		((float *)t->data)[i] = (float)v;
		break;
	case PK_FLOAT64:
		((double *)t->data)[i] = v;
		break;
	default:
		pragma_tensor_set(t, i, v);
	}
}

/* RMS of the finite elements; *n_finite gets their count. */
static double finite_rms(const struct pragma_tensor *t, int64_t n, int64_t *n_finite)
{
	double ss = 0;
	int64_t nf = 0;

	for (int64_t i = 0; i < n; i++) {
		double w = elem(t, i);
		if (isfinite(w)) {
			ss += w * w;
			nf++;
		}
	}
	if (n_finite)
		*n_finite = nf;
	return nf ? sqrt(ss / (double)nf) : 0;
}

int pragma_compare(const struct pragma_tensor *got, const struct pragma_tensor *want,
		   const struct pragma_tolerance *tol, struct pragma_cmp *c)
{
	int is_float = pragma_dtype_is_float(want->dtype), exact = tol->exact || !is_float;
	const unsigned char *gp = got->data, *wp = want->data;
	size_t es = pragma_dtype_size(want->dtype);
	int64_t n = pragma_tensor_numel(want);
	double dd = 0, ww = 0, worst = 0, atol_eff, rtol = tol->rtol;

	memset(c, 0, sizeof(*c));
	c->first_bad = -1;
	c->worst = -1;
	if (got->dtype != want->dtype || got->ndim != want->ndim ||
	    memcmp(got->shape, want->shape, sizeof(int64_t) * (size_t)want->ndim) || got->nbytes != want->nbytes)
		return -1;
	c->n = n;
	/* The output's scale: RMS of the reference's finite elements. */
	if (is_float)
		c->rms = finite_rms(want, n, NULL);
	c->atol_eff = atol_eff = exact ? 0 : tol->atol_rms ? tol->atol * c->rms : tol->atol;
	/* Identical bytes are equal whatever the tolerance (and fast). */
	if (!want->nbytes || !memcmp(got->data, want->data, want->nbytes))
		return 0;
	for (int64_t i = 0; i < n; i++) {
		double g, w;
		int bad, poison = 0, nonfinite = 0, not_bool = 0;

		if (want->dtype == PK_BOOL) {
			/* As bools: one byte, 0 or 1. 255 is not "true". */
			unsigned gb = gp[i], wb = wp[i] != 0;
			bad = gb != wb;
			poison = bad && gb == PRAGMA_POISON_BOOL;
			not_bool = bad && !poison && gb > 1;
			g = gb;
			w = wb;
		} else if (!is_float) {
			bad = memcmp(gp + (size_t)i * es, wp + (size_t)i * es, es) != 0;
			if (!bad)
				continue;
			poison = is_poison(got, i);
			g = pragma_tensor_get(got, i);
			w = pragma_tensor_get(want, i);
		} else {
			g = elem(got, i);
			w = elem(want, i);
			if (__builtin_expect(isfinite(g) && isfinite(w), 1)) {
				/* The common case, kept short. */
				double d = fabs(g - w), allowed = exact ? 0 : atol_eff + rtol * fabs(w);
				dd += d * d;
				ww += w * w;
				if (d > c->max_abs_err)
					c->max_abs_err = d;
				if (d > c->max_rel_err * fabs(w) && w != 0)
					c->max_rel_err = d / fabs(w);
				if (d > worst * allowed) {
					worst = allowed > 0 ? d / allowed : INFINITY;
					c->worst = i;
					c->worst_got = g;
					c->worst_want = w;
				}
				if (__builtin_expect(d <= allowed, 1))
					continue;
				bad = 1;
			} else if (isnan(w)) {
				bad = !isnan(g);
			} else if (isinf(w)) {
				bad = g != w;
				poison = bad && is_poison(got, i);
			} else {
				/* w finite, g not: NaN/Inf, or the poison. The
				 * element nearest its bound is tracked above. */
				bad = 1;
				poison = is_poison(got, i);
				nonfinite = !poison;
			}
		}
		if (!bad)
			continue;
		/* The first bad element; a non-bool byte says most, so it wins. */
		if (c->first_bad < 0 || (not_bool && !c->not_bool)) {
			c->first_bad = i;
			c->got = g;
			c->want = w;
		}
		c->bad++;
		c->unwritten += poison;
		c->nonfinite += nonfinite;
		c->not_bool += not_bool;
	}
	if (is_float) {
		c->norm_err = ww > 0 ? sqrt(dd / ww) : dd > 0 ? INFINITY : 0;
		c->norm_bad = !exact && tol->norm >= 0 && c->norm_err > tol->norm;
	}
	return c->bad || c->norm_bad ? 1 : 0;
}

/* ---------------------------------------------------------- the audit */

const char *pragma_trivial_name(enum pragma_trivial a)
{
	static const char *const names[PRAGMA_TRIVIAL__COUNT] = { "an all-zero output", "the constant mean",
								  "the reference permuted",
								  "the reference x (1 + 10 rtol)" };
	return a >= 0 && a < PRAGMA_TRIVIAL__COUNT ? names[a] : "?";
}

static uint64_t gcd64(uint64_t a, uint64_t b)
{
	while (b) {
		uint64_t r = a % b;
		a = b;
		b = r;
	}
	return a;
}

/* Fill g with trivial answer `kind` for ref. Nonfinite reference elements
 * stay as they are: the question is whether the finite ones are checked. */
/* The permutation the audit applies: i -> (a i + b) mod m with a coprime to
 * m moves every structure (rows, strides, neighbours) without memory. Over
 * blocks of PERM_BLOCK elements, each block also reversed, so that the
 * gather reads whole cache lines (an element-wise one took seconds on a
 * 64 MB output, all cache misses); element-wise below two blocks. */
#define PERM_BLOCK 64

struct perm {
	uint64_t m, a, b;
};

static void perm_init(struct perm *p, uint64_t m)
{
	p->m = m;
	p->a = 1;
	p->b = 0;
	if (m < 2)
		return;
	p->a = ((uint64_t)((double)m * 0.6180339887498949) | 1) % m;
	while (p->a < 2 || gcd64(p->a, m) != 1)
		p->a++;
	p->b = m / 3;
}

static uint64_t perm_of(const struct perm *p, uint64_t i)
{
	return p->m < 2 ? 0 : (uint64_t)(((unsigned __int128)p->a * i + p->b) % p->m);
}

/* Where element i of the permuted answer comes from. */
static int64_t perm_src(const struct perm *pb, const struct perm *pe, int64_t n, int64_t i)
{
	int64_t nb = n / PERM_BLOCK, q = i / PERM_BLOCK;

	if (nb < 2)
		return (int64_t)perm_of(pe, (uint64_t)i);
	if (q >= nb) /* the tail, reversed */
		return nb * PERM_BLOCK + (n - 1 - i);
	return (int64_t)perm_of(pb, (uint64_t)q) * PERM_BLOCK + (PERM_BLOCK - 1 - i % PERM_BLOCK);
}

/* Fill g with trivial answer `kind` for ref. Nonfinite reference elements
 * stay as they are: the question is whether the finite ones are checked. */
static void trivial_fill(enum pragma_trivial kind, const struct pragma_tensor *ref, const struct pragma_tolerance *tol,
			 double mean, struct pragma_tensor *g)
{
	int is_float = pragma_dtype_is_float(ref->dtype);
	size_t es = pragma_dtype_size(ref->dtype);
	int64_t n = pragma_tensor_numel(ref);
	const unsigned char *rp = ref->data;
	unsigned char *gp = g->data;
	struct perm pb, pe;

	perm_init(&pb, (uint64_t)(n / PERM_BLOCK));
	perm_init(&pe, (uint64_t)n);
	for (int64_t i = 0; i < n; i++) {
		double w = elem(ref, i);

		if (is_float && !isfinite(w)) {
			memcpy(gp + (size_t)i * es, rp + (size_t)i * es, es);
			continue;
		}
		switch (kind) {
		case PRAGMA_TRIVIAL_ZEROS:
			elem_set(g, i, 0);
			break;
		case PRAGMA_TRIVIAL_MEAN:
			elem_set(g, i, mean);
			break;
		case PRAGMA_TRIVIAL_PERMUTED: {
			int64_t j = perm_src(&pb, &pe, n, i);
			double x = elem(ref, j);
			if (is_float && !isfinite(x))
				j = i;
			memcpy(gp + (size_t)i * es, rp + (size_t)j * es, es);
			break;
		}
		case PRAGMA_TRIVIAL_SCALED:
			if (is_float && !tol->exact)
				elem_set(g, i, w * (1 + 10 * tol->rtol));
			else
				memcpy(gp + (size_t)i * es, rp + (size_t)i * es, es);
			break;
		default:
			break;
		}
	}
}

static size_t addf(char *buf, size_t len, size_t at, const char *fmt, ...) __attribute__((format(printf, 4, 5)));
static size_t addf(char *buf, size_t len, size_t at, const char *fmt, ...)
{
	va_list ap;
	int n;

	if (at >= len)
		return at;
	va_start(ap, fmt);
	n = vsnprintf(buf + at, len - at, fmt, ap);
	va_end(ap);
	return n < 0 ? at : at + (size_t)n;
}

int pragma_tolerance_audit(const struct pragma_tensor *ref, const struct pragma_tolerance *tol,
			   struct pragma_audit *a, struct pragma_err *err)
{
	struct pragma_tensor g = PRAGMA_TENSOR_INIT;
	int64_t n = pragma_tensor_numel(ref), nf = 0;
	int is_float = pragma_dtype_is_float(ref->dtype), n_app = 0, n_pass = 0;
	double sum = 0, ss = 0, mean, minv = INFINITY, maxv = -INFINITY;
	size_t at = 0;

	memset(a, 0, sizeof(*a));
	if (pragma_tensor_alloc(&g, ref->dtype, ref->ndim, ref->shape, err) < 0)
		return -1;
	for (int64_t i = 0; i < n; i++) {
		double w = ref->dtype == PK_BOOL ? ((const unsigned char *)ref->data)[i] != 0 : elem(ref, i);
		if (!is_float || isfinite(w)) {
			sum += w;
			ss += w * w;
			nf++;
			minv = w < minv ? w : minv;
			maxv = w > maxv ? w : maxv;
		}
	}
	mean = nf ? sum / (double)nf : 0;
	if (!is_float)
		mean = ref->dtype == PK_BOOL ? (mean >= 0.5) : nearbyint(mean);
	a->rms = nf ? sqrt(ss / (double)nf) : 0;
	a->atol_eff = tol->exact ? 0 : tol->atol_rms ? tol->atol * a->rms : tol->atol;
	for (int k = 0; k < PRAGMA_TRIVIAL__COUNT; k++) {
		struct pragma_cmp c;
		char nb[96];

		trivial_fill((enum pragma_trivial)k, ref, tol, mean, &g);
		a->applicable[k] = g.nbytes && memcmp(g.data, ref->data, g.nbytes) != 0;
		if (!a->applicable[k])
			continue;
		n_app++;
		a->refused[k] = pragma_compare(&g, ref, tol, &c) == 1;
		a->norm_err[k] = c.norm_err;
		if (a->refused[k])
			continue;
		at = addf(a->why, sizeof(a->why), at, "%s%s passes (", n_pass++ ? "; " : "",
			  pragma_trivial_name((enum pragma_trivial)k));
		if (tol->norm >= 0)
			snprintf(nb, sizeof(nb), "norm-wise error %.3g, bound %.3g", c.norm_err, tol->norm);
		else
			snprintf(nb, sizeof(nb), "norm-wise error %.3g, no bound", c.norm_err);
		if (k == PRAGMA_TRIVIAL_ZEROS)
			at = addf(a->why, sizeof(a->why), at, "the largest |ref| is %.3g, the absolute tolerance %.3g; %s",
				  fmax(fabs(minv), fabs(maxv)), a->atol_eff, nb);
		else if (k == PRAGMA_TRIVIAL_SCALED)
			at = addf(a->why, sizeof(a->why), at, "%s; absolute tolerance %.3g", nb, a->atol_eff);
		else
			at = addf(a->why, sizeof(a->why), at, "the reference spans %.6g .. %.6g, the absolute tolerance is %.3g; %s",
				  minv, maxv, a->atol_eff, nb);
		at = addf(a->why, sizeof(a->why), at, ")");
	}
	a->discriminating = n_app > 0 && n_pass == 0;
	if (!n_app)
		snprintf(a->why, sizeof(a->why),
			 n == 0 ? "the output is empty" :
			 nf == 0 ? "the reference has no finite element: only its NaN/Inf pattern is checked" :
			 minv == 0 && maxv == 0 ? "the reference is all zeros: a kernel that writes nothing but zeros passes" :
			 n == 1 ? "a single element that scaling does not change" :
				  "the reference is constant: a kernel that writes that constant passes");
	pragma_tensor_release(&g);
	return 0;
}

int pragma_task_audit(const struct pragma_task *t, double atol_override, double rtol_override,
		      struct pragma_vout *outs, struct pragma_err *err)
{
	struct pragma_refset set;
	uint64_t seed = pragma_ref_seed(0);

	memset(outs, 0, sizeof(*outs) * (size_t)t->n_outputs);
	for (int k = 0; k < t->n_outputs; k++)
		pragma_tolerance_resolve(t, k, atol_override, rtol_override, &outs[k].tol);
	if (pragma_ref_ensure(t, &seed, 1, &set, err) < 0)
		return -1;
	for (int k = 0; k < t->n_outputs; k++) {
		struct pragma_tensor ref = PRAGMA_TENSOR_INIT;
		struct pragma_audit a;
		char p[4200];

		pragma_ref_output_path(&set, k, p, sizeof(p));
		if (pragma_npy_read(p, (int)t->outputs[k].dtype, &ref, err) < 0)
			return -1;
		if (pragma_tolerance_audit(&ref, &outs[k].tol, &a, err) < 0) {
			pragma_tensor_release(&ref);
			return -1;
		}
		pragma_tensor_release(&ref);
		outs[k].rms = a.rms;
		outs[k].atol_eff = a.atol_eff;
		outs[k].audited = 1;
		outs[k].discriminating = a.discriminating;
		for (int i = 0; i < PRAGMA_TRIVIAL__COUNT; i++) {
			outs[k].applicable |= (unsigned)a.applicable[i] << i;
			outs[k].refused |= (unsigned)a.refused[i] << i;
		}
		snprintf(outs[k].why, sizeof(outs[k].why), "%s", a.why);
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
