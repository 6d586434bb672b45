// expect: forbidden_flag
// pragma:flags -O3 -B/tmp/evil-binutils
#include <pragma/kernel.h>
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    return 0;
}
