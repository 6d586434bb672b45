/* The machine record as JSON, and the cache of measured peaks. */
#include <errno.h>
#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/file.h>
#include <time.h>
#include <unistd.h>

#include "machine/machine_priv.h"
#include "pragma/buf.h"
#include "pragma/fs.h"
#include "pragma/log.h"
#include "pragma/timing.h"

json_t *pragma_machine_json(const struct pragma_machine *m)
{
	json_t *o = json_object(), *caches = json_array();

	json_object_set_new(o, "vendor", json_string(m->vendor));
	json_object_set_new(o, "cpu_model", json_string(m->cpu_model));
	json_object_set_new(o, "family", json_integer(m->family));
	json_object_set_new(o, "model", json_integer(m->model));
	json_object_set_new(o, "stepping", json_integer(m->stepping));
	json_object_set_new(o, "cores", json_integer(m->cores));
	json_object_set_new(o, "online_cpus", json_integer(m->online_cpus));
	json_object_set_new(o, "isa", json_string(m->isa));
	json_object_set_new(o, "has_avx2", json_boolean(m->has_avx2));
	json_object_set_new(o, "has_fma", json_boolean(m->has_fma));
	json_object_set_new(o, "has_avx512f", json_boolean(m->has_avx512f));
	for (int i = 0; i < m->n_caches; i++) {
		const struct pragma_cache_level *c = &m->caches[i];

		json_array_append_new(caches, json_pack("{s:i, s:s, s:I, s:i, s:i, s:i}",
			"level", c->level, "type", c->type, "size", (json_int_t)c->size,
			"ways", c->ways, "line", c->line, "shared_cpus", c->shared_cpus));
	}
	json_object_set_new(o, "caches", caches);
	json_object_set_new(o, "l1d_bytes", json_integer((json_int_t)m->l1d_bytes));
	json_object_set_new(o, "l2_bytes", json_integer((json_int_t)m->l2_bytes));
	json_object_set_new(o, "llc_bytes", json_integer((json_int_t)m->llc_bytes));
	json_object_set_new(o, "kernel", json_string(m->kernel));
	json_object_set_new(o, "hypervisor", json_boolean(m->hypervisor));
	json_object_set_new(o, "cpu_mhz", json_real(m->cpu_mhz));
	json_object_set_new(o, "max_mhz", json_real(m->max_mhz));
	json_object_set_new(o, "base_mhz", json_real(m->base_mhz));
	json_object_set_new(o, "measured", json_boolean(m->measured));
	json_object_set_new(o, "measured_at", json_string(m->measured_at));
	json_object_set_new(o, "peak_gflops", json_real(m->peak_gflops));
	json_object_set_new(o, "peak_isa", json_string(m->peak_isa));
	json_object_set_new(o, "peak_gflops_1core", json_real(m->peak_gflops_1core));
	json_object_set_new(o, "bw_read_gbs", json_real(m->bw_read_gbs));
	json_object_set_new(o, "bw_triad_gbs", json_real(m->bw_triad_gbs));
	json_object_set_new(o, "bw_ntcopy_gbs", json_real(m->bw_ntcopy_gbs));
	json_object_set_new(o, "peak_gbs", json_real(m->peak_gbs));
	json_object_set_new(o, "peak_gbs_how", json_string(m->peak_gbs_how));
	json_object_set_new(o, "roof_gbs", json_real(m->roof_gbs));
	json_object_set_new(o, "roof_method", json_string(m->roof_method));
	json_object_set_new(o, "roof_protocol", json_string(m->roof_protocol));
	json_object_set_new(o, "roof_why", json_string(m->roof_why));
	json_t *roofs = json_array();
	for (int i = 0; i < m->n_roofs; i++) {
		const struct pragma_roof_method *r = &m->roofs[i];

		json_array_append_new(roofs, json_pack("{s:s, s:s, s:f, s:f, s:f, s:f, s:i}", "name", r->name, "what",
						       r->what, "bytes", r->bytes, "median_ms", r->median_ms, "min_ms",
						       r->min_ms, "gbs", r->gbs, "calls", r->calls));
	}
	json_object_set_new(o, "roofs", roofs);
	/* Derived, for readers of --json; not read back. */
	const struct pragma_uarch *u = pragma_uarch_lookup(m->vendor, m->family, m->model, m->stepping);
	json_object_set_new(o, "uarch", !u ? json_null() :
		json_pack("{s:s, s:s, s:i, s:i, s:s, s:i, s:s?, s:i, s:s, s:s, s:s, s:s}", "name", u->name, "parts",
			  u->parts, "vector_bits", u->vector_bits, "datapath_bits", u->datapath_bits, "vector_note",
			  u->vector_note, "fma_units", u->fma_units, "fma_note", u->fma_note, "fma_latency",
			  u->fma_latency, "l1_latency", u->l1_latency, "l2_latency", u->l2_latency, "l3_latency",
			  u->l3_latency, "source", u->source));
	return o;
}

