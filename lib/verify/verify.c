/*
 * The Verifier's correctness half (DESIGN 3.4). The harness makes three
 * passes over the input sets in one sandboxed process:
 *   out:  set s on its own buffers                 (correctness)
 *   rep:  set s again                              (two calls must agree)
 *   swap: set s's data in set s-1's buffers        (no caching by address)
 * and this process compares everything with the reference; the harness
 * never sees it. Checks in order of what explains a failure best:
 * harness-detected faults, unwritten outputs, nondeterminism, cached
 * outputs, NaN, wrong values.
 */
#include <errno.h>
#include <math.h>
#include <stdarg.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/stat.h>
#include <time.h>

#include "pragma/fs.h"
#include "pragma/hash.h"
#include "pragma/log.h"
#include "verify/verify_priv.h"

int vreject(struct pragma_verdict *v, enum pragma_vstatus s, const char *fmt, ...)
{
	va_list ap;

	if (v->status != PRAGMA_V_OK)
		return 0;
	v->status = s;
	va_start(ap, fmt);
	vsnprintf(v->message, sizeof(v->message), fmt, ap);
	va_end(ap);
	/* One line: the Conductor and logs take it as such. */
	for (char *p = v->message; *p; p++)
		if (*p == '\n' || *p == '\r')
			*p = ' ';
	return 0;
}

void vwarn(struct pragma_verdict *v, const char *fmt, ...)
{
	char buf[512];
	va_list ap;

	va_start(ap, fmt);
	vsnprintf(buf, sizeof(buf), fmt, ap);
	va_end(ap);
	v->warnings = realloc(v->warnings, sizeof(char *) * (size_t)(v->n_warnings + 1));
	v->warnings[v->n_warnings++] = strdup(buf);
}

int vload_ref(struct vctx *c, int s, int k, struct pragma_tensor *t, struct pragma_err *err)
{
	char p[4200];

	pragma_ref_output_path(&c->sets[s], k, p, sizeof(p));
	return pragma_npy_read(p, (int)c->t->outputs[k].dtype, t, err);
}

int vload_cand(struct vctx *c, int s, const char *name, int k, struct pragma_tensor *t, struct pragma_err *err)
{
	char p[4400];

	snprintf(p, sizeof(p), "%s/set%d/%s_%03d.npy", c->work, s, name, k);
	if (pragma_npy_read(p, (int)c->t->outputs[k].dtype, t, err) < 0 ||
	    t->ndim != c->t->outputs[k].ndim ||
	    memcmp(t->shape, c->t->outputs[k].shape, sizeof(int64_t) * (size_t)t->ndim)) {
		/* The harness wrote them before reporting success: only a kernel
		 * meddling with the harness's files leaves them broken. A
		 * negative verdict (crash) for the caller to turn into one. */
		pragma_tensor_release(t);
		return pragma_err_set(err, PRAGMA_E_NEGATIVE,
				      "the harness reported success but output %d of set %d (%s) is missing or "
				      "malformed: the kernel interfered with the harness",
				      k, s, name);
	}
	return 0;
}

static void fmt_val(char *out, size_t len, double x)
{
	if (x != x)
		snprintf(out, len, "nan");
	else
		snprintf(out, len, "%.6g", x);
}

