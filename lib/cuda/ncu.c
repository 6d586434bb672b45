/*
 * Nsight Compute's raw CSV page (`ncu --csv --page raw --metrics ...`) and
 * the gpu.* metrics made from it.
 *
 * The page is one table: a header row of identity columns ("ID", "Process
 * ID", "Process Name", "Host Name", "Kernel Name", "Context", "Stream",
 * "Block Size", "Grid Size", "Device", "CC") followed by one column per
 * metric, then a row of units (empty for the identity columns), then one
 * row per profiled kernel launch. Every cell is quoted; numbers may carry
 * thousands separators ("1,215,000,000.00"); a metric the GPU cannot
 * collect reads "n/a". Around the table ncu prints its own lines
 * (==PROF==, ==WARNING==, ==ERROR==) and, without --log-file, the
 * program's output; a kernel whose metrics need several replay passes is
 * announced as `==PROF== Profiling "k" - 0: 0%....50%....100% - 9 passes`.
 */
#include <ctype.h>
#include <dirent.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cuda/cuda_int.h"
#include "pragma/cuda.h"
#include "pragma/fs.h"
#include "pragma/proc.h"

/* ------------------------------------------------------------ CSV lines */

#define MAX_FIELDS 1024

/* Split one CSV record into fields (malloc'ed strings). Quoted fields may
 * hold commas and doubled quotes. Returns the number of fields, -1 when a
 * quote is not closed. */
static int csv_split(const char *line, char ***out)
{
	char **f = NULL;
	int n = 0;
	const char *p = line;

	for (;;) {
		char buf[4096];
		size_t k = 0;

		if (n == MAX_FIELDS)
			break;
		if (*p == '"') {
			p++;
			for (;;) {
				if (!*p) {
					for (int i = 0; i < n; i++)
						free(f[i]);
					free(f);
					*out = NULL;
					return -1;
				}
				if (*p == '"' && p[1] == '"') {
					if (k + 1 < sizeof(buf))
						buf[k++] = '"';
					p += 2;
				} else if (*p == '"') {
					p++;
					break;
				} else {
					if (k + 1 < sizeof(buf))
						buf[k++] = *p;
					p++;
				}
			}
			while (*p && *p != ',')
				p++; /* junk after the closing quote */
		} else {
			while (*p && *p != ',' && *p != '\r' && *p != '\n') {
				if (k + 1 < sizeof(buf))
					buf[k++] = *p;
				p++;
			}
		}
		buf[k] = '\0';
		f = realloc(f, sizeof(char *) * (size_t)(n + 1));
		if (!f)
			abort();
		f[n++] = strdup(buf);
		if (*p != ',')
			break;
		p++;
	}
	*out = f;
	return n;
}

static void fields_free(char **f, int n)
{
	for (int i = 0; i < n; i++)
		free(f[i]);
	free(f);
}

/* ---------------------------------------------------------- values/units */

/* "1,215,000,000.00" -> 1215000000; NaN for "n/a" and other words. */
static double number(const char *s)
{
	char buf[128];
	size_t k = 0;
	char *end;
	double v;

	while (isspace((unsigned char)*s))
		s++;
	for (; *s && k + 1 < sizeof(buf); s++)
		if (*s != ',')
			buf[k++] = *s;
	while (k && isspace((unsigned char)buf[k - 1]))
		k--;
	buf[k] = '\0';
	if (!k)
		return NAN;
	v = strtod(buf, &end);
	return *end ? NAN : v;
}

/* Factor to base units: time in ns, sizes in bytes, frequencies in Hz,
 * counts as counts. SI prefixes (ncu prints Kbyte = 1000 bytes). */
