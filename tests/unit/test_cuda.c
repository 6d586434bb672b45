/* lib/cuda: backends, the nvcc flag allow-list, the ptxas report parser,
 * the import allow-list, building real candidates with nvcc (skipped with a
 * reason where nvcc is absent), and the device probe (which on a machine
 * without a GPU must say "no CUDA device" and why). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "pragma_test.h"

#include "pragma/buf.h"
#include "pragma/build.h"
#include "pragma/cuda.h"
#include "pragma/fs.h"
#include "pragma/profile.h"
#include "pragma/refdata.h"
#include "pragma/run.h"
#include "pragma/task.h"

static char cache_dir[256];

static const char *data_path(const char *rel)
{
	static char path[4][4096];
	static int k;
	const char *data = getenv("PRAGMA_TEST_DATA");

	k = (k + 1) % 4;
	snprintf(path[k], sizeof(path[k]), "%s/%s", data ? data : PRAGMA_SOURCE_DIR "/tests", rel);
	return path[k];
}

static char *slurp(const char *rel)
{
	struct pragma_buf b = PRAGMA_BUF_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;

	if (pragma_read_file(data_path(rel), &b, 1 << 20, &err) < 0)
		fail_msg("%s: %s", rel, err.msg);
	return pragma_buf_detach(&b, NULL);
}

static int have_nvcc(void)
{
	struct pragma_cuda_toolkit tk;

	return pragma_cuda_toolkit_find(&tk, NULL) == 0;
}

/* ---- flags ---- */

static void test_flags_allowed(void **state)
{
	static const char *const ok[] = { "-O3", "-O0", "-arch=sm_80", "-arch=sm_90a", "--gpu-architecture=sm_100f",
					  "-lineinfo", "-maxrregcount=64", "--maxrregcount=255", "-DTILE=32", "-DUSE_WMMA",
					  "-UTILE", "-std=c++17", "-Xptxas=-v", "-Xptxas=-O3,-dlcm=ca",
					  "-Xptxas=--warn-on-spills", "-Xcompiler=-O3,-funroll-loops", "-restrict",
					  "--extra-device-vectorization", "--expt-relaxed-constexpr", "-Wno-deprecated-gpu-targets",
					  "-ftz=false", "-fmad=true", "--default-stream=per-thread", NULL };
	char why[320];

	(void)state;
	for (int i = 0; ok[i]; i++)
		if (pragma_nvcc_flag_check(ok[i], 0, why, sizeof(why)) != 0)
			fail_msg("%s refused: %s", ok[i], why);
}

static void test_flags_refused(void **state)
{
	static const struct {
		const char *flag, *why;
	} bad[] = {
		{ "-o", "output paths" },
		{ "-odir=/tmp", "output paths" },
		{ "-I/home", "reads and writes no files" },
		{ "-include=/cache/ref/out_000.npy", "reads and writes no files" },
		{ "--options-file=x", "reads and writes no files" },
		{ "-keep", "reads and writes no files" },
		{ "-lcublas", "libraries" },
		{ "-L/usr/lib", "libraries" },
		{ "-Xlinker=-rpath=/x", "libraries" },
		{ "-cudart=static", "libraries" },
		{ "-ccbin=/tmp/evil", "compiler tools" },
		{ "-rdc=true", "device link" },
		{ "-G", "unoptimized" },
		{ "-gencode=arch=compute_80,code=sm_80", "-arch=sm_NN" },
		{ "-arch=sm_80;rm", "one architecture" },
		{ "-arch=native", "one architecture" },
		{ "-maxrregcount=4", "16..255" },
		{ "-Xptxas=--output-file=/tmp/x", "ptxas options" },
		{ "-Xcompiler=-fplugin=/x.so", "C allow-list" },
		{ "-Xcompiler=-fno-PIC", "C allow-list" },
		{ "-DX=/etc/passwd", "NAME=VALUE" },
		{ "@flags.txt", "response files" },
		{ "kernel2.cu", "not an option" },
		{ "-Wl,-rpath,/x", "pass-through" },
		{ "-std=c++98", "c++11" },
		{ "-x=cu", "changes what pragma builds" },
		{ "-frobnicate", "allow-list" },
	};
	char why[320];

	(void)state;
	for (size_t i = 0; i < sizeof(bad) / sizeof(bad[0]); i++) {
		if (pragma_nvcc_flag_check(bad[i].flag, 1, why, sizeof(why)) == 0)
			fail_msg("%s allowed", bad[i].flag);
		if (!strstr(why, bad[i].why))
			fail_msg("%s: '%s' lacks '%s'", bad[i].flag, why, bad[i].why);
	}
}

