/* 01_matmul_square accumulating a 16x16 tile of C in a stack array: gcc
 * keeps the tile in memory (memset takes its address) and, short of
 * registers in the fully unrolled inner loops, spills the broadcasts of A
 * to fixed stack slots and reloads them: real spills, next to the tile's
 * own loads and stores, which are not. */
#include <stdint.h>
#include <string.h>
#include "pragma/kernel.h"

#define TB 16

int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
	const float *A = in[0].data, *B = in[1].data;
	float *C = out[0].data;
	int64_t N = in[0].shape[0];

	(void)n_in;
	(void)n_out;
	for (int64_t i0 = 0; i0 + TB <= N; i0 += TB)
		for (int64_t j0 = 0; j0 + TB <= N; j0 += TB) {
			float t[TB][TB];
			memset(t, 0, sizeof(t));
			for (int64_t k = 0; k < N; k++)
				for (int64_t i = 0; i < TB; i++) {
					float a = A[(i0 + i) * N + k];
					for (int64_t j = 0; j < TB; j++)
						t[i][j] += a * B[k * N + j0 + j];
				}
			for (int64_t i = 0; i < TB; i++)
				memcpy(C + (i0 + i) * N + j0, t[i], sizeof(t[i]));
		}
	return 0;
}
