/*
 * Bandwidth roofs under the timing protocol (DESIGN 3.6).
 *
 * The microbenchmarks in measure.c find the highest bandwidth the memory
 * system gives (short windows, best of hundreds of runs): the right figure
 * for impossible_speed, the wrong one for "% of roof". A kernel is timed
 * differently: in pragma-harness, each call after a cache flush that leaves
 * the last-level cache full of dirty lines (they are written back while the
 * kernel runs), its outputs poisoned just before, all usable cores woken by
 * OpenMP. Under that protocol no kernel comes near the microbenchmarks' peak
 * (seen on a 2-vCPU Zen 4: 85 GB/s peak, every streaming task plateaued at
 * 28-40 GB/s). So the roof is measured the way kernels are: streaming
 * pk_forward kernels, compiled like candidates, timed by pragma-harness in
 * time mode with the cold flush, and their bytes counted the way a task's
 * minimal bytes are (inputs read once, outputs written once, no
 * write-allocate).
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "machine/machine_priv.h"
#include "pragma/build.h"
#include "pragma/fs.h"
#include "pragma/log.h"
#include "pragma/run.h"
#include "pragma/task.h"
#include "pragma/tensor.h"
#include "pragma/timing.h"

/* One source, one method per build (-DPRAGMA_ROOF_METHOD=k). Explicit
 * intrinsics: a plain copy loop would become a memcpy call, and glibc's
 * memcpy switches to non-temporal stores for large sizes. Work is split in
 * 64-float blocks so every thread's range is 64-byte aligned (the harness
 * aligns tensors to 64 bytes) and streaming stores may be used. */
