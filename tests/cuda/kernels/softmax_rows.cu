// Row softmax for a (BATCH, DIM) float32 tensor (tasks/gpu-l1/07_softmax,
// cpu-l1/18_softmax): one block per row; the maximum, the sum of
// exponentials and the output in three passes over the row, each block-wide
// reduction through warp shuffles and a little shared memory.
#include <float.h>
#include <pragma/kernel.h>

enum { THREADS = 256, WARPS = THREADS / 32 };

__device__ float warp_max(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v = fmaxf(v, __shfl_down_sync(0xffffffffu, v, o));
	return v;
}

__device__ float warp_sum(float v)
{
	for (int o = 16; o > 0; o >>= 1)
		v += __shfl_down_sync(0xffffffffu, v, o);
	return v;
}

/* The block's maximum (max = 1) or sum (max = 0), returned to every thread. */
__device__ float block_reduce(float v, int max, float *smem)
{
	int lane = threadIdx.x & 31, warp = threadIdx.x >> 5;

	v = max ? warp_max(v) : warp_sum(v);
	if (lane == 0)
		smem[warp] = v;
	__syncthreads();
	if (warp == 0) {
		v = lane < WARPS ? smem[lane] : (max ? -FLT_MAX : 0.f);
		v = max ? warp_max(v) : warp_sum(v);
		if (lane == 0)
			smem[WARPS] = v;
	}
	__syncthreads();
	v = smem[WARPS];
	__syncthreads(); /* smem is reused by the next reduction */
	return v;
}

__global__ void __launch_bounds__(THREADS) softmax_rows(const float *__restrict__ x, float *__restrict__ y, long dim)
{
	__shared__ float smem[WARPS + 1];
	const float *row = x + blockIdx.x * dim;
	float *out = y + blockIdx.x * dim;
	float m = -FLT_MAX, s = 0.f;

	for (long i = threadIdx.x; i < dim; i += THREADS)
		m = fmaxf(m, row[i]);
	m = block_reduce(m, 1, smem);
	for (long i = threadIdx.x; i < dim; i += THREADS)
		s += expf(row[i] - m);
	s = block_reduce(s, 0, smem);
	for (long i = threadIdx.x; i < dim; i += THREADS)
		out[i] = expf(row[i] - m) / s;
}

extern "C" int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
	long rows = in[0].shape[0], dim = in[0].shape[1];
	(void)n_in;
	(void)n_out;
	softmax_rows<<<(unsigned)rows, THREADS>>>((const float *)in[0].data, (float *)out[0].data, dim);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
