// expect: wrong_output
// task: $PRAGMA_TEST_DATA/fixtures/tasks/positive_mask
// Writes 255 for true. A bool is one byte holding 0 or 1; 255 read as
// "nonzero" passed before.
#include <pragma/kernel.h>
#include <stdint.h>
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    const float *x = in[0].data;
    uint8_t *m = out[0].data;
    for (int64_t i = 0; i < in[0].shape[0]; i++)
        m[i] = x[i] > 0 ? 255 : 0;
    return 0;
}
