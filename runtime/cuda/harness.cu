/*
 * pragma-cuda-harness: runs one CUDA kernel (a .so built by lib/cuda with
 * nvcc -shared -cudart shared) on the task's input sets and reports what
 * happened. It speaks the CPU harness's protocol (runtime/harness.c: the
 * same request file, run/time/serve modes, outputs as .npy files, one
 * JSON answer line), so lib/sandbox/run.c drives it unchanged and
 * lib/verify compares its outputs like any other. What is different:
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
#include <errno.h>
#include <fcntl.h>
#include <stdarg.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <time.h>
#include <unistd.h>

extern "C" {
#include <jansson.h>

#include "pragma/hash.h"
#include "pragma/run.h"
#include "pragma/tensor.h"
#include "../harness.h"
#include "gpu_sandbox.h"
}
#include "pragma/kernel.h"

typedef int (*forward_fn)(const struct pk_tensor *, int, struct pk_tensor *, int);

struct hset {
	struct pragma_tensor *in;      /* host copies of this set's own data (for checksums) */
	void **d_in;                   /* device buffers */
	struct pk_tensor *in_abi;
	int data;                      /* whose data the device buffers hold now */
	uint64_t *sum;
	void **d_out;
	struct pk_tensor *out_abi;
	struct pragma_tensor *snap;    /* outputs read back after the call */
	int snap_valid;
	const char *out_dir;
	int timed_calls;
	int *timed_fd;
};

struct step {
	int buf, data;
	int *fd;
};

static struct hset *sets;
static int n_sets, n_in, n_out;
static forward_fn fwd;
static int calls;
static int cold;
static struct gpu_sandbox sb;
static void **d_poison;                /* per output: the poison pattern */
static void *d_flush, *d_tmp;
static size_t flush_len, tmp_len;
static cudaEvent_t ev0, ev1;
static struct pragma_tensor scratch;   /* host buffer for read-backs */

static void emit(json_t *o)
{
	char *s = json_dumps(o, JSON_COMPACT);

	if (s) {
		harness_write_all(harness_guard.result_fd, s, strlen(s));
		harness_write_all(harness_guard.result_fd, "\n", 1);
	}
	free(s);
	json_decref(o);
}

static void sandbox_report(json_t *o)
{
	json_object_set_new(o, "sandbox",
			    json_pack("{s:b, s:b, s:b, s:s, s:i, s:b}", "enabled", sb.enabled, "seccomp", sb.seccomp,
				      "seccomp_locked", sb.seccomp_locked, "landlock", sb.landlock, "landlock_abi",
				      sb.landlock_abi, "profiler", sb.profiler));
}

static void fail(const char *status, const char *fmt, ...) __attribute__((noreturn, format(printf, 2, 3)));

static void fail(const char *status, const char *fmt, ...)
{
	char msg[2048];
	unsigned long nfail;
	size_t largest;
	va_list ap;
	json_t *o;

	va_start(ap, fmt);
	vsnprintf(msg, sizeof(msg), fmt, ap);
	va_end(ap);
	o = json_pack("{s:b, s:s, s:s, s:i}", "ok", 0, "status", status, "message", msg, "calls", calls);
	harness_alloc_failures(&nfail, &largest);
	if (nfail)
		json_object_set_new(o, "alloc_failures",
				    json_pack("{s:I, s:I}", "count", (json_int_t)nfail, "largest", (json_int_t)largest));
	sandbox_report(o);
	emit(o);
	_exit(1);
}

/* A CUDA call of the harness's own: any failure is the harness's (or the
 * environment's), named. */
