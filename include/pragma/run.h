/* Running a compiled kernel in the harness process (runtime/harness.c). */
#ifndef PRAGMA_RUN_H
#define PRAGMA_RUN_H

#include <jansson.h>
#include <stdint.h>

#include "pragma/err.h"
#include "pragma/proc.h"
#include "pragma/refdata.h"
#include "pragma/task.h"

struct pragma_run_opts {
	const char *kernel_so;
	const struct pragma_task *task;
	const struct pragma_refset *sets;
	int n_sets;
	const char *work_dir;        /* request and outputs (work_dir/set<k>/out_*.npy) */
	int time_mode;               /* 0: one call per set; 1: warm-up + timed reps */
	int warmup, reps;
	int cold;                    /* flush the cache before every call */
	uint64_t flush_bytes;        /* 0: 2 x LLC, at least 64 MiB */
	int threads;                 /* OMP_NUM_THREADS; 0: all usable cores */
	int timeout_ms;              /* 0: 60 s */
	int sandbox;
	const struct pragma_rlimits *limits;
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
	json_t *raw;                 /* the harness's answer, if any */
};

/* Returns 0 when the harness ran and answered (r->ok says whether the kernel
 * behaved); -1 (err) when pragma itself could not run it. */
int pragma_run_kernel(const struct pragma_run_opts *o, struct pragma_run_result *r, struct pragma_err *err);
void pragma_run_result_release(struct pragma_run_result *r);

/* Usable cores (sched_getaffinity). */
int pragma_usable_cores(void);
/* Bytes of the cold-cache flush buffer: 2 x LLC from sysfs, at least 64 MiB. */
uint64_t pragma_flush_bytes(void);

#endif
