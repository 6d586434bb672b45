// pragma:flags -maxrregcount=24
// Correct but register-starved: 48 values loaded up front and combined
// pairwise, under a 24-register cap, spill to local memory (ptxas reports
// spill bytes). The combination is multiplied by zero (it is finite), so
// the output is exactly a + b.
#include <pragma/kernel.h>

#define K 48

__global__ void vadd_spill(const float *a, const float *b, float *c, long n)
{
	long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
	float v[K], s = 0;
	if (i >= n)
		return;
#pragma unroll
	for (int k = 0; k < K; k++)
		v[k] = a[(i + 97L * k) % n];
#pragma unroll
	for (int k = 0; k < K; k++)
		s += v[k] * v[K - 1 - k];
	c[i] = a[i] + b[i] + 0.0f * s;
}

extern "C" int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
	long n = in[0].shape[0];
	(void)n_in;
	(void)n_out;
	vadd_spill<<<(unsigned)((n + 255) / 256), 256>>>((const float *)in[0].data, (const float *)in[1].data,
							(float *)out[0].data, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
