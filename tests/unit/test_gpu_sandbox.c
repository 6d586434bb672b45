/* The CUDA harness's sandbox policy (runtime/cuda/sandbox_gpu.c), which
 * needs no GPU: profiler mode (the harness as Nsight Compute's target)
 * allows what ncu's injection does on the launching thread — the chmod of
 * its lock file that issue 12 saw trap, files in /tmp, sockets — and the
 * normal mode still refuses it; ncu's directories are granted where they
 * really are (symlinks resolved, also from the injection's environment
 * variables); learn mode names calls outside the list instead of trapping.
 * Each enforcement test runs the real filters in a forked child. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <errno.h>
#include <fcntl.h>
#include <signal.h>
#include <sys/file.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <sys/syscall.h>
#include <sys/wait.h>
#include <unistd.h>
#include <linux/landlock.h>
#include <cmocka.h>

#include "pragma_test.h"

#include "gpu_sandbox.h"
#include "pragma/fs.h"

static char dir[256];

static int setup(void **state)
{
	char tmpl[] = "/tmp/pragma-gpusb-XXXXXX";

	(void)state;
	if (!mkdtemp(tmpl))
		return -1;
	snprintf(dir, sizeof(dir), "%s", tmpl);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pragma_rm_rf(dir, NULL);
	return 0;
}

static int listed(const char *const *l, const char *name)
{
	for (; *l; l++)
		if (!strcmp(*l, name))
			return 1;
	return 0;
}

static void test_syscall_lists(void **state)
{
	static const char *const injection[] = { "chmod", "fchmod", "fchmodat", "umask", "flock", "unlink", "mkdir",
						 "rename", "socket", "connect", "bind", "accept4", "sendmsg",
						 "recvmsg", "memfd_create", "shmget", "epoll_create1", "pipe2",
						 "timerfd_create", "prctl", "capget", NULL };
	static const char *const never[] = { "execve", "execveat", "fork", "vfork", "ptrace", "process_vm_readv",
					     "process_vm_writev", "mount", "setuid", "init_module", "kexec_load",
					     "bpf", "perf_event_open", "chroot", "pivot_root", NULL };
	const char *const *base = gpu_sandbox_base_syscalls(), *const *prof = gpu_sandbox_profiler_syscalls();

	(void)state;
	for (int i = 0; injection[i]; i++) {
		if (!listed(prof, injection[i]) && !listed(base, injection[i]))
			fail_msg("profiler mode does not allow %s", injection[i]);
		/* and only profiler mode does (a kernel never needs them) */
		if (listed(base, injection[i]))
			fail_msg("%s is allowed outside profiler mode", injection[i]);
	}
	for (int i = 0; never[i]; i++)
		if (listed(base, never[i]) || listed(prof, never[i]))
			fail_msg("%s is allowed", never[i]);
}

static int has_rule(const struct gpu_ll_rule *r, int n, const char *path, uint64_t access)
{
	for (int i = 0; i < n; i++)
		if (!strcmp(r[i].path, path) && (r[i].access & access) == access)
			return 1;
	return 0;
}

static void mkfile(const char *path)
{
	int fd = open(path, O_CREAT | O_WRONLY | O_CLOEXEC, 0644);

	assert_true(fd >= 0);
	close(fd);
}

/* ncu found as a symlink (as /usr/local/cuda/bin/ncu is): the rules name
 * the real directory; the injection's own paths (symlinked too) are
 * resolved and granted; $TMPDIR is writable. None of it outside profiler
 * mode. */
