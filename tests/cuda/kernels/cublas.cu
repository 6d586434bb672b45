// Forbidden: cuBLAS is the GPU's BLAS (the build leaves the import
// unresolved; the import check refuses it before anything runs).
#include <pragma/kernel.h>

typedef struct cublasContext *cublasHandle_t;
extern "C" int cublasCreate_v2(cublasHandle_t *handle);
extern "C" int cublasSaxpy_v2(cublasHandle_t h, int n, const float *alpha, const float *x, int incx, float *y,
			       int incy);

extern "C" int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
	cublasHandle_t h;
	float one = 1.0f;
	int n = (int)in[0].shape[0];
	cudaMemcpy(out[0].data, in[1].data, n * sizeof(float), cudaMemcpyDeviceToDevice);
	cublasCreate_v2(&h);
	return cublasSaxpy_v2(h, n, &one, (const float *)in[0].data, 1, (float *)out[0].data, 1);
}
