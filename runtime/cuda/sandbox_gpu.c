/*
 * Landlock and seccomp for the CUDA harness (see gpu_sandbox.h for how it
 * differs from the CPU harness's sandbox). The syscall list is the CPU
 * harness's plus what the CUDA driver uses once initialized: ioctl on its
 * device nodes, memory mapping and NUMA policy calls, polling its event
 * file descriptors. A call outside the list traps (SIGSYS), which guard.c
 * reports as forbidden_syscall naming it; on a new driver that needs more,
 * that message says what to add.
 *
 * Under Nsight Compute (profiler mode) the harness is ncu's target: ncu's
 * launcher preloads its libraries (LD_PRELOAD) and the CUDA driver loads
 * its injection (CUDA_INJECTION64_PATH) at cuInit, before the sandbox; the
 * injection's own threads exist before it too and are not confined. What
 * runs on the confined thread is the injection's work at each intercepted
 * launch ("prepare kernel for profiling", replay passes): it takes ncu's
 * cross-process lock (a file in $TMPDIR or /tmp, created and chmod'ed so
 * other users can share it: the chmod that profiler mode lacked, issue 12),
 * may load libnvperf from its directory, and talks to the front end over
 * local or TCP sockets. Profiler mode allows that and nothing more:
 * Landlock adds ncu's directories (resolved through symlinks, and taken
 * from the injection's own environment variables), /tmp, $TMPDIR and
 * /dev/shm, TCP on ncu's port range; seccomp adds the calls below. Only
 * kernels that passed verification in the full sandbox are profiled.
 *
 * PRAGMA_CUDA_PROFILER_LEARN=1 (profiler mode only, a diagnostic): calls
 * outside the list are let through and named on stderr instead of
 * trapping ("pragma-cuda-harness: profiler mode lacks syscall 90
 * (chmod)"), and files opened outside what Landlock grants are named too
 * ("... denies open of /etc/foo": Landlock only reports in learn mode, as
 * a refused open can crash the injection before the rest is seen), so one
 * run on a new ncu or driver lists everything to add.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <linux/landlock.h>
#include <pthread.h>
#include <sched.h>
#include <seccomp.h>
#include <signal.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/uio.h>
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

/* ABI 4's port rules (the installed UAPI header may predate them). */
#define LL_RULE_NET_PORT 2
struct ll_net_port_attr {
	uint64_t allowed_access;
	uint64_t port;
} __attribute__((packed));

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
static int device_rules(struct gpu_ll_rule *r, int n, int cap)
{
	static const char *const fixed[] = { "/dev/nvidiactl", "/dev/nvidia-uvm", "/dev/nvidia-uvm-tools",
					     "/dev/nvidia-modeset", "/dev/nvidia-caps", "/dev/dri", NULL };
	uint64_t rw = LL_READ | LANDLOCK_ACCESS_FS_WRITE_FILE | LL_FS_IOCTL_DEV;

	for (int i = 0; fixed[i] && n < cap; i++) {
		snprintf(r[n].path, sizeof(r[n].path), "%s", fixed[i]);
		r[n++].access = rw;
	}
	for (int i = 0; i < 64 && n < cap; i++) {
		snprintf(r[n].path, sizeof(r[n].path), "/dev/nvidia%d", i);
		if (access(r[n].path, F_OK) == 0)
			r[n++].access = rw;
	}
	return n;
}

/* Add the directory holding `file` (symlinks resolved), unless empty or
 * already present. */
static int add_dir_of(struct gpu_ll_rule *r, int n, int cap, const char *file, uint64_t access)
{
	char *real, *slash;

	if (!file || !*file || n >= cap)
		return n;
	real = realpath(file, NULL);
	if (!real)
		return n;
	slash = strrchr(real, '/');
	if (slash && slash != real)
		*slash = '\0';
	for (int i = 0; i < n; i++)
		if (!strcmp(r[i].path, real) && (r[i].access & access) == access) {
			free(real);
			return n;
		}
	snprintf(r[n].path, sizeof(r[n].path), "%s", real);
	r[n++].access = access;
	free(real);
	return n;
}

