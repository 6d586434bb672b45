/*
 * The PyTorch baseline on the GPU: runtime/cuda/torch_cuda_time.py, run by
 * the bridge's interpreter ($PRAGMA_PYTHON), with the bridge's `time`
 * command line (so lib/verify's interleaved rounds can drive it in serve
 * mode by swapping the script) and CUDA events inside.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pragma/bridge.h"
#include "pragma/cuda.h"
#include "pragma/fs.h"
#include "pragma/proc.h"
#include "pragma/timing.h"

int pragma_cuda_torch_script(struct pragma_buf *path, struct pragma_err *err)
{
	return pragma_data_path("runtime/cuda/torch_cuda_time.py", path, err);
}

/* Run the script; parse its first JSON line. */
static int run_script(const char *const *args, int timeout_ms, json_t **out, struct pragma_err *err)
{
	struct pragma_buf script = PRAGMA_BUF_INIT;
	struct pragma_child c = PRAGMA_CHILD_INIT;
	const char *argv[200];
	int n = 0, ret = -1;

	*out = NULL;
	if (pragma_cuda_torch_script(&script, err) < 0)
		return -1;
	argv[n++] = pragma_bridge_python();
	argv[n++] = script.data;
	for (int i = 0; args[i] && n < 198; i++)
		argv[n++] = args[i];
	argv[n] = NULL;
	c.argv = argv;
	c.timeout_ms = timeout_ms;
	c.out_cap = 4 << 20;
	if (pragma_child_run(&c, err) < 0) {
		pragma_err_hint(err, "set PRAGMA_PYTHON to a Python with a CUDA build of torch");
		goto out;
	}
	{
		json_error_t je;
		size_t k = strcspn(c.out.data, "\n");
		*out = json_loadb(c.out.data, k, 0, &je);
	}
	if (!json_is_object(*out)) {
		json_decref(*out);
		*out = NULL;
		pragma_buf_rtrim(&c.err);
		pragma_err_set(err, PRAGMA_E_ENV, "%s %s gave no answer (%.300s)", pragma_bridge_python(), script.data,
			       c.err.data);
		goto out;
	}
	if (!json_is_true(json_object_get(*out, "ok"))) {
		const char *kind = json_string_value(json_object_get(*out, "error"));
		const char *msg = json_string_value(json_object_get(*out, "message"));
		pragma_err_set(err, kind && !strcmp(kind, "environment") ? PRAGMA_E_ENV : PRAGMA_E_INPUT, "%s",
			       msg ? msg : "the CUDA baseline failed");
		goto out;
	}
	ret = 0;
out:
	pragma_child_release(&c);
	pragma_buf_release(&script);
	return ret;
}

int pragma_cuda_torch_available(char *why, size_t len)
{
	const char *args[] = { "check", NULL };
	struct pragma_err e = PRAGMA_ERR_INIT;
	json_t *ans = NULL;
	int ok = run_script(args, 120000, &ans, &e) == 0;

	if (why && len) {
		if (ok)
			snprintf(why, len, "torch %s (CUDA %s) on %s", json_string_value(json_object_get(ans, "torch")),
				 json_string_value(json_object_get(ans, "cuda")) ? json_string_value(json_object_get(ans, "cuda")) : "?",
				 json_string_value(json_object_get(ans, "device")));
		else
			snprintf(why, len, "%s", e.msg);
	}
	json_decref(ans);
	return ok;
}

