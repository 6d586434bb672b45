// Correct, but its work runs on a stream of its own, which it does not wait
// for: the harness synchronizes the whole device, so the work still counts
// inside the timed region and the outputs are complete when read back.
#include <pragma/kernel.h>

__global__ void half(const float *a, const float *b, float *c, long lo, long hi)
{
	long i = lo + blockIdx.x * (long)blockDim.x + threadIdx.x;
	if (i < hi)
		c[i] = a[i] + b[i];
}

extern "C" int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
	long n = in[0].shape[0], m = n / 2;
	cudaStream_t s;
	(void)n_in;
	(void)n_out;
	if (cudaStreamCreateWithFlags(&s, cudaStreamNonBlocking) != cudaSuccess)
		return 1;
	half<<<(unsigned)((m + 255) / 256), 256, 0, s>>>((const float *)in[0].data, (const float *)in[1].data,
							(float *)out[0].data, 0, m);
	half<<<(unsigned)((n - m + 255) / 256), 256>>>((const float *)in[0].data, (const float *)in[1].data,
						      (float *)out[0].data, m, n);
	cudaStreamDestroy(s); /* returns at once; the work finishes later */
	return 0;
}
