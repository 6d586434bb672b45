/*
 * Profiling a CUDA candidate (DESIGN 3.6, ncu): build with nvcc, the ptxas
 * resource report (static.gpu_*), then on a device: timed calls in the CUDA
 * harness (CUDA events, L2 flushed), the timed outputs checked against the
 * reference, the roofline with the GPU's peaks, and Nsight Compute on one
 * profiled call (gpu.*). Without a device everything after the static
 * report is unavailable with the probe's reason, and the call fails with
 * PRAGMA_E_ENV ("no CUDA device: ...") so that commands exit 3.
 */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda/cuda_int.h"
#include "pragma/cuda.h"
#include "pragma/fs.h"
#include "pragma/proc.h"
#include "pragma/backend.h"
#include "pragma/profile.h"
#include "pragma/run.h"
#include "pragma/tensor.h"
#include "pragma/timing.h"
#include "pragma/verify.h"

int cuda_run_harness(const struct cuda_run *r, const char *const *prefix, json_t **answer, struct pragma_buf *errtail,
		     struct pragma_err *err)
{
	struct pragma_profile_harness h = { 0 };
	struct pragma_run_result rr = { 0 };
	json_t *req;
	int ret = -1;

	*answer = NULL;
	/* The harness protocol's request (lib/sandbox/run.c), plus the CUDA
	 * harness's own members: its mode ("profile": one call for the
	 * profiler), the device, and under ncu the profiler's allowance. */
	req = json_pack("{s:s, s:i, s:i, s:b, s:{s:b}}", "mode", r->mode, "profile_calls", 1, "device", r->device,
			"profiler", r->profiler, "sandbox", "landlock", 1);
	if (r->profiler && r->tool_dir)
		json_object_set_new(json_object_get(req, "sandbox"), "tool_dir", json_string(r->tool_dir));
	h.backend = &pragma_backend_cuda;
	h.so = r->so;
	h.task = r->task;
	h.sets = r->sets;
	h.n_sets = r->n_sets;
	h.dir = r->work_dir;
	h.warmup = r->warmup;
	h.reps = r->reps;
	h.cold = r->cold;
	h.flush_bytes = 64 << 20;
	h.threads = 1;
	h.sandbox = r->sandbox;
	h.final_settle_ms = 5;
	h.timeout_ms = r->timeout_ms > 0 ? r->timeout_ms : 120000;
	h.preload = pragma_cuda_preload();
	h.wrapper = prefix;            /* ncu: the limits bind it too, less those a profiler needs */
	h.request = req;
	h.what = prefix ? "profile a kernel with ncu" : "profile a kernel";
	if (pragma_profile_harness_run(&h, &rr, err) < 0)
		goto out;
	if (errtail)
		pragma_buf_adds(errtail, rr.log);
	if (!rr.raw) {
		pragma_err_set(err, PRAGMA_E_NEGATIVE, "the CUDA harness gave no answer: %s: %s", rr.status, rr.message);
		goto out;
	}
	*answer = rr.raw;
	rr.raw = NULL;
	ret = 0;
out:
	json_decref(req);
	pragma_run_result_release(&rr);
	return ret;
}

/* The outputs of the last timed call on each set, by the Verifier's rule. */
static int check_timed(const struct pragma_task *t, const struct pragma_refset *sets, int n_sets, const char *dir,
		       json_t *calls, struct pragma_err *err)
{
	char why[1800];
	int r = pragma_verify_saved(t, sets, n_sets, dir, "timed", calls, -1, -1, why, sizeof(why), err);

	if (r > 0)
		pragma_err_set(err, PRAGMA_E_NEGATIVE, "%s in a timed call", why);
	return r ? -1 : 0;
}

/* ^(name1|name2)$ over the mangled names of the candidate's kernels. */
static void kernel_regex(const struct pragma_ptxas_report *r, struct pragma_buf *out)
{
	pragma_buf_reset(out);
	pragma_buf_adds(out, "regex:^(");
	for (int i = 0, first = 1; i < r->n; i++) {
		int dup = 0;
		for (int j = 0; j < i; j++)
			dup |= !strcmp(r->k[j].name, r->k[i].name);
		if (dup)
			continue;
		pragma_buf_addf(out, "%s%s", first ? "" : "|", r->k[i].name);
		first = 0;
	}
	pragma_buf_adds(out, ")$");
}

