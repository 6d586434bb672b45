// expect: timed_mismatch
// command: eval
// Right for the first 15 calls in a process (the verification makes 15),
// then skips the work: the timing processes call it more often.
#include <pragma/kernel.h>

__global__ void vadd_kernel(const float *a, const float *b, float *c, long n)
{
	long i = blockIdx.x * (long)blockDim.x + threadIdx.x;
	if (i < n)
		c[i] = a[i] + b[i];
}

static int calls;

extern "C" int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
	long n = in[0].shape[0];
	(void)n_in;
	(void)n_out;
	if (++calls > 15)
		return 0;
	vadd_kernel<<<(unsigned)((n + 255) / 256), 256>>>((const float *)in[0].data, (const float *)in[1].data,
							 (float *)out[0].data, n);
	return 0;
}
