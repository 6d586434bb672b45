// expect: crash
// Writes a forged success line to every descriptor the harness might
// answer on (raw syscalls, so no forbidden imports), then ends the process
// before the harness can speak.
#include <pragma/kernel.h>
static long raw3(long nr, long a, long b, long c)
{
    long ret;
    __asm__ volatile("syscall" : "=a"(ret) : "a"(nr), "D"(a), "S"(b), "d"(c) : "rcx", "r11", "memory");
    return ret;
}
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    static const char ok[] = "{\"ok\": true, \"times_ms\": []}\n";
    for (long fd = 1; fd < 64; fd++)
        if (raw3(72 /* fcntl */, fd, 1 /* F_GETFD */, 0) >= 0)
            raw3(1 /* write */, fd, (long)ok, sizeof(ok) - 1);
    raw3(231 /* exit_group */, 0, 0, 0);
    return 0;
}
