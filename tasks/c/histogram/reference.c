/* histogram reference: 256-bin histogram of uint8 data into int64 counts. */
#include <pragma/kernel.h>
#include <stdint.h>

int pk_forward(const struct pk_tensor *inputs, int n_inputs,
               struct pk_tensor *outputs, int n_outputs)
{
    if (n_inputs != 1 || n_outputs != 1) return 1;
    const struct pk_tensor *d = &inputs[0];
    struct pk_tensor *c = &outputs[0];
    if (d->dtype != PK_UINT8 || c->dtype != PK_INT64) return 2;
    if (d->ndim != 1 || c->ndim != 1 || c->shape[0] != 256) return 3;
    int64_t N = d->shape[0];

    const uint8_t *data = (const uint8_t *)d->data;
    int64_t *counts = (int64_t *)c->data;

    for (int b = 0; b < 256; b++)
        counts[b] = 0;
    for (int64_t i = 0; i < N; i++)
        counts[data[i]]++;
    return 0;
}
