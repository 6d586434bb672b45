// task: transpose --set N=500 --set M=333
// Cache-blocked transpose, tiles spread over threads; edges handled.
#include <pragma/kernel.h>

#define T 32

int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)
{
    if (n_in != 1 || n_out != 1 || in[0].ndim != 2)
        return 1;
    int64_t N = in[0].shape[0], M = in[0].shape[1];
    const float *a = in[0].data;
    float *at = out[0].data;
    #pragma omp parallel for collapse(2) schedule(static)
    for (int64_t ib = 0; ib < N; ib += T)
        for (int64_t jb = 0; jb < M; jb += T) {
            int64_t ie = ib + T < N ? ib + T : N, je = jb + T < M ? jb + T : M;
            for (int64_t j = jb; j < je; j++)
                for (int64_t i = ib; i < ie; i++)
                    at[j * N + i] = a[i * M + j];
        }
    return 0;
}