static const char roof_src[] =
	"/* pragma's bandwidth-roof kernels (lib/machine/roofs.c) */\n"
	"#include <pragma/kernel.h>\n"
	"#include <immintrin.h>\n"
	"#include <omp.h>\n"
	"#include <stdint.h>\n"
	"#if defined(__AVX512F__)\n"
	"typedef __m512 V;\n"
	"#define W 16\n"
	"#define LD(p) _mm512_load_ps(p)\n"
	"#define ST(p, v) _mm512_store_ps(p, v)\n"
	"#define STU(p, v) _mm512_storeu_ps(p, v)\n"
	"#define NT(p, v) _mm512_stream_ps(p, v)\n"
	"#define ADD(a, b) _mm512_add_ps(a, b)\n"
	"#define MUL(a, b) _mm512_mul_ps(a, b)\n"
	"#define SET1(x) _mm512_set1_ps(x)\n"
	"#define ZERO() _mm512_setzero_ps()\n"
	"#elif defined(__AVX__)\n"
	"typedef __m256 V;\n"
	"#define W 8\n"
	"#define LD(p) _mm256_load_ps(p)\n"
	"#define ST(p, v) _mm256_store_ps(p, v)\n"
	"#define STU(p, v) _mm256_storeu_ps(p, v)\n"
	"#define NT(p, v) _mm256_stream_ps(p, v)\n"
	"#define ADD(a, b) _mm256_add_ps(a, b)\n"
	"#define MUL(a, b) _mm256_mul_ps(a, b)\n"
	"#define SET1(x) _mm256_set1_ps(x)\n"
	"#define ZERO() _mm256_setzero_ps()\n"
	"#else\n"
	"typedef __m128 V;\n"
	"#define W 4\n"
	"#define LD(p) _mm_load_ps(p)\n"
	"#define ST(p, v) _mm_store_ps(p, v)\n"
	"#define STU(p, v) _mm_storeu_ps(p, v)\n"
	"#define NT(p, v) _mm_stream_ps(p, v)\n"
	"#define ADD(a, b) _mm_add_ps(a, b)\n"
	"#define MUL(a, b) _mm_mul_ps(a, b)\n"
	"#define SET1(x) _mm_set1_ps(x)\n"
	"#define ZERO() _mm_setzero_ps()\n"
	"#endif\n"
	"#define BLK 64\n"
	"int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)\n"
	"{\n"
	"    const float *x = in[0].data, *y = n_in > 1 ? in[1].data : 0;\n"
	"    float *o = out[0].data;\n"
	"    int64_t n = in[0].shape[0], nb = n / BLK, tail = nb * BLK;\n"
	"    double total = 0;\n"
	"    (void)n_out;\n"
	"#pragma omp parallel reduction(+:total)\n"
	"    {\n"
	"        int t = omp_get_thread_num(), nt = omp_get_num_threads();\n"
	"        int64_t lo = nb * t / nt * BLK, hi = nb * (t + 1) / nt * BLK;\n"
	"#if PRAGMA_ROOF_METHOD == 1\n"
	"        V s0 = ZERO(), s1 = ZERO(), s2 = ZERO(), s3 = ZERO();\n"
	"        float part[W];\n"
	"        for (int64_t i = lo; i < hi; i += 4 * W) {\n"
	"            s0 = ADD(s0, LD(x + i)); s1 = ADD(s1, LD(x + i + W));\n"
	"            s2 = ADD(s2, LD(x + i + 2 * W)); s3 = ADD(s3, LD(x + i + 3 * W));\n"
	"        }\n"
	"        STU(part, ADD(ADD(s0, s1), ADD(s2, s3)));\n"
	"        for (int k = 0; k < W; k++) total += part[k];\n"
	"#elif PRAGMA_ROOF_METHOD == 2\n"
	"        for (int64_t i = lo; i < hi; i += 2 * W) { ST(o + i, LD(x + i)); ST(o + i + W, LD(x + i + W)); }\n"
	"#elif PRAGMA_ROOF_METHOD == 3\n"
	"        for (int64_t i = lo; i < hi; i += 2 * W) { NT(o + i, LD(x + i)); NT(o + i + W, LD(x + i + W)); }\n"
	"        _mm_sfence();\n"
	"#elif PRAGMA_ROOF_METHOD == 4\n"
	"        const V s = SET1(3.0f);\n"
	"        for (int64_t i = lo; i < hi; i += W) ST(o + i, ADD(LD(x + i), MUL(s, LD(y + i))));\n"
	"#else\n"
	"        const V s = SET1(3.0f);\n"
	"        for (int64_t i = lo; i < hi; i += 2 * W) {\n"
	"            NT(o + i, MUL(s, LD(x + i))); NT(o + i + W, MUL(s, LD(x + i + W)));\n"
	"        }\n"
	"        _mm_sfence();\n"
	"#endif\n"
	"    }\n"
	"    for (int64_t i = tail; i < n; i++) {\n"
	"#if PRAGMA_ROOF_METHOD == 1\n"
	"        total += x[i];\n"
	"#elif PRAGMA_ROOF_METHOD == 2 || PRAGMA_ROOF_METHOD == 3\n"
	"        o[i] = x[i];\n"
	"#elif PRAGMA_ROOF_METHOD == 4\n"
	"        o[i] = x[i] + 3.0f * y[i];\n"
	"#else\n"
	"        o[i] = 3.0f * x[i];\n"
	"#endif\n"
	"    }\n"
	"#if PRAGMA_ROOF_METHOD == 1\n"
	"    o[0] = (float)total;\n"
	"#else\n"
	"    (void)total;\n"
	"#endif\n"
	"    return 0;\n"
	"}\n";

struct method {
	const char *name, *what;
	int n_in, full_out;   /* inputs; output the size of the input (else 1 float) */
};

/* The order matters only for ties: the first best wins. */
static const struct method methods[] = {
	{ "read", "s = sum(x): read-only, one float out", 1, 0 },
	{ "copy", "y = x, ordinary stores", 1, 1 },
	{ "ntcopy", "y = x, non-temporal (streaming) stores", 1, 1 },
	{ "triad", "z = x + 3*y, ordinary stores", 2, 1 },
	{ "scale", "y = 3*x, non-temporal stores (a ReLU-like read+write)", 1, 1 },
};
#define N_METHODS ((int)(sizeof(methods) / sizeof(methods[0])))

#define ROOF_RUNS 2      /* harness runs per method, methods taking turns */
#define ROOF_WARMUP 2
#define ROOF_REPS 10
#define ROOF_MIN_ARRAY (64ull << 20)
#define ROOF_MAX_ARRAY (256ull << 20)

