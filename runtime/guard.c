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
#include <dlfcn.h>
#include <errno.h>
#include <linux/futex.h>
#include <link.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <sys/resource.h>
#include <sys/syscall.h>
#include <time.h>
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

/* dl_iterate_phdr's callback: the executable segments of the object
 * loaded at harness_guard.kernel_base. */
static int note_kernel_text(struct dl_phdr_info *info, size_t size, void *data)
{
	(void)size;
	(void)data;
	if ((uintptr_t)info->dlpi_addr != harness_guard.kernel_base)
		return 0;
	for (int i = 0; i < info->dlpi_phnum && harness_guard.n_kernel_text < 4; i++) {
		const ElfW(Phdr) *ph = &info->dlpi_phdr[i];
		if (ph->p_type != PT_LOAD || !(ph->p_flags & PF_X))
			continue;
		harness_guard.kernel_text[harness_guard.n_kernel_text][0] = info->dlpi_addr + ph->p_vaddr;
		harness_guard.kernel_text[harness_guard.n_kernel_text][1] = info->dlpi_addr + ph->p_vaddr + ph->p_memsz;
		harness_guard.n_kernel_text++;
	}
	return 1;
}

/* One report per process: a thread that traps or faults while another is
 * reporting waits for the exit_group that follows. (With SA_RESETHAND on
 * SIGSYS, a second thread's SIGSYS could meet the default action and kill
 * the process before the first report was written: the call unnamed.) */
static atomic_int reporting;

static void claim_report(void)
{
	struct timespec t = { 1, 0 };

	if (!atomic_exchange(&reporting, 1))
		return;
	for (;;)
		syscall(SYS_nanosleep, &t, NULL);
}

void harness_guard_kernel(void *fn)
{
	Dl_info info;

	if (!dladdr(fn, &info) || !info.dli_fbase)
		return;
	harness_guard.kernel_base = (uintptr_t)info.dli_fbase;
	dl_iterate_phdr(note_kernel_text, NULL);
}

static int in_kernel_text(uintptr_t a)
{
	for (int i = 0; i < harness_guard.n_kernel_text; i++)
		if (a >= harness_guard.kernel_text[i][0] && a < harness_guard.kernel_text[i][1])
			return 1;
	return 0;
}

/* Whether the word at a can be read: futex reads it and says EFAULT when it
 * cannot (a zero timeout: it never waits). Keeps the stack walk below from
 * faulting past the end of a thread's stack. */
static int readable(uintptr_t a)
{
	struct timespec z = { 0, 0 };

	return !(syscall(SYS_futex, (void *)(a & ~(uintptr_t)3), FUTEX_WAIT_PRIVATE, 0, &z, NULL, 0) < 0 &&
		 errno == EFAULT);
}

/* Whether the bytes before ra in the kernel's code end with a call (E8
 * rel32, or FF /2 in any addressing form), so ra is a return address. */
static int after_call(uintptr_t ra)
{
	const unsigned char *p = (const unsigned char *)ra;

	if (in_kernel_text(ra - 5) && p[-5] == 0xe8)
		return 1;
	for (int k = 2; k <= 7; k++) {
		unsigned m, mod, rm, len;
		if (!in_kernel_text(ra - (uintptr_t)k) || p[-k] != 0xff)
			continue;
		m = p[-k + 1];
		mod = m >> 6;
		rm = m & 7;
		if (((m >> 3) & 7) != 2)
			continue;
		len = 2 + (mod != 3 && rm == 4) + (mod == 1 ? 1 : mod == 2 || (mod == 0 && rm == 5) ? 4 : 0);
		if (mod == 0 && rm == 4 && k >= 3 && (p[-k + 2] & 7) == 5)
			len += 4;
		if (len == (unsigned)k)
			return 1;
	}
	return 0;
}

static int same(const char *a, const char *b)
{
	while (*a && *a == *b)
		a++, b++;
	return *a == *b;
}

/* During dlopen (a constructor's call) harness_guard_kernel has not run
 * yet: find the kernel among the loaded objects without locks (the loader
 * adds an object to _r_debug's list once it is mapped) and read its
 * program headers from its mapped ELF header. */
