// expect: wrong_output
// task: $PRAGMA_TEST_DATA/fixtures/tasks/rowsum_bf16
// bfloat16 row sums 5% too large: outside the half-precision tolerance
// (rtol 1e-2), which one rounding to bfloat16 (at most 2^-8) stays inside.
#include <pragma/kernel.h>
#include <stdint.h>
#include <string.h>
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    int64_t R = in[0].shape[0], L = in[0].shape[1];
    const uint16_t *x = in[0].data;
    uint16_t *y = out[0].data;
    for (int64_t r = 0; r < R; r++) {
        float s = 0;
        for (int64_t i = 0; i < L; i++) {
            uint32_t w = (uint32_t)x[r * L + i] << 16;
            float f;
            memcpy(&f, &w, 4);
            s += f;
        }
        s *= 1.05f;
        uint32_t w;
        memcpy(&w, &s, 4);
        w += 0x7fff + ((w >> 16) & 1);
        y[r] = (uint16_t)(w >> 16);
    }
    return 0;
}
