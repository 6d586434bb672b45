/*
 * The harness's internals, shared by protocol.c (the protocol, for every
 * harness), harness.c (the CPU harness's part of it), sandbox.c (Landlock,
 * seccomp, the compiler jail) and guard.c (signal handlers and the
 * allocation watch; the CUDA harness links it too).
 *
 * Order of confinement (DESIGN 3.4):
 *   1. load inputs, allocate outputs, pre-open every output file;
 *   2. preload the allowed runtimes (libgomp, libomp, ...) so their
 *      initializers run as trusted code;
 *   3. harness_sandbox_enter(): no_new_privs, Landlock (reads: the kernel
 *      .so and system libraries only; no writes; no TCP; no signals or
 *      abstract sockets outside), seccomp stage 1 (an allow-list; opening
 *      files is still allowed because dlopen needs it, Landlock decides which);
 *   4. dlopen the kernel: its constructors run confined;
 *   5. harness_sandbox_lock(): seccomp stage 2 forbids opening files at all;
 *   6. call pk_forward.
 */
#ifndef PRAGMA_HARNESS_H
#define PRAGMA_HARNESS_H

#include <jansson.h>
#include <stddef.h>
#include <stdint.h>

#include "pragma/err.h"

/* The request/answer protocol's version (`pragma-harness --version`): the
 * parent checks it before it trusts a harness's answers. */
#define HARNESS_PROTOCOL 1

struct harness_sandbox {
	/* request */
	int enabled;
	int landlock_wanted, seccomp_wanted;
	int pid;
	/* what happened */
	int landlock_abi;            /* enforced ABI; 0 = not enforced */
	char landlock[160];          /* "abi 7" or "unavailable: <why>" */
	int seccomp;                 /* stage 1 installed */
	int seccomp_locked;          /* stage 2 installed */
	char note[256];
};

int harness_sandbox_parse(json_t *req, struct harness_sandbox *sb);
/* Stage 1, before dlopen. kernel_so is the only non-system file readable. */
int harness_sandbox_enter(struct harness_sandbox *sb, const char *kernel_so, struct pragma_err *err);
/* Stage 2, after dlopen: no more opening of files. */
int harness_sandbox_lock(struct harness_sandbox *sb, struct pragma_err *err);
void harness_sandbox_report(const struct harness_sandbox *sb, json_t *result);

/* Landlock ABI of the running kernel (0 when unavailable; why says so). */
int harness_landlock_abi(char *why, size_t len);

/* `pragma-harness confine --ro P... --rox P... --rw P... -- PROG ARGS...`:
 * enter Landlock with those rules (plus system directories) and exec PROG.
 * Used to compile candidates so that `#include` or `.incbin` cannot read the
 * reference cache. Returns only on failure (exit code). */
int harness_confine_main(int argc, char **argv);

/* guard.c: fatal-signal handlers that report what happened on the result
 * fd, and the allocation watch (malloc & co. are interposed). */
struct harness_guard {
	int result_fd;
	volatile int in_kernel;      /* inside pk_forward */
	volatile int set, call;      /* for messages */
	uintptr_t stack_hi;          /* main thread stack top (approximate) */
	size_t stack_limit;
	volatile int loading;        /* inside dlopen of the kernel (its constructors) */
	const char *kernel_path;     /* as given to dlopen */
	/* The kernel's code, for saying where a forbidden call came from:
	 * its load address and its executable segments. */
	uintptr_t kernel_base;
	uintptr_t kernel_text[4][2];
	int n_kernel_text;
};
extern struct harness_guard harness_guard;
void harness_guard_install(void);
/* After dlopen: note where the kernel's code lies (fn: any of its functions). */
void harness_guard_kernel(void *fn);
/* Failed allocations made by the kernel: count and the largest size asked. */
void harness_alloc_failures(unsigned long *count, size_t *largest);
void harness_alloc_reset(void);

/* Write all of buf to fd (EINTR-safe). */
int harness_write_all(int fd, const void *buf, size_t len);

#endif
