/* stencil3d reference: one 7-point stencil step on a float64 grid,
 * boundary copied. Naive and obviously correct. */
#include <pragma/kernel.h>
#include <stdint.h>

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

    const double *u = (const double *)g->data;
    double *out = (double *)o->data;
    const int64_t sz = H * W, sy = W;

    for (int64_t z = 0; z < D; z++) {
        for (int64_t y = 0; y < H; y++) {
            for (int64_t x = 0; x < W; x++) {
                int64_t c = z * sz + y * sy + x;
                if (z == 0 || z == D - 1 || y == 0 || y == H - 1 ||
                    x == 0 || x == W - 1) {
                    out[c] = u[c];
                } else {
                    out[c] = 0.4 * u[c]
                           + 0.1 * (u[c - sz] + u[c + sz]
                                    + u[c - sy] + u[c + sy]
                                    + u[c - 1] + u[c + 1]);
                }
            }
        }
    }
    return 0;
}