static double unit_scale(const char *u)
{
	static const struct {
		const char *unit;
		double f;
	} times[] = { { "nsecond", 1 }, { "ns", 1 }, { "usecond", 1e3 }, { "us", 1e3 }, { "msecond", 1e6 },
		      { "ms", 1e6 }, { "second", 1e9 }, { "s", 1e9 } };
	char base[32];
	const char *slash = strchr(u, '/');
	size_t n = slash ? (size_t)(slash - u) : strlen(u);

	if (n >= sizeof(base))
		return 1;
	memcpy(base, u, n);
	base[n] = '\0';
	/* Rates per second keep their numerator's prefix (Gbyte/second). */
	if (!slash || strcmp(slash, "/second"))
		for (size_t i = 0; i < sizeof(times) / sizeof(times[0]); i++)
			if (!strcmp(base, times[i].unit))
				return times[i].f;
	if (n > 1 && strchr("KMGT", base[0]) && islower((unsigned char)base[1])) {
		switch (base[0]) {
		case 'K': return 1e3;
		case 'M': return 1e6;
		case 'G': return 1e9;
		case 'T': return 1e12;
		}
	}
	return 1;
}

/* ---------------------------------------------------------------- parse */

static const char *const identity[] = { "ID", "Process ID", "Process Name", "Host Name", "Kernel Name",
					"Kernel Time", "Context", "Stream", "Block Size", "Grid Size", "Device", "CC",
					"Section Name", NULL };

static int is_identity(const char *h)
{
	for (int i = 0; identity[i]; i++)
		if (!strcmp(h, identity[i]))
			return 1;
	return 0;
}

static void add_warning(struct pragma_ncu_result *r, const char *w)
{
	r->warnings = realloc(r->warnings, sizeof(char *) * (size_t)(r->n_warnings + 1));
	if (!r->warnings)
		abort();
	r->warnings[r->n_warnings++] = strdup(w);
}

static void tool_line(struct pragma_ncu_result *r, const char *line)
{
	const char *msg;

	if (!strncmp(line, "==ERROR==", 9)) {
		msg = line + 9;
		while (*msg == ' ')
			msg++;
		if (strstr(msg, "ERR_NVGPUCTRPERM"))
			r->perm_error = 1;
		if (!r->error[0] || (r->perm_error && !strstr(r->error, "ERR_NVGPUCTRPERM")))
			snprintf(r->error, sizeof(r->error), "%s", msg);
	} else if (!strncmp(line, "==WARNING==", 11)) {
		msg = line + 11;
		while (*msg == ' ')
			msg++;
		if (strstr(msg, "No kernels were profiled"))
			r->no_kernels = 1;
		add_warning(r, msg);
	} else if (!strncmp(line, "==PROF==", 8)) {
		const char *pp = strstr(line, " passes");
		if (pp) {
			const char *d = pp;
			while (d > line && isdigit((unsigned char)d[-1]))
				d--;
			if (d < pp && atoi(d) > r->passes)
				r->passes = atoi(d);
		}
	}
}

