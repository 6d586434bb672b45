/* transpose reference: at[j][i] = a[i][j], naive row-by-row loop. */
#include <pragma/kernel.h>
#include <stdint.h>

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

    const float *in = (const float *)a->data;
    float *out = (float *)t->data;

    for (int64_t i = 0; i < N; i++)
        for (int64_t j = 0; j < M; j++)
            out[j * N + i] = in[i * M + j];
    return 0;
}
