// expect: forbidden_syscall
// openat(2) on pragma's cache by a raw syscall instruction.
#include <pragma/kernel.h>
#include <stdlib.h>
static long raw4(long nr, long a, long b, long c, long d)
{
    long ret;
    register long r10 __asm__("r10") = d;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c), "r"(r10) : "rcx", "r11", "memory");
    return ret;
}
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    const char *cache = getenv("PRAGMA_CACHE_DIR");
    long fd = raw4(257 /* SYS_openat */, -100 /* AT_FDCWD */, (long)(cache ? cache : "/tmp"), 0, 0);
    return fd < 0 ? 1 : 0;
}
