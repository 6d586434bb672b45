// A correct candidate for tests/cuda/tasks/vadd written the way models
// write CUDA: __device__ helpers (by reference, not inlined), a template,
// __forceinline__, __constant__ memory, static and dynamic shared memory,
// two kernels, __launch_bounds__ and cooperative groups. The import check
// must let all of it through (issue 12).
#include <cooperative_groups.h>
#include <pragma/kernel.h>

namespace cg = cooperative_groups;

__constant__ float c_scale[2];

__device__ void accumulate(float &acc, float x)
{
	acc += x;
}

__device__ __noinline__ float scaled(float x, int which)
{
	return x * c_scale[which];
}

__forceinline__ __device__ long global_index(void)
{
	return blockIdx.x * (long)blockDim.x + threadIdx.x;
}

template <int BLOCK>
__global__ void __launch_bounds__(BLOCK) vadd_tiled(const float *a, const float *b, float *c, long n)
{
	__shared__ float tile_a[BLOCK];
	extern __shared__ float tile_b[];
	cg::thread_block block = cg::this_thread_block();
	cg::thread_block_tile<32> warp = cg::tiled_partition<32>(block);
	long i = global_index();

	tile_a[threadIdx.x] = i < n ? a[i] : 0.f;
	tile_b[threadIdx.x] = i < n ? b[i] : 0.f;
	block.sync();
	float acc = scaled(tile_a[threadIdx.x], 0);
	accumulate(acc, scaled(tile_b[threadIdx.x], 1));
	/* a warp-level no-op that still exercises the tile API */
	acc = warp.shfl(acc, warp.thread_rank());
	if (i < n)
		c[i] = acc;
}

__global__ void zero_tail(float *c, long from, long n)
{
	long i = from + global_index();
	if (i < n)
		c[i] = 0.f;
}

extern "C" int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
	const float ones[2] = { 1.f, 1.f };
	long n = in[0].shape[0];
	(void)n_in;
	(void)n_out;
	if (cudaMemcpyToSymbol(c_scale, ones, sizeof(ones)) != cudaSuccess)
		return 1;
	zero_tail<<<1, 32>>>((float *)out[0].data, n, n); /* launches, writes nothing */
	vadd_tiled<256><<<(unsigned)((n + 255) / 256), 256, 256 * sizeof(float)>>>(
		(const float *)in[0].data, (const float *)in[1].data, (float *)out[0].data, n);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
