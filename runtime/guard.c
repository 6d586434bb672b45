/*
 * What the harness does when the kernel misbehaves in ways that end the
 * process: fatal signals and seccomp traps are reported on the result fd
 * as one JSON line, then the process exits. Everything here runs in signal
 * context, so it formats by hand and writes with write(2).
 *
 * The allocation watch: malloc and friends are defined here, so the kernel's
 * calls bind to them (the executable comes first in symbol lookup) and
 * forward to glibc's. A failed allocation inside pk_forward is remembered:
 * when the kernel then crashes or fails, the verdict is memory_limit with
 * the size it asked for, not a bare SIGSEGV.
 */
#include <errno.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <ucontext.h>
#include <unistd.h>

#include "harness.h"

struct harness_guard harness_guard = { .result_fd = 1 };

static atomic_ulong alloc_failures;
static atomic_size_t alloc_largest;

void *__libc_malloc(size_t);
void *__libc_calloc(size_t, size_t);
void *__libc_realloc(void *, size_t);
void *__libc_memalign(size_t, size_t);
void *__libc_valloc(size_t);
void *__libc_pvalloc(size_t);
void __libc_free(void *);

static void note_failure(size_t size)
{
	size_t cur;

	if (!harness_guard.in_kernel)
		return;
	atomic_fetch_add(&alloc_failures, 1);
	cur = atomic_load(&alloc_largest);
	while (size > cur && !atomic_compare_exchange_weak(&alloc_largest, &cur, size))
		;
}

void harness_alloc_failures(unsigned long *count, size_t *largest)
{
	*count = atomic_load(&alloc_failures);
	*largest = atomic_load(&alloc_largest);
}

void harness_alloc_reset(void)
{
	atomic_store(&alloc_failures, 0);
	atomic_store(&alloc_largest, 0);
}

void *malloc(size_t n)
{
	void *p = __libc_malloc(n);

	if (!p && n)
		note_failure(n);
	return p;
}

void *calloc(size_t a, size_t b)
{
	void *p = __libc_calloc(a, b);

	if (!p && a && b)
		note_failure(b && a > SIZE_MAX / b ? SIZE_MAX : a * b);
	return p;
}

void *realloc(void *q, size_t n)
{
	void *p = __libc_realloc(q, n);

	if (!p && n)
		note_failure(n);
	return p;
}

void free(void *p)
{
	__libc_free(p);
}

void *memalign(size_t al, size_t n)
{
	void *p = __libc_memalign(al, n);

	if (!p && n)
		note_failure(n);
	return p;
}

void *aligned_alloc(size_t al, size_t n)
{
	return memalign(al, n);
}

void *valloc(size_t n)
{
	void *p = __libc_valloc(n);

	if (!p && n)
		note_failure(n);
	return p;
}

void *pvalloc(size_t n)
{
	void *p = __libc_pvalloc(n);

	if (!p && n)
		note_failure(n);
	return p;
}

int posix_memalign(void **out, size_t al, size_t n)
{
	void *p;

	if (al < sizeof(void *) || (al & (al - 1)))
		return EINVAL;
	p = __libc_memalign(al, n);
	if (!p && n) {
		note_failure(n);
		return ENOMEM;
	}
	*out = p;
	return 0;
}

int harness_write_all(int fd, const void *buf, size_t len)
{
	const char *p = buf;

	while (len) {
		ssize_t n = write(fd, p, len);
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return -1;
		p += n;
		len -= (size_t)n;
	}
	return 0;
}

/* ------------------------------------------------ async-signal-safe output */

struct sbuf {
	char b[1024];
	size_t n;
};

static void put(struct sbuf *s, const char *str)
{
	while (*str && s->n < sizeof(s->b) - 1)
		s->b[s->n++] = *str++;
}

static void put_u(struct sbuf *s, unsigned long long v)
{
	char t[24];
	int i = 0;

	do
		t[i++] = (char)('0' + v % 10);
	while ((v /= 10) && i < 23);
	while (i-- > 0 && s->n < sizeof(s->b) - 1)
		s->b[s->n++] = t[i];
}

static void put_x(struct sbuf *s, unsigned long long v)
{
	char t[20];
	int i = 0;

	put(s, "0x");
	do
		t[i++] = "0123456789abcdef"[v & 15];
	while ((v >>= 4) && i < 19);
	while (i-- > 0 && s->n < sizeof(s->b) - 1)
		s->b[s->n++] = t[i];
}

/* "3.2 GB" style, for sizes the kernel asked for. */
static void put_bytes(struct sbuf *s, size_t v)
{
	static const char *const unit[] = { "bytes", "KB", "MB", "GB", "TB", "PB", "EB" };
	unsigned long long whole = v, frac = 0;
	int u = 0;

	while (whole >= 1000 && u < 6) {
		frac = (whole % 1000) / 100;
		whole /= 1000;
		u++;
	}
	put_u(s, whole);
	if (u) {
		put(s, ".");
		put_u(s, frac);
	}
	put(s, " ");
	put(s, unit[u]);
}

