// vadd with thrust::transform on the device pointers.
#include <thrust/device_ptr.h>
#include <thrust/execution_policy.h>
#include <thrust/functional.h>
#include <thrust/transform.h>
#include <pragma/kernel.h>

extern "C" int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
	long n = in[0].shape[0];
	thrust::device_ptr<const float> a((const float *)in[0].data), b((const float *)in[1].data);
	thrust::device_ptr<float> c((float *)out[0].data);
	(void)n_in;
	(void)n_out;
	thrust::transform(thrust::device, a, a + n, b, c, thrust::plus<float>());
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
