/*
 * Microbenchmarks for the machine's peaks (pragma_machine_measure).
 *
 * libpragma is built without -march: each kernel carries its own
 * target("...") attribute and is picked at run time with
 * __builtin_cpu_supports. The kernels are not sanitized (ASan builds would
 * otherwise measure ASan) and are optimized even in -O0 builds, so a debug
 * build does not cache peaks that are several times too low.
 *
 * Everything here is best-of many short runs: noise (other processes on a
 * shared machine) only ever makes a run slower, so the fastest run is the
 * closest to what the hardware can do, which is what a roofline and the
 * impossible_speed check need (DESIGN 3.4, 3.6). The FLOP/s peak also counts
 * CPU time rather than wall time, which a busy machine cannot inflate.
 */
#if !defined(__OPTIMIZE__) && defined(__GNUC__) && !defined(__clang__)
#pragma GCC optimize("O2")
#endif

#include <errno.h>
#include <math.h>
#include <omp.h>
#include <pthread.h>
#include <sched.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/mman.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

#include "machine/machine_priv.h"
#include "pragma/buf.h"
#include "pragma/fs.h"
#include "pragma/log.h"

#if defined(__x86_64__)
#include <immintrin.h>

#define KERNEL(isa) __attribute__((target(isa), no_sanitize("address", "undefined"), noinline))

enum isa { ISA_SSE, ISA_AVX2, ISA_AVX512 };
static const char *const isa_name[] = { "sse", "avx2", "avx512" };
static const int isa_lanes32[] = { 4, 8, 16 };   /* FP32 lanes per vector */

static double now_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

static double thread_cpu_s(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_THREAD_CPUTIME_ID, &ts);
	return (double)ts.tv_sec + 1e-9 * (double)ts.tv_nsec;
}

/* Keeps results alive: the compiler may not drop work whose result lands here. */
static volatile double sink;
/* Read at run time, so the kernels cannot be folded at compile time. The
 * recurrence c = c*a + b converges to 1 and never leaves the normal range
 * (denormals would slow the FMAs down). */
static volatile float fma_a = 0.5f, fma_b = 0.5f;

/* ---- FP32 FMA throughput ------------------------------------------------
 * NACC independent accumulator chains cover latency × throughput: Zen 4
 * needs 4 zmm (1 zmm FMA/cycle, latency 4) or 8 ymm, Intel with two 512-bit
 * FMA ports 8 zmm; 12 leaves margin and still fits the 16 ymm registers. */
#define NACC 12
#define REP12(X) X(0) X(1) X(2) X(3) X(4) X(5) X(6) X(7) X(8) X(9) X(10) X(11)

KERNEL("avx512f") static double fma_avx512(uint64_t n, float a, float b)
{
	const __m512 va = _mm512_set1_ps(a), vb = _mm512_set1_ps(b);
	float out[16];
	double s = 0;
#define D(k) __m512 c##k = _mm512_set1_ps(1.0f + 0.01f * (float)(k));
	REP12(D)
#undef D
	for (uint64_t i = 0; i < n; i++) {
#define S(k) c##k = _mm512_fmadd_ps(c##k, va, vb);
		REP12(S)
#undef S
	}
	c0 = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3)),
			   _mm512_add_ps(_mm512_add_ps(c4, c5), _mm512_add_ps(c6, c7)));
	c8 = _mm512_add_ps(_mm512_add_ps(c8, c9), _mm512_add_ps(c10, c11));
	_mm512_storeu_ps(out, _mm512_add_ps(c0, c8));
	for (int i = 0; i < 16; i++)
		s += out[i];
	return s;
}

KERNEL("avx2,fma") static double fma_avx2(uint64_t n, float a, float b)
{
	const __m256 va = _mm256_set1_ps(a), vb = _mm256_set1_ps(b);
	float out[8];
	double s = 0;
#define D(k) __m256 c##k = _mm256_set1_ps(1.0f + 0.01f * (float)(k));
	REP12(D)
#undef D
	for (uint64_t i = 0; i < n; i++) {
#define S(k) c##k = _mm256_fmadd_ps(c##k, va, vb);
		REP12(S)
#undef S
	}
	c0 = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c1), _mm256_add_ps(c2, c3)),
			   _mm256_add_ps(_mm256_add_ps(c4, c5), _mm256_add_ps(c6, c7)));
	c8 = _mm256_add_ps(_mm256_add_ps(c8, c9), _mm256_add_ps(c10, c11));
	_mm256_storeu_ps(out, _mm256_add_ps(c0, c8));
	for (int i = 0; i < 8; i++)
		s += out[i];
	return s;
}

