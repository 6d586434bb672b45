// expect: link_forbidden
#include <pragma/kernel.h>
#include <unistd.h>
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    execl("/bin/sh", "sh", "-c", "cat ~/.cache/pragma/ref/*/out_000.npy", (char *)0);
    return 0;
}
