/* stencil2d reference: one 5-point Jacobi step, borders copied.
 * Naive and obviously correct; it defines the expected output. */
#include <pragma/kernel.h>
#include <stdint.h>

int pk_forward(const struct pk_tensor *inputs, int n_inputs,
               struct pk_tensor *outputs, int n_outputs)
{
    if (n_inputs != 1 || n_outputs != 1) return 1;
    const struct pk_tensor *g = &inputs[0];
    struct pk_tensor *o = &outputs[0];
    if (g->dtype != PK_FLOAT32 || o->dtype != PK_FLOAT32) return 2;
    if (g->ndim != 2 || o->ndim != 2) return 3;
    int64_t N = g->shape[0], M = g->shape[1];
    if (o->shape[0] != N || o->shape[1] != M) return 4;

    const float *in = (const float *)g->data;
    float *out = (float *)o->data;

    for (int64_t i = 0; i < N; i++) {
        for (int64_t j = 0; j < M; j++) {
            if (i == 0 || i == N - 1 || j == 0 || j == M - 1) {
                out[i * M + j] = in[i * M + j];
            } else {
                out[i * M + j] = 0.2f * (in[i * M + j]
                                         + in[(i - 1) * M + j]
                                         + in[(i + 1) * M + j]
                                         + in[i * M + (j - 1)]
                                         + in[i * M + (j + 1)]);
            }
        }
    }
    return 0;
}