/* No FMA: a multiply and an add per lane, the same 2 FLOPs. */
KERNEL("sse2") static double fma_sse(uint64_t n, float a, float b)
{
	const __m128 va = _mm_set1_ps(a), vb = _mm_set1_ps(b);
	float out[4];
	double s = 0;
#define D(k) __m128 c##k = _mm_set1_ps(1.0f + 0.01f * (float)(k));
	REP12(D)
#undef D
	for (uint64_t i = 0; i < n; i++) {
#define S(k) c##k = _mm_add_ps(_mm_mul_ps(c##k, va), vb);
		REP12(S)
#undef S
	}
	c0 = _mm_add_ps(_mm_add_ps(_mm_add_ps(c0, c1), _mm_add_ps(c2, c3)),
			_mm_add_ps(_mm_add_ps(c4, c5), _mm_add_ps(c6, c7)));
	c8 = _mm_add_ps(_mm_add_ps(c8, c9), _mm_add_ps(c10, c11));
	_mm_storeu_ps(out, _mm_add_ps(c0, c8));
	for (int i = 0; i < 4; i++)
		s += out[i];
	return s;
}

static double run_fma(enum isa isa, uint64_t n)
{
	switch (isa) {
	case ISA_AVX512: return fma_avx512(n, fma_a, fma_b);
	case ISA_AVX2: return fma_avx2(n, fma_a, fma_b);
	default: return fma_sse(n, fma_a, fma_b);
	}
}

/* Iterations for one run of about target_s seconds on one core (CPU time:
 * being preempted while calibrating must not shorten the runs). */
static uint64_t fma_calibrate(enum isa isa, double target_s)
{
	uint64_t n = 1 << 16;
	double dt;

	for (;;) {
		dt = 1e30;
		for (int r = 0; r < 2; r++) {
			double t0 = thread_cpu_s();
			sink += run_fma(isa, n);
			double t = thread_cpu_s() - t0;
			if (t < dt)
				dt = t;
		}
		if (dt >= 0.005 || n >= (1ull << 34))
			break;
		n *= 4;
	}
	n = (uint64_t)((double)n * target_s / (dt > 0 ? dt : 1e-9));
	return n < 1024 ? 1024 : n;
}

struct fma_result {
	double wall;   /* best GFLOP/s, a run lasting from the first start to the last end */
	double cpu;    /* best GFLOP/s, a run lasting the longest thread's CPU time */
};

/* reps runs of iters iterations on each of threads threads.
 *
 * The CPU-time rate is what the cores did while they ran: unlike the wall
 * rate it does not drop when another process takes turns on our CPUs, so
 * it finds the peak on a busy machine. It can read high only when threads
 * that share an FMA unit (SMT siblings) did not run at the same time: the
 * caller caps it. */
static struct fma_result fma_best(enum isa isa, int threads, uint64_t iters, int reps)
{
	double *t0 = calloc((size_t)threads, sizeof(double)), *t1 = calloc((size_t)threads, sizeof(double));
	double *cpu = calloc((size_t)threads, sizeof(double)), *res = calloc((size_t)threads, sizeof(double));
	const double flops_per_iter = 2.0 * NACC * isa_lanes32[isa];
	struct fma_result best = { 0, 0 };
	int nt = 1;

