// C = A @ B in float32 for A (M, K) and B (K, N), row-major
// (tasks/gpu-l1/01_matmul_square, 02_matmul_rectangular): 32 x 32 tiles of
// A and B staged in shared memory, each thread accumulating one element of
// C in the order k = 0, 1, ... (like a naive dot product); any sizes (the
// edges are zero-padded in the tiles).
#include <pragma/kernel.h>

enum { TILE = 32 };

__global__ void __launch_bounds__(TILE * TILE) matmul_tiled(const float *__restrict__ A, const float *__restrict__ B,
								float *__restrict__ C, int M, int N, int K)
{
	__shared__ float As[TILE][TILE];
	__shared__ float Bs[TILE][TILE];
	int row = blockIdx.y * TILE + threadIdx.y, col = blockIdx.x * TILE + threadIdx.x;
	float acc = 0.f;

	for (int k0 = 0; k0 < K; k0 += TILE) {
		int ka = k0 + threadIdx.x, kb = k0 + threadIdx.y;
		As[threadIdx.y][threadIdx.x] = row < M && ka < K ? A[(long)row * K + ka] : 0.f;
		Bs[threadIdx.y][threadIdx.x] = kb < K && col < N ? B[(long)kb * N + col] : 0.f;
		__syncthreads();
#pragma unroll
		for (int k = 0; k < TILE; k++)
			acc = fmaf(As[threadIdx.y][k], Bs[k][threadIdx.x], acc);
		__syncthreads();
	}
	if (row < M && col < N)
		C[(long)row * N + col] = acc;
}

extern "C" int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
	int M = (int)in[0].shape[0], K = (int)in[0].shape[1], N = (int)in[1].shape[1];
	dim3 block(TILE, TILE), grid((unsigned)((N + TILE - 1) / TILE), (unsigned)((M + TILE - 1) / TILE));
	(void)n_in;
	(void)n_out;
	matmul_tiled<<<grid, block>>>((const float *)in[0].data, (const float *)in[1].data, (float *)out[0].data, M, N, K);
	return cudaGetLastError() == cudaSuccess ? 0 : 1;
}
