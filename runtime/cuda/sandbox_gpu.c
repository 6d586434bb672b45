/*
 * Landlock and seccomp for the CUDA harness (see gpu_sandbox.h for how it
 * differs from the CPU harness's sandbox). The syscall list is the CPU
 * harness's plus what the CUDA driver uses once initialized: ioctl on its
 * device nodes, memory mapping and NUMA policy calls, polling its event
 * file descriptors. A call outside the list traps (SIGSYS), which guard.c
 * reports as forbidden_syscall naming it; on a new driver that needs more,
 * that message says what to add.
 */
#include <errno.h>
#include <fcntl.h>
#include <linux/landlock.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "gpu_sandbox.h"

#ifndef LANDLOCK_CREATE_RULESET_VERSION
#define LANDLOCK_CREATE_RULESET_VERSION (1U << 0)
#endif
#define LL_FS_TRUNCATE (1ULL << 14)      /* ABI 3 */
#define LL_FS_IOCTL_DEV (1ULL << 15)     /* ABI 5 */
#define LL_NET_BIND_TCP (1ULL << 0)      /* ABI 4 */
#define LL_NET_CONNECT_TCP (1ULL << 1)
#define LL_SCOPE_ABSTRACT_UNIX (1ULL << 0) /* ABI 6 */
#define LL_SCOPE_SIGNAL (1ULL << 1)

struct ll_attr {
	uint64_t fs, net, scoped;
};

#define LL_READ (LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_READ_DIR)
#define LL_FILE_RIGHTS \
	(LANDLOCK_ACCESS_FS_EXECUTE | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_READ_FILE | LL_FS_TRUNCATE | \
	 LL_FS_IOCTL_DEV)

int gpu_landlock_abi(char *why, size_t len)
{
	long v = syscall(SYS_landlock_create_ruleset, NULL, 0, LANDLOCK_CREATE_RULESET_VERSION);

	if (v >= 1) {
		if (why)
			snprintf(why, len, "abi %ld", v);
		return (int)v;
	}
	if (why)
		snprintf(why, len, "unavailable: %s",
			 errno == ENOSYS ? "the kernel was built without Landlock (ENOSYS)" :
			 errno == EOPNOTSUPP ? "Landlock is disabled at boot (add landlock to lsm=)" : strerror(errno));
	return 0;
}

static uint64_t fs_all(int abi)
{
	uint64_t a = (LANDLOCK_ACCESS_FS_MAKE_SYM << 1) - 1;

	if (abi >= 2)
		a |= LANDLOCK_ACCESS_FS_REFER;
	if (abi >= 3)
		a |= LL_FS_TRUNCATE;
	if (abi >= 5)
		a |= LL_FS_IOCTL_DEV;
	return a;
}

static int ll_allow(int rs, const char *path, uint64_t access, uint64_t handled)
{
	struct landlock_path_beneath_attr pb;
	struct stat st;
	int fd;

	if (!path || !*path)
		return 0;
	fd = open(path, O_PATH | O_CLOEXEC);
	if (fd < 0)
		return errno == ENOENT || errno == ENOTDIR || errno == EACCES ? 0 : -1;
	if (fstat(fd, &st) == 0 && !S_ISDIR(st.st_mode))
		access &= LL_FILE_RIGHTS;
	pb.allowed_access = access & handled;
	pb.parent_fd = fd;
	if (pb.allowed_access && syscall(SYS_landlock_add_rule, rs, LANDLOCK_RULE_PATH_BENEATH, &pb, 0) < 0) {
		int e = errno;
		close(fd);
		errno = e;
		return -1;
	}
	close(fd);
	return 0;
}

/* Device nodes the driver may (re)open: /dev/nvidia0.., nvidiactl,
 * nvidia-uvm, nvidia-uvm-tools, nvidia-modeset, nvidia-caps/. */
static int allow_devices(int rs, uint64_t handled)
{
	static const char *const fixed[] = { "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
					     "/dev/nvidia-modeset", "/dev/nvidia-caps", "/dev/dri", NULL };
	uint64_t rw = LL_READ | LANDLOCK_ACCESS_FS_WRITE_FILE | LL_FS_IOCTL_DEV;
	char p[64];

	for (int i = 0; fixed[i]; i++)
		if (ll_allow(rs, fixed[i], rw, handled) < 0)
			return -1;
	for (int i = 0; i < 64; i++) {
		snprintf(p, sizeof(p), "/dev/nvidia%d", i);
		if (access(p, F_OK) != 0)
			continue;
		if (ll_allow(rs, p, rw, handled) < 0)
			return -1;
	}
	return 0;
}