void vdescribe(char *out, size_t len, int k, int set, const struct pragma_tensor *want, const struct pragma_cmp *cmp,
	       const char *what)
{
	char idx[128], g[32], w[32], nrm[96] = "";

	pragma_index_str(cmp->first_bad >= 0 ? cmp->first_bad : cmp->worst, want->shape, want->ndim, idx, sizeof(idx));
	fmt_val(g, sizeof(g), cmp->first_bad >= 0 ? cmp->got : cmp->worst_got);
	fmt_val(w, sizeof(w), cmp->first_bad >= 0 ? cmp->want : cmp->worst_want);
	if (pragma_dtype_is_float(want->dtype) && isfinite(cmp->norm_err))
		snprintf(nrm, sizeof(nrm), "; norm-wise error %.3g", cmp->norm_err);
	if (cmp->bad && cmp->unwritten == cmp->bad)
		snprintf(out, len,
			 "output[%d] not written%s: %lld of %lld elements still hold the NaN poison on input set %d "
			 "(first at %s)",
			 k, what, (long long)cmp->unwritten, (long long)cmp->n, set, idx);
	else if (cmp->not_bool)
		snprintf(out, len,
			 "output[%d] is bool but holds the byte %s at %s on input set %d%s (expected %s): a bool is 0 or "
			 "1, nothing else; %lld of %lld elements hold other bytes, %lld elements off in all",
			 k, g, idx, set, what, w, (long long)cmp->not_bool, (long long)cmp->n, (long long)cmp->bad);
	else if (cmp->nonfinite)
		snprintf(out, len,
			 "output[%d] has NaN/Inf where the reference is finite%s at %s on input set %d: got %s, "
			 "expected %s; %lld of %lld elements off (%lld non-finite)",
			 k, what, idx, set, g, w, (long long)cmp->bad, (long long)cmp->n, (long long)cmp->nonfinite);
	else if (cmp->bad)
		snprintf(out, len, "output[%d] wrong%s at %s on input set %d: got %s, expected %s; %lld of %lld elements off%s",
			 k, what, idx, set, g, w, (long long)cmp->bad, (long long)cmp->n, nrm);
	else
		snprintf(out, len,
			 "output[%d] wrong%s on input set %d: the norm-wise error ||out - ref|| / ||ref|| is %.3g, over "
			 "its bound, though each element is within atol %.3g + rtol |ref| (closest call at %s: got %s, "
			 "expected %s): the error is spread over the whole output",
			 k, what, set, cmp->norm_err, cmp->atol_eff, idx, g, w);
}

void pragma_verdict_from_run(struct pragma_verdict *v, const struct pragma_run_result *r, const char *when)
{
	enum pragma_vstatus s = pragma_vstatus_from_name(r->status);

	if (!strcmp(r->status, "harness_error")) {
		vreject(v, PRAGMA_V_CRASH, "the harness failed%s: %s", when, r->message);
		return;
	}
	/* A crash or failure right after a failed allocation is the allocation's fault. */
	if (r->alloc_failures && (s == PRAGMA_V_CRASH || s == PRAGMA_V_KERNEL_ERROR))
		vreject(v, PRAGMA_V_MEMORY_LIMIT,
			"an allocation of %.1f MB failed under the address-space limit%s, then: %s",
			r->alloc_largest / 1e6, when, r->message);
	else
		vreject(v, s, "%s%s", *when ? "while timed: " : "", r->message);
}

/* ---------------------------------------------------------------- checks */

static uint64_t thash(const struct pragma_tensor *t)
{
	return pragma_hash64(t->data, t->nbytes, 0x0c0ffee);
}

struct outs {
	uint64_t *ref_h, *out_h;     /* [set * n_out + k] */
};

void vtolerance(const struct vctx *c, int k, struct pragma_tolerance *tol)
{
	pragma_tolerance_resolve(c->t, k, c->o ? c->o->atol : -1, c->o ? c->o->rtol : -1, tol);
}

int vcompare(const struct vctx *c, int k, const struct pragma_tensor *got, const struct pragma_tensor *want,
	     struct pragma_cmp *m)
{
	struct pragma_tolerance tol;

	vtolerance(c, k, &tol);
	return pragma_compare(got, want, &tol, m);
}

/* Would trivial answers pass the check of each output (on input set 0)?
 * A verdict whose check cannot tell is not certified, and says why. */
static int audit_outputs(struct vctx *c, struct pragma_err *err)
{
	struct pragma_verdict *v = c->v;
	size_t at = 0;

	v->certified = 1;
	for (int k = 0; k < c->t->n_outputs; k++) {
		struct pragma_tensor ref = PRAGMA_TENSOR_INIT;
		struct pragma_audit a;
		struct pragma_vout *vo = &v->outs[k];

		if (vload_ref(c, 0, k, &ref, err) < 0)
			return -1;
		if (pragma_tolerance_audit(&ref, &vo->tol, &a, err) < 0) {
			pragma_tensor_release(&ref);
			return -1;
		}
		pragma_tensor_release(&ref);
		vo->audited = 1;
		vo->discriminating = a.discriminating;
		for (int i = 0; i < PRAGMA_TRIVIAL__COUNT; i++) {
			vo->applicable |= (unsigned)a.applicable[i] << i;
			vo->refused |= (unsigned)a.refused[i] << i;
		}
		snprintf(vo->why, sizeof(vo->why), "%s", a.why);
		if (a.discriminating)
			continue;
		v->certified = 0;
		at += (size_t)snprintf(v->not_certified + at, at < sizeof(v->not_certified) ? sizeof(v->not_certified) - at : 0,
				       "%soutput[%d] (%s): %s", at ? "; " : "", k, c->t->outputs[k].name, a.why);
		if (at >= sizeof(v->not_certified))
			at = sizeof(v->not_certified);
	}
	if (!v->certified)
		vwarn(v, "not certified: the check cannot tell a trivial answer from the right one: %s%s%s",
		      v->not_certified, c->t->weak_reason ? "; the task says: " : "",
		      c->t->weak_reason ? c->t->weak_reason : "");
	return 0;
}

