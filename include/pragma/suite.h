/*
 * Running a suite (`pragma bench`, DESIGN 3.12): `pragma optimize` for
 * every task x trajectory of a suite run, through an executor — child
 * processes on this machine (local), or one Slurm job array on a cluster
 * (slurm) — resumable as a whole.
 *
 * A suite run is a row of the store's `suites` table (pragma/store.h); each
 * task x trajectory is an "element" whose run is an ordinary run with the
 * suite's id. Elements are numbered trajectory * n_tasks + task: the same
 * number every time (it is the Slurm array index), so a resumed suite
 * restarts exactly the elements that are not done.
 *
 * Local elements write into the suite's store directly (one machine, WAL).
 * Slurm elements write each into its own store shard under the run
 * directory on the shared filesystem, and the runner merges a shard into
 * the suite's store when its job has ended (pragma_store_merge); only the
 * runner (on the submit host) ever writes the suite's store.
 *
 * The library prints nothing: progress comes to the caller as events.
 */
#ifndef PRAGMA_SUITE_H
#define PRAGMA_SUITE_H

#include <jansson.h>
#include <signal.h>

#include "pragma/err.h"

/* ------------------------------------------------------------ the tasks */

/* SUITE (a directory of tasks, or a built-in suite name: cpu-l1, c) or
 * TASKs (names, paths, comma lists) -> [{path, name, category, kind}], paths
 * absolute; *name (malloc'ed) is the suite's name for the record. NULL with
 * err (PRAGMA_E_INPUT) when nothing matches. */
json_t *pragma_suite_tasks(const char *const *args, int n, char **name, struct pragma_err *err);

/* Does the task define NAME (a module-level constant of a KernelBench file,
 * a size of a native task)? A suite's --set applies to the tasks that do. */
int pragma_suite_task_defines(const char *path, const char *name);

/* ------------------------------------------------------------ elements */

enum pragma_suite_state {
	PRAGMA_SUITE_QUEUED,   /* not started yet: waiting for a free slot (local) */
	PRAGMA_SUITE_PENDING,  /* submitted, waiting for the scheduler (Slurm) */
	PRAGMA_SUITE_RUNNING,
	PRAGMA_SUITE_DONE,     /* ended normally and its run is in the suite's store */
	PRAGMA_SUITE_FAILED,   /* ended otherwise: detail says how */
};

/* "queued", "pending", "running", "done", "failed". */
const char *pragma_suite_state_name(enum pragma_suite_state s);

struct pragma_suite_elem {
	int index;              /* trajectory * n_tasks + task */
	int task, traj;         /* 0-based */
	const char *name;       /* the task's name and path, owned by the runner */
	const char *path;
	char resume_run[48];    /* the stored run it continues, "" when it starts one */
	enum pragma_suite_state state;
	char job[64];           /* the executor's handle: "pid 1234", or the Slurm job "4711_3" */
	char node[128];         /* where it runs, when the executor knows */
	char detail[256];       /* how it ended when not done: "exit 3", "Slurm state TIMEOUT" */
	char log[1024];         /* its log file */
	char shard[1024];       /* its store shard ("" when it writes the suite's store) */
	double started;         /* wall-clock seconds when it was last seen starting to run */
	int submissions;        /* times started or submitted by this runner */
};

/*
 * An executor: where elements run. A struct of function pointers over a
 * private state, like the rest of the project's interfaces; the runner
 * calls prepare once, start once with every element to run, then poll until
 * nothing is in flight (or cancel on an interrupt), then free.
 */
struct pragma_suite_executor {
	const char *name;       /* "local", "slurm" */
	void *priv;
	/* Before deciding what to run (also on --resume): bring the suite's
	 * store up to date with work done elsewhere (Slurm: merge the shards of
	 * jobs that have ended) and take over elements still in flight from an
	 * earlier session (their state set PENDING/RUNNING). May be NULL. */
	int (*prepare)(struct pragma_suite_executor *x, struct pragma_suite_elem *els, int n, struct pragma_err *err);
	/* Start these elements. All at once: an executor may hold some back
	 * (local starts as many as --jobs allows and the rest as slots free up)
	 * or submit them together (Slurm: one job array, its %N throttle). */
	int (*start)(struct pragma_suite_executor *x, struct pragma_suite_elem **els, int n, struct pragma_err *err);
	/* Update the elements' states; wait up to timeout_ms when nothing has
	 * changed (returns early on a signal). Returns how many changed, or -1. */
	int (*poll)(struct pragma_suite_executor *x, int timeout_ms, struct pragma_err *err);
	/* An element has ended (DONE or FAILED): make its run visible in the
	 * suite's store (Slurm: merge its shard). May be NULL. */
	int (*collect)(struct pragma_suite_executor *x, struct pragma_suite_elem *el, struct pragma_err *err);
	/* Stop every element in flight; they stay resumable. */
	int (*cancel)(struct pragma_suite_executor *x, struct pragma_err *err);
	void (*free)(struct pragma_suite_executor *x);
};