int pragma_ncu_parse(const char *text, struct pragma_ncu_result *r, struct pragma_err *err)
{
	char **hdr = NULL, **units = NULL;
	int n_hdr = 0, n_units = 0, ret = -1, lineno = 0;
	const char *p = text;

	memset(r, 0, sizeof(*r));
	while (p && *p) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p) : strlen(p);
		char *line = strndup(p, len);
		char **f = NULL;
		int n;

		p = eol ? eol + 1 : NULL;
		lineno++;
		if (!line)
			abort();
		if (len && line[len - 1] == '\r')
			line[len - 1] = '\0';
		if (!strncmp(line, "==", 2)) {
			tool_line(r, line);
			free(line);
			continue;
		}
		if (line[0] != '"') {
			free(line); /* the program's own output */
			continue;
		}
		n = csv_split(line, &f);
		free(line);
		if (n < 0) {
			pragma_err_set(err, PRAGMA_E_INPUT, "ncu CSV line %d: unterminated quote", lineno);
			goto out;
		}
		if (n >= 2 && !strcmp(f[0], "ID") && !strcmp(f[1], "Process ID")) {
			/* A (new) table. */
			fields_free(hdr, n_hdr);
			fields_free(units, n_units);
			units = NULL;
			n_units = 0;
			hdr = f;
			n_hdr = n;
			continue;
		}
		if (!hdr) {
			fields_free(f, n);
			continue;
		}
		if (!f[0][0] && !units) {
			units = f;
			n_units = n;
			continue;
		}
		if (!isdigit((unsigned char)f[0][0])) {
			fields_free(f, n);
			continue;
		}
		if (n != n_hdr) {
			pragma_err_set(err, PRAGMA_E_INPUT, "ncu CSV line %d: %d fields, the header has %d", lineno, n,
				       n_hdr);
			fields_free(f, n);
			goto out;
		}
		r->l = realloc(r->l, sizeof(*r->l) * (size_t)(r->n + 1));
		if (!r->l)
			abort();
		struct pragma_ncu_launch *L = &r->l[r->n++];
		memset(L, 0, sizeof(*L));
		L->v = calloc((size_t)n + 1, sizeof(*L->v));
		if (!L->v)
			abort();
		for (int i = 0; i < n; i++) {
			const char *h = hdr[i];
			if (!strcmp(h, "ID"))
				L->id = atoi(f[i]);
			else if (!strcmp(h, "Process ID"))
				L->pid = atoi(f[i]);
			else if (!strcmp(h, "Kernel Name"))
				snprintf(L->kernel, sizeof(L->kernel), "%s", f[i]);
			else if (!strcmp(h, "Block Size"))
				snprintf(L->block, sizeof(L->block), "%s", f[i]);
			else if (!strcmp(h, "Grid Size"))
				snprintf(L->grid, sizeof(L->grid), "%s", f[i]);
			else if (!strcmp(h, "Device"))
				L->device = atoi(f[i]);
			else if (!strcmp(h, "CC"))
				snprintf(L->cc, sizeof(L->cc), "%s", f[i]);
			else if (!is_identity(h)) {
				struct pragma_ncu_value *v = &L->v[L->n++];
				const char *u = i < n_units ? units[i] : "";
				snprintf(v->name, sizeof(v->name), "%s", h);
				snprintf(v->unit, sizeof(v->unit), "%s", u);
				snprintf(v->text, sizeof(v->text), "%s", f[i]);
				v->value = number(f[i]);
				if (!isnan(v->value))
					v->value *= unit_scale(u);
			}
		}
		fields_free(f, n);
	}
	ret = 0;
out:
	fields_free(hdr, n_hdr);
	fields_free(units, n_units);
	if (ret < 0)
		pragma_ncu_release(r);
	return ret;
}

void pragma_ncu_release(struct pragma_ncu_result *r)
{
	for (int i = 0; i < r->n; i++)
		free(r->l[i].v);
	free(r->l);
	for (int i = 0; i < r->n_warnings; i++)
		free(r->warnings[i]);
	free(r->warnings);
	memset(r, 0, sizeof(*r));
}

int pragma_ncu_get(const struct pragma_ncu_launch *l, const char *name, double *v)
{
	for (int i = 0; i < l->n; i++)
		if (!strcmp(l->v[i].name, name)) {
			if (isnan(l->v[i].value))
				return 0;
			*v = l->v[i].value;
			return 1;
		}
	return 0;
}

/* ------------------------------------------------------- metric mapping */

#define DURATION "gpu__time_duration.sum"
#define OCC "sm__warps_active.avg.pct_of_peak_sustained_active"
#define OCC_THEO "sm__maximum_warps_per_active_cycle_pct"
#define REGS "launch__registers_per_thread"
#define SMEM_STATIC "launch__shared_mem_per_block_static"
#define SMEM_DYN "launch__shared_mem_per_block_dynamic"
#define TENSOR "sm__pipe_tensor_cycles_active.avg.pct_of_peak_sustained_active"
#define DRAM_PCT "dram__throughput.avg.pct_of_peak_sustained_elapsed"
#define SM_PCT "sm__throughput.avg.pct_of_peak_sustained_elapsed"
#define L1_HIT "l1tex__t_sector_hit_rate.pct"
#define L2_HIT "lts__t_sector_hit_rate.pct"
#define THREADS_PER_INST "smsp__thread_inst_executed_per_inst_executed.ratio"
#define DRAM_BYTES "dram__bytes.sum"
#define BLOCK "launch__block_size"
#define GRID "launch__grid_size"
#define WAVES "launch__waves_per_multiprocessor"
#define LD_SECTORS "l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum"
#define LD_REQS "l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum"
#define ST_SECTORS "l1tex__t_sectors_pipe_lsu_mem_global_op_st.sum"
#define ST_REQS "l1tex__t_requests_pipe_lsu_mem_global_op_st.sum"
#define BANK_LD "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum"
#define BANK_ST "l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum"
#define STALL_PRE "smsp__average_warps_issue_stalled_"
#define STALL_POST "_per_issue_active.ratio"
#define PCSAMP_PRE "smsp__pcsamp_warps_issue_stalled_"

