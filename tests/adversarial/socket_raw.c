// expect: forbidden_syscall
#include <pragma/kernel.h>
static long raw3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    return raw3(41 /* SYS_socket */, 2 /* AF_INET */, 1 /* SOCK_STREAM */, 0) < 0;
}
