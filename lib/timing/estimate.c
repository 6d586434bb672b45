/*
 * Estimates and comparisons of timed sides (include/pragma/timing.h): a
 * side's time is the median of its timed calls; two sides compare by the
 * ratio of their medians, with a bootstrap interval that resamples whole
 * sessions, then whole rounds within them (a round's calls, and a
 * session's rounds, share the machine's state: they are not independent).
 *
 * Why the median (bench/estimators.sh, on this project's shared 2-core
 * machine at 6-8x load): the ratio of medians of the same kernel against
 * itself spread 7.7% run to run; the ratio of the fastest calls 19.8%, of
 * the medians of each round's fastest call 16.3%, of 10th percentiles
 * 26.4%. Interference only adds time, but on a saturated machine the
 * moments with every core free, which the fastest calls catch, come in
 * some runs and not in others; interleaved rounds expose both sides to the
 * same typical contention, which the median measures stably. On a quiet
 * machine they all agree.
 *
 * Why the interval is widened for few sessions: a process keeps where its
 * buffers landed in physical memory for its life, which moves a
 * memory-bound kernel's time by ~5% (docs/verifier.md), so sessions differ
 * by more than their rounds say. A bootstrap over a handful of sessions
 * cannot see that spread (over 3 sessions it draws from 10 combinations):
 * simulated with 5-8% process effects (bench/seq_verdicts.py), identical
 * kernels compared by the loop's adaptive session came out faster or
 * slower 19-22% of the time, and CI saw it; stretched, with sessions of 2
 * rounds, 6%, telling a 15% difference apart as often as before. The
 * interval is therefore stretched, on the log scale about the estimate,
 * by t(0.975, S-1) / 1.96 * sqrt(S / (S-1)) for S sessions: Student's t
 * for an interval resting on S clusters, and the bootstrap's (S-1)/S
 * variance shrinkage undone. Many short sessions keep it narrow.
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

double pragma_median(double *v, int n)
{
	if (n <= 0)
		return 0;
	qsort(v, (size_t)n, sizeof(double), cmp_double);
	return n % 2 ? v[n / 2] : (v[n / 2 - 1] + v[n / 2]) / 2;
}

double pragma_estimate(const struct pragma_side_times *t)
{
	double *v, m;

	if (!t || t->n_times <= 0)
		return 0;
	v = malloc(sizeof(double) * (size_t)t->n_times);
	memcpy(v, t->times_ms, sizeof(double) * (size_t)t->n_times);
	m = pragma_median(v, t->n_times);
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

/* Student's t, two-sided 95%, by degrees of freedom. */
static double t975(int df)
{
	static const double t[] = { 0, 12.706, 4.303, 3.182, 2.776, 2.571, 2.447, 2.365, 2.306, 2.262, 2.228,
				    2.201, 2.179, 2.160, 2.145, 2.131, 2.120, 2.110, 2.101, 2.093, 2.086,
				    2.080, 2.074, 2.069, 2.064, 2.060, 2.056, 2.052, 2.048, 2.045, 2.042 };

	if (df < 1)
		return t[1];
	if (df <= 30)
		return t[df];
	return df <= 40 ? 2.021 : df <= 60 ? 2.000 : df <= 120 ? 1.980 : 1.960;
}

double pragma_interval_stretch(int clusters)
{
	if (clusters < 2)
		return 1;
	return t975(clusters - 1) / 1.96 * sqrt((double)clusters / (clusters - 1));
}

/* Pocock's constant, two-sided 5% over K equally spaced looks: the one
 * boundary that holds the chance of any false verdict, over all looks, at
 * 5% (Pocock 1977; Jennison & Turnbull, Group Sequential Methods, table
 * 2.1). An adaptive comparison that stops as soon as its interval clears 1
 * would otherwise get K chances at the 5%. */
double pragma_looks_stretch(int looks)
{
	static const double c[] = { 1.960, 1.960, 2.178, 2.289, 2.361, 2.413, 2.453, 2.485, 2.512, 2.535, 2.555,
				    2.572, 2.588, 2.602, 2.614, 2.626, 2.637, 2.646, 2.656, 2.664, 2.672 };

	if (looks < 1)
		looks = 1;
	return (looks <= 20 ? c[looks] : 2.672) / 1.96;
}

/* Where each round's calls start in t->times_ms. */
static int *round_offsets(const struct pragma_side_times *t, int n)
{
	int *off = malloc(sizeof(int) * (size_t)(n + 1));

	off[0] = 0;
	for (int r = 0; r < n; r++)
		off[r + 1] = off[r] + t->round_count[r];
	return off;
}

void pragma_ratio_compute(const struct pragma_side_times *a, const struct pragma_side_times *b, double margin,
			  struct pragma_ratio *r)
{
	int n = a->n_rounds < b->n_rounds ? a->n_rounds : b->n_rounds;
	int *first, *count, *oa, *ob, n_sess = 0, cap_a, cap_b;
	double *ca, *cb, *boot, ea, eb;
	uint64_t seed = 0x9e3779b97f4a7c15ull;

