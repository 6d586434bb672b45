// expect: wrong_output
// task: $PRAGMA_TEST_DATA/fixtures/kb/softmax_rand.py
// The right softmax, 1% too large everywhere: small in absolute terms
// (6e-8), so a fixed atol of 1e-4 accepted it.
#include <pragma/kernel.h>
#include <math.h>
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    int64_t rows = in[0].shape[0], dim = in[0].shape[1];
    const float *x = in[0].data;
    float *y = out[0].data;
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * dim;
        float *yr = y + r * dim, m = -INFINITY;
        double s = 0;
        for (int64_t c = 0; c < dim; c++)
            m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < dim; c++)
            s += (yr[c] = expf(xr[c] - m));
        for (int64_t c = 0; c < dim; c++)
            yr[c] = (float)(yr[c] / s) * 1.01f;
    }
    return 0;
}
