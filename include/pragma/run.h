/*
 * Running a compiled kernel in the harness process (runtime/harness.c),
 * optionally sandboxed (DESIGN 3.4): own process group, rlimits, a
 * wall-clock deadline (SIGTERM, then SIGKILL to the group), seccomp and
 * Landlock inside. Whatever the kernel does, these calls return: a crash,
 * hang or memory blow-up becomes a status, never a failure of pragma.
 */
#ifndef PRAGMA_RUN_H
#define PRAGMA_RUN_H

#include <jansson.h>
#include <stdint.h>

#include "pragma/backend.h"
#include "pragma/err.h"
#include "pragma/proc.h"
#include "pragma/refdata.h"
#include "pragma/task.h"

/* Output poison written before every call (bit patterns). An element still
 * holding it after the call was never written. The float patterns are quiet
 * NaNs with a payload no arithmetic produces (x86 makes 0xffc00000, and
 * NAN is 0x7fc00000), so "never written" and "computed NaN" differ. */
#define PRAGMA_POISON_F32 0x7fe5a5a5u
#define PRAGMA_POISON_F64 0x7ffca5a5a5a5a5a5ull
#define PRAGMA_POISON_F16 0x7e5au
#define PRAGMA_POISON_BF16 0x7fe5u
#define PRAGMA_POISON_BOOL 0x5a
#define PRAGMA_POISON_BYTE 0xa5   /* every byte of integer outputs */

/* One call in run mode: on the buffers of set `buf`, holding the data of
 * set `data` (moved there first); the outputs as they stood at return are
 * written to work_dir/set<data>/<save>_NNN.npy (save NULL: not written). */
struct pragma_run_step {
	int buf, data;
	const char *save;
};

struct pragma_run_opts {
	const char *kernel_so;
	const struct pragma_task *task;
	const struct pragma_refset *sets;
	int n_sets;
	const char *work_dir;        /* request and outputs (work_dir/set<k>/out_*.npy) */
	int time_mode;               /* 0: run the steps; 1: warm-up + timed reps */
	int warmup, reps;
	int cold;                    /* flush the cache before every call */
	uint64_t flush_bytes;        /* 0: 2 x LLC, at least 64 MiB */
	int threads;                 /* OMP_NUM_THREADS; 0: all usable cores */
	int timeout_ms;              /* 0: 60 s */
	int sandbox;                 /* seccomp + Landlock + default rlimits */
	const struct pragma_rlimits *limits; /* NULL: pragma_run_default_limits() when sandboxed */
	/* run mode: the calls to make; NULL: one per set, buf = data, save "out" */
	const struct pragma_run_step *steps;
	int n_steps;
	int settle_us;               /* run mode: after each call wait, then check nothing changed */
	int final_settle_ms;         /* after the last call, the same */
	int save_timed;              /* time/serve: keep the last timed call's outputs per set (timed_NNN.npy) */
	const char *const *preload;  /* sonames loaded before the sandbox (NULL-terminated) */
	/* Whose harness runs the kernel, under which limits and environment
	 * (pragma/backend.h); NULL: the CPU backend. */
	const struct pragma_backend *backend;
	/* A program the harness runs under (valgrind ..., ncu ...),
	 * NULL-terminated argv without the harness; NULL: none. Its own lines
	 * on stdout are skipped: the answer is the first JSON object. */
	const char *const *wrapper;
	/* Further members of the harness request (a collector's "perf"
	 * counters, "profile_calls", "profiler", "device"); borrowed, may be NULL. */
	json_t *request;
	int no_landlock, no_seccomp; /* tests and diagnosis only */
};

struct pragma_run_result {
	int ok;
	char status[32];             /* "ok" or a DESIGN 3.4 category */
	char message[2048];
	double *times_ms;
	int n_times;
	int calls;
	double wall_ms;
	long maxrss_kb;
	double user_s, sys_s;
	int syscall_nr;              /* forbidden_syscall: which, else -1 */
	unsigned long alloc_failures;/* allocations that failed inside pk_forward */
	uint64_t alloc_largest;
	json_t *sandbox;             /* what the harness enforced, as it reported it */
	json_t *raw;                 /* the harness's answer, if any */
	/* The harness's stderr as it ended: the kernel's own prints and a
	 * wrapper's messages, the first bytes (NUL-terminated). */
	char log[8192];
	int log_truncated;
};

/* Returns 0 when the harness ran and answered (r->ok says whether the kernel
 * behaved); -1 (err) when pragma itself could not run it. */
int pragma_run_kernel(const struct pragma_run_opts *o, struct pragma_run_result *r, struct pragma_err *err);
void pragma_run_result_release(struct pragma_run_result *r);

/* The rlimits a sandboxed run gets: address space = the run's data plus
 * 4 GiB of headroom (threads, arenas, libraries), CPU time from the
 * deadline, file size from the largest output, a few hundred open files,
 * no core dumps. */
void pragma_run_default_limits(const struct pragma_run_opts *o, struct pragma_rlimits *l);

/* A harness in serve mode (DESIGN 3.5's interleaved rounds): started once,
 * warmed up, then asked for rounds of timed calls. */
struct pragma_run_server;
/* Start and wait for "ready". r gets the failure when the kernel died
 * during warm-up (returns 0 with r->ok = 0, *out NULL). */
int pragma_run_serve_start(const struct pragma_run_opts *o, struct pragma_run_server **out,
			   struct pragma_run_result *r, struct pragma_err *err);
/* One round of reps timed calls; times appended to r->times_ms. A kernel
 * failure ends the server: 0 with r->ok = 0. */
int pragma_run_serve_time(struct pragma_run_server *s, int reps, int timeout_ms, struct pragma_run_result *r,
			  struct pragma_err *err);
/* "quit": the harness writes the timed outputs and its final report. */
int pragma_run_serve_finish(struct pragma_run_server *s, struct pragma_run_result *r, struct pragma_err *err);
/* Kill (if still running) and free. */
void pragma_run_server_free(struct pragma_run_server *s);
/* Its process id (for /proc/<pid>/task/<tid>/schedstat); 0 when gone. */
int pragma_run_server_pid(const struct pragma_run_server *s);

/* Where the CPU harness binary is ($PRAGMA_HARNESS, next to the
 * executable, or the build tree). Other backends name theirs
 * (pragma_backend.harness). */
int pragma_harness_path(struct pragma_buf *out, struct pragma_err *err);

/* The Landlock ABI this kernel offers (0: none; why says so:
 * "abi 7" or "unavailable: ..."). For `pragma doctor` and verdicts. */
int pragma_landlock_abi(char *why, size_t len);

/* Usable cores (sched_getaffinity). */
int pragma_usable_cores(void);
/* Bytes of the cold-cache flush buffer: 2 x LLC from sysfs, at least 64 MiB. */
uint64_t pragma_flush_bytes(void);

#endif