/* Bytes per array: 4x the last-level cache, 64-256 MiB. Like the tasks
 * kernels are judged on (KernelBench's CPU-sized problems move 50-200 MiB):
 * a roof taken on much larger arrays would hide the fixed cost of every
 * call (waking the threads, the write-back of the flushed cache). */
uint64_t pragma_machine_roof_array_bytes(uint64_t llc_bytes)
{
	uint64_t b = 4 * (llc_bytes ? llc_bytes : 32ull << 20);

	if (b < ROOF_MIN_ARRAY)
		b = ROOF_MIN_ARRAY;
	if (b > ROOF_MAX_ARRAY)
		b = ROOF_MAX_ARRAY;
	return b / 4096 * 4096;
}

static int write_input(const char *dir, int i, int64_t n, struct pragma_err *err)
{
	struct pragma_tensor t = PRAGMA_TENSOR_INIT;
	char path[4200];
	int ret;

	if (pragma_tensor_alloc(&t, PK_FLOAT32, 1, &n, err) < 0)
		return -1;
	float *f = t.data;
	for (int64_t k = 0; k < n; k++)   /* normal numbers, never 0: no shortcut for anyone */
		f[k] = (float)((k * 7 + i * 13) % 1021) * (1.0f / 1021) + 0.5f;
	snprintf(path, sizeof(path), "%s/in_%03d.npy", dir, i);
	ret = pragma_npy_write(path, &t, err);
	pragma_tensor_release(&t);
	return ret;
}

static int build_method(const char *src, int k, struct pragma_buf *so, struct pragma_err *err)
{
	char def[48];
	const char *flags[] = { def, NULL };
	struct pragma_build_opts bo = { .flags = flags };

	snprintf(def, sizeof(def), "-DPRAGMA_ROOF_METHOD=%d", k + 1);
	if (pragma_build_cached(src, &bo, so, err) < 0) {
		pragma_err_prefix(err, "building the %s roof kernel", methods[k].name);
		return -1;
	}
	return 0;
}

/* One harness run of method k: median and min of its timed calls. */
static int time_method(const char *so, int k, const char *data_dir, const char *work, int64_t n, double *median,
		       double *min, int *calls, struct pragma_err *err)
{
	struct pragma_tensor_spec in[2], out[1];
	struct pragma_task t;
	struct pragma_refset set;
	struct pragma_symbols syms = PRAGMA_SYMBOLS_INIT;
	struct pragma_run_result rr;
	struct pragma_stats st;
	const char *preload[16] = { NULL };
	int ret = -1;

	memset(&t, 0, sizeof(t));
	memset(in, 0, sizeof(in));
	memset(out, 0, sizeof(out));
	memset(&set, 0, sizeof(set));
	memset(&rr, 0, sizeof(rr));
	for (int i = 0; i < 2; i++) {
		snprintf(in[i].name, sizeof(in[i].name), "%c", "xy"[i]);
		snprintf(in[i].role, sizeof(in[i].role), "input");
		in[i].dtype = PK_FLOAT32;
		in[i].ndim = 1;
		in[i].shape[0] = n;
	}
	snprintf(out[0].name, sizeof(out[0].name), "out");
	snprintf(out[0].role, sizeof(out[0].role), "output");
	out[0].dtype = PK_FLOAT32;
	out[0].ndim = 1;
	out[0].shape[0] = methods[k].full_out ? n : 1;
	t.name = (char *)methods[k].name;
	t.inputs = in;
	t.n_inputs = methods[k].n_in;
	t.outputs = out;
	t.n_outputs = 1;
	snprintf(set.dir, sizeof(set.dir), "%s", data_dir);

	/* OpenMP initializes before the sandbox, as for every candidate. */
	if (pragma_symbols_read(so, &syms, err) < 0)
		goto out;
	pragma_symbols_preload(&syms, preload, 16);
	struct pragma_run_opts o = {
		.kernel_so = so, .task = &t, .sets = &set, .n_sets = 1, .work_dir = work, .time_mode = 1,
		.warmup = ROOF_WARMUP, .reps = ROOF_REPS, .cold = 1, .threads = 0, .timeout_ms = 120000,
		.sandbox = 1, .preload = preload,
	};
	if (pragma_run_kernel(&o, &rr, err) < 0)
		goto out;
	if (!rr.ok || rr.n_times < 1) {
		pragma_err_set(err, PRAGMA_E_ENV, "the %s roof kernel failed in pragma-harness: %s: %s", methods[k].name,
			       rr.status, rr.message);
		goto out;
	}
	pragma_stats_compute(rr.times_ms, rr.n_times, &st);
	*median = st.median;
	*min = st.min;
	*calls = st.count;
	ret = 0;
out:
	pragma_run_result_release(&rr);
	pragma_symbols_release(&syms);
	return ret;
}

