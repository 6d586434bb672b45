/* stencil3d baseline: the reference with the boundary tests hoisted out of
 * the inner loop (so the x loop vectorizes) and z planes split across
 * OpenMP threads. Same arithmetic and summation order as the reference. */
#include <pragma/kernel.h>
#include <stdint.h>
#include <string.h>

int pk_forward(const struct pk_tensor *inputs, int n_inputs,
               struct pk_tensor *outputs, int n_outputs)
{
    if (n_inputs != 1 || n_outputs != 1) return 1;
    const struct pk_tensor *g = &inputs[0];
    struct pk_tensor *o = &outputs[0];
    if (g->dtype != PK_FLOAT64 || o->dtype != PK_FLOAT64) return 2;
    if (g->ndim != 3 || o->ndim != 3) return 3;
    int64_t D = g->shape[0], H = g->shape[1], W = g->shape[2];
    if (o->shape[0] != D || o->shape[1] != H || o->shape[2] != W) return 4;

    const double *restrict u = (const double *)g->data;
    double *restrict out = (double *)o->data;
    const int64_t sz = H * W, sy = W;

    if (D < 3 || H < 3 || W < 3) {
        memcpy(out, u, (size_t)(D * sz) * sizeof(double));
        return 0;
    }

    #pragma omp parallel for schedule(static)
    for (int64_t z = 0; z < D; z++) {
        if (z == 0 || z == D - 1) {
            memcpy(out + z * sz, u + z * sz, (size_t)sz * sizeof(double));
            continue;
        }
        memcpy(out + z * sz, u + z * sz, (size_t)sy * sizeof(double));
        for (int64_t y = 1; y < H - 1; y++) {
            const double *c = u + z * sz + y * sy;
            double *r = out + z * sz + y * sy;
            r[0] = c[0];
            #pragma omp simd
            for (int64_t x = 1; x < W - 1; x++)
                r[x] = 0.4 * c[x]
                     + 0.1 * (c[x - sz] + c[x + sz]
                              + c[x - sy] + c[x + sy]
                              + c[x - 1] + c[x + 1]);
            r[W - 1] = c[W - 1];
        }
        memcpy(out + z * sz + (H - 1) * sy, u + z * sz + (H - 1) * sy,
               (size_t)sy * sizeof(double));
    }
    return 0;
}
