/*
 * Is there a CUDA device, and what is it? pragma does not link the CUDA
 * runtime: it loads libcudart with dlopen and asks through a handful of
 * functions whose ABI has not changed in many releases (device count,
 * attributes by enum value, versions, error strings). cudaDeviceProp's
 * layout does change between releases, so only its first fields (the name
 * and, since CUDA 10, the total memory after uuid/luid) are read from it,
 * into a buffer much larger than any version's struct.
 *
 * Probing initializes the driver in this process but creates no context
 * (no device memory is taken).
 */
#include <dlfcn.h>
#include <pthread.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cuda/cuda_int.h"
#include "pragma/cuda.h"

/* enum cudaDeviceAttr values (driver_types.h; stable since CUDA 5-9). */
enum {
	A_MAX_THREADS_PER_BLOCK = 1,
	A_SMEM_PER_BLOCK = 8,
	A_WARP_SIZE = 10,
	A_REGS_PER_BLOCK = 12,
	A_CLOCK_RATE = 13,
	A_SM_COUNT = 16,
	A_MEM_CLOCK_RATE = 36,
	A_MEM_BUS_WIDTH = 37,
	A_L2_SIZE = 38,
	A_MAX_THREADS_PER_SM = 39,
	A_CC_MAJOR = 75,
	A_CC_MINOR = 76,
	A_SMEM_PER_SM = 81,
	A_REGS_PER_SM = 82,
	A_SMEM_PER_BLOCK_OPTIN = 97,
	A_MAX_BLOCKS_PER_SM = 106,
};

/* cudaError_t values we explain. */
enum { E_INSUFFICIENT_DRIVER = 35, E_NO_DEVICE = 100, E_DEVICES_UNAVAILABLE = 46, E_NOT_PERMITTED = 800,
       E_SYSTEM_DRIVER_MISMATCH = 803, E_COMPAT_NOT_SUPPORTED = 804, E_INIT = 3, E_SYSTEM_NOT_READY = 802 };

typedef int (*count_fn)(int *);
typedef int (*attr_fn)(int *, int, int);
typedef int (*ver_fn)(int *);
typedef const char *(*errstr_fn)(int);
typedef int (*props_fn)(void *, int);

static struct pragma_gpu_probe cached;
static int probed;
static pthread_mutex_t lock = PTHREAD_MUTEX_INITIALIZER;

static void *open_cudart(char *which, size_t len)
{
	static const char *const names[] = { "libcudart.so", "libcudart.so.13", "libcudart.so.12", "libcudart.so.11.0",
					     NULL };
	const char *env = getenv("PRAGMA_CUDART");
	struct pragma_cuda_toolkit tk;
	char path[4200];
	void *h;

	if (env && *env) {
		snprintf(which, len, "%s", env);
		return dlopen(env, RTLD_NOW | RTLD_LOCAL);
	}
	for (int i = 0; names[i]; i++)
		if ((h = dlopen(names[i], RTLD_NOW | RTLD_LOCAL))) {
			snprintf(which, len, "%s", names[i]);
			return h;
		}
	/* Not in the loader's path: the toolkit's own copy. */
	const char *homes[] = { getenv("CUDA_HOME"), getenv("CUDA_PATH"), "/usr/local/cuda", NULL };
	for (int i = 0; i < 3; i++)
		if (homes[i] && *homes[i]) {
			snprintf(path, sizeof(path), "%s/lib64/libcudart.so", homes[i]);
			if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
				snprintf(which, len, "%s", path);
				return h;
			}
		}
	if (pragma_cuda_toolkit_find(&tk, NULL) == 0) {
		snprintf(path, sizeof(path), "%s/lib64/libcudart.so", tk.root);
		if ((h = dlopen(path, RTLD_NOW | RTLD_LOCAL))) {
			snprintf(which, len, "%s", path);
			return h;
		}
	}
	return NULL;
}

static void explain(struct pragma_gpu_probe *p, int rc, const char *msg)
{
	const char *m = msg ? msg : "";

	switch (rc) {
	case E_INSUFFICIENT_DRIVER:
		if (!p->driver_version)
			snprintf(p->reason, sizeof(p->reason),
				 "no CUDA device: no NVIDIA driver is loaded on this machine (libcuda.so.1 missing; "
				 "cudaGetDeviceCount: %s)",
				 m);
		else
			snprintf(p->reason, sizeof(p->reason),
				 "no CUDA device: the NVIDIA driver (CUDA %d.%d) is older than the runtime (CUDA %d.%d)",
				 p->driver_version / 1000, p->driver_version % 1000 / 10, p->runtime_version / 1000,
				 p->runtime_version % 1000 / 10);
		snprintf(p->hint, sizeof(p->hint),
			 "run on a machine with an NVIDIA GPU and driver (nvidia-smi should list it); CUDA candidates "
			 "still build and get static analysis here");
		break;
	case E_NO_DEVICE:
		snprintf(p->reason, sizeof(p->reason), "no CUDA device: the driver is loaded but sees no GPU (%s)", m);
		snprintf(p->hint, sizeof(p->hint),
			 "check nvidia-smi, CUDA_VISIBLE_DEVICES, and the container's --gpus option");
		break;
	case E_DEVICES_UNAVAILABLE:
		snprintf(p->reason, sizeof(p->reason), "no CUDA device: every GPU is busy or in exclusive mode (%s)", m);
		snprintf(p->hint, sizeof(p->hint), "nvidia-smi -q -d COMPUTE shows the compute mode");
		break;
	case E_SYSTEM_DRIVER_MISMATCH:
	case E_COMPAT_NOT_SUPPORTED:
		snprintf(p->reason, sizeof(p->reason), "no CUDA device: driver and runtime do not match (%s)", m);
		snprintf(p->hint, sizeof(p->hint), "reinstall the NVIDIA driver matching the CUDA toolkit");
		break;
	default:
		snprintf(p->reason, sizeof(p->reason), "no CUDA device: cudaGetDeviceCount failed with error %d (%s)", rc,
			 m);
		snprintf(p->hint, sizeof(p->hint), "nvidia-smi should list the GPU; check dmesg for NVRM errors");
		break;
	}
}

