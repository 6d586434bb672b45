/*
 * The harness's sandbox: Landlock (filesystem, TCP, signal scoping) and a
 * seccomp allow-list, entered in two stages around dlopen (see harness.h).
 *
 * glibc 2.36 has no Landlock wrappers and the installed UAPI header may be
 * older than the running kernel, so the syscalls and the newer constants are
 * spelled out here.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "harness.h"

#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#define LL_FS_TRUNCATE (1ULL << 14)      /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ULL << 15)     /* ABI 5 */
#define LL_NET_BIND_TCP (1ULL << 0)      /* ABI 4 */
#define LL_NET_CONNECT_TCP (1ULL << 1)
#define LL_SCOPE_ABSTRACT_UNIX (1ULL << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ULL << 1)

/* struct landlock_ruleset_attr as of ABI 6; older kernels get a prefix. */
struct ll_ruleset_attr {
	uint64_t handled_access_fs;
	uint64_t handled_access_net;
	uint64_t scoped;
};

#define LL_FS_READ (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
#define LL_FS_FILE_RIGHTS \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE | LL_FS_TRUNCATE | \
	 LL_FS_IOCTL_DEV)

static uint64_t ll_fs_all(int abi)
{
	uint64_t a = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1; /* ABI 1: bits 0..12 */

	if (abi >= 2)
		a |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		a |= LL_FS_TRUNCATE;
	if (abi >= 5)
		a |= LL_FS_IOCTL_DEV;
	return a;
}

int harness_landlock_abi(char *why, size_t len)
{
	long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

	if (v >= 1) {
		if (why)
			snprintf(why, len, "abi %ld", v);
		return (int)v;
	}
	if (why) {
		if (errno == ENOSYS)
			snprintf(why, len, "unavailable: the kernel was built without Landlock (ENOSYS)");
		else if (errno == EOPNOTSUPP)
			snprintf(why, len, "unavailable: Landlock is disabled at boot (add landlock to lsm=)");
		else
			snprintf(why, len, "unavailable: %s", strerror(errno));
	}
	return 0;
}

/* Allow `access` (masked to what the object supports) beneath path. A
 * missing path is not an error: not every system has /lib64. */
