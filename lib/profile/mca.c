/*
 * The mca collector's pieces: LLVM's machine-code analyzer (llvm-mca) on
 * the hot loops of the very .so that was verified and timed. Running it is
 * in run.c.
 *
 * Why: these VMs have no PMU, and valgrind cannot execute AVX-512, so a
 * 512-bit kernel had no micro-architectural evidence at all. llvm-mca runs
 * a loop body through the scheduling model of a CPU (the port each micro-op
 * can issue to, latencies, dispatch width) and says how many cycles an
 * iteration takes, which port is busiest, and whether a loop-carried
 * dependency rather than the ports sets the pace. It is a model: loads hit
 * L1, every instruction of the body runs each iteration, no front-end
 * stalls. Static analysis needs no hardware: an AVX-512 loop can be modeled
 * on a machine without AVX-512.
 *
 * Loops come from the disassembly (natural loops, code.c); the innermost
 * ones are modeled, hottest first: by callgrind's per-instruction counts
 * when sim ran on this same build, else by nesting depth.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pragma/buf.h"
#include "profile/profile_int.h"

#define MCA_MAX_INSNS 2000  /* larger bodies (fully unrolled code) are left out */

static int starts(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

/* ---- the model ---- */

void pragma_mca_cpu(const struct pragma_machine *m, int code_avx512, int version, char *cpu, size_t len,
		    char *caveat, size_t clen)
{
	const char *c = NULL;
	int has512 = m && m->has_avx512f;

	caveat[0] = 0;
	if (m && !strcmp(m->vendor, "AuthenticAMD")) {
		if (m->family == 0x17) {
			c = m->model >= 0x30 ? "znver2" : "znver1";
		} else if (m->family == 0x19) {
			/* Zen 3: 00-0f (Milan), 20-2f, 40-5f; Zen 4: 10-1f (Genoa), 60-7f, a0-af */
			int zen4 = (m->model >= 0x10 && m->model <= 0x1f) || (m->model >= 0x60 && m->model <= 0x7f) ||
				   (m->model >= 0xa0 && m->model <= 0xaf) || has512;
			if (!zen4) {
				c = "znver3";
				if (version > 0 && version <= 14)
					snprintf(caveat, clen,
						 "LLVM %d's Zen 3 model gives an FMA a throughput of one per cycle where Zen 3 "
						 "issues two (AMD 56665): an FMA-bound loop can run up to twice as fast as "
						 "modeled; llvm-mca 19 (scripts/install-deps.sh) has the corrected model",
						 version);
			} else if (version >= 17) {
				c = "znver4";
				if (code_avx512)
					snprintf(caveat, clen,
						 "the Zen 4 model runs each 512-bit operation over two cycles of a 256-bit "
						 "pipe, as Zen 4 does: 512-bit code gains from masks and 32 registers more "
						 "than from width");
			} else if (code_avx512) {
				c = "icelake-server";
				snprintf(caveat, clen,
					 "Zen 4 modeled as Ice Lake server (llvm-mca %d has no Zen 4 model, and its Zen 3 "
					 "model has no AVX-512): Zen 4 runs each 512-bit operation on its 256-bit units, so "
					 "where the model says a loop is bound by the vector ports, Zen 4 needs up to twice "
					 "the cycles; llvm-mca 17 or later (scripts/install-deps.sh installs 19) has a Zen 4 "
					 "model",
					 version);
			} else {
				c = "znver3";
				snprintf(caveat, clen,
					 "Zen 4 modeled as Zen 3 (llvm-mca %d has no Zen 4 model); for 256-bit code the two "
					 "cores are close",
					 version);
			}
		} else if (m->family >= 0x1a) {
			c = version >= 19 ? "znver5" : version >= 17 ? "znver4" : code_avx512 ? "icelake-server" : "znver3";
			snprintf(caveat, clen,
				 "Zen 5 modeled as %s (llvm-mca %d%s): Zen 5 has full 512-bit units, so 512-bit work "
				 "can run up to twice as fast as a double-pumped model says",
				 c, version, version >= 19 ? " reuses its Zen 4 model for Zen 5" : " has no Zen 5 model");
		}
	} else if (m && !strcmp(m->vendor, "GenuineIntel") && m->family == 6) {
		static const struct {
			int model;
			const char *cpu;
		} intel[] = {
			{ 0x3c, "haswell" },	     { 0x3f, "haswell" },	   { 0x45, "haswell" },	{ 0x46, "haswell" },
			{ 0x3d, "broadwell" },	     { 0x47, "broadwell" },	   { 0x4f, "broadwell" }, { 0x56, "broadwell" },
			{ 0x4e, "skylake" },	     { 0x5e, "skylake" },	   { 0x8e, "skylake" },	{ 0x9e, "skylake" },
			{ 0xa5, "skylake" },	     { 0xa6, "skylake" },	   { 0x55, "skylake-avx512" },
			{ 0x6a, "icelake-server" }, { 0x6c, "icelake-server" }, { 0x7d, "icelake-client" },
			{ 0x7e, "icelake-client" }, { 0x8c, "tigerlake" },	   { 0x8d, "tigerlake" },
			{ 0xa7, "rocketlake" },     { 0x8f, "sapphirerapids" }, { 0xcf, "sapphirerapids" },
			{ 0xad, "sapphirerapids" }, { 0xae, "sapphirerapids" }, { 0x97, "alderlake" },
			{ 0x9a, "alderlake" },	     { 0xb7, "alderlake" },	   { 0xba, "alderlake" }, { 0xbf, "alderlake" },
		};
		for (size_t i = 0; i < sizeof(intel) / sizeof(intel[0]); i++)
			if (intel[i].model == m->model)
				c = intel[i].cpu;
		if (c && (m->model == 0xad || m->model == 0xae))
			snprintf(caveat, clen, "Granite Rapids modeled as Sapphire Rapids");
	}
	if (!c) {
		c = has512 || code_avx512 ? "skylake-avx512" : m && m->has_avx2 ? "haswell" : "x86-64";
		snprintf(caveat, clen, "no llvm-mca model for this CPU (%s family %d model %d): modeled as %s",
			 m ? m->vendor : "unknown", m ? m->family : 0, m ? m->model : 0, c);
	}
	/* Code the model's CPU cannot decode (AVX-512 on an AVX2 model, a
	 * binary built for another machine): the nearest model that has it. */
	if (code_avx512 && (!strcmp(c, "znver1") || !strcmp(c, "znver2") || !strcmp(c, "znver3") ||
			    !strcmp(c, "haswell") || !strcmp(c, "broadwell") || !strcmp(c, "skylake") ||
			    !strcmp(c, "alderlake") || !strcmp(c, "x86-64"))) {
		const char *alt = version >= 17 && m && !strcmp(m->vendor, "AuthenticAMD") ? "znver4" : "icelake-server";
		snprintf(caveat, clen,
			 "the code has AVX-512 instructions, which this machine's model (%s) cannot take: modeled as "
			 "%s%s",
			 c, alt, has512 ? "" : "; this machine has no AVX-512, so it cannot run this code");
		c = alt;
	}
	snprintf(cpu, len, "%s", c);
}

/* ---- choosing the loops ---- */

/* objdump's AT&T text as llvm-mca's assembler takes it; 0 when the
 * instruction is left out (nops: alignment padding). */
static int convert(const struct profile_insn *in, char *out, size_t len)
{
	char ops[160];
	const char *mn = in->mn;

	if (starts(mn, "nop") || (!strcmp(mn, "xchg") && !strcmp(in->ops, "%ax,%ax")) || starts(mn, "endbr"))
		return 0;
	snprintf(ops, sizeof(ops), "%s", in->ops);
	/* comments: "# 3040 <_fini+0x1014>", and "<sym>" after targets */
	char *cut = strstr(ops, "#");
	if (cut)
		*cut = 0;
	cut = strchr(ops, '<');
	if (cut)
		*cut = 0;
	size_t n = strlen(ops);
	while (n && (ops[n - 1] == ' ' || ops[n - 1] == '\t'))
		ops[--n] = 0;
	if ((mn[0] == 'j' || starts(mn, "loop") || starts(mn, "call")) && isxdigit((unsigned char)ops[0]))
		/* direct target: llvm-mca does not follow branches; any label does */
		snprintf(ops, sizeof(ops), ".Lmca_head");
	snprintf(out, len, "\t%s%s%s\n", mn, ops[0] ? " " : "", ops);
	return 1;
}

static int loop_width(const struct profile_code *c, size_t l)
{
	int w = 0;

	for (size_t i = c->loops[l].first; i <= c->loops[l].last; i++)
		if (profile_loop_has(c, l, i)) {
			struct profile_iclass k;
			profile_insn_class(&c->insns[i], &k);
			if (k.width > w)
				w = k.width;
		}
	return w;
}

/* A register operand's identity: "v5" for %xmm5/%ymm5/%zmm5, "rax" for
 * %eax/%rax; "" when op is not a register. */
static void reg_id(const char *op, char *out, size_t len)
{
	out[0] = 0;
	if (op[0] != '%')
		return;
	op++;
	if ((op[0] == 'x' || op[0] == 'y' || op[0] == 'z') && op[1] == 'm' && op[2] == 'm') {
		snprintf(out, len, "v%d", atoi(op + 3));
		return;
	}
	if (op[0] == 'e' && strlen(op) == 3)
		snprintf(out, len, "r%s", op + 1);
	else if (op[0] == 'r' && isdigit((unsigned char)op[1]))
		snprintf(out, len, "r%d", atoi(op + 1));
	else
		snprintf(out, len, "%s", op);
}

/* Does this instruction read its destination register? FMA always; a
 * VEX three-operand form when the destination is also a source; legacy
 * two-operand arithmetic (addps %xmm1,%xmm0; imul %rdx,%rax); inc/dec/neg. */
static int reads_dest(const char *mn, char ops[4][96], int nops)
{
	if (strstr(mn, "fmadd") || strstr(mn, "fmsub") || strstr(mn, "fnmadd") || strstr(mn, "fnmsub"))
		return 1;
	if (nops == 1)
		return starts(mn, "inc") || starts(mn, "dec") || starts(mn, "neg") || starts(mn, "not");
	if (nops == 3 && mn[0] == 'v')
		return !strcmp(ops[0], ops[2]) || !strcmp(ops[1], ops[2]);
	if (nops != 2 || mn[0] == 'v' || starts(mn, "mov") || starts(mn, "lea") || starts(mn, "cvt") ||
	    starts(mn, "cmp") || starts(mn, "test") || starts(mn, "set") || starts(mn, "pmov") || starts(mn, "bs") ||
	    starts(mn, "pop") || starts(mn, "lzcnt") || starts(mn, "tzcnt") || starts(mn, "popcnt") || starts(mn, "sqrt") ||
	    starts(mn, "rcp") || starts(mn, "rsqrt") || starts(mn, "ucomis") || starts(mn, "comis"))
		return 0;
	return !(starts(mn, "xor") && !strcmp(ops[0], ops[1])) && !(starts(mn, "pxor") && !strcmp(ops[0], ops[1]));
}

/* The loop-carried chains through registers: an instruction that reads
 * and writes a register no earlier instruction of the body wrote. FP and
 * vector chains (accumulators) first; integer ones only when they are not
 * one-cycle induction updates (add, sub, inc, lea): an imul product. */
static void loop_chains(const struct profile_code *c, size_t l, char *out, size_t len)
{
	char written[64][8], fp_regs[160] = "", fp_mn[32] = "", int_text[96] = "";
	int nw = 0, n_fp = 0;

	out[0] = 0;
	for (size_t i = c->loops[l].first; i <= c->loops[l].last; i++) {
		const struct profile_insn *in = &c->insns[i];
		char ops[4][96], dst[8];
		int nops;
		if (!profile_loop_has(c, l, i) || in->mn[0] == 'j' || starts(in->mn, "call"))
			continue;
		nops = profile_split_ops(in->ops, ops);
		if (!nops)
			continue;
		reg_id(ops[nops - 1], dst, sizeof(dst));
		if (!dst[0])
			continue;
		int seen = 0;
		for (int k = 0; k < nw; k++)
			seen |= !strcmp(written[k], dst);
		if (!seen && reads_dest(in->mn, ops, nops)) {
			struct profile_iclass cl;
			profile_insn_class(in, &cl);
			if (dst[0] == 'v' && cl.fp) {
				if (n_fp < 4) {
					size_t k = strlen(fp_regs);
					snprintf(fp_regs + k, sizeof(fp_regs) - k, "%s%s", n_fp ? ", " : "", ops[nops - 1]);
				}
				if (!n_fp)
					snprintf(fp_mn, sizeof(fp_mn), "%s", in->mn);
				n_fp++;
			} else if (dst[0] != 'v' && (starts(in->mn, "imul") || starts(in->mn, "mul")) && !int_text[0]) {
				snprintf(int_text, sizeof(int_text), "%s into %s", in->mn, ops[nops - 1]);
			}
		}
		if (!seen && nw < 64)
			snprintf(written[nw++], sizeof(written[0]), "%s", dst);
	}
	if (n_fp)
		snprintf(out, len, "%s into %s%s: %d accumulator%s", fp_mn, fp_regs, n_fp > 4 ? ", ..." : "", n_fp,
			 n_fp == 1 ? "" : "s");
	else if (int_text[0])
		snprintf(out, len, "%s", int_text);
}

struct cand {
	size_t loop;
	double score;
};

static int by_score(const void *a, const void *b)
{
	const struct cand *x = a, *y = b;

	return x->score < y->score ? 1 : x->score > y->score ? -1 : (x->loop > y->loop) - (x->loop < y->loop);
}

int pragma_mca_plan(const char *objdump_text, const char *source_name, const char *callgrind_text,
		    const char *so_name, const struct pragma_machine *m, int version, int max_loops,
		    struct pragma_mca_plan *plan)
{
	struct profile_code c;
	double *cost = NULL, total = 0;
	struct cand *cand = NULL;
	size_t nc = 0;
	int any512 = 0;

	memset(plan, 0, sizeof(*plan));
	if (profile_code_parse(objdump_text, source_name, &c) < 0)
		return -1;
	plan->n_found = c.n_loops;
	if (callgrind_text && so_name && profile_callgrind_costs(callgrind_text, so_name, &c, &cost) == 0) {
		for (size_t i = 0; i < c.n; i++)
			total += cost[i];
		if (total <= 0) {
			free(cost);
			cost = NULL;
		}
	}
	cand = calloc(c.n_loops + 1, sizeof(*cand));
	if (!cand)
		abort();
	for (int pass = 0; pass < 2 && !nc; pass++) {
		/* measured first; when no innermost loop got any count (the
		 * counts did not line up with this listing), statically */
		if (pass == 1) {
			if (!cost)
				break;
			free(cost);
			cost = NULL;
			plan->n_innermost = 0;
		}
		plan->measured = cost != NULL;
		for (size_t l = 0; l < c.n_loops; l++) {
			const struct profile_loop *L = &c.loops[l];
			if (!L->innermost)
				continue;
			plan->n_innermost++;
			if (L->n_insns > MCA_MAX_INSNS)
				continue;
			double score = 0;
			if (cost) {
				for (size_t i = L->first; i <= L->last; i++)
					if (profile_loop_has(&c, l, i))
						score += cost[i];
				score = 100 * score / total;
				if (score <= 0)
					continue; /* never ran */
			} else {
				/* Deeper runs more often; a scalar or narrower loop on the
				 * same source line as a wider one is its remainder; then
				 * loops that do FP work, and those of an OpenMP region
				 * (where a parallel kernel's work is), before the rest
				 * (a loop over the dimensions of a shape). */
				int w = loop_width(&c, l), remainder = 0, fp = 0;
				for (size_t k = 0; k < c.n_loops && !remainder; k++)
					if (k != l && c.loops[k].innermost && c.loops[k].fn_id == L->fn_id &&
					    c.loops[k].line_head == L->line_head && L->line_head > 0 &&
					    loop_width(&c, k) > w)
						remainder = 1;
				for (size_t i = L->first; i <= L->last && !fp; i++)
					if (profile_loop_has(&c, l, i)) {
						struct profile_iclass cl;
						profile_insn_class(&c.insns[i], &cl);
						fp = cl.fp != 0;
					}
				score = 100.0 * (c.fns[L->fn_id].outer_depth + L->depth) + (remainder ? 0 : 40) +
					(fp ? 30 : 0) + (c.fns[L->fn_id].omp_region ? 20 : 0) + fmin(L->n_insns, 9);
			}
			cand[nc++] = (struct cand){ l, score };
		}
	}
	qsort(cand, nc, sizeof(*cand), by_score);
	if (nc > (size_t)max_loops)
		nc = (size_t)max_loops;
	plan->loops = calloc(nc + 1, sizeof(*plan->loops));
	if (!plan->loops)
		abort();
	for (size_t k = 0; k < nc; k++) {
		size_t l = cand[k].loop;
		const struct profile_loop *L = &c.loops[l];
		struct pragma_mca_loop *ml = &plan->loops[plan->n++];
		struct pragma_buf in = PRAGMA_BUF_INIT;
		char line[256];

		snprintf(ml->fn, sizeof(ml->fn), "%s", c.fns[L->fn_id].name);
		ml->addr = c.insns[L->head].addr;
		ml->line = L->line_head;
		ml->line_lo = L->line_lo;
		ml->line_hi = L->line_hi;
		ml->depth = L->depth;
		ml->outer_depth = c.fns[L->fn_id].outer_depth;
		ml->n_insns = (int)L->n_insns;
		ml->branches = L->branches;
		ml->calls = L->calls;
		ml->weight = cand[k].score;
		ml->measured = plan->measured;
		pragma_buf_addf(&in, "# loop at 0x%lx in %s, lines %d-%d, depth %d\n.Lmca_head:\n", ml->addr, ml->fn,
				L->line_lo, L->line_hi, L->depth);
		for (size_t i = L->first; i <= L->last; i++) {
			struct profile_iclass cl;
			if (!profile_loop_has(&c, l, i))
				continue;
			profile_insn_class(&c.insns[i], &cl);
			if (cl.fp) {
				int w = cl.fp == 2 ? (cl.width ? cl.width : 128) : 0;
				double lanes = cl.fp == 2 ? w / (cl.dbl ? 64.0 : 32.0) : 1;
				ml->flops += lanes * (cl.fma ? 2 : 1);
			}
			if (profile_insn_avx512(&c.insns[i]))
				ml->avx512 = any512 = 1;
			if (convert(&c.insns[i], line, sizeof(line)))
				pragma_buf_adds(&in, line);
		}
		ml->input = pragma_buf_detach(&in, NULL);
		loop_chains(&c, l, ml->chain, sizeof(ml->chain));
	}
	pragma_mca_cpu(m, any512, version, plan->cpu, sizeof(plan->cpu), plan->caveat, sizeof(plan->caveat));
	plan->version = version;
	plan->iterations = 200;
	free(cand);
	free(cost);
	profile_code_release(&c);
	return 0;
}

void pragma_mca_plan_release(struct pragma_mca_plan *plan)
{
	for (size_t i = 0; i < plan->n; i++)
		free(plan->loops[i].input);
	free(plan->loops);
	memset(plan, 0, sizeof(*plan));
}

/* ---- llvm-mca's complaints ---- */

/* "addq" and "add" are one instruction to us */
static int same_mnemonic(const char *a, const char *b)
{
	size_t la = strlen(a), lb = strlen(b);

	if (!strcmp(a, b))
		return 1;
	if (la == lb + 1 && !strncmp(a, b, lb) && strchr("bwlq", a[la - 1]))
		return 1;
	if (lb == la + 1 && !strncmp(a, b, la) && strchr("bwlq", b[lb - 1]))
		return 1;
	return 0;
}

int pragma_mca_fix_input(struct pragma_mca_loop *l, const char *err_text)
{
	int drop[64], nd = 0;
	char bad_mn[32] = "";
	const char *s = err_text;

	while (s && *s) {
		const char *eol = strchr(s, '\n');
		size_t len = eol ? (size_t)(eol - s) : strlen(s);
		char buf[512];
		const char *e;

		snprintf(buf, sizeof(buf), "%.*s", (int)(len < sizeof(buf) - 1 ? len : sizeof(buf) - 1), s);
		s = eol ? eol + 1 : NULL;
		/* "/tmp/x/loop0.s:12:5: error: invalid operand for instruction" */
		if ((e = strstr(buf, ": error:")) || (e = strstr(buf, ": warning:"))) {
			const char *p = e;
			int colons = 0;
			while (p > buf && colons < 2) {
				p--;
				if (*p == ':')
					colons++;
			}
			int ln = 0;
			if (colons == 2 && sscanf(p + 1, "%d:", &ln) == 1 && ln > 0 && nd < 64 && strstr(buf, ": error:"))
				drop[nd++] = ln;
		}
		/* "note: instruction: \tvfmadd231ps\t(%r10), %zmm3, %zmm0" */
		if ((e = strstr(buf, "instruction:"))) {
			e += 12;
			while (*e == ' ' || *e == '\t')
				e++;
			size_t ml = strcspn(e, " \t");
			snprintf(bad_mn, sizeof(bad_mn), "%.*s", (int)(ml < 31 ? ml : 31), e);
		}
	}
	if (!nd && !bad_mn[0])
		return 0;
	struct pragma_buf out = PRAGMA_BUF_INIT;
	int ln = 0, dropped = 0;
	for (const char *p = l->input; p && *p;) {
		const char *eol = strchr(p, '\n');
		size_t len = eol ? (size_t)(eol - p + 1) : strlen(p);
		int skip = 0;
		ln++;
		for (int k = 0; k < nd; k++)
			skip |= drop[k] == ln;
		if (!skip && bad_mn[0] && p[0] == '\t') {
			char mn[32];
			size_t ml = strcspn(p + 1, " \t\n");
			snprintf(mn, sizeof(mn), "%.*s", (int)(ml < 31 ? ml : 31), p + 1);
			skip = same_mnemonic(mn, bad_mn);
		}
		if (skip && p[0] == '\t') {
			pragma_buf_adds(&out, "# left out: ");
			pragma_buf_add(&out, p + 1, len - 1);
			dropped++;
		} else {
			pragma_buf_add(&out, p, len);
		}
		p += len;
	}
	if (!dropped) {
		pragma_buf_release(&out);
		return 0;
	}
	free(l->input);
	l->input = pragma_buf_detach(&out, NULL);
	l->dropped += dropped;
	return 1;
}

/* ---- llvm-mca's answer ---- */

/* What a resource executes, by the names of LLVM's scheduling models
 * (X86Sched*.td): Intel "SKXPort0".."7", AMD "Zn3FPP0", "Zn3Load", ... */
static const char *resource_desc(const char *name)
{
	const char *p = strstr(name, "Port");

	if (p && isdigit((unsigned char)p[4])) {
		switch (atoi(p + 4)) {
		case 0:
			return "vector ALU/FMA, divides, branches";
		case 1:
			return "vector ALU/FMA";
		case 5:
			return "vector shuffles/ALU (512-bit FMA on servers)";
		case 2:
		case 3:
			return "loads";
		case 4:
		case 9:
			return "store data";
		case 7:
		case 8:
			return "store addresses";
		case 6:
		case 10:
			return "branches, integer ALU";
		case 11:
			return "loads";
		default:
			return "integer/vector ALU";
		}
	}
	if (strstr(name, "Divider"))
		return "divider";
	if (strstr(name, "FPSt") || strstr(name, "FPP45") || strstr(name, "FP45") || strstr(name, "FPStore"))
		return "FP store data, FP-to-integer moves";
	if (strstr(name, "FPP") || strstr(name, "FPU") || strstr(name, "FP"))
		return "FP/vector pipe";
	if (strstr(name, "Load"))
		return "loads";
	if (strstr(name, "Store"))
		return "stores";
	if (strstr(name, "AGU"))
		return "address generation (loads and stores)";
	if (strstr(name, "LSU"))
		return "load/store unit";
	if (strstr(name, "BRU"))
		return "branches";
	if (strstr(name, "ALU"))
		return "integer ALU";
	if (strstr(name, "Mul"))
		return "integer multiply";
	return "execution resource";
}

/* The per-iteration pressure of one resource (the largest of its units). */
static double pressure_of(const char *text, char names[][48], int n_names, const char *want)
{
	const char *s = strstr(text, "Resource pressure per iteration:\n");
	double best = 0;

	if (!s || !(s = strchr(s, '\n')) || !(s = strchr(s + 1, '\n')))
		return 0;
	s++;
	for (int k = 0; k < n_names; k++) {
		char *end;
		double v = 0;
		while (*s == ' ')
			s++;
		if (*s == '\n' || !*s)
			break;
		if (*s == '-') {
			s++;
		} else {
			v = strtod(s, &end);
			if (end == s)
				break;
			s = end;
		}
		if (!strcmp(names[k], want) && v > best)
			best = v;
	}
	return best;
}

static double field(const char *text, const char *key)
{
	const char *p = strstr(text, key);

	return p ? strtod(p + strlen(key), NULL) : NAN;
}

int pragma_mca_parse(const char *text, struct pragma_mca_loop *l, struct pragma_err *err)
{
	double iters = field(text, "Iterations:"), cycles = field(text, "Total Cycles:"),
	       uops = field(text, "Total uOps:"), rthr = field(text, "Block RThroughput:"), ipc = field(text, "\nIPC:"),
	       width = field(text, "Dispatch Width:");
	char names[64][48];
	int n_names = 0;
	const char *s;

	if (!(iters > 0) || !(cycles > 0) || !(rthr >= 0))
		return pragma_err_set(err, PRAGMA_E_INTERNAL, "llvm-mca's output has no summary (Iterations, Total Cycles, "
							      "Block RThroughput)");
	l->cycles = cycles / iters;
	l->resource_cycles = rthr;
	l->uops = uops > 0 ? uops / iters : NAN;
	l->ipc = ipc;
	l->dispatch_width = width > 0 ? (int)width : 0;
	/* Resources: "[0]   - SKXDivider", "[12.0] - Zn3FPP45" */
	s = strstr(text, "\nResources:\n");
	if (s) {
		s += 12;
		while (*s == '[' && n_names < 64) {
			const char *dash = strstr(s, "- ");
			const char *eol = strchr(s, '\n');
			if (!dash || !eol || dash > eol)
				break;
			size_t nl = (size_t)(eol - dash - 2);
			snprintf(names[n_names++], sizeof(names[0]), "%.*s", (int)(nl < 47 ? nl : 47), dash + 2);
			s = eol + 1;
		}
	}
	/* "Resource pressure per iteration:" then the column headers, then
	 * the values ("-" for none), one per resource unit. */
	s = strstr(text, "Resource pressure per iteration:\n");
	if (s && n_names) {
		s = strchr(s, '\n') + 1;
		s = strchr(s, '\n');
		if (s) {
			s++;
			double best = -1;
			for (int k = 0; k < n_names; k++) {
				char *end;
				while (*s == ' ')
					s++;
				if (*s == '\n' || !*s)
					break;
				double v = 0;
				if (*s == '-') {
					s++;
				} else {
					v = strtod(s, &end);
					if (end == s)
						break;
					s = end;
				}
				if (v > best + 1e-9) {
					best = v;
					snprintf(l->resource, sizeof(l->resource), "%.47s", names[k]);
				}
			}
			l->resource_load = best > 0 ? best : 0;
			if (best <= 0)
				l->resource[0] = 0;
		}
	}
	if (l->resource[0])
		snprintf(l->resource_desc, sizeof(l->resource_desc), "%s", resource_desc(l->resource));
	/* The critical sequence: the first register dependency it names.
	 * " +----> 3.    vfmadd231ps	(%r10), %ymm3, %ymm0      ## REGISTER dependency:  %ymm0" */
	s = strstr(text, "Critical sequence based on the simulation:");
	if (s) {
		const char *dep = strstr(s, "## REGISTER dependency:");
		if (dep) {
			const char *bol = dep;
			while (bol > s && bol[-1] != '\n')
				bol--;
			const char *dot = strstr(bol, ". ");
			char mn[32] = "", reg[32] = "";
			if (dot && dot < dep) {
				const char *m = dot + 1;
				while (*m == ' ' || *m == '\t')
					m++;
				size_t ml = strcspn(m, " \t");
				snprintf(mn, sizeof(mn), "%.*s", (int)(ml < 31 ? ml : 31), m);
			}
			sscanf(dep + 23, " %31s", reg);
			/* our own reading of the body (the accumulators) comes first */
			if (mn[0] && reg[0] && !l->chain[0])
				snprintf(l->chain, sizeof(l->chain), "%s through %s", mn, reg);
		}
	}
	/* The bottleneck analysis: the share of cycles the backend was held
	 * up by resource pressure (with the resources named) and by data
	 * dependencies. */
	s = strstr(text, "Throughput Bottlenecks:");
	int have_ba = 0;
	if (s) {
		const char *r = strstr(s, "Resource Pressure"), *dd = strstr(s, "Data Dependencies:");
		const char *lb;
		if (r && (lb = strchr(r, '[')))
			l->res_pct = strtod(lb + 1, NULL), have_ba = 1;
		if (dd && (lb = strchr(dd, '[')))
			l->dep_pct = strtod(lb + 1, NULL), have_ba = 1;
		/* "  - Zn4FP1  [ 97.73% ]": the resource held up most */
		double top = 0;
		for (const char *q = r; q && dd && q < dd; q = strchr(q + 1, '\n')) {
			char name[48];
			double v;
			if (sscanf(q, "\n  - %47s [ %lf", name, &v) == 2 && v > top) {
				top = v;
				snprintf(l->pressed, sizeof(l->pressed), "%s", name);
			}
		}
	}
	/* What sets the pace: a dependency chain when the simulated cycles
	 * exceed by a third what the ports need (an ideal spread, or the
	 * busiest port as the simulation loaded it: the same figure
	 * mca.latency_pct uses, so the remark and the metric agree); the
	 * dispatch width when the micro-ops fill it; else the busiest port,
	 * the one the bottleneck analysis names most when it names one. */
	double need = fmax(l->resource_cycles, l->resource_load);
	if (need > 0 && l->cycles > need * 4 / 3) {
		snprintf(l->bound, sizeof(l->bound), "latency");
	} else if (have_ba && l->res_pct >= l->dep_pct && l->pressed[0] && strcmp(l->pressed, l->resource) &&
		   pressure_of(text, names, n_names, l->pressed) >= l->resource_load - 1e-9) {
		/* a tie for the busiest: the one the analysis saw holding up the backend */
		snprintf(l->resource, sizeof(l->resource), "%s", l->pressed);
		snprintf(l->resource_desc, sizeof(l->resource_desc), "%s", resource_desc(l->resource));
		snprintf(l->bound, sizeof(l->bound), "port");
	} else if (l->dispatch_width > 0 && l->uops > 0 && l->uops / l->dispatch_width >= 0.9 * l->cycles &&
		 l->uops / l->dispatch_width >= l->resource_load)
		snprintf(l->bound, sizeof(l->bound), "dispatch");
	else
		snprintf(l->bound, sizeof(l->bound), "port");
	l->analyzed = 1;
	return 0;
}

/* ---- into the profile ---- */

/* "4.04 cycles per iteration (an ideal spread over the ports needs 2.00): latency-bound:
 * ...; 16 FP operations per iteration = 4.0 per cycle [lines 17-19, depth 3
 * in pk_forward._omp_fn.0, 8 instructions]" */
static void loop_text(const struct pragma_mca_loop *l, char *out, size_t len)
{
	char where[64] = "", bound[200] = "", flops[80] = "", share[64] = "";

	if (l->line_lo > 0 && l->line_hi > l->line_lo)
		snprintf(where, sizeof(where), "lines %d-%d, ", l->line_lo, l->line_hi);
	if (!strcmp(l->bound, "latency"))
		snprintf(bound, sizeof(bound), "latency-bound: a loop-carried dependency%s%s%s sets the pace",
			 l->chain[0] ? " (" : "", l->chain, l->chain[0] ? ")" : "");
	else if (!strcmp(l->bound, "dispatch"))
		snprintf(bound, sizeof(bound), "bound by dispatch (%.1f micro-ops per iteration, %d per cycle)", l->uops,
			 l->dispatch_width);
	else if (l->resource[0])
		snprintf(bound, sizeof(bound), "bound by port %s (%s), busy %.0f%% of the cycles", l->resource,
			 l->resource_desc, l->cycles > 0 ? 100 * l->resource_load / l->cycles : 0);
	if (l->flops > 0 && l->cycles > 0)
		snprintf(flops, sizeof(flops), "; %.0f FP operations per iteration = %.1f per cycle", l->flops,
			 l->flops / l->cycles);
	if (l->measured)
		snprintf(share, sizeof(share), "; %.0f%% of the executed instructions", l->weight);
	snprintf(out, len, "%.2f cycles per iteration (an ideal spread over the ports needs %.2f): %s%s%s [%sdepth %d in %s%s, %d instructions%s%s%s]",
		 l->cycles, l->resource_cycles, bound, flops, share, where, l->depth, l->fn,
		 l->outer_depth ? " (+ outer loops)" : "", l->n_insns, l->branches ? ", branches inside" : "",
		 l->calls ? ", calls inside: the callee is not modeled" : "", l->dropped ? ", some left out" : "");
}

/* FP32 operations per cycle a core of this model can do at most: two FMA
 * pipes everywhere we model, 256 bits wide (Zen 4 and its model split
 * 512-bit operations in two), 512 on the Intel server cores when the loop
 * uses 512-bit vectors; Zen 1's are 128 bits. */
static double peak_per_cycle(const char *cpu, int avx512)
{
	if (!strcmp(cpu, "znver1"))
		return 16;
	if (avx512 && (!strcmp(cpu, "icelake-server") || !strcmp(cpu, "skylake-avx512") ||
		       !strcmp(cpu, "cascadelake") || !strcmp(cpu, "cooperlake") || !strcmp(cpu, "sapphirerapids")))
		return 64;
	if (!strcmp(cpu, "x86-64"))
		return 8;
	return 32;
}

void pragma_mca_report(const struct pragma_mca_plan *plan, const char *source_name, struct pragma_profile *p)
{
	const struct pragma_mca_loop *hot = NULL;
	int analyzed = 0, branchy = 0, calls = 0, dropped = 0;

	for (size_t i = 0; i < plan->n; i++) {
		const struct pragma_mca_loop *l = &plan->loops[i];
		char text[384];
		if (!l->analyzed)
			continue;
		analyzed++;
		if (!hot)
			hot = l;
		branchy |= l->branches > 0;
		calls |= l->calls > 0;
		dropped += l->dropped;
		if (analyzed <= 4) {
			loop_text(l, text, sizeof(text));
			pragma_profile_remark(p, PRAGMA_REMARK_LOOP, l->line, text, NULL);
		}
	}
	if (!hot)
		return;
	pragma_profile_set(p, "mca.cycles_per_iter", hot->cycles, "mca");
	pragma_profile_set(p, "mca.port_cycles_per_iter", hot->resource_cycles, "mca");
	if (hot->resource[0] && hot->cycles > 0)
		pragma_profile_set(p, "mca.port_pressure_pct", 100 * hot->resource_load / hot->cycles, "mca");
	if (hot->cycles > 0)
		pragma_profile_set(p, "mca.latency_pct",
				   100 * fmax(0, hot->cycles - fmax(hot->resource_cycles, hot->resource_load)) / hot->cycles,
				   "mca");
	if (hot->flops > 0 && hot->cycles > 0) {
		pragma_profile_set(p, "mca.flops_per_cycle", hot->flops / hot->cycles, "mca");
		pragma_profile_set(p, "mca.peak_flops_per_cycle", peak_per_cycle(plan->cpu, hot->avx512), "mca");
	}
	pragma_profile_set(p, "mca.ipc", hot->ipc, "mca");
	pragma_profile_set(p, "mca.uops_per_iter", hot->uops, "mca");
	if (hot->measured)
		pragma_profile_set(p, "mca.hot_loop_pct", hot->weight, "mca");
	pragma_profile_set(p, "mca.loops_analyzed", analyzed, "mca");
	pragma_profile_note(p,
			    "mca: llvm-mca %d's %s model of this build's %d hottest innermost loop%s (of %zu loops, %zu "
			    "innermost), picked %s; mca.* describe the hottest (%s:%d). A model: every load hits L1, "
			    "every instruction of the body runs each iteration, cycles are per iteration of the loop "
			    "as compiled (after unrolling)",
			    plan->version, plan->cpu, analyzed, analyzed == 1 ? "" : "s", plan->n_found, plan->n_innermost,
			    plan->measured ? "by callgrind's instruction counts of this same build"
					   : "statically (deepest nesting first, vector bodies before their remainders, FP work and OpenMP regions before the rest)",
			    source_name && *source_name ? source_name : "kernel.c", hot->line);
	if (plan->caveat[0])
		pragma_profile_note(p, "mca: %s", plan->caveat);
	if (branchy)
		pragma_profile_note(p, "mca: a loop with branches inside is modeled as if every path ran each iteration");
	if (calls)
		pragma_profile_note(p, "mca: a call inside a loop is modeled as one instruction; the callee's time is not");
	if (dropped)
		pragma_profile_note(p, "mca: %d instruction%s llvm-mca could not read %s left out of the model", dropped,
				    dropped == 1 ? "" : "s", dropped == 1 ? "was" : "were");
}
