#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pragma/bridge.h"
#include "pragma/build.h"
#include "pragma/fs.h"
#include "pragma/log.h"
#include "pragma/run.h"
#include "pragma/timing.h"

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

void pragma_stats_compute(const double *v, int n, struct pragma_stats *s)
{
	double *c;
	double sum = 0, sq = 0;

	memset(s, 0, sizeof(*s));
	if (n <= 0)
		return;
	c = malloc(sizeof(double) * (size_t)n);
	memcpy(c, v, sizeof(double) * (size_t)n);
	qsort(c, (size_t)n, sizeof(double), cmp_double);
	s->count = n;
	s->min = c[0];
	s->max = c[n - 1];
	s->median = n % 2 ? c[n / 2] : (c[n / 2 - 1] + c[n / 2]) / 2;
	for (int i = 0; i < n; i++)
		sum += c[i];
	s->mean = sum / n;
	for (int i = 0; i < n; i++)
		sq += (c[i] - s->mean) * (c[i] - s->mean);
	s->stdev = n > 1 ? sqrt(sq / (n - 1)) : 0;
	free(c);
}

json_t *pragma_stats_json(const struct pragma_stats *s)
{
	return json_pack("{s:f, s:f, s:f, s:f, s:f, s:i}", "median", s->median, "mean", s->mean, "stdev", s->stdev,
			 "min", s->min, "max", s->max, "count", s->count);
}

void pragma_baseline_release(struct pragma_baseline *b)
{
	free(b->times_ms);
	json_decref(b->config);
	memset(b, 0, sizeof(*b));
}

json_t *pragma_baseline_json(const struct pragma_baseline *b)
{
	json_t *t = json_array();

	for (int i = 0; i < b->n_times; i++)
		json_array_append_new(t, json_real(b->times_ms[i]));
	return json_pack("{s:s, s:o, s:o, s:O}", "kind", b->kind, "stats", pragma_stats_json(&b->stats), "times_ms", t,
			 "config", b->config ? b->config : json_null());
}

static int baseline_pytorch(const struct pragma_task *t, const struct pragma_refset *sets, int n_sets,
			    const struct pragma_timing_opts *o, int threads, uint64_t flush, struct pragma_baseline *b,
			    struct pragma_err *err)
{
	struct pragma_bridge_args a;
	json_t *res = NULL, *times, *v;
	size_t i;
	int ret = -1;

	pragma_bridge_time_args(&a, t, sets, n_sets, o->warmup, o->reps, threads, o->cold, flush, 0);
	if (pragma_bridge_run(a.argv, threads, 1800000, &res, err) < 0)
		goto out;
	times = json_object_get(res, "times_ms");
	b->n_times = (int)json_array_size(times);
	b->times_ms = calloc((size_t)b->n_times + 1, sizeof(double));
	json_array_foreach(times, i, v)
		b->times_ms[i] = json_number_value(v);
	snprintf(b->kind, sizeof(b->kind), "pytorch");
	b->config = json_deep_copy(json_object_get(res, "config"));
	if (!b->config)
		b->config = json_object();
	ret = 0;
out:
	json_decref(res);
	pragma_bridge_args_release(&a);
	return ret;
}

static int baseline_native(const struct pragma_task *t, const struct pragma_refset *sets, int n_sets,
			   const struct pragma_timing_opts *o, int threads, uint64_t flush, struct pragma_baseline *b,
			   struct pragma_err *err)
{
	struct pragma_buf src = PRAGMA_BUF_INIT, so = PRAGMA_BUF_INIT, cache = PRAGMA_BUF_INIT, work = PRAGMA_BUF_INIT;
	struct pragma_run_opts ro = { 0 };
	struct pragma_run_result r = { 0 };
	int ret = -1;

	pragma_buf_addf(&src, "%s/%s", t->path, t->has_baseline_c ? "baseline.c" : "reference.c");
	if (pragma_build_cached(src.data, NULL, &so, err) < 0) {
		/* The task's own code does not build: a malformed task. */
		if (err->kind == PRAGMA_E_NEGATIVE)
			err->kind = PRAGMA_E_INPUT;
		pragma_err_prefix(err, "building the task's %s", t->has_baseline_c ? "baseline.c" : "reference.c");
		goto out;
	}
	if (pragma_cache_dir(&cache, err) < 0 || pragma_mkdtemp(cache.data, "run-", &work, err) < 0)
		goto out;
	ro.kernel_so = so.data;
	ro.task = t;
	ro.sets = sets;
	ro.n_sets = n_sets;
	ro.work_dir = work.data;
	ro.time_mode = 1;
	ro.warmup = o->warmup;
	ro.reps = o->reps;
	ro.cold = o->cold;
	ro.flush_bytes = flush;
	ro.threads = threads;
	ro.timeout_ms = 1800000;
	if (pragma_run_kernel(&ro, &r, err) < 0)
		goto out;
	if (!r.ok) {
		pragma_err_set(err, PRAGMA_E_INPUT, "the task's %s failed (%s): %s",
			       t->has_baseline_c ? "baseline.c" : "reference.c", r.status, r.message);
		goto out;
	}
	b->times_ms = r.times_ms;
	b->n_times = r.n_times;
	r.times_ms = NULL;
	snprintf(b->kind, sizeof(b->kind), "%s", t->has_baseline_c ? "c-baseline" : "c-reference");
	b->config = json_pack("{s:s, s:s, s:s, s:i}", "source", t->has_baseline_c ? "baseline.c" : "reference.c",
			      "compiler", pragma_compiler_version(getenv("PRAGMA_CC") && *getenv("PRAGMA_CC") ?
								getenv("PRAGMA_CC") : "gcc"),
			      "flags", "-O3 -march=native -fopenmp", "threads", threads);
	ret = 0;
out:
	pragma_run_result_release(&r);
	if (work.len)
		pragma_rm_rf(work.data, NULL);
	pragma_buf_release(&src);
	pragma_buf_release(&so);
	pragma_buf_release(&cache);
	pragma_buf_release(&work);
	return ret;
}

int pragma_baseline_measure(const struct pragma_task *t, const struct pragma_refset *sets, int n_sets,
			    const struct pragma_timing_opts *o, struct pragma_baseline *b, struct pragma_err *err)
{
	int threads = o->threads > 0 ? o->threads : pragma_usable_cores();
	uint64_t flush = o->flush_bytes ? o->flush_bytes : pragma_flush_bytes();
	int ret;

	memset(b, 0, sizeof(*b));
	if (o->reps < 1 || o->warmup < 0)
		return pragma_err_set(err, PRAGMA_E_INPUT, "timing needs reps >= 1 and warmup >= 0");
	int lk = pragma_measure_lock(PRAGMA_LOCK_EXCLUSIVE, "time the baseline");
	ret = t->kind == PRAGMA_TASK_KERNELBENCH ? baseline_pytorch(t, sets, n_sets, o, threads, flush, b, err)
						 : baseline_native(t, sets, n_sets, o, threads, flush, b, err);
	pragma_measure_unlock(lk);
	if (ret < 0)
		return -1;
	pragma_stats_compute(b->times_ms, b->n_times, &b->stats);
	json_object_set_new(b->config, "protocol",
			    json_pack("{s:i, s:i, s:b, s:I, s:i, s:i}", "warmup", o->warmup, "reps", o->reps, "cold",
				      o->cold, "flush_bytes", (json_int_t)flush, "threads", threads, "input_sets", n_sets));
	return 0;
}
