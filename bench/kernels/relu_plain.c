// task: 13_relu
// ReLU as a compiler writes it: ordinary stores, so each line of y is read
// before it is written (write-allocate), traffic the task's minimal bytes do
// not count. The copy-like kernel of bench/roofs.sh.
#include <pragma/kernel.h>
#include <stdint.h>

int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
    if (n_in != 1 || n_out != 1 || in[0].dtype != PK_FLOAT32)
        return 1;
    int64_t n = 1;
    for (int d = 0; d < in[0].ndim; d++)
        n *= in[0].shape[d];
    const float *restrict x = in[0].data;
    float *restrict y = out[0].data;
#pragma omp parallel for simd schedule(static)
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
    return 0;
}
