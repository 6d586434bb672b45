/* 01_matmul_square, naive: C = A @ B with the i-j-k loop. The inner loop
 * walks B down a column (stride N floats): one cache line per element once
 * a column of B no longer fits in L1, and a serial FP sum the compiler may
 * not reorder, so nothing is vectorized. The "before" of the pair. */
#include <stdint.h>
#include "pragma/kernel.h"

int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
	const float *A = in[0].data, *B = in[1].data;
	float *C = out[0].data;
	int64_t N = in[0].shape[0];

	(void)n_in;
	(void)n_out;
	for (int64_t i = 0; i < N; i++)
		for (int64_t j = 0; j < N; j++) {
			float s = 0;
			for (int64_t k = 0; k < N; k++)
				s += A[i * N + k] * B[k * N + j];
			C[i * N + j] = s;
		}
	return 0;
}
