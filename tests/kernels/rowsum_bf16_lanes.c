// task: $PRAGMA_TEST_DATA/fixtures/tasks/rowsum_bf16
// bfloat16 row sums in 8 float32 lanes, pairwise at the end, rows over
// OpenMP threads; rounded to bfloat16 once (nearest even). Another order
// than the reference's: results may differ by an ulp of bfloat16 (2^-8).
#include <pragma/kernel.h>
#include <stdint.h>
#include <string.h>
static inline float from_bf16(uint16_t h)
{
    uint32_t w = (uint32_t)h << 16;
    float f;
    memcpy(&f, &w, 4);
    return f;
}
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    int64_t R = in[0].shape[0], L = in[0].shape[1];
    const uint16_t *x = in[0].data;
    uint16_t *y = out[0].data;
    #pragma omp parallel for
    for (int64_t r = 0; r < R; r++) {
        float lane[8] = { 0 };
        int64_t i = 0;
        for (; i + 8 <= L; i += 8)
            for (int l = 0; l < 8; l++)
                lane[l] += from_bf16(x[r * L + i + l]);
        for (; i < L; i++)
            lane[0] += from_bf16(x[r * L + i]);
        float s = ((lane[0] + lane[1]) + (lane[2] + lane[3])) + ((lane[4] + lane[5]) + (lane[6] + lane[7]));
        uint32_t w;
        memcpy(&w, &s, 4);
        w += 0x7fff + ((w >> 16) & 1);
        y[r] = (uint16_t)(w >> 16);
    }
    return 0;
}
