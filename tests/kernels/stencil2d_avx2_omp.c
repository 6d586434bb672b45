// task: stencil2d --set N=300 --set M=257
// 5-point Jacobi step: OpenMP over rows, AVX2 (+FMA) across columns.
// pragma:flags -mavx2 -mfma -funroll-loops
#include <pragma/kernel.h>
#include <immintrin.h>
#include <string.h>

int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
    if (n_in != 1 || n_out != 1 || in[0].ndim != 2)
        return 1;
    int64_t N = in[0].shape[0], M = in[0].shape[1];
    const float *g = in[0].data;
    float *o = out[0].data;
    if (N < 3 || M < 3) {
        memcpy(o, g, sizeof(float) * (size_t)(N * M));
        return 0;
    }
    memcpy(o, g, sizeof(float) * (size_t)M);
    memcpy(o + (N - 1) * M, g + (N - 1) * M, sizeof(float) * (size_t)M);
    const __m256 fifth = _mm256_set1_ps(0.2f);
    #pragma omp parallel for schedule(static)
    for (int64_t i = 1; i < N - 1; i++) {
        const float *up = g + (i - 1) * M, *row = g + i * M, *dn = g + (i + 1) * M;
        float *dst = o + i * M;
        dst[0] = row[0];
        dst[M - 1] = row[M - 1];
        int64_t j = 1;
        for (; j + 8 <= M - 1; j += 8) {
            __m256 s = _mm256_add_ps(_mm256_loadu_ps(row + j), _mm256_loadu_ps(up + j));
            s = _mm256_add_ps(s, _mm256_loadu_ps(dn + j));
            s = _mm256_add_ps(s, _mm256_loadu_ps(row + j - 1));
            s = _mm256_add_ps(s, _mm256_loadu_ps(row + j + 1));
            _mm256_storeu_ps(dst + j, _mm256_mul_ps(s, fifth));
        }
        for (; j < M - 1; j++)
            dst[j] = 0.2f * (row[j] + up[j] + dn[j] + row[j - 1] + row[j + 1]);
    }
    return 0;
}