	if (!t0 || !t1 || !cpu || !res)
		goto out;
#pragma omp parallel num_threads(threads)
	{
		int t = omp_get_thread_num();

#pragma omp single
		nt = omp_get_num_threads();
		for (int r = 0; r < reps; r++) {
#pragma omp barrier
			double c0 = thread_cpu_s();
			t0[t] = now_s();
			res[t] += run_fma(isa, iters);
			t1[t] = now_s();
			cpu[t] = thread_cpu_s() - c0;
#pragma omp barrier
#pragma omp single
			{
				double lo = t0[0], hi = t1[0], c = cpu[0];

				for (int i = 1; i < nt; i++) {
					lo = t0[i] < lo ? t0[i] : lo;
					hi = t1[i] > hi ? t1[i] : hi;
					c = cpu[i] > c ? cpu[i] : c;
				}
				double flops = (double)nt * flops_per_iter * (double)iters;
				best.wall = fmax(best.wall, flops / (hi - lo) / 1e9);
				if (c > 0)
					best.cpu = fmax(best.cpu, flops / c / 1e9);
			}
		}
	}
	for (int i = 0; i < nt; i++)
		sink += res[i];
	pragma_debug("fma %s: %d thread(s) x %llu iterations, best of %d runs: %.1f GFLOP/s (wall), %.1f (CPU time)",
		     isa_name[isa], nt, (unsigned long long)iters, reps, best.wall, best.cpu);
out:
	free(t0);
	free(t1);
	free(cpu);
	free(res);
	return best;
}

/* ---- Memory bandwidth ---------------------------------------------------
 * Three methods, all usable cores, each thread on the part of the arrays it
 * first touched (its NUMA node):
 *   read   s += x[i]                      8 bytes per element
 *   triad  x[i] = y[i] + s*z[i]          24 bytes per element
 *   ntcopy z[i] = y[i], streaming stores 16 bytes per element
 * We count the bytes the program asks for (the STREAM convention): the
 * triad's write-allocate read of x is real DRAM traffic (32 bytes) but is
 * not counted, so the triad understates the bus; the read and the
 * non-temporal copy have no such hidden traffic, which is why the peak is
 * the best of the three.
 *
 * Short runs over a large footprint: the arrays are cut into BW_WINDOWS
 * windows and run r works on window r mod BW_WINDOWS, so the data a run
 * touches was last touched the whole rest of the footprint ago (well out of
 * any cache), while each run lasts only milliseconds. On a shared machine a
 * long pass is nearly always interrupted by another process, and its best
 * time is still the time of a machine shared; short runs give best-of a
 * chance to catch a moment when all our threads ran. Seen on a 2-vCPU
 * Zen 4 VM with a compiler running beside: whole passes over 3 x 512 MiB
 * read 21-35 GB/s; 32 MiB windows read 53-64 GB/s, the same over 128 MiB
 * as over 2 GiB arrays (so DRAM, not a cache), and non-temporal copies
 * 72-85 GB/s. */
enum { BW_READ, BW_TRIAD, BW_NTCOPY, BW_N };
static const double bw_bytes_per_elem[] = { 8, 24, 16 };

#define BW_BLOCK 64   /* elements: per-thread ranges start on 512-byte boundaries */

KERNEL("avx512f") static double read_avx512(const double *p, size_t n)
{
	__m512d s0 = _mm512_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
	double out[8], s = 0;

	for (size_t i = 0; i < n; i += 32) {
		s0 = _mm512_add_pd(s0, _mm512_load_pd(p + i));
		s1 = _mm512_add_pd(s1, _mm512_load_pd(p + i + 8));
		s2 = _mm512_add_pd(s2, _mm512_load_pd(p + i + 16));
		s3 = _mm512_add_pd(s3, _mm512_load_pd(p + i + 24));
	}
	_mm512_storeu_pd(out, _mm512_add_pd(_mm512_add_pd(s0, s1), _mm512_add_pd(s2, s3)));
	for (int i = 0; i < 8; i++)
		s += out[i];
	return s;
}

KERNEL("avx512f") static void triad_avx512(double *a, const double *b, const double *c, double s, size_t n)
{
	const __m512d vs = _mm512_set1_pd(s);

	for (size_t i = 0; i < n; i += 16) {
		_mm512_store_pd(a + i, _mm512_fmadd_pd(vs, _mm512_load_pd(c + i), _mm512_load_pd(b + i)));
		_mm512_store_pd(a + i + 8, _mm512_fmadd_pd(vs, _mm512_load_pd(c + i + 8), _mm512_load_pd(b + i + 8)));
	}
}

