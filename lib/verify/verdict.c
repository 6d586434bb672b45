/* Verdict categories, their hints, and the verdict as JSON. */
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pragma/verify.h"

static const struct {
	const char *name;
	const char *hint;
} vstatus[PRAGMA_V__COUNT] = {
	[PRAGMA_V_OK] = { "ok", "" },
	[PRAGMA_V_INVALID_SOURCE] = { "invalid_source", "send one complete C source file as UTF-8 text" },
	[PRAGMA_V_FORBIDDEN_FLAG] = { "forbidden_flag",
				      "ask only for optimization/code-generation flags (-O*, -f*, -m*, --param) and "
				      "-D tunables" },
	[PRAGMA_V_COMPILE_ERROR] = { "compile_error", "fix the first compiler error; the full log is attached" },
	[PRAGMA_V_LINK_FORBIDDEN] = { "link_forbidden",
				      "use only libc basics, libm, OpenMP, pthreads and intrinsics: no BLAS, files, "
				      "network, processes or dynamic loading" },
	[PRAGMA_V_CRASH] = { "crash", "look for out-of-bounds indexing, unaligned aligned-loads, or stack overuse" },
	[PRAGMA_V_TIMEOUT] = { "timeout", "look for a loop that never ends or a deadlock between threads" },
	[PRAGMA_V_MEMORY_LIMIT] = { "memory_limit", "allocate far less: the task's inputs and outputs plus "
						    "small scratch buffers" },
	[PRAGMA_V_KERNEL_ERROR] = { "kernel_error", "pk_forward must return 0; check the shape/dtype checks it "
						    "makes" },
	[PRAGMA_V_FORBIDDEN_SYSCALL] = { "forbidden_syscall", "no files, processes, network or signals to other "
							      "processes, not even through raw system calls" },
	[PRAGMA_V_MODIFIED_INPUT] = { "modified_input", "inputs are read-only: use a scratch buffer" },
	[PRAGMA_V_WORK_AFTER_RETURN] = { "work_after_return",
					 "join every thread (or end the parallel region) before pk_forward returns" },
	[PRAGMA_V_UNWRITTEN_OUTPUT] = { "unwritten_output",
					"write every element of every output on every call (check loop bounds and "
					"remainders)" },
	[PRAGMA_V_NAN_OUTPUT] = { "nan_output", "look for 0/0, log of negatives, overflow in exp, or reads of "
						"uninitialized memory" },
	[PRAGMA_V_WRONG_OUTPUT] = { "wrong_output", "compare the indexing and the math with the reference at the "
						    "element shown" },
	[PRAGMA_V_OUTPUT_CACHED] = { "output_cached", "compute from the inputs on every call; keep nothing "
						      "between calls" },
	[PRAGMA_V_NONDETERMINISTIC] = { "nondeterministic",
					"look for a data race: shared accumulators, missing reductions or barriers" },
	[PRAGMA_V_TIMED_MISMATCH] = { "timed_mismatch", "behave the same on every call: no state kept between "
							"calls, no shortcuts after the first calls" },
	[PRAGMA_V_IMPOSSIBLE_SPEED] = { "impossible_speed",
					"the measured time is below what moving the data needs: the work happened "
					"outside the timed call or was skipped" },
	[PRAGMA_V_SANDBOX_ERROR] = { "sandbox_error", "pragma could not confine the harness (run pragma doctor)" },
	[PRAGMA_V_NO_DEVICE] = { "no_device", "the kernel built and passed the static checks; run it on a machine "
					      "with an NVIDIA GPU ('pragma doctor' lists what the GPU path needs)" },
};

const char *pragma_vstatus_name(enum pragma_vstatus s)
{
	return s >= 0 && s < PRAGMA_V__COUNT ? vstatus[s].name : "unknown";
}

const char *pragma_vstatus_hint(enum pragma_vstatus s)
{
	return s >= 0 && s < PRAGMA_V__COUNT ? vstatus[s].hint : "";
}