static void test_fast_math(void **state)
{
	char why[320];
	struct pragma_flags f = PRAGMA_FLAGS_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;

	(void)state;
	assert_int_equal(pragma_nvcc_flag_check("--use_fast_math", 0, why, sizeof(why)), -1);
	assert_non_null(strstr(why, "tolerance"));
	assert_int_equal(pragma_nvcc_flag_check("--use_fast_math", 1, why, sizeof(why)), 0);
	assert_int_equal(pragma_nvcc_flag_check("-prec-div=false", 0, why, sizeof(why)), -1);
	assert_int_equal(pragma_nvcc_flag_check("-ftz=true", 1, why, sizeof(why)), 0);
	assert_false(pragma_cuda_fast_math_allowed(1e-4, 1e-4));
	assert_true(pragma_cuda_fast_math_allowed(1e-4, 1e-3));
	assert_true(pragma_cuda_fast_math_allowed(1e-2, 0));
	/* Nothing is appended when one flag of the text is refused. */
	assert_int_equal(pragma_nvcc_flags_add(&f, "-O3 --use_fast_math", 0, &err), -1);
	assert_int_equal(err.kind, PRAGMA_E_NEGATIVE);
	assert_int_equal(f.n, 0);
	pragma_flags_release(&f);
}

static void test_flags_text(void **state)
{
	struct pragma_flags f = PRAGMA_FLAGS_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	const char *src = "// pragma:flags -Xptxas -v -maxrregcount 32\n"
			  "#include <pragma/kernel.h>\n"
			  "  //pragma:flags   -arch sm_90a -DTILE=64\n"
			  "// pragma:flagsX -lcublas (not a flags line)\n"
			  "// pragma:tune TILE=32,64\n";

	(void)state;
	assert_int_equal(pragma_nvcc_flags_from_source(&f, src, strlen(src), 0, &err), 0);
	assert_int_equal(f.n, 4);
	assert_string_equal(f.v[0], "-Xptxas=-v");
	assert_string_equal(f.v[1], "-maxrregcount=32");
	assert_string_equal(f.v[2], "-arch=sm_90a");
	assert_string_equal(f.v[3], "-DTILE=64");
	pragma_flags_release(&f);
	assert_int_equal(pragma_nvcc_flags_add(&f, "-Xptxas", 0, &err), -1);
	assert_non_null(strstr(err.msg, "needs a value"));
	assert_int_equal(pragma_nvcc_flags_add(&f, "-Xcompiler -fopenmp,-O2", 0, &err), 0);
	assert_string_equal(f.v[0], "-Xcompiler=-fopenmp,-O2");
	pragma_flags_release(&f);
}

/* ---- ptxas ---- */

static void test_ptxas_sm80(void **state)
{
	struct pragma_ptxas_report r;
	struct pragma_profile p;
	char *text = slurp("cuda/ptxas/sm80_spills.txt");
	double v;

	(void)state;
	assert_int_equal(pragma_ptxas_parse(text, &r), 0);
	assert_int_equal(r.n, 2);
	assert_string_equal(r.k[0].name, "_Z5scalePffl");
	assert_string_equal(r.k[0].arch, "sm_80");
	assert_int_equal(r.k[0].registers, 8);
	assert_int_equal(r.k[0].cmem_bytes, 376);
	assert_string_equal(r.k[1].name, "_Z12matmul_tiledPKfS0_Pfi");
	assert_int_equal(r.k[1].registers, 24);
	assert_int_equal(r.k[1].barriers, 1);
	assert_int_equal(r.k[1].smem_bytes, 8320);
	assert_int_equal(r.k[1].stack_bytes, 8);
	assert_int_equal(r.k[1].spill_stores, 12);
	assert_int_equal(r.k[1].spill_loads, 12);
	assert_int_equal(r.n_warnings, 1);
	assert_non_null(strstr(r.warnings[0], "lower bound of 24"));
	pragma_profile_init(&p);
	pragma_ptxas_metrics(&r, &p);
	assert_true(pragma_profile_get(&p, "static.gpu_kernels", &v));
	assert_float_equal(v, 2, 0);
	assert_true(pragma_profile_get(&p, "static.gpu_registers", &v));
	assert_float_equal(v, 24, 0);
	assert_true(pragma_profile_get(&p, "static.gpu_smem_bytes", &v));
	assert_float_equal(v, 8320, 0);
	assert_true(pragma_profile_get(&p, "static.gpu_spill_bytes", &v));
	assert_float_equal(v, 24, 0);
	assert_true(p.n_notes >= 2);
	assert_non_null(strstr(p.notes[1], "matmul_tiled"));
	for (size_t i = 0; i < p.n; i++)
		assert_non_null(pragma_cuda_metric_def(p.metrics[i].name));
	pragma_profile_release(&p);
	pragma_ptxas_release(&r);
	free(text);
}

