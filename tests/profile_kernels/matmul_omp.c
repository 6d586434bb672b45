/* 01_matmul_square, cache-blocked as matmul_blocked.c, with the row tiles
 * shared among OpenMP threads (each thread owns whole rows of C: no races,
 * no reduction). The "after" of the one-thread vs OpenMP pair. */
#include <stdint.h>
#include <string.h>
#include "pragma/kernel.h"

#define BI 32
#define BJ 128
#define BK 32

static void tile(const float *restrict A, const float *restrict B, float *restrict C, int64_t N, int64_t i0,
		 int64_t j0, int64_t k0)
{
	int64_t i1 = i0 + BI < N ? i0 + BI : N, j1 = j0 + BJ < N ? j0 + BJ : N, k1 = k0 + BK < N ? k0 + BK : N;

	for (int64_t i = i0; i < i1; i++)
		for (int64_t k = k0; k < k1; k++) {
			float a = A[i * N + k];
			for (int64_t j = j0; j < j1; j++)
				C[i * N + j] += a * B[k * N + j];
		}
}

int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
	const float *A = in[0].data, *B = in[1].data;
	float *C = out[0].data;
	int64_t N = in[0].shape[0];

	(void)n_in;
	(void)n_out;
#pragma omp parallel for schedule(static)
	for (int64_t i0 = 0; i0 < N; i0 += BI) {
		memset(C + i0 * N, 0, (size_t)((i0 + BI < N ? BI : N - i0) * N) * sizeof(float));
		for (int64_t j0 = 0; j0 < N; j0 += BJ)
			for (int64_t k0 = 0; k0 < N; k0 += BK)
				tile(A, B, C, N, i0, j0, k0);
	}
	return 0;
}