static int ll_allow(int ruleset, const char *path, uint64_t access, uint64_t handled)
{
	struct landlock_path_beneath_attr pb;
	struct stat st;
	int fd = open(path, O_PATH | O_CLOEXEC);

	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR ? 0 : -1;
	if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
		access &= LL_FS_FILE_RIGHTS;
	pb.allowed_access = access & handled;
	pb.parent_fd = fd;
	if (pb.allowed_access && syscall(SYS_landlock_add_rule, ruleset, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	close(fd);
	return 0;
}

struct ll_rule {
	const char *path;
	uint64_t access;
};

/* Create a ruleset handling everything the ABI knows, add rules, restrict
 * the calling thread (and so everything it later starts). */
static int ll_enter(int abi, const struct ll_rule *rules, int n, int scope, char *why, size_t len)
{
	struct ll_ruleset_attr attr = { 0 };
	size_t size;
	int rs;

	attr.handled_access_fs = ll_fs_all(abi);
	size = sizeof(uint64_t);
	if (abi >= 4) {
		attr.handled_access_net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
		size = 2 * sizeof(uint64_t);
	}
	if (abi >= 6 && scope) {
		attr.scoped = LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL;
		size = 3 * sizeof(uint64_t);
	}
	rs = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
	if (rs < 0) {
		snprintf(why, len, "landlock_create_ruleset: %s", strerror(errno));
		return -1;
	}
	for (int i = 0; i < n; i++)
		if (ll_allow(rs, rules[i].path, rules[i].access, attr.handled_access_fs) < 0) {
			snprintf(why, len, "landlock rule for %s: %s", rules[i].path, strerror(errno));
			close(rs);
			return -1;
		}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		snprintf(why, len, "no_new_privs: %s", strerror(errno));
		close(rs);
		return -1;
	}
	if (syscall(SYS_landlock_restrict_self, rs, 0) < 0) {
		snprintf(why, len, "landlock_restrict_self: %s", strerror(errno));
		close(rs);
		return -1;
	}
	close(rs);
	return 0;
}

/* System library locations the dynamic loader may read. */
static const char *const lib_dirs[] = { "/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib",
					"/etc/ld.so.cache", NULL };

int harness_sandbox_parse(json_t *req, struct harness_sandbox *sb)
{
	json_t *s = json_object_get(req, "sandbox");

	memset(sb, 0, sizeof(*sb));
	sb->enabled = json_is_true(json_object_get(s, "enabled"));
	sb->landlock_wanted = sb->enabled && !json_is_false(json_object_get(s, "landlock"));
	sb->seccomp_wanted = sb->enabled && !json_is_false(json_object_get(s, "seccomp"));
	sb->pid = (int)getpid();
	snprintf(sb->landlock, sizeof(sb->landlock), "off");
	return 0;
}

/* ------------------------------------------------------------------ seccomp */

static int rule(scmp_filter_ctx ctx, uint32_t action, const char *name, unsigned n, const struct scmp_arg_cmp *cmp)
{
	int nr = seccomp_syscall_resolve_name(name);

	if (nr == __NR_SCMP_ERROR)
		return 0; /* not on this architecture */
	return seccomp_rule_add_array(ctx, action, nr, n, cmp);
}

static int allow(scmp_filter_ctx ctx, const char *name)
{
	return rule(ctx, SCMP_ACT_ALLOW, name, 0, NULL);
}

/* What a kernel (and libc, libm, libgomp, libomp, the loader) may do. The
 * default is SCMP_ACT_TRAP: SIGSYS, which guard.c reports as
 * forbidden_syscall with the syscall's number. */
static const char *const allowed_syscalls[] = {
	/* memory */
	"brk", "mmap", "munmap", "mprotect", "mremap", "madvise", "membarrier",
	/* files already open, and opening (stage 1 only; Landlock decides what) */
	"read", "write", "readv", "writev", "pread64", "pwrite64", "lseek", "close", "fstat", "newfstatat",
	"statx", "fcntl", "dup", "ftruncate", "openat", "access", "faccessat", "faccessat2", "readlink",
	"readlinkat", "getcwd",
	/* threads and synchronization */
	"futex", "futex_waitv", "set_robust_list", "get_robust_list", "rseq", "set_tid_address", "sched_yield",
	"sched_getaffinity", "sched_getparam", "sched_getscheduler", "sched_get_priority_max",
	"sched_get_priority_min", "getcpu", "exit", "exit_group", "restart_syscall",
	/* signals of our own */
	"rt_sigprocmask", "rt_sigreturn", "sigaltstack", "rt_sigsuspend",
	/* time and identity */
	"clock_gettime", "clock_getres", "gettimeofday", "time", "nanosleep", "clock_nanosleep", "getpid", "gettid",
	"getppid", "getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid", "getrusage", "sysinfo",
	"uname", "getrandom", "getrlimit",
	NULL,
};

static int stage1(struct harness_sandbox *sb, char *why, size_t len)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_TRAP);
	struct scmp_arg_cmp c;
	int rc = 0;

	if (!ctx) {
		snprintf(why, len, "seccomp_init failed");
		return -1;
	}
	/* int 0x80 and other foreign ABIs: trapped like any forbidden call. */
	seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_TRAP);
	for (int i = 0; allowed_syscalls[i] && !rc; i++)
		rc = allow(ctx, allowed_syscalls[i]);
	/* Threads yes, processes no: clone must carry CLONE_THREAD. clone3's
	 * flags sit in memory seccomp cannot read, so it fails with ENOSYS and
	 * glibc falls back to clone (DESIGN 3.4). */
	c = (struct scmp_arg_cmp)SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD);
	rc = rc ? rc : rule(ctx, SCMP_ACT_ALLOW, "clone", 1, &c);
	rc = rc ? rc : rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL);
	/* Handlers for anything but SIGSYS (ours reports forbidden calls). */
	c = (struct scmp_arg_cmp)SCMP_A0(SCMP_CMP_NE, SIGSYS);
	rc = rc ? rc : rule(ctx, SCMP_ACT_ALLOW, "rt_sigaction", 1, &c);
	/* Signals to ourselves only (raise, abort, pthread_kill); tkill names a
	 * thread of any process, so it stays forbidden. */
	c = (struct scmp_arg_cmp)SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)sb->pid);
	rc = rc ? rc : rule(ctx, SCMP_ACT_ALLOW, "tgkill", 1, &c);
	rc = rc ? rc : rule(ctx, SCMP_ACT_ALLOW, "kill", 1, &c);
	/* Affinity of the calling thread only: another process's (the
	 * baseline's) must not be touched. */
	c = (struct scmp_arg_cmp)SCMP_A0(SCMP_CMP_EQ, 0);
	rc = rc ? rc : rule(ctx, SCMP_ACT_ALLOW, "sched_setaffinity", 1, &c);
	c = (struct scmp_arg_cmp)SCMP_A0(SCMP_CMP_NE, 0);
	rc = rc ? rc : rule(ctx, SCMP_ACT_ERRNO(EPERM), "sched_setaffinity", 1, &c);
	/* Reading limits is fine, changing them is not. */
	c = (struct scmp_arg_cmp)SCMP_A2(SCMP_CMP_EQ, 0);
	rc = rc ? rc : rule(ctx, SCMP_ACT_ALLOW, "prlimit64", 1, &c);
	/* isatty() and friends: no terminal here. */
	rc = rc ? rc : rule(ctx, SCMP_ACT_ERRNO(ENOTTY), "ioctl", 0, NULL);
	/* For stage 2 (more filters only ever restrict). */
	rc = rc ? rc : allow(ctx, "seccomp");
	c = (struct scmp_arg_cmp)SCMP_A0(SCMP_CMP_EQ, PR_SET_NO_NEW_PRIVS);
	rc = rc ? rc : rule(ctx, SCMP_ACT_ALLOW, "prctl", 1, &c);
	if (rc) {
		snprintf(why, len, "building the seccomp filter: %s", strerror(-rc));
		seccomp_release(ctx);
		return -1;
	}
	rc = seccomp_load(ctx);
	seccomp_release(ctx);
	if (rc) {
		snprintf(why, len, "seccomp_load: %s", strerror(-rc));
		return -1;
	}
	return 0;
}

