// task: 31_frobenius_norm
// x / ||x||_F with the sum of 16.7M squares in float64: the accurate answer.
// PyTorch 1.13's norm of that many float32 values is 6.5e-4 too small, so an
// accurate kernel is 6.5e-4 off the reference everywhere; the task states
// rtol 2e-3 for that (docs/verifier.md), and this kernel must pass.
#include <pragma/kernel.h>
#include <math.h>
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    int64_t n = 1;
    for (int d = 0; d < in[0].ndim; d++)
        n *= in[0].shape[d];
    const float *x = in[0].data;
    float *y = out[0].data;
    double s = 0;
    #pragma omp parallel for reduction(+:s)
    for (int64_t i = 0; i < n; i++)
        s += (double)x[i] * x[i];
    float inv = (float)(1.0 / sqrt(s));
    #pragma omp parallel for
    for (int64_t i = 0; i < n; i++)
        y[i] = x[i] * inv;
    return 0;
}