KERNEL("avx512f") static void ntcopy_avx512(double *dst, const double *src, size_t n)
{
	for (size_t i = 0; i < n; i += 32) {
		_mm512_stream_pd(dst + i, _mm512_load_pd(src + i));
		_mm512_stream_pd(dst + i + 8, _mm512_load_pd(src + i + 8));
		_mm512_stream_pd(dst + i + 16, _mm512_load_pd(src + i + 16));
		_mm512_stream_pd(dst + i + 24, _mm512_load_pd(src + i + 24));
	}
	_mm_sfence();
}

KERNEL("avx2,fma") static double read_avx2(const double *p, size_t n)
{
	__m256d s0 = _mm256_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
	double out[4], s = 0;

	for (size_t i = 0; i < n; i += 16) {
		s0 = _mm256_add_pd(s0, _mm256_load_pd(p + i));
		s1 = _mm256_add_pd(s1, _mm256_load_pd(p + i + 4));
		s2 = _mm256_add_pd(s2, _mm256_load_pd(p + i + 8));
		s3 = _mm256_add_pd(s3, _mm256_load_pd(p + i + 12));
	}
	_mm256_storeu_pd(out, _mm256_add_pd(_mm256_add_pd(s0, s1), _mm256_add_pd(s2, s3)));
	for (int i = 0; i < 4; i++)
		s += out[i];
	return s;
}

KERNEL("avx2,fma") static void triad_avx2(double *a, const double *b, const double *c, double s, size_t n)
{
	const __m256d vs = _mm256_set1_pd(s);

	for (size_t i = 0; i < n; i += 8) {
		_mm256_store_pd(a + i, _mm256_fmadd_pd(vs, _mm256_load_pd(c + i), _mm256_load_pd(b + i)));
		_mm256_store_pd(a + i + 4, _mm256_fmadd_pd(vs, _mm256_load_pd(c + i + 4), _mm256_load_pd(b + i + 4)));
	}
}

KERNEL("avx2,fma") static void ntcopy_avx2(double *dst, const double *src, size_t n)
{
	for (size_t i = 0; i < n; i += 16) {
		_mm256_stream_pd(dst + i, _mm256_load_pd(src + i));
		_mm256_stream_pd(dst + i + 4, _mm256_load_pd(src + i + 4));
		_mm256_stream_pd(dst + i + 8, _mm256_load_pd(src + i + 8));
		_mm256_stream_pd(dst + i + 12, _mm256_load_pd(src + i + 12));
	}
	_mm_sfence();
}

KERNEL("sse2") static double read_sse(const double *p, size_t n)
{
	__m128d s0 = _mm_setzero_pd(), s1 = s0, s2 = s0, s3 = s0;
	double out[2];

	for (size_t i = 0; i < n; i += 8) {
		s0 = _mm_add_pd(s0, _mm_load_pd(p + i));
		s1 = _mm_add_pd(s1, _mm_load_pd(p + i + 2));
		s2 = _mm_add_pd(s2, _mm_load_pd(p + i + 4));
		s3 = _mm_add_pd(s3, _mm_load_pd(p + i + 6));
	}
	_mm_storeu_pd(out, _mm_add_pd(_mm_add_pd(s0, s1), _mm_add_pd(s2, s3)));
	return out[0] + out[1];
}

KERNEL("sse2") static void triad_sse(double *a, const double *b, const double *c, double s, size_t n)
{
	const __m128d vs = _mm_set1_pd(s);

	for (size_t i = 0; i < n; i += 2)
		_mm_store_pd(a + i, _mm_add_pd(_mm_load_pd(b + i), _mm_mul_pd(vs, _mm_load_pd(c + i))));
}

KERNEL("sse2") static void ntcopy_sse(double *dst, const double *src, size_t n)
{
	for (size_t i = 0; i < n; i += 8) {
		_mm_stream_pd(dst + i, _mm_load_pd(src + i));
		_mm_stream_pd(dst + i + 2, _mm_load_pd(src + i + 2));
		_mm_stream_pd(dst + i + 4, _mm_load_pd(src + i + 4));
		_mm_stream_pd(dst + i + 6, _mm_load_pd(src + i + 6));
	}
	_mm_sfence();
}

