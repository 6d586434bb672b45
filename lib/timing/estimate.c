/*
 * Estimates and comparisons of timed sides (include/pragma/timing.h): a
 * side's time is the median over rounds of each round's fastest call; two
 * sides compare by the ratio of their estimates, with a paired bootstrap
 * interval over their common rounds.
 */
#include <math.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pragma/timing.h"

#define BOOTSTRAP 2000

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

/* Median of v[0..n) (v is reordered). */
static double median(double *v, int n)
{
	if (n <= 0)
		return 0;
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

/* The estimate from round minima v[0..n) (reordered). */
static double estimate_of(double *v, int n)
{
	return median(v, n);
}

double pragma_estimate(const struct pragma_side_times *t)
{
	double *v;
	double m;

	if (!t || t->n_rounds <= 0)
		return 0;
	v = malloc(sizeof(double) * (size_t)t->n_rounds);
	memcpy(v, t->round_min, sizeof(double) * (size_t)t->n_rounds);
	m = estimate_of(v, t->n_rounds);
	free(v);
	return m;
}

/* xorshift64*: a fixed, portable sequence, so an interval is reproducible. */
static uint64_t next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

void pragma_ratio_compute(const struct pragma_side_times *a, const struct pragma_side_times *b, double margin,
			  struct pragma_ratio *r)
{
	int n = a->n_rounds < b->n_rounds ? a->n_rounds : b->n_rounds;
	double ea, eb, *ra, *rb, *boot;
	int *idx, *first, *count, n_sess = 0;
	uint64_t seed = 0x9e3779b97f4a7c15ull;

	memset(r, 0, sizeof(*r));
	r->cmp = PRAGMA_CMP_SAME;
	if (margin <= 0)
		margin = PRAGMA_SAME_MARGIN;
	r->margin = margin;
	if (n <= 0)
		return;
	/* A resample draws n_sess sessions, each of up to n rounds. */
	ra = malloc(sizeof(double) * (size_t)n * (size_t)n);
	rb = malloc(sizeof(double) * (size_t)n * (size_t)n);
	idx = malloc(sizeof(int) * (size_t)n * (size_t)n);
	first = malloc(sizeof(int) * (size_t)n);
	count = malloc(sizeof(int) * (size_t)n);
	boot = malloc(sizeof(double) * BOOTSTRAP);
	memcpy(ra, a->round_min, sizeof(double) * (size_t)n);
	memcpy(rb, b->round_min, sizeof(double) * (size_t)n);
	ea = estimate_of(ra, n);
	eb = estimate_of(rb, n);
	r->rounds = n;
	r->ratio = ea > 0 ? eb / ea : 0;
	/* Rounds come in sessions (runs of the same session's processes, in
	 * order): a session shares where its processes' memory landed, so the
	 * bootstrap resamples sessions, then rounds within each (two levels);
	 * without sessions, rounds alone. */
	for (int i = 0; i < n; i++) {
		int s = a->round_session ? a->round_session[i] : 0;
		if (i == 0 || s != (a->round_session ? a->round_session[i - 1] : 0)) {
			first[n_sess] = i;
			count[n_sess++] = 0;
		}
		count[n_sess - 1]++;
	}
	for (int k = 0; k < BOOTSTRAP; k++) {
		int m = 0;
		/* Resample the same rounds on both sides: they were measured back
		 * to back and share the machine's state. */
		for (int g = 0; g < n_sess; g++) {
			int s = n_sess > 1 ? (int)(next(&seed) % (uint64_t)n_sess) : g;
			for (int i = 0; i < count[s]; i++)
				idx[m++] = first[s] + (int)(next(&seed) % (uint64_t)count[s]);
		}
		for (int i = 0; i < m; i++) {
			ra[i] = a->round_min[idx[i]];
			rb[i] = b->round_min[idx[i]];
		}
		double ma = estimate_of(ra, m), mb = estimate_of(rb, m);
		boot[k] = ma > 0 ? mb / ma : 0;
	}
	qsort(boot, BOOTSTRAP, sizeof(double), cmp_double);
	r->lo = boot[(int)(0.025 * (BOOTSTRAP - 1))];
	r->hi = boot[(int)(0.975 * (BOOTSTRAP - 1) + 0.5)];
	/* The interval of a statistic of few rounds can miss the point
	 * estimate by a hair (ties); it always contains it. */
	if (r->lo > r->ratio)
		r->lo = r->ratio;
	if (r->hi < r->ratio)
		r->hi = r->ratio;
	if (r->lo > 1 && r->ratio >= 1 + margin)
		r->cmp = PRAGMA_CMP_FASTER;
	else if (r->hi < 1 && r->ratio <= 1 / (1 + margin))
		r->cmp = PRAGMA_CMP_SLOWER;
	free(ra);
	free(rb);
	free(idx);
	free(first);
	free(count);
	free(boot);
}

const char *pragma_ratio_str(const struct pragma_ratio *r, char *buf, size_t len)
{
	const char *what = r->cmp == PRAGMA_CMP_FASTER ? "faster" : r->cmp == PRAGMA_CMP_SLOWER ? "slower" :
			   r->lo >= 1 / (1 + r->margin) && r->hi <= 1 + r->margin ? "the same within the noise" :
												  "not distinguishable";
	snprintf(buf, len, "%.2fx [%.2f–%.2f], %s", r->ratio, r->lo, r->hi, what);
	return buf;
}