enum pragma_vstatus pragma_vstatus_from_name(const char *name)
{
	for (int i = 0; i < PRAGMA_V__COUNT; i++)
		if (name && !strcmp(name, vstatus[i].name))
			return (enum pragma_vstatus)i;
	/* The harness's own words for the same things. */
	if (name && !strcmp(name, "link_error"))
		return PRAGMA_V_LINK_FORBIDDEN;
	if (name && !strcmp(name, "output_limit"))
		return PRAGMA_V_MEMORY_LIMIT;
	return PRAGMA_V_CRASH;
}

void pragma_verdict_init(struct pragma_verdict *v)
{
	memset(v, 0, sizeof(*v));
	pragma_buf_init(&v->compile_log);
	pragma_buf_init(&v->output);
}

static void timing_release(struct pragma_vtiming *t)
{
	pragma_side_times_release(&t->t);
}

void pragma_verdict_release(struct pragma_verdict *v)
{
	for (int i = 0; i < v->n_flags; i++)
		free(v->flags[i]);
	free(v->flags);
	for (int i = 0; i < v->n_warnings; i++)
		free(v->warnings[i]);
	free(v->warnings);
	pragma_buf_release(&v->compile_log);
	free(v->outs);
	pragma_buf_release(&v->output);
	timing_release(&v->cand);
	timing_release(&v->base);
	json_decref(v->baseline_config);
	memset(v, 0, sizeof(*v));
	pragma_buf_init(&v->compile_log);
	pragma_buf_init(&v->output);
}

/* A JSON string from bytes that came from elsewhere (compiler output, the
 * harness): invalid UTF-8 becomes '?', so the field is never dropped. */
static json_t *text(const char *s, size_t n)
{
	char *c = malloc(n + 1);
	size_t i = 0, o = 0;
	json_t *j;

	while (i < n) {
		unsigned char b = (unsigned char)s[i];
		size_t k = b < 0x80 ? 0 : (b >= 0xc2 && b <= 0xdf) ? 1 : (b >= 0xe0 && b <= 0xef) ? 2 :
			   (b >= 0xf0 && b <= 0xf4) ? 3 : (size_t)-1;
		int good = k != (size_t)-1 && i + k < n && b;
		for (size_t t = 1; good && t <= k; t++)
			good = ((unsigned char)s[i + t] & 0xc0) == 0x80;
		if (good) {
			memcpy(c + o, s + i, k + 1);
			o += k + 1;
			i += k + 1;
		} else {
			c[o++] = '?';
			i++;
		}
	}
	c[o] = 0;
	j = json_stringn(c, o);
	free(c);
	return j ? j : json_string("");
}

static json_t *num(double x)
{
	return isfinite(x) ? json_real(x) : json_null();
}

/* The nominal tolerance (atol, rtol: as before) and each output's rule,
 * the slack it came to and the errors the kernel made. */
static json_t *tolerance_json(const struct pragma_verdict *v)
{
	json_t *o = json_pack("{s:o, s:o}", "atol", num(v->atol), "rtol", num(v->rtol)), *outs = json_array();

	for (int k = 0; k < v->n_outs; k++) {
		const struct pragma_vout *vo = &v->outs[k];
		const struct pragma_tolerance *t = &vo->tol;
		char rule[200];
		json_t *e = json_pack("{s:i, s:s, s:b, s:s}", "output", k, "dtype", pragma_dtype_name(t->dtype), "exact",
				      t->exact, "rule", pragma_tolerance_str(t, vo->rms, rule, sizeof(rule)));
		if (!t->exact) {
			json_object_set_new(e, "rtol", num(t->rtol));
			json_object_set_new(e, "atol", num(t->atol));
			json_object_set_new(e, "atol_scales_with", json_string(t->atol_rms ? "rms" : "none"));
			json_object_set_new(e, "atol_effective", num(vo->atol_eff));
			json_object_set_new(e, "rms", num(vo->rms));
			json_object_set_new(e, "norm_bound", t->norm >= 0 ? num(t->norm) : json_null());
			json_object_set_new(e, "norm_error", num(vo->norm_err));
			json_object_set_new(e, "max_abs_error", num(vo->max_abs_err));
			json_object_set_new(e, "max_rel_error", num(vo->max_rel_err));
		}
		if (vo->audited) {
			json_object_set_new(e, "discriminating", json_boolean(vo->discriminating));
			if (!vo->discriminating)
				json_object_set_new(e, "why", text(vo->why, strlen(vo->why)));
		}
		json_array_append_new(outs, e);
	}
	json_object_set_new(o, "outputs", outs);
	return o;
}