static double bw_run(enum isa isa, int method, double *x, double *y, double *z, size_t n)
{
	switch (method) {
	case BW_READ:
		return isa == ISA_AVX512 ? read_avx512(x, n) : isa == ISA_AVX2 ? read_avx2(x, n) : read_sse(x, n);
	case BW_TRIAD:
		if (isa == ISA_AVX512)
			triad_avx512(x, y, z, 3.0, n);
		else if (isa == ISA_AVX2)
			triad_avx2(x, y, z, 3.0, n);
		else
			triad_sse(x, y, z, 3.0, n);
		return 0;
	default:
		if (isa == ISA_AVX512)
			ntcopy_avx512(z, y, n);
		else if (isa == ISA_AVX2)
			ntcopy_avx2(z, y, n);
		else
			ntcopy_sse(z, y, n);
		return 0;
	}
}

static uint64_t mem_available(void)
{
	struct pragma_buf b = PRAGMA_BUF_INIT;
	unsigned long long kb = 0;
	const char *p;

	if (pragma_read_file("/proc/meminfo", &b, 1 << 20, NULL) == 0 &&
	    (p = strstr(b.data, "MemAvailable:")))
		sscanf(p + 13, "%llu", &kb);
	pragma_buf_release(&b);
	return (uint64_t)kb << 10;
}

/* Bytes per array: at least 4x the last-level cache of the whole machine
 * (every instance: one per CCX on AMD) and at least 256 MiB, at most 1/8 of
 * the free memory each. A window is then last touched 7/8 of three arrays
 * ago: 28x the last-level cache or more. */
#define BW_MIN_ARRAY (256ull << 20)
#define BW_MAX_ARRAY (4ull << 30)

static size_t bw_array_bytes(const struct pragma_machine *m)
{
	uint64_t llc = m->llc_bytes ? m->llc_bytes : 32ull << 20, avail = mem_available();
	int shared = 0, level = 0;
	uint64_t instances, want, bytes;

	for (int i = 0; i < m->n_caches; i++)
		if (m->caches[i].level >= level && strcmp(m->caches[i].type, "Instruction")) {
			level = m->caches[i].level;
			shared = m->caches[i].shared_cpus;
		}
	instances = shared > 0 && m->online_cpus > shared ? (uint64_t)(m->online_cpus + shared - 1) / (uint64_t)shared : 1;
	want = 4 * llc * instances;
	if (want < BW_MIN_ARRAY)
		want = BW_MIN_ARRAY;
	if (want > BW_MAX_ARRAY)
		want = BW_MAX_ARRAY;
	bytes = want;
	if (avail && bytes > avail / 8) {
		bytes = avail / 8;
		pragma_warn("only %llu MiB of memory free: the bandwidth arrays (%llu MiB each, %llu wanted) may "
			    "partly fit in caches, so bandwidth may read high",
			    (unsigned long long)(avail >> 20), (unsigned long long)(bytes >> 20),
			    (unsigned long long)(want >> 20));
	}
	return (size_t)bytes;
}

static void *map_array(size_t bytes)
{
	void *p = mmap(NULL, bytes, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);

	if (p == MAP_FAILED)
		return NULL;
#ifdef MADV_HUGEPAGE
	madvise(p, bytes, MADV_HUGEPAGE);   /* fewer TLB misses: the best case, as a peak should be */
#endif
	return p;
}

#define BW_WINDOWS 8
#define BW_MIN_ROUNDS (2 * BW_WINDOWS)   /* every window twice (the check below needs it) */
#define BW_MAX_ROUNDS 400
#define BW_BUDGET_S 1.0

/* Thread t's share of window w: [*lo, *hi) in elements, BW_BLOCK-aligned. */
static void bw_range(size_t n, int w, int t, int nt, size_t *lo, size_t *hi)
{
	size_t nb = n / BW_BLOCK / BW_WINDOWS, base = nb * (size_t)w;

	*lo = (base + nb * (size_t)t / (size_t)nt) * BW_BLOCK;
	*hi = (base + nb * (size_t)(t + 1) / (size_t)nt) * BW_BLOCK;
}

static int bw_measure(const struct pragma_machine *m, enum isa isa, int threads, double best[BW_N],
		      struct pragma_err *err)
{
	size_t bytes = bw_array_bytes(m), n = bytes / sizeof(double) / (BW_BLOCK * BW_WINDOWS) * (BW_BLOCK * BW_WINDOWS);
	double *x = NULL, *y = NULL, *z = NULL, *t0 = NULL, *t1 = NULL, *sums = NULL;
	int *cpus = NULL, ncpus = 0, nt = 1, rounds = 0, stop = 0, ret = -1;
	cpu_set_t mask;