/* Stall reasons with a gpu.stall_<reason>_pct name (the registry's), in
 * the Warp State Statistics section's terms. */
static const char *const stall_reasons[] = { "long_scoreboard", "short_scoreboard", "barrier", "mio_throttle",
					     "lg_throttle", "math_pipe_throttle", "wait", "not_selected",
					     "no_instruction", "membar", "branch_resolving", "tex_throttle", NULL };
/* Collected too, so the shares add up; not named on their own. */
static const char *const stall_other[] = { "dispatch_stall", "drain", "imc_miss", "sleeping", "selected", "misc",
					   NULL };

static const char *const *defaults_list(void)
{
	static const char *list[64];
	static int built;
	static char stall_names[32][96];

	if (!built) {
		int n = 0, s = 0;
		const char *base[] = { DURATION, OCC, OCC_THEO, REGS, SMEM_STATIC, SMEM_DYN, TENSOR, DRAM_PCT, SM_PCT,
				       L1_HIT, L2_HIT, THREADS_PER_INST, DRAM_BYTES, BLOCK, GRID, WAVES, LD_SECTORS,
				       LD_REQS, ST_SECTORS, ST_REQS, BANK_LD, BANK_ST, NULL };
		for (int i = 0; base[i]; i++)
			list[n++] = base[i];
		for (int i = 0; stall_reasons[i]; i++, s++) {
			snprintf(stall_names[s], sizeof(stall_names[s]), STALL_PRE "%s" STALL_POST, stall_reasons[i]);
			list[n++] = stall_names[s];
		}
		for (int i = 0; stall_other[i]; i++, s++) {
			snprintf(stall_names[s], sizeof(stall_names[s]), STALL_PRE "%s" STALL_POST, stall_other[i]);
			list[n++] = stall_names[s];
		}
		list[n] = NULL;
		built = 1;
	}
	return list;
}

const char *const *pragma_ncu_default_metrics(void)
{
	return defaults_list();
}

static const struct {
	const char *name;
	const char *raw[3];
} mapping[] = {
	{ "gpu.duration_us", { DURATION } },
	{ "gpu.achieved_occupancy", { OCC } },
	{ "gpu.theoretical_occupancy", { OCC_THEO } },
	{ "gpu.registers_per_thread", { REGS } },
	{ "gpu.shared_mem_per_block", { SMEM_STATIC, SMEM_DYN } },
	{ "gpu.tensor_pipe_pct", { TENSOR } },
	{ "gpu.dram_throughput_pct", { DRAM_PCT } },
	{ "gpu.sm_throughput_pct", { SM_PCT } },
	{ "gpu.l1_hit_rate", { L1_HIT } },
	{ "gpu.l2_hit_rate", { L2_HIT } },
	{ "gpu.warp_execution_efficiency", { THREADS_PER_INST } },
	{ "gpu.dram_bytes", { DRAM_BYTES, DURATION } },
	{ "gpu.dram_gbs", { DRAM_BYTES, DURATION } },
	{ "gpu.block_size", { BLOCK } },
	{ "gpu.grid_size", { GRID } },
	{ "gpu.waves", { WAVES } },
	{ "gpu.sectors_per_request", { LD_SECTORS, LD_REQS } },
	{ "gpu.smem_bank_conflicts", { BANK_LD, BANK_ST } },
	{ "gpu.kernels", { DURATION } },
};

const char *const *pragma_ncu_metrics_for(const char *name)
{
	static char one[96];
	static const char *stall[2];

	for (size_t i = 0; i < sizeof(mapping) / sizeof(mapping[0]); i++)
		if (!strcmp(mapping[i].name, name))
			return mapping[i].raw;
	if (!strncmp(name, "gpu.stall_", 10)) {
		size_t n = strlen(name);
		if (n > 14 && !strcmp(name + n - 4, "_pct")) {
			snprintf(one, sizeof(one), STALL_PRE "%.*s" STALL_POST, (int)(n - 14), name + 10);
			stall[0] = one;
			stall[1] = NULL;
			return stall;
		}
	}
	return NULL;
}