static int stage2(char *why, size_t len)
{
	static const char *const denied[] = { "open", "openat", "openat2", "creat", "open_by_handle_at",
					      "name_to_handle_at", "truncate", "seccomp", "prctl", NULL };
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_ALLOW);
	int rc = 0;

	if (!ctx) {
		snprintf(why, len, "seccomp_init failed");
		return -1;
	}
	seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_TRAP);
	for (int i = 0; denied[i] && !rc; i++)
		rc = rule(ctx, SCMP_ACT_TRAP, denied[i], 0, NULL);
	rc = rc ? rc : seccomp_load(ctx);
	seccomp_release(ctx);
	if (rc) {
		snprintf(why, len, "seccomp stage 2: %s", strerror(-rc));
		return -1;
	}
	return 0;
}

int harness_sandbox_enter(struct harness_sandbox *sb, const char *kernel_so, struct pragma_err *err)
{
	char why[256];

	if (!sb->enabled)
		return 0;
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0)
		return pragma_err_set(err, PRAGMA_E_ENV, "no_new_privs: %s", strerror(errno));
	if (sb->landlock_wanted) {
		int abi = harness_landlock_abi(sb->landlock, sizeof(sb->landlock));
		if (abi > 0) {
			struct ll_rule rules[16];
			int n = 0;
			/* Reads: system libraries and the kernel itself. Nothing
			 * else: inputs are already in memory, and the reference
			 * outputs sit beside them. No writes at all: the output
			 * files were opened before this point. */
			for (int i = 0; lib_dirs[i]; i++)
				rules[n++] = (struct ll_rule){ lib_dirs[i], LANDLOCK_ACCESS_FS_READ_FILE };
			rules[n++] = (struct ll_rule){ kernel_so, LANDLOCK_ACCESS_FS_READ_FILE };
			if (ll_enter(abi, rules, n, 1, why, sizeof(why)) < 0)
				return pragma_err_set(err, PRAGMA_E_ENV, "Landlock: %s", why);
			sb->landlock_abi = abi;
		}
	} else {
		snprintf(sb->landlock, sizeof(sb->landlock), "off (not requested)");
	}
	if (sb->seccomp_wanted) {
		if (stage1(sb, why, sizeof(why)) < 0)
			return pragma_err_set(err, PRAGMA_E_ENV, "seccomp: %s", why);
		sb->seccomp = 1;
	}
	return 0;
}

int harness_sandbox_lock(struct harness_sandbox *sb, struct pragma_err *err)
{
	char why[256];

	if (!sb->enabled || !sb->seccomp_wanted)
		return 0;
	if (stage2(why, sizeof(why)) < 0)
		return pragma_err_set(err, PRAGMA_E_ENV, "%s", why);
	sb->seccomp_locked = 1;
	return 0;
}