	bytes = n * sizeof(double);
	x = map_array(bytes);
	y = map_array(bytes);
	z = map_array(bytes);
	t0 = calloc((size_t)threads, sizeof(double));
	t1 = calloc((size_t)threads, sizeof(double));
	sums = calloc((size_t)threads, sizeof(double));
	cpus = calloc(CPU_SETSIZE, sizeof(int));
	if (!x || !y || !z || !t0 || !t1 || !sums || !cpus) {
		pragma_err_set(err, PRAGMA_E_ENV, "cannot allocate 3 x %zu MiB for the bandwidth benchmark",
			       bytes >> 20);
		pragma_err_hint(err, "free some memory, or run 'pragma machine --measure' when the machine is less busy");
		goto out;
	}
	/* Pin thread t to the t-th CPU we may use, so it stays near the pages it
	 * first touched; machines with more than CPU_SETSIZE CPUs run unpinned. */
	if (sched_getaffinity(0, sizeof(mask), &mask) == 0)
		for (int c = 0; c < CPU_SETSIZE; c++)
			if (CPU_ISSET(c, &mask))
				cpus[ncpus++] = c;
	for (int k = 0; k < BW_N; k++)
		best[k] = 0;

	double t_alloc = now_s(), start = 0;
#pragma omp parallel num_threads(threads)
	{
		int t = omp_get_thread_num(), pinned = 0;
		cpu_set_t old, pin;

#pragma omp single
		nt = omp_get_num_threads();
		if (ncpus && pthread_getaffinity_np(pthread_self(), sizeof(old), &old) == 0) {
			CPU_ZERO(&pin);
			CPU_SET(cpus[t % ncpus], &pin);
			pinned = pthread_setaffinity_np(pthread_self(), sizeof(pin), &pin) == 0;
		}
		for (int w = 0; w < BW_WINDOWS; w++) {   /* first touch: the pages this thread will use */
			size_t lo, hi;

			bw_range(n, w, t, nt, &lo, &hi);
			for (size_t i = lo; i < hi; i++) {
				x[i] = 1.0;
				y[i] = 2.0;
				z[i] = 0.5;
			}
		}
#pragma omp barrier
#pragma omp single
		start = now_s();
		/* Round 0 warms up (clocks, TLB) and is not counted. Methods take
		 * turns, so a burst of noise hits one run of each, not all runs of one. */
		for (int round = 0; !stop; round++) {
			size_t lo, hi;

			bw_range(n, round % BW_WINDOWS, t, nt, &lo, &hi);
			for (int k = 0; k < BW_N; k++) {
#pragma omp barrier
				t0[t] = now_s();
				sums[t] += bw_run(isa, k, x + lo, y + lo, z + lo, hi - lo);
				t1[t] = now_s();
#pragma omp barrier
#pragma omp single
				{
					double a = t0[0], b = t1[0];

					for (int i = 1; i < nt; i++) {
						a = t0[i] < a ? t0[i] : a;
						b = t1[i] > b ? t1[i] : b;
					}
					double gbs = bw_bytes_per_elem[k] * (double)(n / BW_WINDOWS) / (b - a) / 1e9;
					if (round > 0 && gbs > best[k])
						best[k] = gbs;
				}
			}
			/* One thread decides; the single's barrier publishes it to all. */
#pragma omp single
			{
				rounds = round;
				stop = rounds >= BW_MAX_ROUNDS || (rounds >= BW_MIN_ROUNDS && now_s() - start > BW_BUDGET_S);
			}
		}
		if (pinned)
			pthread_setaffinity_np(pthread_self(), sizeof(old), &old);
	}
	for (int i = 0; i < nt; i++)
		sink += sums[i];
	/* The kernels really ran: every window was visited twice or more, so z
	 * is a copy of y (2) and x = y + 3*2 = 8. */
	for (size_t i = 0; i < n; i += n / 2 - 1) {
		if (z[i] != 2.0 || x[i] != 8.0) {
			pragma_err_set(err, PRAGMA_E_INTERNAL,
				       "the bandwidth kernels computed wrong values (x[%zu]=%g, z[%zu]=%g): a pragma bug",
				       i, x[i], i, z[i]);
			goto out;
		}
	}
	pragma_debug("bandwidth (%s, %d threads, 3 x %zu MiB in %d windows, first touch %.2f s, %d rounds): "
		     "read %.1f, triad %.1f, ntcopy %.1f GB/s", isa_name[isa], nt, bytes >> 20, BW_WINDOWS,
		     start - t_alloc, rounds, best[BW_READ], best[BW_TRIAD], best[BW_NTCOPY]);
	ret = 0;
out:
	if (x)
		munmap(x, bytes);
	if (y)
		munmap(y, bytes);
	if (z)
		munmap(z, bytes);
	free(t0);
	free(t1);
	free(sums);
	free(cpus);
	return ret;
}

