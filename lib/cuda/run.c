/*
 * Running CUDA candidates: where the CUDA harness is, what it preloads, and
 * the limits a sandboxed run gets. The harness speaks the CPU harness's
 * protocol, so lib/sandbox/run.c drives it (pragma_run_opts.harness); these
 * helpers give that call its CUDA-specific inputs.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda/cuda_int.h"
#include "pragma/cuda.h"
#include "pragma/fs.h"
#include "pragma/run.h"

int pragma_cuda_harness_path(struct pragma_buf *out, struct pragma_err *err)
{
	struct pragma_buf exe = PRAGMA_BUF_INIT;
	const char *env = getenv("PRAGMA_CUDA_HARNESS");

	pragma_buf_reset(out);
	if (env && *env) {
		pragma_buf_adds(out, env);
	} else if (pragma_exe_dir(&exe) == 0) {
		pragma_buf_addf(out, "%s/pragma-cuda-harness", exe.data);
#ifdef PRAGMA_BUILD_DIR
		if (!pragma_path_exists(out->data)) {
			pragma_buf_reset(out);
			pragma_buf_addf(out, "%s/pragma-cuda-harness", PRAGMA_BUILD_DIR);
		}
#endif
	}
	pragma_buf_release(&exe);
	if (!out->len || access(out->data, X_OK) != 0) {
		pragma_err_set(err, PRAGMA_E_ENV, "cannot find pragma-cuda-harness (looked for %s)", out->data);
		pragma_err_hint(err, "it is built with nvcc when CMake finds one (cmake -DPRAGMA_NVCC=/path/to/nvcc); "
				     "or set PRAGMA_CUDA_HARNESS");
		return -1;
	}
	return 0;
}

const char *const *pragma_cuda_preload(void)
{
	static const char *const libs[] = { "libstdc++.so.6", "libgcc_s.so.1", "libm.so.6", NULL };

	return libs;
}

void pragma_cuda_run_limits(const struct pragma_run_opts *o, struct pragma_rlimits *l)
{
	pragma_run_default_limits(o, l);
	/* The CUDA runtime reserves terabytes of virtual address space for
	 * unified addressing: an address-space limit makes it fail to
	 * initialize. Host memory is bounded by the task's data instead
	 * (the harness holds inputs and outputs once per set). */
	l->address_space = 0;
	/* Device nodes, the driver's event fds and helper threads' files. */
	l->open_files += 256;
}
