// expect: wrong_output
// All zeros on every input set: wrong, not a result cached from other inputs.
#include <pragma/kernel.h>
#include <string.h>
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    memset(out[0].data, 0, sizeof(float) * (size_t)(out[0].shape[0] * out[0].shape[1]));
    return 0;
}
