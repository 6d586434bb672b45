/* Internals of lib/suite shared by the runner, its executors and their unit
 * tests. */
#ifndef PRAGMA_SUITE_INT_H
#define PRAGMA_SUITE_INT_H

#include <jansson.h>

#include "pragma/buf.h"
#include "pragma/suite.h"

/* The `pragma optimize` command of one element (argv[0] = self), NULL-
 * terminated, every string malloc'ed (pragma_suite_argv_free). resume: a
 * stored run to continue (then task, mode and settings come from it); out:
 * an artifacts folder (NULL: optimize's default); json: --json. */
char **suite_optimize_argv(const char *self, json_t *suite, json_t *task, int traj, const char *resume, const char *db,
			   const char *out, int json);

/* The run of (task path, trajectory) of the suite in the store at db (or
 * an open store), if any: the run as pragma_store_run_get gives it. */
struct pragma_store;
json_t *suite_find_run(struct pragma_store *s, const char *suite_id, const char *path, int traj);

struct pragma_suite_executor *suite_local_new(const char *self, const char *db, json_t *suite, int jobs,
					      const char *run_dir, struct pragma_err *err);
struct pragma_suite_executor *suite_slurm_new(const char *self, const char *db, json_t *suite,
					      const struct pragma_slurm_opts *so, const char *run_dir,
					      struct pragma_err *err);

/* ---- Slurm helpers (slurm.c), apart for the unit tests ---- */

/* A Slurm job state word (squeue %T, sacct State: "RUNNING",
 * "CANCELLED by 0", "TIMEOUT", ...) as an element state. */
enum pragma_suite_state suite_slurm_state(const char *word);
/* Ended in a way a resubmission can cure (time limit, preemption, a node
 * failure): the job resumes from its shard. */
int suite_slurm_retryable(const char *word);
/* Array indices (sorted ascending) as sbatch --array wants them: "0-3,7,9-10". */
void suite_array_spec(const int *idx, int n, struct pragma_buf *out);
/* The names (never the values) of the environment variables an element
 * needs on its node: PATH, HOME, locale, PRAGMA_*, *_API_KEY, proxies, CUDA
 * and Python paths, that are set here; comma-separated for --export. */
void suite_export_names(char *const *environ_, const char *extra_name, struct pragma_buf *out);
/* One line of `squeue -O JobArrayID:|,State:|,exit_code:|,NodeList:|,Reason:`
 * -> array job id, index, state word, exit code, node list, reason. 0, or -1
 * when the line is not one. */
struct suite_squeue_row {
	long job;
	int index;
	char state[32];
	int exit_code; /* the wait status's exit code */
	int signal;
	char nodes[128];
	char reason[128];
};
int suite_parse_squeue_line(const char *line, struct suite_squeue_row *r);

#endif