/* Compare the three passes with the reference. */
static int check_outputs(struct vctx *c, int have_swap, struct pragma_err *err)
{
	const struct pragma_task *t = c->t;
	struct pragma_verdict *v = c->v;
	int n = c->n_sets, no = t->n_outputs, ret = -1;
	uint64_t *ref_h = calloc((size_t)(n * no) + 1, sizeof(uint64_t));
	uint64_t *out_h = calloc((size_t)(n * no) + 1, sizeof(uint64_t));
	/* Per set and output: within tolerance; holds NaN/Inf or the poison. */
	unsigned char *right = calloc((size_t)(n * no) + 1, 1), *nonfinite = calloc((size_t)(n * no) + 1, 1);
	unsigned char *same_as_prev = calloc((size_t)(n * no) + 1, 1); /* swap pass = the buffers' last answer */
	/* First failure of each kind, as messages. */
	char unwritten[768] = "", nondet[768] = "", nan[768] = "", wrong[768] = "", cached[768] = "";
	char by_address[768] = "";
	int wrong_set = -1, wrong_k = -1;
	double worst_norm = -1;

	free(v->outs);
	v->outs = calloc((size_t)no + 1, sizeof(*v->outs));
	v->n_outs = no;
	for (int k = 0; k < no; k++)
		vtolerance(c, k, &v->outs[k].tol);
	for (int s = 0; s < n; s++)
		for (int k = 0; k < no; k++) {
			struct pragma_tensor ref = PRAGMA_TENSOR_INIT, out = PRAGMA_TENSOR_INIT, rep = PRAGMA_TENSOR_INIT;
			struct pragma_tensor sw = PRAGMA_TENSOR_INIT;
			const struct pragma_tolerance *tol = &v->outs[k].tol;
			struct pragma_vout *vo = &v->outs[k];
			struct pragma_cmp m, d, q;
			int ok = 0, rc;

			if (vload_ref(c, s, k, &ref, err) < 0 || vload_cand(c, s, "out", k, &out, err) < 0 ||
			    vload_cand(c, s, "rep", k, &rep, err) < 0 ||
			    (have_swap && vload_cand(c, s, "swap", k, &sw, err) < 0))
				goto next;
			ref_h[s * no + k] = thash(&ref);
			out_h[s * no + k] = thash(&out);
			rc = pragma_compare(&out, &ref, tol, &m);
			if (rc < 0) {
				pragma_err_set(err, PRAGMA_E_INTERNAL, "output %d of set %d: shape/dtype mismatch", k, s);
				goto next;
			}
			right[s * no + k] = rc == 0;
			nonfinite[s * no + k] = m.nonfinite || m.unwritten;
			if (m.max_abs_err > v->max_abs_err)
				v->max_abs_err = m.max_abs_err;
			if (m.max_rel_err > v->max_rel_err)
				v->max_rel_err = m.max_rel_err;
			vo->max_abs_err = fmax(vo->max_abs_err, m.max_abs_err);
			vo->max_rel_err = fmax(vo->max_rel_err, m.max_rel_err);
			vo->norm_err = fmax(vo->norm_err, m.norm_err);
			if (s == 0) {
				vo->rms = m.rms;
				vo->atol_eff = m.atol_eff;
			}
			/* The verdict's norm-wise error: the output nearest its bound. */
			if (pragma_dtype_is_float(ref.dtype) && !tol->exact) {
				double r = tol->norm > 0 ? m.norm_err / tol->norm : m.norm_err;
				if (r > worst_norm || isnan(r)) {
					worst_norm = r;
					v->norm_err = m.norm_err;
					v->norm_bound = tol->norm;
				}
			}
			if (rc) {
				char *slot = m.bad && m.unwritten == m.bad ? unwritten : m.nonfinite ? nan : wrong;
				if (!*slot)
					vdescribe(slot, 768, k, s, &ref, &m, "");
				if (slot == wrong && wrong_set < 0) {
					wrong_set = s;
					wrong_k = k;
				}
			}
			/* Two calls on identical inputs: the second must agree
			 * with the first within the tolerance. */
			pragma_compare(&rep, &ref, tol, &q);
			if (q.bad && q.unwritten == q.bad && !*unwritten)
				vdescribe(unwritten, sizeof(unwritten), k, s, &ref, &q, " on the second call");
			if (pragma_compare(&rep, &out, tol, &d) == 1 && !*nondet && !(d.bad && d.unwritten == d.bad)) {
				char idx[128];
				int64_t at = d.first_bad >= 0 ? d.first_bad : d.worst;
				pragma_index_str(at, ref.shape, ref.ndim, idx, sizeof(idx));
				snprintf(nondet, sizeof(nondet),
					 "two calls on identical inputs (set %d) disagree: output[%d] at %s was %.6g, "
					 "then %.6g; %lld of %lld elements differ beyond the tolerance (norm-wise %.3g)",
					 s, k, idx, d.first_bad >= 0 ? d.want : d.worst_want,
					 d.first_bad >= 0 ? d.got : d.worst_got, (long long)d.bad, (long long)d.n, d.norm_err);
			}
			if (have_swap) {
				struct pragma_cmp w;
				int rw = pragma_compare(&sw, &ref, tol, &w);
				if (w.bad && w.unwritten == w.bad && !*unwritten)
					vdescribe(unwritten, sizeof(unwritten), k, s, &ref, &w,
						  " when its inputs sat in another set's buffers");
				else if (rw == 1 && !*by_address) {
					/* Same bytes as the earlier answer for those buffers? */
					int prev = (s + n - 1) % n;
					struct pragma_tensor po = PRAGMA_TENSOR_INIT;
					if (vload_cand(c, prev, "out", k, &po, err) < 0)
						goto next;
					/* Decided below, once we know whether that earlier
					 * result was set prev's right answer (not constant
					 * garbage, identical whatever the buffers). */
					if (po.nbytes == sw.nbytes && !memcmp(po.data, sw.data, sw.nbytes))
						same_as_prev[s * no + k] = 1;
					else if (!*wrong) {
						vdescribe(wrong, sizeof(wrong), k, s, &ref, &w,
							  " when its inputs sat in another set's buffers");
					}
					pragma_tensor_release(&po);
				}
			}
			ok = 1;
next:
			pragma_tensor_release(&ref);
			pragma_tensor_release(&out);
			pragma_tensor_release(&rep);
			pragma_tensor_release(&sw);
			if (!ok)
				goto out;
		}

	for (int s = 0; s < n && have_swap && !*by_address; s++)
		for (int k = 0; k < no && !*by_address; k++) {
			int prev = (s + n - 1) % n;
			if (same_as_prev[s * no + k] && right[prev * no + k])
				snprintf(by_address, sizeof(by_address),
					 "with input set %d's data in the buffers that had held set %d, output[%d] came back "
					 "identical to the earlier result for set %d: the kernel returns results cached by "
					 "buffer address",
					 s, prev, k, prev);
		}
	/* Outputs must follow the inputs: two sets whose references differ
	 * cannot share an output, when one of them is that set's right answer.
	 * Identical NaN-filled or constant garbage is wrong, not a cached
	 * result: nan_output and wrong_output say it better. */
	for (int s = 0; s < n && !*cached; s++)
		for (int s2 = 0; s2 < s && !*cached; s2++)
			for (int k = 0; k < no; k++)
				if (out_h[s * no + k] == out_h[s2 * no + k] && ref_h[s * no + k] != ref_h[s2 * no + k] &&
				    !nonfinite[s * no + k] && (right[s * no + k] || right[s2 * no + k])) {
					snprintf(cached, sizeof(cached),
						 "output[%d] for input set %d is identical to the output for set %d, though "
						 "their expected outputs differ: the kernel returns results computed for "
						 "other inputs (cached between calls?)",
						 k, s, s2);
					break;
				}
	/* A wrong output equal to another set's reference is a stale answer. */
	if (!*cached && wrong_set >= 0) {
		struct pragma_tensor out = PRAGMA_TENSOR_INIT;
		if (vload_cand(c, wrong_set, "out", wrong_k, &out, err) < 0)
			goto out;
		for (int s2 = 0; s2 < n && !*cached; s2++) {
			struct pragma_tensor r2 = PRAGMA_TENSOR_INIT;
			struct pragma_cmp m;
			if (s2 == wrong_set || ref_h[s2 * no + wrong_k] == ref_h[wrong_set * no + wrong_k])
				continue;
			if (vload_ref(c, s2, wrong_k, &r2, err) < 0) {
				pragma_tensor_release(&out);
				goto out;
			}
			if (pragma_compare(&out, &r2, &v->outs[wrong_k].tol, &m) == 0)
				snprintf(cached, sizeof(cached),
					 "output[%d] for input set %d matches the expected output of set %d: the kernel "
					 "returns results computed for other inputs (cached between calls?)",
					 wrong_k, wrong_set, s2);
			pragma_tensor_release(&r2);
		}
		pragma_tensor_release(&out);
	}

	if (!*cached && *by_address)
		snprintf(cached, sizeof(cached), "%s", by_address);
	if (*unwritten)
		vreject(v, PRAGMA_V_UNWRITTEN_OUTPUT, "%s", unwritten);
	else if (*nondet)
		vreject(v, PRAGMA_V_NONDETERMINISTIC, "%s (a data race?)", nondet);
	else if (*cached)
		vreject(v, PRAGMA_V_OUTPUT_CACHED, "%s", cached);
	else if (*nan)
		vreject(v, PRAGMA_V_NAN_OUTPUT, "%s", nan);
	else if (*wrong)
		vreject(v, PRAGMA_V_WRONG_OUTPUT, "%s", wrong);
	pragma_debug("verify: outputs compared; auditing the check");
	if (v->status == PRAGMA_V_OK && audit_outputs(c, err) < 0)
		goto out;
	ret = 0;
out:
	free(ref_h);
	free(out_h);
	free(right);
	free(nonfinite);
	free(same_as_prev);
	return ret;
}