/* Physical cores among the CPUs we may use (SMT siblings share FMA units):
 * distinct thread_siblings_list values. 0 if unknown. */
static int physical_cores(void)
{
	char (*seen)[64] = NULL;
	int n = 0, cap = 0;
	cpu_set_t mask;

	if (sched_getaffinity(0, sizeof(mask), &mask) < 0)
		return 0;
	for (int c = 0; c < CPU_SETSIZE; c++) {
		struct pragma_buf path = PRAGMA_BUF_INIT, v = PRAGMA_BUF_INIT;
		int dup = 0;

		if (!CPU_ISSET(c, &mask))
			continue;
		pragma_buf_addf(&path, "/sys/devices/system/cpu/cpu%d/topology/thread_siblings_list", c);
		if (pragma_read_file(path.data, &v, 4096, NULL) < 0) {
			pragma_buf_release(&path);
			free(seen);
			return 0;
		}
		pragma_buf_rtrim(&v);
		for (int i = 0; i < n && !dup; i++)
			dup = !strncmp(seen[i], v.data, sizeof(seen[i]) - 1);
		if (!dup) {
			if (n == cap) {
				cap = cap ? 2 * cap : 64;
				seen = realloc(seen, (size_t)cap * sizeof(*seen));
				if (!seen)
					abort();
			}
			snprintf(seen[n++], sizeof(seen[0]), "%s", v.data);
		}
		pragma_buf_release(&path);
		pragma_buf_release(&v);
	}
	free(seen);
	return n;
}

/* CPU seconds all CPUs spent busy (steal included: another guest on our
 * vCPU), from /proc/stat; -1 if unreadable. */
static double system_busy_s(void)
{
	struct pragma_buf b = PRAGMA_BUF_INIT;
	unsigned long long v[8] = { 0 };
	double busy = -1;

	if (pragma_read_file("/proc/stat", &b, 1 << 22, NULL) == 0 &&
	    sscanf(b.data, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3],
		   &v[4], &v[5], &v[6], &v[7]) == 8)
		busy = (double)(v[0] + v[1] + v[2] + v[5] + v[6] + v[7]) / (double)sysconf(_SC_CLK_TCK);
	pragma_buf_release(&b);
	return busy;
}

static double self_cpu_s(void)
{
	struct rusage ru;

	getrusage(RUSAGE_SELF, &ru);
	return (double)ru.ru_utime.tv_sec + 1e-6 * (double)ru.ru_utime.tv_usec +
	       (double)ru.ru_stime.tv_sec + 1e-6 * (double)ru.ru_stime.tv_usec;
}

#define FMA_RUN_S 0.02      /* one run */
#define FMA_RUNS_1CORE 10
#define FMA_RUNS_ALL 20

