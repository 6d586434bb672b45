/*
 * The sim collector's parsing: valgrind's cache geometry arguments and the
 * callgrind.out totals. Running valgrind is in run.c.
 *
 * Callgrind (--cache-sim=yes --branch-sim=yes) counts per collected
 * instruction: Ir (instructions), Dr/Dw (data reads/writes), I1mr/D1mr/D1mw
 * (first-level misses), ILmr/DLmr/DLmw (last-level misses), Bc/Bcm
 * (conditional branches, mispredicted), Bi/Bim (indirect). Its simulator
 * has two levels (I1/D1 and LL, write-allocate, LRU) and one thread's view:
 * all threads share one simulated hierarchy, so we run the kernel on one.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile_int.h"

static int pow2(uint64_t v)
{
	return v && !(v & (v - 1));
}

int pragma_sim_cache_args(const struct pragma_machine *m, char out[3][64])
{
	const struct pragma_cache_level *i1 = NULL, *d1 = NULL, *ll = NULL;
	int n = 0;

	for (int i = 0; m && i < m->n_caches; i++) {
		const struct pragma_cache_level *c = &m->caches[i];
		if (c->level == 1 && !strcmp(c->type, "Instruction"))
			i1 = c;
		else if (c->level == 1 && !strcmp(c->type, "Data"))
			d1 = c;
		else if (strcmp(c->type, "Instruction") && (!ll || c->level > ll->level))
			ll = c;
	}
	if (ll && ll->level < 2)
		ll = NULL;
	/* valgrind wants line sizes that are powers of two and a whole number
	 * of sets; a cache it would refuse is left to its own detection. */
	const struct pragma_cache_level *list[3] = { i1, d1, ll };
	const char *flag[3] = { "--I1", "--D1", "--LL" };
	for (int k = 0; k < 3; k++) {
		const struct pragma_cache_level *c = list[k];
		if (!c || !c->size || c->ways <= 0 || !pow2((uint64_t)c->line) ||
		    c->size % ((uint64_t)c->ways * (uint64_t)c->line))
			continue;
		snprintf(out[n++], 64, "%s=%llu,%d,%d", flag[k], (unsigned long long)c->size, c->ways, c->line);
	}
	return n;
}

int pragma_sim_parse(const char *text, int calls, int line_bytes, struct pragma_profile *p, struct pragma_err *err)
{
	static const char *const want[] = { "Ir", "Dr", "Dw", "I1mr", "D1mr", "D1mw", "ILmr", "DLmr", "DLmw",
					    "Bc", "Bcm", "Bi", "Bim" };
	enum { IR, DR, DW, I1MR, D1MR, D1MW, ILMR, DLMR, DLMW, BC, BCM, BI, BIM, NWANT };
	double v[NWANT] = { 0 };
	int have[NWANT] = { 0 };
	char names[32][16];
	int n_names = 0, got_totals = 0;
	const char *line = text;

	if (calls < 1)
		calls = 1;
	while (line && *line) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		char buf[1024];

		snprintf(buf, sizeof(buf), "%.*s", (int)(len < sizeof(buf) - 1 ? len : sizeof(buf) - 1), line);
		if (!strncmp(buf, "events:", 7)) {
			char *save = NULL;
			n_names = 0;
			for (char *t = strtok_r(buf + 7, " \t", &save); t && n_names < 32; t = strtok_r(NULL, " \t", &save))
				snprintf(names[n_names++], sizeof(names[0]), "%s", t);
		} else if ((!strncmp(buf, "totals:", 7) || (!got_totals && !strncmp(buf, "summary:", 8))) && n_names) {
			/* Trailing zero counts are left out of the line. */
			char *s = buf + (buf[0] == 't' ? 7 : 8), *end;
			memset(v, 0, sizeof(v));
			for (int k = 0; k < n_names; k++) {
				double x = strtod(s, &end);
				if (end == s)
					x = 0;
				s = end;
				for (int w = 0; w < NWANT; w++)
					if (!strcmp(names[k], want[w])) {
						v[w] = x;
						have[w] = 1;
					}
			}
			got_totals = 1;
		}
		line = eol ? eol + 1 : NULL;
	}
	if (!got_totals)
		return pragma_err_set(err, PRAGMA_E_INTERNAL, "callgrind output without totals");
	if (!have[IR] || v[IR] <= 0)
		return pragma_err_set(err, PRAGMA_E_INTERNAL,
				      "callgrind collected no instructions: pk_forward never ran under the simulator");

	double refs = v[DR] + v[DW], d1m = v[D1MR] + v[D1MW], llm = v[DLMR] + v[DLMW];
	double br = v[BC] + v[BI], brm = v[BCM] + v[BIM];

	pragma_profile_set(p, "sim.threads", 1, "sim");
	pragma_profile_set(p, "sim.instructions", v[IR] / calls, "sim");
	if (have[DR]) {
		pragma_profile_set(p, "sim.data_refs", refs / calls, "sim");
		if (have[D1MR]) {
			pragma_profile_set(p, "sim.d1_misses", d1m / calls, "sim");
			if (refs > 0)
				pragma_profile_set(p, "sim.d1_miss_rate", 100 * d1m / refs, "sim");
			pragma_profile_set(p, "sim.i1_misses", v[I1MR] / calls, "sim");
		}
		if (have[DLMR]) {
			pragma_profile_set(p, "sim.ll_misses", llm / calls, "sim");
			/* Local rate: of the accesses that reached LL (D1 misses). */
			if (d1m > 0)
				pragma_profile_set(p, "sim.ll_miss_rate", 100 * llm / d1m, "sim");
			if (line_bytes > 0) {
				double bytes = llm * line_bytes / calls;
				pragma_profile_set(p, "sim.dram_bytes", bytes, "sim");
				if (p->bytes > 0)
					pragma_profile_set(p, "sim.traffic_ratio", bytes / p->bytes, "sim");
			}
		}
	}
	if (have[BC]) {
		pragma_profile_set(p, "sim.branches", br / calls, "sim");
		pragma_profile_set(p, "sim.branch_mispredicts", brm / calls, "sim");
		if (br > 0)
			pragma_profile_set(p, "sim.branch_mispredict_rate", 100 * brm / br, "sim");
	}
	if (p->flops > 0)
		pragma_profile_set(p, "sim.insn_per_flop", v[IR] / calls / p->flops, "sim");
	return 0;
}