static void test_ptxas_sm90(void **state)
{
	struct pragma_ptxas_report r;
	char *text = slurp("cuda/ptxas/sm90.txt");

	(void)state;
	assert_int_equal(pragma_ptxas_parse(text, &r), 0);
	assert_int_equal(r.n, 2);
	/* No cmem in this release's line. */
	assert_int_equal(r.k[1].registers, 39);
	assert_int_equal(r.k[1].smem_bytes, 8320);
	assert_int_equal(r.k[1].cmem_bytes, 0);
	assert_string_equal(r.k[1].arch, "sm_90");
	pragma_ptxas_release(&r);
	free(text);
}

static void test_ptxas_old_multi_arch(void **state)
{
	struct pragma_ptxas_report r;
	struct pragma_profile p;
	char *text = slurp("cuda/ptxas/cuda11_multi_arch.txt");
	double v;

	(void)state;
	assert_int_equal(pragma_ptxas_parse(text, &r), 0);
	assert_int_equal(r.n, 3);
	/* A device function's frame belongs to no kernel. */
	assert_int_equal(r.k[0].stack_bytes, 0);
	assert_int_equal(r.k[0].registers, 16);
	assert_int_equal(r.k[0].gmem_bytes, 16);
	assert_int_equal(r.k[2].registers, 255);
	assert_int_equal(r.k[2].spill_stores, 40);
	assert_int_equal(r.k[2].stack_bytes, 48);
	/* Metrics cover the last architecture (sm_80) only. */
	pragma_profile_init(&p);
	pragma_ptxas_metrics(&r, &p);
	assert_true(pragma_profile_get(&p, "static.gpu_kernels", &v));
	assert_float_equal(v, 2, 0);
	assert_true(pragma_profile_get(&p, "static.gpu_registers", &v));
	assert_float_equal(v, 255, 0);
	assert_true(pragma_profile_get(&p, "static.gpu_spill_bytes", &v));
	assert_float_equal(v, 80, 0);
	pragma_profile_release(&p);
	pragma_ptxas_release(&r);
	free(text);

	/* Nothing to report. */
	assert_int_equal(pragma_ptxas_parse("nvcc warning : nothing\n", &r), 0);
	assert_int_equal(r.n, 0);
	pragma_profile_init(&p);
	pragma_ptxas_metrics(&r, &p);
	assert_int_equal(p.n, 0);
	assert_non_null(pragma_profile_why(&p, "static"));
	pragma_profile_release(&p);
	pragma_ptxas_release(&r);
}

/* ---- imports ---- */

