// task: 18_softmax --set BATCH=4
// Softmax over rows of 1048576 with a polynomial exp (2^k p(r), degree 5:
// about 2e-6 relative error) and the sum in 8 float32 lanes: an honest fast
// kernel whose rounding differs from PyTorch's, within the tolerance.
#include <pragma/kernel.h>
#include <math.h>
static inline float fast_exp(float x)
{
    float k = nearbyintf(x * 1.44269504f), r = x - k * 0.693147181f;
    float p = 1 + r * (1 + r * (0.5f + r * (1.0f / 6 + r * (1.0f / 24 + r * (1.0f / 120)))));
    return ldexpf(p, (int)k);
}
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    int64_t rows = in[0].shape[0], dim = in[0].shape[1];
    const float *x = in[0].data;
    float *y = out[0].data;
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * dim;
        float *yr = y + r * dim, m = -INFINITY, lane[8] = { 0 }, s = 0;
        for (int64_t c = 0; c < dim; c++)
            m = xr[c] > m ? xr[c] : m;
        for (int64_t c = 0; c < dim; c++)
            lane[c % 8] += (yr[c] = fast_exp(xr[c] - m));
        for (int l = 0; l < 8; l++)
            s += lane[l];
        float inv = 1.0f / s;
        for (int64_t c = 0; c < dim; c++)
            yr[c] *= inv;
    }
    return 0;
}
