/*
 * The local executor: each element is a `pragma optimize` child process on
 * this machine (a crash in one task costs that task, not the suite), up to
 * --jobs at once, writing into the suite's store directly (one machine:
 * WAL lets them all write it). The children share one machine-wide
 * measurement lock, so their model calls and builds overlap but no two
 * measurements do.
 */
#include <errno.h>
#include <fcntl.h>
#include <limits.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/prctl.h>
#include <sys/wait.h>
#include <time.h>
#include <unistd.h>

#include "pragma/fs.h"
#include "pragma/log.h"
#include "pragma/proc.h"
#include "suite/suite_int.h"

struct slot {
	pid_t pid;
	struct pragma_suite_elem *el;
};

struct local {
	char *self, *db, *run_dir;
	json_t *suite;
	int jobs;
	struct pragma_suite_elem **queue;
	int n_queue, next;
	struct slot *slots;
};

static double now_wall(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

/* fork + exec with stdout to OUT, stderr appended to LOG; exec failure comes
 * back over a close-on-exec pipe. The child stays in pragma's process group
 * and is registered as a single process (pragma/proc.h), so a signal that
 * ends bench (SIGHUP; SIGINT and SIGTERM when bench is not catching them
 * itself) stops it too: a pragma optimize then stops its own children.
 * A bench killed outright (SIGKILL, no handler) reaches it through the
 * kernel: PR_SET_PDEATHSIG sends it SIGTERM, so no orphan runs on holding
 * the measurement lock. */
static pid_t spawn(char **argv, const char *log, const char *out, struct pragma_err *err)
{
	int pfd[2], e = 0;
	sigset_t old;

	if (pipe2(pfd, O_CLOEXEC) < 0)
		return pragma_err_set(err, PRAGMA_E_ENV, "pipe: %s", strerror(errno));
	fflush(stdout);
	fflush(stderr);
	pragma_proc_block_signals(&old);
	pid_t parent = getpid();
	pid_t pid = fork();
	if (pid < 0) {
		pthread_sigmask(SIG_SETMASK, &old, NULL);
		close(pfd[0]);
		close(pfd[1]);
		return pragma_err_set(err, PRAGMA_E_ENV, "fork: %s", strerror(errno));
	}
	if (pid == 0) {
		int lo = open(log, O_WRONLY | O_CREAT | O_APPEND | O_CLOEXEC, 0644);
		int oo = open(out, O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
		int ni = open("/dev/null", O_RDONLY | O_CLOEXEC);
		if (lo < 0 || oo < 0 || ni < 0 || dup2(ni, 0) < 0 || dup2(oo, 1) < 0 || dup2(lo, 2) < 0) {
			e = errno;
			(void)!write(pfd[1], &e, sizeof(e));
			_exit(127);
		}
		signal(SIGINT, SIG_DFL);
		signal(SIGTERM, SIG_DFL);
		/* bench may have died before the prctl: then we are an orphan */
		if (prctl(PR_SET_PDEATHSIG, SIGTERM) < 0 || getppid() != parent)
			_exit(127);
		sigprocmask(SIG_SETMASK, &old, NULL);
		execv(argv[0], argv);
		e = errno;
		(void)!write(pfd[1], &e, sizeof(e));
		_exit(127);
	}
	pragma_proc_track(pid, 0);
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	close(pfd[1]);
	ssize_t n;
	while ((n = read(pfd[0], &e, sizeof(e))) < 0 && errno == EINTR)
		;
	close(pfd[0]);
	if (n == (ssize_t)sizeof(e)) {
		while (waitpid(pid, NULL, 0) < 0 && errno == EINTR)
			;
		pragma_proc_untrack(pid);
		return pragma_err_set(err, PRAGMA_E_ENV, "cannot run %s: %s", argv[0], strerror(e));
	}
	return pid;
}

static int launch_more(struct local *L)
{
	int changed = 0;

	while (L->next < L->n_queue) {
		int k;
		for (k = 0; k < L->jobs && L->slots[k].pid; k++)
			;
		if (k == L->jobs)
			break;
		struct pragma_suite_elem *el = L->queue[L->next++];
		json_t *task = json_array_get(json_object_get(json_object_get(L->suite, "config"), "tasks"), (size_t)el->task);
		char out[PATH_MAX];
		struct pragma_err e = PRAGMA_ERR_INIT;
		snprintf(el->log, sizeof(el->log), "%s/%s-t%d.log", L->run_dir, el->name, el->traj + 1);
		snprintf(out, sizeof(out), "%s/%s-t%d.json", L->run_dir, el->name, el->traj + 1);
		char **argv = suite_optimize_argv(L->self, L->suite, task, el->traj, el->resume_run, L->db, NULL, 1);
		pid_t pid = spawn(argv, el->log, out, &e);
		pragma_suite_argv_free(argv);
		el->submissions++;
		changed++;
		if (pid < 0) {
			el->state = PRAGMA_SUITE_FAILED;
			snprintf(el->detail, sizeof(el->detail), "could not start: %.200s", e.msg);
			continue;
		}
		L->slots[k] = (struct slot){ pid, el };
		el->state = PRAGMA_SUITE_RUNNING;
		el->started = now_wall();
		snprintf(el->job, sizeof(el->job), "pid %d", (int)pid);
	}
	return changed;
}

static int local_start(struct pragma_suite_executor *x, struct pragma_suite_elem **els, int n, struct pragma_err *err)
{
	struct local *L = x->priv;

	(void)err;
	L->queue = realloc(L->queue, (size_t)(L->n_queue + n) * sizeof(*L->queue));
	if (!L->queue)
		return pragma_err_set(err, PRAGMA_E_INTERNAL, "out of memory");
	for (int i = 0; i < n; i++) {
		els[i]->state = PRAGMA_SUITE_QUEUED;
		L->queue[L->n_queue++] = els[i];
	}
	launch_more(L);
	return 0;
}

static int reap(struct local *L)
{
	int changed = 0;

	for (int k = 0; k < L->jobs; k++) {
		int status;
		if (!L->slots[k].pid)
			continue;
		pid_t r = waitpid(L->slots[k].pid, &status, WNOHANG);
		if (r <= 0)
			continue;
		pragma_proc_untrack(L->slots[k].pid);
		struct pragma_suite_elem *el = L->slots[k].el;
		L->slots[k].pid = 0;
		changed++;
		if (WIFEXITED(status) && WEXITSTATUS(status) == 0) {
			el->state = PRAGMA_SUITE_DONE;
		} else {
			el->state = PRAGMA_SUITE_FAILED;
			if (WIFEXITED(status))
				snprintf(el->detail, sizeof(el->detail), "exit %d", WEXITSTATUS(status));
			else
				snprintf(el->detail, sizeof(el->detail), "killed by signal %d (%s)", WTERMSIG(status),
					 strsignal(WTERMSIG(status)));
		}
	}
	return changed;
}

static int local_poll(struct pragma_suite_executor *x, int timeout_ms, struct pragma_err *err)
{
	struct local *L = x->priv;
	int waited = 0;

	(void)err;
	for (;;) {
		int changed = reap(L);
		if (changed) {
			launch_more(L);
			return changed;
		}
		if (waited >= timeout_ms)
			return 0;
		/* A signal (Ctrl-C, or SIGCHLD when the caller catches it) ends
		 * the nap early. */
		struct timespec ts = { 0, 50 * 1000000L };
		if (nanosleep(&ts, NULL) < 0 && errno == EINTR)
			return reap(L);
		waited += 50;
	}
}

static int local_cancel(struct pragma_suite_executor *x, struct pragma_err *err)
{
	struct local *L = x->priv;

	(void)err;
	L->next = L->n_queue; /* start nothing more */
	for (int k = 0; k < L->jobs; k++)
		if (L->slots[k].pid)
			kill(L->slots[k].pid, SIGTERM);
	for (int k = 0; k < L->jobs; k++) {
		if (!L->slots[k].pid)
			continue;
		while (waitpid(L->slots[k].pid, NULL, 0) < 0 && errno == EINTR)
			;
		pragma_proc_untrack(L->slots[k].pid);
		L->slots[k].el->state = PRAGMA_SUITE_FAILED;
		snprintf(L->slots[k].el->detail, sizeof(L->slots[k].el->detail), "interrupted");
		L->slots[k].pid = 0;
	}
	return 0;
}

static void local_free(struct pragma_suite_executor *x)
{
	struct local *L = x->priv;

	free(L->self);
	free(L->db);
	free(L->run_dir);
	json_decref(L->suite);
	free(L->queue);
	free(L->slots);
	free(L);
	free(x);
}

struct pragma_suite_executor *suite_local_new(const char *self, const char *db, json_t *suite, int jobs,
					      const char *run_dir, struct pragma_err *err)
{
	struct pragma_suite_executor *x = calloc(1, sizeof(*x));
	struct local *L = calloc(1, sizeof(*L));

	if (!x || !L || jobs < 1 || jobs > 64) {
		free(x);
		free(L);
		pragma_err_set(err, jobs < 1 || jobs > 64 ? PRAGMA_E_INPUT : PRAGMA_E_INTERNAL,
			       jobs < 1 || jobs > 64 ? "--jobs must be 1..64" : "out of memory");
		return NULL;
	}
	if (pragma_mkdir_p(run_dir, 0755, err) < 0) {
		free(x);
		free(L);
		return NULL;
	}
	L->self = strdup(self);
	L->db = strdup(db);
	L->run_dir = strdup(run_dir);
	L->suite = json_incref(suite);
	L->jobs = jobs;
	L->slots = calloc((size_t)jobs, sizeof(*L->slots));
	x->name = "local";
	x->priv = L;
	x->start = local_start;
	x->poll = local_poll;
	x->cancel = local_cancel;
	x->free = local_free;
	return x;
}
