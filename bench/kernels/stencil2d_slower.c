/* A control for bench/estimators.sh: tasks/c/stencil2d's baseline.c, with
 * the first quarter of the interior rows computed twice (the same values
 * written again), so it is truly slower than the baseline by a known-ish
 * margin while its outputs stay right. */
#include <pragma/kernel.h>
#include <stdint.h>
#include <string.h>

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

    const float *restrict in = (const float *)g->data;
    float *restrict out = (float *)o->data;

    if (N < 3 || M < 3) {
        memcpy(out, in, (size_t)(N * M) * sizeof(float));
        return 0;
    }

    memcpy(out, in, (size_t)M * sizeof(float));
    memcpy(out + (N - 1) * M, in + (N - 1) * M, (size_t)M * sizeof(float));

    #pragma omp parallel for schedule(static)
    for (int64_t i = 1; i < N - 1; i++) {
        const float *c = in + i * M, *u = c - M, *d = c + M;
        float *r = out + i * M;
        r[0] = c[0];
        #pragma omp simd
        for (int64_t j = 1; j < M - 1; j++)
            r[j] = 0.2f * (c[j] + u[j] + d[j] + c[j - 1] + c[j + 1]);
        r[M - 1] = c[M - 1];
    }
    #pragma omp parallel for schedule(static)
    for (int64_t i = 1; i < 1 + (N - 2) / 4; i++) {
        const float *c = in + i * M, *u = c - M, *d = c + M;
        float *r = out + i * M;
        #pragma omp simd
        for (int64_t j = 1; j < M - 1; j++)
            r[j] = 0.2f * (c[j] + u[j] + d[j] + c[j - 1] + c[j + 1]);
    }
    return 0;
}