/* Learn mode's lines ("pragma-cuda-harness: profiler mode lacks syscall
 * 90 (chmod)", "... denies open of /etc/x") from the harness's stderr or
 * ncu's log, as one list. */
static void learned_note(const char *text, const char *tag, struct pragma_buf *names)
{
	const char *p = text;

	while (p && (p = strstr(p, tag))) {
		const char *e;
		p += strlen(tag);
		e = strchr(p, '\n');
		{
			size_t k = e ? (size_t)(e - p) : strlen(p);
			char item[96];
			snprintf(item, sizeof(item), "%.*s", (int)(k < 95 ? k : 95), p);
			if (!names->len || !strstr(names->data, item))
				pragma_buf_addf(names, "%s%s", names->len ? ", " : "", item);
		}
		p = e;
	}
}

static void run_ncu(const struct pragma_cuda_profile_opts *o, struct cuda_run *run,
		    const struct pragma_ptxas_report *pr, struct pragma_profile *p)
{
	struct pragma_buf ncu = PRAGMA_BUF_INIT, metrics = PRAGMA_BUF_INIT, regex = PRAGMA_BUF_INIT;
	struct pragma_buf log = PRAGMA_BUF_INIT, logtext = PRAGMA_BUF_INIT, tool_dir = PRAGMA_BUF_INIT;
	struct pragma_buf tail = PRAGMA_BUF_INIT;
	struct pragma_err e = PRAGMA_ERR_INIT;
	struct pragma_ncu_result r = PRAGMA_NCU_RESULT_INIT;
	json_t *ans = NULL;
	const char *argv[40];
	int n = 0;

	if (!pragma_ncu_find(&ncu)) {
		pragma_profile_unavailable(p, "ncu",
					   "ncu (Nsight Compute) not found. Hint: install Nsight Compute (part of the CUDA "
					   "toolkit's nsight-compute package) or set PRAGMA_NCU");
		goto out;
	}
	pragma_ncu_tool_dir(ncu.data, &tool_dir);
	pragma_ncu_metric_list(o->extra, o->n_extra, &metrics);
	kernel_regex(pr, &regex);
	pragma_buf_addf(&log, "%s/ncu.log", run->work_dir);
	argv[n++] = ncu.data;
	argv[n++] = "--target-processes";
	argv[n++] = "all";
	argv[n++] = "--profile-from-start";
	argv[n++] = "off";
	argv[n++] = "--kernel-name-base";
	argv[n++] = "mangled";
	argv[n++] = "--kernel-name";
	argv[n++] = regex.data;
	argv[n++] = "--metrics";
	argv[n++] = metrics.data;
	argv[n++] = "--cache-control";
	argv[n++] = "all";
	argv[n++] = "--clock-control";
	argv[n++] = "base";
	argv[n++] = "--csv";
	argv[n++] = "--page";
	argv[n++] = "raw";
	argv[n++] = "--print-units";
	argv[n++] = "base";
	argv[n++] = "--log-file";
	argv[n++] = log.data;
	argv[n] = NULL;
	run->mode = "profile";
	run->warmup = 1;
	run->reps = 0;
	run->profiler = 1;
	run->tool_dir = tool_dir.data;
	run->timeout_ms = 600000;
	if (cuda_run_harness(run, argv, &ans, &tail, &e) < 0) {
		pragma_profile_unavailable(p, "ncu", "the profiled run failed: %s", e.msg);
		goto out;
	}
	pragma_read_file(log.data, &logtext, 16 << 20, NULL);
	{
		struct pragma_buf learned = PRAGMA_BUF_INIT, opened = PRAGMA_BUF_INIT;
		learned_note(tail.data, "profiler mode lacks syscall ", &learned);
		learned_note(logtext.data, "profiler mode lacks syscall ", &learned);
		learned_note(tail.data, "profiler mode denies open of ", &opened);
		learned_note(logtext.data, "profiler mode denies open of ", &opened);
		if (learned.len)
			pragma_profile_note(p, "profiler sandbox (PRAGMA_CUDA_PROFILER_LEARN): ncu's injection made "
					       "calls the profiler mode does not allow: %s",
					    learned.data);
		if (opened.len)
			pragma_profile_note(p, "profiler sandbox (PRAGMA_CUDA_PROFILER_LEARN): files opened outside what "
					       "Landlock grants (refused): %s",
					    opened.data);
		pragma_buf_release(&learned);
		pragma_buf_release(&opened);
	}
	if (pragma_ncu_parse(logtext.data, &r, &e) < 0) {
		pragma_profile_unavailable(p, "ncu", "ncu's CSV could not be read: %s", e.msg);
		goto out;
	}
	if (!json_is_true(json_object_get(ans, "ok")) && !r.n) {
		const char *m = json_string_value(json_object_get(ans, "message"));
		char why[640];
		pragma_ncu_explain(&r, why, sizeof(why));
		pragma_profile_unavailable(p, "ncu", "%s%s%s%s", why, m ? "; the harness said: " : "", m ? m : "",
					   m && strstr(m, "system call") ?
						   ". Hint: PRAGMA_CUDA_PROFILER_LEARN=1 lets ncu's calls through and "
						   "names each one the profiler sandbox lacks (on stderr, with -v)" :
						   "");
		goto out;
	}
	pragma_ncu_metrics(&r, o->extra, o->n_extra, p);
out:
	json_decref(ans);
	pragma_ncu_release(&r);
	pragma_buf_release(&ncu);
	pragma_buf_release(&metrics);
	pragma_buf_release(&regex);
	pragma_buf_release(&log);
	pragma_buf_release(&logtext);
	pragma_buf_release(&tool_dir);
	pragma_buf_release(&tail);
}