static void kernel_text_while_loading(void)
{
	const struct link_map *l;

	if (!harness_guard.kernel_path)
		return;
	for (l = _r_debug.r_map; l; l = l->l_next) {
		const ElfW(Ehdr) *eh = (const ElfW(Ehdr) *)l->l_addr;
		const ElfW(Phdr) *ph;
		if (!l->l_name || !same(l->l_name, harness_guard.kernel_path))
			continue;
		if (!l->l_addr || !readable(l->l_addr) || memcmp(eh->e_ident, ELFMAG, SELFMAG) ||
		    !readable(l->l_addr + eh->e_phoff) ||
		    !readable(l->l_addr + eh->e_phoff + eh->e_phnum * sizeof(*ph) - 4))
			return;
		ph = (const ElfW(Phdr) *)(l->l_addr + eh->e_phoff);
		harness_guard.kernel_base = l->l_addr;
		for (int i = 0; i < eh->e_phnum && harness_guard.n_kernel_text < 4; i++) {
			if (ph[i].p_type != PT_LOAD || !(ph[i].p_flags & PF_X))
				continue;
			harness_guard.kernel_text[harness_guard.n_kernel_text][0] = l->l_addr + ph[i].p_vaddr;
			harness_guard.kernel_text[harness_guard.n_kernel_text][1] = l->l_addr + ph[i].p_vaddr + ph[i].p_memsz;
			harness_guard.n_kernel_text++;
		}
		return;
	}
}

/* Where in the kernel's code a forbidden call came from: the call's own
 * address when the kernel made it (raw syscall), else the innermost return
 * address into the kernel on the stack (a library function the kernel
 * called made it: fopen, malloc growing an arena, sysconf...). 0: not
 * found. *direct says which. */
static uintptr_t kernel_site(const siginfo_t *si, const ucontext_t *uc, int *direct)
{
	uintptr_t ip = (uintptr_t)si->si_call_addr, sp, page = 0;

	*direct = 0;
	if (!harness_guard.n_kernel_text && harness_guard.loading)
		kernel_text_while_loading();
	if (!harness_guard.n_kernel_text)
		return 0;
	if (in_kernel_text(ip)) {
		*direct = 1;
		return ip;
	}
	if (!uc)
		return 0;
	sp = (uintptr_t)uc->uc_mcontext.gregs[REG_RSP] & ~(uintptr_t)7;
	for (uintptr_t a = sp; a < sp + (64 << 10); a += 8) {
		uintptr_t w;
		if ((a & ~(uintptr_t)4095) != page) {
			page = a & ~(uintptr_t)4095;
			if (!readable(a))
				return 0;
		}
		w = *(const uintptr_t *)a;
		/* The kernel may have unmapped or protected its own code. */
		if (in_kernel_text(w) && readable(w - 8) && readable(w - 1) && after_call(w))
			return w;
	}
	return 0;
}

static void on_sigsys(int sig, siginfo_t *si, void *ucv)
{
	struct sbuf s = { .n = 0 };
	int direct;
	uintptr_t site;

	(void)sig;
	claim_report();
	site = kernel_site(si, ucv, &direct);
	put(&s, "{\"ok\":false,\"status\":\"forbidden_syscall\",\"syscall\":");
	put_u(&s, (unsigned long long)(unsigned)si->si_syscall);
	put(&s, ",\"arch\":");
	put_u(&s, (unsigned long long)(unsigned)si->si_arch);
	if (site) {
		/* An offset in the .so (its addresses start at 0), for addr2line;
		 * the byte before a return address is inside its call. */
		put(&s, ",\"kernel_pc\":");
		put_u(&s, (unsigned long long)(site - 1 - harness_guard.kernel_base));
		put(&s, direct ? ",\"direct\":true" : ",\"direct\":false");
	}
	if (harness_guard.loading)
		put(&s, ",\"loading\":true");
	put(&s, ",\"message\":\"the kernel made system call ");
	put_u(&s, (unsigned long long)(unsigned)si->si_syscall);
	put(&s, " (arch ");
	put_x(&s, (unsigned)si->si_arch);
	put(&s, "), which the sandbox forbids");
	if (site) {
		put(&s, direct ? " at kernel+" : " from a library function called at kernel+");
		put_x(&s, site - 1 - harness_guard.kernel_base);
	}
	if (harness_guard.loading)
		put(&s, " while the kernel was being loaded (a constructor)");
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

	claim_report();
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
	/* SIGSYS keeps its handler (claim_report serializes threads); the
	 * kernel cannot replace it: rt_sigaction on SIGSYS is itself trapped. */
	sa.sa_flags = SA_SIGINFO | SA_ONSTACK;
	sa.sa_sigaction = on_sigsys;
	sigaction(SIGSYS, &sa, NULL);
}
