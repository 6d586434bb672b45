// task: 13_relu --set BATCH=4 --set DIM=65536
// ReLU with AVX2 intrinsics and OpenMP; a scalar tail for any size.
// pragma:flags -mavx2 -mfma
#include <pragma/kernel.h>
#include <immintrin.h>

int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
    if (n_in != 1 || n_out != 1 || in[0].dtype != PK_FLOAT32)
        return 1;
    int64_t n = 1;
    for (int d = 0; d < in[0].ndim; d++)
        n *= in[0].shape[d];
    const float *x = in[0].data;
    float *y = out[0].data;
    int64_t vec = n & ~(int64_t)31;
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < vec; i += 32) {
        __m256 z = _mm256_setzero_ps();
        _mm256_storeu_ps(y + i, _mm256_max_ps(_mm256_loadu_ps(x + i), z));
        _mm256_storeu_ps(y + i + 8, _mm256_max_ps(_mm256_loadu_ps(x + i + 8), z));
        _mm256_storeu_ps(y + i + 16, _mm256_max_ps(_mm256_loadu_ps(x + i + 16), z));
        _mm256_storeu_ps(y + i + 24, _mm256_max_ps(_mm256_loadu_ps(x + i + 24), z));
    }
    for (int64_t i = vec; i < n; i++)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
    return 0;
}
