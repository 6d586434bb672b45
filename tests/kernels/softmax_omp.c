// task: 18_softmax --set BATCH=4 --set DIM=32768
// Row softmax: max, sum of exp, scale; rows split across threads.
#include <pragma/kernel.h>
#include <math.h>

int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
    if (n_in != 1 || n_out != 1 || in[0].ndim != 2)
        return 1;
    int64_t rows = in[0].shape[0], cols = in[0].shape[1];
    const float *x = in[0].data;
    float *y = out[0].data;
    #pragma omp parallel for schedule(static)
    for (int64_t r = 0; r < rows; r++) {
        const float *xr = x + r * cols;
        float *yr = y + r * cols;
        float m = -INFINITY;
        for (int64_t c = 0; c < cols; c++)
            m = xr[c] > m ? xr[c] : m;
        double s = 0.0;
        for (int64_t c = 0; c < cols; c++) {
            float e = expf(xr[c] - m);
            yr[c] = e;
            s += e;
        }
        float inv = (float)(1.0 / s);
        for (int64_t c = 0; c < cols; c++)
            yr[c] *= inv;
    }
    return 0;
}