#define CK(call)                                                                                       \
	do {                                                                                           \
		cudaError_t e_ = (call);                                                               \
		if (e_ != cudaSuccess)                                                                 \
			fail("harness_error", "%s: %s (%s)", #call, cudaGetErrorString(e_), cudaGetErrorName(e_)); \
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
	fail(kernel_status(e), "CUDA error %s (%s) %s on input set %d (call %d): %s", cudaGetErrorName(e),
	     cudaGetErrorString(e), when, set, calls, kernel_hint(e));
}

static void to_abi(void *dptr, const struct pragma_tensor *t, struct pk_tensor *a)
{
	memset(a, 0, sizeof(*a));
	a->data = dptr;
	a->dtype = t->dtype;
	a->ndim = t->ndim;
	memcpy(a->shape, t->shape, sizeof(a->shape));
}

static void poison_host(struct pragma_tensor *t)
{
	switch (t->dtype) {
	case PK_FLOAT32:
		for (size_t i = 0; i < t->nbytes / 4; i++)
			((uint32_t *)t->data)[i] = PRAGMA_POISON_F32;
		break;
	case PK_FLOAT64:
		for (size_t i = 0; i < t->nbytes / 8; i++)
			((uint64_t *)t->data)[i] = PRAGMA_POISON_F64;
		break;
	case PK_FLOAT16:
	case PK_BFLOAT16: {
		uint16_t v = t->dtype == PK_FLOAT16 ? PRAGMA_POISON_F16 : PRAGMA_POISON_BF16;
		for (size_t i = 0; i < t->nbytes / 2; i++)
			((uint16_t *)t->data)[i] = v;
		break;
	}
	case PK_BOOL:
		memset(t->data, PRAGMA_POISON_BOOL, t->nbytes);
		break;
	default:
		memset(t->data, PRAGMA_POISON_BYTE, t->nbytes);
		break;
	}
}

static uint64_t checksum(const void *p, size_t n)
{
	return pragma_hash64(p, n, 0x5eed);
}

/* Read a device buffer back into the scratch host buffer. */
static const void *read_back(const void *dptr, size_t n)
{
	if (!n)
		return scratch.data;
	CK(cudaMemcpy(scratch.data, dptr, n, cudaMemcpyDeviceToHost));
	return scratch.data;
}

static void check_inputs(struct hset *S, const char *when)
{
	const uint64_t *want = sets[S->data].sum;

	for (int i = 0; i < n_in; i++) {
		size_t n = sets[0].in[i].nbytes;
		if (n && checksum(read_back(S->d_in[i], n), n) != want[i])
			fail("modified_input", "input %d changed %s (set %d, call %d); inputs are read-only", i, when,
			     S->data, calls);
	}
}

/* Outputs must stay as they were read back after the call. */
static void check_settled(struct hset *S, const char *when)
{
	if (!S->snap_valid)
		return;
	for (int k = 0; k < n_out; k++) {
		size_t n = S->snap[k].nbytes;
		if (n && memcmp(read_back(S->d_out[k], n), S->snap[k].data, n))
			fail("work_after_return",
			     "output[%d] changed %s pk_forward returned and the device was synchronized (set %d, call "
			     "%d): a host thread the kernel started kept launching work; finish all work before "
			     "returning",
			     k, when, S->data, calls);
	}
}

static void swap_data(struct hset *a, struct hset *b)
{
	for (int i = 0; i < n_in; i++) {
		size_t n = sets[0].in[i].nbytes;
		if (!n)
			continue;
		CK(cudaMemcpy(d_tmp, a->d_in[i], n, cudaMemcpyDeviceToDevice));
		CK(cudaMemcpy(a->d_in[i], b->d_in[i], n, cudaMemcpyDeviceToDevice));
		CK(cudaMemcpy(b->d_in[i], d_tmp, n, cudaMemcpyDeviceToDevice));
	}
	int d = a->data;
	a->data = b->data;
	b->data = d;
}

static void arrange(int buf, int data)
{
	if (sets[buf].data == data)
		return;
	for (int s = 0; s < n_sets; s++)
		if (sets[s].data == data) {
			swap_data(&sets[buf], &sets[s]);
			return;
		}
}

/* One call on set b's buffers; returns its time in ms (CUDA events). */
static double call_once(int b)
{
	struct hset *S = &sets[b];
	cudaError_t e_sync, e_last;
	float ms = 0;
	int rc;

	check_settled(S, "after");
	check_inputs(S, "between calls");
	for (int k = 0; k < n_out; k++)
		if (S->snap[k].nbytes)
			CK(cudaMemcpy(S->d_out[k], d_poison[k], S->snap[k].nbytes, cudaMemcpyDeviceToDevice));
	if (cold && d_flush)
		CK(cudaMemset(d_flush, calls & 0xff, flush_len));
	CK(cudaDeviceSynchronize());
	calls++;
	harness_guard.set = S->data;
	harness_guard.call = calls;
	harness_guard.in_kernel = 1;
	CK(cudaEventRecord(ev0, 0));
	rc = fwd(S->in_abi, n_in, S->out_abi, n_out);
	/* The whole device, not a stream: work on other streams counts. */
	e_sync = cudaDeviceSynchronize();
	e_last = cudaGetLastError();
	harness_guard.in_kernel = 0;
	check_kernel_error(e_sync, S->data, "after pk_forward returned (device synchronize)");
	check_kernel_error(e_last, S->data, "from a launch in pk_forward");
	CK(cudaEventRecord(ev1, 0));
	CK(cudaEventSynchronize(ev1));
	CK(cudaEventElapsedTime(&ms, ev0, ev1));
	/* Outputs count as they stand once the device is idle. */
	for (int k = 0; k < n_out; k++)
		if (S->snap[k].nbytes)
			CK(cudaMemcpy(S->snap[k].data, S->d_out[k], S->snap[k].nbytes, cudaMemcpyDeviceToHost));
	S->snap_valid = 1;
	if (rc != 0)
		fail("kernel_error", "pk_forward returned %d on input set %d (call %d); it must return 0", rc, S->data,
		     calls);
	check_inputs(S, "during the call");
	return ms;
}

static int write_npy_fd(int fd, const struct pragma_tensor *t)
{
	static const char *const descr[] = { "<f4", "<f8", "<f2", "<u2", "<i8", "<i4", "|i1", "|u1", "|b1" };
	char hdr[1024];
	int n = snprintf(hdr + 10, sizeof(hdr) - 80, "{'descr': '%s', 'fortran_order': False, 'shape': (",
			 descr[t->dtype]);
	size_t total;

	for (int i = 0; i < t->ndim; i++)
		n += snprintf(hdr + 10 + n, sizeof(hdr) - 80 - (size_t)n, "%lld,%s", (long long)t->shape[i],
			      i + 1 < t->ndim ? " " : "");
	n += snprintf(hdr + 10 + n, sizeof(hdr) - 80 - (size_t)n, "), }");
	total = ((size_t)n + 11 + 63) & ~(size_t)63;
	while ((size_t)n + 11 < total)
		hdr[10 + n++] = ' ';
	hdr[10 + n++] = '\n';
	memcpy(hdr, "\x93NUMPY\x01\x00", 8);
	hdr[8] = (char)(n & 255);
	hdr[9] = (char)(n >> 8);
	if (lseek(fd, 0, SEEK_SET) < 0 || ftruncate(fd, 0) < 0)
		return -1;
	if (harness_write_all(fd, hdr, (size_t)n + 10) < 0)
		return -1;
	return t->nbytes ? harness_write_all(fd, t->data, t->nbytes) : 0;
}

static int *open_outputs(const char *dir, const char *name)
{
	int *fd = (int *)calloc((size_t)n_out + 1, sizeof(int));

	for (int k = 0; k < n_out; k++) {
		char path[4200];
		snprintf(path, sizeof(path), "%s/%s_%03d.npy", dir, name, k);
		fd[k] = open(path, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		if (fd[k] < 0)
			fail("harness_error", "cannot create %s: %s", path, strerror(errno));
	}
	return fd;
}

static void save(struct hset *S, const int *fd)
{
	for (int k = 0; k < n_out; k++)
		if (write_npy_fd(fd[k], &S->snap[k]) < 0)
			fail("harness_error", "writing output %d: %s", k, strerror(errno));
}

static int64_t jint(json_t *o, const char *k, int64_t def)
{
	json_t *v = json_object_get(o, k);

	return json_is_integer(v) ? json_integer_value(v) : def;
}

static void sleep_us(long us)
{
	struct timespec ts = { us / 1000000, (us % 1000000) * 1000L };

	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

static void final_checks(int ms)
{
	if (ms > 0)
		sleep_us((long)ms * 1000);
	for (int s = 0; s < n_sets; s++) {
		check_settled(&sets[s], "after");
		check_inputs(&sets[s], "after the last call returned");
	}
}

static void *dalloc(size_t n, const char *what)
{
	void *p = NULL;
	cudaError_t e;

	if (!n)
		return NULL;
	e = cudaMalloc(&p, n);
	if (e != cudaSuccess)
		fail("harness_error", "cudaMalloc of %zu bytes for %s: %s (the GPU's memory is too small for this "
				      "task, or another process holds it)", n, what, cudaGetErrorString(e));
	return p;
}

static void load_sets(json_t *jsets, json_t *jin, json_t *jout)
{
	struct pragma_err err;
	size_t biggest = 0;

	memset(&err, 0, sizeof(err));

	sets = (struct hset *)calloc((size_t)n_sets, sizeof(*sets));
	d_poison = (void **)calloc((size_t)n_out + 1, sizeof(void *));
	for (int s = 0; s < n_sets; s++) {
		json_t *js = json_array_get(jsets, (size_t)s);
		json_t *files = json_object_get(js, "inputs");
		struct hset *S = &sets[s];

		S->data = s;
		S->out_dir = json_string_value(json_object_get(js, "out_dir"));
		if (!json_is_array(files) || (int)json_array_size(files) != n_in || !S->out_dir)
			fail("harness_error", "set %d: expected %d input files and out_dir", s, n_in);
		S->in = (struct pragma_tensor *)calloc((size_t)n_in + 1, sizeof(*S->in));
		S->d_in = (void **)calloc((size_t)n_in + 1, sizeof(void *));
		S->in_abi = (struct pk_tensor *)calloc((size_t)n_in + 1, sizeof(*S->in_abi));
		S->sum = (uint64_t *)calloc((size_t)n_in + 1, sizeof(*S->sum));
		for (int i = 0; i < n_in; i++) {
			enum pk_dtype want;
			const char *dt = json_string_value(json_object_get(json_array_get(jin, (size_t)i), "dtype"));
			if (!dt || pragma_dtype_from_name(dt, &want) < 0)
				fail("harness_error", "input %d: bad dtype", i);
			if (pragma_npy_read(json_string_value(json_array_get(files, (size_t)i)), (int)want, &S->in[i],
					    &err) < 0)
				fail("harness_error", "input %d: %s", i, err.msg);
			if (s && (S->in[i].nbytes != sets[0].in[i].nbytes || S->in[i].ndim != sets[0].in[i].ndim))
				fail("harness_error", "input %d of set %d differs in shape from set 0", i, s);
			S->d_in[i] = dalloc(S->in[i].nbytes, "an input");
			if (S->in[i].nbytes)
				CK(cudaMemcpy(S->d_in[i], S->in[i].data, S->in[i].nbytes, cudaMemcpyHostToDevice));
			to_abi(S->d_in[i], &S->in[i], &S->in_abi[i]);
			S->sum[i] = checksum(S->in[i].data, S->in[i].nbytes);
			if (S->in[i].nbytes > biggest)
				biggest = S->in[i].nbytes;
		}
		S->d_out = (void **)calloc((size_t)n_out + 1, sizeof(void *));
		S->snap = (struct pragma_tensor *)calloc((size_t)n_out + 1, sizeof(*S->snap));
		S->out_abi = (struct pk_tensor *)calloc((size_t)n_out + 1, sizeof(*S->out_abi));
		for (int k = 0; k < n_out; k++) {
			json_t *o = json_array_get(jout, (size_t)k), *shape = json_object_get(o, "shape"), *d;
			int64_t sh[PK_MAX_DIMS];
			enum pk_dtype dt;
			size_t j;
			const char *dts = json_string_value(json_object_get(o, "dtype"));

			if (!dts || pragma_dtype_from_name(dts, &dt) < 0 || !json_is_array(shape) ||
			    json_array_size(shape) > PK_MAX_DIMS)
				fail("harness_error", "output %d: bad spec", k);
			json_array_foreach(shape, j, d)
				sh[j] = json_integer_value(d);
			if (pragma_tensor_alloc(&S->snap[k], dt, (int)json_array_size(shape), sh, &err) < 0)
				fail("harness_error", "output %d: %s", k, err.msg);
			S->d_out[k] = dalloc(S->snap[k].nbytes, "an output");
			to_abi(S->d_out[k], &S->snap[k], &S->out_abi[k]);
			if (S->snap[k].nbytes > biggest)
				biggest = S->snap[k].nbytes;
			if (!s && S->snap[k].nbytes) {
				struct pragma_tensor p;
				memset(&p, 0, sizeof(p));
				if (pragma_tensor_alloc(&p, dt, (int)json_array_size(shape), sh, &err) < 0)
					fail("harness_error", "output %d: %s", k, err.msg);
				poison_host(&p);
				d_poison[k] = dalloc(p.nbytes, "the output poison");
				CK(cudaMemcpy(d_poison[k], p.data, p.nbytes, cudaMemcpyHostToDevice));
				pragma_tensor_release(&p);
			}
		}
	}
	/* Host scratch for read-backs and a device one for swaps. */
	{
		int64_t sh[1] = { (int64_t)(biggest ? biggest : 1) };
		if (pragma_tensor_alloc(&scratch, PK_UINT8, 1, sh, &err) < 0)
			fail("harness_error", "scratch buffer: %s", err.msg);
		tmp_len = biggest;
		d_tmp = dalloc(tmp_len, "the swap buffer");
	}
}

static int read_line(char *buf, size_t cap)
{
	size_t n = 0;

	while (n + 1 < cap) {
		char c;
		ssize_t r = read(0, &c, 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			break;
		if (c == '\n') {
			buf[n] = 0;
			return 1;
		}
		buf[n++] = c;
	}
	buf[n] = 0;
	return n > 0;
}

static json_t *timed_rounds(int reps, int *next)
{
	json_t *times = json_array();

	for (int r = 0; r < reps; r++) {
		int s = (*next)++ % n_sets;
		double t = call_once(s);
		sets[s].timed_calls++;
		json_array_append_new(times, json_real(t));
	}
	return times;
}

static void save_timed(void)
{
	for (int s = 0; s < n_sets; s++)
		if (sets[s].timed_fd && sets[s].timed_calls)
			save(&sets[s], sets[s].timed_fd);
}

static json_t *device_json(int dev)
{
	cudaDeviceProp p;
	int drv = 0, rt = 0;
	char arch[16];

	memset(&p, 0, sizeof(p));
	cudaGetDeviceProperties(&p, dev);
	cudaDriverGetVersion(&drv);
	cudaRuntimeGetVersion(&rt);
	snprintf(arch, sizeof(arch), "sm_%d%d", p.major, p.minor);
	return json_pack("{s:i, s:s, s:s, s:i, s:I, s:I, s:I, s:i, s:i, s:i, s:i, s:i, s:i}", "index", dev, "name",
			 p.name, "arch", arch, "sms", p.multiProcessorCount, "l2_bytes", (json_int_t)p.l2CacheSize,
			 "total_mem", (json_int_t)p.totalGlobalMem, "smem_per_block_optin",
			 (json_int_t)p.sharedMemPerBlockOptin, "regs_per_sm", p.regsPerMultiprocessor,
			 "max_threads_per_sm", p.maxThreadsPerMultiProcessor, "warp_size", p.warpSize, "driver", drv,
			 "runtime", rt, "mem_bus_bits", p.memoryBusWidth);
}

static json_t *finish_result(json_t *res, int dev)
{
	json_t *tc = json_array();
	unsigned long nfail;
	size_t largest;
	struct rusage ru;

	for (int s = 0; s < n_sets; s++)
		json_array_append_new(tc, json_integer(sets[s].timed_calls));
	json_object_set_new(res, "timed_calls", tc);
	json_object_set_new(res, "calls", json_integer(calls));
	json_object_set_new(res, "device", device_json(dev));
	json_object_set_new(res, "timer", json_string("cuda events around pk_forward + cudaDeviceSynchronize"));
	harness_alloc_failures(&nfail, &largest);
	if (nfail)
		json_object_set_new(res, "alloc_failures",
				    json_pack("{s:I, s:I}", "count", (json_int_t)nfail, "largest", (json_int_t)largest));
	if (getrusage(RUSAGE_SELF, &ru) == 0)
		json_object_set_new(res, "maxrss_kb", json_integer(ru.ru_maxrss));
	sandbox_report(res);
	return res;
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

int main(int argc, char **argv)
{
	json_error_t jerr;
	json_t *req, *jsets, *jout, *jin, *jsteps, *jsb;
	struct step *steps = NULL;
	const char *mode, *kernel;
	int n_steps = 0, warmup, reps, save_t, settle_step_us, final_ms, dev, ndev = 0, profile_calls;
	char why[512], libdir[4096];
	void *dl;
	cudaError_t e;

	if (argc == 2 && !strcmp(argv[1], "probe"))
		return probe_main();
	if (argc == 2 && !strcmp(argv[1], "--version")) {
		printf("pragma-cuda-harness protocol %d\n", HARNESS_PROTOCOL);
		return 0;
	}
	if (argc != 2) {
		fprintf(stderr, "usage: pragma-cuda-harness REQUEST.json\n"
				"       pragma-cuda-harness probe\n");
		return 2;
	}
	harness_guard.result_fd = fcntl(1, F_DUPFD_CLOEXEC, 10);
	if (harness_guard.result_fd < 0 || dup2(2, 1) < 0) {
		perror("pragma-cuda-harness: result fd");
		return 3;
	}
	close_range(3, (unsigned)harness_guard.result_fd - 1, 0);
	close_range((unsigned)harness_guard.result_fd + 1, ~0U, 0);
	harness_guard_install();
	req = json_load_file(argv[1], 0, &jerr);
	if (!req)
		fail("harness_error", "cannot read request %s: %s", argv[1], jerr.text);
	jsb = json_object_get(req, "sandbox");
	memset(&sb, 0, sizeof(sb));
	sb.enabled = json_is_true(json_object_get(jsb, "enabled"));
	sb.landlock_wanted = sb.enabled && !json_is_false(json_object_get(jsb, "landlock"));
	sb.seccomp_wanted = sb.enabled && !json_is_false(json_object_get(jsb, "seccomp"));
	sb.profiler = json_is_true(json_object_get(jsb, "profiler"));
	sb.tool_dir = json_string_value(json_object_get(jsb, "tool_dir"));
	sb.pid = (int)getpid();
	snprintf(sb.landlock, sizeof(sb.landlock), "off");
	kernel = json_string_value(json_object_get(req, "kernel"));
	mode = json_string_value(json_object_get(req, "mode"));
	jsets = json_object_get(req, "sets");
	jout = json_object_get(req, "outputs");
	jin = json_object_get(req, "inputs");
	if (!kernel || !mode || !json_is_array(jsets) || !json_array_size(jsets) || !json_is_array(jout) ||
	    !json_is_array(jin) ||
	    (strcmp(mode, "run") && strcmp(mode, "time") && strcmp(mode, "serve") && strcmp(mode, "profile")))
		fail("harness_error", "malformed request");
	n_sets = (int)json_array_size(jsets);
	n_in = (int)json_array_size(jin);
	n_out = (int)json_array_size(jout);
	warmup = (int)jint(req, "warmup", 0);
	reps = (int)jint(req, "reps", 0);
	cold = json_is_true(json_object_get(req, "cold"));
	save_t = json_is_true(json_object_get(req, "save_timed"));
	settle_step_us = (int)jint(req, "settle_us", 0);
	final_ms = (int)jint(req, "final_settle_ms", 0);
	dev = (int)jint(req, "device", 0);
	profile_calls = (int)jint(req, "profile_calls", 1);

	/* 0. CUDA: a device, a context, events. No JIT cache on disk (the
	 * sandbox forbids the writes anyway); modules load eagerly, when the
	 * kernel's fat binary registers at dlopen, not at its first launch. */
	setenv("CUDA_CACHE_DISABLE", "1", 1);
	setenv("CUDA_MODULE_LOADING", "EAGER", 0);
	e = cudaGetDeviceCount(&ndev);
	if (e != cudaSuccess || ndev <= 0)
		fail("no_device", "no CUDA device: %s", e != cudaSuccess ? cudaGetErrorString(e) : "none visible");
	if (dev < 0 || dev >= ndev)
		fail("no_device", "no CUDA device %d (%d visible)", dev, ndev);
	CK(cudaSetDevice(dev));
	CK(cudaFree(0));
	CK(cudaEventCreate(&ev0));
	CK(cudaEventCreate(&ev1));

	/* 1. Everything the run needs, before the kernel is in the process. */
	load_sets(jsets, jin, jout);
	if (cold) {
		int l2 = 0;
		cudaDeviceGetAttribute(&l2, cudaDevAttrL2CacheSize, dev);
		flush_len = (size_t)jint(req, "flush_bytes", 64 << 20);
		if ((size_t)l2 * 2 > flush_len)
			flush_len = (size_t)l2 * 2;
		d_flush = dalloc(flush_len, "the L2 flush buffer");
	}
	jsteps = json_object_get(req, "steps");
	if (!strcmp(mode, "run")) {
		n_steps = json_is_array(jsteps) ? (int)json_array_size(jsteps) : n_sets;
		steps = (struct step *)calloc((size_t)n_steps + 1, sizeof(*steps));
		for (int i = 0; i < n_steps; i++) {
			json_t *st = json_array_get(jsteps, (size_t)i);
			const char *name = st ? json_string_value(json_object_get(st, "save")) : "out";
			steps[i].buf = st ? (int)jint(st, "buf", -1) : i;
			steps[i].data = st ? (int)jint(st, "data", steps[i].buf) : i;
			if (steps[i].buf < 0 || steps[i].buf >= n_sets || steps[i].data < 0 || steps[i].data >= n_sets)
				fail("harness_error", "step %d: bad set index", i);
			if (name)
				steps[i].fd = open_outputs(sets[steps[i].data].out_dir, name);
		}
	}
	if (save_t)
		for (int s = 0; s < n_sets; s++)
			sets[s].timed_fd = open_outputs(sets[s].out_dir, "timed");
	CK(cudaDeviceSynchronize());
	/* Trusted runtimes the kernel needs (libstdc++, ...) load unconfined. */
	{
		json_t *pre = json_object_get(req, "preload"), *so;
		size_t j;
		json_array_foreach(pre, j, so) {
			const char *name = json_string_value(so);
			if (name && !dlopen(name, RTLD_NOW | RTLD_LOCAL))
				fprintf(stderr, "pragma-cuda-harness: preload %s: %s\n", name, dlerror());
		}
	}

	/* 2. Confine (after CUDA is up), load the kernel (its constructors
	 * register its fat binary, confined), lock. */
	cudart_dir(libdir, sizeof(libdir));
	sb.kernel_so = kernel;
	sb.cuda_lib_dir = libdir[0] ? libdir : NULL;
	if (gpu_sandbox_enter(&sb, why, sizeof(why)) < 0)
		fail("sandbox_error", "%s", why);
	dl = dlopen(kernel, RTLD_NOW | RTLD_LOCAL);
	if (!dl)
		fail("link_error", "cannot load the kernel: %s", dlerror());
	fwd = (forward_fn)(uintptr_t)dlsym(dl, "pk_forward");
	if (!fwd)
		fail("link_error", "the kernel does not define pk_forward (declare it extern \"C\")");
	/* A driver that opens files at the first launch (not seen so far)
	 * would die of SIGSYS here; PRAGMA_CUDA_NO_LOCK keeps stage 1 only,
	 * and the sandbox report says so (seccomp_locked false). */
	if (!getenv("PRAGMA_CUDA_NO_LOCK") && gpu_sandbox_lock(&sb, why, sizeof(why)) < 0)
		fail("sandbox_error", "%s", why);

	/* 3. Run. */
	if (!strcmp(mode, "run")) {
		for (int i = 0; i < n_steps; i++) {
			arrange(steps[i].buf, steps[i].data);
			call_once(steps[i].buf);
			if (settle_step_us > 0) {
				sleep_us(settle_step_us);
				check_settled(&sets[steps[i].buf], "after");
				check_inputs(&sets[steps[i].buf], "after the call returned");
			}
			if (steps[i].fd)
				save(&sets[steps[i].buf], steps[i].fd);
		}
		final_checks(final_ms);
		emit(finish_result(json_pack("{s:b, s:[]}", "ok", 1, "times_ms"), dev));
		_exit(0);
	}

	int next = 0;
	for (int w = 0; w < warmup; w++)
		call_once(next++ % n_sets);
	if (!strcmp(mode, "time") || !strcmp(mode, "profile")) {
		json_t *times;
		if (!strcmp(mode, "profile")) {
			CK(cudaProfilerStart());
			times = timed_rounds(profile_calls > 0 ? profile_calls : 1, &next);
			CK(cudaProfilerStop());
		} else {
			times = timed_rounds(reps, &next);
		}
		final_checks(final_ms);
		save_timed();
		emit(finish_result(json_pack("{s:b, s:o}", "ok", 1, "times_ms", times), dev));
		_exit(0);
	}

	/* serve */
	{
		json_t *ready = json_pack("{s:b, s:b, s:i}", "ok", 1, "ready", 1, "sets", n_sets);
		sandbox_report(ready);
		emit(ready);
	}
	for (;;) {
		char line[256];
		int r;

		if (!read_line(line, sizeof(line)) || !strcmp(line, "quit"))
			break;
		if (sscanf(line, "time %d", &r) == 1 && r > 0 && r <= 1000000) {
			json_t *times = timed_rounds(r, &next);
			emit(json_pack("{s:b, s:o}", "ok", 1, "times_ms", times));
		} else {
			fail("harness_error", "serve: expected 'time R' or 'quit', got '%.100s'", line);
		}
	}
	final_checks(final_ms);
	save_timed();
	emit(finish_result(json_pack("{s:b, s:b}", "ok", 1, "done", 1), dev));
	_exit(0);
}
