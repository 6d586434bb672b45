// task: 13_relu
// ReLU with non-temporal (streaming) stores: reads x once, writes y once,
// no write-allocate read of y. bench/roofs.sh times it against the roof.
#include <pragma/kernel.h>
#include <immintrin.h>
#include <omp.h>
#include <stdint.h>

int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
    if (n_in != 1 || n_out != 1 || in[0].dtype != PK_FLOAT32)
        return 1;
    int64_t n = 1;
    for (int d = 0; d < in[0].ndim; d++)
        n *= in[0].shape[d];
    const float *x = in[0].data;
    float *y = out[0].data;
    const int64_t blk = 64, nb = n / blk;   /* 256-byte blocks: every thread's range stays aligned */
#pragma omp parallel
    {
        int t = omp_get_thread_num(), nt = omp_get_num_threads();
        int64_t lo = nb * t / nt * blk, hi = nb * (t + 1) / nt * blk;
#if defined(__AVX512F__)
        const __m512 z = _mm512_setzero_ps();
        for (int64_t i = lo; i < hi; i += 32) {
            _mm512_stream_ps(y + i, _mm512_max_ps(_mm512_load_ps(x + i), z));
            _mm512_stream_ps(y + i + 16, _mm512_max_ps(_mm512_load_ps(x + i + 16), z));
        }
#else
        const __m256 z = _mm256_setzero_ps();
        for (int64_t i = lo; i < hi; i += 16) {
            _mm256_stream_ps(y + i, _mm256_max_ps(_mm256_load_ps(x + i), z));
            _mm256_stream_ps(y + i + 8, _mm256_max_ps(_mm256_load_ps(x + i + 8), z));
        }
#endif
        _mm_sfence();
    }
    for (int64_t i = nb * blk; i < n; i++)
        y[i] = x[i] > 0.0f ? x[i] : 0.0f;
    return 0;
}