/* Field readers that record the first missing or mistyped key. */
struct jreader {
	const json_t *obj;
	const char *bad, *want;
};

static const json_t *jget(struct jreader *r, const json_t *obj, const char *key, int ok_type,
			  const char *want)
{
	const json_t *v = json_object_get(obj, key);

	if (r->bad)
		return NULL;
	if (!v || !ok_type) {
		r->bad = key;
		r->want = want;
		return NULL;
	}
	return v;
}

#define JCHECK(r, obj, key, pred, want) \
	jget(r, obj, key, json_object_get(obj, key) && pred(json_object_get(obj, key)), want)

static void jstr(struct jreader *r, const json_t *obj, const char *key, char *dst, size_t len)
{
	const json_t *v = JCHECK(r, obj, key, json_is_string, "a string");

	if (v)
		snprintf(dst, len, "%s", json_string_value(v));
}

static int jint(struct jreader *r, const json_t *obj, const char *key)
{
	const json_t *v = JCHECK(r, obj, key, json_is_integer, "an integer");
	json_int_t x = v ? json_integer_value(v) : 0;

	if (v && (x < 0 || x > 1 << 30)) {
		r->bad = key;
		r->want = "a small non-negative integer";
		return 0;
	}
	return (int)x;
}

static uint64_t ju64(struct jreader *r, const json_t *obj, const char *key)
{
	const json_t *v = JCHECK(r, obj, key, json_is_integer, "an integer");
	json_int_t x = v ? json_integer_value(v) : 0;

	if (v && x < 0) {
		r->bad = key;
		r->want = "a non-negative integer";
		return 0;
	}
	return (uint64_t)x;
}

static int jbool(struct jreader *r, const json_t *obj, const char *key)
{
	const json_t *v = json_object_get(obj, key);

	if (v && json_is_integer(v))   /* tolerate 0/1 */
		return json_integer_value(v) != 0;
	v = JCHECK(r, obj, key, json_is_boolean, "true or false");
	return v && json_is_true(v);
}

static double jreal(struct jreader *r, const json_t *obj, const char *key)
{
	const json_t *v = JCHECK(r, obj, key, json_is_number, "a number");
	double x = v ? json_number_value(v) : 0;

	if (v && !(isfinite(x) && x >= 0)) {
		r->bad = key;
		r->want = "a finite non-negative number";
		return 0;
	}
	return x;
}

