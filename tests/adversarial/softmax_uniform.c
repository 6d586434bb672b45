// expect: wrong_output
// task: $PRAGMA_TEST_DATA/fixtures/kb/softmax_rand.py
// Issue 14's kernel: a uniform distribution with a trace of the input,
// 1/dim + 1e-9 x. Every output of that softmax is 2e-6 .. 6e-6, so a fixed
// atol of 1e-4 accepted it although it is up to 72% off everywhere.
#include <pragma/kernel.h>
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    int64_t rows = in[0].shape[0], dim = in[0].shape[1];
    const float *x = in[0].data;
    float *y = out[0].data;
    for (int64_t i = 0; i < rows * dim; i++)
        y[i] = 1.0f / (float)dim + 1e-9f * x[i];
    return 0;
}
