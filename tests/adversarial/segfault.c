// expect: crash
#include <pragma/kernel.h>
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    volatile float *p = (float *)0;
    *p = 1.0f;
    return 0;
}