static int listed(const struct pragma_buf *b, const char *m)
{
	const char *p = b->data;
	size_t n = strlen(m);

	while ((p = strstr(p, m))) {
		if ((p == b->data || p[-1] == ',') && (p[n] == ',' || !p[n]))
			return 1;
		p += n;
	}
	return 0;
}

static void add_metric(struct pragma_buf *b, const char *m)
{
	if (!m || !*m || listed(b, m))
		return;
	if (b->len)
		pragma_buf_addch(b, ',');
	pragma_buf_adds(b, m);
}

void pragma_ncu_metric_list(const char *const *extra, size_t n_extra, struct pragma_buf *out)
{
	const char *const *d = pragma_ncu_default_metrics();

	pragma_buf_reset(out);
	for (int i = 0; d[i]; i++)
		add_metric(out, d[i]);
	for (size_t i = 0; i < n_extra; i++) {
		const char *const *raw;
		if (!strncmp(extra[i], "ncu:", 4)) {
			add_metric(out, extra[i] + 4);
			continue;
		}
		raw = pragma_ncu_metrics_for(extra[i]);
		for (int k = 0; raw && k < 3 && raw[k]; k++)
			add_metric(out, raw[k]);
	}
}

/* -------------------------------------------------------------- metrics */

static double launch_weight(const struct pragma_ncu_launch *l)
{
	double d;

	return pragma_ncu_get(l, DURATION, &d) && d > 0 ? d : 1;
}

/* Duration-weighted mean of one raw metric over the launches; 0 when no
 * launch has it. */
static int wmean(const struct pragma_ncu_result *r, const char *raw, double *out)
{
	double ws = 0, s = 0, v;
	int have = 0;

	for (int i = 0; i < r->n; i++)
		if (pragma_ncu_get(&r->l[i], raw, &v)) {
			double w = launch_weight(&r->l[i]);
			ws += w;
			s += w * v;
			have = 1;
		}
	if (have && ws > 0)
		*out = s / ws;
	return have;
}

static int wmax(const struct pragma_ncu_result *r, const char *raw, double *out)
{
	double v;
	int have = 0;

	for (int i = 0; i < r->n; i++)
		if (pragma_ncu_get(&r->l[i], raw, &v)) {
			if (!have || v > *out)
				*out = v;
			have = 1;
		}
	return have;
}

static int wsum(const struct pragma_ncu_result *r, const char *raw, double *out)
{
	double v;
	int have = 0;

	*out = 0;
	for (int i = 0; i < r->n; i++)
		if (pragma_ncu_get(&r->l[i], raw, &v)) {
			*out += v;
			have = 1;
		}
	return have;
}

static void set_mean(const struct pragma_ncu_result *r, const char *raw, const char *name, double scale,
		     struct pragma_profile *p)
{
	double v;

	if (wmean(r, raw, &v))
		pragma_profile_set(p, name, v * scale, "ncu");
}

/* The launch that took longest (its block/grid/waves describe the call). */
static const struct pragma_ncu_launch *longest(const struct pragma_ncu_result *r)
{
	const struct pragma_ncu_launch *best = NULL;
	double bd = -1, d;

	for (int i = 0; i < r->n; i++) {
		d = pragma_ncu_get(&r->l[i], DURATION, &d) ? d : 0;
		if (d > bd) {
			bd = d;
			best = &r->l[i];
		}
	}
	return best;
}

struct share {
	const char *reason;
	double v;
	int named;
};

static int by_share(const void *a, const void *b)
{
	const struct share *x = a, *y = b;

	return x->v < y->v ? 1 : x->v > y->v ? -1 : 0;
}