static int add_path(struct gpu_ll_rule *r, int n, int cap, const char *path, uint64_t access, int resolve)
{
	char *real = NULL;

	if (!path || !*path || n >= cap)
		return n;
	if (resolve)
		real = realpath(path, NULL);
	snprintf(r[n].path, sizeof(r[n].path), "%s", real ? real : path);
	r[n++].access = access;
	free(real);
	return n;
}

int gpu_sandbox_rules(const struct gpu_sandbox *sb, struct gpu_ll_rule *r, int cap)
{
	static const char *const name_service[] = { "/etc/hosts", "/etc/host.conf", "/etc/nsswitch.conf",
						    "/etc/resolv.conf", "/etc/gai.conf", "/etc/localtime",
						    "/etc/passwd", "/etc/group", "/usr/share/zoneinfo", NULL };
	static const char *const lib_ro[] = { "/lib", "/lib64", "/usr/lib", "/usr/lib64", "/usr/local/lib",
					      "/etc/ld.so.cache", "/proc/driver/nvidia", "/sys/devices",
					      "/sys/bus/pci", "/proc/self", "/proc/cpuinfo", "/proc/meminfo",
					      "/sys/devices/system/cpu", NULL };
	uint64_t rw = LL_READ | LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_FILE |
		      LANDLOCK_ACCESS_FS_REMOVE_DIR | LANDLOCK_ACCESS_FS_MAKE_REG | LANDLOCK_ACCESS_FS_MAKE_DIR |
		      LANDLOCK_ACCESS_FS_MAKE_SOCK | LANDLOCK_ACCESS_FS_MAKE_FIFO | LANDLOCK_ACCESS_FS_MAKE_SYM |
		      LANDLOCK_ACCESS_FS_REFER | LL_FS_TRUNCATE;
	int n = 0;

	for (int i = 0; lib_ro[i] && n < cap; i++)
		n = add_path(r, n, cap, lib_ro[i], LL_READ, 0);
	n = add_path(r, n, cap, sb->kernel_so, LANDLOCK_ACCESS_FS_READ_FILE, 0);
	n = add_path(r, n, cap, sb->cuda_lib_dir, LL_READ, 1);
	n = device_rules(r, n, cap);
	if (sb->profiler) {
		const char *inj = getenv("CUDA_INJECTION64_PATH"), *pre = getenv("LD_PRELOAD");
		const char *tmp = getenv("TMPDIR");
		/* ncu's installation as pragma found it (resolved there), and
		 * where ncu's launcher really put the injection: the libraries
		 * it preloaded and the one the driver loads, each resolved. */
		n = add_path(r, n, cap, sb->tool_dir, LL_READ | LANDLOCK_ACCESS_FS_EXECUTE, 1);
		n = add_dir_of(r, n, cap, inj, LL_READ | LANDLOCK_ACCESS_FS_EXECUTE);
		if (pre && *pre) {
			char list[8192], *save = NULL;
			snprintf(list, sizeof(list), "%s", pre);
			for (char *t = strtok_r(list, ": ", &save); t; t = strtok_r(NULL, ": ", &save))
				if (t[0] == '/')
					n = add_dir_of(r, n, cap, t, LL_READ | LANDLOCK_ACCESS_FS_EXECUTE);
		}
		/* The cross-process lock and ncu's temporary files. */
		n = add_path(r, n, cap, "/tmp", rw, 0);
		if (tmp && *tmp)
			n = add_path(r, n, cap, tmp, rw, 1);
		n = add_path(r, n, cap, "/dev/shm", rw, 0);
		n = add_path(r, n, cap, "/proc", LL_READ, 0);
		/* What the C library reads for the injection's connection to
		 * the front end (getaddrinfo("localhost"), user and time
		 * lookups), and the driver's and the device's attributes. */
		for (int i = 0; name_service[i] && n < cap; i++)
			n = add_path(r, n, cap, name_service[i], LL_READ, 1);
		n = add_path(r, n, cap, "/sys", LL_READ, 0);
	}
	return n;
}

/* ncu's front end and its target find each other on TCP ports from 49152
 * (--port) up, one per connection (--max-connections, 64). */
#define NCU_PORT_FIRST 49152
#define NCU_PORT_COUNT 64