void harness_sandbox_report(const struct harness_sandbox *sb, json_t *result)
{
	json_object_set_new(result, "sandbox",
			    json_pack("{s:b, s:b, s:b, s:s, s:i}", "enabled", sb->enabled, "seccomp", sb->seccomp,
				      "seccomp_locked", sb->seccomp_locked, "landlock", sb->landlock, "landlock_abi",
				      sb->landlock_abi));
}

/* ------------------------------------------------------------ compiler jail */

/*
 * What a compiler may touch besides what the caller names (--ro, --rx, --rw:
 * the private build directory, pragma's headers, the compiler's own
 * installation when it lives outside /usr). Found by tracing gcc 12, clang
 * 14 and nvcc 13 on kernels using OpenMP, immintrin.h, math.h, cuda_fp16.h
 * and CUB (strace -f -e trace=%file): the system's programs, headers and
 * libraries under /usr (and the /bin, /lib links into it); from /etc only
 * the loader's cache, the local time zone (nvcc) and the files that name the
 * distribution (clang picks its defaults by them); /dev/null and
 * /dev/urandom (nvcc); the CPU description (-march=native). Not the rest of
 * /etc (/etc/shadow, keys, credentials), not /proc (environ holds API
 * keys), not home directories: a kernel that .incbin's or #include's them
 * fails to compile.
 */
static const char *const jail_sys_rx[] = { "/usr", "/bin", "/sbin", "/lib", "/lib64", "/libx32", NULL };
static const char *const jail_sys_ro[] = {
	"/etc/ld.so.cache", "/etc/ld.so.preload", "/etc/localtime",
	/* clang's distribution detection */
	"/etc/os-release", "/etc/lsb-release", "/etc/debian_version", "/etc/redhat-release", "/etc/system-release",
	"/etc/SuSE-release", "/etc/alpine-release", "/etc/gentoo-release", "/etc/arch-release",
	"/proc/cpuinfo", "/sys/devices/system/cpu", "/proc/sys/vm/overcommit_memory", "/dev/urandom", NULL,
};

int harness_confine_main(int argc, char **argv)
{
	struct ll_rule rules[80];
	char why[256];
	int n = 0, i, abi;
	const uint64_t ro = LL_FS_READ;
	const uint64_t rx = LL_FS_READ | LANDLOCK_ACCESS_FS_EXECUTE;
	const uint64_t rw = ll_fs_all(7) & ~(uint64_t)LANDLOCK_ACCESS_FS_EXECUTE;

	for (i = 0; jail_sys_rx[i]; i++)
		rules[n++] = (struct ll_rule){ jail_sys_rx[i], rx };
	for (i = 0; jail_sys_ro[i]; i++)
		rules[n++] = (struct ll_rule){ jail_sys_ro[i], ro };
	rules[n++] = (struct ll_rule){ "/dev/null", LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_WRITE_FILE };
	for (i = 2; i < argc && strcmp(argv[i], "--"); i += 2) {
		if (i + 1 >= argc || n >= 76) {
			fprintf(stderr, "pragma-harness confine: bad arguments\n");
			return 2;
		}
		if (!strcmp(argv[i], "--ro"))
			rules[n++] = (struct ll_rule){ argv[i + 1], ro };
		else if (!strcmp(argv[i], "--rx"))
			rules[n++] = (struct ll_rule){ argv[i + 1], rx };
		else if (!strcmp(argv[i], "--rw"))
			rules[n++] = (struct ll_rule){ argv[i + 1], rw };
		else {
			fprintf(stderr, "pragma-harness confine: unknown option %s\n", argv[i]);
			return 2;
		}
	}
	if (i + 1 >= argc) {
		fprintf(stderr, "usage: pragma-harness confine [--ro PATH|--rx PATH|--rw PATH]... -- PROGRAM ARGS...\n");
		return 2;
	}
	abi = harness_landlock_abi(why, sizeof(why));
	if (abi > 0 && ll_enter(abi, rules, n, 0, why, sizeof(why)) < 0) {
		fprintf(stderr, "pragma-harness confine: %s\n", why);
		return 3;
	}
	execvp(argv[i + 1], argv + i + 1);
	fprintf(stderr, "pragma-harness confine: cannot run %s: %s\n", argv[i + 1], strerror(errno));
	return 127;
}