static void test_rules_resolve(void **state)
{
	struct gpu_sandbox sb = { 0 };
	struct gpu_ll_rule *r = calloc(GPU_LL_RULES_MAX, sizeof(*r));
	char real_tool[600], link_tool[600], inj_real[600], inj_link[600], pre_real[600], pre[1400], tmpd[600];
	char *resolved_dir;
	int n;

	(void)state;
	snprintf(real_tool, sizeof(real_tool), "%s/nsight-compute-2025.3.1", dir);
	snprintf(link_tool, sizeof(link_tool), "%s/bin-ncu-dir", dir);
	snprintf(inj_real, sizeof(inj_real), "%s/target-real", dir);
	snprintf(inj_link, sizeof(inj_link), "%s/target-link", dir);
	snprintf(pre_real, sizeof(pre_real), "%s/preload-real", dir);
	snprintf(tmpd, sizeof(tmpd), "%s/tmpdir", dir);
	assert_int_equal(mkdir(real_tool, 0755), 0);
	assert_int_equal(symlink(real_tool, link_tool), 0);
	assert_int_equal(mkdir(inj_real, 0755), 0);
	assert_int_equal(symlink(inj_real, inj_link), 0);
	assert_int_equal(mkdir(pre_real, 0755), 0);
	assert_int_equal(mkdir(tmpd, 0755), 0);
	{
		char p[700];
		snprintf(p, sizeof(p), "%s/libcuda-injection.so", inj_real);
		mkfile(p);
		snprintf(p, sizeof(p), "%s/libTreeLauncherPlaceholder.so", pre_real);
		mkfile(p);
		snprintf(p, sizeof(p), "%s/libTreeLauncherTargetInjection.so", inj_real);
		mkfile(p);
		snprintf(p, sizeof(p), "%s/libcuda-injection.so", inj_link);
		setenv("CUDA_INJECTION64_PATH", p, 1);
	}
	snprintf(pre, sizeof(pre), "%s/libTreeLauncherPlaceholder.so:%s/libTreeLauncherTargetInjection.so", pre_real,
		 inj_link);
	setenv("LD_PRELOAD", pre, 1);
	setenv("TMPDIR", tmpd, 1);
	sb.enabled = 1;
	sb.tool_dir = link_tool;
	sb.kernel_so = "/nonexistent/kernel.so";

	n = gpu_sandbox_rules(&sb, r, GPU_LL_RULES_MAX);
	assert_false(has_rule(r, n, real_tool, LANDLOCK_ACCESS_FS_READ_FILE));
	assert_false(has_rule(r, n, "/tmp", LANDLOCK_ACCESS_FS_WRITE_FILE));
	assert_false(has_rule(r, n, inj_real, LANDLOCK_ACCESS_FS_READ_FILE));

	sb.profiler = 1;
	n = gpu_sandbox_rules(&sb, r, GPU_LL_RULES_MAX);
	resolved_dir = realpath(real_tool, NULL);
	assert_non_null(resolved_dir);
	if (!has_rule(r, n, resolved_dir, LANDLOCK_ACCESS_FS_READ_FILE | LANDLOCK_ACCESS_FS_EXECUTE))
		fail_msg("ncu's directory %s (via the symlink %s) is not granted", resolved_dir, link_tool);
	free(resolved_dir);
	resolved_dir = realpath(inj_real, NULL);
	assert_true(has_rule(r, n, resolved_dir, LANDLOCK_ACCESS_FS_READ_FILE));
	free(resolved_dir);
	resolved_dir = realpath(pre_real, NULL);
	assert_true(has_rule(r, n, resolved_dir, LANDLOCK_ACCESS_FS_READ_FILE));
	free(resolved_dir);
	resolved_dir = realpath(tmpd, NULL);
	assert_true(has_rule(r, n, resolved_dir, LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_MAKE_REG));
	free(resolved_dir);
	assert_true(has_rule(r, n, "/tmp", LANDLOCK_ACCESS_FS_WRITE_FILE | LANDLOCK_ACCESS_FS_REMOVE_FILE));
	assert_true(has_rule(r, n, "/dev/shm", LANDLOCK_ACCESS_FS_MAKE_REG));
	/* never the home directory or /etc at large */
	assert_false(has_rule(r, n, "/etc", LANDLOCK_ACCESS_FS_READ_FILE));
	unsetenv("CUDA_INJECTION64_PATH");
	unsetenv("LD_PRELOAD");
	unsetenv("TMPDIR");
	free(r);
}

/* Run body() in a child inside the sandbox; its stderr into err. Returns
 * the wait status. */
static int in_sandbox(int profiler, int learn, int (*body)(void), char *err, size_t errlen)
{
	int pipefd[2], status = 0;
	pid_t pid;

	assert_int_equal(pipe(pipefd), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		struct gpu_sandbox sb = { 0 };
		char why[512];
		dup2(pipefd[1], 2);
		close(pipefd[0]);
		/* cmocka catches SIGSYS in the parent: a trap must kill us */
		signal(SIGSYS, SIG_DFL);
		if (learn)
			setenv("PRAGMA_CUDA_PROFILER_LEARN", "1", 1);
		sb.enabled = sb.landlock_wanted = sb.seccomp_wanted = 1;
		sb.profiler = profiler;
		sb.pid = (int)getpid();
		if (gpu_sandbox_enter(&sb, why, sizeof(why)) < 0) {
			fprintf(stderr, "enter: %s\n", why);
			_exit(90);
		}
		_exit(body());
	}
	close(pipefd[1]);
	{
		size_t k = 0;
		ssize_t got;
		while (k + 1 < errlen && (got = read(pipefd[0], err + k, errlen - 1 - k)) > 0)
			k += (size_t)got;
		err[k] = '\0';
	}
	close(pipefd[0]);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	return status;
}

static char lockfile[600];