/* ---- the dynamic instruction mix ---- */

struct addr_cost {
	unsigned long addr;
	double ir;
};

static int cmp_addr(const void *a, const void *b)
{
	const struct addr_cost *x = a, *y = b;

	return x->addr < y->addr ? -1 : x->addr > y->addr;
}

/* "0x1a2b", "+4", "-33", "*", or decimal; relative to *last. */
static int position(const char **s, unsigned long *last)
{
	const char *p = *s;
	char *end;

	while (*p == ' ')
		p++;
	if (*p == '*') {
		p++;
	} else if (*p == '+' || *p == '-') {
		long d = strtol(p, &end, 0);
		if (end == p)
			return -1;
		*last = (unsigned long)((long)*last + d);
		p = end;
	} else {
		unsigned long v = strtoul(p, &end, 0);
		if (end == p)
			return -1;
		*last = v;
		p = end;
	}
	*s = p;
	return 0;
}

/* "(8) /path/x.so" or "(8)": the id; *name gets the name when the line
 * defines it, else NULL. */
static int name_ref(const char *s, const char **name)
{
	int id;
	char *end;

	*name = NULL;
	if (*s != '(')
		return -1;
	id = (int)strtol(s + 1, &end, 10);
	if (*end != ')' || id < 0)
		return -1;
	if (end[1] == ' ')
		*name = end + 2;
	return id;
}

enum { MAX_OB = 1024, MAX_FN = 1 << 20 };

/* ob ids name objects (few); fn ids only matter for finding pk_forward. */
static void note_ob(char (*ob)[256], int id, const char *name)
{
	if (id >= 0 && id < MAX_OB && name)
		snprintf(ob[id], 256, "%s", name);
}

static void note_fn(unsigned char *is_pk, int id, const char *name)
{
	if (id >= 0 && id < MAX_FN && name)
		is_pk[id] = !strcmp(name, "pk_forward");
}

/* callgrind's per-instruction Ir for the object so_name, sorted by
 * address with duplicates merged; *pk_min: pk_forward's lowest address as
 * callgrind saw it (for aligning with objdump). -1 without any. */
