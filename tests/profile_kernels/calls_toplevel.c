/* 13_relu with calls everywhere but in a loop: malloc, memcpy and free at
 * the top level of pk_forward, posix_memalign and free inside an OpenMP
 * parallel region outside its loop. gcc places the error paths after the
 * return and jumps back from them, which once made the whole function look
 * like a loop ("calls free (inside an innermost loop)"). */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include "pragma/kernel.h"

int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
	const float *x = in[0].data;
	float *y = out[0].data;
	int64_t n = 1;

	(void)n_in;
	(void)n_out;
	for (int d = 0; d < in[0].ndim; d++)
		n *= in[0].shape[d];
	float *tmp = malloc((size_t)n * sizeof(float));
	if (!tmp)
		return 1;
#pragma omp parallel
	{
		void *scratch = NULL;
		if (posix_memalign(&scratch, 64, 4096))
			scratch = NULL;
#pragma omp for
		for (int64_t i = 0; i < n; i++)
			tmp[i] = x[i] > 0 ? x[i] : 0.0f;
		free(scratch);
	}
	memcpy(y, tmp, (size_t)n * sizeof(float));
	free(tmp);
	return 0;
}
