/*
 * pragma-cuda-harness: runs one CUDA kernel (a .so built by lib/cuda with
 * nvcc -shared -cudart shared) on the task's input sets and reports what
 * happened. The protocol — the request file, run/time/serve modes, the
 * checks around every call, outputs as .npy files, one JSON answer line —
 * is runtime/protocol.c's, the CPU harness's too, so lib/sandbox/run.c
 * drives it unchanged and lib/verify compares its outputs like any other.
 * This file is what is particular to a GPU:
 *
 *   - inputs are copied to the device once per set; outputs are device
 *     buffers, poisoned (NaN patterns of run.h) on the device before every
 *     call; pk_tensor.data holds device pointers;
 *   - every call is followed by cudaDeviceSynchronize() (the whole device,
 *     so work the kernel put on other streams counts) and a check of the
 *     launch and the sticky error; outputs are read back only after that;
 *   - timing: CUDA events around call + device synchronization, the L2
 *     flushed before each call by writing a buffer larger than it (2 x L2,
 *     at least the request's flush_bytes);
 *   - inputs are checked for writes by reading them back and hashing;
 *   - mode "profile": warm-up calls, then `profile_calls` calls between
 *     cudaProfilerStart/Stop, so that `ncu --profile-from-start off` sees
 *     the candidate's kernels of those calls and nothing else;
 *   - the sandbox (gpu_sandbox.h) is entered after CUDA is initialized.
 *
 * `pragma-cuda-harness probe` prints the devices as JSON.
 */
#include <cuda_profiler_api.h>
#include <cuda_runtime.h>
#include <dlfcn.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

extern "C" {
#include <jansson.h>

#include "pragma/tensor.h"
#include "../harness.h"
#include "../protocol.h"
#include "gpu_sandbox.h"
}

static struct gpu_sandbox sb;
static int dev;
static void **d_poison;                /* per output: the poison pattern */
static int n_poison;
static void *d_flush, *d_tmp;
static size_t flush_len, tmp_len;
static cudaEvent_t ev0, ev1;
static struct pragma_tensor scratch;   /* host buffer for read-backs */

static void sandbox_report(json_t *o)
{
	json_object_set_new(o, "sandbox",
			    json_pack("{s:b, s:b, s:b, s:s, s:i, s:b}", "enabled", sb.enabled, "seccomp", sb.seccomp,
				      "seccomp_locked", sb.seccomp_locked, "landlock", sb.landlock, "landlock_abi",
				      sb.landlock_abi, "profiler", sb.profiler));
}

/* A CUDA call of the harness's own: any failure is the harness's (or the
 * environment's), named. */
