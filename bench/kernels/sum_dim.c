// task: 37_sum_dim
// Sum over dim 1 of a (B, R, C) tensor, keepdim: out[b][0][c] = sum_r x[b][r][c].
// Every thread streams whole batches front to back (one contiguous stream, as
// the hardware prefetchers like it), the partial sums of a row (up to 4096
// columns, 16 KiB) staying in L1: x is read once.
#include <pragma/kernel.h>
#include <stdint.h>
#include <string.h>

#define CB 4096   /* columns per tile: up to 16 KiB of partial sums, in L1 */

int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
    if (n_in != 1 || n_out != 1 || in[0].dtype != PK_FLOAT32 || in[0].ndim != 3)
        return 1;
    const int64_t B = in[0].shape[0], R = in[0].shape[1], C = in[0].shape[2];
    const float *x = in[0].data;
    float *y = out[0].data;
    const int64_t ncb = (C + CB - 1) / CB;
#pragma omp parallel for schedule(static)
    for (int64_t t = 0; t < B * ncb; t++) {
        int64_t b = t / ncb, c0 = (t % ncb) * CB, w = C - c0 < CB ? C - c0 : CB;
        float acc[CB];
        memset(acc, 0, sizeof(acc));
        const float *p = x + b * R * C + c0;
        for (int64_t r = 0; r < R; r++, p += C) {
#pragma omp simd
            for (int64_t c = 0; c < w; c++)
                acc[c] += p[c];
        }
        memcpy(y + b * C + c0, acc, (size_t)w * sizeof(float));
    }
    return 0;
}
