/* transpose baseline: 32x32 cache tiles, tile rows split across OpenMP
 * threads. A bit-exact copy like the reference. */
#include <pragma/kernel.h>
#include <stdint.h>

#define TB 32

int pk_forward(const struct pk_tensor *inputs, int n_inputs,
               struct pk_tensor *outputs, int n_outputs)
{
    if (n_inputs != 1 || n_outputs != 1) return 1;
    const struct pk_tensor *a = &inputs[0];
    struct pk_tensor *t = &outputs[0];
    if (a->dtype != PK_FLOAT32 || t->dtype != PK_FLOAT32) return 2;
    if (a->ndim != 2 || t->ndim != 2) return 3;
    int64_t N = a->shape[0], M = a->shape[1];
    if (t->shape[0] != M || t->shape[1] != N) return 4;

    const float *restrict in = (const float *)a->data;
    float *restrict out = (float *)t->data;

    #pragma omp parallel for schedule(static) collapse(2)
    for (int64_t jb = 0; jb < M; jb += TB)
        for (int64_t ib = 0; ib < N; ib += TB) {
            int64_t je = jb + TB < M ? jb + TB : M;
            int64_t ie = ib + TB < N ? ib + TB : N;
            for (int64_t j = jb; j < je; j++)
                for (int64_t i = ib; i < ie; i++)
                    out[j * N + i] = in[i * M + j];
        }
    return 0;
}