static void test_symbols_lists(void **state)
{
	const char *why;

	(void)state;
	assert_true(pragma_cuda_symbol_allowed("__cudaRegisterFatBinary", &why));
	assert_true(pragma_cuda_symbol_allowed("__cudaPushCallConfiguration", &why));
	assert_true(pragma_cuda_symbol_allowed("cudaLaunchKernel", &why));
	assert_true(pragma_cuda_symbol_allowed("cudaMallocAsync", &why));
	assert_true(pragma_cuda_symbol_allowed("cudaFuncSetAttribute", &why));
	assert_false(pragma_cuda_symbol_allowed("cublasSgemm_v2", &why));
	assert_non_null(strstr(why, "cuBLAS"));
	assert_false(pragma_cuda_symbol_allowed("cudnnConvolutionForward", &why));
	assert_non_null(strstr(why, "cuDNN"));
	assert_false(pragma_cuda_symbol_allowed("cudaDeviceReset", &why));
	assert_false(pragma_cuda_symbol_allowed("cudaProfilerStart", &why));
	assert_non_null(strstr(why, "profiler"));
	assert_false(pragma_cuda_symbol_allowed("cudaIpcGetMemHandle", &why));
	assert_false(pragma_cuda_symbol_allowed("cudaLaunchHostFunc", &why));
	assert_false(pragma_cuda_symbol_allowed("cuModuleLoad", &why));
	assert_true(pragma_cxx_symbol_allowed("__gxx_personality_v0"));
	assert_true(pragma_cxx_symbol_allowed("_Znwm"));
	assert_true(pragma_cxx_symbol_allowed("_ZSt20__throw_length_errorPKc"));
	assert_false(pragma_cxx_symbol_allowed("_ZNSt14basic_ifstreamIcSt11char_traitsIcEEC1EPKcSt13_Ios_Openmode"));
	assert_true(pragma_cuda_library_allowed("libcudart.so.13"));
	assert_true(pragma_cuda_library_allowed("libstdc++.so.6"));
	assert_true(pragma_cuda_library_allowed("libm.so.6"));
	assert_false(pragma_cuda_library_allowed("libcublas.so.13"));
	assert_false(pragma_cuda_library_allowed("libcuda.so.1"));
}

/* ---- building with nvcc ---- */

static void build(const char *kernel, const char *flags, int confine, int fast_ok, struct pragma_buf *so,
		  struct pragma_buf *log, struct pragma_err *err, int *rc)
{
	struct pragma_flags f = PRAGMA_FLAGS_INIT;
	struct pragma_cuda_build_opts o = { 0 };
	struct pragma_buf src = PRAGMA_BUF_INIT;
	const char *path = data_path(kernel);

	if (pragma_read_file(path, &src, 1 << 20, err) < 0 ||
	    pragma_nvcc_flags_from_source(&f, src.data, src.len, fast_ok, err) < 0 ||
	    (flags && pragma_nvcc_flags_add(&f, flags, fast_ok, err) < 0)) {
		*rc = -2;
		goto out;
	}
	o.arch = "sm_80";
	o.flags = pragma_flags_argv(&f);
	o.confine = confine;
	*rc = pragma_cuda_build_cached(path, &o, so, log, err);
out:
	pragma_buf_release(&src);
	pragma_flags_release(&f);
}

static void test_build_good(void **state)
{
	struct pragma_buf so = PRAGMA_BUF_INIT, log = PRAGMA_BUF_INIT, log2 = PRAGMA_BUF_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_ptxas_report r;
	int rc;

	(void)state;
	if (!have_nvcc())
		skip_because("nvcc not found: CUDA candidates cannot be built here");
	build("cuda/kernels/vadd.cu", NULL, 1, 0, &so, &log, &err, &rc);
	if (rc)
		fail_msg("build: %s\n%s", err.msg, log.data);
	assert_true(pragma_path_exists(so.data));
	assert_non_null(strstr(so.data, "/cuda-"));
	assert_non_null(strstr(log.data, "Compiling entry function"));
	assert_int_equal(pragma_ptxas_parse(log.data, &r), 0);
	assert_int_equal(r.n, 1);
	assert_string_equal(r.k[0].arch, "sm_80");
	assert_true(r.k[0].registers > 0 && r.k[0].registers < 64);
	pragma_ptxas_release(&r);
	assert_int_equal(pragma_cuda_symbols_check(so.data, &err), 0);
	/* A cache hit keeps the log (the resource report survives). */
	build("cuda/kernels/vadd.cu", NULL, 1, 0, &so, &log2, &err, &rc);
	assert_int_equal(rc, 0);
	assert_string_equal(log.data, log2.data);
	/* Streams are allowed. */
	pragma_buf_reset(&log);
	build("cuda/kernels/vadd_streams.cu", NULL, 0, 0, &so, &log, &err, &rc);
	if (rc)
		fail_msg("build: %s\n%s", err.msg, log.data);
	assert_int_equal(pragma_cuda_symbols_check(so.data, &err), 0);
	pragma_buf_release(&so);
	pragma_buf_release(&log);
	pragma_buf_release(&log2);
}

