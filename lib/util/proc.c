/*
 * Child processes with deadlines. The shape follows git's run-command.c:
 * everything the child needs is prepared before fork(), the child only makes
 * async-signal-safe calls, and an exec failure travels back over a
 * close-on-exec pipe as an errno.
 */
#include <errno.h>
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <stdatomic.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pragma/log.h"
#include "pragma/proc.h"

extern char **environ;

#define DEFAULT_CAP ((size_t)4 << 20)
#define MAX_TRACKED 256
#define SIGNAL_GRACE_MS 500

/* ---- the registry of live children (see pragma/proc.h) ---------------- */

/* > 0: the leader of a process group to kill; < 0: -pid of a single
 * process; 0: free. Lock-free, so the signal handler can read it. */
static _Atomic int tracked[MAX_TRACKED];
/* The signals the CLI's handler catches; blocked around fork() so a child
 * is always registered before the handler could look for it. */
static const int fatal_signals[] = { SIGINT, SIGTERM, SIGHUP };

int pragma_proc_track(pid_t pid, int group)
{
	int v = group ? (int)pid : -(int)pid;

	if (pid <= 0)
		return -1;
	for (int i = 0; i < MAX_TRACKED; i++) {
		int expected = 0;
		if (atomic_compare_exchange_strong(&tracked[i], &expected, v))
			return 0;
	}
	pragma_warn("more than %d child processes at once: pid %d will not be stopped on Ctrl-C", MAX_TRACKED,
		    (int)pid);
	return -1;
}

void pragma_proc_untrack(pid_t pid)
{
	for (int i = 0; i < MAX_TRACKED; i++) {
		int expected = (int)pid;
		if (atomic_compare_exchange_strong(&tracked[i], &expected, 0))
			return;
		expected = -(int)pid;
		if (atomic_compare_exchange_strong(&tracked[i], &expected, 0))
			return;
	}
}

int pragma_proc_tracked(void)
{
	int n = 0;

	for (int i = 0; i < MAX_TRACKED; i++)
		n += atomic_load(&tracked[i]) != 0;
	return n;
}

void pragma_proc_block_signals(sigset_t *old)
{
	sigset_t set;

	sigemptyset(&set);
	for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++)
		sigaddset(&set, fatal_signals[i]);
	pthread_sigmask(SIG_BLOCK, &set, old);
}

static double mono_ms_signal_safe(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts); /* async-signal-safe (POSIX.1-2008) */
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* Only async-signal-safe calls from here to the end of the handler. */
static void signal_all(int sig)
{
	for (int i = 0; i < MAX_TRACKED; i++) {
		int v = atomic_load(&tracked[i]);
		if (v > 0)
			kill(-v, sig); /* the group */
		else if (v < 0)
			kill(-v, sig); /* the single process -v */
	}
}

static int all_gone(void)
{
	int gone = 1;

	for (int i = 0; i < MAX_TRACKED; i++) {
		int v = atomic_load(&tracked[i]);
		if (!v)
			continue;
		pid_t pid = v > 0 ? v : -v;
		/* Reap our own child (a zombie still counts as a group member);
		 * another thread waiting for it gets ECHILD, and we are exiting. */
		waitpid(pid, NULL, WNOHANG);
		if (v > 0 ? kill(-pid, 0) == 0 : kill(pid, 0) == 0)
			gone = 0;
	}
	return gone;
}

