/* 01_matmul_square with a 6x32 register tile of C in AVX-512: twelve zmm
 * accumulators, per k two loads of B, six broadcasts of A and twelve FMAs.
 * Twelve independent chains cover the FMA latency (4 cycles on 2 units
 * needs 8), so the inner loop is bound by the FMA ports: about 6 cycles
 * per iteration on a core with two 512-bit FMA units (llvm-mca
 * icelake-server), up to twice that on Zen 4 (512-bit operations on
 * 256-bit units). Edges in scalar code. Needs AVX-512F to run. */
#include <immintrin.h>
#include <stdint.h>
#include "pragma/kernel.h"

#define MR 6
#define NR 32

__attribute__((target("avx512f,fma")))
static void tile(const float *A, const float *B, float *C, int64_t N, int64_t i, int64_t j)
{
	__m512 c00 = _mm512_setzero_ps(), c01 = _mm512_setzero_ps(), c10 = _mm512_setzero_ps(), c11 = _mm512_setzero_ps(), c20 = _mm512_setzero_ps(), c21 = _mm512_setzero_ps(), c30 = _mm512_setzero_ps(), c31 = _mm512_setzero_ps(), c40 = _mm512_setzero_ps(), c41 = _mm512_setzero_ps(), c50 = _mm512_setzero_ps(), c51 = _mm512_setzero_ps();

	for (int64_t k = 0; k < N; k++) {
		__m512 b0 = _mm512_loadu_ps(B + k * N + j), b1 = _mm512_loadu_ps(B + k * N + j + 16), a;
		a = _mm512_set1_ps(A[(i + 0) * N + k]);
		c00 = _mm512_fmadd_ps(a, b0, c00);
		c01 = _mm512_fmadd_ps(a, b1, c01);
		a = _mm512_set1_ps(A[(i + 1) * N + k]);
		c10 = _mm512_fmadd_ps(a, b0, c10);
		c11 = _mm512_fmadd_ps(a, b1, c11);
		a = _mm512_set1_ps(A[(i + 2) * N + k]);
		c20 = _mm512_fmadd_ps(a, b0, c20);
		c21 = _mm512_fmadd_ps(a, b1, c21);
		a = _mm512_set1_ps(A[(i + 3) * N + k]);
		c30 = _mm512_fmadd_ps(a, b0, c30);
		c31 = _mm512_fmadd_ps(a, b1, c31);
		a = _mm512_set1_ps(A[(i + 4) * N + k]);
		c40 = _mm512_fmadd_ps(a, b0, c40);
		c41 = _mm512_fmadd_ps(a, b1, c41);
		a = _mm512_set1_ps(A[(i + 5) * N + k]);
		c50 = _mm512_fmadd_ps(a, b0, c50);
		c51 = _mm512_fmadd_ps(a, b1, c51);
	}
	_mm512_storeu_ps(C + (i + 0) * N + j, c00);
	_mm512_storeu_ps(C + (i + 0) * N + j + 16, c01);
	_mm512_storeu_ps(C + (i + 1) * N + j, c10);
	_mm512_storeu_ps(C + (i + 1) * N + j + 16, c11);
	_mm512_storeu_ps(C + (i + 2) * N + j, c20);
	_mm512_storeu_ps(C + (i + 2) * N + j + 16, c21);
	_mm512_storeu_ps(C + (i + 3) * N + j, c30);
	_mm512_storeu_ps(C + (i + 3) * N + j + 16, c31);
	_mm512_storeu_ps(C + (i + 4) * N + j, c40);
	_mm512_storeu_ps(C + (i + 4) * N + j + 16, c41);
	_mm512_storeu_ps(C + (i + 5) * N + j, c50);
	_mm512_storeu_ps(C + (i + 5) * N + j + 16, c51);
}

static void edge(const float *A, const float *B, float *C, int64_t N, int64_t i0, int64_t i1, int64_t j0, int64_t j1)
{
	for (int64_t i = i0; i < i1; i++)
		for (int64_t j = j0; j < j1; j++) {
			float s = 0;
			for (int64_t k = 0; k < N; k++)
				s += A[i * N + k] * B[k * N + j];
			C[i * N + j] = s;
		}
}

int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
	const float *A = in[0].data, *B = in[1].data;
	float *C = out[0].data;
	int64_t N = in[0].shape[0], mi = N / MR * MR, mj = N / NR * NR;

	(void)n_in;
	(void)n_out;
	for (int64_t i = 0; i < mi; i += MR)
		for (int64_t j = 0; j < mj; j += NR)
			tile(A, B, C, N, i, j);
	edge(A, B, C, N, 0, mi, mj, N);
	edge(A, B, C, N, mi, N, 0, N);
	return 0;
}