/* ------------------------------------------------------------ executors */

/* Slurm settings, kept with the suite run (config.executor) so that
 * --resume submits the same way. NULL/0: Slurm's defaults. */
struct pragma_slurm_opts {
	const char *partition, *account, *time, *gres;
	int max_jobs;                   /* the array's %N throttle (0: none) */
	const char *const *sbatch_args; /* extra sbatch arguments, each a #SBATCH line */
	int n_sbatch_args;
	const char *shared_dir;         /* run directories go to <shared_dir>/suites/<suite> */
};

/* Is Slurm usable from here? Checks that sbatch, squeue and scancel are on
 * PATH and the controller answers. PRAGMA_E_ENV with a hint when not. */
int pragma_slurm_check(struct pragma_err *err);

/* The executor configuration to store with a new suite run (its
 * config.executor): {"name": "local"} or {"name": "slurm", ...}. */
json_t *pragma_suite_executor_config(const char *name, const struct pragma_slurm_opts *so);

/* ------------------------------------------------------------ the runner */

struct pragma_suite_event {
	const struct pragma_suite_elem *el; /* NULL: a message about the whole suite */
	int finished, total;                /* elements ended so far (done or failed) of all */
	double seconds;                     /* how long the element ran (ended elements) */
	const char *what;                   /* one line: "running on node3 (job 4711_3)",
					     * "1.20x (best: attempt 2)", "FAILED: ..." */
};

struct pragma_suite_run_opts {
	const char *db;                 /* the suite's store */
	const char *suite_id;
	const char *self;               /* the pragma binary the elements run */
	int jobs;                       /* local: elements at once (1..64) */
	/* Slurm settings given with --resume override the stored ones, field by
	 * field (a longer --time after a timeout); NULL: the stored ones. */
	const struct pragma_slurm_opts *slurm;
	volatile sig_atomic_t *stop;    /* set by the caller's signal handler: cancel and return */
	void (*event)(void *ctx, const struct pragma_suite_event *ev);
	void *event_ctx;
};

struct pragma_suite_result {
	int total, done, failed;        /* elements: all, done, failed (or never run) */
	int done_before;                /* of done: finished before this session */
	int interrupted;                /* stopped by *stop */
	char run_dir[1024];             /* logs (and shards) of this suite run */
};

/* Run (or resume) the suite run suite_id: elements whose run is done are
 * kept, interrupted ones resumed, the rest started; the suite row's status,
 * wall time, baseline configuration and failures are kept up to date.
 * Returns 0 when it ran (whatever each element's verdict; res says how many
 * failed), -1 with err when it could not (no such suite run: PRAGMA_E_INPUT;
 * Slurm not usable: PRAGMA_E_ENV). */
int pragma_suite_run(const struct pragma_suite_run_opts *o, struct pragma_suite_result *res, struct pragma_err *err);

/* ------------------------------------------------------------ job side */

/* What a Slurm array element runs, on its node: from the run directory's
 * suite.json (written at submission), the `pragma optimize` command of
 * element `index` — `--resume RUN` when its shard already holds its run (a
 * job that hit its time limit or was preempted, resubmitted: it loses at
 * most the attempt in flight), else a new run; `--db SHARD --out DIR`
 * always. Creates the shard (rollback journal) when missing. *argv is
 * NULL-terminated, malloc'ed with its strings (pragma_suite_argv_free);
 * *about (malloc'ed) a line for the job's log. */
int pragma_suite_element_argv(const char *spec, int index, char ***argv, char **about, struct pragma_err *err);
void pragma_suite_argv_free(char **argv);

#endif
