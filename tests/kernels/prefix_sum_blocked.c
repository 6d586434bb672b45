// task: prefix_sum --set N=100003
// Two-pass parallel scan: block sums, exclusive scan of them, then local scans.
#include <pragma/kernel.h>
#include <omp.h>
#include <stdlib.h>

int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
    if (n_in != 1 || n_out != 1 || in[0].dtype != PK_FLOAT64)
        return 1;
    const double *x = in[0].data;
    double *y = out[0].data;
    int64_t n = in[0].shape[0];
    int nt = omp_get_max_threads();
    double *part = calloc((size_t)nt + 1, sizeof(double));
    if (!part)
        return 2;
    #pragma omp parallel num_threads(nt)
    {
        int t = omp_get_thread_num(), T = omp_get_num_threads();
        int64_t lo = n * t / T, hi = n * (t + 1) / T;
        double s = 0;
        for (int64_t i = lo; i < hi; i++) {
            s += x[i];
            y[i] = s;
        }
        part[t + 1] = s;
        #pragma omp barrier
        #pragma omp single
        for (int k = 1; k <= T; k++)
            part[k] += part[k - 1];
        double off = part[t];
        for (int64_t i = lo; i < hi; i++)
            y[i] += off;
    }
    free(part);
    return 0;
}
