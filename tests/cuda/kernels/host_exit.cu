// Forbidden: host code that ends the process (the harness's answer would
// never be written). Unlike the stubs nvcc makes for __device__ helpers,
// this exit is reachable from pk_forward, so it stays in the object.
#include <stdlib.h>
#include <pragma/kernel.h>

__device__ void helper(float &x)
{
	x += 1.f;
}

__global__ void add_one(const float *a, float *c, long n)
{
	long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
	if (i < n) {
		float v = a[i];
		helper(v);
		c[i] = v;
	}
}

static void give_up(int code)
{
	exit(code);
}

extern "C" int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
	long n = in[0].shape[0];
	(void)n_in;
	(void)n_out;
	if (n_in != 2)
		give_up(3);
	add_one<<<(unsigned)((n + 255) / 256), 256>>>((const float *)in[0].data, (float *)out[0].data, n);
	return 0;
}