static void on_fatal_signal(int sig)
{
	int saved = errno;
	double until;
	struct sigaction dfl;
	sigset_t set;

	pragma_progress_clear_signal_safe();
	signal_all(SIGTERM);
	until = mono_ms_signal_safe() + SIGNAL_GRACE_MS;
	while (!all_gone() && mono_ms_signal_safe() < until) {
		struct timespec ts = { 0, 10 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	signal_all(SIGKILL);
	/* Die of the same signal, so a shell sees 128+N and stops a script. */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	sigaction(sig, &dfl, NULL);
	sigemptyset(&set);
	sigaddset(&set, sig);
	pthread_sigmask(SIG_UNBLOCK, &set, NULL);
	raise(sig);
	errno = saved;
	_exit(128 + sig);
}

int pragma_proc_install_signal_handlers(void)
{
	struct sigaction sa, old;

	memset(&sa, 0, sizeof(sa));
	sa.sa_handler = on_fatal_signal;
	sigemptyset(&sa.sa_mask);
	for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++)
		sigaddset(&sa.sa_mask, fatal_signals[i]);
	for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++) {
		/* Ignored at start (nohup, `cmd &` in a script): leave it ignored. */
		if (sigaction(fatal_signals[i], NULL, &old) == 0 && old.sa_handler == SIG_IGN)
			continue;
		if (sigaction(fatal_signals[i], &sa, NULL) < 0)
			return -1;
	}
	return 0;
}

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

int pragma_which(const char *prog, struct pragma_buf *out)
{
	const char *path = getenv("PATH");
	struct pragma_buf cand = PRAGMA_BUF_INIT;
	int found = 0;

	if (strchr(prog, '/')) {
		found = access(prog, X_OK) == 0;
		if (found && out) {
			pragma_buf_reset(out);
			pragma_buf_adds(out, prog);
		}
		return found;
	}
	if (!path)
		path = "/usr/local/bin:/usr/bin:/bin";
	while (*path && !found) {
		const char *colon = strchr(path, ':');
		size_t n = colon ? (size_t)(colon - path) : strlen(path);
		struct stat st;

		pragma_buf_reset(&cand);
		pragma_buf_add(&cand, n ? path : ".", n ? n : 1);
		pragma_buf_addch(&cand, '/');
		pragma_buf_adds(&cand, prog);
		if (stat(cand.data, &st) == 0 && S_ISREG(st.st_mode) && access(cand.data, X_OK) == 0) {
			found = 1;
			if (out) {
				pragma_buf_reset(out);
				pragma_buf_add(out, cand.data, cand.len);
			}
		}
		path += n + (colon ? 1 : 0);
	}
	pragma_buf_release(&cand);
	return found;
}

/* environ with c->env applied; strings borrowed, array malloc'ed. */
static char **build_env(const char *const *add)
{
	size_t n = 0, m = 0, k = 0;
	char **env;

	while (environ[n])
		n++;
	while (add && add[m])
		m++;
	env = calloc(n + m + 1, sizeof(*env));
	if (!env)
		return NULL;
	for (size_t i = 0; i < n; i++) {
		const char *eq = strchr(environ[i], '=');
		size_t klen = eq ? (size_t)(eq - environ[i]) : strlen(environ[i]);
		int overridden = 0;

		for (size_t j = 0; j < m; j++) {
			const char *aeq = strchr(add[j], '=');
			size_t alen = aeq ? (size_t)(aeq - add[j]) : strlen(add[j]);
			if (alen == klen && !strncmp(add[j], environ[i], klen))
				overridden = 1;
		}
		if (!overridden)
			env[k++] = environ[i];
	}
	for (size_t j = 0; j < m; j++)
		if (strchr(add[j], '='))
			env[k++] = (char *)add[j];
	env[k] = NULL;
	return env;
}

static void set_limit(int res, uint64_t v)
{
	struct rlimit rl = { .rlim_cur = v, .rlim_max = v };

	setrlimit(res, &rl);
}

static void apply_limits(const struct pragma_rlimits *l)
{
	if (!l)
		return;
	if (l->cpu_seconds)
		set_limit(RLIMIT_CPU, l->cpu_seconds);
	if (l->address_space)
		set_limit(RLIMIT_AS, l->address_space);
	if (l->file_size)
		set_limit(RLIMIT_FSIZE, l->file_size);
	if (l->open_files)
		set_limit(RLIMIT_NOFILE, l->open_files);
	if (l->processes)
		set_limit(RLIMIT_NPROC, l->processes);
	if (l->no_core)
		set_limit(RLIMIT_CORE, 0);
}