static void test_build_spills(void **state)
{
	struct pragma_buf so = PRAGMA_BUF_INIT, log = PRAGMA_BUF_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_ptxas_report r;
	struct pragma_profile p;
	double v;
	int rc;

	(void)state;
	if (!have_nvcc())
		skip_because("nvcc not found: CUDA candidates cannot be built here");
	build("cuda/kernels/spills.cu", NULL, 0, 0, &so, &log, &err, &rc);
	if (rc)
		fail_msg("build: %s\n%s", err.msg, log.data);
	pragma_ptxas_parse(log.data, &r);
	pragma_profile_init(&p);
	pragma_ptxas_metrics(&r, &p);
	assert_true(pragma_profile_get(&p, "static.gpu_spill_bytes", &v));
	assert_true(v > 0);
	assert_true(pragma_profile_get(&p, "static.gpu_registers", &v));
	assert_true(v <= 24);
	pragma_profile_release(&p);
	pragma_ptxas_release(&r);
	pragma_buf_release(&so);
	pragma_buf_release(&log);
}

static void test_build_rejects(void **state)
{
	struct pragma_buf so = PRAGMA_BUF_INIT, log = PRAGMA_BUF_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	int rc;

	(void)state;
	if (!have_nvcc())
		skip_because("nvcc not found: CUDA candidates cannot be built here");
	/* A compile error names the line in kernel.cu, not the jail's copy. */
	build("cuda/kernels/compile_error.cu", NULL, 1, 0, &so, &log, &err, &rc);
	assert_int_equal(rc, -1);
	assert_int_equal(err.kind, PRAGMA_E_NEGATIVE);
	assert_non_null(strstr(err.msg, "undefined_variable"));
	assert_non_null(strstr(err.msg, "kernel.cu"));
	assert_null(strstr(err.msg, "/.nvcc-"));
	/* cuBLAS builds (the import stays unresolved) and is refused. */
	err = (struct pragma_err)PRAGMA_ERR_INIT;
	build("cuda/kernels/cublas.cu", NULL, 0, 0, &so, &log, &err, &rc);
	assert_int_equal(rc, 0);
	assert_int_equal(pragma_cuda_symbols_check(so.data, &err), -1);
	assert_int_equal(err.kind, PRAGMA_E_NEGATIVE);
	assert_non_null(strstr(err.msg, "cublas"));
	assert_non_null(strstr(err.msg, "cuBLAS"));
	/* Opening files from host code. */
	err = (struct pragma_err)PRAGMA_ERR_INIT;
	build("cuda/kernels/fopen.cu", NULL, 0, 0, &so, &log, &err, &rc);
	assert_int_equal(rc, 0);
	assert_int_equal(pragma_cuda_symbols_check(so.data, &err), -1);
	if (!strstr(err.msg, "fopen") && !strstr(err.msg, "fclose"))
		fail_msg("%s", err.msg);
	assert_non_null(strstr(err.msg, "more forbidden"));
	/* Fast math on a tight tolerance: refused before compiling. */
	err = (struct pragma_err)PRAGMA_ERR_INIT;
	build("cuda/kernels/fast_math.cu", NULL, 0, 0, &so, &log, &err, &rc);
	assert_int_equal(rc, -2);
	assert_non_null(strstr(err.msg, "--use_fast_math"));
	pragma_buf_release(&so);
	pragma_buf_release(&log);
}

/* ---- the import check on real nvcc output (issue 12) ---- */

/* Ordinary CUDA passes: a __device__ helper taking a reference (nvcc gives
 * it a host stub calling exit), templates, __forceinline__, __constant__,
 * shared memory, several kernels, __launch_bounds__, cooperative groups,
 * CUB. Built in the jail, as verify does. */
