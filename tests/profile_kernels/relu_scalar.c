/* 13_relu, scalar: vectorization switched off for this function, so every
 * element is one scalar max (maxss). The "before" of the scalar vs AVX2
 * pair. */
#include <stdint.h>
#include "pragma/kernel.h"

__attribute__((optimize("no-tree-vectorize")))
int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t n = 1;

	(void)n_in;
	(void)n_out;
	for (int d = 0; d < in[0].ndim; d++)
		n *= in[0].shape[d];
	for (int64_t i = 0; i < n; i++)
		y[i] = x[i] > 0.0f ? x[i] : 0.0f;
	return 0;
}