/* Child side after fork: only async-signal-safe calls. */
static void child_exec(struct pragma_child *c, const char *prog, char **env, int in_fd,
		       int out_fd, int err_fd, int errpipe)
{
	int e;
	sigset_t none;
	struct sigaction dfl, old;

	setpgid(0, 0);
	/* pragma's handlers are not the child's: back to the defaults (an
	 * ignored signal stays ignored) before the signals are unblocked. */
	memset(&dfl, 0, sizeof(dfl));
	dfl.sa_handler = SIG_DFL;
	sigemptyset(&dfl.sa_mask);
	for (size_t i = 0; i < sizeof(fatal_signals) / sizeof(fatal_signals[0]); i++)
		if (sigaction(fatal_signals[i], NULL, &old) == 0 && old.sa_handler != SIG_IGN)
			sigaction(fatal_signals[i], &dfl, NULL);
	sigemptyset(&none);
	sigprocmask(SIG_SETMASK, &none, NULL);
	signal(SIGPIPE, SIG_DFL);
	if (in_fd >= 0 && in_fd != 0) {
		dup2(in_fd, 0);
		close(in_fd);
	}
	if (out_fd >= 0 && out_fd != 1) {
		dup2(out_fd, 1);
		close(out_fd);
	}
	if (err_fd >= 0 && err_fd != 2) {
		dup2(err_fd, 2);
		close(err_fd);
	}
	for (int i = 0; i < c->n_keep_fds; i++) {
		int flags = fcntl(c->keep_fds[i], F_GETFD);
		if (flags >= 0)
			fcntl(c->keep_fds[i], F_SETFD, flags & ~FD_CLOEXEC);
	}
	if (c->cwd && chdir(c->cwd) < 0)
		goto fail;
	apply_limits(c->limits);
	execve(prog, (char *const *)c->argv, env);
fail:
	e = errno;
	/* On a failed write the parent sees EOF and exit code 127. */
	(void)!write(errpipe, &e, sizeof(e));
	_exit(127);
}

static int open_devnull(int flags)
{
	return open("/dev/null", flags | O_CLOEXEC);
}

