/* 13_relu, wrong: writes zeros. Only verified kernels are profiled. */
#include <stdint.h>
#include <string.h>
#include "pragma/kernel.h"

int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
	int64_t n = 1;

	(void)n_in;
	(void)n_out;
	for (int d = 0; d < in[0].ndim; d++)
		n *= in[0].shape[d];
	memset(out[0].data, 0, (size_t)n * sizeof(float));
	return 0;
}
