#include <sched.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pragma/buf.h"
#include "pragma/fs.h"
#include "pragma/run.h"
#include "pragma/tensor.h"

int pragma_usable_cores(void)
{
	cpu_set_t set;

	if (sched_getaffinity(0, sizeof(set), &set) == 0 && CPU_COUNT(&set) > 0)
		return CPU_COUNT(&set);
	return 1;
}

uint64_t pragma_flush_bytes(void)
{
	uint64_t best = 0;

	for (int i = 0; i < 8; i++) {
		char path[128];
		unsigned long long kb = 0;
		char unit = 'K';
		FILE *f;

		snprintf(path, sizeof(path), "/sys/devices/system/cpu/cpu0/cache/index%d/size", i);
		f = fopen(path, "r");
		if (!f)
			continue;
		if (fscanf(f, "%llu%c", &kb, &unit) >= 1) {
			uint64_t b = kb * (unit == 'M' ? 1024 * 1024 : 1024);
			if (b > best)
				best = b;
		}
		fclose(f);
	}
	best *= 2;
	return best < (64u << 20) ? (64u << 20) : best;
}

void pragma_run_result_release(struct pragma_run_result *r)
{
	free(r->times_ms);
	json_decref(r->raw);
	memset(r, 0, sizeof(*r));
}

static const char *signal_status(int sig)
{
	switch (sig) {
	case SIGSYS:
		return "forbidden_syscall";
	case SIGXCPU:
		return "timeout";
	case SIGXFSZ:
		return "forbidden_syscall";
	default:
		return "crash";
	}
}

static json_t *spec_array(const struct pragma_tensor_spec *s, int n, int with_shape)
{
	json_t *a = json_array();

	for (int i = 0; i < n; i++) {
		json_t *o = json_pack("{s:s}", "dtype", pragma_dtype_name(s[i].dtype));
		if (with_shape) {
			json_t *sh = json_array();
			for (int k = 0; k < s[i].ndim; k++)
				json_array_append_new(sh, json_integer(s[i].shape[k]));
			json_object_set_new(o, "shape", sh);
		}
		json_array_append_new(a, o);
	}
	return a;
}

