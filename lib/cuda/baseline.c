/*
 * The PyTorch baseline on the GPU: runtime/cuda/torch_cuda_time.py, run by
 * the bridge's interpreter ($PRAGMA_PYTHON), with the bridge's `time`
 * command line (so lib/verify's interleaved rounds can drive it in serve
 * mode by swapping the script) and CUDA events inside.
 *
 * torch.compile is the second, named baseline (issue 12): the same script
 * with --compile, the same protocol, compilation done before the warm-up
 * calls and reported, never timed. A user choosing between pragma and the
 * compiler wants both numbers; where the Python has no torch.compile (torch
 * < 2.0, no triton) or no GPU, the answer says "unavailable: ..." instead.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pragma/bridge.h"
#include "pragma/refdata.h"
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

const char *pragma_cuda_compile_mode(void)
{
	static const char *const modes[] = { "default", "reduce-overhead", "max-autotune", "max-autotune-no-cudagraphs",
					     NULL };
	const char *e = getenv("PRAGMA_TORCH_COMPILE_MODE");

	for (int i = 0; e && modes[i]; i++)
		if (!strcmp(e, modes[i]))
			return modes[i];
	return "default";
}

int pragma_cuda_torch_time_ex(const struct pragma_cuda_torch_opts *o, json_t **out, struct pragma_err *err)
{
	const struct pragma_task *t = o->task;
	struct pragma_buf dirs = PRAGMA_BUF_INIT;
	char w[16], r[16];
	const char *args[160];
	int n = 0, rc;

	*out = NULL;
	if (t->kind != PRAGMA_TASK_KERNELBENCH)
		return pragma_err_set(err, PRAGMA_E_INPUT, "%s is a native C task: its baseline is the C reference",
				      t->name);
	for (int s = 0; s < o->n_sets; s++)
		pragma_buf_addf(&dirs, "%s%s", s ? "," : "", o->sets[s].dir);
	snprintf(w, sizeof(w), "%d", o->warmup);
	snprintf(r, sizeof(r), "%d", o->reps > 0 ? o->reps : 1);
	args[n++] = "time";
	args[n++] = t->path;
	args[n++] = "--data";
	args[n++] = dirs.data;
	args[n++] = "--warmup";
	args[n++] = w;
	args[n++] = "--reps";
	args[n++] = r;
	args[n++] = o->cold ? "--cold" : "--warm";
	if (o->compile) {
		args[n++] = "--compile";
		args[n++] = "--compile-mode";
		args[n++] = o->compile_mode ? o->compile_mode : pragma_cuda_compile_mode();
	}
	for (int k = 0; k < t->n_overrides && n < 150; k++) {
		args[n++] = "--set";
		args[n++] = t->overrides[k];
	}
	args[n] = NULL;
	/* max-autotune may compile for many minutes */
	rc = run_script(args, o->compile ? 3600000 : 1800000, out, err);
	pragma_buf_release(&dirs);
	return rc;
}

int pragma_cuda_torch_time(const struct pragma_task *t, const struct pragma_refset *sets, int n_sets, int warmup,
			   int reps, int cold, json_t **out, struct pragma_err *err)
{
	struct pragma_cuda_torch_opts o = { .task = t, .sets = sets, .n_sets = n_sets, .warmup = warmup,
					    .reps = reps, .cold = cold };

	return pragma_cuda_torch_time_ex(&o, out, err);
}

int pragma_torch_compile_available(char *why, size_t len)
{
	const char *args[] = { "check-compile", NULL };
	struct pragma_err e = PRAGMA_ERR_INIT;
	json_t *ans = NULL;
	int ok = run_script(args, 120000, &ans, &e) == 0;

	if (why && len) {
		if (ok)
			snprintf(why, len, "torch %s, triton %s", json_string_value(json_object_get(ans, "torch")),
				 json_string_value(json_object_get(ans, "triton")) ? json_string_value(json_object_get(ans, "triton")) : "-");
		else
			snprintf(why, len, "%s", e.msg);
	}
	json_decref(ans);
	return ok;
}

int pragma_cuda_compile_baseline_measure(const struct pragma_task *t, const struct pragma_refset *sets, int n_sets,
					 const struct pragma_timing_opts *o, struct pragma_baseline *b,
					 struct pragma_err *err)
{
	struct pragma_cuda_torch_opts to = { .task = t, .sets = sets, .n_sets = n_sets, .warmup = o->warmup,
					     .reps = o->reps, .cold = o->cold, .compile = 1 };
	json_t *ans = NULL, *v;
	size_t i;

	memset(b, 0, sizeof(*b));
	if (t->kind != PRAGMA_TASK_KERNELBENCH)
		return pragma_err_set(err, PRAGMA_E_INPUT,
				      "unavailable: %s is a native C task (torch.compile applies to PyTorch models)",
				      t->name);
	if (pragma_cuda_torch_time_ex(&to, &ans, err) < 0)
		return -1;
	snprintf(b->kind, sizeof(b->kind), "torch.compile");
	b->config = json_incref(json_object_get(ans, "config"));
	if (!b->config)
		b->config = json_object();
	/* "device" says where it ran (cuda/cpu) like the CPU baseline's
	 * config; the script's GPU name moves to "device_name". */
	if (json_is_string(json_object_get(b->config, "device")))
		json_object_set(b->config, "device_name", json_object_get(b->config, "device"));
	json_object_set_new(b->config, "device", json_string("cuda"));
	b->times_ms = calloc(json_array_size(json_object_get(ans, "times_ms")) + 1, sizeof(double));
	json_array_foreach(json_object_get(ans, "times_ms"), i, v)
		b->times_ms[b->n_times++] = json_number_value(v);
	pragma_stats_compute(b->times_ms, b->n_times, &b->stats);
	json_decref(ans);
	return 0;
}

