/* prefix_sum reference: sequential inclusive scan in float64. */
#include <pragma/kernel.h>
#include <stdint.h>

int pk_forward(const struct pk_tensor *inputs, int n_inputs,
               struct pk_tensor *outputs, int n_outputs)
{
    if (n_inputs != 1 || n_outputs != 1) return 1;
    const struct pk_tensor *xi = &inputs[0];
    struct pk_tensor *yo = &outputs[0];
    if (xi->dtype != PK_FLOAT64 || yo->dtype != PK_FLOAT64) return 2;
    if (xi->ndim != 1 || yo->ndim != 1 || yo->shape[0] != xi->shape[0]) return 3;
    int64_t N = xi->shape[0];

    const double *x = (const double *)xi->data;
    double *y = (double *)yo->data;

    double sum = 0.0;
    for (int64_t i = 0; i < N; i++) {
        sum += x[i];
        y[i] = sum;
    }
    return 0;
}