static int callgrind_addr_costs(const char *cg_text, const char *so_name, struct addr_cost **out, size_t *n_out,
				unsigned long *pk_min_out, int *pk_seen_out)
{
	char(*ob_names)[256] = calloc(MAX_OB, 256);
	unsigned char *is_pk = calloc(MAX_FN, 1);
	const char *nm;
	struct addr_cost *v = NULL;
	size_t n = 0, alloc = 0;
	int cur_ob = -1, cur_fn = -1, have_instr = 0, skip_next = 0;
	unsigned long last_addr = 0, last_line = 0, pk_min = 0;
	int pk_seen = 0;
	const char *line = cg_text, *so_base = strrchr(so_name, '/');

	*out = NULL;
	*n_out = 0;
	so_base = so_base ? so_base + 1 : so_name;
	if (!ob_names || !is_pk)
		abort();
	while (line && *line) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		char buf[1024];

		snprintf(buf, sizeof(buf), "%.*s", (int)(len < sizeof(buf) - 1 ? len : sizeof(buf) - 1), line);
		line = eol ? eol + 1 : NULL;
		if (!strncmp(buf, "positions:", 10)) {
			have_instr = strstr(buf, "instr") != NULL;
		} else if (!strncmp(buf, "ob=", 3)) {
			cur_ob = name_ref(buf + 3, &nm);
			note_ob(ob_names, cur_ob, nm);
		} else if (!strncmp(buf, "cob=", 4)) {
			int id = name_ref(buf + 4, &nm);
			note_ob(ob_names, id, nm);
		} else if (!strncmp(buf, "fn=", 3)) {
			cur_fn = name_ref(buf + 3, &nm);
			note_fn(is_pk, cur_fn, nm);
		} else if (!strncmp(buf, "cfn=", 4)) {
			int id = name_ref(buf + 4, &nm);
			note_fn(is_pk, id, nm);
		} else if (!strncmp(buf, "calls=", 6)) {
			skip_next = 1;
		} else if (have_instr && (buf[0] == '+' || buf[0] == '-' || buf[0] == '*' || isdigit((unsigned char)buf[0]))) {
			const char *s = buf;
			if (position(&s, &last_addr) < 0 || position(&s, &last_line) < 0)
				continue;
			if (skip_next) {
				/* the inclusive cost of the call: not this instruction's */
				skip_next = 0;
				continue;
			}
			if (cur_ob < 0 || cur_ob >= MAX_OB || !*ob_names[cur_ob])
				continue;
			const char *ob = strrchr(ob_names[cur_ob], '/');
			if (strcmp(ob ? ob + 1 : ob_names[cur_ob], so_base))
				continue;
			double ir = strtod(s, NULL);
			if (n == alloc) {
				alloc = alloc ? 2 * alloc : 4096;
				v = realloc(v, alloc * sizeof(*v));
				if (!v)
					abort();
			}
			v[n++] = (struct addr_cost){ last_addr, ir };
			if (cur_fn >= 0 && cur_fn < MAX_FN && is_pk[cur_fn] && (!pk_seen || last_addr < pk_min)) {
				pk_min = last_addr;
				pk_seen = 1;
			}
		}
	}
	free(ob_names);
	free(is_pk);
	if (!n || !have_instr) {
		free(v);
		return -1;
	}
	qsort(v, n, sizeof(*v), cmp_addr);
	size_t k = 0;
	for (size_t i = 0; i < n; i++) {
		if (k && v[k - 1].addr == v[i].addr)
			v[k - 1].ir += v[i].ir;
		else
			v[k++] = v[i];
	}
	*out = v;
	*n_out = k;
	*pk_min_out = pk_min;
	*pk_seen_out = pk_seen;
	return 0;
}

int profile_callgrind_costs(const char *cg_text, const char *so_name, const struct profile_code *code, double **cost)
{
	struct addr_cost *v;
	size_t n;
	unsigned long pk_min;
	int pk_seen;

	*cost = NULL;
	if (callgrind_addr_costs(cg_text, so_name, &v, &n, &pk_min, &pk_seen) < 0)
		return -1;
	/* callgrind gives object-relative addresses for shared objects, as
	 * objdump does; align on pk_forward's entry in case it does not. */
	long delta = 0;
	for (size_t i = 0; i < code->n && pk_seen; i++)
		if (!strcmp(code->insns[i].fn, "pk_forward")) {
			delta = (long)pk_min - (long)code->insns[i].addr;
			break;
		}
	*cost = calloc(code->n + 1, sizeof(double));
	if (!*cost)
		abort();
	for (size_t i = 0; i < code->n; i++) {
		struct addr_cost key = { (unsigned long)((long)code->insns[i].addr + delta), 0 }, *hit;
		hit = bsearch(&key, v, n, sizeof(*v), cmp_addr);
		if (hit && hit->ir > 0)
			(*cost)[i] = hit->ir;
	}
	free(v);
	return 0;
}

