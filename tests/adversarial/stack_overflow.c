// expect: crash
// A scratch array far larger than the stack.
#include <pragma/kernel.h>
#include <string.h>
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    volatile char scratch[64 << 20];
    memset((char *)scratch, 1, sizeof(scratch));
    ((float *)out[0].data)[0] = scratch[12345];
    return 0;
}
