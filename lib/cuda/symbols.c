/*
 * What a CUDA candidate may import (DESIGN 3.4, CUDA side). The object is
 * built with -cudart shared, so its imports are honest: the C basics
 * lib/build allows, the C++ runtime pieces nvcc's host stubs use, and the
 * CUDA runtime calls a kernel needs to launch work and manage scratch
 * memory. Other CUDA libraries (cuBLAS, cuDNN, cuFFT, ...) are the GPU's
 * BLAS: refused like BLAS on the CPU. So are calls that would break the
 * harness or the measurement: resetting the device, the profiler API,
 * inter-process handles, peer access, host memory registration.
 */
#include <stdio.h>
#include <string.h>

#include "cuda/cuda_int.h"
#include "pragma/cuda.h"

static int starts(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

/* The runtime API a kernel may call. */
static const char *const cuda_exact[] = {
	/* launching (nvcc's stubs and explicit launches) */
	"cudaLaunchKernel", "cudaLaunchKernel_ptsz", "cudaLaunchKernelExC", "cudaLaunchKernelExC_ptsz",
	"cudaLaunchCooperativeKernel", "cudaLaunchCooperativeKernel_ptsz", "cudaConfigureCall", "cudaSetupArgument",
	"cudaLaunch", "cudaFuncSetAttribute", "cudaFuncGetAttributes", "cudaFuncSetCacheConfig",
	"cudaFuncSetSharedMemConfig", "cudaGetFuncBySymbol", "cudaGetKernel",
	/* errors */
	"cudaGetLastError", "cudaPeekAtLastError", "cudaGetErrorString", "cudaGetErrorName",
	/* device facts */
	"cudaGetDevice", "cudaGetDeviceCount", "cudaGetDeviceProperties", "cudaGetDeviceProperties_v2",
	"cudaDeviceGetAttribute", "cudaDeviceGetLimit", "cudaDeviceGetCacheConfig", "cudaRuntimeGetVersion",
	"cudaDriverGetVersion", "cudaDeviceSetCacheConfig", "cudaDeviceGetStreamPriorityRange",
	/* scratch memory on the device */
	"cudaMalloc", "cudaFree", "cudaMallocAsync", "cudaMallocAsync_ptsz", "cudaFreeAsync", "cudaFreeAsync_ptsz",
	"cudaMallocPitch", "cudaMalloc3D", "cudaMemGetInfo",
	/* copies and fills (device data; symbols for constant memory) */
	"cudaMemcpy", "cudaMemcpy_ptds", "cudaMemcpyAsync", "cudaMemcpyAsync_ptsz", "cudaMemcpy2D",
	"cudaMemcpy2D_ptds", "cudaMemcpy2DAsync", "cudaMemcpy2DAsync_ptsz", "cudaMemset", "cudaMemset_ptds",
	"cudaMemsetAsync", "cudaMemsetAsync_ptsz", "cudaMemset2D", "cudaMemset2DAsync", "cudaMemcpyToSymbol",
	"cudaMemcpyToSymbol_ptds", "cudaMemcpyToSymbolAsync", "cudaMemcpyToSymbolAsync_ptsz", "cudaMemcpyFromSymbol",
	"cudaMemcpyFromSymbol_ptds", "cudaMemcpyFromSymbolAsync", "cudaMemcpyFromSymbolAsync_ptsz",
	"cudaGetSymbolAddress", "cudaGetSymbolSize",
	/* streams, events, graphs: all work must finish before pk_forward
	 * returns; the harness synchronizes the whole device to make sure */
	"cudaStreamCreate", "cudaStreamCreateWithFlags", "cudaStreamCreateWithPriority", "cudaStreamDestroy",
	"cudaStreamSynchronize", "cudaStreamSynchronize_ptsz", "cudaStreamWaitEvent", "cudaStreamWaitEvent_ptsz",
	"cudaStreamQuery", "cudaStreamQuery_ptsz", "cudaStreamBeginCapture", "cudaStreamBeginCapture_ptsz",
	"cudaStreamEndCapture", "cudaStreamEndCapture_ptsz", "cudaEventCreate", "cudaEventCreateWithFlags",
	"cudaEventDestroy", "cudaEventRecord", "cudaEventRecord_ptsz", "cudaEventRecordWithFlags",
	"cudaEventSynchronize", "cudaEventQuery", "cudaEventElapsedTime", "cudaDeviceSynchronize",
	"cudaGraphCreate", "cudaGraphInstantiate", "cudaGraphInstantiateWithFlags", "cudaGraphLaunch",
	"cudaGraphLaunch_ptsz", "cudaGraphExecDestroy", "cudaGraphDestroy",
	/* occupancy */
	"cudaOccupancyMaxActiveBlocksPerMultiprocessor", "cudaOccupancyMaxActiveBlocksPerMultiprocessorWithFlags",
	"cudaOccupancyMaxPotentialBlockSize", "cudaOccupancyAvailableDynamicSMemPerBlock",
	"cudaOccupancyMaxPotentialClusterSize", "cudaOccupancyMaxActiveClusters",
	NULL,
};

/* Named refusals, so the Conductor knows what to change. */
static const struct {
	const char *prefix, *why;
} cuda_refused[] = {
	{ "cublas", "is cuBLAS, the vendor BLAS (write the kernel yourself)" },
	{ "cublasLt", "is cuBLASLt, the vendor BLAS (write the kernel yourself)" },
	{ "cudnn", "is cuDNN, a vendor library (write the kernel yourself)" },
	{ "cufft", "is cuFFT, a vendor library (write the kernel yourself)" },
	{ "curand", "is cuRAND (kernels are deterministic)" },
	{ "cusparse", "is cuSPARSE, a vendor library (write the kernel yourself)" },
	{ "cusolver", "is cuSOLVER, a vendor library (write the kernel yourself)" },
	{ "cutensor", "is cuTENSOR, a vendor library (write the kernel yourself)" },
	{ "nccl", "is NCCL, a communication library" },
	{ "nvrtc", "compiles code at run time (NVRTC)" },
	{ "cuModule", "loads code at run time (driver API modules)" },
	{ "cuLibrary", "loads code at run time (driver API libraries)" },
	{ "cudaDeviceReset", "resets the device (destroying the harness's buffers)" },
	{ "cudaSetDevice", "chooses another device (the harness chose one; Thrust's algorithms call it: use CUB or "
			   "your own kernels)" },
	{ "cudaProfiler", "is the profiler API (pragma decides what is profiled)" },
	{ "cudaIpc", "shares memory with other processes" },
	{ "cudaDeviceEnablePeerAccess", "reaches into other GPUs (peer access)" },
	{ "cudaHostRegister", "registers host memory" },
	{ "cudaHostAlloc", "allocates pinned host memory (kernels work on device data)" },
	{ "cudaMallocHost", "allocates pinned host memory (kernels work on device data)" },
	{ "cudaMallocManaged", "allocates managed memory (kernels work on device data)" },
	{ "cudaDeviceSetLimit", "changes device limits" },
	{ "cudaLaunchHostFunc", "queues host callbacks (they can run after pk_forward returns)" },
	{ "cudaStreamAddCallback", "queues host callbacks (they can run after pk_forward returns)" },
	{ "cudaSetDeviceFlags", "changes device flags" },
	{ "cuGetProcAddress", "looks up driver entry points (code loaded at run time)" },
	{ "cudaGetDriverEntryPoint", "looks up driver entry points (code loaded at run time)" },
	{ NULL, NULL },
};

int pragma_cuda_symbol_allowed(const char *name, const char **why)
{
	static const char *const not_listed =
		"is not on the CUDA allow-list (launches, errors, device attributes, cudaMalloc/Free, copies and "
		"fills, streams, events, graphs, occupancy)";

	if (why)
		*why = NULL;
	/* nvcc's registration and launch stubs */
	if (starts(name, "__cuda") || starts(name, "__nv_") || starts(name, "__fatbinwrap"))
		return 1;
	for (int i = 0; cuda_exact[i]; i++)
		if (!strcmp(name, cuda_exact[i]))
			return 1;
	for (int i = 0; cuda_refused[i].prefix; i++)
		if (starts(name, cuda_refused[i].prefix)) {
			if (why)
				*why = cuda_refused[i].why;
			return 0;
		}
	if (why)
		*why = not_listed;
	return 0;
}

int pragma_cxx_symbol_allowed(const char *name)
{
	static const char *const exact[] = {
		"__gxx_personality_v0", "_Unwind_Resume", "__cxa_guard_acquire", "__cxa_guard_release",
		"__cxa_guard_abort", "__cxa_atexit", "__cxa_finalize", "__cxa_pure_virtual", "__cxa_deleted_virtual",
		"__cxa_allocate_exception", "__cxa_free_exception", "__cxa_throw", "__cxa_begin_catch",
		"__cxa_end_catch", "__cxa_rethrow", "__cxa_call_unexpected", "__cxa_thread_atexit_impl",
		"__dso_handle", "_ZSt9terminatev",
		/* operator new/delete in their usual forms */
		"_Znwm", "_Znam", "_ZdlPv", "_ZdaPv", "_ZdlPvm", "_ZdaPvm", "_ZnwmRKSt9nothrow_t", "_ZnamRKSt9nothrow_t",
		"_ZnwmSt11align_val_t", "_ZdlPvSt11align_val_t", "_ZdlPvmSt11align_val_t", "_ZnamSt11align_val_t",
		"_ZdaPvSt11align_val_t", "_ZdaPvmSt11align_val_t",
		NULL,
	};

	for (int i = 0; exact[i]; i++)
		if (!strcmp(name, exact[i]))
			return 1;
	/* std::__throw_bad_alloc() and friends; type info of the runtime's
	 * exception classes. */
	if (starts(name, "_ZSt") && strstr(name, "__throw_"))
		return 1;
	/* What header-only GPU libraries bring along on the host side: the
	 * static iostream initializer of <iostream> (CUB includes it; it
	 * opens nothing), std::string and the standard exception classes
	 * (Thrust reports CUDA errors with them). Streams and files stay out. */
	if (starts(name, "_ZNSt8ios_base4Init") || starts(name, "_ZNSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE") ||
	    starts(name, "_ZNKSt7__cxx1112basic_stringIcSt11char_traitsIcESaIcEE"))
		return 1;
	{
		static const char *const exc[] = { "9exception", "13runtime_error", "11logic_error", "12length_error",
						   "12out_of_range", "16invalid_argument", "12domain_error",
						   "11range_error", "14overflow_error", "15underflow_error", "9bad_alloc",
						   "20bad_array_new_length", "13bad_exception", NULL };
		for (int i = 0; exc[i]; i++) {
			size_t k = strlen(exc[i]);
			if ((starts(name, "_ZNSt") && !strncmp(name + 5, exc[i], k)) ||
			    (starts(name, "_ZNKSt") && !strncmp(name + 6, exc[i], k)) ||
			    (starts(name, "_ZTVSt") && !strncmp(name + 6, exc[i], k)))
				return 1;
		}
	}
	if (starts(name, "_ZTVN10__cxxabiv") || starts(name, "_ZTISt") || starts(name, "_ZTIN10__cxxabiv") ||
	    starts(name, "_ZTSSt"))
		return 1;
	return 0;
}

int pragma_cuda_library_allowed(const char *soname)
{
	if (starts(soname, "libcudart.so") || !strcmp(soname, "libstdc++.so.6") || !strcmp(soname, "libgcc_s.so.1") ||
	    !strcmp(soname, "libdl.so.2") || !strcmp(soname, "librt.so.1"))
		return 1;
	return pragma_library_allowed(soname);
}

static const char *describe(const char *name)
{
	const char *why = NULL;

	/* The CUDA side names its own refusals; C calls get lib/build's
	 * reason ("does file I/O", "starts processes"). */
	if (starts(name, "cu") || starts(name, "__cu") || starts(name, "nccl") || starts(name, "nvrtc")) {
		pragma_cuda_symbol_allowed(name, &why);
		return why ? why : "";
	}
	if (pragma_cxx_symbol_allowed(name))
		return "";
	if (!pragma_symbol_allowed(name, &why) && why && !strstr(why, "allow-list"))
		return why;
	if (starts(name, "_Z"))
		return "is C++ standard library beyond the runtime basics (iostreams, files, threads?)";
	return why ? why : "is not on the allow-list";
}

int pragma_cuda_symbols_check(const char *so_path, struct pragma_err *err)
{
	struct pragma_symbols s = PRAGMA_SYMBOLS_INIT;
	const char *first = NULL, *first_lib = NULL;
	int bad = 0, ret = -1;

	if (pragma_symbols_read(so_path, &s, err) < 0)
		return -1;
	for (int i = 0; i < s.n_needed; i++)
		if (!pragma_cuda_library_allowed(s.needed[i])) {
			first_lib = s.needed[i];
			break;
		}
	if (first_lib) {
		pragma_err_set(err, PRAGMA_E_NEGATIVE,
			       "the kernel links %s; CUDA kernels may use the CUDA runtime (libcudart), libc, libm and "
			       "the C++ runtime only",
			       first_lib);
		goto out;
	}
	for (int i = 0; i < s.n_imports; i++) {
		const char *n = s.imports[i];
		const char *why;
		if (pragma_cuda_symbol_allowed(n, NULL) || pragma_cxx_symbol_allowed(n) || pragma_symbol_allowed(n, &why))
			continue;
		if (!bad++)
			first = n;
	}
	if (bad) {
		pragma_err_set(err, PRAGMA_E_NEGATIVE, "the kernel imports %s, which %s", first, describe(first));
		if (bad > 1) {
			size_t l = strlen(err->msg);
			snprintf(err->msg + l, sizeof(err->msg) - l, " (and %d more forbidden imports)", bad - 1);
		}
		goto out;
	}
	ret = 0;
out:
	pragma_symbols_release(&s);
	return ret;
}