static void test_imports_ordinary(void **state)
{
	static const char *const ok[] = { "cuda/kernels/helper_relu.cu", "cuda/kernels/ordinary.cu",
					   "cuda/kernels/cub_vadd.cu", "cuda/kernels/relu.cu", NULL };
	struct pragma_buf so = PRAGMA_BUF_INIT, log = PRAGMA_BUF_INIT;
	struct pragma_symbols sy = PRAGMA_SYMBOLS_INIT;
	int rc;

	(void)state;
	if (!have_nvcc())
		skip(); /* nvcc not found: CUDA candidates cannot be built here */
	for (int i = 0; ok[i]; i++) {
		struct pragma_err err = PRAGMA_ERR_INIT;
		pragma_buf_reset(&log);
		build(ok[i], NULL, 1, 0, &so, &log, &err, &rc);
		if (rc)
			fail_msg("%s: build: %s\n%s", ok[i], err.msg, log.data);
		if (pragma_cuda_symbols_check(so.data, &err) != 0)
			fail_msg("%s refused: %s", ok[i], err.msg);
		/* Only the ABI is exported; the helper's stub is gone. */
		assert_int_equal(pragma_symbols_read(so.data, &sy, &err), 0);
		for (int k = 0; k < sy.n_imports; k++)
			if (!strcmp(sy.imports[k], "exit"))
				fail_msg("%s still imports exit", ok[i]);
		pragma_symbols_release(&sy);
	}
	pragma_buf_release(&so);
	pragma_buf_release(&log);
}

/* What must still be refused, each with its reason: the GPU's BLAS, run-time
 * loading, processes, files, resetting the device, and exit() written in
 * host code that pk_forward reaches (as opposed to nvcc's stubs). */
static void test_imports_refused(void **state)
{
	static const struct {
		const char *kernel, *symbol, *why;
	} bad[] = {
		{ "cuda/kernels/cublas.cu", "cublas", "cuBLAS" },
		{ "cuda/kernels/dlopen.cu", "dlopen", "loads code at run time" },
		{ "cuda/kernels/system.cu", "system", "starts processes" },
		{ "cuda/kernels/fopen.cu", "f", "does file I/O" },
		{ "cuda/kernels/device_reset.cu", "cudaDeviceReset", "resets the device" },
		{ "cuda/kernels/host_exit.cu", "exit", "ends the process" },
		{ "cuda/kernels/thrust_vadd.cu", "cudaSetDevice", "Thrust" },
		{ NULL, NULL, NULL },
	};
	struct pragma_buf so = PRAGMA_BUF_INIT, log = PRAGMA_BUF_INIT;
	int rc;

	(void)state;
	if (!have_nvcc())
		skip();
	for (int i = 0; bad[i].kernel; i++) {
		struct pragma_err err = PRAGMA_ERR_INIT;
		build(bad[i].kernel, NULL, 1, 0, &so, &log, &err, &rc);
		if (rc)
			fail_msg("%s: build: %s", bad[i].kernel, err.msg);
		if (pragma_cuda_symbols_check(so.data, &err) == 0)
			fail_msg("%s was allowed", bad[i].kernel);
		assert_int_equal(err.kind, PRAGMA_E_NEGATIVE);
		if (!strstr(err.msg, bad[i].symbol) || !strstr(err.msg, bad[i].why))
			fail_msg("%s: '%s' should name %s and '%s'", bad[i].kernel, err.msg, bad[i].symbol, bad[i].why);
	}
	pragma_buf_release(&so);
	pragma_buf_release(&log);
}

/* ---- the device ---- */

static void test_probe(void **state)
{
	struct pragma_gpu_probe p;
	struct pragma_err err = PRAGMA_ERR_INIT;

	(void)state;
	assert_int_equal(pragma_gpu_probe(&p), 0);
	if (p.n_devices > 0) {
		/* A GPU machine: the probe must describe it. */
		assert_true(p.dev[0].sms > 0);
		assert_true(p.dev[0].cc_major >= 5);
		assert_true(p.dev[0].name[0]);
		assert_int_equal(pragma_cuda_require_device(&err), 0);
		return;
	}
	assert_non_null(strstr(p.reason, "no CUDA device"));
	assert_true(p.hint[0]);
	assert_int_equal(pragma_cuda_require_device(&err), -1);
	assert_int_equal(err.kind, PRAGMA_E_ENV);
	assert_non_null(strstr(err.msg, "no CUDA device"));
	/* Without a device the build falls back to the paper's GPU. */
	if (!getenv("PRAGMA_CUDA_ARCH"))
		assert_string_equal(pragma_cuda_default_arch(), "sm_80");
}