int pragma_machine_measure_roofs(struct pragma_machine *m, struct pragma_err *err)
{
	struct pragma_buf cache = PRAGMA_BUF_INIT, dir = PRAGMA_BUF_INIT, src = PRAGMA_BUF_INIT;
	struct pragma_buf so[N_METHODS], work = PRAGMA_BUF_INIT;
	uint64_t bytes = pragma_machine_roof_array_bytes(m->llc_bytes);
	int64_t n = (int64_t)(bytes / sizeof(float));
	double best_med[N_METHODS], best_min[N_METHODS];
	int calls[N_METHODS], ret = -1;

	for (int k = 0; k < N_METHODS; k++) {
		pragma_buf_init(&so[k]);
		best_med[k] = INFINITY;
		best_min[k] = INFINITY;
		calls[k] = 0;
	}
	m->n_roofs = 0;
	m->roof_gbs = 0;
	m->roof_method[0] = '\0';
	m->roof_protocol[0] = '\0';
	if (pragma_cache_dir(&cache, err) < 0 || pragma_mkdtemp(cache.data, "roofs-", &dir, err) < 0)
		goto out;
	pragma_buf_addf(&src, "%s/roof_kernels.c", dir.data);
	if (pragma_write_file_atomic(src.data, roof_src, sizeof(roof_src) - 1, err) < 0)
		goto out;
	for (int k = 0; k < N_METHODS; k++)
		if (build_method(src.data, k, &so[k], err) < 0)
			goto out;
	if (write_input(dir.data, 0, n, err) < 0 || write_input(dir.data, 1, n, err) < 0) {
		pragma_err_hint(err, "the roof kernels need 2 x %llu MiB of inputs under the cache directory",
				(unsigned long long)(bytes >> 20));
		goto out;
	}
	/* Methods take turns, so a burst of noise costs one run of each, not
	 * every run of one; each keeps its best median. */
	for (int r = 0; r < ROOF_RUNS; r++)
		for (int k = 0; k < N_METHODS; k++) {
			double med, mn;
			int c;

			pragma_buf_reset(&work);
			pragma_buf_addf(&work, "%s/run-%s-%d", dir.data, methods[k].name, r);
			if (pragma_mkdir_p(work.data, 0755, err) < 0 ||
			    time_method(so[k].data, k, dir.data, work.data, n, &med, &mn, &c, err) < 0)
				goto out;
			if (med < best_med[k]) {
				best_med[k] = med;
				calls[k] = c;
			}
			best_min[k] = fmin(best_min[k], mn);
			pragma_rm_rf(work.data, NULL);
		}
	for (int k = 0; k < N_METHODS && k < PRAGMA_MACHINE_MAX_ROOFS; k++) {
		struct pragma_roof_method *rm = &m->roofs[m->n_roofs++];
		double b = (double)n * sizeof(float) * (methods[k].n_in + (methods[k].full_out ? 1 : 0)) +
			   (methods[k].full_out ? 0 : sizeof(float));

		memset(rm, 0, sizeof(*rm));
		snprintf(rm->name, sizeof(rm->name), "%s", methods[k].name);
		snprintf(rm->what, sizeof(rm->what), "%s", methods[k].what);
		rm->bytes = b;
		rm->median_ms = best_med[k];
		rm->min_ms = best_min[k];
		rm->calls = calls[k];
		rm->gbs = b / (best_med[k] * 1e6);
		if (rm->gbs > m->roof_gbs) {
			m->roof_gbs = rm->gbs;
			snprintf(m->roof_method, sizeof(m->roof_method), "%s", rm->name);
		}
		pragma_debug("roof %s: median %.3f ms, min %.3f ms for %.0f MB: %.1f GB/s", rm->name, rm->median_ms,
			     rm->min_ms, b / 1e6, rm->gbs);
	}
	snprintf(m->roof_protocol, sizeof(m->roof_protocol),
		 "pk_forward kernels timed in pragma-harness like candidates: cold cache (a %llu MiB buffer written "
		 "before every call), %d thread%s, float32 arrays of %llu MiB, median of %d calls, best of %d runs",
		 (unsigned long long)(pragma_flush_bytes() >> 20), m->cores, m->cores == 1 ? "" : "s",
		 (unsigned long long)(bytes >> 20), ROOF_REPS, ROOF_RUNS);
	m->roof_why[0] = '\0';
	if (m->roof_gbs > m->peak_gbs) {
		m->peak_gbs = m->roof_gbs;
		snprintf(m->peak_gbs_how, sizeof(m->peak_gbs_how), "the %s roof kernel under the timing protocol",
			 m->roof_method);
	}
	ret = 0;
out:
	if (ret < 0) {
		m->n_roofs = 0;
		m->roof_gbs = 0;
		m->roof_method[0] = '\0';
		snprintf(m->roof_why, sizeof(m->roof_why), "%.200s", err && err->msg[0] ? err->msg : "not measured");
	}
	if (dir.len)
		pragma_rm_rf(dir.data, NULL);
	for (int k = 0; k < N_METHODS; k++)
		pragma_buf_release(&so[k]);
	pragma_buf_release(&cache);
	pragma_buf_release(&dir);
	pragma_buf_release(&src);
	pragma_buf_release(&work);
	return ret;
}

