/* The timing protocol (DESIGN 3.5) and the baseline it is applied to. */
#ifndef PRAGMA_TIMING_H
#define PRAGMA_TIMING_H

#include <jansson.h>
#include <stdint.h>

#include "pragma/err.h"
#include "pragma/refdata.h"
#include "pragma/task.h"

struct pragma_stats {
	double median, mean, stdev, min, max;
	int count;
};

void pragma_stats_compute(const double *v, int n, struct pragma_stats *s);
json_t *pragma_stats_json(const struct pragma_stats *s);

struct pragma_timing_opts {
	int warmup;              /* calls before timing, cycling the input sets */
	int reps;                /* timed calls */
	int cold;                /* flush the cache before every call (default) */
	int threads;             /* 0: all usable cores */
	uint64_t flush_bytes;    /* 0: pragma_flush_bytes() */
};

#define PRAGMA_TIMING_DEFAULTS { .warmup = 3, .reps = 20, .cold = 1 }

struct pragma_baseline {
	char kind[24];           /* "pytorch", "c-reference", "c-baseline" */
	double *times_ms;
	int n_times;
	struct pragma_stats stats;
	json_t *config;          /* what ran: torch, BLAS, threads, allocator, compiler, protocol */
};

/* Time the task's reference by the protocol, on the given input sets. */
int pragma_baseline_measure(const struct pragma_task *t, const struct pragma_refset *sets, int n_sets,
			    const struct pragma_timing_opts *o, struct pragma_baseline *b, struct pragma_err *err);
void pragma_baseline_release(struct pragma_baseline *b);
json_t *pragma_baseline_json(const struct pragma_baseline *b);

#endif