int pragma_machine_from_json(struct pragma_machine *m, const json_t *j, struct pragma_err *err)
{
	struct jreader r = { .obj = j };
	const json_t *caches, *roofs;

	memset(m, 0, sizeof(*m));
	if (!json_is_object(j))
		return pragma_err_set(err, PRAGMA_E_INPUT, "machine record is not a JSON object");
	jstr(&r, j, "vendor", m->vendor, sizeof(m->vendor));
	jstr(&r, j, "cpu_model", m->cpu_model, sizeof(m->cpu_model));
	m->family = jint(&r, j, "family");
	m->model = jint(&r, j, "model");
	m->stepping = jint(&r, j, "stepping");
	m->cores = jint(&r, j, "cores");
	m->online_cpus = jint(&r, j, "online_cpus");
	jstr(&r, j, "isa", m->isa, sizeof(m->isa));
	m->has_avx2 = jbool(&r, j, "has_avx2");
	m->has_fma = jbool(&r, j, "has_fma");
	m->has_avx512f = jbool(&r, j, "has_avx512f");
	caches = JCHECK(&r, j, "caches", json_is_array, "an array");
	for (size_t i = 0; caches && i < json_array_size(caches) && i < PRAGMA_MACHINE_MAX_CACHES; i++) {
		const json_t *c = json_array_get(caches, i);
		struct pragma_cache_level *cl = &m->caches[m->n_caches];

		if (!json_is_object(c)) {
			r.bad = "caches";
			r.want = "an array of objects";
			break;
		}
		cl->level = jint(&r, c, "level");
		jstr(&r, c, "type", cl->type, sizeof(cl->type));
		cl->size = ju64(&r, c, "size");
		cl->ways = jint(&r, c, "ways");
		cl->line = jint(&r, c, "line");
		cl->shared_cpus = jint(&r, c, "shared_cpus");
		m->n_caches++;
	}
	m->l1d_bytes = ju64(&r, j, "l1d_bytes");
	m->l2_bytes = ju64(&r, j, "l2_bytes");
	m->llc_bytes = ju64(&r, j, "llc_bytes");
	jstr(&r, j, "kernel", m->kernel, sizeof(m->kernel));
	m->hypervisor = jbool(&r, j, "hypervisor");
	m->cpu_mhz = jreal(&r, j, "cpu_mhz");
	m->max_mhz = jreal(&r, j, "max_mhz");
	m->base_mhz = jreal(&r, j, "base_mhz");
	m->measured = jbool(&r, j, "measured");
	jstr(&r, j, "measured_at", m->measured_at, sizeof(m->measured_at));
	m->peak_gflops = jreal(&r, j, "peak_gflops");
	jstr(&r, j, "peak_isa", m->peak_isa, sizeof(m->peak_isa));
	m->peak_gflops_1core = jreal(&r, j, "peak_gflops_1core");
	m->bw_read_gbs = jreal(&r, j, "bw_read_gbs");
	m->bw_triad_gbs = jreal(&r, j, "bw_triad_gbs");
	m->bw_ntcopy_gbs = jreal(&r, j, "bw_ntcopy_gbs");
	m->peak_gbs = jreal(&r, j, "peak_gbs");
	jstr(&r, j, "peak_gbs_how", m->peak_gbs_how, sizeof(m->peak_gbs_how));
	m->roof_gbs = jreal(&r, j, "roof_gbs");
	jstr(&r, j, "roof_method", m->roof_method, sizeof(m->roof_method));
	jstr(&r, j, "roof_protocol", m->roof_protocol, sizeof(m->roof_protocol));
	jstr(&r, j, "roof_why", m->roof_why, sizeof(m->roof_why));
	roofs = JCHECK(&r, j, "roofs", json_is_array, "an array");
	for (size_t i = 0; roofs && i < json_array_size(roofs) && i < PRAGMA_MACHINE_MAX_ROOFS; i++) {
		const json_t *x = json_array_get(roofs, i);
		struct pragma_roof_method *rm = &m->roofs[m->n_roofs];

		if (!json_is_object(x)) {
			r.bad = "roofs";
			r.want = "an array of objects";
			break;
		}
		jstr(&r, x, "name", rm->name, sizeof(rm->name));
		jstr(&r, x, "what", rm->what, sizeof(rm->what));
		rm->bytes = jreal(&r, x, "bytes");
		rm->median_ms = jreal(&r, x, "median_ms");
		rm->min_ms = jreal(&r, x, "min_ms");
		rm->gbs = jreal(&r, x, "gbs");
		rm->calls = jint(&r, x, "calls");
		m->n_roofs++;
	}
	if (r.bad)
		return pragma_err_set(err, PRAGMA_E_INPUT, "machine record: \"%s\" is missing or not %s",
				      r.bad, r.want);
	return 0;
}

int pragma_machine_same(const struct pragma_machine *a, const struct pragma_machine *b, char *why,
			size_t why_len)
{
#define DIFF_S(f) if (strcmp(a->f, b->f)) { snprintf(why, why_len, #f " '%s' is now '%s'", b->f, a->f); return 0; }
#define DIFF_I(f) if (a->f != b->f) { snprintf(why, why_len, #f " %d is now %d", b->f, a->f); return 0; }
	DIFF_S(vendor)
	DIFF_S(cpu_model)
	DIFF_I(family)
	DIFF_I(model)
	DIFF_I(stepping)
	DIFF_I(cores)
	DIFF_S(kernel)
	if (strcmp(a->isa, b->isa)) {
		snprintf(why, why_len, "the ISA flags changed");
		return 0;
	}
#undef DIFF_S
#undef DIFF_I
	if (why_len)
		why[0] = '\0';
	return 1;
}

/* Peaks that could serve as a roofline: measured, positive, finite. */
static int peaks_sane(const struct pragma_machine *c)
{
	return c->measured && c->peak_gflops > 0 && c->peak_gflops_1core > 0 && c->peak_gbs > 0 &&
	       isfinite(c->peak_gflops) && isfinite(c->peak_gbs) && c->measured_at[0];
}