/* Shared by run and start: fork+exec with the given parent-side fds. */
static int spawn(struct pragma_child *c, int in_fd, int out_fd, int err_fd, struct pragma_err *err)
{
	struct pragma_buf prog = PRAGMA_BUF_INIT;
	int errpipe[2] = { -1, -1 };
	char **env = NULL;
	int child_errno = 0;
	ssize_t n;
	int ret = -1;

	if (!c->argv || !c->argv[0])
		return pragma_err_set(err, PRAGMA_E_INTERNAL, "no program to run");
	if (!pragma_which(c->argv[0], &prog)) {
		pragma_err_set(err, PRAGMA_E_ENV, "%s: program not found", c->argv[0]);
		pragma_err_hint(err, "install it, or check PATH");
		goto out;
	}
	env = build_env(c->env);
	if (!env || pipe2(errpipe, O_CLOEXEC) < 0) {
		pragma_err_set(err, PRAGMA_E_INTERNAL, "cannot prepare %s: %s", c->argv[0], strerror(errno));
		goto out;
	}
	if (pragma_log_get_level() >= PRAGMA_LOG_DEBUG) {
		struct pragma_buf line = PRAGMA_BUF_INIT;
		for (int i = 0; c->argv[i] && i < 24; i++)
			pragma_buf_addf(&line, "%s%.200s", i ? " " : "", c->argv[i]);
		if (c->timeout_ms > 0)
			pragma_debug("running %s (deadline %.1f s)", line.data, c->timeout_ms / 1000.0);
		else
			pragma_debug("running %s", line.data);
		pragma_buf_release(&line);
	}
	sigset_t oldmask;
	pragma_proc_block_signals(&oldmask);
	c->pid = fork();
	if (c->pid < 0) {
		pthread_sigmask(SIG_SETMASK, &oldmask, NULL);
		pragma_err_set(err, PRAGMA_E_ENV, "fork failed for %s: %s", c->argv[0], strerror(errno));
		goto out;
	}
	if (c->pid == 0) {
		close(errpipe[0]);
		child_exec(c, prog.data, env, in_fd, out_fd, err_fd, errpipe[1]);
	}
	/* Also from the parent, so the group exists before we might kill it. */
	setpgid(c->pid, c->pid);
	pragma_proc_track(c->pid, 1);
	pthread_sigmask(SIG_SETMASK, &oldmask, NULL);
	close(errpipe[1]);
	errpipe[1] = -1;
	do
		n = read(errpipe[0], &child_errno, sizeof(child_errno));
	while (n < 0 && errno == EINTR);
	if (n == sizeof(child_errno)) {
		int st;
		waitpid(c->pid, &st, 0);
		pragma_proc_untrack(c->pid);
		c->pid = 0;
		pragma_err_set(err, child_errno == ENOENT || child_errno == EACCES ? PRAGMA_E_ENV : PRAGMA_E_INTERNAL,
			       "cannot run %s: %s", prog.data, strerror(child_errno));
		goto out;
	}
	ret = 0;
out:
	if (errpipe[0] >= 0)
		close(errpipe[0]);
	if (errpipe[1] >= 0)
		close(errpipe[1]);
	free(env);
	pragma_buf_release(&prog);
	return ret;
}

static void reap(struct pragma_child *c, int status, const struct rusage *ru)
{
	c->usage = *ru;
	if (WIFEXITED(status)) {
		c->exited = 1;
		c->exit_code = WEXITSTATUS(status);
	} else if (WIFSIGNALED(status)) {
		c->signaled = 1;
		c->term_sig = WTERMSIG(status);
	}
}

/* Wait for pid with a deadline in absolute ms (0 = none); kills the group on it. */
static void wait_deadline(struct pragma_child *c, double deadline)
{
	struct rusage ru;
	int status;

	for (;;) {
		pid_t r = wait4(c->pid, &status, deadline > 0 ? WNOHANG : 0, &ru);
		if (r == c->pid) {
			reap(c, status, &ru);
			break;
		}
		if (r < 0 && errno != EINTR)
			break;
		if (deadline > 0 && now_ms() >= deadline) {
			c->timed_out = 1;
			pragma_child_kill(c);
			return;
		}
		if (r == 0) {
			struct timespec ts = { 0, 2 * 1000 * 1000 };
			nanosleep(&ts, NULL);
		}
	}
	/* Leftovers of the group (a daemonized grandchild) go too. */
	killpg(c->pid, SIGKILL);
	pragma_proc_untrack(c->pid);
	c->pid = 0;
}

void pragma_child_kill(struct pragma_child *c)
{
	struct rusage ru;
	int status, grace;
	double until;

	if (c->pid <= 0)
		return;
	grace = c->grace_ms > 0 ? c->grace_ms : 500;
	killpg(c->pid, SIGTERM);
	until = now_ms() + grace;
	for (;;) {
		pid_t r = wait4(c->pid, &status, WNOHANG, &ru);
		if (r == c->pid) {
			reap(c, status, &ru);
			break;
		}
		if (r < 0 && errno != EINTR)
			break;
		if (now_ms() >= until) {
			killpg(c->pid, SIGKILL);
			while ((r = wait4(c->pid, &status, 0, &ru)) < 0 && errno == EINTR)
				;
			if (r == c->pid)
				reap(c, status, &ru);
			break;
		}
		struct timespec ts = { 0, 2 * 1000 * 1000 };
		nanosleep(&ts, NULL);
	}
	killpg(c->pid, SIGKILL);
	pragma_proc_untrack(c->pid);
	c->pid = 0;
}