/* ------------------------------------------------------------- the flow */

static int read_source(const char *path, const struct pragma_verify_opts *o, struct pragma_verdict *v,
		       struct pragma_buf *src, struct pragma_err *err)
{
	size_t max = o->max_source ? o->max_source : 1 << 20;
	struct stat st;
	char why[256];

	if (stat(path, &st) < 0)
		return pragma_err_set(err, PRAGMA_E_INPUT, "cannot read %s: %s", path, strerror(errno));
	if (!S_ISREG(st.st_mode))
		return pragma_err_set(err, PRAGMA_E_INPUT, "%s is not a regular file", path);
	if ((size_t)st.st_size > max)
		return vreject(v, PRAGMA_V_INVALID_SOURCE, "the kernel source is %.1f MB; the limit is %.1f MB",
			       st.st_size / 1e6, max / 1e6);
	if (pragma_read_file(path, src, max, err) < 0)
		return -1;
	if (pragma_verify_source(src->data, src->len, max, why, sizeof(why)) < 0)
		return vreject(v, PRAGMA_V_INVALID_SOURCE, "%s", why);
	return 0;
}

static int make_work_dir(struct vctx *c, struct pragma_err *err)
{
	struct pragma_buf d = PRAGMA_BUF_INIT, w = PRAGMA_BUF_INIT;
	int ret = -1;

	if (c->o->work_dir) {
		if (pragma_mkdir_p(c->o->work_dir, 0755, err) < 0)
			goto out;
		snprintf(c->work, sizeof(c->work), "%s", c->o->work_dir);
	} else {
		if (pragma_cache_dir(&d, err) < 0)
			goto out;
		pragma_buf_adds(&d, "/verify");
		if (pragma_mkdir_p(d.data, 0755, err) < 0 || pragma_mkdtemp(d.data, "v-", &w, err) < 0)
			goto out;
		snprintf(c->work, sizeof(c->work), "%s", w.data);
	}
	snprintf(c->v->work_dir, sizeof(c->v->work_dir), "%s", c->work);
	ret = 0;
out:
	pragma_buf_release(&d);
	pragma_buf_release(&w);
	return ret;
}

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void take_sandbox(struct pragma_verdict *v, json_t *sb)
{
	const char *ll = json_string_value(json_object_get(sb, "landlock"));

	if (!sb)
		return;
	v->sandboxed = json_is_true(json_object_get(sb, "enabled"));
	v->seccomp = json_is_true(json_object_get(sb, "seccomp"));
	snprintf(v->landlock, sizeof(v->landlock), "%s", ll ? ll : "?");
}