static void test_harness_built(void **state)
{
	struct pragma_buf h = PRAGMA_BUF_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;

	(void)state;
	if (!have_nvcc())
		skip_because("nvcc not found: CUDA candidates cannot be built here");
	if (pragma_cuda_harness_path(&h, &err) < 0)
		fail_msg("%s (%s)", err.msg, err.hint);
	assert_int_equal(access(h.data, X_OK), 0);
	pragma_buf_release(&h);
}

/* The CUDA harness through lib/sandbox/run.c's protocol (pragma_run_opts.harness):
 * without a device it answers no_device on its result line; with one, the
 * kernel's outputs come back. */
static void test_harness_protocol(void **state)
{
	struct pragma_buf h = PRAGMA_BUF_INIT, so = PRAGMA_BUF_INIT, log = PRAGMA_BUF_INIT, work = PRAGMA_BUF_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_task t;
	struct pragma_refset set;
	struct pragma_run_opts ro = { 0 };
	struct pragma_run_result rr;
	struct pragma_rlimits lim;
	struct pragma_gpu_probe p;
	uint64_t seed = pragma_ref_seed(0);
	int rc;

	(void)state;
	if (!have_nvcc() || pragma_cuda_harness_path(&h, &err) < 0)
		skip_because(!have_nvcc() ? "nvcc not found: CUDA candidates cannot be built here" : "pragma-cuda-harness was not built");
	build("cuda/kernels/vadd.cu", NULL, 0, 0, &so, &log, &err, &rc);
	assert_int_equal(rc, 0);
	if (pragma_task_load(data_path("cuda/tasks/vadd"), NULL, 0, &t, &err) < 0 ||
	    pragma_ref_ensure(&t, &seed, 1, &set, &err) < 0)
		fail_msg("%s", err.msg);
	pragma_buf_addf(&work, "%s/run", cache_dir);
	ro.kernel_so = so.data;
	ro.task = &t;
	ro.sets = &set;
	ro.n_sets = 1;
	ro.work_dir = work.data;
	ro.timeout_ms = 60000;
	ro.sandbox = 1;
	ro.backend = &pragma_backend_cuda;
	ro.preload = pragma_cuda_preload();
	pragma_cuda_run_limits(&ro, &lim);
	assert_int_equal(lim.address_space, 0);
	ro.limits = &lim;
	assert_int_equal(pragma_run_kernel(&ro, &rr, &err), 0);
	pragma_gpu_probe(&p);
	if (p.n_devices > 0) {
		if (!rr.ok)
			fail_msg("%s: %s", rr.status, rr.message);
	} else {
		assert_false(rr.ok);
		assert_string_equal(rr.status, "no_device");
		assert_non_null(strstr(rr.message, "no CUDA device"));
	}
	pragma_run_result_release(&rr);

	/* A malformed request is the harness's error, on the same channel. */
	ro.n_sets = 0;
	assert_int_equal(pragma_run_kernel(&ro, &rr, &err), 0);
	assert_false(rr.ok);
	assert_string_equal(rr.status, "harness_error");
	pragma_run_result_release(&rr);
	pragma_task_release(&t);
	pragma_buf_release(&h);
	pragma_buf_release(&so);
	pragma_buf_release(&log);
	pragma_buf_release(&work);
}

static int setup(void **state)
{
	(void)state;
	snprintf(cache_dir, sizeof(cache_dir), "/tmp/pragma-test-cuda-XXXXXX");
	if (!mkdtemp(cache_dir))
		return -1;
	setenv("PRAGMA_CACHE_DIR", cache_dir, 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pragma_rm_rf(cache_dir, NULL);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_flags_allowed),
		cmocka_unit_test(test_flags_refused),	 cmocka_unit_test(test_fast_math),
		cmocka_unit_test(test_flags_text),	 cmocka_unit_test(test_ptxas_sm80),
		cmocka_unit_test(test_ptxas_sm90),	 cmocka_unit_test(test_ptxas_old_multi_arch),
		cmocka_unit_test(test_symbols_lists),	 cmocka_unit_test(test_build_good),
		cmocka_unit_test(test_build_spills),	 cmocka_unit_test(test_build_rejects),
		cmocka_unit_test(test_imports_ordinary), cmocka_unit_test(test_imports_refused),
		cmocka_unit_test(test_probe),		 cmocka_unit_test(test_harness_built),
		cmocka_unit_test(test_harness_protocol),
	};
	return pragma_run_tests(tests, setup, teardown);
}