static const char *sig_name(int sig)
{
	switch (sig) {
	case SIGSEGV: return "SIGSEGV";
	case SIGBUS: return "SIGBUS";
	case SIGFPE: return "SIGFPE";
	case SIGILL: return "SIGILL";
	case SIGABRT: return "SIGABRT";
	case SIGTRAP: return "SIGTRAP";
	case SIGSYS: return "SIGSYS";
	default: return "signal";
	}
}

static void where(struct sbuf *s)
{
	if (harness_guard.set >= 0) {
		put(s, " on input set ");
		put_u(s, (unsigned long long)harness_guard.set);
		put(s, " (call ");
		put_u(s, (unsigned long long)harness_guard.call);
		put(s, ")");
	}
}

static void finish(struct sbuf *s)
{
	put(s, "\"}\n");
	harness_write_all(harness_guard.result_fd, s->b, s->n);
	syscall(SYS_exit_group, 1);
}

static void on_sigsys(int sig, siginfo_t *si, void *uc)
{
	struct sbuf s = { .n = 0 };

	(void)sig;
	(void)uc;
	put(&s, "{\"ok\":false,\"status\":\"forbidden_syscall\",\"syscall\":");
	put_u(&s, (unsigned long long)(unsigned)si->si_syscall);
	put(&s, ",\"arch\":");
	put_u(&s, (unsigned long long)(unsigned)si->si_arch);
	put(&s, ",\"message\":\"the kernel made system call ");
	put_u(&s, (unsigned long long)(unsigned)si->si_syscall);
	put(&s, " (arch ");
	put_x(&s, (unsigned)si->si_arch);
	put(&s, "), which the sandbox forbids");
	where(&s);
	finish(&s);
}

static void on_fatal(int sig, siginfo_t *si, void *ucv)
{
	struct sbuf s = { .n = 0 };
	unsigned long fails;
	size_t largest;
	uintptr_t addr = (uintptr_t)si->si_addr;
	const ucontext_t *uc = ucv;
	uintptr_t sp = uc ? (uintptr_t)uc->uc_mcontext.gregs[REG_RSP] : 0;

	harness_alloc_failures(&fails, &largest);
	if (fails && harness_guard.in_kernel) {
		put(&s, "{\"ok\":false,\"status\":\"memory_limit\",\"signal\":\"");
		put(&s, sig_name(sig));
		put(&s, "\",\"message\":\"an allocation of ");
		put_bytes(&s, largest);
		put(&s, " failed under the address-space limit and the kernel then died of ");
		put(&s, sig_name(sig));
		where(&s);
		put(&s, "; allocate less, and check what malloc returns");
		finish(&s);
	}
	put(&s, "{\"ok\":false,\"status\":\"crash\",\"signal\":\"");
	put(&s, sig_name(sig));
	put(&s, "\",\"message\":\"");
	put(&s, harness_guard.in_kernel ? "pk_forward" : "the harness");
	put(&s, " died of ");
	put(&s, sig_name(sig));
	if (sig == SIGSEGV || sig == SIGBUS) {
		/* A fault next to the stack pointer is the stack running out. */
		if (sp && addr + 65536 >= sp && addr <= sp + 65536 && addr < harness_guard.stack_hi &&
		    harness_guard.stack_hi - addr > harness_guard.stack_limit / 2) {
			put(&s, " (stack overflow: more than ");
			put_u(&s, (unsigned long long)(harness_guard.stack_limit >> 20));
			put(&s, " MiB of stack; put large arrays on the heap)");
		} else {
			put(&s, " (bad memory access at ");
			put_x(&s, addr);
			put(&s, ")");
		}
	} else if (sig == SIGILL) {
		put(&s, " (illegal instruction: an ISA extension this CPU lacks?)");
	} else if (sig == SIGFPE) {
		put(&s, " (integer division by zero?)");
	} else if (sig == SIGABRT) {
		put(&s, " (abort: a failed assert?)");
	}
	where(&s);
	finish(&s);
}

void harness_guard_install(void)
{
	static char altstack[1 << 16];
	static const int fatal[] = { SIGSEGV, SIGBUS, SIGFPE, SIGILL, SIGABRT, SIGTRAP };
	stack_t ss = { .ss_sp = altstack, .ss_size = sizeof(altstack) };
	struct sigaction sa;
	struct rlimit rl;
	int here;

	harness_guard.set = -1;
	harness_guard.stack_hi = (uintptr_t)&here;
	harness_guard.stack_limit = getrlimit(RLIMIT_STACK, &rl) == 0 && rl.rlim_cur != RLIM_INFINITY ?
					    (size_t)rl.rlim_cur : (size_t)8 << 20;
	sigaltstack(&ss, NULL);
	memset(&sa, 0, sizeof(sa));
	sigfillset(&sa.sa_mask);
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK | SA_RESETHAND;
	sa.sa_sigaction = on_fatal;
	for (size_t i = 0; i < sizeof(fatal) / sizeof(fatal[0]); i++)
		sigaction(fatal[i], &sa, NULL);
	sa.sa_sigaction = on_sigsys;
	sigaction(SIGSYS, &sa, NULL);
}
