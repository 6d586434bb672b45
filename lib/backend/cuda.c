/*
 * The CUDA backend: CUDA C kernels built with nvcc, the CUDA import list,
 * pragma-cuda-harness (the harness protocol with device memory and CUDA
 * events), PyTorch on the same GPU as the baseline, and the GPU collectors
 * (ptxas resources, CUDA-event timing, the GPU roofline, Nsight Compute).
 * The pieces live in lib/cuda; this file is the backend's face.
 */
#include <stdio.h>
#include <string.h>

#include "pragma/backend.h"
#include "pragma/build.h"
#include "pragma/cuda.h"
#include "pragma/diagnose.h"
#include "pragma/profile.h"
#include "pragma/run.h"

static int cuda_doctor(struct pragma_check *c, int cap)
{
	struct pragma_cuda_check cc[24];
	int n = pragma_cuda_doctor(cc, cap < 24 ? cap : 24, 1);

	/* The same fields, the same sizes (lib/cuda predates the interface). */
	_Static_assert(sizeof(cc[0].name) == sizeof(c[0].name) && sizeof(cc[0].level) == sizeof(c[0].level) &&
			       sizeof(cc[0].detail) == sizeof(c[0].detail) && sizeof(cc[0].hint) == sizeof(c[0].hint),
		       "pragma_cuda_check and pragma_check differ");
	for (int i = 0; i < n; i++) {
		memcpy(c[i].name, cc[i].name, sizeof(c[i].name));
		memcpy(c[i].level, cc[i].level, sizeof(c[i].level));
		memcpy(c[i].detail, cc[i].detail, sizeof(c[i].detail));
		memcpy(c[i].hint, cc[i].hint, sizeof(c[i].hint));
	}
	return n;
}

static int cuda_peaks(struct pragma_peaks *pk, struct pragma_err *err)
{
	struct pragma_gpu_model gm;

	memset(pk, 0, sizeof(*pk));
	if (pragma_gpu_model_load(0, &gm, err) < 0)
		return -1;
	pk->max_gbs = gm.peak_gbs;
	pk->gflops = gm.peak_fp32_gflops;
	pk->cache_bytes = gm.dev.l2_bytes > 0 ? (uint64_t)gm.dev.l2_bytes : 0;
	snprintf(pk->source, sizeof(pk->source), "%s", gm.peak_source);
	return 0;
}

static const char *cuda_compiler_version(const char *compiler)
{
	(void)compiler;
	return pragma_cuda_compiler_version();
}

static int cuda_flags(struct pragma_flags *f, const char *src, size_t len, const char *extra, double atol, double rtol,
		      struct pragma_err *err)
{
	int fast = pragma_cuda_fast_math_allowed(atol, rtol);

	if (pragma_nvcc_flags_from_source(f, src, len, fast, err) < 0)
		return -1;
	return extra ? pragma_nvcc_flags_add(f, extra, fast, err) : 0;
}

static int cuda_build(const char *src, const struct pragma_backend_build *b, struct pragma_buf *so_path,
		      struct pragma_buf *log, struct pragma_err *err)
{
	struct pragma_cuda_build_opts bo = { 0 };

	bo.flags = b ? b->flags : NULL;
	bo.confine = b ? b->confine : 0;
	return pragma_cuda_build_cached(src, &bo, so_path, log, err);
}

static int cuda_check_imports(const char *so_path, struct pragma_symbols *syms, struct pragma_err *err)
{
	if (pragma_symbols_read(so_path, syms, err) < 0)
		return -1;
	return pragma_cuda_symbols_check(so_path, err);
}

/* The C++ runtime nvcc's host code needs (the candidate's own needed
 * libraries are checked, not preloaded: libcudart comes with the harness). */
static int cuda_preload(const struct pragma_symbols *syms, const char **out, int cap)
{
	const char *const *libs = pragma_cuda_preload();
	int n = 0;

	(void)syms;
	for (; n < cap - 1 && libs[n]; n++)
		out[n] = libs[n];
	out[n] = NULL;
	return n;
}

static int cuda_torch_script(struct pragma_buf *path, char *note, size_t len, struct pragma_err *err)
{
	char why[512];

	if (note && len)
		note[0] = '\0';
	pragma_buf_reset(path);
	if (pragma_cuda_torch_available(why, sizeof(why)))
		return pragma_cuda_torch_script(path, err);
	if (note && len)
		snprintf(note, len, "the PyTorch baseline ran on the CPU: %.300s", why);
	return pragma_backend_cpu.torch_script(path, NULL, 0, err);
}

static void cuda_diagnose(const struct pragma_profile *p, const struct pragma_machine *m, struct pragma_diagnosis *d)
{
	(void)m; /* the CPU's model says nothing about the GPU */
	pragma_diagnose(p, NULL, d);
	pragma_cuda_diagnose(p, d);
}

static int cuda_profile(const struct pragma_profile_opts *o, struct pragma_profile *p, struct pragma_err *err)
{
	struct pragma_cuda_profile_opts co = { 0 };

	co.task = o->task;
	co.kernel_src = o->kernel_src;
	co.flags = o->flags;
	co.sets = o->sets;
	co.n_sets = o->n_sets;
	co.extra = o->extra;
	co.n_extra = o->n_extra;
	co.collectors = o->collectors;
	co.warmup = o->warmup;
	co.reps = o->reps;
	co.warm = o->warm;
	co.timeout_ms = o->timeout_ms;
	co.no_sandbox = o->no_sandbox;
	co.time_ms = o->time_ms;
	return pragma_cuda_profile_run(&co, p, err);
}

static void cuda_prompt_vars(json_t *vars, const struct pragma_task *t, const struct pragma_machine *m,
			     double baseline_ms)
{
	(void)m;
	pragma_cuda_prompt_vars(vars, t, baseline_ms);
}

/* No JIT cache writes (the sandbox forbids them anyway); modules load when
 * the kernel's fat binary registers, before the timed calls. */
static const char *const cuda_env[] = { "CUDA_CACHE_DISABLE=1", "CUDA_MODULE_LOADING=EAGER", NULL };

const struct pragma_backend pragma_backend_cuda = {
	.name = "cuda",
	.ext = ".cu",
	.lang = "cuda",
	.prompt_suffix = "_cuda",
	.raw_metric_prefix = "ncu:",
	.collectors = PRAGMA_COL_TIMING | PRAGMA_COL_STATIC | PRAGMA_COL_ROOFLINE | PRAGMA_COL_NCU,
	.init_entries = 2, /* frame_dummy and the fat binary's registration */
	.require = pragma_cuda_require_device,
	.doctor = cuda_doctor,
	.peaks = cuda_peaks,
	.compiler_version = cuda_compiler_version,
	.flags = cuda_flags,
	.build = cuda_build,
	.check_imports = cuda_check_imports,
	.compile_report = pragma_ptxas_text,
	.compile_report_json = pragma_ptxas_json,
	.harness = pragma_cuda_harness_path,
	.preload = cuda_preload,
	.limits = pragma_cuda_run_limits,
	.env = cuda_env,
	.torch_script = cuda_torch_script,
	.baseline = pragma_cuda_baseline_measure,
	.second_baseline = pragma_cuda_compile_baseline_json,
	.profile = cuda_profile,
	.diagnose = cuda_diagnose,
	.prompt_vars = cuda_prompt_vars,
};