static int landlock(struct gpu_sandbox *sb, int abi, char *why, size_t len)
{
	static const char *const lib_ro[] = { "/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib",
					      "/etc/ld.so.cache", "/proc/driver/nvidia", "/sys/devices",
					      "/sys/bus/pci", "/proc/self", "/proc/cpuinfo", "/proc/meminfo",
					      "/sys/devices/system/cpu", NULL };
	struct ll_attr attr = { 0 };
	size_t size = sizeof(uint64_t);
	int rs, rc = 0;

	attr.fs = fs_all(abi);
	if (abi >= 4) {
		attr.net = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP;
		size = 2 * sizeof(uint64_t);
	}
	if (abi >= 6 && !sb->profiler) {
		attr.scoped = LL_SCOPE_ABSTRACT_UNIX | LL_SCOPE_SIGNAL;
		size = 3 * sizeof(uint64_t);
	}
	rs = (int)syscall(SYS_landlock_create_ruleset, &attr, size, 0);
	if (rs < 0) {
		snprintf(why, len, "landlock_create_ruleset: %s", strerror(errno));
		return -1;
	}
	for (int i = 0; lib_ro[i] && !rc; i++)
		rc = ll_allow(rs, lib_ro[i], LL_READ, attr.fs);
	rc = rc ? rc : ll_allow(rs, sb->kernel_so, LANDLOCK_ACCESS_FS_READ_FILE, attr.fs);
	rc = rc ? rc : ll_allow(rs, sb->cuda_lib_dir, LL_READ, attr.fs);
	rc = rc ? rc : allow_devices(rs, attr.fs);
	if (!rc && sb->profiler) {
		uint64_t rw = fs_all(abi) & ~(uint64_t)LANDLOCK_ACCESS_FS_EXECUTE;
		rc = ll_allow(rs, sb->tool_dir, LL_READ | LANDLOCK_ACCESS_FS_EXECUTE, attr.fs);
		rc = rc ? rc : ll_allow(rs, "/tmp", rw, attr.fs);
		rc = rc ? rc : ll_allow(rs, "/dev/shm", rw, attr.fs);
		rc = rc ? rc : ll_allow(rs, "/proc", LL_READ, attr.fs);
	}
	if (rc) {
		snprintf(why, len, "landlock rule: %s", strerror(errno));
		close(rs);
		return -1;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0 || syscall(SYS_landlock_restrict_self, rs, 0) < 0) {
		snprintf(why, len, "landlock_restrict_self: %s", strerror(errno));
		close(rs);
		return -1;
	}
	close(rs);
	return 0;
}

static int rule(scmp_filter_ctx ctx, uint32_t action, const char *name, unsigned n, const struct scmp_arg_cmp *cmp)
{
	int nr = seccomp_syscall_resolve_name(name);

	if (nr == __NR_SCMP_ERROR)
		return 0;
	return seccomp_rule_add_array(ctx, action, nr, n, cmp);
}

static const char *const allowed[] = {
	/* memory (the driver maps device and pinned memory) */
	"brk", "mmap", "munmap", "mprotect", "mremap", "madvise", "membarrier", "mlock", "munlock", "msync",
	"get_mempolicy", "set_mempolicy", "mbind", "move_pages",
	/* files already open (device nodes included), and opening in stage 1 */
	"read", "write", "readv", "writev", "pread64", "pwrite64", "lseek", "close", "fstat", "newfstatat", "statx",
	"fcntl", "dup", "ftruncate", "openat", "access", "faccessat", "faccessat2", "readlink", "readlinkat", "getcwd",
	"ioctl", "fstatfs", "statfs", "getdents64",
	/* waiting on the driver */
	"poll", "ppoll", "select", "pselect6", "epoll_wait", "epoll_pwait", "epoll_ctl", "eventfd2",
	/* threads and synchronization */
	"futex", "futex_waitv", "set_robust_list", "get_robust_list", "rseq", "set_tid_address", "sched_yield",
	"sched_getaffinity", "sched_getparam", "sched_getscheduler", "sched_get_priority_max",
	"sched_get_priority_min", "getcpu", "exit", "exit_group", "restart_syscall",
	/* signals of our own */
	"rt_sigprocmask", "rt_sigreturn", "sigaltstack", "rt_sigsuspend", "rt_sigtimedwait",
	/* time and identity */
	"clock_gettime", "clock_getres", "gettimeofday", "time", "nanosleep", "clock_nanosleep", "getpid", "gettid",
	"getppid", "getuid", "geteuid", "getgid", "getegid", "getresuid", "getresgid", "getrusage", "sysinfo",
	"uname", "getrandom", "getrlimit",
	NULL,
};