int pragma_verify(const struct pragma_task *t, const char *kernel_path, const struct pragma_verify_opts *opts,
		  struct pragma_verdict *v, struct pragma_err *err)
{
	struct pragma_verify_opts o = opts ? *opts : (struct pragma_verify_opts)PRAGMA_VERIFY_DEFAULTS;
	struct pragma_buf src = PRAGMA_BUF_INIT, so = PRAGMA_BUF_INIT;
	struct pragma_flags flags = PRAGMA_FLAGS_INIT;
	struct pragma_symbols syms = PRAGMA_SYMBOLS_INIT;
	struct pragma_backend_build bo = { 0 };
	struct pragma_run_opts ro = { 0 };
	struct pragma_run_result rr = { 0 };
	struct pragma_run_step *steps = NULL;
	struct pragma_err e2 = PRAGMA_ERR_INIT;
	struct vctx c = { 0 };
	uint64_t seeds[64];
	char ll_why[160];
	int ret = -1, n_steps = 0, xlk = -1;
	const struct pragma_backend *b = pragma_backend_or_default(o.backend);

	double t_start = mono_ms();

	pragma_verdict_init(v);
	c.t = t;
	c.o = &o;
	c.v = v;
	c.b = b;
	c.n_sets = o.n_sets > 0 ? o.n_sets : PRAGMA_DEFAULT_SETS;
	c.atol = o.atol >= 0 ? o.atol : t->atol;
	c.rtol = o.rtol >= 0 ? o.rtol : t->rtol;
	c.threads = o.threads > 0 ? o.threads : pragma_usable_cores();
	snprintf(v->task, sizeof(v->task), "%s", t->name);
	v->n_sets = c.n_sets;
	v->atol = c.atol;
	v->rtol = c.rtol;
	/* Every verdict says what confinement this machine offers, even one
	 * reached before anything ran. */
	v->sandboxed = !o.no_sandbox;
	if (o.no_sandbox)
		snprintf(v->landlock, sizeof(v->landlock), "off (--no-sandbox)");
	else
		pragma_landlock_abi(v->landlock, sizeof(v->landlock));
	if (c.n_sets > 64)
		return pragma_err_set(err, PRAGMA_E_INPUT, "at most 64 input sets");
	/* More threads than cores time the scheduler, not the kernel (and a
	 * thousand threads' stacks blow the harness's memory limit: that is
	 * the configuration's fault, never the kernel's). */
	if (o.threads > pragma_usable_cores()) {
		pragma_err_set(err, PRAGMA_E_INPUT, "%d threads, but this process may use %d cores", o.threads,
			       pragma_usable_cores());
		pragma_err_hint(err, "--threads 1..%d (the default is all of them)", pragma_usable_cores());
		return -1;
	}

