// expect: link_forbidden
// Hands the work to a BLAS the kernel declares itself.
#include <pragma/kernel.h>
extern void cblas_somatcopy(int order, int trans, int rows, int cols, float alpha, const float *a, int lda,
                            float *b, int ldb);
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    int N = (int)in[0].shape[0], M = (int)in[0].shape[1];
    cblas_somatcopy(101, 112, N, M, 1.0f, in[0].data, M, out[0].data, N);
    return 0;
}