int pragma_cuda_profile_run(const struct pragma_cuda_profile_opts *o, struct pragma_profile *p,
			    struct pragma_err *err)
{
	unsigned mask = o->collectors ? o->collectors | PRAGMA_COL_TIMING
				      : PRAGMA_COL_TIMING | PRAGMA_COL_STATIC | PRAGMA_COL_ROOFLINE | PRAGMA_COL_NCU;
	struct pragma_buf src = PRAGMA_BUF_INIT, so = PRAGMA_BUF_INIT, log = PRAGMA_BUF_INIT;
	struct pragma_buf cache = PRAGMA_BUF_INIT, work = PRAGMA_BUF_INIT;
	struct pragma_flags flags = PRAGMA_FLAGS_INIT;
	struct pragma_cuda_build_opts bo = { 0 };
	struct pragma_ptxas_report pr = PRAGMA_PTXAS_REPORT_INIT;
	struct pragma_gpu_model model;
	struct pragma_gpu_probe probe;
	struct cuda_run run = { 0 };
	json_t *ans = NULL;
	double median = 0;
	int ret = -1;

	pragma_profile_init(p);
	{
		const char *b = strrchr(o->kernel_src, '/');
		snprintf(p->source_name, sizeof(p->source_name), "%s", b ? b + 1 : o->kernel_src);
	}
	p->flops = o->task->flops;
	p->bytes = o->task->bytes;
	p->threads = 1;

	/* Build: the kernel's own flags, then the caller's (allowed already). */
	if (pragma_read_file(o->kernel_src, &src, 16 << 20, err) < 0)
		goto out;
	if (pragma_nvcc_flags_from_source(&flags, src.data, src.len,
					  pragma_cuda_fast_math_allowed(o->task->atol, o->task->rtol), err) < 0)
		goto out;
	for (int i = 0; o->flags && o->flags[i]; i++) {
		flags.v = realloc(flags.v, sizeof(char *) * (size_t)(flags.n + 2));
		flags.v[flags.n++] = strdup(o->flags[i]);
		flags.v[flags.n] = NULL;
	}
	bo.flags = pragma_flags_argv(&flags);
	bo.confine = !o->no_sandbox;
	if (pragma_cuda_build_cached(o->kernel_src, &bo, &so, &log, err) < 0)
		goto out;
	if (pragma_cuda_symbols_check(so.data, err) < 0)
		goto out;
	pragma_ptxas_parse(log.data, &pr);
	if (mask & PRAGMA_COL_STATIC)
		pragma_ptxas_metrics(&pr, p);

