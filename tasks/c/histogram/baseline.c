/* histogram baseline: each OpenMP thread counts its share of the data into
 * four private sub-histograms (so consecutive equal bytes do not serialize on
 * one counter), then the partial counts are summed. Exact, like the
 * reference. */
#include <pragma/kernel.h>
#include <stdint.h>
#include <string.h>
#include <omp.h>

int pk_forward(const struct pk_tensor *inputs, int n_inputs,
               struct pk_tensor *outputs, int n_outputs)
{
    if (n_inputs != 1 || n_outputs != 1) return 1;
    const struct pk_tensor *d = &inputs[0];
    struct pk_tensor *c = &outputs[0];
    if (d->dtype != PK_UINT8 || c->dtype != PK_INT64) return 2;
    if (d->ndim != 1 || c->ndim != 1 || c->shape[0] != 256) return 3;
    int64_t N = d->shape[0];

    const uint8_t *restrict data = (const uint8_t *)d->data;
    int64_t *restrict counts = (int64_t *)c->data;

    for (int b = 0; b < 256; b++)
        counts[b] = 0;

    #pragma omp parallel
    {
        /* 32-bit sub-counters, flushed before they could overflow. */
        uint32_t h[4][256];
        int64_t local[256];
        memset(h, 0, sizeof h);
        memset(local, 0, sizeof local);
        const int64_t flush = (int64_t)1 << 31;   /* < 2^32 per counter */

        int nt = omp_get_num_threads(), t = omp_get_thread_num();
        int64_t lo = N * t / nt, hi = N * (t + 1) / nt;
        for (int64_t blk = lo; blk < hi; blk += flush) {
            int64_t end = hi - blk > flush ? blk + flush : hi;
            int64_t i = blk;
            for (; i + 4 <= end; i += 4) {
                h[0][data[i]]++;
                h[1][data[i + 1]]++;
                h[2][data[i + 2]]++;
                h[3][data[i + 3]]++;
            }
            for (; i < end; i++)
                h[0][data[i]]++;
            for (int b = 0; b < 256; b++) {
                local[b] += (int64_t)h[0][b] + h[1][b] + h[2][b] + h[3][b];
                h[0][b] = h[1][b] = h[2][b] = h[3][b] = 0;
            }
        }
        #pragma omp critical
        for (int b = 0; b < 256; b++)
            counts[b] += local[b];
    }
    return 0;
}