static void take_measured(struct pragma_machine *m, const struct pragma_machine *c)
{
	m->measured = 1;
	memcpy(m->measured_at, c->measured_at, sizeof(m->measured_at));
	m->peak_gflops = c->peak_gflops;
	memcpy(m->peak_isa, c->peak_isa, sizeof(m->peak_isa));
	m->peak_gflops_1core = c->peak_gflops_1core;
	m->bw_read_gbs = c->bw_read_gbs;
	m->bw_triad_gbs = c->bw_triad_gbs;
	m->bw_ntcopy_gbs = c->bw_ntcopy_gbs;
	m->peak_gbs = c->peak_gbs;
	memcpy(m->peak_gbs_how, c->peak_gbs_how, sizeof(m->peak_gbs_how));
	memcpy(m->roofs, c->roofs, sizeof(m->roofs));
	m->n_roofs = c->n_roofs;
	m->roof_gbs = c->roof_gbs;
	memcpy(m->roof_method, c->roof_method, sizeof(m->roof_method));
	memcpy(m->roof_protocol, c->roof_protocol, sizeof(m->roof_protocol));
	memcpy(m->roof_why, c->roof_why, sizeof(m->roof_why));
}

/* What an earlier record of this same machine lends a new measurement:
 * its bandwidth peak, whatever its format, and (same format only: the
 * protocol may have changed) its protocol roofs.
 *
 * Both are "best ever" figures. peak_gbs only ever rises (DESIGN 3.6: a peak
 * set too low flags honest kernels as impossible). A roof is the best a
 * streaming kernel reached under the protocol: on a shared machine a
 * measurement taken while others run reads low, and keeping each method's
 * best over measurements lets 'pragma machine --measure' at a quiet moment
 * raise it, never lower it. */
struct earlier {
	double peak_gbs;
	char when[32];
	struct pragma_roof_method roofs[PRAGMA_MACHINE_MAX_ROOFS];
	int n_roofs;
};

static void earlier_read(const struct pragma_machine *m, const char *path, struct earlier *e)
{
	struct pragma_buf data = PRAGMA_BUF_INIT;
	struct pragma_machine old;
	json_t *j = NULL, *v;
	json_error_t je;
	char why[256];

	memset(e, 0, sizeof(*e));
	memset(&old, 0, sizeof(old));
	if (!path || pragma_read_file(path, &data, 1 << 20, NULL) < 0)
		goto out;
	j = json_loadb(data.data, data.len, 0, &je);
	if (!json_is_object(j) || !json_is_true(json_object_get(j, "measured")))
		goto out;
	/* Only the identity fields: older formats lack the newer ones. */
	snprintf(old.vendor, sizeof(old.vendor), "%s", json_string_value(json_object_get(j, "vendor")) ?: "");
	snprintf(old.cpu_model, sizeof(old.cpu_model), "%s", json_string_value(json_object_get(j, "cpu_model")) ?: "");
	snprintf(old.kernel, sizeof(old.kernel), "%s", json_string_value(json_object_get(j, "kernel")) ?: "");
	snprintf(old.isa, sizeof(old.isa), "%s", json_string_value(json_object_get(j, "isa")) ?: "");
	old.family = (int)json_integer_value(json_object_get(j, "family"));
	old.model = (int)json_integer_value(json_object_get(j, "model"));
	old.stepping = (int)json_integer_value(json_object_get(j, "stepping"));
	old.cores = (int)json_integer_value(json_object_get(j, "cores"));
	if (!pragma_machine_same(m, &old, why, sizeof(why)))
		goto out;
	v = json_object_get(j, "peak_gbs");
	if (json_is_number(v) && isfinite(json_number_value(v)) && json_number_value(v) > 0) {
		e->peak_gbs = json_number_value(v);
		snprintf(e->when, sizeof(e->when), "%s", json_string_value(json_object_get(j, "measured_at")) ?: "?");
	}
	if (json_integer_value(json_object_get(j, "format")) == PRAGMA_MACHINE_CACHE_FORMAT &&
	    pragma_machine_from_json(&old, j, NULL) == 0) {
		memcpy(e->roofs, old.roofs, sizeof(e->roofs));
		e->n_roofs = old.n_roofs;
	}
out:
	json_decref(j);
	pragma_buf_release(&data);
}