static void probe(struct pragma_gpu_probe *p)
{
	char which[4200] = "";
	void *h;
	count_fn count;
	attr_fn attr;
	ver_fn drv, rt;
	errstr_fn es;
	props_fn props;
	int n = 0, rc;

	memset(p, 0, sizeof(*p));
	h = open_cudart(which, sizeof(which));
	if (!h) {
		snprintf(p->reason, sizeof(p->reason), "no CUDA device: the CUDA runtime (libcudart.so) is not installed");
		snprintf(p->hint, sizeof(p->hint), "install the CUDA toolkit (or set PRAGMA_CUDART to a libcudart.so)");
		return;
	}
	snprintf(p->cudart, sizeof(p->cudart), "%.4000s", which);
	count = (count_fn)(uintptr_t)dlsym(h, "cudaGetDeviceCount");
	attr = (attr_fn)(uintptr_t)dlsym(h, "cudaDeviceGetAttribute");
	drv = (ver_fn)(uintptr_t)dlsym(h, "cudaDriverGetVersion");
	rt = (ver_fn)(uintptr_t)dlsym(h, "cudaRuntimeGetVersion");
	es = (errstr_fn)(uintptr_t)dlsym(h, "cudaGetErrorString");
	props = (props_fn)(uintptr_t)dlsym(h, "cudaGetDeviceProperties_v2");
	if (!props)
		props = (props_fn)(uintptr_t)dlsym(h, "cudaGetDeviceProperties");
	if (!count || !attr) {
		snprintf(p->reason, sizeof(p->reason), "no CUDA device: %.400s lacks cudaGetDeviceCount", which);
		snprintf(p->hint, sizeof(p->hint), "set PRAGMA_CUDART to a working libcudart.so");
		/* A runtime is never unloaded: its destructors may not expect it. */
		return;
	}
	if (drv)
		drv(&p->driver_version);
	if (rt)
		rt(&p->runtime_version);
	rc = count(&n);
	if (rc != 0 || n <= 0) {
		explain(p, rc ? rc : E_NO_DEVICE, es ? es(rc) : NULL);
		p->n_devices = 0;
		return;
	}
	if (n > (int)(sizeof(p->dev) / sizeof(p->dev[0])))
		n = (int)(sizeof(p->dev) / sizeof(p->dev[0]));
	for (int i = 0; i < n; i++) {
		struct pragma_gpu_device *d = &p->dev[i];
		int v;
		d->index = i;
#define A(field, id) (attr(&v, id, i) == 0 ? (void)(d->field = v) : (void)0)
		A(cc_major, A_CC_MAJOR);
		A(cc_minor, A_CC_MINOR);
		A(sms, A_SM_COUNT);
		A(clock_khz, A_CLOCK_RATE);
		A(mem_clock_khz, A_MEM_CLOCK_RATE);
		A(mem_bus_bits, A_MEM_BUS_WIDTH);
		A(l2_bytes, A_L2_SIZE);
		A(smem_per_block, A_SMEM_PER_BLOCK);
		A(smem_per_block_optin, A_SMEM_PER_BLOCK_OPTIN);
		A(smem_per_sm, A_SMEM_PER_SM);
		A(regs_per_block, A_REGS_PER_BLOCK);
		A(regs_per_sm, A_REGS_PER_SM);
		A(max_threads_per_sm, A_MAX_THREADS_PER_SM);
		A(max_threads_per_block, A_MAX_THREADS_PER_BLOCK);
		A(max_blocks_per_sm, A_MAX_BLOCKS_PER_SM);
		A(warp_size, A_WARP_SIZE);
#undef A
		if (props) {
			/* Larger than cudaDeviceProp of any release (about 1 KiB). */
			unsigned char *buf = calloc(1, 16384);
			if (buf && props(buf, i) == 0) {
				size_t mem;
				snprintf(d->name, sizeof(d->name), "%.255s", (const char *)buf);
				/* name[256], uuid[16], luid[8], unsigned mask, then size_t. */
				memcpy(&mem, buf + 288, sizeof(mem));
				d->total_mem = mem;
			}
			free(buf);
		}
		if (!d->name[0])
			snprintf(d->name, sizeof(d->name), "CUDA device %d (sm_%d%d)", i, d->cc_major, d->cc_minor);
	}
	p->n_devices = n;
}

int pragma_gpu_probe(struct pragma_gpu_probe *p)
{
	pthread_mutex_lock(&lock);
	if (!probed) {
		probe(&cached);
		probed = 1;
	}
	*p = cached;
	pthread_mutex_unlock(&lock);
	return 0;
}

int pragma_cuda_require_device(struct pragma_err *err)
{
	struct pragma_gpu_probe p;

	pragma_gpu_probe(&p);
	if (p.n_devices > 0)
		return 0;
	pragma_err_set(err, PRAGMA_E_ENV, "%s", p.reason);
	if (p.hint[0])
		pragma_err_hint(err, "%s", p.hint);
	return -1;
}