	memset(r, 0, sizeof(*r));
	r->cmp = PRAGMA_CMP_SAME;
	if (margin <= 0)
		margin = PRAGMA_SAME_MARGIN;
	r->margin = margin;
	ea = pragma_estimate(a);
	eb = pragma_estimate(b);
	r->ratio = ea > 0 ? eb / ea : 0;
	r->lo = r->hi = r->ratio;
	if (n <= 0 || !a->round_count || !b->round_count)
		return;
	r->rounds = n;
	oa = round_offsets(a, n);
	ob = round_offsets(b, n);
	first = malloc(sizeof(int) * (size_t)n);
	count = malloc(sizeof(int) * (size_t)n);
	/* Rounds come in sessions (runs of one session's processes, in
	 * order): resample sessions, then rounds within each; without
	 * sessions, rounds alone. */
	for (int i = 0; i < n; i++) {
		int s = a->round_session ? a->round_session[i] : 0;
		if (i == 0 || s != (a->round_session ? a->round_session[i - 1] : 0)) {
			first[n_sess] = i;
			count[n_sess++] = 0;
		}
		count[n_sess - 1]++;
	}
	/* A resample draws n_sess sessions of up to n rounds of calls each. */
	cap_a = n_sess * oa[n] + 1;
	cap_b = n_sess * ob[n] + 1;
	ca = malloc(sizeof(double) * (size_t)cap_a);
	cb = malloc(sizeof(double) * (size_t)cap_b);
	boot = malloc(sizeof(double) * BOOTSTRAP);
	for (int k = 0; k < BOOTSTRAP; k++) {
		int ma = 0, mb = 0;
		for (int g = 0; g < n_sess; g++) {
			int s = n_sess > 1 ? (int)(next(&seed) % (uint64_t)n_sess) : g;
			for (int i = 0; i < count[s]; i++) {
				/* The same round on both sides: they were measured
				 * back to back. */
				int rd = first[s] + (int)(next(&seed) % (uint64_t)count[s]);
				for (int c = oa[rd]; c < oa[rd + 1] && ma < cap_a; c++)
					ca[ma++] = a->times_ms[c];
				for (int c = ob[rd]; c < ob[rd + 1] && mb < cap_b; c++)
					cb[mb++] = b->times_ms[c];
			}
		}
		double xa = pragma_median(ca, ma), xb = pragma_median(cb, mb);
		boot[k] = xa > 0 ? xb / xa : 0;
	}
	qsort(boot, BOOTSTRAP, sizeof(double), cmp_double);
	r->lo = boot[(int)(0.025 * (BOOTSTRAP - 1))];
	r->hi = boot[(int)(0.975 * (BOOTSTRAP - 1) + 0.5)];
	/* The interval of a median of few rounds can miss the point estimate
	 * by a hair (ties); it always contains it. */
	if (r->lo > r->ratio)
		r->lo = r->ratio;
	if (r->hi < r->ratio)
		r->hi = r->ratio;
	/* Few sessions: stretched (top of file). Without sessions the rounds
	 * are the clusters. */
	r->sessions = n_sess > 1 ? n_sess : n;
	r->looks = a->looks < b->looks ? a->looks : b->looks;
	if (r->looks < 1)
		r->looks = 1;
	r->stretch = pragma_interval_stretch(r->sessions) * pragma_looks_stretch(r->looks);
	if (r->ratio > 0 && r->lo > 0) {
		r->lo = r->ratio * pow(r->lo / r->ratio, r->stretch);
		r->hi = r->ratio * pow(r->hi / r->ratio, r->stretch);
	}
	if (r->lo > 1 && r->ratio >= 1 + margin)
		r->cmp = PRAGMA_CMP_FASTER;
	else if (r->hi < 1 && r->ratio <= 1 / (1 + margin))
		r->cmp = PRAGMA_CMP_SLOWER;
	free(oa);
	free(ob);
	free(first);
	free(count);
	free(ca);
	free(cb);
	free(boot);
}

/* One bound: two decimals, three where two would read 1.00 of a bound that
 * is not 1 (an interval that excludes 1 must not read as touching it). */
static void bound_str(double b, char *buf, size_t len)
{
	snprintf(buf, len, "%.2f", b);
	if (!strcmp(buf, "1.00") && fabs(b - 1) >= 0.0005)
		snprintf(buf, len, "%.3f", b);
}

const char *pragma_interval_str(double lo, double hi, char *buf, size_t len)
{
	char a[32], b[32];

	bound_str(lo, a, sizeof(a));
	bound_str(hi, b, sizeof(b));
	snprintf(buf, len, "%s–%s", a, b);
	return buf;
}

const char *pragma_ratio_str(const struct pragma_ratio *r, char *buf, size_t len)
{
	char iv[72];

	const char *what = r->cmp == PRAGMA_CMP_FASTER ? "faster" : r->cmp == PRAGMA_CMP_SLOWER ? "slower" :
			   r->lo >= 1 / (1 + r->margin) && r->hi <= 1 + r->margin ? "the same within the noise" :
										  "not distinguishable";
	snprintf(buf, len, "%.2fx [%s], %s", r->ratio, pragma_interval_str(r->lo, r->hi, iv, sizeof(iv)), what);
	return buf;
}
