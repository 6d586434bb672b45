/*
 * The CPU backend: C kernels built with gcc or clang (-O3 -march=native
 * -fopenmp), the libc/libm/OpenMP import list, pragma-harness, the PyTorch
 * bridge or the task's C reference as the baseline, and the CPU collectors
 * (timing, perf, par, roofline, static, sim, mca).
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pragma/backend.h"
#include "pragma/build.h"
#include "pragma/cuda.h"
#include "pragma/diagnose.h"
#include "pragma/fs.h"
#include "pragma/machine.h"
#include "pragma/profile.h"
#include "pragma/run.h"
#include "pragma/timing.h"

static const char *default_cc(const char *compiler)
{
	if (compiler && *compiler)
		return compiler;
	return getenv("PRAGMA_CC") && *getenv("PRAGMA_CC") ? getenv("PRAGMA_CC") : "gcc";
}

static int cpu_require(struct pragma_err *err)
{
	(void)err;
	return 0;
}

static int cpu_peaks(struct pragma_peaks *pk, struct pragma_err *err)
{
	struct pragma_machine m;

	memset(pk, 0, sizeof(*pk));
	if (pragma_machine_load(&m, 0, err) < 0)
		return -1;
	pk->max_gbs = m.peak_gbs;
	pk->gflops = m.peak_gflops;
	pk->cache_bytes = m.llc_bytes;
	snprintf(pk->source, sizeof(pk->source), "measured by pragma machine%s%s", m.measured_at[0] ? " at " : "",
		 m.measured_at);
	return 0;
}

static const char *cpu_compiler_version(const char *compiler)
{
	return pragma_compiler_version(default_cc(compiler));
}

static int cpu_flags(struct pragma_flags *f, const char *src, size_t len, const char *extra, double atol, double rtol,
		     struct pragma_err *err)
{
	(void)atol;
	(void)rtol;
	if (pragma_flags_from_source(f, src, len, err) < 0)
		return -1;
	return extra ? pragma_flags_add(f, extra, err) : 0;
}

static int cpu_build(const char *src, const struct pragma_backend_build *b, struct pragma_buf *so_path,
		     struct pragma_buf *log, struct pragma_err *err)
{
	struct pragma_build_opts bo = { 0 };

	bo.compiler = b ? b->compiler : NULL;
	bo.flags = b ? b->flags : NULL;
	bo.confine = b ? b->confine : 0;
	return pragma_build_cached_log(src, &bo, so_path, log, err);
}

static int cpu_check_imports(const char *so_path, struct pragma_symbols *syms, struct pragma_err *err)
{
	if (pragma_symbols_read(so_path, syms, err) < 0)
		return -1;
	return pragma_symbols_check(syms, err);
}

static int cpu_preload(const struct pragma_symbols *syms, const char **out, int cap)
{
	return pragma_symbols_preload(syms, out, cap);
}

static int cpu_torch_script(struct pragma_buf *path, char *note, size_t len, struct pragma_err *err)
{
	if (note && len)
		note[0] = '\0';
	pragma_buf_reset(path);
	return pragma_data_path("bridge/pragma_bridge.py", path, err);
}

/* Debian's torch (1.13) has no torch.compile; a newer CPU torch would be
 * timed by the bridge the same way (lib/cuda/baseline.c says which). */
static json_t *cpu_second_baseline(const struct pragma_task *t, int n_sets, const struct pragma_timing_opts *o,
				   double cand_ms)
{
	(void)n_sets;
	(void)o;
	(void)cand_ms;
	return pragma_torch_compile_cpu_json(t);
}

static void cpu_prompt_vars(json_t *vars, const struct pragma_task *t, const struct pragma_machine *m,
			    double baseline_ms)
{
	struct pragma_buf hdr = PRAGMA_BUF_INIT, kh = PRAGMA_BUF_INIT;
	struct pragma_err e = PRAGMA_ERR_INIT;
	char cmd[256];

	(void)t;
	(void)m;
	(void)baseline_ms;
	if (pragma_data_path("include/pragma/kernel.h", &hdr, &e) == 0 &&
	    pragma_read_file(hdr.data, &kh, 1 << 20, &e) == 0)
		json_object_set_new(vars, "kernel_h", json_string(kh.data));
	snprintf(cmd, sizeof(cmd), "%s -O3 -march=native -fopenmp -fPIC -shared kernel.c -lm", default_cc(NULL));
	json_object_set_new(vars, "compile_cmd", json_string(cmd));
	json_object_set_new(vars, "backend", json_string("cpu"));
	pragma_buf_release(&hdr);
	pragma_buf_release(&kh);
}

const struct pragma_backend pragma_backend_cpu = {
	.name = "cpu",
	.ext = ".c",
	.lang = "c",
	.prompt_suffix = NULL,
	.raw_metric_prefix = "perf:",
	.collectors = PRAGMA_COL_CPU_ALL,
	.init_entries = 1, /* gcc's frame_dummy */
	.require = cpu_require,
	.doctor = NULL,
	.peaks = cpu_peaks,
	.compiler_version = cpu_compiler_version,
	.flags = cpu_flags,
	.build = cpu_build,
	.check_imports = cpu_check_imports,
	.compile_report = NULL,
	.compile_report_json = NULL,
	.harness = pragma_harness_path,
	.preload = cpu_preload,
	.limits = pragma_run_default_limits,
	.env = NULL,
	.torch_script = cpu_torch_script,
	.baseline = pragma_baseline_measure,
	.second_baseline = cpu_second_baseline,
	.profile = pragma_profile_run,
	.diagnose = pragma_diagnose,
	.prompt_vars = cpu_prompt_vars,
};