const char *pragma_verdict_tolerance_str(const struct pragma_verdict *v, char *buf, size_t len)
{
	size_t at = 0;

	buf[0] = '\0';
	for (int k = 0; k < v->n_outs && at < len; k++) {
		char rule[200], pre[32] = "";
		if (v->n_outs > 1)
			snprintf(pre, sizeof(pre), "output[%d] ", k);
		at += (size_t)snprintf(buf + at, len - at, "%s%s%s", k ? "; " : "", pre,
				       pragma_tolerance_str(&v->outs[k].tol, v->outs[k].rms, rule, sizeof(rule)));
	}
	if (!v->n_outs)
		snprintf(buf, len, "atol %g, rtol %g", v->atol, v->rtol);
	return buf;
}

json_t *pragma_verdict_json(const struct pragma_verdict *v)
{
	json_t *o = json_object(), *flags = json_array(), *warn = json_array();

	json_object_set_new(o, "status", json_string(pragma_vstatus_name(v->status)));
	json_object_set_new(o, "message", text(v->message, strlen(v->message)));
	if (v->status != PRAGMA_V_OK)
		json_object_set_new(o, "hint", json_string(pragma_vstatus_hint(v->status)));
	json_object_set_new(o, "task", text(v->task, strlen(v->task)));
	json_object_set_new(o, "input_sets", json_integer(v->n_sets));
	json_object_set_new(o, "tolerance", tolerance_json(v));
	json_object_set_new(o, "sandbox",
			    json_pack("{s:b, s:b, s:s, s:b, s:b}", "enabled", v->sandboxed, "seccomp", v->seccomp,
				      "landlock", v->landlock[0] ? v->landlock : "not reached", "compiler_jailed",
				      v->compile_jailed, "confirmed", v->sandboxed && !v->sandbox_unconfirmed));
	if (v->output.len)
		json_object_set_new(o, "output", text(v->output.data, v->output.len > 4096 ? 4096 : v->output.len));
	for (int i = 0; i < v->n_flags; i++)
		json_array_append_new(flags, text(v->flags[i], strlen(v->flags[i])));
	json_object_set_new(o, "compile", json_pack("{s:o, s:o, s:o}", "compiler", text(v->compiler, strlen(v->compiler)),
						   "flags", flags, "log",
						   text(v->compile_log.data, v->compile_log.len > 8000 ? 8000 : v->compile_log.len)));
	if (v->status == PRAGMA_V_OK || v->max_abs_err > 0 || v->norm_err > 0)
		json_object_set_new(o, "error", json_pack("{s:o, s:o, s:o, s:o}", "max_abs", num(v->max_abs_err), "max_rel",
							 num(v->max_rel_err), "norm", num(v->norm_err), "norm_bound",
							 v->norm_bound >= 0 && v->n_outs ? num(v->norm_bound) : json_null()));
	if (v->status == PRAGMA_V_OK && v->n_outs) {
		json_object_set_new(o, "certified", json_boolean(v->certified));
		if (!v->certified)
			json_object_set_new(o, "not_certified", text(v->not_certified, strlen(v->not_certified)));
	}
	json_object_set_new(o, "compile_ms", json_real(v->compile_ms));
	if (v->wall_ms > 0)
		json_object_set_new(o, "resources",
				    json_pack("{s:f, s:f, s:f, s:i}", "wall_ms", v->wall_ms, "user_s", v->user_s, "sys_s",
					      v->sys_s, "maxrss_kb", (int)v->maxrss_kb));
	json_object_set_new(o, "artifacts", json_pack("{s:o, s:o}", "so", text(v->so_path, strlen(v->so_path)), "work_dir",
						     text(v->work_dir, strlen(v->work_dir))));
	if (v->timed && v->cand.stats.count) {
		json_t *ratios = json_array();
		json_t *tm = pragma_stats_json(&v->cand.stats);
		json_object_set_new(tm, "estimate", num(v->cand.estimate_ms));
		json_object_set_new(o, "time_ms", tm);
		if (v->base.stats.count) {
			json_t *bm = pragma_stats_json(&v->base.stats);
			json_object_set_new(bm, "estimate", num(v->base.estimate_ms));
			json_object_set_new(o, "baseline_ms", bm);
		}
		json_object_set_new(o, "baseline", json_pack("{s:s, s:O}", "kind", v->baseline_kind, "config",
							    v->baseline_config ? v->baseline_config : json_null()));
		for (int r = 0; r < v->cand.t.n_rounds && r < v->base.t.n_rounds; r++)
			json_array_append_new(ratios, num(v->cand.t.round_median[r] > 0 ? v->base.t.round_median[r] / v->cand.t.round_median[r] :
										   NAN));
		{
			json_t *cr = json_array(), *br = json_array();
			for (int r = 0; r < v->cand.t.n_rounds; r++)
				json_array_append_new(cr, num(v->cand.t.round_median[r]));
			for (int r = 0; r < v->base.t.n_rounds; r++)
				json_array_append_new(br, num(v->base.t.round_median[r]));
			json_object_set_new(o, "round_medians_ms", json_pack("{s:o, s:o}", "candidate", cr, "baseline", br));
			json_t *rs = json_array();
			for (int r = 0; r < v->cand.t.n_rounds && v->cand.t.round_session; r++)
				json_array_append_new(rs, json_integer(v->cand.t.round_session[r]));
			json_object_set_new(o, "round_sessions", rs);
			cr = json_array();
			br = json_array();
			for (int i = 0; i < v->cand.t.n_times; i++)
				json_array_append_new(cr, num(v->cand.t.times_ms[i]));
			for (int i = 0; i < v->base.t.n_times; i++)
				json_array_append_new(br, num(v->base.t.times_ms[i]));
			json_object_set_new(o, "samples_ms", json_pack("{s:o, s:o}", "candidate", cr, "baseline", br));
		}
		json_object_set_new(o, "interference",
				    json_pack("{s:i, s:f, s:f, s:i, s:i, s:i, s:b}", "retried_rounds", v->retried_rounds,
					      "worst_run_delay_share", v->worst_disturbance, "waited_for_quiet_ms", v->waited_ms,
					      "rounds_made", v->rounds_made, "rounds_clean", v->rounds_clean, "rounds_used",
					      v->rounds_used, "busy", v->busy));
		json_object_set_new(o, "speedup", v->speedup > 0 ? json_real(v->speedup) : json_null());
		json_object_set_new(o, "speedup_spread",
				    json_pack("{s:o, s:o, s:s, s:o}", "lo", num(v->speedup_lo), "hi", num(v->speedup_hi),
					      "method",
					      "95% interval: a bootstrap over sessions, then rounds (the same rounds on both "
					      "sides), of the ratio of the medians of every call kept, stretched for few "
					      "sessions (t with sessions - 1 degrees of freedom)",
					      "rounds", ratios));
		json_object_set_new(o, "gbs", v->gbs > 0 ? json_real(v->gbs) : json_null());
		json_object_set_new(o, "gflops", v->gflops > 0 ? json_real(v->gflops) : json_null());
		json_object_set_new(o, "peaks", json_pack("{s:o, s:o}", "gbs", v->peak_gbs > 0 ? json_real(v->peak_gbs) :
									     json_null(),
							 "gflops", v->peak_gflops > 0 ? json_real(v->peak_gflops) :
											json_null()));
	}
	for (int i = 0; i < v->n_warnings; i++)
		json_array_append_new(warn, text(v->warnings[i], strlen(v->warnings[i])));
	json_object_set_new(o, "warnings", warn);
	return o;
}
