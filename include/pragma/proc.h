/*
 * Child processes with a deadline (after git's run-command and perf's
 * prepare_workload): argv and environment are prepared before fork(), the
 * child gets its own process group, exec failure comes back over a
 * close-on-exec pipe, output is captured into capped buffers, and on the
 * deadline the whole group gets SIGTERM, then SIGKILL after a grace period.
 */
#ifndef PRAGMA_PROC_H
#define PRAGMA_PROC_H

#include <signal.h>
#include <stddef.h>
#include <stdint.h>
#include <sys/resource.h>
#include <sys/types.h>

#include "pragma/buf.h"
#include "pragma/err.h"

struct pragma_rlimits {
	uint64_t cpu_seconds;    /* RLIMIT_CPU, 0 = unchanged */
	uint64_t address_space;  /* RLIMIT_AS bytes, 0 = unchanged */
	uint64_t file_size;      /* RLIMIT_FSIZE bytes, 0 = unchanged */
	uint64_t open_files;     /* RLIMIT_NOFILE, 0 = unchanged */
	uint64_t processes;      /* RLIMIT_NPROC, 0 = unchanged */
	int no_core;             /* RLIMIT_CORE = 0 */
};

struct pragma_child {
	/* in */
	const char *const *argv;     /* NULL-terminated; argv[0] searched in PATH */
	const char *const *env;      /* "K=V" set (or "K" to unset), NULL-terminated; may be NULL */
	const char *cwd;             /* NULL: inherit */
	const void *stdin_data;      /* NULL: /dev/null */
	size_t stdin_len;
	size_t out_cap, err_cap;     /* capture caps in bytes; 0 = 4 MiB */
	int discard_out;             /* stdout to /dev/null */
	int inherit_err;             /* stderr not captured: goes to ours */
	int timeout_ms;              /* wall-clock deadline; 0 = none */
	int grace_ms;                /* SIGTERM → SIGKILL; 0 = 500 ms */
	const struct pragma_rlimits *limits;
	/* Extra fds to keep open in the child (dup'ed to the same numbers). */
	const int *keep_fds;
	int n_keep_fds;
	/* pragma_child_run only: called about every tick_ms (0: never) while the
	 * child runs, from the calling thread, with what was captured so far in
	 * c->out and c->err: progress for long waits (see pragma/log.h). */
	void (*tick)(struct pragma_child *c, double elapsed_ms, void *ctx);
	void *tick_ctx;
	int tick_ms;

	/* out */
	pid_t pid;
	struct pragma_buf out, err;
	int out_truncated, err_truncated;
	int exited, exit_code;       /* exited normally, with this code */
	int signaled, term_sig;      /* killed by this signal */
	int timed_out;               /* we killed it on the deadline */
	double wall_ms;
	struct rusage usage;         /* of the child and its reaped descendants */
};

#define PRAGMA_CHILD_INIT { .out = PRAGMA_BUF_INIT, .err = PRAGMA_BUF_INIT }

/* Run to completion (or deadline). Returns 0 when the child ran, whatever
 * its exit status; -1 (err set, PRAGMA_E_ENV for a missing program) when it
 * could not be started. */
int pragma_child_run(struct pragma_child *c, struct pragma_err *err);

/* Start without waiting; stdout/stdin are pipes the caller owns
 * (*to_child, *from_child; -1 where not wanted). Finish with
 * pragma_child_wait(). stderr is captured as in pragma_child_run only when
 * the caller polls it; here it is inherited unless inherit_err == 0, in which
 * case it goes to /dev/null. */
int pragma_child_start(struct pragma_child *c, int *to_child, int *from_child,
		       struct pragma_err *err);
/* Wait for a started child; kill its group after timeout_ms (0: wait forever). */
int pragma_child_wait(struct pragma_child *c, int timeout_ms);
/* Kill the child's process group: SIGTERM, grace, SIGKILL, and reap. */
void pragma_child_kill(struct pragma_child *c);

void pragma_child_release(struct pragma_child *c);

/* "exited 3", "killed by SIGSEGV", "timed out after 2000 ms". */
const char *pragma_child_status_str(const struct pragma_child *c, char *buf, size_t len);

/* Find a program in PATH; returns 1 and fills out (if non-NULL) when found. */
int pragma_which(const char *prog, struct pragma_buf *out);

/*
 * Children die with pragma. Every child started here gets its own process
 * group, so a Ctrl-C on the terminal does not reach it: pragma has to pass
 * it on. The groups of live children are kept in a registry (lock-free,
 * async-signal-safe to read); pragma_proc_install_signal_handlers(), called
 * once by the CLI, catches SIGINT, SIGTERM and SIGHUP (each unless it was
 * ignored when pragma started, as nohup and background jobs of scripts do),
 * and on one: erases the progress line, sends SIGTERM to every registered
 * group, waits up to 500 ms for them, SIGKILLs what is left, and then dies
 * of the same signal (exit status 128+N to a shell: 130, 143, 129). A second
 * signal during that is held. Nothing is written to the store: a run left
 * "running" is recognized as interrupted from its pid (pragma/store.h).
 */
int pragma_proc_install_signal_handlers(void);
/* Register a process the caller forked itself (not through pragma_child):
 * as a group (its own process group) or as a single process (a child in
 * pragma's own group, e.g. a whole pragma process that kills its own
 * children when signalled). Untrack it once reaped. 0, or -1 when the
 * registry (256 entries) is full. */
int pragma_proc_track(pid_t pid, int group);
void pragma_proc_untrack(pid_t pid);
/* Block the signals the handler catches, *old getting the mask before.
 * Around fork() and pragma_proc_track(), so a child is registered before
 * the handler could look for it; then restore old in the parent (and in
 * the child before exec: a blocked mask survives exec). */
void pragma_proc_block_signals(sigset_t *old);
/* How many children are registered now (tests). */
int pragma_proc_tracked(void);

#endif