json_t *pragma_cuda_compile_baseline_json(const struct pragma_task *t, int n_sets, const struct pragma_timing_opts *o,
					  double cand_ms)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_refset *sets = NULL;
	struct pragma_baseline b = { 0 };
	uint64_t seeds[64];
	json_t *j = json_pack("{s:s}", "name", "torch.compile");
	char why[512];

	if (n_sets < 1 || n_sets > 64)
		n_sets = PRAGMA_DEFAULT_SETS;
	if (t->kind != PRAGMA_TASK_KERNELBENCH) {
		json_object_set_new(j, "unavailable", json_string("a native C task has no PyTorch model to compile"));
		return j;
	}
	if (getenv("PRAGMA_TORCH_COMPILE") && !strcmp(getenv("PRAGMA_TORCH_COMPILE"), "0")) {
		json_object_set_new(j, "unavailable", json_string("not measured (PRAGMA_TORCH_COMPILE=0)"));
		return j;
	}
	/* Say why cheaply before timing anything. */
	if (!pragma_torch_compile_available(why, sizeof(why))) {
		json_object_set_new(j, "unavailable", json_string(why));
		return j;
	}
	if (!pragma_cuda_torch_available(why, sizeof(why))) {
		json_object_set_new(j, "unavailable", json_pack("s+", "no CUDA torch for the GPU: ", why));
		return j;
	}
	sets = calloc((size_t)n_sets, sizeof(*sets));
	for (int i = 0; i < n_sets; i++)
		seeds[i] = pragma_ref_seed(i);
	if (!sets || pragma_ref_ensure(t, seeds, n_sets, sets, &err) < 0 ||
	    pragma_cuda_compile_baseline_measure(t, sets, n_sets, o, &b, &err) < 0) {
		json_object_set_new(j, "unavailable", json_string(err.msg[0] ? err.msg : "out of memory"));
		goto out;
	}
	json_object_update_new(j, pragma_baseline_json(&b));
	json_object_set_new(j, "median_ms", json_real(b.stats.median));
	if (cand_ms > 0 && b.stats.median > 0)
		json_object_set_new(j, "speedup", json_real(b.stats.median / cand_ms));
	json_object_set_new(j, "protocol_note",
			    json_string("timed after the eager comparison, by the same protocol (CUDA events, L2 "
					"flushed), not interleaved with the candidate"));
out:
	pragma_baseline_release(&b);
	free(sets);
	return j;
}

json_t *pragma_torch_compile_cpu_json(const struct pragma_task *t)
{
	json_t *j = json_pack("{s:s}", "name", "torch.compile");
	char why[512];

	if (t->kind != PRAGMA_TASK_KERNELBENCH)
		json_object_set_new(j, "unavailable", json_string("a native C task has no PyTorch model to compile"));
	else if (!pragma_torch_compile_available(why, sizeof(why)) && strstr(why, "no torch.compile"))
		json_object_set_new(j, "unavailable", json_string(why));
	else
		json_object_set_new(j, "unavailable",
				    json_string("not measured on the CPU: the CPU bridge has no torch.compile mode "
						"(pragma times torch.compile on the GPU, --backend cuda)"));
	return j;
}

void pragma_cuda_compile_baseline_text(const json_t *j, double eager_speedup, struct pragma_buf *out)
{
	const char *un = json_string_value(json_object_get(j, "unavailable"));
	json_t *c = json_object_get(json_object_get(j, "config"), "compile");
	double sp = json_number_value(json_object_get(j, "speedup"));

	if (un) {
		pragma_buf_addf(out, "torch.compile: %s", un);
		return;
	}
	if (eager_speedup > 0 && sp > 0)
		pragma_buf_addf(out, "vs PyTorch eager %.2fx, vs torch.compile %.2fx; ", eager_speedup, sp);
	pragma_buf_addf(out, "torch.compile median %.4g ms (mode %s, backend %s", json_number_value(json_object_get(j, "median_ms")),
			json_string_value(json_object_get(c, "mode")) ? json_string_value(json_object_get(c, "mode")) : "?",
			json_string_value(json_object_get(c, "backend")) ? json_string_value(json_object_get(c, "backend")) : "?");
	if (json_string_value(json_object_get(c, "triton")))
		pragma_buf_addf(out, ", triton %s", json_string_value(json_object_get(c, "triton")));
	if (json_is_number(json_object_get(c, "compile_seconds")))
		pragma_buf_addf(out, ", compiled in %.1f s, not timed", json_number_value(json_object_get(c, "compile_seconds")));
	if (json_integer_value(json_object_get(c, "graph_breaks")) > 0)
		pragma_buf_addf(out, ", %lld graph breaks", (long long)json_integer_value(json_object_get(c, "graph_breaks")));
	pragma_buf_adds(out, ")");
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
	/* "device" says where it ran (cuda/cpu) like the CPU baseline's
	 * config; the script's GPU name moves to "device_name". */
	if (json_is_string(json_object_get(b->config, "device")))
		json_object_set(b->config, "device_name", json_object_get(b->config, "device"));
	json_object_set_new(b->config, "device", json_string("cuda"));
	b->times_ms = calloc(json_array_size(json_object_get(ans, "times_ms")) + 1, sizeof(double));
	json_array_foreach(json_object_get(ans, "times_ms"), i, v)
		b->times_ms[b->n_times++] = json_number_value(v);
	pragma_stats_compute(b->times_ms, b->n_times, &b->stats);
	json_decref(ans);
	return 0;
}