#define CK(call)                                                                                       \
	do {                                                                                           \
		cudaError_t e_ = (call);                                                               \
		if (e_ != cudaSuccess)                                                                 \
			harness_fail("harness_error", "%s: %s (%s)", #call, cudaGetErrorString(e_), cudaGetErrorName(e_)); \
	} while (0)

/* An error the kernel caused, as a verdict category. */
static const char *kernel_status(cudaError_t e)
{
	switch (e) {
	case cudaErrorIllegalAddress:
	case cudaErrorMisalignedAddress:
	case cudaErrorInvalidAddressSpace:
	case cudaErrorInvalidPc:
	case cudaErrorHardwareStackError:
	case cudaErrorIllegalInstruction:
	case cudaErrorAssert:
	case cudaErrorLaunchFailure:
		return "crash";
	case cudaErrorLaunchTimeout:
		return "timeout";
	case cudaErrorMemoryAllocation:
		return "memory_limit";
	default:
		return "kernel_error";
	}
}

static const char *kernel_hint(cudaError_t e)
{
	switch (e) {
	case cudaErrorIllegalAddress:
		return "an out-of-bounds index or a host pointer used on the device; check the bounds of every access";
	case cudaErrorMisalignedAddress:
		return "a vector load/store (float4, ...) on an address not aligned to its size";
	case cudaErrorLaunchOutOfResources:
		return "too many registers or too much shared memory for the block size; use fewer threads per block "
		       "or -maxrregcount";
	case cudaErrorInvalidConfiguration:
		return "invalid grid or block dimensions (more than 1024 threads per block, a zero dimension, or too "
		       "much dynamic shared memory without cudaFuncSetAttribute)";
	case cudaErrorNoKernelImageForDevice:
	case cudaErrorInvalidKernelImage:
	case cudaErrorUnsupportedPtxVersion:
		return "the kernel was built for another GPU architecture (an -arch flag that does not match the device)";
	case cudaErrorMemoryAllocation:
		return "cudaMalloc failed: allocate less scratch memory";
	case cudaErrorAssert:
		return "a device-side assert() failed";
	default:
		return "check every launch with cudaGetLastError()";
	}
}

static void check_kernel_error(cudaError_t e, int set, const char *when)
{
	if (e == cudaSuccess)
		return;
	harness_fail(kernel_status(e), "CUDA error %s (%s) %s on input set %d (call %d): %s", cudaGetErrorName(e),
		     cudaGetErrorString(e), when, set, harness_calls(), kernel_hint(e));
}

static void *dalloc(size_t n, const char *what)
{
	void *p = NULL;
	cudaError_t e;

	if (!n)
		return NULL;
	e = cudaMalloc(&p, n);
	if (e != cudaSuccess)
		harness_fail("harness_error", "cudaMalloc of %zu bytes for %s: %s (the GPU's memory is too small for this "
					      "task, or another process holds it)", n, what, cudaGetErrorString(e));
	return p;
}

static json_t *device_json(int index)
{
	cudaDeviceProp p;
	int drv = 0, rt = 0;
	char arch[16];

	memset(&p, 0, sizeof(p));
	cudaGetDeviceProperties(&p, index);
	cudaDriverGetVersion(&drv);
	cudaRuntimeGetVersion(&rt);
	snprintf(arch, sizeof(arch), "sm_%d%d", p.major, p.minor);
	return json_pack("{s:i, s:s, s:s, s:i, s:I, s:I, s:I, s:i, s:i, s:i, s:i, s:i, s:i}", "index", index, "name",
			 p.name, "arch", arch, "sms", p.multiProcessorCount, "l2_bytes", (json_int_t)p.l2CacheSize,
			 "total_mem", (json_int_t)p.totalGlobalMem, "smem_per_block_optin",
			 (json_int_t)p.sharedMemPerBlockOptin, "regs_per_sm", p.regsPerMultiprocessor,
			 "max_threads_per_sm", p.maxThreadsPerMultiProcessor, "warp_size", p.warpSize, "driver", drv,
			 "runtime", rt, "mem_bus_bits", p.memoryBusWidth);
}

/* The directory libcudart was loaded from (the sandbox keeps it readable). */
static void cudart_dir(char *out, size_t len)
{
	Dl_info info;
	char *slash;

	out[0] = '\0';
	if (dladdr((void *)&cudaGetDeviceCount, &info) && info.dli_fname) {
		snprintf(out, len, "%s", info.dli_fname);
		if ((slash = strrchr(out, '/')))
			*slash = '\0';
		else
			out[0] = '\0';
	}
}

/* ------------------------------------------------- the protocol's operations */

static void gpu_parse(json_t *req)
{
	json_t *jsb = json_object_get(req, "sandbox");

	memset(&sb, 0, sizeof(sb));
	sb.enabled = json_is_true(json_object_get(jsb, "enabled"));
	sb.landlock_wanted = sb.enabled && !json_is_false(json_object_get(jsb, "landlock"));
	sb.seccomp_wanted = sb.enabled && !json_is_false(json_object_get(jsb, "seccomp"));
	/* Under ncu. The contract (docs/gpu.md) says sandbox.profiler;
	 * lib/cuda/profile.c has sent it at the top level since the backend
	 * interface (580bfbe): either turns profiler mode on, or ncu's
	 * injection traps in the normal sandbox. */
	sb.profiler = json_is_true(json_object_get(jsb, "profiler")) || json_is_true(json_object_get(req, "profiler"));
	sb.tool_dir = json_string_value(json_object_get(jsb, "tool_dir"));
	sb.pid = (int)getpid();
	snprintf(sb.landlock, sizeof(sb.landlock), "off");
	dev = (int)harness_json_int(req, "device", 0);
}

/* A device, a context, events. No JIT cache on disk (the sandbox forbids
 * the writes anyway); modules load eagerly, when the kernel's fat binary
 * registers at dlopen, not at its first launch. */
static void gpu_init(void)
{
	int ndev = 0;
	cudaError_t e;

	setenv("CUDA_CACHE_DISABLE", "1", 1);
	setenv("CUDA_MODULE_LOADING", "EAGER", 0);
	e = cudaGetDeviceCount(&ndev);
	if (e != cudaSuccess || ndev <= 0)
		harness_fail("no_device", "no CUDA device: %s", e != cudaSuccess ? cudaGetErrorString(e) : "none visible");
	if (dev < 0 || dev >= ndev)
		harness_fail("no_device", "no CUDA device %d (%d visible)", dev, ndev);
	CK(cudaSetDevice(dev));
	CK(cudaFree(0));
	CK(cudaEventCreate(&ev0));
	CK(cudaEventCreate(&ev1));
}

static void *gpu_input(struct pragma_tensor *host)
{
	void *d = dalloc(host->nbytes, "an input");

	if (host->nbytes)
		CK(cudaMemcpy(d, host->data, host->nbytes, cudaMemcpyHostToDevice));
	return d;
}

/* Outputs are poisoned by a device-to-device copy of a pattern made once,
 * from set 0's shapes (every set has the same). */
static void *gpu_output(int set, int k, const struct pragma_tensor *like)
{
	void *d = dalloc(like->nbytes, "an output");

	if (!set) {
		void **grown = (void **)realloc(d_poison, (size_t)(k + 1) * sizeof(void *));
		if (!grown)
			harness_fail("harness_error", "out of memory for the output poison table");
		d_poison = grown;
		d_poison[k] = NULL;
		n_poison = k + 1;
		if (like->nbytes) {
			struct pragma_tensor p;
			struct pragma_err err;
			memset(&p, 0, sizeof(p));
			memset(&err, 0, sizeof(err));
			if (pragma_tensor_alloc(&p, like->dtype, like->ndim, like->shape, &err) < 0)
				harness_fail("harness_error", "output %d: %s", k, err.msg);
			harness_poison_host(p.data, p.nbytes, p.dtype);
			d_poison[k] = dalloc(p.nbytes, "the output poison");
			CK(cudaMemcpy(d_poison[k], p.data, p.nbytes, cudaMemcpyHostToDevice));
			pragma_tensor_release(&p);
		}
	}
	return d;
}

/* Host scratch for read-backs and a device one for swaps. */
static void gpu_loaded(size_t largest)
{
	struct pragma_err err;
	int64_t sh[1] = { (int64_t)(largest ? largest : 1) };

	memset(&err, 0, sizeof(err));
	if (pragma_tensor_alloc(&scratch, PK_UINT8, 1, sh, &err) < 0)
		harness_fail("harness_error", "scratch buffer: %s", err.msg);
	tmp_len = largest;
	d_tmp = dalloc(tmp_len, "the swap buffer");
}

static void gpu_poison(int k, void *buf, const struct pragma_tensor *like)
{
	if (k >= n_poison || !d_poison[k])
		harness_fail("harness_error", "output %d has no poison pattern", k);
	CK(cudaMemcpy(buf, d_poison[k], like->nbytes, cudaMemcpyDeviceToDevice));
}

/* Read a device buffer back into the scratch host buffer. */
static const void *gpu_read(const void *dptr, size_t n)
{
	if (!n)
		return scratch.data;
	CK(cudaMemcpy(scratch.data, dptr, n, cudaMemcpyDeviceToHost));
	return scratch.data;
}

static void gpu_download(void *host, const void *dptr, size_t n)
{
	CK(cudaMemcpy(host, dptr, n, cudaMemcpyDeviceToHost));
}

static void gpu_swap(void *a, void *b, size_t n)
{
	CK(cudaMemcpy(d_tmp, a, n, cudaMemcpyDeviceToDevice));
	CK(cudaMemcpy(a, b, n, cudaMemcpyDeviceToDevice));
	CK(cudaMemcpy(b, d_tmp, n, cudaMemcpyDeviceToDevice));
}

static void gpu_flush_setup(size_t bytes)
{
	int l2 = 0;

	cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev);
	flush_len = bytes;
	if ((size_t)l2 * 2 > flush_len)
		flush_len = (size_t)l2 * 2;
	d_flush = dalloc(flush_len, "the L2 flush buffer");
}

