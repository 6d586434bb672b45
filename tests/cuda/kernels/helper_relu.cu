// ReLU for KernelBench's 13_relu through an ordinary __device__ helper that
// takes its argument by reference (issue 12: nvcc gives such a helper a
// host stub that calls exit, which the import check used to refuse).
#include <pragma/kernel.h>

__device__ void relu_in_place(float &x, float floor_value)
{
	x = x > floor_value ? x : floor_value;
}

__global__ void relu_helper(const float *__restrict__ x, float *__restrict__ y, long n)
{
	long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
	if (i < n) {
		float v = x[i];
		relu_in_place(v, 0.f);
		y[i] = v;
	}
}

extern "C" int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
	long n = 1;
	(void)n_in;
	(void)n_out;
	for (int d = 0; d < in[0].ndim; d++)
		n *= in[0].shape[d];
	relu_helper<<<(unsigned)((n + 255) / 256), 256>>>((const float *)in[0].data, (float *)out[0].data, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