static const char *const profiler_extra[] = {
	/* ncu's injected library and its front end */
	"socket", "connect", "sendto", "recvfrom", "sendmsg", "recvmsg", "shutdown", "getsockname", "getpeername",
	"setsockopt", "getsockopt", "socketpair", "pipe2", "shmget", "shmat", "shmdt", "shmctl", "memfd_create",
	"unlink", "unlinkat", "mkdir", "mkdirat", "rename", "renameat", "flock", "fsync", "fdatasync",
	"timerfd_create", "timerfd_settime", "kill", "tgkill", "sched_setaffinity", "prctl", NULL,
};

static int stage1(struct gpu_sandbox *sb, char *why, size_t len)
{
	scmp_filter_ctx ctx = seccomp_init(SCMP_ACT_TRAP);
	struct scmp_arg_cmp c;
	int rc = 0;

	if (!ctx) {
		snprintf(why, len, "seccomp_init failed");
		return -1;
	}
	seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_TRAP);
	for (int i = 0; allowed[i] && !rc; i++)
		rc = rule(ctx, SCMP_ACT_ALLOW, allowed[i], 0, NULL);
	for (int i = 0; sb->profiler && profiler_extra[i] && !rc; i++)
		rc = rule(ctx, SCMP_ACT_ALLOW, profiler_extra[i], 0, NULL);
	/* Threads yes, processes no (clone3: ENOSYS, glibc falls back). */
	c = (struct scmp_arg_cmp)SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD);
	rc = rc ? rc : rule(ctx, SCMP_ACT_ALLOW, "clone", 1, &c);
	rc = rc ? rc : rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL);
	c = (struct scmp_arg_cmp)SCMP_A0(SCMP_CMP_NE, SIGSYS);
	rc = rc ? rc : rule(ctx, SCMP_ACT_ALLOW, "rt_sigaction", 1, &c);
	if (!sb->profiler) {
		c = (struct scmp_arg_cmp)SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)sb->pid);
		rc = rc ? rc : rule(ctx, SCMP_ACT_ALLOW, "tgkill", 1, &c);
		rc = rc ? rc : rule(ctx, SCMP_ACT_ALLOW, "kill", 1, &c);
		c = (struct scmp_arg_cmp)SCMP_A0(SCMP_CMP_EQ, 0);
		rc = rc ? rc : rule(ctx, SCMP_ACT_ALLOW, "sched_setaffinity", 1, &c);
		/* Thread names (the driver's helper threads) and stage 2. */
		c = (struct scmp_arg_cmp)SCMP_A0(SCMP_CMP_EQ, PR_SET_NAME);
		rc = rc ? rc : rule(ctx, SCMP_ACT_ALLOW, "prctl", 1, &c);
		c = (struct scmp_arg_cmp)SCMP_A0(SCMP_CMP_EQ, PR_GET_NAME);
		rc = rc ? rc : rule(ctx, SCMP_ACT_ALLOW, "prctl", 1, &c);
		c = (struct scmp_arg_cmp)SCMP_A0(SCMP_CMP_EQ, PR_SET_NO_NEW_PRIVS);
		rc = rc ? rc : rule(ctx, SCMP_ACT_ALLOW, "prctl", 1, &c);
	}
	c = (struct scmp_arg_cmp)SCMP_A2(SCMP_CMP_EQ, 0);
	rc = rc ? rc : rule(ctx, SCMP_ACT_ALLOW, "prlimit64", 1, &c);
	rc = rc ? rc : rule(ctx, SCMP_ACT_ALLOW, "seccomp", 0, NULL);
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

int gpu_sandbox_enter(struct gpu_sandbox *sb, char *why, size_t len)
{
	if (!sb->enabled) {
		snprintf(sb->landlock, sizeof(sb->landlock), "off");
		return 0;
	}
	if (prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0) < 0) {
		snprintf(why, len, "no_new_privs: %s", strerror(errno));
		return -1;
	}
	if (sb->landlock_wanted) {
		int abi = gpu_landlock_abi(sb->landlock, sizeof(sb->landlock));
		if (abi > 0) {
			if (landlock(sb, abi, why, len) < 0)
				return -1;
			sb->landlock_abi = abi;
		}
	} else {
		snprintf(sb->landlock, sizeof(sb->landlock), "off (not requested)");
	}
	if (sb->seccomp_wanted) {
		if (stage1(sb, why, len) < 0)
			return -1;
		sb->seccomp = 1;
	}
	return 0;
}

int gpu_sandbox_lock(struct gpu_sandbox *sb, char *why, size_t len)
{
	static const char *const denied[] = { "open", "openat", "openat2", "creat", "open_by_handle_at",
					      "name_to_handle_at", "truncate", "seccomp", NULL };
	scmp_filter_ctx ctx;
	int rc = 0;

	if (!sb->enabled || !sb->seccomp_wanted || sb->profiler)
		return 0; /* under ncu the tool keeps opening its own files */
	ctx = seccomp_init(SCMP_ACT_ALLOW);
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
	sb->seccomp_locked = 1;
	return 0;
}