static int drain(int fd, struct pragma_buf *b, size_t cap, int *truncated)
{
	char chunk[65536];
	ssize_t n = read(fd, chunk, sizeof(chunk));

	if (n < 0)
		return errno == EINTR || errno == EAGAIN ? 1 : 0;
	if (n == 0)
		return 0;
	if (b->len < cap) {
		size_t take = (size_t)n;
		if (take > cap - b->len) {
			take = cap - b->len;
			*truncated = 1;
		}
		pragma_buf_add(b, chunk, take);
	} else {
		*truncated = 1;
	}
	return 1;
}

int pragma_child_run(struct pragma_child *c, struct pragma_err *err)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 }, er[2] = { -1, -1 };
	int in_fd, out_fd, err_fd;
	size_t written = 0;
	double start, deadline;
	int ret = -1;

	c->exited = c->signaled = c->timed_out = 0;
	c->out_truncated = c->err_truncated = 0;
	pragma_buf_reset(&c->out);
	pragma_buf_reset(&c->err);

	if (c->stdin_data) {
		if (pipe2(in, O_CLOEXEC) < 0)
			goto pipe_fail;
		in_fd = in[0];
	} else {
		in_fd = in[0] = open_devnull(O_RDONLY);
	}
	if (c->discard_out) {
		out_fd = out[1] = open_devnull(O_WRONLY);
	} else {
		if (pipe2(out, O_CLOEXEC) < 0)
			goto pipe_fail;
		out_fd = out[1];
	}
	if (c->inherit_err) {
		err_fd = -1;
	} else {
		if (pipe2(er, O_CLOEXEC) < 0)
			goto pipe_fail;
		err_fd = er[1];
	}

	start = now_ms();
	if (spawn(c, in_fd, out_fd, err_fd, err) < 0)
		goto out;
	close(in[0]);
	in[0] = -1;
	close(out[1]);
	out[1] = -1;
	if (er[1] >= 0) {
		close(er[1]);
		er[1] = -1;
	}
	if (in[1] >= 0)
		fcntl(in[1], F_SETFL, O_NONBLOCK);
	if (c->stdin_data && c->stdin_len == 0) {
		close(in[1]);
		in[1] = -1;
	}

	deadline = c->timeout_ms > 0 ? start + c->timeout_ms : 0;
	double next_tick = c->tick && c->tick_ms > 0 ? start + c->tick_ms : 0;
	for (;;) {
		struct pollfd p[3];
		int np = 0, io = -1, oo = -1, eo = -1, wait_ms = -1;

		if (next_tick > 0 && now_ms() >= next_tick) {
			c->tick(c, now_ms() - start, c->tick_ctx);
			next_tick = now_ms() + c->tick_ms;
		}

		if (in[1] >= 0) {
			p[np] = (struct pollfd){ .fd = in[1], .events = POLLOUT };
			io = np++;
		}
		if (out[0] >= 0) {
			p[np] = (struct pollfd){ .fd = out[0], .events = POLLIN };
			oo = np++;
		}
		if (er[0] >= 0) {
			p[np] = (struct pollfd){ .fd = er[0], .events = POLLIN };
			eo = np++;
		}
		if (!np)
			break;
		if (deadline > 0) {
			double left = deadline - now_ms();
			if (left <= 0) {
				c->timed_out = 1;
				break;
			}
			wait_ms = (int)left + 1;
		}
		if (next_tick > 0) {
			int to_tick = (int)(next_tick - now_ms()) + 1;
			if (to_tick < 1)
				to_tick = 1;
			if (wait_ms < 0 || to_tick < wait_ms)
				wait_ms = to_tick;
		}
		int r = poll(p, (nfds_t)np, wait_ms);
		if (r < 0 && errno == EINTR)
			continue;
		if (r < 0)
			break;
		if (io >= 0 && p[io].revents) {
			ssize_t n = (p[io].revents & POLLOUT) ? write(in[1], (const char *)c->stdin_data + written,
								    c->stdin_len - written) : -1;
			if (n > 0)
				written += (size_t)n;
			if (n < 0 && errno != EAGAIN && errno != EINTR)
				written = c->stdin_len; /* child closed stdin: stop feeding */
			if (written >= c->stdin_len) {
				close(in[1]);
				in[1] = -1;
			}
		}
		if (oo >= 0 && p[oo].revents && !drain(out[0], &c->out, c->out_cap ? c->out_cap : DEFAULT_CAP, &c->out_truncated)) {
			close(out[0]);
			out[0] = -1;
		}
		if (eo >= 0 && p[eo].revents && !drain(er[0], &c->err, c->err_cap ? c->err_cap : DEFAULT_CAP, &c->err_truncated)) {
			close(er[0]);
			er[0] = -1;
		}
	}
	if (c->timed_out)
		pragma_child_kill(c);
	else
		wait_deadline(c, deadline);
	c->wall_ms = now_ms() - start;
	ret = 0;
	goto out;