static void earlier_apply(struct pragma_machine *m, const struct earlier *e)
{
	int kept = 0;

	if (e->peak_gbs > m->peak_gbs) {
		pragma_debug("bandwidth peak %.1f GB/s now, %.1f GB/s measured %s: the higher one is kept", m->peak_gbs,
			     e->peak_gbs, e->when);
		m->peak_gbs = e->peak_gbs;
		snprintf(m->peak_gbs_how, sizeof(m->peak_gbs_how),
			 "an earlier measurement of this machine (%s); the highest is kept", e->when);
	}
	if (!m->n_roofs)   /* not measured now: an old roof with an old why would mislead */
		return;
	for (int i = 0; i < m->n_roofs; i++)
		for (int k = 0; k < e->n_roofs; k++)
			if (!strcmp(m->roofs[i].name, e->roofs[k].name) && e->roofs[k].gbs > m->roofs[i].gbs) {
				pragma_debug("roof %s: %.1f GB/s now, %.1f earlier: the best is kept", m->roofs[i].name,
					     m->roofs[i].gbs, e->roofs[k].gbs);
				m->roofs[i] = e->roofs[k];
				kept = 1;
			}
	if (!kept)
		return;
	m->roof_gbs = 0;
	for (int i = 0; i < m->n_roofs; i++)
		if (m->roofs[i].gbs > m->roof_gbs) {
			m->roof_gbs = m->roofs[i].gbs;
			snprintf(m->roof_method, sizeof(m->roof_method), "%s", m->roofs[i].name);
		}
	size_t n = strlen(m->roof_protocol);
	snprintf(m->roof_protocol + n, sizeof(m->roof_protocol) - n, "; each kernel's best over this and earlier "
		 "measurements");
	if (m->roof_gbs > m->peak_gbs) {
		m->peak_gbs = m->roof_gbs;
		snprintf(m->peak_gbs_how, sizeof(m->peak_gbs_how), "the %s roof kernel under the timing protocol",
			 m->roof_method);
	}
}

/* 1 when the cache file held peaks for this machine (now copied into m). A
 * missing or stale file is routine (info); a corrupt one gets a warning.
 * quiet: the second look, after taking the lock, says nothing again. */
static int cache_try(struct pragma_machine *m, const char *path, int quiet)
{
	struct pragma_buf data = PRAGMA_BUF_INIT;
	struct pragma_err e = PRAGMA_ERR_INIT;
	struct pragma_machine cached;
	json_t *j = NULL, *fmt;
	json_error_t je;
	char why[256];
	int used = 0;

	if (!pragma_path_exists(path)) {
		pragma_debug("no machine cache at %s yet", path);
		goto out;
	}
	if (pragma_read_file(path, &data, 1 << 20, &e) < 0) {
		if (!quiet)
			pragma_warn("ignoring the machine cache: %s; re-measuring", e.msg);
		goto out;
	}
	j = json_loadb(data.data, data.len, 0, &je);
	if (!j) {
		if (!quiet)
			pragma_warn("ignoring corrupt machine cache %s (line %d: %s); re-measuring", path,
				    je.line, je.text);
		goto out;
	}
	fmt = json_object_get(j, "format");
	if (json_is_integer(fmt) && json_integer_value(fmt) != PRAGMA_MACHINE_CACHE_FORMAT) {
		if (!quiet)
			pragma_info("machine cache %s was written by another pragma version; re-measuring", path);
		goto out;
	}
	if (!json_is_integer(fmt) || pragma_machine_from_json(&cached, j, &e) < 0 || !peaks_sane(&cached)) {
		if (!quiet)
			pragma_warn("ignoring corrupt machine cache %s (%s); re-measuring", path,
				    !json_is_integer(fmt) ? "no \"format\" field" :
				    e.msg[0] ? e.msg : "no measured peaks");
		goto out;
	}
	if (!pragma_machine_same(m, &cached, why, sizeof(why))) {
		if (!quiet)
			pragma_info("the machine changed since %s was measured (%s); re-measuring", path, why);
		goto out;
	}
	take_measured(m, &cached);
	used = 1;
out:
	json_decref(j);
	pragma_buf_release(&data);
	return used;
}

