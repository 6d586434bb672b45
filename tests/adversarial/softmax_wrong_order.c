// expect: wrong_output
// task: $PRAGMA_TEST_DATA/fixtures/kb/softmax_rand.py
// The right values in the wrong order: each row written back to front.
// Every value is a true softmax value, so only their places are wrong.
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
            yr[c] = (float)(yr[c] / s);
        for (int64_t c = 0; c < dim / 2; c++) {
            float t = yr[c];
            yr[c] = yr[dim - 1 - c];
            yr[dim - 1 - c] = t;
        }
    }
    return 0;
}
