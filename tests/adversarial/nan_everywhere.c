// expect: nan_output
// Every element NaN, on every input set. The outputs of all sets are then
// identical, which was reported as output_cached; it is a NaN output.
#include <pragma/kernel.h>
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    int64_t n = out[0].shape[0] * out[0].shape[1];
    float *o = out[0].data;
    volatile float zero = 0.0f;
    for (int64_t i = 0; i < n; i++)
        o[i] = zero / zero;
    return 0;
}
