/*
 * The CUDA harness's sandbox (runtime/cuda/sandbox_gpu.c). It differs from
 * the CPU harness's (runtime/sandbox.c) where a GPU needs it to:
 *   - no address-space limit (the parent sets none: the CUDA runtime
 *     reserves terabytes of virtual address space for unified addressing);
 *   - entered after CUDA is initialized (context, buffers, events), so the
 *     driver has opened its device nodes and mapped its memory already;
 *   - the device nodes (/dev/nvidia*) stay usable, ioctls included: every
 *     launch, copy and synchronization is an ioctl on them;
 *   - under ncu (profiler mode) ncu's injected library works on the
 *     launching thread (its lock file, temporary files, sockets to the
 *     front end): its directories (resolved through symlinks, also taken
 *     from CUDA_INJECTION64_PATH and LD_PRELOAD), /tmp, $TMPDIR, /dev/shm
 *     and ncu's TCP ports stay reachable, and the calls it makes are
 *     allowed (sandbox_gpu.c lists them and why). Only verified kernels
 *     are profiled.
 * Like the CPU harness, it enters in two stages around dlopen: stage 1
 * (Landlock + a seccomp allow-list that still lets the loader open
 * files), stage 2 (no opening files at all).
 */
#ifndef PRAGMA_GPU_SANDBOX_H
#define PRAGMA_GPU_SANDBOX_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

struct gpu_sandbox {
	/* request */
	int enabled, landlock_wanted, seccomp_wanted;
	int profiler;                /* running under ncu */
	const char *kernel_so;
	const char *cuda_lib_dir;    /* where libcudart was loaded from */
	const char *tool_dir;        /* ncu's installation (profiler mode), or NULL */
	int pid;
	/* what happened */
	int landlock_abi;
	char landlock[160];
	int seccomp, seccomp_locked;
};

/* One Landlock rule: a path (resolved) and the access granted beneath. */
struct gpu_ll_rule {
	char path[4096];
	uint64_t access;             /* LANDLOCK_ACCESS_FS_* */
};

#define GPU_LL_RULES_MAX 128

/* The filesystem rules the sandbox would enter with (at most cap); how
 * many. The system libraries, the kernel, libcudart's directory, the
 * device nodes; in profiler mode also ncu's directories, /tmp, $TMPDIR,
 * /dev/shm and /proc. For tests and for the sandbox itself. */
int gpu_sandbox_rules(const struct gpu_sandbox *sb, struct gpu_ll_rule *r, int cap);
/* The syscalls every run may make, and what profiler mode adds
 * (NULL-terminated names). */
const char *const *gpu_sandbox_base_syscalls(void);
const char *const *gpu_sandbox_profiler_syscalls(void);

/* Landlock's ABI (0: none; why says so). */
int gpu_landlock_abi(char *why, size_t len);
/* Stage 1. 0, or -1 with why. */
int gpu_sandbox_enter(struct gpu_sandbox *sb, char *why, size_t len);
/* Stage 2: after dlopen, no more opening of files. */
int gpu_sandbox_lock(struct gpu_sandbox *sb, char *why, size_t len);

#ifdef __cplusplus
}
#endif

#endif