static void stalls(const struct pragma_ncu_result *r, struct pragma_profile *p)
{
	struct share sh[32];
	int n = 0, pcsamp = 0;
	double total = 0;
	char raw[160];

	/* Sampled counts (smsp__pcsamp_*) when present, else the Warp State
	 * Statistics ratios weighted by launch duration. */
	for (int i = 0; i < r->n && !pcsamp; i++)
		for (int k = 0; k < r->l[i].n; k++)
			if (!strncmp(r->l[i].v[k].name, PCSAMP_PRE, strlen(PCSAMP_PRE)))
				pcsamp = 1;
	for (int pass = 0; pass < 2; pass++) {
		const char *const *reasons = pass ? stall_other : stall_reasons;
		for (int j = 0; reasons[j]; j++) {
			double s = 0, v;
			int have = 0;
			if (pcsamp)
				snprintf(raw, sizeof(raw), PCSAMP_PRE "%s", reasons[j]);
			else
				snprintf(raw, sizeof(raw), STALL_PRE "%s" STALL_POST, reasons[j]);
			for (int i = 0; i < r->n; i++)
				if (pragma_ncu_get(&r->l[i], raw, &v)) {
					s += v * (pcsamp ? 1 : launch_weight(&r->l[i]));
					have = 1;
				}
			if (!have)
				continue;
			sh[n].reason = reasons[j];
			sh[n].v = s;
			sh[n].named = !pass;
			total += s;
			n++;
		}
	}
	if (!n || total <= 0)
		return;
	qsort(sh, (size_t)n, sizeof(sh[0]), by_share);
	for (int i = 0; i < n; i++) {
		char name[96];
		sh[i].v = 100 * sh[i].v / total;
		/* The top few and long_scoreboard (the default-set one). */
		if (sh[i].named && (i < 4 || !strcmp(sh[i].reason, "long_scoreboard"))) {
			snprintf(name, sizeof(name), "gpu.stall_%s_pct", sh[i].reason);
			pragma_profile_set(p, name, sh[i].v, "ncu");
		}
	}
	pragma_profile_note(p, "ncu: warps stalled most on %s (%.0f%% of stalls)%s%s%s%.0f%s%s%s%.0f%s", sh[0].reason,
			    sh[0].v, n > 1 ? ", then " : "", n > 1 ? sh[1].reason : "", n > 1 ? " (" : "",
			    n > 1 ? sh[1].v : 0.0, n > 1 ? "%)" : "", n > 2 ? " and " : "", n > 2 ? sh[2].reason : "",
			    n > 2 ? sh[2].v : 0.0, n > 2 ? "%)" : "");
}

void pragma_ncu_metrics(const struct pragma_ncu_result *r, const char *const *extra, size_t n_extra,
			struct pragma_profile *p)
{
	const struct pragma_ncu_launch *big;
	double v, a, b;

