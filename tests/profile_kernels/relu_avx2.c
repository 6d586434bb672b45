/* 13_relu, AVX2: eight floats per instruction (vmaxps on ymm registers),
 * unrolled by four, scalar tail. One thread. The "after" of the scalar vs
 * AVX2 pair. */
#include <immintrin.h>
#include <stdint.h>
#include "pragma/kernel.h"

__attribute__((target("avx2")))
int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t n = 1, i = 0;
	__m256 zero = _mm256_setzero_ps();

	(void)n_in;
	(void)n_out;
	for (int d = 0; d < in[0].ndim; d++)
		n *= in[0].shape[d];
	for (; i + 32 <= n; i += 32) {
		_mm256_storeu_ps(y + i, _mm256_max_ps(_mm256_loadu_ps(x + i), zero));
		_mm256_storeu_ps(y + i + 8, _mm256_max_ps(_mm256_loadu_ps(x + i + 8), zero));
		_mm256_storeu_ps(y + i + 16, _mm256_max_ps(_mm256_loadu_ps(x + i + 16), zero));
		_mm256_storeu_ps(y + i + 24, _mm256_max_ps(_mm256_loadu_ps(x + i + 24), zero));
	}
	for (; i < n; i++)
		y[i] = x[i] > 0.0f ? x[i] : 0.0f;
	return 0;
}
