/*
 * The loop's adapter over the Verifier and the Profiler: evaluate a
 * candidate (with its tunable variants), compare two candidates in
 * interleaved rounds, measure the final speedup, profile.
 */
#include <fcntl.h>
#include <math.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "agents_priv.h"
#include "pragma/cuda.h"
#include "pragma/diagnose.h"
#include "pragma/fs.h"
#include "pragma/log.h"
#include "pragma/profile.h"
#include "pragma/run.h"
#include "pragma/tensor.h" /* verify.h uses struct pragma_tensor */
#include "pragma/verify.h"

#define COMPARE_ROUNDS 5
#define COMPARE_REPS 8

static double wall_now(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_REALTIME, &ts);
	return ts.tv_sec + ts.tv_nsec / 1e9;
}

double agents_lock_wait_s;      /* this process's time spent waiting for the lock */
double agents_build_s;          /* and compiling kernels (under the shared hold) */
static double lock_acquired;

/* One machine-wide lock (<cache>/measure.lock). Running kernels — a
 * verification, a timing, a profile — holds it exclusively, so concurrent
 * runs (bench --jobs) never measure on a CPU another pragma process is
 * using; compiling holds it shared, so builds overlap one another but never
 * a measurement. */
static int lock_file(int exclusive)
{
	struct pragma_buf p = PRAGMA_BUF_INIT;
	struct pragma_err e = PRAGMA_ERR_INIT;
	double t0 = wall_now();
	int fd = -1;

	if (pragma_cache_dir(&p, &e) == 0) {
		pragma_buf_adds(&p, "/measure.lock");
		fd = open(p.data, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
		if (fd >= 0 && flock(fd, exclusive ? LOCK_EX : LOCK_SH) < 0) {
			close(fd);
			fd = -1;
		}
	}
	pragma_buf_release(&p);
	lock_acquired = wall_now();
	agents_lock_wait_s += lock_acquired - t0;
	return fd;
}

int agents_measure_lock(void)
{
	return lock_file(1);
}

static void unlock_file(int fd, const char *kind)
{
	const char *log = getenv("PRAGMA_LOCK_LOG");

	/* PRAGMA_LOCK_LOG: every hold as "pid acquired released EX|SH" (wall
	 * clock), appended before the lock is let go — what the no-overlap test
	 * reads. */
	if (fd >= 0 && log && *log) {
		char line[112];
		int n = snprintf(line, sizeof(line), "%d %.6f %.6f %s\n", (int)getpid(), lock_acquired, wall_now(), kind);
		int lf = open(log, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
		if (lf >= 0) {
			if (write(lf, line, (size_t)n) != n)
				pragma_warn("PRAGMA_LOCK_LOG: short write to %s", log);
			close(lf);
		}
	}
	if (fd >= 0)
		close(fd);
}

void agents_measure_unlock(int fd)
{
	unlock_file(fd, "EX");
}

/* Compile the kernel (with these flags) under the shared hold, so the
 * verification that follows under the exclusive one finds it built. A
 * build that fails is left for that verification to report. */
static void prebuild(struct agents_run *R, const char *src_path, const char *flags)
{
	struct pragma_verify_opts vo = PRAGMA_VERIFY_DEFAULTS;
	struct pragma_verdict v;
	struct pragma_err e = PRAGMA_ERR_INIT;

	vo.flags = flags;
	vo.n_sets = R->n_sets;
	vo.threads = R->threads;
	vo.backend = R->o->backend;
	vo.compile_only = 1;
	pragma_verdict_init(&v);
	int fd = lock_file(0);
	if (pragma_verify(&R->task, src_path, &vo, &v, &e) == 0)
		agents_build_s += v.compile_ms / 1000;
	unlock_file(fd, "SH");
	pragma_verdict_release(&v);
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static void join_flags(json_t *flags, json_t *defines, struct pragma_buf *out)
{
	size_t i;
	json_t *f;
	const char *k;

	json_array_foreach(flags, i, f)
		pragma_buf_addf(out, "%s%s", out->len ? " " : "", json_string_value(f));
	json_object_foreach(defines, k, f)
		pragma_buf_addf(out, "%s-D%s=%s", out->len ? " " : "", k, json_string_value(f));
}

static void verify_opts(struct agents_run *R, struct pragma_verify_opts *vo, const char *flags, int timed)
{
	*vo = (struct pragma_verify_opts)PRAGMA_VERIFY_DEFAULTS;
	vo->flags = flags;
	vo->n_sets = R->n_sets;
	vo->threads = R->threads;
	vo->time = timed;
	vo->keep = 0; /* the .so lives in the build cache; work dirs hold outputs (GBs) */
	vo->backend = R->o->backend;
}

/* Fill ev from a verdict. */
static void take_verdict(struct agents_eval *ev, struct pragma_verdict *v)
{
	snprintf(ev->status, sizeof(ev->status), "%s", pragma_vstatus_name(v->status));
	snprintf(ev->message, sizeof(ev->message), "%s", v->message);
	if (v->status != PRAGMA_V_OK && pragma_vstatus_hint(v->status))
		snprintf(ev->message + strlen(ev->message), sizeof(ev->message) - strlen(ev->message), " (%s)",
			 pragma_vstatus_hint(v->status));
	snprintf(ev->so_path, sizeof(ev->so_path), "%s", v->so_path);
	pragma_buf_reset(&ev->compile_log);
	pragma_buf_add(&ev->compile_log, v->compile_log.data, v->compile_log.len);
	if (v->timed && v->status == PRAGMA_V_OK) {
		ev->time = v->cand.stats;
		ev->base = v->base.stats;
		ev->speedup = v->speedup;
	}
	json_decref(ev->verdict);
	ev->verdict = pragma_verdict_json(v);
}

/* All combinations of the tunables, capped: the full grid when it fits,
 * else one tunable at a time around the first values (coordinate search,
 * one sweep). */
static json_t *variants(json_t *tune, int cap)
{
	json_t *out = json_array();
	const char *k;
	json_t *vals;
	size_t total = 1;

	json_object_foreach(tune, k, vals)
		total *= json_array_size(vals) ? json_array_size(vals) : 1;
	if (total <= (size_t)cap) {
		for (size_t idx = 0; idx < total; idx++) {
			json_t *d = json_object();
			size_t rest = idx;
			json_object_foreach(tune, k, vals) {
				size_t n = json_array_size(vals);
				json_object_set(d, k, json_array_get(vals, rest % n));
				rest /= n;
			}
			json_array_append_new(out, d);
		}
		return out;
	}
	json_t *base = json_object();
	json_object_foreach(tune, k, vals)
		json_object_set(base, k, json_array_get(vals, 0));
	json_array_append(out, base);
	json_object_foreach(tune, k, vals) {
		for (size_t i = 1; i < json_array_size(vals) && json_array_size(out) < (size_t)cap; i++) {
			json_t *d = json_deep_copy(base);
			json_object_set(d, k, json_array_get(vals, i));
			json_array_append_new(out, d);
		}
	}
	json_decref(base);
	return out;
}

/* Median time of a verified .so in interleaved rounds with others: one
 * server each, round-robin. medians[i] receives each one's median over all
 * its calls; ratio per round against index 0 goes to lo/hi. */
static int rounds(struct agents_run *R, const char *const *sos, int n, double *medians, double *lo, double *hi,
		  struct pragma_err *err)
{
	struct pragma_run_server **srv = calloc((size_t)n, sizeof(*srv));
	struct pragma_run_result *res = calloc((size_t)n, sizeof(*res));
	struct pragma_buf *dirs = calloc((size_t)n, sizeof(*dirs));
	struct pragma_buf cache = PRAGMA_BUF_INIT;
	double ratios[COMPARE_ROUNDS];
	int n_ratios = 0;
	int ret = -1;

	if (pragma_cache_dir(&cache, err) < 0)
		goto out;
	for (int i = 0; i < n; i++) {
		struct pragma_run_opts o = { 0 };
		pragma_buf_init(&dirs[i]);
		if (pragma_mkdtemp(cache.data, "cmp-", &dirs[i], err) < 0)
			goto out;
		o.kernel_so = sos[i];
		o.task = &R->task;
		o.sets = R->sets;
		o.n_sets = R->n_sets;
		o.work_dir = dirs[i].data;
		o.time_mode = 1;
		o.warmup = 2;
		o.cold = 1;
		o.threads = R->threads;
		o.timeout_ms = 300000;
		o.sandbox = 1;
		if (pragma_run_serve_start(&o, &srv[i], &res[i], err) < 0)
			goto out;
		if (!srv[i]) {
			pragma_err_set(err, PRAGMA_E_NEGATIVE, "a verified kernel failed while timed: %s: %s", res[i].status,
				       res[i].message);
			goto out;
		}
	}
	for (int r = 0; r < COMPARE_ROUNDS; r++) {
		double m0 = 0;
		for (int i = 0; i < n; i++) {
			int before = res[i].n_times;
			if (pragma_run_serve_time(srv[i], COMPARE_REPS, 120000, &res[i], err) < 0)
				goto out;
			if (!res[i].ok) {
				pragma_err_set(err, PRAGMA_E_NEGATIVE, "a verified kernel failed while timed: %s: %s",
					       res[i].status, res[i].message);
				goto out;
			}
			struct pragma_stats s;
			pragma_stats_compute(res[i].times_ms + before, res[i].n_times - before, &s);
			if (i == 0)
				m0 = s.median;
			else if (i == 1 && m0 > 0)
				ratios[n_ratios++] = s.median / m0;
		}
	}
	for (int i = 0; i < n; i++) {
		struct pragma_stats s;
		pragma_stats_compute(res[i].times_ms, res[i].n_times, &s);
		medians[i] = s.median;
	}
	/* The spread of the per-round ratios without the single most disturbed
	 * round at each end: on a shared machine one round in five can be 2x
	 * off, and one such round must not decide (or block) a new best. */
	qsort(ratios, (size_t)n_ratios, sizeof(double), cmp_double);
	if (lo)
		*lo = n_ratios >= 4 ? ratios[1] : n_ratios ? ratios[0] : 0;
	if (hi)
		*hi = n_ratios >= 4 ? ratios[n_ratios - 2] : n_ratios ? ratios[n_ratios - 1] : 0;
	ret = 0;
out:
	for (int i = 0; i < n; i++) {
		if (srv[i])
			pragma_run_server_free(srv[i]);
		pragma_run_result_release(&res[i]);
		if (dirs[i].len)
			pragma_rm_rf(dirs[i].data, NULL);
		pragma_buf_release(&dirs[i]);
	}
	free(srv);
	free(res);
	free(dirs);
	pragma_buf_release(&cache);
	return ret;
}

int agents_evaluate(struct agents_run *R, const char *src_path, json_t *flags, struct agents_eval *ev,
		    struct pragma_err *err)
{
	struct pragma_verify_opts vo;
	struct pragma_verdict v;
	struct pragma_buf fl = PRAGMA_BUF_INIT;
	int cap = R->o->max_tune_variants > 0 ? R->o->max_tune_variants : 12;
	json_t *chosen = NULL;
	int ret = -1;

	snprintf(ev->src_path, sizeof(ev->src_path), "%s", src_path);
	if (!ev->flags)
		ev->flags = flags ? json_incref(flags) : json_array();

	/* Tunables: verify every variant, time the correct ones side by side,
	 * keep the fastest. */
	if (json_object_size(ev->tune)) {
		json_t *vars = variants(ev->tune, cap), *d;
		size_t i, n_ok = 0;
		const char **sos = calloc(json_array_size(vars) + 1, sizeof(char *));
		char (*paths)[4096] = calloc(json_array_size(vars) + 1, sizeof(*paths));
		size_t *which = calloc(json_array_size(vars) + 1, sizeof(size_t));
		ev->tune_table = json_array();
		json_array_foreach(vars, i, d) {
			pragma_buf_reset(&fl);
			join_flags(ev->flags, d, &fl);
			prebuild(R, src_path, fl.data);
		}
		json_array_foreach(vars, i, d) {
			pragma_buf_reset(&fl);
			join_flags(ev->flags, d, &fl);
			verify_opts(R, &vo, fl.data, 0);
			pragma_verdict_init(&v);
			int vlk = agents_measure_lock(), vr0 = pragma_verify(&R->task, src_path, &vo, &v, err);
			agents_measure_unlock(vlk);
			if (vr0 < 0) {
				pragma_verdict_release(&v);
				json_decref(vars);
				free(sos);
				free(paths);
				free(which);
				goto out;
			}
			json_array_append_new(ev->tune_table, json_pack("{s:O, s:s, s:s}", "defines", d, "status",
									pragma_vstatus_name(v.status), "message", v.message));
			if (v.status == PRAGMA_V_OK) {
				snprintf(paths[n_ok], sizeof(paths[n_ok]), "%s", v.so_path);
				sos[n_ok] = paths[n_ok];
				which[n_ok++] = i;
			}
			pragma_verdict_release(&v);
		}
		if (n_ok == 0) {
			/* No variant is correct: the first one's verdict stands. */
			chosen = json_incref(json_array_get(vars, 0));
		} else if (n_ok == 1) {
			chosen = json_incref(json_array_get(vars, which[0]));
		} else {
			double *med = calloc(n_ok, sizeof(double));
			int lk = agents_measure_lock(), rr = rounds(R, sos, (int)n_ok, med, NULL, NULL, err);
			agents_measure_unlock(lk);
			if (rr < 0) {
				free(med);
				json_decref(vars);
				free(sos);
				free(paths);
				free(which);
				goto out;
			}
			size_t best = 0;
			for (size_t k = 0; k < n_ok; k++) {
				json_object_set_new(json_array_get(ev->tune_table, which[k]), "time_ms", json_real(med[k]));
				if (med[k] < med[best])
					best = k;
			}
			chosen = json_incref(json_array_get(vars, which[best]));
			free(med);
		}
		json_decref(vars);
		free(sos);
		free(paths);
		free(which);
		json_decref(ev->tune);
		ev->tune = chosen;
	}

	pragma_buf_reset(&fl);
	join_flags(ev->flags, ev->tune, &fl);
	verify_opts(R, &vo, fl.data, 1);
	pragma_verdict_init(&v);
	prebuild(R, src_path, fl.data);
	int lk = agents_measure_lock();
	int vr = pragma_verify(&R->task, src_path, &vo, &v, err);
	agents_measure_unlock(lk);
	if (vr < 0) {
		pragma_verdict_release(&v);
		goto out;
	}
	take_verdict(ev, &v);
	pragma_verdict_release(&v);
	ret = 0;
out:
	pragma_buf_release(&fl);
	return ret;
}

int agents_compare(struct agents_run *R, const struct agents_eval *a, const struct agents_eval *b, double *ratio,
		   double *lo, double *hi, struct pragma_err *err)
{
	const char *sos[2] = { a->so_path, b->so_path };
	double med[2];
	int lk = agents_measure_lock(), r = rounds(R, sos, 2, med, lo, hi, err);

	agents_measure_unlock(lk);
	if (r < 0)
		return -1;
	*ratio = med[0] > 0 ? med[1] / med[0] : 0;
	return 0;
}

int agents_final_speedup(struct agents_run *R, const struct agents_eval *a, double *speedup, double *lo, double *hi,
			 struct pragma_err *err)
{
	struct pragma_verify_opts vo;
	struct pragma_verdict v;
	struct pragma_buf fl = PRAGMA_BUF_INIT;
	int ret = -1;

	join_flags(a->flags, a->tune, &fl);
	verify_opts(R, &vo, fl.data, 1);
	vo.rounds = 9;
	pragma_verdict_init(&v);
	int lk = agents_measure_lock(), vr = pragma_verify(&R->task, a->src_path, &vo, &v, err);
	agents_measure_unlock(lk);
	if (vr < 0)
		goto out;
	if (v.status != PRAGMA_V_OK) {
		pragma_err_set(err, PRAGMA_E_NEGATIVE, "the best kernel failed its final check: %s: %s",
			       pragma_vstatus_name(v.status), v.message);
		goto out;
	}
	*speedup = v.speedup;
	/* The middle half of the per-round ratios: min/max of a few rounds on a
	 * shared machine is dominated by one disturbed round. */
	*lo = v.speedup_q1;
	*hi = v.speedup_q3;
	ret = 0;
out:
	pragma_verdict_release(&v);
	pragma_buf_release(&fl);
	return ret;
}

int agents_profile(struct agents_run *R, struct agents_eval *ev, json_t *extra, struct pragma_err *err)
{
	struct pragma_profile_opts po = { 0 };
	struct pragma_profile p;
	struct pragma_diagnosis d = PRAGMA_DIAGNOSIS_INIT;
	const char **ex = NULL, **fl = NULL;
	size_t n_ex = 0, n_fl = 0, i;
	json_t *x;
	const char *k;
	char (*defs)[192] = NULL;
	int ret = -1;

	pragma_profile_init(&p);
	ex = calloc(json_array_size(extra) + 1, sizeof(char *));
	json_array_foreach(extra, i, x)
		if (pragma_metric_find(json_string_value(x)) || !strncmp(json_string_value(x), "perf:", 5) ||
		    (R->o->backend == PRAGMA_BACKEND_CUDA && !strncmp(json_string_value(x), "ncu:", 4)))
			ex[n_ex++] = json_string_value(x);
	fl = calloc(json_array_size(ev->flags) + json_object_size(ev->tune) + 1, sizeof(char *));
	defs = calloc(json_object_size(ev->tune) + 1, sizeof(*defs));
	json_array_foreach(ev->flags, i, x)
		fl[n_fl++] = json_string_value(x);
	i = 0;
	json_object_foreach(ev->tune, k, x) {
		snprintf(defs[i], sizeof(defs[i]), "-D%s=%s", k, json_string_value(x));
		fl[n_fl++] = defs[i++];
	}
	po.task = &R->task;
	po.kernel_src = ev->src_path;
	po.sets = R->sets;
	po.n_sets = R->n_sets;
	po.extra = ex;
	po.n_extra = n_ex;
	po.threads = R->threads;
	po.machine = &R->machine;
	po.flags = fl;
	int lk = agents_measure_lock(), pr;
	if (R->o->backend == PRAGMA_BACKEND_CUDA) {
		/* CUDA backend (issue 8): ptxas, CUDA-event timing, GPU roofline, ncu. */
		struct pragma_cuda_profile_opts co = { .task = &R->task, .kernel_src = ev->src_path, .flags = fl,
						       .sets = R->sets, .n_sets = R->n_sets, .extra = ex,
						       .n_extra = n_ex };
		pr = pragma_cuda_profile_run(&co, &p, err);
	} else {
		pr = pragma_profile_run(&po, &p, err);
	}
	agents_measure_unlock(lk);
	if (pr < 0)
		goto out;
	pragma_diagnose(&p, R->o->backend == PRAGMA_BACKEND_CUDA ? NULL : &R->machine, &d);
	if (R->o->backend == PRAGMA_BACKEND_CUDA)
		pragma_cuda_diagnose(&p, &d);
	json_decref(ev->profile);
	ev->profile = pragma_profile_json(&p, ex, n_ex);
	json_decref(ev->metrics);
	ev->metrics = json_incref(json_object_get(ev->profile, "metrics"));
	json_decref(ev->diagnosis);
	ev->diagnosis = pragma_diagnosis_json(&d);
	pragma_buf_reset(&ev->profile_text);
	pragma_profile_table(&p, ex, n_ex, &ev->profile_text);
	pragma_buf_reset(&ev->knowledge_text);
	if (!R->kb) {
		struct pragma_err kerr = PRAGMA_ERR_INIT;
		if (pragma_knowledge_open(&R->kb, NULL, &kerr) < 0)
			pragma_warn("the profiling compendium is unavailable: %s", kerr.msg);
	}
	if (R->kb)
		pragma_knowledge_for_profile(R->kb, &p, ex, n_ex, &d, 12000, &ev->knowledge_text);
	ret = 0;
out:
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);
	free(ex);
	free(fl);
	free(defs);
	return ret;
}

void agents_compare_profiles(const struct agents_eval *cur, const struct agents_eval *best, struct pragma_buf *out)
{
	struct pragma_profile a, b;
	struct pragma_err e = PRAGMA_ERR_INIT;

	pragma_buf_addf(out, "- speedup over the baseline: %.2fx (best) → %.2fx (current)\n", best->speedup, cur->speedup);
	pragma_profile_init(&a);
	pragma_profile_init(&b);
	if (cur->profile && best->profile && pragma_profile_from_json(best->profile, &b, &e) == 0 &&
	    pragma_profile_from_json(cur->profile, &a, &e) == 0)
		pragma_profile_compare_text(&b, &a, out);
	pragma_profile_release(&a);
	pragma_profile_release(&b);
}