int pragma_cuda_torch_time(const struct pragma_task *t, const struct pragma_refset *sets, int n_sets, int warmup,
			   int reps, int cold, json_t **out, struct pragma_err *err)
{
	struct pragma_buf dirs = PRAGMA_BUF_INIT;
	char w[16], r[16];
	const char *args[160];
	int n = 0, rc;

	if (t->kind != PRAGMA_TASK_KERNELBENCH)
		return pragma_err_set(err, PRAGMA_E_INPUT, "%s is a native C task: its baseline is the C reference",
				      t->name);
	for (int s = 0; s < n_sets; s++)
		pragma_buf_addf(&dirs, "%s%s", s ? "," : "", sets[s].dir);
	snprintf(w, sizeof(w), "%d", warmup);
	snprintf(r, sizeof(r), "%d", reps > 0 ? reps : 1);
	args[n++] = "time";
	args[n++] = t->path;
	args[n++] = "--data";
	args[n++] = dirs.data;
	args[n++] = "--warmup";
	args[n++] = w;
	args[n++] = "--reps";
	args[n++] = r;
	args[n++] = cold ? "--cold" : "--warm";
	for (int k = 0; k < t->n_overrides && n < 150; k++) {
		args[n++] = "--set";
		args[n++] = t->overrides[k];
	}
	args[n] = NULL;
	rc = run_script(args, 1800000, out, err);
	pragma_buf_release(&dirs);
	return rc;
}

int pragma_cuda_profile_baseline(const struct pragma_task *t, const struct pragma_refset *sets, int n_sets, int warm,
				 struct pragma_profile *p, struct pragma_err *err)
{
	json_t *ans = NULL, *times, *v;
	double *x, med;
	size_t i, n;
	struct pragma_stats st;

	if (t->kind != PRAGMA_TASK_KERNELBENCH) {
		pragma_profile_note(p, "baseline: a native task's baseline is its C reference on the CPU; not compared "
				       "with a GPU kernel here (pragma eval does, labelled)");
		return 0;
	}
	if (pragma_cuda_torch_time(t, sets, n_sets, 3, 20, !warm, &ans, err) < 0)
		return -1;
	times = json_object_get(ans, "times_ms");
	n = json_array_size(times);
	x = calloc(n + 1, sizeof(double));
	json_array_foreach(times, i, v)
		x[i] = json_number_value(v);
	pragma_stats_compute(x, (int)n, &st);
	free(x);
	if (st.median > 0 && pragma_profile_get(p, "time.median_ms", &med) && med > 0) {
		pragma_profile_set(p, "time.baseline_ms", st.median, "timing");
		pragma_profile_set(p, "time.speedup", st.median / med, "timing");
		pragma_profile_note(p, "baseline: PyTorch %s on %s, median of %d calls (CUDA events)",
				    json_string_value(json_object_get(json_object_get(ans, "config"), "torch")),
				    json_string_value(json_object_get(json_object_get(ans, "config"), "device")), st.count);
	}
	json_decref(ans);
	return 0;
}

int pragma_cuda_baseline_measure(const struct pragma_task *t, const struct pragma_refset *sets, int n_sets,
				 const struct pragma_timing_opts *o, struct pragma_baseline *b, struct pragma_err *err)
{
	json_t *ans = NULL, *v;
	size_t i;
	char why[512];

	memset(b, 0, sizeof(*b));
	if (t->kind != PRAGMA_TASK_KERNELBENCH || !pragma_cuda_torch_available(why, sizeof(why))) {
		/* A native task's C reference, or PyTorch on the CPU: labelled. */
		if (pragma_baseline_measure(t, sets, n_sets, o, b, err) < 0)
			return -1;
		json_object_set_new(b->config, "device", json_string("cpu"));
		if (t->kind == PRAGMA_TASK_KERNELBENCH)
			json_object_set_new(b->config, "note",
					    json_pack("s", "no CUDA torch for the GPU baseline: timed on the CPU"));
		return 0;
	}
	if (pragma_cuda_torch_time(t, sets, n_sets, o->warmup, o->reps, o->cold, &ans, err) < 0)
		return -1;
	snprintf(b->kind, sizeof(b->kind), "pytorch");
	b->config = json_incref(json_object_get(ans, "config"));
	if (!b->config)
		b->config = json_object();
	json_object_set_new(b->config, "device", json_string("cuda"));
	b->times_ms = calloc(json_array_size(json_object_get(ans, "times_ms")) + 1, sizeof(double));
	json_array_foreach(json_object_get(ans, "times_ms"), i, v)
		b->times_ms[b->n_times++] = json_number_value(v);
	pragma_stats_compute(b->times_ms, b->n_times, &b->stats);
	json_decref(ans);
	return 0;
}