	/* 1. The source. */
	if (read_source(kernel_path, &o, v, &src, err) < 0)
		goto out;
	if (v->status)
		goto done;

	/* 2. Flags: the kernel's own "// pragma:flags" lines, then the caller's. */
	if (b->flags(&flags, src.data, src.len, o.flags, c.atol, c.rtol, &e2) < 0) {
		vreject(v, PRAGMA_V_FORBIDDEN_FLAG, "%s", e2.msg);
		goto done;
	}
	for (int i = 0; i < flags.n; i++) {
		v->flags = realloc(v->flags, sizeof(char *) * (size_t)(v->n_flags + 1));
		v->flags[v->n_flags++] = strdup(flags.v[i]);
	}

	/* 3. Compile, jailed. */
	bo.compiler = o.compiler;
	bo.flags = pragma_flags_argv(&flags);
	bo.confine = !o.no_compile_jail;
	snprintf(v->compiler, sizeof(v->compiler), "%s", b->compiler_version(o.compiler));
	v->compile_jailed = bo.confine && pragma_landlock_abi(NULL, 0) > 0;
	/* Builds overlap one another, never a measurement. */
	int blk = pragma_measure_lock(PRAGMA_LOCK_SHARED, "compile a kernel");
	double t_build = mono_ms();
	int built = b->build(kernel_path, &bo, &so, &v->compile_log, &e2);
	pragma_measure_unlock(blk);
	v->compile_ms = mono_ms() - t_build;
	if (built < 0) {
		if (e2.kind != PRAGMA_E_NEGATIVE) {
			*err = e2;
			goto out;
		}
		vreject(v, PRAGMA_V_COMPILE_ERROR, "%s", e2.msg);
		goto done;
	}
	snprintf(v->so_path, sizeof(v->so_path), "%s", so.data);
	pragma_debug("verify: source, flags and build took %.0f ms", mono_ms() - t_start);
	if (o.compile_only)
		goto done;

