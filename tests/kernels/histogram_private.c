// task: histogram --set N=1000003
// Per-thread private histograms, merged at the end (no atomics in the hot loop).
#include <pragma/kernel.h>
#include <omp.h>
#include <string.h>

int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
    if (n_in != 1 || n_out != 1 || in[0].dtype != PK_UINT8 || out[0].dtype != PK_INT64)
        return 1;
    const uint8_t *d = in[0].data;
    int64_t n = in[0].shape[0], *counts = out[0].data;
    memset(counts, 0, 256 * sizeof(int64_t));
    #pragma omp parallel
    {
        int64_t local[256];
        memset(local, 0, sizeof(local));
        #pragma omp for schedule(static) nowait
        for (int64_t i = 0; i < n; i++)
            local[d[i]]++;
        #pragma omp critical
        for (int b = 0; b < 256; b++)
            counts[b] += local[b];
    }
    return 0;
}