static void cache_save(const struct pragma_machine *m, const char *path)
{
	struct pragma_err e = PRAGMA_ERR_INIT;
	json_t *j = pragma_machine_json(m);
	char *s;

	json_object_set_new(j, "format", json_integer(PRAGMA_MACHINE_CACHE_FORMAT));
	s = json_dumps(j, JSON_INDENT(2) | JSON_PRESERVE_ORDER);   /* full precision: exact round trip */
	json_decref(j);
	if (!s) {
		pragma_warn("cannot serialize the machine record; %s not written", path);
		return;
	}
	struct pragma_buf out = PRAGMA_BUF_INIT;
	pragma_buf_adds(&out, s);
	pragma_buf_addch(&out, '\n');
	free(s);
	if (pragma_write_file_atomic(path, out.data, out.len, &e) < 0)
		pragma_warn("cannot save the measured peaks: %s (they will be measured again next time)", e.msg);
	pragma_buf_release(&out);
}

/* Two pragma processes measuring at once would each see half the machine:
 * take <cache>.lock while measuring. Waits up to a minute, then measures
 * anyway. Returns the locked fd, or -1. */
static int cache_lock(const char *path)
{
	struct pragma_buf lp = PRAGMA_BUF_INIT;
	int fd;

	pragma_buf_addf(&lp, "%s.lock", path);
	fd = open(lp.data, O_RDWR | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		pragma_debug("cannot open %s: %s; measuring without the lock", lp.data, strerror(errno));
		goto out;
	}
	for (int i = 0; flock(fd, LOCK_EX | LOCK_NB) < 0; i++) {
		if ((errno != EWOULDBLOCK && errno != EINTR) || i >= 600) {
			pragma_debug("cannot lock %s: %s; measuring anyway", lp.data, strerror(errno));
			close(fd);
			fd = -1;
			goto out;
		}
		if (i == 0)
			pragma_info("another pragma is measuring this machine; waiting for it");
		usleep(100 * 1000);
	}
out:
	pragma_buf_release(&lp);
	return fd;
}

int pragma_machine_load_at(struct pragma_machine *m, const char *root, const char *cache_path,
			   int remeasure, pragma_machine_measure_fn measure, struct pragma_err *err)
{
	int lock_fd = -1, ret = -1;

	if (pragma_machine_detect_at(m, root, err) < 0)
		return -1;
	if (cache_path && !remeasure && cache_try(m, cache_path, 0))
		return 0;
	if (cache_path)
		lock_fd = cache_lock(cache_path);
	/* Whoever held the lock may just have written what we need. */
	if (cache_path && !remeasure && cache_try(m, cache_path, 1)) {
		ret = 0;
		goto out;
	}
	struct earlier before;
	earlier_read(m, cache_path, &before);

	pragma_info("measuring peak FLOP/s and memory bandwidth (some seconds)");
	/* The peaks are measurements like any other (DESIGN 3.6): with another
	 * pragma process timing a kernel beside them, the roof kernels read
	 * low while the candidates, timed under this lock, do not, and "% of
	 * roof" then passes 100%. */
	int lk = pragma_measure_lock(PRAGMA_LOCK_EXCLUSIVE, "measure the machine's peaks");
	int mrc = measure(m, err);
	pragma_measure_unlock(lk);
	if (mrc < 0)
		goto out;
	earlier_apply(m, &before);
	if (cache_path)
		cache_save(m, cache_path);
	ret = 0;
out:
	if (lock_fd >= 0)
		close(lock_fd);   /* releases the flock */
	return ret;
}

int pragma_machine_load(struct pragma_machine *m, int remeasure, struct pragma_err *err)
{
	struct pragma_buf dir = PRAGMA_BUF_INIT;
	struct pragma_err e = PRAGMA_ERR_INIT;
	const char *path = NULL;
	int ret;

	if (pragma_cache_dir(&dir, &e) == 0) {
		pragma_buf_adds(&dir, "/machine.json");
		path = dir.data;
	} else {
		pragma_warn("no cache for the machine's peaks (%s); measuring them now", e.msg);
	}
	ret = pragma_machine_load_at(m, NULL, path, remeasure, pragma_machine_measure, err);
	pragma_buf_release(&dir);
	return ret;
}

int pragma_machine_cached(struct pragma_machine *m, struct pragma_err *err)
{
	struct pragma_buf dir = PRAGMA_BUF_INIT;
	int ret = -1;

	if (pragma_cache_dir(&dir, err) < 0 || pragma_machine_detect(m, err) < 0)
		goto out;
	pragma_buf_adds(&dir, "/machine.json");
	if (!cache_try(m, dir.data, 1)) {
		pragma_err_set(err, PRAGMA_E_ENV, "the machine's peaks are not measured yet");
		pragma_err_hint(err, "run 'pragma machine'");
		goto out;
	}
	ret = 0;
out:
	pragma_buf_release(&dir);
	return ret;
}