pipe_fail:
	pragma_err_set(err, PRAGMA_E_INTERNAL, "pipe: %s", strerror(errno));
out:
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
		if (er[i] >= 0)
			close(er[i]);
	}
	return ret;
}

int pragma_child_start(struct pragma_child *c, int *to_child, int *from_child, struct pragma_err *err)
{
	int in[2] = { -1, -1 }, out[2] = { -1, -1 };
	int errfd = -1;
	int ret = -1;

	c->exited = c->signaled = c->timed_out = 0;
	if (to_child) {
		if (pipe2(in, O_CLOEXEC) < 0)
			goto pipe_fail;
	} else {
		in[0] = open_devnull(O_RDONLY);
	}
	if (from_child) {
		if (pipe2(out, O_CLOEXEC) < 0)
			goto pipe_fail;
	} else {
		out[1] = open_devnull(O_WRONLY);
	}
	if (!c->inherit_err)
		errfd = open_devnull(O_WRONLY);
	if (spawn(c, in[0], out[1], errfd, err) < 0)
		goto out;
	if (to_child) {
		*to_child = in[1];
		in[1] = -1;
	}
	if (from_child) {
		*from_child = out[0];
		out[0] = -1;
	}
	ret = 0;
	goto out;
pipe_fail:
	pragma_err_set(err, PRAGMA_E_INTERNAL, "pipe: %s", strerror(errno));
out:
	for (int i = 0; i < 2; i++) {
		if (in[i] >= 0)
			close(in[i]);
		if (out[i] >= 0)
			close(out[i]);
	}
	if (errfd >= 0)
		close(errfd);
	return ret;
}

int pragma_child_wait(struct pragma_child *c, int timeout_ms)
{
	if (c->pid <= 0)
		return 0;
	wait_deadline(c, timeout_ms > 0 ? now_ms() + timeout_ms : 0);
	return c->timed_out ? -1 : 0;
}

void pragma_child_release(struct pragma_child *c)
{
	if (c->pid > 0)
		pragma_child_kill(c);
	pragma_buf_release(&c->out);
	pragma_buf_release(&c->err);
}

const char *pragma_child_status_str(const struct pragma_child *c, char *buf, size_t len)
{
	if (c->timed_out)
		snprintf(buf, len, "timed out after %.0f ms", c->wall_ms);
	else if (c->signaled)
		snprintf(buf, len, "killed by SIG%s", sigabbrev_np(c->term_sig) ? sigabbrev_np(c->term_sig) : "?");
	else if (c->exited)
		snprintf(buf, len, "exited %d", c->exit_code);
	else
		snprintf(buf, len, "did not finish");
	return buf;
}
