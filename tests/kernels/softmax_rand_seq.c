// task: $PRAGMA_TEST_DATA/fixtures/kb/softmax_rand.py
// The softmax (outputs 2e-6 .. 6e-6) computed honestly: the sum of
// 262144 exponentials in one float32 accumulator, in order, the sloppiest
// honest way (relative error ~2e-5). It must pass the rule that refuses the
// wrong-but-small answers in tests/adversarial/softmax_*.c.
#include <pragma/kernel.h>
#include <math.h>
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    int64_t rows = in[0].shape[0], dim = in[0].shape[1];
    const float *x = in[0].data;
    float *y = out[0].data;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * dim;
        float *yr = y + r * dim, m = -INFINITY, s = 0;
        for (int64_t c = 0; c < dim; c++)
            m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < dim; c++)
            s += (yr[c] = expf(xr[c] - m));
        for (int64_t c = 0; c < dim; c++)
            yr[c] /= s;
    }
    return 0;
}