static int landlock(struct gpu_sandbox *sb, int abi, char *why, size_t len)
{
	struct gpu_ll_rule *r = calloc(GPU_LL_RULES_MAX, sizeof(*r));
	struct ll_attr attr = { 0 };
	size_t size = sizeof(uint64_t);
	int rs, rc = 0, n;

	if (!r) {
		snprintf(why, len, "out of memory");
		return -1;
	}
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
		free(r);
		return -1;
	}
	n = gpu_sandbox_rules(sb, r, GPU_LL_RULES_MAX);
	for (int i = 0; i < n && !rc; i++) {
		rc = ll_allow(rs, r[i].path, r[i].access, attr.fs);
		if (rc)
			snprintf(why, len, "landlock rule for %s: %s", r[i].path, strerror(errno));
	}
	if (!rc && sb->profiler && abi >= 4) {
		struct ll_net_port_attr np = { .allowed_access = LL_NET_BIND_TCP | LL_NET_CONNECT_TCP };
		for (int p = 0; p < NCU_PORT_COUNT && !rc; p++) {
			np.port = NCU_PORT_FIRST + p;
			rc = (int)syscall(SYS_landlock_add_rule, rs, LL_RULE_NET_PORT, &np, 0);
			if (rc)
				snprintf(why, len, "landlock rule for TCP port %d: %s", (int)np.port, strerror(errno));
		}
	}
	free(r);
	if (rc) {
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

/* Profiler mode adds what ncu's injection does on the launching thread
 * (see the top): its lock file (created, chmod'ed for other users,
 * flock'ed, removed), temporary and shared-memory files, sockets to the
 * front end, timers and event descriptors, thread names and affinity,
 * capability checks for counter access. Processes stay forbidden (clone
 * without CLONE_THREAD, execve). */
static const char *const profiler_extra[] = {
	/* files: the lock and temporary files */
	"chmod", "fchmod", "fchmodat", "fchmodat2", "umask", "fchown", "fchownat", "unlink", "unlinkat", "mkdir",
	"mkdirat", "rmdir", "rename", "renameat", "renameat2", "link", "linkat", "symlink", "symlinkat", "flock",
	"fsync", "fdatasync", "fallocate", "utimensat", "fadvise64", "dup2", "dup3", "pipe", "pipe2", "memfd_create",
	"shmget", "shmat", "shmdt", "shmctl", "mincore",
	/* sockets to the front end */
	"socket", "socketpair", "connect", "bind", "listen", "accept", "accept4", "sendto", "recvfrom", "sendmsg",
	"recvmsg", "sendmmsg", "recvmmsg", "shutdown", "getsockname", "getpeername", "setsockopt", "getsockopt",
	"epoll_create", "epoll_create1", "epoll_pwait2",
	/* timers, threads, identity */
	"timerfd_create", "timerfd_settime", "timerfd_gettime", "timer_create", "timer_settime", "timer_gettime",
	"timer_delete", "sched_setaffinity", "prctl", "capget", "getpriority",
	"setpriority", "getpgid", "getsid", "getpgrp", "setitimer", "getitimer", "alarm", NULL,
};

const char *const *gpu_sandbox_profiler_syscalls(void)
{
	return profiler_extra;
}

const char *const *gpu_sandbox_base_syscalls(void)
{
	return allowed;
}

/* ---- learn mode: a supervisor thread answers seccomp notifications ---- */

static struct {
	pthread_t thread;
	pthread_mutex_t mu;
	pthread_cond_t cv;
	int fd;                      /* the notification fd; -1 until loaded, -2 when loading failed */
	unsigned char seen[1024];    /* syscall numbers already named */
	struct gpu_ll_rule *rules;   /* what Landlock grants, to name the opens it will deny */
	int n_rules, n_denied;
} learn = { .mu = PTHREAD_MUTEX_INITIALIZER, .cv = PTHREAD_COND_INITIALIZER, .fd = -1 };

/* Is path (absolute, normalized by hand only as far as needed) beneath a
 * rule? */
static int granted(const char *path)
{
	for (int i = 0; i < learn.n_rules; i++) {
		size_t k = strlen(learn.rules[i].path);
		if (!strncmp(path, learn.rules[i].path, k) && (path[k] == '\0' || path[k] == '/' || k == 1))
			return 1;
	}
	return 0;
}

/* An open by the confined thread (learn mode routes open/openat here too):
 * name the file when Landlock will refuse it, so that one run lists the
 * files ncu's injection needs as well as the calls. The path is copied with
 * process_vm_readv: a bad pointer gives EFAULT, not a crash. */
static void note_open(const struct seccomp_notif *req)
{
	char path[PATH_MAX], real[PATH_MAX + 64], line[PATH_MAX + 128];
	struct iovec local = { path, sizeof(path) - 1 }, remote;
	unsigned long long addr = req->data.nr == SCMP_SYS(open) ? req->data.args[0] : req->data.args[1];
	ssize_t got;
	int k;

	remote.iov_base = (void *)(uintptr_t)addr;
	remote.iov_len = sizeof(path) - 1;
	got = process_vm_readv(getpid(), &local, 1, &remote, 1, 0);
	if (got <= 0 || learn.n_denied >= 200)
		return;
	path[got] = '\0';
	path[strnlen(path, (size_t)got)] = '\0';
	if (path[0] != '/') {
		char cwd[PATH_MAX];
		if (!getcwd(cwd, sizeof(cwd)))
			return;
		snprintf(real, sizeof(real), "%s/%s", cwd, path);
	} else {
		snprintf(real, sizeof(real), "%s", path);
	}
	{
		/* Landlock judges the file itself, symlinks resolved: so do we
		 * (the parent directory for a file about to be created). */
		char *rp = realpath(real, NULL), *slash;
		if (!rp && (slash = strrchr(real, '/')) && slash != real) {
			*slash = '\0';
			rp = realpath(real, NULL);
			*slash = '/';
			if (rp) {
				char *full = malloc(strlen(rp) + strlen(slash) + 1);
				if (full)
					sprintf(full, "%s%s", rp, slash);
				free(rp);
				rp = full;
			}
		}
		if (rp) {
			snprintf(real, sizeof(real), "%s", rp);
			free(rp);
		}
	}
	if (granted(real))
		return;
	learn.n_denied++;
	k = snprintf(line, sizeof(line), "pragma-cuda-harness: profiler mode denies open of %s\n", real);
	if (write(2, line, (size_t)k) < 0) {
		/* stderr is the only channel */
	}
}

/* Runs unconfined (started before the filter): names each new syscall the
 * confined thread makes outside the list, then lets it proceed. */
static void *learn_main(void *arg)
{
	struct seccomp_notif *req = NULL;
	struct seccomp_notif_resp *resp = NULL;
	int fd;

	(void)arg;
	pthread_mutex_lock(&learn.mu);
	while (learn.fd == -1)
		pthread_cond_wait(&learn.cv, &learn.mu);
	fd = learn.fd;
	pthread_mutex_unlock(&learn.mu);
	if (fd < 0 || seccomp_notify_alloc(&req, &resp) < 0)
		return NULL;
	for (;;) {
		memset(req, 0, sizeof(*req));
		if (seccomp_notify_receive(fd, req) < 0) {
			if (errno == EINTR || errno == ENOENT)
				continue;
			break;
		}
		if (req->data.nr == SCMP_SYS(open) || req->data.nr == SCMP_SYS(openat)) {
			note_open(req);
		} else if (req->data.nr >= 0 && req->data.nr < (int)sizeof(learn.seen) && !learn.seen[req->data.nr]) {
			char *name = seccomp_syscall_resolve_num_arch(SCMP_ARCH_NATIVE, req->data.nr);
			char line[160];
			int k;
			learn.seen[req->data.nr] = 1;
			k = snprintf(line, sizeof(line), "pragma-cuda-harness: profiler mode lacks syscall %d (%s)\n",
				     req->data.nr, name ? name : "?");
			if (write(2, line, (size_t)k) < 0) {
				/* nothing to do: stderr is the only channel */
			}
			free(name);
		}
		memset(resp, 0, sizeof(*resp));
		resp->id = req->id;
		resp->flags = SECCOMP_USER_NOTIF_FLAG_CONTINUE;
		if (seccomp_notify_respond(fd, resp) < 0 && errno != ENOENT)
			break;
	}
	seccomp_notify_free(req, resp);
	return NULL;
}

static int learning(const struct gpu_sandbox *sb)
{
	const char *e = getenv("PRAGMA_CUDA_PROFILER_LEARN");

	return sb->profiler && e && *e && strcmp(e, "0");
}

static int stage1(struct gpu_sandbox *sb, char *why, size_t len)
{
	int learn_mode = learning(sb);
	scmp_filter_ctx ctx = seccomp_init(learn_mode ? SCMP_ACT_NOTIFY : SCMP_ACT_TRAP);
	struct scmp_arg_cmp c;
	int rc = 0;

	if (!ctx) {
		snprintf(why, len, "seccomp_init failed");
		return -1;
	}
	seccomp_attr_set(ctx, SCMP_FLTATR_ACT_BADARCH, SCMP_ACT_TRAP);
	for (int i = 0; allowed[i] && !rc; i++)
		if (!learn_mode || (strcmp(allowed[i], "openat") && strcmp(allowed[i], "open")))
			rc = rule(ctx, SCMP_ACT_ALLOW, allowed[i], 0, NULL);
	for (int i = 0; sb->profiler && profiler_extra[i] && !rc; i++)
		rc = rule(ctx, SCMP_ACT_ALLOW, profiler_extra[i], 0, NULL);
	/* Threads yes, processes no (clone3: ENOSYS, glibc falls back). */
	c = (struct scmp_arg_cmp)SCMP_A0(SCMP_CMP_MASKED_EQ, CLONE_THREAD, CLONE_THREAD);
	rc = rc ? rc : rule(ctx, SCMP_ACT_ALLOW, "clone", 1, &c);
	rc = rc ? rc : rule(ctx, SCMP_ACT_ERRNO(ENOSYS), "clone3", 0, NULL);
	c = (struct scmp_arg_cmp)SCMP_A0(SCMP_CMP_NE, SIGSYS);
	rc = rc ? rc : rule(ctx, SCMP_ACT_ALLOW, "rt_sigaction", 1, &c);
	/* Signals to this process only, ncu's injection included. */
	c = (struct scmp_arg_cmp)SCMP_A0(SCMP_CMP_EQ, (scmp_datum_t)sb->pid);
	rc = rc ? rc : rule(ctx, SCMP_ACT_ALLOW, "tgkill", 1, &c);
	rc = rc ? rc : rule(ctx, SCMP_ACT_ALLOW, "kill", 1, &c);
	if (!sb->profiler) {
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
	/* The supervisor must exist before the filter so that it is not
	 * under it; it waits for the notification descriptor. */
	if (learn_mode) {
		learn.rules = calloc(GPU_LL_RULES_MAX, sizeof(*learn.rules));
		learn.n_rules = learn.rules ? gpu_sandbox_rules(sb, learn.rules, GPU_LL_RULES_MAX) : 0;
		for (int i = 0; i < learn.n_rules; i++) {
			char *rp = realpath(learn.rules[i].path, NULL); /* as Landlock sees them */
			if (rp)
				snprintf(learn.rules[i].path, sizeof(learn.rules[i].path), "%s", rp);
			free(rp);
		}
	}
	if (learn_mode && pthread_create(&learn.thread, NULL, learn_main, NULL) != 0) {
		snprintf(why, len, "learn mode: cannot start the supervisor thread");
		seccomp_release(ctx);
		return -1;
	}
	rc = seccomp_load(ctx);
	if (learn_mode) {
		pthread_mutex_lock(&learn.mu);
		/* our own copy: the context's goes with seccomp_release */
		learn.fd = rc ? -2 : dup(seccomp_notify_fd(ctx));
		if (learn.fd == -1)
			learn.fd = -2;
		pthread_cond_signal(&learn.cv);
		pthread_mutex_unlock(&learn.mu);
		pthread_detach(learn.thread);
	}
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
	if (sb->landlock_wanted && learning(sb)) {
		/* Learn mode lists what the profiler needs in one run: an open
		 * that Landlock would refuse is named and let through, since a
		 * refused one can end the run (a crash in the injection) before
		 * the rest is seen. */
		snprintf(sb->landlock, sizeof(sb->landlock), "report-only (PRAGMA_CUDA_PROFILER_LEARN)");
	} else if (sb->landlock_wanted) {
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
