/*
 * pragma kernel ABI (CPU and CUDA).
 *
 * A candidate kernel is one C (or CUDA C) source file that defines
 * pk_forward() below. The harness loads it, hands it the task's inputs and
 * preallocated outputs, and compares what it wrote with the reference.
 *
 * Rules a kernel must keep:
 *   - write every element of every output on every call;
 *   - never write the inputs;
 *   - keep nothing between calls (no cached results, no static outputs);
 *   - finish all work before returning (threads it started included);
 *   - use only libc, libm, OpenMP, C11/POSIX threads and intrinsics
 *     (<immintrin.h>); no other libraries (no BLAS), no files, no network,
 *     no processes.
 * For CUDA kernels the data pointers are device pointers and the harness
 * synchronizes the device after the call.
 */
#ifndef PRAGMA_KERNEL_H
#define PRAGMA_KERNEL_H

#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

enum pk_dtype { PK_FLOAT32, PK_FLOAT64, PK_FLOAT16, PK_BFLOAT16,
                PK_INT64, PK_INT32, PK_INT8, PK_UINT8, PK_BOOL };

#define PK_MAX_DIMS 8

struct pk_tensor {
    void *data;              /* contiguous, row-major, 64-byte aligned */
    enum pk_dtype dtype;
    int ndim;
    int64_t shape[PK_MAX_DIMS];
};

/* inputs: forward() arguments in order, then the module's parameters and
 * buffers in state_dict order; python scalars arrive as 0-d tensors.
 * outputs: allocated by the harness, must be fully written.
 * Returns 0 on success. */
int pk_forward(const struct pk_tensor *inputs, int n_inputs,
               struct pk_tensor *outputs, int n_outputs);

#ifdef __cplusplus
}
#endif

#endif /* PRAGMA_KERNEL_H */