/* What ncu's injection does at "prepare kernel for profiling". */
static int injection_like(void)
{
	int fd = open(lockfile, O_CREAT | O_RDWR | O_CLOEXEC, 0600);
	int s;

	if (fd < 0)
		return 10;
	if (chmod(lockfile, 0666) != 0) /* syscall 90 */
		return 11;
	if (flock(fd, LOCK_EX) != 0 || flock(fd, LOCK_UN) != 0)
		return 12;
	s = socket(AF_UNIX, SOCK_STREAM | SOCK_CLOEXEC, 0);
	if (s < 0)
		return 13;
	close(s);
	close(fd);
	if (unlink(lockfile) != 0)
		return 14;
	return 0;
}

static int starts_process(void)
{
	/* a raw fork: processes stay forbidden under the profiler too */
	long r = syscall(SYS_fork);
	if (r == 0)
		_exit(0);
	return 20;
}

static int chmod_only(void)
{
	return chmod(lockfile, 0666) == 0 ? 0 : 30;
}

static int unknown_call(void)
{
	/* personality(0xffffffff) only queries; not on any list */
	return syscall(SYS_personality, 0xffffffffUL) == -1 ? 40 : 0;
}

static int open_outside(void)
{
	/* learn mode names it and lets it through (Landlock reports only),
	 * so that one run sees everything the profiler needs */
	int fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 41;
	close(fd);
	return syscall(SYS_personality, 0xffffffffUL) == -1 ? 40 : 0;
}

/* Profiler mode: the files the C library reads to reach ncu's front end
 * (getaddrinfo("localhost")) are granted; other files of /etc are not. */
static int name_service_only(void)
{
	int fd = open("/etc/hosts", O_RDONLY | O_CLOEXEC);
	if (fd < 0)
		return 42;
	close(fd);
	fd = open("/etc/hostname", O_RDONLY | O_CLOEXEC);
	if (fd >= 0)
		return 43;
	return errno == EACCES ? 0 : 44;
}

static int need_landlock(void)
{
	char why[160];

	return gpu_landlock_abi(why, sizeof(why)) > 0;
}

static void test_profiler_allows_injection(void **state)
{
	char err[2048];
	int st;

	(void)state;
	if (!need_landlock())
		skip_because("no Landlock: the harness's sandbox cannot be entered here");
	snprintf(lockfile, sizeof(lockfile), "%s/nsight-compute-lock", dir);
	st = in_sandbox(1, 0, injection_like, err, sizeof(err));
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("the injection's calls failed under the profiler sandbox: status %#x %s", st, err);
	/* still no processes */
	st = in_sandbox(1, 0, starts_process, err, sizeof(err));
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGSYS);
}

/* Outside profiler mode the same chmod traps (the "system call 90"
 * is right for a kernel; it was wrong for ncu). */
static void test_normal_mode_refuses(void **state)
{
	char err[2048];
	int st;

	(void)state;
	if (!need_landlock())
		skip_because("no Landlock: the harness's sandbox cannot be entered here");
	snprintf(lockfile, sizeof(lockfile), "%s/chmod-me", dir);
	mkfile(lockfile);
	st = in_sandbox(0, 0, chmod_only, err, sizeof(err));
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGSYS);
}

static void test_learn_mode(void **state)
{
	char err[2048];
	int st;

	(void)state;
	if (!need_landlock())
		skip_because("no Landlock: the harness's sandbox cannot be entered here");
	st = in_sandbox(1, 1, unknown_call, err, sizeof(err));
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("learn mode did not let the call through: status %#x %s", st, err);
	if (!strstr(err, "profiler mode lacks syscall") || !strstr(err, "(personality)"))
		fail_msg("learn mode did not name the call: %s", err);
	st = in_sandbox(1, 1, open_outside, err, sizeof(err));
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("learn mode: status %#x %s", st, err);
	if (!strstr(err, "denies open of /etc/hostname"))
		fail_msg("learn mode did not name the refused open: %s", err);
	/* without learn mode Landlock refuses it */
	st = in_sandbox(1, 0, name_service_only, err, sizeof(err));
	if (!WIFEXITED(st) || WEXITSTATUS(st) != 0)
		fail_msg("profiler mode's grants: status %#x %s", st, err);
	/* without learn mode the same call traps */
	st = in_sandbox(1, 0, unknown_call, err, sizeof(err));
	assert_true(WIFSIGNALED(st));
	assert_int_equal(WTERMSIG(st), SIGSYS);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_syscall_lists),
		cmocka_unit_test(test_rules_resolve),
		cmocka_unit_test(test_profiler_allows_injection),
		cmocka_unit_test(test_normal_mode_refuses),
		cmocka_unit_test(test_learn_mode),
	};

	return pragma_run_tests(tests, setup, teardown);
}
