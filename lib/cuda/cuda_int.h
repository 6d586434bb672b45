/* lib/cuda internals shared between its files. */
#ifndef PRAGMA_CUDA_INT_H
#define PRAGMA_CUDA_INT_H

#include <jansson.h>

#include "pragma/buf.h"
#include "pragma/err.h"
#include "pragma/refdata.h"
#include "pragma/task.h"

/* One run of the CUDA harness driven by lib/cuda itself (profiling: time
 * mode, and profile mode under ncu), through lib/sandbox/run.c like
 * every other run. */
struct cuda_run {
	const struct pragma_task *task;
	const struct pragma_refset *sets;
	int n_sets;
	const char *so;
	const char *work_dir;        /* request and outputs (work_dir/set<k>/timed_NNN.npy) */
	const char *mode;            /* "time" or "profile" */
	int warmup, reps;
	int cold;
	int device;
	int sandbox;
	int profiler;                /* under ncu: the harness relaxes its sandbox for the tool */
	const char *tool_dir;
	int timeout_ms;
};

/* Run the harness (after prefix, e.g. ncu and its options); *answer is its
 * JSON answer. -1: it could not run or gave no answer (PRAGMA_E_NEGATIVE
 * when it died). errtail gets its stderr (the first 8 KiB). */
int cuda_run_harness(const struct cuda_run *r, const char *const *prefix, json_t **answer, struct pragma_buf *errtail,
		     struct pragma_err *err);

#endif
