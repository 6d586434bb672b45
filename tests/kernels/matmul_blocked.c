// task: 01_matmul_square --set N=192
// Blocked C = A B with an i-k-j inner order the compiler vectorizes.
// pragma:flags -ffp-contract=fast
#include <pragma/kernel.h>
#include <string.h>

int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
    if (n_in != 2 || n_out != 1 || in[0].ndim != 2 || in[1].ndim != 2)
        return 1;
    int64_t n = in[0].shape[0], K = in[0].shape[1], m = in[1].shape[1];
    const float *A = in[0].data, *B = in[1].data;
    float *C = out[0].data;
    memset(C, 0, sizeof(float) * (size_t)(n * m));
    #pragma omp parallel for schedule(static)
    for (int64_t i = 0; i < n; i++)
        for (int64_t k = 0; k < K; k++) {
            float a = A[i * K + k];
            const float *b = B + k * m;
            float *c = C + i * m;
            #pragma omp simd
            for (int64_t j = 0; j < m; j++)
                c[j] += a * b[j];
        }
    return 0;
}
