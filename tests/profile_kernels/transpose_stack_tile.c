/* transpose through a stack tile: a 16x16 block of a is read row by row
 * into t, transposed on the way in (stores with an index register into the
 * array on the stack), then written out row by row. No register spills:
 * stores into a stack array are not spills (they were once counted as
 * "vector spills in inner loops"). */
#include <stdint.h>
#include "pragma/kernel.h"

#define T 16

int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
	if (n_in != 1 || n_out != 1 || in[0].ndim != 2)
		return 1;
	int64_t N = in[0].shape[0], M = in[0].shape[1];
	const float *a = in[0].data;
	float *at = out[0].data;

	for (int64_t ib = 0; ib < N; ib += T)
		for (int64_t jb = 0; jb < M; jb += T) {
			float t[T][T];
			int64_t ni = N - ib < T ? N - ib : T, nj = M - jb < T ? M - jb : T;
			for (int64_t i = 0; i < ni; i++)
				for (int64_t j = 0; j < nj; j++)
					t[j][i] = a[(ib + i) * M + jb + j];
			for (int64_t j = 0; j < nj; j++)
				for (int64_t i = 0; i < ni; i++)
					at[(jb + j) * N + ib + i] = t[j][i];
		}
	return 0;
}