int pragma_run_kernel(const struct pragma_run_opts *o, struct pragma_run_result *r, struct pragma_err *err)
{
	struct pragma_buf req_path = PRAGMA_BUF_INIT, harness = PRAGMA_BUF_INIT, exe = PRAGMA_BUF_INIT;
	struct pragma_buf omp = PRAGMA_BUF_INIT;
	struct pragma_child c = PRAGMA_CHILD_INIT;
	json_t *req = NULL, *sets = json_array();
	const char *argv[3];
	const char *env[6];
	char *dump = NULL;
	int ret = -1;

	memset(r, 0, sizeof(*r));
	for (int s = 0; s < o->n_sets; s++) {
		json_t *files = json_array();
		struct pragma_buf d = PRAGMA_BUF_INIT;
		char p[4200];

		for (int i = 0; i < o->task->n_inputs; i++) {
			pragma_ref_input_path(&o->sets[s], i, p, sizeof(p));
			json_array_append_new(files, json_string(p));
		}
		pragma_buf_addf(&d, "%s/set%d", o->work_dir, s);
		if (pragma_mkdir_p(d.data, 0755, err) < 0) {
			pragma_buf_release(&d);
			json_decref(files);
			goto out;
		}
		json_array_append_new(sets, json_pack("{s:o, s:s}", "inputs", files, "out_dir", d.data));
		pragma_buf_release(&d);
	}
	req = json_pack("{s:s, s:s, s:O, s:o, s:o, s:i, s:i, s:b, s:I, s:{s:b}}", "kernel", o->kernel_so, "mode",
			o->time_mode ? "time" : "run", "sets", sets,
			"inputs", spec_array(o->task->inputs, o->task->n_inputs, 0),
			"outputs", spec_array(o->task->outputs, o->task->n_outputs, 1),
			"warmup", o->time_mode ? o->warmup : 0, "reps", o->time_mode ? o->reps : 0, "cold", o->cold,
			"flush_bytes", (json_int_t)(o->flush_bytes ? o->flush_bytes : pragma_flush_bytes()),
			"sandbox", "enabled", o->sandbox);
	pragma_buf_addf(&req_path, "%s/request.json", o->work_dir);
	dump = json_dumps(req, JSON_INDENT(1));
	if (pragma_write_file_atomic(req_path.data, dump, strlen(dump), err) < 0)
		goto out;

	if (getenv("PRAGMA_HARNESS") && *getenv("PRAGMA_HARNESS")) {
		pragma_buf_adds(&harness, getenv("PRAGMA_HARNESS"));
	} else if (pragma_exe_dir(&exe) == 0) {
		pragma_buf_addf(&harness, "%s/pragma-harness", exe.data);
#ifdef PRAGMA_BUILD_DIR
		if (!pragma_path_exists(harness.data)) {
			pragma_buf_reset(&harness);
			pragma_buf_addf(&harness, "%s/pragma-harness", PRAGMA_BUILD_DIR);
		}
#endif
	}
	if (!pragma_path_exists(harness.data)) {
		pragma_err_set(err, PRAGMA_E_ENV, "cannot find pragma-harness (looked for %s)", harness.data);
		pragma_err_hint(err, "build it (cmake --build build) or set PRAGMA_HARNESS");
		goto out;
	}
	argv[0] = harness.data;
	argv[1] = req_path.data;
	argv[2] = NULL;
	pragma_buf_addf(&omp, "OMP_NUM_THREADS=%d", o->threads > 0 ? o->threads : pragma_usable_cores());
	env[0] = omp.data;
	env[1] = "OMP_PROC_BIND=false";
	env[2] = "LD_PRELOAD";   /* unset: the baseline's tcmalloc is not the candidate's business */
	env[3] = NULL;
	c.argv = argv;
	c.env = env;
	c.timeout_ms = o->timeout_ms > 0 ? o->timeout_ms : 60000;
	c.limits = o->limits;
	c.out_cap = 1 << 20;
	c.err_cap = 64 << 10;
	if (pragma_child_run(&c, err) < 0)
		goto out;
	r->wall_ms = c.wall_ms;
	r->maxrss_kb = c.usage.ru_maxrss;
	r->user_s = c.usage.ru_utime.tv_sec + c.usage.ru_utime.tv_usec / 1e6;
	r->sys_s = c.usage.ru_stime.tv_sec + c.usage.ru_stime.tv_usec / 1e6;

	json_error_t jerr;
	r->raw = json_loadb(c.out.data, c.out.len, 0, &jerr);
	if (c.timed_out) {
		snprintf(r->status, sizeof(r->status), "timeout");
		snprintf(r->message, sizeof(r->message), "the kernel did not finish within %d ms", c.timeout_ms);
	} else if (c.signaled) {
		char st[64];
		snprintf(r->status, sizeof(r->status), "%s", signal_status(c.term_sig));
		snprintf(r->message, sizeof(r->message), "the harness was %s%s%.300s",
			 pragma_child_status_str(&c, st, sizeof(st)), c.err.len ? "; stderr: " : "", c.err.data);
	} else if (r->raw && json_is_true(json_object_get(r->raw, "ok"))) {
		json_t *t = json_object_get(r->raw, "times_ms"), *v;
		size_t i;
		r->ok = 1;
		snprintf(r->status, sizeof(r->status), "ok");
		r->n_times = (int)json_array_size(t);
		r->times_ms = calloc((size_t)r->n_times + 1, sizeof(double));
		json_array_foreach(t, i, v)
			r->times_ms[i] = json_number_value(v);
		r->calls = (int)json_integer_value(json_object_get(r->raw, "calls"));
	} else if (r->raw) {
		const char *s = json_string_value(json_object_get(r->raw, "status"));
		const char *m = json_string_value(json_object_get(r->raw, "message"));
		snprintf(r->status, sizeof(r->status), "%s", s ? s : "crash");
		snprintf(r->message, sizeof(r->message), "%s", m ? m : "");
	} else {
		char st[64];
		snprintf(r->status, sizeof(r->status), "crash");
		snprintf(r->message, sizeof(r->message), "the harness %s without a result%s%.300s",
			 pragma_child_status_str(&c, st, sizeof(st)), c.err.len ? "; stderr: " : "", c.err.data);
	}
	ret = 0;
out:
	free(dump);
	json_decref(req);
	json_decref(sets);
	pragma_child_release(&c);
	pragma_buf_release(&req_path);
	pragma_buf_release(&harness);
	pragma_buf_release(&exe);
	pragma_buf_release(&omp);
	return ret;
}
