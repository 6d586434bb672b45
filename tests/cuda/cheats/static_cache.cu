// expect: output_cached
// Computes once into a device buffer it keeps, then copies that buffer on
// every later call, whatever the inputs.
#include <pragma/kernel.h>

__global__ void vadd_kernel(const float *a, const float *b, float *c, long n)
{
	long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[i] + b[i];
}

static float *cache;

extern "C" int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
	long n = in[0].shape[0];
	(void)n_in;
	(void)n_out;
	if (!cache) {
		if (cudaMalloc((void **)&cache, n * sizeof(float)) != cudaSuccess)
			return 1;
		vadd_kernel<<<(unsigned)((n + 255) / 256), 256>>>((const float *)in[0].data, (const float *)in[1].data,
								 cache, n);
	}
	cudaMemcpy(out[0].data, cache, n * sizeof(float), cudaMemcpyDeviceToDevice);
	return 0;
}