int pragma_sim_parse_mix(const char *cg_text, const char *objdump_text, const char *so_name, int calls,
			 struct pragma_profile *p)
{
	struct profile_code code;
	double *cost = NULL;
	int ret = -1;

	if (calls < 1)
		calls = 1;
	if (profile_code_parse(objdump_text, p->source_name, &code) < 0)
		return -1;
	if (profile_callgrind_costs(cg_text, so_name, &code, &cost) < 0)
		goto out;
	double fp = 0, packed = 0, fma = 0, total = 0, width_ir[3] = { 0 };
	double line_ir[4096] = { 0 }, line_calls[4096] = { 0 };
	for (size_t i = 0; i < code.n; i++) {
		struct profile_iclass c;
		double ir = cost[i];
		if (ir <= 0)
			continue;
		profile_insn_class(&code.insns[i], &c);
		if (c.call && code.insns[i].line > 0 && code.insns[i].line < 4096)
			line_calls[code.insns[i].line] += ir;
		total += ir;
		if (c.fp) {
			fp += ir;
			packed += c.fp == 2 ? ir : 0;
			fma += c.fma ? ir : 0;
		}
		if (c.width)
			width_ir[c.width == 128 ? 0 : c.width == 256 ? 1 : 2] += ir;
		if (code.insns[i].line > 0 && code.insns[i].line < 4096)
			line_ir[code.insns[i].line] += ir;
	}
	if (total <= 0)
		goto out;
	/* How often each call the static collector placed ran: one in an
	 * innermost loop that runs a handful of times (a tail, a last tile)
	 * costs nothing. A call instruction's Ir is its executions. */
	for (size_t r = 0; r < p->n_remarks; r++)
		if (p->remarks[r].kind == PRAGMA_REMARK_CALL && p->remarks[r].line > 0 && p->remarks[r].line < 4096)
			p->remarks[r].runs = line_calls[p->remarks[r].line] / calls;
	pragma_profile_set(p, "sim.fp_ops", fp / calls, "sim");
	if (fp > 0) {
		pragma_profile_set(p, "sim.fp_packed_pct", 100 * packed / fp, "sim");
		pragma_profile_set(p, "sim.fma_pct", 100 * fma / fp, "sim");
	}
	{
		int best = -1;
		for (int w = 0; w < 3; w++)
			if (width_ir[w] > 0 && (best < 0 || width_ir[w] > width_ir[best]))
				best = w;
		pragma_profile_set(p, "sim.vector_bits", best < 0 ? 0 : 128 << best, "sim");
	}
	/* Where the instructions go: the source lines that execute most. */
	for (int rank = 0; rank < 2; rank++) {
		int top = 0;
		for (int l = 1; l < 4096; l++)
			if (line_ir[l] > line_ir[top])
				top = l;
		if (!top || line_ir[top] < 0.1 * total)
			break;
		pragma_profile_note(p, "sim: %.0f%% of the kernel's instructions execute at %s:%d", 100 * line_ir[top] / total,
				    p->source_name[0] ? p->source_name : "kernel.c", top);
		line_ir[top] = 0;
	}
	ret = 0;
out:
	free(cost);
	profile_code_release(&code);
	return ret;
}

const char *pragma_sim_refuse(const char *objdump_text, const char *source_name, const struct pragma_machine *m)
{
	static _Thread_local char why[400];
	struct profile_code code;
	size_t n512 = 0, first = 0;

	if (m && !m->has_avx512f)
		return NULL; /* the native run cannot have executed AVX-512: valgrind takes the same path */
	if (profile_code_parse(objdump_text, source_name, &code) < 0)
		return NULL;
	for (size_t i = 0; i < code.n; i++)
		if (profile_insn_avx512(&code.insns[i]) && !n512++)
			first = i;
	if (n512) {
		char at[96] = "";
		if (code.insns[first].line > 0)
			snprintf(at, sizeof(at), " at %s:%d", source_name && *source_name ? source_name : "kernel.c",
				 code.insns[first].line);
		snprintf(why, sizeof(why),
			 "this build has %zu AVX-512 instructions (the first, %.32s, in %.64s%s) and valgrind "
			 "cannot execute AVX-512: a simulation would crash or take another code path, so sim does "
			 "not run; the mca collector models this build's loops instead",
			 n512, code.insns[first].mn, code.insns[first].fn, at);
	}
	profile_code_release(&code);
	return n512 ? why : NULL;
}