	/* 4. What it imports, before anything runs. */
	if (b->check_imports(so.data, &syms, &e2) < 0) {
		if (e2.kind != PRAGMA_E_NEGATIVE) {
			*err = e2;
			goto out;
		}
		vreject(v, PRAGMA_V_LINK_FORBIDDEN, "%s", e2.msg);
		goto done;
	}
	/* Constructors run at dlopen, inside the sandbox. Without Landlock
	 * that sandbox still lets files be opened at that point, so refuse
	 * them there (beyond the entries the backend's toolchain makes). */
	if (!o.no_sandbox && pragma_landlock_abi(ll_why, sizeof(ll_why)) == 0 && syms.init_entries > b->init_entries) {
		vreject(v, PRAGMA_V_LINK_FORBIDDEN,
			"the kernel has constructors (%d init entries), and without Landlock (%s) they cannot be "
			"confined; remove __attribute__((constructor))",
			syms.init_entries, ll_why);
		goto done;
	}
	b->preload(&syms, c.preload, 16);
	/* A place to run it, or stop here with what the static checks found
	 * (exit 3, not a rejection). */
	if (b->require(&e2) < 0) {
		vreject(v, PRAGMA_V_NO_DEVICE, "%s", e2.msg);
		goto done;
	}

	/* 5. Reference data. */
	c.sets = calloc((size_t)c.n_sets, sizeof(*c.sets));
	for (int i = 0; i < c.n_sets; i++)
		seeds[i] = pragma_ref_seed(i);
	if (pragma_ref_ensure(t, seeds, c.n_sets, c.sets, err) < 0 || make_work_dir(&c, err) < 0)
		goto out;

	pragma_debug("verify: reference data ready at %.0f ms", mono_ms() - t_start);
	/* 6. The sandboxed run: out, rep, swap passes. */
	steps = calloc((size_t)(3 * c.n_sets), sizeof(*steps));
	for (int s = 0; s < c.n_sets; s++)
		steps[n_steps++] = (struct pragma_run_step){ s, s, "out" };
	for (int s = 0; s < c.n_sets; s++)
		steps[n_steps++] = (struct pragma_run_step){ s, s, "rep" };
	if (c.n_sets > 1)
		for (int s = 0; s < c.n_sets; s++)
			steps[n_steps++] = (struct pragma_run_step){ (s + c.n_sets - 1) % c.n_sets, s, "swap" };
	ro.kernel_so = so.data;
	ro.task = t;
	ro.sets = c.sets;
	ro.n_sets = c.n_sets;
	ro.work_dir = c.work;
	ro.threads = c.threads;
	ro.timeout_ms = o.timeout_ms > 0 ? o.timeout_ms : 60000;
	ro.sandbox = !o.no_sandbox;
	ro.steps = steps;
	ro.n_steps = n_steps;
	ro.settle_us = 2000;
	ro.final_settle_ms = 20;
	ro.preload = c.preload;
	ro.backend = b;
	xlk = pragma_measure_lock(PRAGMA_LOCK_EXCLUSIVE, "verify a kernel");
	if (pragma_run_kernel(&ro, &rr, err) < 0)
		goto out;
	take_sandbox(v, rr.sandbox);
	if (!rr.sandbox && ro.sandbox) {
		/* The harness ended before it reported (a crash, a timeout, a
		 * trapped call): it confines itself before loading the kernel
		 * and stops when it cannot, so a kernel that ran at all ran
		 * under what was asked for. Say that it was asked for. */
		v->seccomp = !ro.no_seccomp;
		v->sandbox_unconfirmed = 1;
	}
	if (!v->landlock[0])
		pragma_landlock_abi(v->landlock, sizeof(v->landlock));
	v->wall_ms = rr.wall_ms;
	v->user_s = rr.user_s;
	v->sys_s = rr.sys_s;
	v->maxrss_kb = rr.maxrss_kb;
	/* What the kernel printed (its stdout and stderr both go to the
	 * harness's stderr), capped: a reviewer may need it. */
	pragma_buf_reset(&v->output);
	pragma_buf_adds(&v->output, rr.log);
	if (rr.log_truncated)
		pragma_buf_adds(&v->output, "\n[... cut]");
	if (!rr.ok) {
		if (!strcmp(rr.status, "harness_error") && rr.calls == 0) {
			/* Before the kernel ever ran: pragma's problem, not the kernel's. */
			pragma_err_set(err, PRAGMA_E_INTERNAL, "the harness failed before calling the kernel: %s", rr.message);
			goto out;
		}
		if (!strcmp(rr.status, "sandbox_error")) {
			pragma_err_set(err, PRAGMA_E_ENV, "the harness could not enter its sandbox: %s", rr.message);
			pragma_err_hint(err, "run 'pragma doctor'; --no-sandbox runs unconfined (for debugging only)");
			goto out;
		}
		pragma_verdict_from_run(v, &rr, "");
		goto done;
	}

