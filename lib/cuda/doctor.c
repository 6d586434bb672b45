/*
 * What the GPU path needs, for `pragma doctor`: nvcc, the CUDA harness,
 * the CUDA runtime, a driver and a device, Nsight Compute and permission
 * to read the GPU's counters, and a CUDA build of torch for the baseline.
 * Each check says ok or warn (the GPU path is optional) and what to do.
 */
#include <stdarg.h>
#include <stdio.h>
#include <string.h>
#include <unistd.h>

#include "pragma/cuda.h"
#include "pragma/proc.h"

static void add(struct pragma_cuda_check *c, int *n, int cap, const char *name, const char *level, const char *hint,
		const char *fmt, ...) __attribute__((format(printf, 7, 8)));

static void add(struct pragma_cuda_check *c, int *n, int cap, const char *name, const char *level, const char *hint,
		const char *fmt, ...)
{
	va_list ap;

	if (*n >= cap)
		return;
	memset(&c[*n], 0, sizeof(c[*n]));
	snprintf(c[*n].name, sizeof(c[*n].name), "%s", name);
	snprintf(c[*n].level, sizeof(c[*n].level), "%s", level);
	snprintf(c[*n].hint, sizeof(c[*n].hint), "%s", hint ? hint : "");
	va_start(ap, fmt);
	vsnprintf(c[*n].detail, sizeof(c[*n].detail), fmt, ap);
	va_end(ap);
	(*n)++;
}

/* 1 when the driver restricts counters to admins and we are not root. */
static int counters_restricted(void)
{
	FILE *f = fopen("/proc/driver/nvidia/params", "r");
	char line[256];
	int restricted = 0;

	if (!f)
		return 0;
	while (fgets(line, sizeof(line), f))
		if (strstr(line, "RmProfilingAdminOnly: 1"))
			restricted = 1;
	fclose(f);
	return restricted && geteuid() != 0;
}

int pragma_cuda_doctor(struct pragma_cuda_check *c, int cap, int with_torch)
{
	struct pragma_cuda_toolkit tk;
	struct pragma_gpu_probe p;
	struct pragma_buf b = PRAGMA_BUF_INIT;
	struct pragma_err e = PRAGMA_ERR_INIT;
	int n = 0;

	if (pragma_cuda_toolkit_find(&tk, &e) == 0)
		add(c, &n, cap, "cuda nvcc", "ok", NULL, "%s (CUDA %s)", tk.nvcc, tk.version);
	else
		add(c, &n, cap, "cuda nvcc", "warn", "install the CUDA toolkit (or set PRAGMA_NVCC) for --backend cuda",
		    "not found: CUDA candidates cannot be built");
	if (pragma_cuda_harness_path(&b, &e) == 0)
		add(c, &n, cap, "cuda harness", "ok", NULL, "%s", b.data);
	else
		add(c, &n, cap, "cuda harness", "warn", e.hint, "%s", e.msg);
	pragma_gpu_probe(&p);
	if (p.cudart[0])
		add(c, &n, cap, "cuda runtime", "ok", NULL, "%s (runtime %d.%d)", p.cudart, p.runtime_version / 1000,
		    p.runtime_version % 1000 / 10);
	else
		add(c, &n, cap, "cuda runtime", "warn", p.hint, "%s", p.reason);
	if (p.n_devices > 0) {
		for (int i = 0; i < p.n_devices; i++) {
			const struct pragma_gpu_spec *s = pragma_gpu_spec_find(p.dev[i].name);
			add(c, &n, cap, "cuda device", "ok", NULL,
			    "%d: %s, sm_%d%d, %d SMs, %.1f GiB, driver %d.%d; peaks: %s", i, p.dev[i].name, p.dev[i].cc_major,
			    p.dev[i].cc_minor, p.dev[i].sms, p.dev[i].total_mem / 1073741824.0, p.driver_version / 1000,
			    p.driver_version % 1000 / 10, s ? s->name : "derived from clocks (not in pragma's table)");
		}
	} else {
		add(c, &n, cap, "cuda device", "warn", p.hint[0] ? p.hint : NULL,
		    "%s; CUDA candidates build and get static analysis (ptxas) here, then stop", p.reason);
	}
	if (pragma_ncu_find(&b)) {
		if (counters_restricted())
			add(c, &n, cap, "cuda ncu", "warn",
			    "ncu will fail with ERR_NVGPUCTRPERM: set the driver option "
			    "NVreg_RestrictProfilingToAdminUsers=0 (modprobe.d, then reload the driver) or run as root",
			    "%s; but the driver restricts GPU counters to admin users", b.data);
		else
			add(c, &n, cap, "cuda ncu", "ok", NULL, "%s", b.data);
	} else {
		add(c, &n, cap, "cuda ncu", "warn",
		    "install Nsight Compute (the CUDA toolkit's nsight-compute package) or set PRAGMA_NCU",
		    "not found: GPU profiles will have timing, ptxas and the roofline but no gpu.* counters");
	}
	if (with_torch) {
		char why[512];
		int ok = pragma_cuda_torch_available(why, sizeof(why));
		char *h = strstr(why, ". Hint:");
		if (h)
			h[1] = '\0';
		if (ok)
			add(c, &n, cap, "cuda torch", "ok", NULL, "%s", why);
		else
			add(c, &n, cap, "cuda torch", "warn",
			    "set PRAGMA_PYTHON to a Python whose torch has CUDA; without it KernelBench tasks on the GPU "
			    "have no PyTorch baseline",
			    "%.300s", why);
	}
	pragma_buf_release(&b);
	return n;
}
