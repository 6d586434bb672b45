/* 13_relu at the bandwidth roof: AVX2 max, non-temporal (streaming) stores
 * so the output does not cost a read-for-ownership, the array split among
 * OpenMP threads. ReLU does one comparison per 8 bytes moved: nothing but
 * memory bandwidth can bind it. */
#include <immintrin.h>
#include <stdint.h>
#include "pragma/kernel.h"

__attribute__((target("avx2")))
int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t n = 1;

	(void)n_in;
	(void)n_out;
	for (int d = 0; d < in[0].ndim; d++)
		n *= in[0].shape[d];
	int64_t nv = n / 8 * 8;   /* data is 64-byte aligned: aligned vectors up to nv */
#pragma omp parallel for schedule(static)
	for (int64_t i = 0; i < nv; i += 8)
		_mm256_stream_ps(y + i, _mm256_max_ps(_mm256_load_ps(x + i), _mm256_setzero_ps()));
	_mm_sfence();
	for (int64_t i = nv; i < n; i++)
		y[i] = x[i] > 0.0f ? x[i] : 0.0f;
	return 0;
}