int pragma_machine_measure(struct pragma_machine *m, struct pragma_err *err)
{
	int threads = m->cores > 0 ? m->cores : 1, phys = physical_cores(), n_isa = 0, best_isa;
	double bw[BW_N], g1[2] = { 0, 0 }, gn;
	double t_start = now_s(), busy0 = system_busy_s(), self0 = self_cpu_s();
	enum isa isas[2];
	uint64_t iters[2];
	time_t now;
	struct tm tm;

	__builtin_cpu_init();
	/* The widest ISA, and the next one down: where 512-bit code lowers the
	 * clock or has one FMA port (some Xeons), AVX2 can be the faster one. */
	if (__builtin_cpu_supports("avx512f"))
		isas[n_isa++] = ISA_AVX512;
	if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma"))
		isas[n_isa++] = ISA_AVX2;
	if (!n_isa)
		isas[n_isa++] = ISA_SSE;

	for (int i = 0; i < n_isa; i++) {
		iters[i] = fma_calibrate(isas[i], FMA_RUN_S);
		struct fma_result r = fma_best(isas[i], 1, iters[i], FMA_RUNS_1CORE);
		g1[i] = fmax(r.wall, r.cpu);
	}
	/* All cores with the ISA that won on one core; the wider one unless the
	 * narrower was clearly faster (on Zen 4 they tie and noise picks). */
	best_isa = n_isa > 1 && g1[1] > 1.03 * g1[0] ? 1 : 0;
	m->peak_gflops_1core = fmax(g1[0], g1[1]);
	gn = g1[best_isa];
	if (threads > 1) {
		struct fma_result r = fma_best(isas[best_isa], threads, iters[best_isa], FMA_RUNS_ALL);
		/* All cores never beat one core times the physical cores (all-core
		 * clocks are lower, SMT siblings share the FMA units). */
		double cap = g1[best_isa] * (phys > 0 && phys < threads ? phys : threads);

		gn = fmax(gn, fmax(r.wall, fmin(r.cpu, cap)));
	}
	m->peak_gflops = gn;
	snprintf(m->peak_isa, sizeof(m->peak_isa), "%s", isa_name[isas[best_isa]]);
	if (!(m->peak_gflops > 0))
		return pragma_err_set(err, PRAGMA_E_INTERNAL, "the FLOP/s benchmark did not run");

	if (bw_measure(m, isas[0], threads, bw, err) < 0)
		return -1;
	m->bw_read_gbs = bw[BW_READ];
	m->bw_triad_gbs = bw[BW_TRIAD];
	m->bw_ntcopy_gbs = bw[BW_NTCOPY];
	m->peak_gbs = fmax(fmax(bw[BW_READ], bw[BW_TRIAD]), bw[BW_NTCOPY]);
	snprintf(m->peak_gbs_how, sizeof(m->peak_gbs_how), "the %s microbenchmark (short windows, best of many runs)",
		 m->peak_gbs == bw[BW_NTCOPY] ? "non-temporal copy" : m->peak_gbs == bw[BW_READ] ? "read" : "triad");

	/* Say so when others were using the CPUs: bandwidth then reads low (the
	 * FLOP/s peak, counted in CPU time, holds up). */
	double wall = now_s() - t_start, busy1 = system_busy_s();
	if (busy0 >= 0 && busy1 >= 0 && wall > 0) {
		double others = (busy1 - busy0 - (self_cpu_s() - self0)) / wall;

		pragma_debug("measured in %.1f s; other processes kept %.2f CPUs busy meanwhile", wall, others);
		if (others > 0.25 * threads)
			pragma_warn("other processes kept %.1f of %d CPUs busy while the peaks were measured: "
				    "the bandwidth may read low ('pragma machine --measure' on a quieter "
				    "machine measures again)", others, m->online_cpus);
	}

	/* The roof prompts use: streaming kernels timed the way candidates are.
	 * Without it the roofline falls back to the microbenchmark peak, and
	 * says so. */
	struct pragma_err rerr = PRAGMA_ERR_INIT;
	if (pragma_machine_measure_roofs(m, &rerr) < 0)
		pragma_warn("the bandwidth roof under the timing protocol was not measured (%s); roofline fractions "
			    "use the microbenchmark peak, which kernels timed by pragma do not reach", rerr.msg);

	now = time(NULL);
	gmtime_r(&now, &tm);
	strftime(m->measured_at, sizeof(m->measured_at), "%Y-%m-%dT%H:%M:%SZ", &tm);
	m->measured = 1;
	return 0;
}

#else /* !__x86_64__ */

int pragma_machine_measure(struct pragma_machine *m, struct pragma_err *err)
{
	(void)m;
	pragma_err_set(err, PRAGMA_E_ENV, "measuring peak FLOP/s and bandwidth is implemented for x86-64 only");
	pragma_err_hint(err, "roofline fractions and the impossible_speed check need these peaks");
	return -1;
}

#endif