	if (!r->n) {
		char why[640];
		pragma_ncu_explain(r, why, sizeof(why));
		pragma_profile_unavailable(p, "ncu", "%s", why);
		return;
	}
	if (wsum(r, DURATION, &v))
		pragma_profile_set(p, "gpu.duration_us", v / 1e3, "ncu");
	pragma_profile_set(p, "gpu.kernels", r->n, "ncu");
	set_mean(r, OCC, "gpu.achieved_occupancy", 1, p);
	set_mean(r, OCC_THEO, "gpu.theoretical_occupancy", 1, p);
	set_mean(r, TENSOR, "gpu.tensor_pipe_pct", 1, p);
	set_mean(r, DRAM_PCT, "gpu.dram_throughput_pct", 1, p);
	set_mean(r, SM_PCT, "gpu.sm_throughput_pct", 1, p);
	set_mean(r, L1_HIT, "gpu.l1_hit_rate", 1, p);
	set_mean(r, L2_HIT, "gpu.l2_hit_rate", 1, p);
	set_mean(r, THREADS_PER_INST, "gpu.warp_execution_efficiency", 100.0 / 32, p);
	if (wmax(r, REGS, &v))
		pragma_profile_set(p, "gpu.registers_per_thread", v, "ncu");
	/* Shared memory of the launch that uses most (static + dynamic). */
	{
		double best = -1;
		for (int i = 0; i < r->n; i++) {
			int h1 = pragma_ncu_get(&r->l[i], SMEM_STATIC, &a), h2 = pragma_ncu_get(&r->l[i], SMEM_DYN, &b);
			if (h1 || h2) {
				double s = (h1 ? a : 0) + (h2 ? b : 0);
				if (s > best)
					best = s;
			}
		}
		if (best >= 0)
			pragma_profile_set(p, "gpu.shared_mem_per_block", best, "ncu");
	}
	if (wsum(r, DRAM_BYTES, &v)) {
		pragma_profile_set(p, "gpu.dram_bytes", v, "ncu");
		if (wsum(r, DURATION, &a) && a > 0)
			pragma_profile_set(p, "gpu.dram_gbs", v / a, "ncu"); /* bytes per ns = GB/s */
	}
	big = longest(r);
	if (big && pragma_ncu_get(big, BLOCK, &v))
		pragma_profile_set(p, "gpu.block_size", v, "ncu");
	if (big && pragma_ncu_get(big, GRID, &v))
		pragma_profile_set(p, "gpu.grid_size", v, "ncu");
	if (big && pragma_ncu_get(big, WAVES, &v))
		pragma_profile_set(p, "gpu.waves", v, "ncu");
	{
		double s1, q1, s2 = 0, q2 = 0;
		int h = wsum(r, LD_SECTORS, &s1) && wsum(r, LD_REQS, &q1);
		if (h && wsum(r, ST_SECTORS, &s2) && wsum(r, ST_REQS, &q2)) {
			s1 += s2;
			q1 += q2;
		}
		if (h && q1 > 0)
			pragma_profile_set(p, "gpu.sectors_per_request", s1 / q1, "ncu");
	}
	{
		int h1 = wsum(r, BANK_LD, &a), h2 = wsum(r, BANK_ST, &b);
		if (h1 || h2)
			pragma_profile_set(p, "gpu.smem_bank_conflicts", (h1 ? a : 0) + (h2 ? b : 0), "ncu");
	}
	stalls(r, p);
	/* What the Conductor asked for by raw name. */
	for (size_t i = 0; i < n_extra; i++) {
		const char *raw;
		char name[160];
		int have;
		if (strncmp(extra[i], "ncu:", 4))
			continue;
		raw = extra[i] + 4;
		{
			size_t l = strlen(raw);
			if (l > 4 && !strcmp(raw + l - 4, ".sum"))
				have = wsum(r, raw, &v);
			else if (strstr(raw, "pct") || strstr(raw, "ratio") || strstr(raw, ".avg") || strstr(raw, "rate"))
				have = wmean(r, raw, &v);
			else
				have = wmax(r, raw, &v);
		}
		snprintf(name, sizeof(name), "ncu:%s", raw);
		if (have)
			pragma_profile_set(p, name, v, "ncu");
		else
			pragma_profile_note(p, "ncu: %s was not collected (unknown on this GPU or n/a)", raw);
	}
	/* One line per launch, for the Conductor. */
	for (int i = 0; i < r->n && i < 8; i++) {
		const struct pragma_ncu_launch *l = &r->l[i];
		char occ[48] = "", dram[32] = "", sm[32] = "", regs[32] = "";
		double d = 0;
		pragma_ncu_get(l, DURATION, &d);
		if (pragma_ncu_get(l, OCC, &v))
			snprintf(occ, sizeof(occ), ", occupancy %.0f%%", v);
		if (pragma_ncu_get(l, SM_PCT, &v))
			snprintf(sm, sizeof(sm), ", SM %.0f%%", v);
		if (pragma_ncu_get(l, DRAM_PCT, &v))
			snprintf(dram, sizeof(dram), ", DRAM %.0f%%", v);
		if (pragma_ncu_get(l, REGS, &v))
			snprintf(regs, sizeof(regs), ", %.0f registers", v);
		pragma_profile_note(p, "ncu: launch %d %.120s grid %s block %s: %.2f us%s%s%s%s", l->id, l->kernel, l->grid,
				    l->block, d / 1e3, occ, sm, dram, regs);
	}
	if (r->n > 8)
		pragma_profile_note(p, "ncu: %d more launches not listed", r->n - 8);
	if (r->passes > 1)
		pragma_profile_note(p, "ncu replayed each kernel %d times to collect every metric (caches flushed "
				       "before each pass)", r->passes);
}