static void gpu_before_call(int cold)
{
	if (cold && d_flush)
		CK(cudaMemset(d_flush, harness_calls() & 0xff, flush_len));
	CK(cudaDeviceSynchronize());
}

static void gpu_call_begin(int /* counted: no counters here */)
{
	CK(cudaEventRecord(ev0, 0));
}

static double gpu_call_end(int /* counted */, int set)
{
	cudaError_t e_sync, e_last;
	float ms = 0;

	/* The whole device, not a stream: work on other streams counts. */
	e_sync = cudaDeviceSynchronize();
	e_last = cudaGetLastError();
	harness_guard.in_kernel = 0;
	check_kernel_error(e_sync, set, "after pk_forward returned (device synchronize)");
	check_kernel_error(e_last, set, "from a launch in pk_forward");
	CK(cudaEventRecord(ev1, 0));
	CK(cudaEventSynchronize(ev1));
	CK(cudaEventElapsedTime(&ms, ev0, ev1));
	return ms;
}

/* Confine after CUDA is up; the kernel's constructors then register its
 * fat binary confined. */
static void gpu_enter(const char *kernel_so)
{
	char why[512], libdir[4096];

	/* Uploads, poison patterns and the flush buffer's setup are done
	 * before the sandbox closes in. */
	CK(cudaDeviceSynchronize());
	cudart_dir(libdir, sizeof(libdir));
	sb.kernel_so = kernel_so;
	sb.cuda_lib_dir = libdir[0] ? libdir : NULL;
	if (gpu_sandbox_enter(&sb, why, sizeof(why)) < 0)
		harness_fail("sandbox_error", "%s", why);
}

