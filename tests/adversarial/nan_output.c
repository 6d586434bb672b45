// expect: nan_output
// A "numerically unstable" kernel: 0/0 on part of the output.
#include <pragma/kernel.h>
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    int64_t N = in[0].shape[0], M = in[0].shape[1];
    const float *a = in[0].data;
    float *o = out[0].data;
    volatile float zero = 0.0f;
    for (int64_t i = 0; i < N; i++)
        for (int64_t j = 0; j < M; j++)
            o[j * N + i] = (i == 3) ? zero / zero : a[i * M + j];
    return 0;
}