	pragma_debug("verify: harness run done at %.0f ms (its wall %.0f ms)", mono_ms() - t_start, rr.wall_ms);
	c.verify_wall_ms = rr.wall_ms;
	/* A forged "ok" (written to the result fd by the kernel) lacks the
	 * harness's own count of calls. */
	if (rr.calls != n_steps) {
		vreject(v, PRAGMA_V_CRASH,
			"the harness reported %d calls where %d were made: the kernel interfered with the harness's "
			"result channel",
			rr.calls, n_steps);
		goto done;
	}
	/* 7. Compare here, where the reference lives. */
	if (check_outputs(&c, c.n_sets > 1, err) < 0) {
		if (err->kind != PRAGMA_E_NEGATIVE)
			goto out;
		vreject(v, PRAGMA_V_CRASH, "%s", err->msg);
		pragma_err_clear(err);
		goto done;
	}
	pragma_debug("verify: comparison done at %.0f ms", mono_ms() - t_start);
	if (v->status)
		goto done;

	/* 8. Timing (eval). */
	if (o.time && verify_time(&c, so.data, err) < 0) {
		if (err->kind != PRAGMA_E_NEGATIVE)
			goto out;
		vreject(v, PRAGMA_V_CRASH, "while timed: %s", err->msg);
		pragma_err_clear(err);
		goto done;
	}
	pragma_debug("verify: all done at %.0f ms", mono_ms() - t_start);
done:
	ret = 0;
	/* A kept work dir holds everything the verdict rests on. */
	if (c.work[0] && (o.keep || o.work_dir)) {
		char p[4200];
		snprintf(p, sizeof(p), "%s/compile.log", c.work);
		pragma_write_file_atomic(p, v->compile_log.data, v->compile_log.len, NULL);
		snprintf(p, sizeof(p), "%s/harness.log", c.work);
		pragma_write_file_atomic(p, v->output.data, v->output.len, NULL);
		snprintf(p, sizeof(p), "%s/verdict.json", c.work);
		json_t *vj = pragma_verdict_json(v);
		char *j = json_dumps(vj, JSON_INDENT(1));
		if (j)
			pragma_write_file_atomic(p, j, strlen(j), NULL);
		free(j);
		json_decref(vj);
	}
out:
	if (xlk >= 0)
		pragma_measure_unlock(xlk);
	if (c.work[0] && !o.keep && !o.work_dir)
		pragma_rm_rf(c.work, NULL);
	if (c.work[0] && !o.keep && !o.work_dir)
		v->work_dir[0] = '\0';
	pragma_run_result_release(&rr);
	pragma_symbols_release(&syms);
	pragma_flags_release(&flags);
	pragma_buf_release(&src);
	pragma_buf_release(&so);
	free(steps);
	free(c.sets);
	return ret;
}