double pragma_machine_bw_roof(const struct pragma_machine *m, int *fallback)
{
	if (fallback)
		*fallback = 0;
	if (!m)
		return 0;
	if (m->roof_gbs > 0)
		return m->roof_gbs;
	if (fallback && m->peak_gbs > 0)
		*fallback = 1;
	return m->peak_gbs;
}

double pragma_machine_bw_roof_for(const struct pragma_machine *m, double bytes, double out_bytes, const char **method,
				  int *fallback)
{
	double bw = pragma_machine_bw_roof(m, fallback);

	if (method)
		*method = m && m->roof_gbs > 0 ? m->roof_method : "peak";
	if (!m || m->roof_gbs <= 0 || !(bytes > 0) || !(out_bytes >= 0) || out_bytes * 8 >= bytes || out_bytes <= 0)
		return bw;
	for (int i = 0; i < m->n_roofs; i++)
		if (!strcmp(m->roofs[i].name, "read") && m->roofs[i].gbs > 0) {
			if (method)
				*method = "read";
			return m->roofs[i].gbs;
		}
	return bw;
}

void pragma_machine_roof_text(const struct pragma_machine *m, struct pragma_buf *out)
{
	if (m->roof_gbs > 0) {
		pragma_buf_addf(out, "%.1f GB/s reached by a streaming kernel under pragma's timing protocol (best of",
				m->roof_gbs);
		/* With what each kernel does: players could not tell whether
		 * "scale" used streaming stores, which decides what a kernel
		 * with them can reach. */
		for (int i = 0; i < m->n_roofs; i++)
			pragma_buf_addf(out, "%s %s %.1f%s%s%s", i ? "," : "", m->roofs[i].name, m->roofs[i].gbs,
					m->roofs[i].what[0] ? " (" : "", m->roofs[i].what, m->roofs[i].what[0] ? ")" : "");
		pragma_buf_adds(out, "; bytes = inputs read once + outputs written once, write-allocate not counted)");
	} else if (m->peak_gbs > 0) {
		pragma_buf_addf(out, "%.1f GB/s, the microbenchmark peak (the protocol roof was not measured%s%s): a "
				     "streaming kernel timed like candidates reaches less",
				m->peak_gbs, m->roof_why[0] ? ": " : "", m->roof_why);
	} else {
		pragma_buf_adds(out, "unknown (the machine's bandwidth is not measured)");
	}
}
