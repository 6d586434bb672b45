// expect: forbidden_syscall
// A constructor runs at load time, before pk_forward is ever called: it is
// confined all the same.
#include <pragma/kernel.h>
__attribute__((constructor)) static void early(void)
{
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(57 /* SYS_fork */) : "rcx", "r11", "memory");
}
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    return 0;
}