void pragma_ncu_explain(const struct pragma_ncu_result *r, char *why, size_t len)
{
	if (r->perm_error)
		snprintf(why, len,
			 "ncu may not read the GPU's performance counters (ERR_NVGPUCTRPERM: profiling is restricted "
			 "to admin users). Hint: allow it for everyone with the driver option "
			 "NVreg_RestrictProfilingToAdminUsers=0 (echo 'options nvidia "
			 "NVreg_RestrictProfilingToAdminUsers=0' | sudo tee /etc/modprobe.d/nvidia-profiling.conf, then "
			 "reload the driver or reboot), or run pragma as root / with CAP_SYS_ADMIN; see "
			 "https://developer.nvidia.com/ERR_NVGPUCTRPERM");
	else if (r->error[0])
		snprintf(why, len, "ncu failed: %s", r->error);
	else if (r->no_kernels)
		snprintf(why, len,
			 "ncu profiled no kernel: pk_forward launched nothing that matched the candidate's kernels "
			 "(or launched from a library)");
	else
		snprintf(why, len, "ncu produced no results (no CSV table in its output)");
}

/* ncu's installation directory, resolved through symlinks: the harness
 * grants it to ncu's injection. /usr/local/cuda/bin/ncu may be a link (or
 * a launcher script) into <toolkit>/nsight-compute-<version>/, whose
 * target/<platform>/ holds the injected libraries; a standalone install
 * has them beside ncu. */
void pragma_ncu_tool_dir(const char *ncu, struct pragma_buf *out)
{
	char *real = realpath(ncu, NULL), *slash;
	char probe[4200];

	pragma_buf_reset(out);
	pragma_buf_adds(out, real ? real : ncu);
	free(real);
	if ((slash = strrchr(out->data, '/')))
		pragma_buf_setlen(out, (size_t)(slash - out->data));
	snprintf(probe, sizeof(probe), "%s/target", out->data);
	if (pragma_path_exists(probe))
		return;
	/* ncu itself in target/<platform>/: the installation is two up */
	slash = strrchr(out->data, '/');
	if (slash && !strncmp(slash + 1, "linux-", 6) && slash - out->data >= 7 &&
	    !strncmp(slash - 7, "/target", 7)) {
		pragma_buf_setlen(out, (size_t)(slash - 7 - out->data));
		return;
	}
	/* a launcher in <toolkit>/bin: the newest <toolkit>/nsight-compute-* */
	if ((slash = strrchr(out->data, '/'))) {
		struct pragma_buf parent = PRAGMA_BUF_INIT, best = PRAGMA_BUF_INIT;
		DIR *d;
		struct dirent *e;
		pragma_buf_add(&parent, out->data, (size_t)(slash - out->data));
		if ((d = opendir(parent.len ? parent.data : "/"))) {
			while ((e = readdir(d)))
				if (!strncmp(e->d_name, "nsight-compute", 14) &&
				    (!best.len || strcmp(e->d_name, best.data) > 0)) {
					snprintf(probe, sizeof(probe), "%s/%s/target", parent.data, e->d_name);
					if (pragma_path_exists(probe)) {
						pragma_buf_reset(&best);
						pragma_buf_adds(&best, e->d_name);
					}
				}
			closedir(d);
		}
		if (best.len) {
			pragma_buf_reset(out);
			pragma_buf_addf(out, "%s/%s", parent.data, best.data);
		}
		pragma_buf_release(&parent);
		pragma_buf_release(&best);
	}
}

int pragma_ncu_find(struct pragma_buf *path)
{
	const char *env = getenv("PRAGMA_NCU");
	struct pragma_cuda_toolkit tk;
	char cand[4200];

	if (env && *env) {
		pragma_buf_reset(path);
		pragma_buf_adds(path, env);
		return access(env, X_OK) == 0;
	}
	if (pragma_which("ncu", path))
		return 1;
	if (pragma_cuda_toolkit_find(&tk, NULL) == 0) {
		snprintf(cand, sizeof(cand), "%s/bin/ncu", tk.root);
		if (access(cand, X_OK) == 0) {
			pragma_buf_reset(path);
			pragma_buf_adds(path, cand);
			return 1;
		}
	}
	if (access("/usr/local/cuda/bin/ncu", X_OK) == 0) {
		pragma_buf_reset(path);
		pragma_buf_adds(path, "/usr/local/cuda/bin/ncu");
		return 1;
	}
	return 0;
}