	/* A device, or a clear stop. */
	pragma_gpu_probe(&probe);
	if (probe.n_devices <= 0) {
		for (unsigned bit = PRAGMA_COL_TIMING; bit <= PRAGMA_COL_NCU; bit <<= 1)
			if ((mask & bit) && bit != PRAGMA_COL_STATIC)
				pragma_profile_unavailable(p, pragma_collector_name(bit), "%s", probe.reason);
		pragma_err_set(err, PRAGMA_E_ENV, "%s", probe.reason);
		if (probe.hint[0])
			pragma_err_hint(err, "%s", probe.hint);
		goto out;
	}
	pragma_gpu_model_from_device(&probe.dev[0], &model);
	pragma_profile_note(p, "GPU: %s (sm_%d%d, %d SMs); peaks: %s", model.dev.name, model.dev.cc_major,
			    model.dev.cc_minor, model.dev.sms, model.peak_source);

	/* Timed calls in the CUDA harness. */
	if (pragma_cache_dir(&cache, err) < 0 || pragma_mkdtemp(cache.data, "cuda-profile-", &work, err) < 0)
		goto out;
	run.task = o->task;
	run.sets = o->sets;
	run.n_sets = o->n_sets;
	run.so = so.data;
	run.work_dir = work.data;
	run.mode = "time";
	run.warmup = o->warmup > 0 ? o->warmup : 3;
	run.reps = o->reps > 0 ? o->reps : 20;
	run.cold = !o->warm;
	run.sandbox = !o->no_sandbox;
	run.timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 120000;
	if (cuda_run_harness(&run, NULL, &ans, NULL, err) < 0)
		goto out;
	if (!json_is_true(json_object_get(ans, "ok"))) {
		const char *s = json_string_value(json_object_get(ans, "status"));
		const char *m = json_string_value(json_object_get(ans, "message"));
		int env = s && (!strcmp(s, "no_device") || !strcmp(s, "sandbox_error") || !strcmp(s, "harness_error"));
		pragma_err_set(err, env ? PRAGMA_E_ENV : PRAGMA_E_NEGATIVE, "the kernel failed in the CUDA harness: %s: %s",
			       s ? s : "crash", m ? m : "");
		goto out;
	}
	if (check_timed(o->task, o->sets, o->n_sets, work.data, json_object_get(ans, "timed_calls"), err) < 0)
		goto out;
	{
		json_t *t = json_object_get(ans, "times_ms"), *v;
		size_t i, nt = json_array_size(t);
		double *times = calloc(nt + 1, sizeof(double));
		struct pragma_stats st;
		json_array_foreach(t, i, v)
			times[i] = json_number_value(v);
		pragma_stats_compute(times, (int)nt, &st);
		free(times);
		median = st.median;
		pragma_profile_set(p, "time.median_ms", st.median, "timing");
		pragma_profile_set(p, "time.min_ms", st.min, "timing");
		if (st.mean > 0)
			pragma_profile_set(p, "time.stdev_pct", 100 * st.stdev / st.mean, "timing");
		pragma_profile_note(p,
				    "timing: median of %d calls after %d warm-up calls, CUDA events around pk_forward and "
				    "a device synchronize, %s",
				    st.count, run.warmup, o->warm ? "warm L2" : "L2 flushed before each call");
	}
	if (o->time_ms > 0)
		pragma_profile_note(p, "roofline: from the timing session's %.4g ms; this profiled run's median was %.4g ms",
				    o->time_ms, median);
	if (mask & PRAGMA_COL_ROOFLINE)
		pragma_gpu_roofline(o->task->flops, o->task->bytes, o->time_ms > 0 ? o->time_ms : median, &model, p);
	if (mask & PRAGMA_COL_NCU) {
		double dur;
		run_ncu(o, &run, &pr, p);
		if (median > 0 && pragma_profile_get(p, "gpu.duration_us", &dur) && dur / 1e3 <= median * 1.5)
			pragma_profile_set(p, "gpu.launch_gap_pct", fmax(0, 100 * (1 - dur / 1e3 / median)), "ncu");
	}
	ret = 0;
out:
	json_decref(ans);
	if (work.len)
		pragma_rm_rf(work.data, NULL);
	pragma_ptxas_release(&pr);
	pragma_flags_release(&flags);
	pragma_buf_release(&src);
	pragma_buf_release(&so);
	pragma_buf_release(&log);
	pragma_buf_release(&cache);
	pragma_buf_release(&work);
	return ret;
}