/* A driver that opens files at the first launch (not seen so far) would
 * die of SIGSYS here; PRAGMA_CUDA_NO_LOCK keeps stage 1 only, and the
 * sandbox report says so (seccomp_locked false). */
static void gpu_lock(void)
{
	char why[512];

	if (!getenv("PRAGMA_CUDA_NO_LOCK") && gpu_sandbox_lock(&sb, why, sizeof(why)) < 0)
		harness_fail("sandbox_error", "%s", why);
}

static void gpu_profile_start(void)
{
	CK(cudaProfilerStart());
}

static void gpu_profile_stop(void)
{
	CK(cudaProfilerStop());
}

static void gpu_finish(json_t *answer)
{
	json_object_set_new(answer, "device", device_json(dev));
	json_object_set_new(answer, "timer", json_string("cuda events around pk_forward + cudaDeviceSynchronize"));
}

static int probe_main(void)
{
	int n = 0;
	cudaError_t e = cudaGetDeviceCount(&n);
	json_t *o, *a = json_array();

	if (e != cudaSuccess || n <= 0) {
		o = json_pack("{s:b, s:s, s:s}", "ok", 0, "status", "no_device", "message",
			      e != cudaSuccess ? cudaGetErrorString(e) : "no CUDA device");
		json_dumpf(o, stdout, JSON_COMPACT);
		putchar('\n');
		json_decref(o);
		json_decref(a);
		return 3;
	}
	for (int i = 0; i < n; i++)
		json_array_append_new(a, device_json(i));
	o = json_pack("{s:b, s:o}", "ok", 1, "devices", a);
	json_dumpf(o, stdout, JSON_COMPACT);
	putchar('\n');
	json_decref(o);
	return 0;
}

int main(int argc, char **argv)
{
	struct harness_ops ops;

	if (argc == 2 && !strcmp(argv[1], "probe"))
		return probe_main();
	/* Built with -std=c++17 (no designated initializers): members by
	 * name, the rest zero (NULL: not offered). */
	memset(&ops, 0, sizeof(ops));
	ops.name = "pragma-cuda-harness";
	ops.usage = "       pragma-cuda-harness probe\n";
	ops.settled_after = "pk_forward returned and the device was synchronized";
	ops.settled_culprit = "a host thread the kernel started kept launching work";
	ops.forward_hint = " (declare it extern \"C\")";
	ops.host_alloc_hint = "";
	/* Inputs are read back and checked before timed calls too, as this
	 * harness always did: outside the events' window, so it costs the
	 * run's wall time, not the measurement. */
	ops.check_inputs_timed = 1;
	ops.parse = gpu_parse;
	ops.init = gpu_init;
	ops.input = gpu_input;
	ops.output = gpu_output;
	ops.loaded = gpu_loaded;
	ops.poison = gpu_poison;
	ops.read = gpu_read;
	ops.download = gpu_download;
	ops.swap = gpu_swap;
	ops.flush_setup = gpu_flush_setup;
	ops.before_call = gpu_before_call;
	ops.call_begin = gpu_call_begin;
	ops.call_end = gpu_call_end;
	ops.enter = gpu_enter;
	ops.lock = gpu_lock;
	ops.profile_start = gpu_profile_start;
	ops.profile_stop = gpu_profile_stop;
	ops.sandbox_report = sandbox_report;
	ops.finish = gpu_finish;
	return harness_main(argc, argv, &ops);
}
