// task: $PRAGMA_TEST_DATA/fixtures/tasks/rowsum_f16
// float16 row sums the way a SIMD kernel adds them: 16 float32 lanes per row,
// rows over OpenMP threads, then the lanes; rounded to float16 once. The
// order differs from the reference's, so results may differ by an ulp.
#include <pragma/kernel.h>
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    int64_t R = in[0].shape[0], L = in[0].shape[1];
    const _Float16 *x = in[0].data;
    _Float16 *y = out[0].data;
    #pragma omp parallel for
    for (int64_t r = 0; r < R; r++) {
        float lane[16] = { 0 }, s = 0;
        int64_t i = 0;
        for (; i + 16 <= L; i += 16)
            for (int l = 0; l < 16; l++)
                lane[l] += (float)x[r * L + i + l];
        for (; i < L; i++)
            lane[0] += (float)x[r * L + i];
        for (int l = 15; l >= 0; l--)
            s += lane[l];
        y[r] = (_Float16)s;
    }
    return 0;
}
