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
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pragma/profile.h"

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
