// expect: forbidden_flag
// pragma:flags -funroll-loops -o /tmp/evil.so
#include <pragma/kernel.h>
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    return 0;
}
