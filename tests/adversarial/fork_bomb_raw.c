// expect: forbidden_syscall
// fork(2) by a raw syscall instruction: no import for the symbol check to see.
#include <pragma/kernel.h>
static long raw0(long nr)
{
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(nr) : "rcx", "r11", "memory");
    return ret;
}
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    for (int i = 0; i < 1000; i++)
        raw0(57 /* SYS_fork */);
    return 0;
}
