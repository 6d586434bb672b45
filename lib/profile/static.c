/*
 * The static collector's parsing: the instruction mix of the kernel's
 * disassembly (objdump, AT&T syntax) and the compiler's vectorization
 * remarks mapped to source lines.
 *
 * The mix is static: it counts instructions in the code, not executions.
 * That is what makes it deterministic and cheap, and it answers the
 * questions that matter for a kernel (DESIGN 4): is the FP work packed or
 * scalar, how wide, with FMA, are vector registers spilled to the stack
 * inside loops, are there streaming stores or prefetches, which functions
 * does it call.
 */
#include <ctype.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "profile/profile_int.h"

static int starts(const char *s, const char *p)
{
	return !strncmp(s, p, strlen(p));
}

static int ends(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

/* FP arithmetic: 0 not, 1 scalar, 2 packed; base gets the operation
 * without prefix, suffix and FMA operand order ("fmadd", "mul"). */
static int fp_arith(const char *mn, char base_out[32])
{
	static const char *const ops[] = { "add", "sub", "mul", "div", "sqrt", "max", "min", "rcp", "rsqrt",
					   "hadd", "hsub", "dp", "round", "rndscale", "addsub", "scalef", "getexp",
					   "fmadd", "fmsub", "fnmadd", "fnmsub", "fmaddsub", "fmsubadd", "range", "cmp", NULL };
	static const char *const x87[] = { "fadd", "faddp", "fsub", "fsubp", "fsubr", "fsubrp", "fmul", "fmulp",
					   "fdiv", "fdivp", "fdivr", "fdivrp", "fsqrt", NULL };
	const char *m = mn[0] == 'v' ? mn + 1 : mn;
	size_t n = strlen(m);
	char base[32];

	base_out[0] = 0;
	for (int i = 0; x87[i]; i++)
		if (!strcmp(mn, x87[i])) {
			snprintf(base_out, 32, "%s", mn + 1);
			return 1;
		}
	if (n < 4 || n > 30)
		return 0;
	snprintf(base, sizeof(base), "%.*s", (int)(n - 2), m);
	/* fmadd231 → fmadd */
	for (size_t k = strlen(base); k > 0 && isdigit((unsigned char)base[k - 1]); k--)
		base[k - 1] = 0;
	/* Compares (cmpltss, vcmpneqps): the FP work of selects and clamps. */
	if (starts(base, "cmp") && strcmp(base, "cmp"))
		base[3] = 0;
	for (int i = 0; ops[i]; i++)
		if (!strcmp(base, ops[i])) {
			const char *suf = m + n - 2;
			int kind = !strcmp(suf, "ps") || !strcmp(suf, "pd") || !strcmp(suf, "ph")   ? 2
				   : !strcmp(suf, "ss") || !strcmp(suf, "sd") || !strcmp(suf, "sh") ? 1
												      : 0;
			if (kind)
				snprintf(base_out, 32, "%s", base);
			return kind;
		}
	return 0;
}

static int width_of(const char *ops)
{
	if (strstr(ops, "%zmm"))
		return 512;
	if (strstr(ops, "%ymm"))
		return 256;
	if (strstr(ops, "%xmm"))
		return 128;
	return 0;
}

/* Split AT&T operands at top-level commas (a trailing "<sym>" or "# ..."
 * comment is not an operand). */
int profile_split_ops(const char *ops, char out[4][96])
{
	int n = 0, depth = 0;
	size_t k = 0;

	for (const char *s = ops;; s++) {
		if (*s == '(')
			depth++;
		if (*s == ')')
			depth--;
		if ((*s == ',' && depth == 0) || !*s || *s == '#' || *s == '<') {
			if (n < 4) {
				while (k && out[n][k - 1] == ' ')
					k--;
				out[n][k] = 0;
				if (k)
					n++;
			}
			k = 0;
			if (!*s || *s == '#' || *s == '<')
				break;
			continue;
		}
		if (n < 4 && k < 95 && !(k == 0 && *s == ' '))
			out[n][k++] = *s;
	}
	return n;
}

static int is_mem(const char *op)
{
	return strchr(op, '(') != NULL;
}


static int vec_reg(const char *op)
{
	return strstr(op, "%xmm") || strstr(op, "%ymm") || strstr(op, "%zmm");
}

/* A move whose destination is only written. */
static int pure_write(const char *mn)
{
	return starts(mn, "mov") || starts(mn, "vmov") || starts(mn, "stos") || starts(mn, "vextract") ||
	       starts(mn, "vpscatter") || starts(mn, "vscatter") || starts(mn, "vmaskmov") ||
	       starts(mn, "vpmaskmov") || starts(mn, "vcompress") || starts(mn, "vpcompress") || starts(mn, "set") ||
	       starts(mn, "vcvtps2ph");
}

static int reads_only(const char *mn)
{
	return starts(mn, "cmp") || starts(mn, "test") || starts(mn, "ucomis") || starts(mn, "comis") ||
	       starts(mn, "vucomis") || starts(mn, "vcomis") || starts(mn, "bt") || starts(mn, "vptest") ||
	       starts(mn, "ptest");
}

/* Vector-width evidence: packed work on vector registers, not the scalar
 * FP that also lives in xmm registers, and not zeroing idioms. */
static int packed_evidence(const char *mn, char ops[4][96], int nops)
{
	const char *m = mn[0] == 'v' ? mn + 1 : mn;
	char base[32];

	if (fp_arith(mn, base) == 2)
		return 1;
	if ((ends(m, "ss") || ends(m, "sd") || ends(m, "sh")) && !starts(m, "broadcast"))
		return 0;
	if (!strcmp(m, "movd") || !strcmp(m, "movq") || starts(m, "pextr") || starts(m, "pinsr") || starts(m, "cvt"))
		return 0;
	if ((starts(m, "xorp") || starts(m, "pxor")) && nops >= 2 && !strcmp(ops[0], ops[1]))
		return 0;
	/* Register-to-register copies and xmm blends serve scalar code too. */
	int mem = nops >= 2 && (is_mem(ops[0]) || is_mem(ops[nops - 1]));
	if ((starts(m, "movup") || starts(m, "movap") || starts(m, "movdq")) && mem)
		return 1;
	if (starts(m, "movntp") || starts(m, "movntdq") || starts(m, "broadcast"))
		return 1;
	if (starts(m, "blend") || starts(m, "pblend"))
		return width_of(mn[0] == 'v' && nops ? ops[nops - 1] : "") > 128;
	if (m[0] == 'p' && (starts(m + 1, "add") || starts(m + 1, "sub") || starts(m + 1, "mul") ||
			    starts(m + 1, "madd") || starts(m + 1, "max") || starts(m + 1, "min") ||
			    starts(m + 1, "cmp") || starts(m + 1, "and") || starts(m + 1, "or") ||
			    starts(m + 1, "xor") || starts(m + 1, "shuf") || starts(m + 1, "perm") ||
			    starts(m + 1, "sll") || starts(m + 1, "srl") || starts(m + 1, "sra") || starts(m + 1, "dpb")))
		return 1;
	return 0;
}

static void call_target(const char *raw, char *out, size_t len)
{
	const char *lt = strchr(raw, '<'), *gt = lt ? strchr(lt, '>') : NULL;
	size_t n;

	out[0] = 0;
	if (!lt || !gt)
		return;
	n = (size_t)(gt - lt - 1);
	snprintf(out, len, "%.*s", (int)(n < len - 1 ? n : len - 1), lt + 1);
	char *cut = strchr(out, '@');
	if (cut)
		*cut = 0;
	cut = strchr(out, '+');
	if (cut)
		*cut = 0;
}

void profile_insn_class(const struct profile_insn *in, struct profile_iclass *c)
{
	char ops[4][96], base[32];
	int nops = profile_split_ops(in->ops, ops);

	memset(c, 0, sizeof(*c));
	c->fp = fp_arith(in->mn, base);
	c->fma = c->fp && (starts(base, "fmadd") || starts(base, "fmsub") || starts(base, "fnmadd") ||
			   starts(base, "fnmsub") || starts(base, "fmaddsub") || starts(base, "fmsubadd"));
	c->mul = c->fp && !strcmp(base, "mul");
	c->add = c->fp && (!strcmp(base, "add") || !strcmp(base, "sub"));
	const char *m = in->mn[0] == 'v' ? in->mn + 1 : in->mn;
	size_t ml = strlen(m);
	c->dbl = c->fp && ml > 2 && (!strcmp(m + ml - 2, "pd") || !strcmp(m + ml - 2, "sd"));
	c->width = packed_evidence(in->mn, ops, nops) ? width_of(in->ops) : 0;
	c->branch = in->mn[0] == 'j';
	c->call = starts(in->mn, "call");
	c->nt = strstr(in->mn, "movnt") != NULL;
	c->prefetch = starts(in->mn, "prefetch");
	if (c->branch || c->call || starts(in->mn, "lea") || starts(in->mn, "nop") || c->prefetch ||
	    starts(in->mn, "push") || starts(in->mn, "pop") || !nops)
		return;
	int dst_mem = is_mem(ops[nops - 1]), src_mem = 0;
	for (int k = 0; k < nops - 1; k++)
		src_mem |= is_mem(ops[k]);
	if (nops == 1 && dst_mem && !pure_write(in->mn))
		src_mem = 1;
	c->load = src_mem || (dst_mem && (reads_only(in->mn) || !pure_write(in->mn)));
	c->store = dst_mem && !reads_only(in->mn);
}

/* ---- spills ---- */

/* A stack operand: 1 for a fixed slot ("0x40(%rsp)", "-0x20(%rbp)"), 2 for
 * an indexed one ("0x40(%rsp,%rax,4)": an array element), 0 otherwise;
 * base 's' or 'b' and the displacement. */
static int stack_operand(const char *op, char *base, long *disp)
{
	const char *paren = strchr(op, '(');

	if (!paren)
		return 0;
	if (starts(paren, "(%rsp"))
		*base = 's';
	else if (starts(paren, "(%rbp"))
		*base = 'b';
	else
		return 0;
	*disp = paren == op ? 0 : strtol(op, NULL, 0);
	return paren[5] == ',' ? 2 : paren[5] == ')' ? 1 : 0;
}

struct slot {
	char base;
	long disp;
	int stores, loads;
	int load_loops[8];       /* innermost loops that load it */
	int n_ll;
};

struct array_base {
	char base;
	long disp;
};

/* What an instruction does with a fixed stack slot and a vector register:
 * +1 stores the register there, -1 loads from it (a move or a folded
 * reload: vfmadd231ps 0x40(%rsp),%ymm1,%ymm0), 0 neither. */
static int slot_access(const struct profile_insn *in, char ops[4][96], int nops, char *base, long *disp)
{
	int vec = 0;

	if (nops < 2 || starts(in->mn, "lea") || in->mn[0] == 'j' || starts(in->mn, "call"))
		return 0;
	for (int k = 0; k < nops; k++)
		vec |= vec_reg(ops[k]) != 0;
	if (!vec)
		return 0;
	if (stack_operand(ops[nops - 1], base, disp) == 1 && pure_write(in->mn) && vec_reg(ops[nops - 2]))
		return 1;
	for (int k = 0; k < nops - 1; k++)
		if (stack_operand(ops[k], base, disp) == 1)
			return -1;
	return 0;
}

void profile_code_spills(const struct profile_code *c, int *inner, int *outer, long *first)
{
	*inner = *outer = 0;
	*first = -1;
	for (size_t f = 0; f < c->n_fns; f++) {
		struct slot *sl = NULL;
		struct array_base *ab = NULL;
		size_t ns = 0, na = 0;
		char base;
		long disp;

		/* Pass 1: the slots vector registers go to and come from, and the
		 * stack arrays (indexed, or address taken by lea). */
		for (size_t i = c->fns[f].first; i < c->fns[f].last; i++) {
			char ops[4][96];
			int nops = profile_split_ops(c->insns[i].ops, ops);
			for (int k = 0; k < nops; k++)
				if ((stack_operand(ops[k], &base, &disp) == 2 ||
				     (starts(c->insns[i].mn, "lea") && k == 0 && stack_operand(ops[k], &base, &disp) == 1))) {
					ab = realloc(ab, (na + 1) * sizeof(*ab));
					if (!ab)
						abort();
					ab[na++] = (struct array_base){ base, disp };
				}
			int a = slot_access(&c->insns[i], ops, nops, &base, &disp);
			if (!a)
				continue;
			size_t s = 0;
			while (s < ns && !(sl[s].base == base && sl[s].disp == disp))
				s++;
			if (s == ns) {
				sl = realloc(sl, (ns + 1) * sizeof(*sl));
				if (!sl)
					abort();
				sl[ns++] = (struct slot){ .base = base, .disp = disp };
			}
			if (a > 0) {
				sl[s].stores++;
			} else {
				int L = c->insns[i].in_inner ? c->insns[i].loop : -1, k = 0;
				sl[s].loads++;
				while (k < sl[s].n_ll && sl[s].load_loops[k] != L)
					k++;
				if (L >= 0 && k == sl[s].n_ll && k < 8)
					sl[s].load_loops[sl[s].n_ll++] = L;
			}
		}
		/* A slot inside a stack array (from an array's start to the next
		 * array's, or on) is an element, not a spill slot. */
		for (size_t s = 0; s < ns; s++) {
			long lo = 0, hi = 0;
			int inside = 0;
			for (size_t k = 0; k < na; k++)
				if (ab[k].base == sl[s].base && ab[k].disp <= sl[s].disp && (!inside || ab[k].disp > lo)) {
					lo = ab[k].disp;
					inside = 1;
				}
			if (inside) {
				int bounded = 0;
				for (size_t k = 0; k < na; k++)
					if (ab[k].base == sl[s].base && ab[k].disp > lo && (!bounded || ab[k].disp < hi)) {
						hi = ab[k].disp;
						bounded = 1;
					}
				if (!bounded || sl[s].disp < hi)
					sl[s].stores = 0;
			}
		}
		/* Pass 2: the spill and reload instructions, where they are. In
		 * an innermost loop they count when the loop reloads the slot: a
		 * value stored there every iteration and read only after the
		 * loop is an array written in the loop, not a register the loop
		 * ran out of. */
		for (size_t i = c->fns[f].first; i < c->fns[f].last; i++) {
			char ops[4][96];
			int nops = profile_split_ops(c->insns[i].ops, ops);
			if (!slot_access(&c->insns[i], ops, nops, &base, &disp))
				continue;
			for (size_t s = 0; s < ns; s++)
				if (sl[s].base == base && sl[s].disp == disp && sl[s].stores && sl[s].loads) {
					int reloaded_here = 0;
					for (int k = 0; k < sl[s].n_ll; k++)
						reloaded_here |= sl[s].load_loops[k] == c->insns[i].loop;
					if (c->insns[i].in_inner && reloaded_here) {
						if (*first < 0)
							*first = (long)i;
						(*inner)++;
					} else {
						(*outer)++;
					}
				}
		}
		free(sl);
		free(ab);
	}
}

/* The callee of a call, or of a jump that leaves the function for another
 * (a tail call: "jmp 1030 <free@plt>"); "" otherwise. */
static int callee(const struct profile_code *code, size_t i, char *out, size_t len)
{
	const struct profile_insn *in = &code->insns[i];
	const struct profile_fn *f = &code->fns[in->fn_id];
	unsigned long t;

	out[0] = 0;
	if (starts(in->mn, "call")) {
		call_target(in->ops, out, len);
		return 1;
	}
	if (strcmp(in->mn, "jmp") || sscanf(in->ops, "%lx", &t) != 1)
		return 0;
	if (f->last > f->first && t >= code->insns[f->first].addr && t <= code->insns[f->last - 1].addr)
		return 0;
	call_target(in->ops, out, len);
	/* gcc's cold part of the same function (pk_forward.cold) is not a callee */
	if (strstr(out, ".cold")) {
		out[0] = 0;
		return 0;
	}
	return out[0] != 0;
}

int pragma_static_parse_objdump(const char *text, struct pragma_profile *p)
{
	struct profile_code code;
	double total = 0, packed = 0, scalar = 0, fma = 0, mul = 0, add = 0, loads = 0, stores = 0, branches = 0,
	       calls = 0, nt = 0, prefetch = 0, w128 = 0, w256 = 0, w512 = 0, avx512 = 0;
	int width = 0, sp_inner, sp_outer;
	long sp_first;

	if (profile_code_parse(text, p->source_name, &code) < 0)
		return -1;
	for (size_t i = 0; i < code.n; i++) {
		struct profile_insn *in = &code.insns[i];
		struct profile_iclass c;
		char t[96], where[160], rtext[256];

		profile_insn_class(in, &c);
		total++;
		packed += c.fp == 2;
		scalar += c.fp == 1;
		fma += c.fma;
		mul += c.mul;
		add += c.add;
		loads += c.load;
		stores += c.store;
		branches += c.branch;
		nt += c.nt;
		prefetch += c.prefetch;
		w128 += c.width == 128;
		w256 += c.width == 256;
		w512 += c.width == 512;
		avx512 += profile_insn_avx512(in);
		if (c.width > width)
			width = c.width;
		if (!callee(&code, i, t, sizeof(t)))
			continue;
		/* The OpenMP runtime's entry points are how parallel regions
		 * work, not calls in the kernel's loops. */
		if (starts(t, "GOMP_") || starts(t, "omp_") || starts(t, "__kmpc_"))
			continue;
		calls++;
		if (t[0]) {
			profile_code_where(&code, i, where, sizeof(where));
			snprintf(rtext, sizeof(rtext), "%s (%s)", t, where);
			pragma_profile_remark(p, PRAGMA_REMARK_CALL, in->line, rtext, NULL);
		}
	}
	profile_code_spills(&code, &sp_inner, &sp_outer, &sp_first);
	if (sp_inner + sp_outer > 0) {
		const char *how = "a spill is a vector register stored to a fixed stack slot and loaded back from that "
				  "slot; stores into stack arrays, indexed or with their address taken, are not spills";
		if (sp_first >= 0) {
			char where[160], at[96] = "";
			profile_code_where(&code, (size_t)sp_first, where, sizeof(where));
			if (code.insns[sp_first].line > 0)
				snprintf(at, sizeof(at), "%s:%d, ", p->source_name[0] ? p->source_name : "kernel.c",
					 code.insns[sp_first].line);
			pragma_profile_note(p, "static: %d vector spill and reload instructions in innermost loops (the first at %s%s), %d elsewhere (%s)",
					    sp_inner, at, where, sp_outer, how);
		} else {
			pragma_profile_note(p, "static: no vector spills in innermost loops; %d spill and reload instructions elsewhere (%s)",
					    sp_outer, how);
		}
	}
	pragma_profile_set(p, "static.instructions", total, "static");
	pragma_profile_set(p, "static.fp_ops", packed + scalar, "static");
	if (packed + scalar > 0)
		pragma_profile_set(p, "static.fp_packed_pct", 100 * packed / (packed + scalar), "static");
	pragma_profile_set(p, "static.vector_bits", width, "static");
	pragma_profile_set(p, "static.fma", fma, "static");
	pragma_profile_set(p, "static.fp_mul", mul, "static");
	pragma_profile_set(p, "static.fp_add", add, "static");
	pragma_profile_set(p, "static.loads", loads, "static");
	pragma_profile_set(p, "static.stores", stores, "static");
	pragma_profile_set(p, "static.branches", branches, "static");
	pragma_profile_set(p, "static.calls", calls, "static");
	pragma_profile_set(p, "static.stack_spills", sp_inner, "static");
	pragma_profile_set(p, "static.nt_stores", nt, "static");
	pragma_profile_set(p, "static.prefetches", prefetch, "static");
	pragma_profile_set(p, "static.zmm", w512, "static");
	pragma_profile_set(p, "static.ymm", w256, "static");
	pragma_profile_set(p, "static.xmm", w128, "static");
	pragma_profile_set(p, "static.avx512", avx512, "static");
	pragma_profile_set(p, "static.loops", (double)code.n_loops, "static");
	profile_code_release(&code);
	return 0;
}

/* ---- compiler remarks ---- */

/* The compiler's words, without GIMPLE: stop at the first token that
 * names an SSA temporary (_13, s_25, *_12) or at a statement. */
static void clean_reason(const char *in, char *out, size_t len)
{
	size_t k = 0;
	const char *s = in;

	while (*s == ' ')
		s++;
	while (*s && k + 1 < len) {
		if (*s == ' ' || s == in) {
			const char *t = s + (*s == ' ');
			size_t tl = strcspn(t, " ");
			int ssa = 0;
			for (size_t i = 0; i + 1 < tl; i++)
				if (t[i] == '_' && isdigit((unsigned char)t[i + 1]))
					ssa = 1;
			if (ssa || *t == '*' || *t == '&')
				break;
		}
		out[k++] = *s++;
	}
	while (k && (out[k - 1] == ' ' || out[k - 1] == ':' || out[k - 1] == '.' || out[k - 1] == ','))
		k--;
	out[k] = 0;
}

/* A plain-words reading of the common reasons, for the Conductor. */
static const char *explain_reason(const char *r)
{
	static const struct {
		const char *needle, *why;
	} map[] = {
		{ "alias", "possible aliasing (mark pointers restrict)" },
		{ "dependence", "possible aliasing or a loop-carried dependence (restrict, or restructure)" },
		{ "reorder floating-point", "FP reduction in order (several accumulators, or #pragma omp simd reduction)" },
		{ "unsafe fp math", "FP reduction in order (several accumulators, or #pragma omp simd reduction)" },
		{ "reduction", "FP reduction in order (several accumulators, or #pragma omp simd reduction)" },
		{ "strided", "strided access (transpose or reorder loops for unit stride)" },
		{ "complicated access pattern", "non-unit-stride access (reorder loops for unit stride)" },
		{ "nested loop", "outer loop (only innermost loops vectorize)" },
		{ "consecutive inner loops", "outer loop (only innermost loops vectorize)" },
		{ "control flow", "branch in the loop body (use a select or mask)" },
		{ "number of iterations", "trip count unknown to the compiler" },
		{ "call", "function call in the loop (inline it or use a vector version)" },
		{ "not supported", "an operation the vectorizer cannot handle" },
		{ "cost model", "judged unprofitable by the cost model" },
		{ "not profitable", "judged unprofitable by the cost model" },
		{ NULL, NULL },
	};

	for (int i = 0; map[i].needle; i++)
		if (strstr(r, map[i].needle))
			return map[i].why;
	return NULL;
}

struct loop_note {
	int line;
	int vectorized;
	char text[200];
};

/* Lines a remark quotes at most: a statement longer than that ends in " …". */
#define STATEMENT_LINES 4

/* Append SRC[0..n) to OUT (LEN bytes, holding *AT bytes), cut short when it
 * does not fit: then at a whole UTF-8 character, followed by " …", and
 * returns 0. */
static int put(char *out, size_t len, size_t *at, const char *src, size_t n)
{
	static const char more[] = " …";

	if (*at + n < len) {
		memcpy(out + *at, src, n);
		*at += n;
		out[*at] = 0;
		return 1;
	}
	if (*at + sizeof(more) > len)
		return 0;
	n = len - *at - sizeof(more);
	while (n && ((unsigned char)src[n] & 0xC0) == 0x80)
		n--;
	memcpy(out + *at, src, n);
	memcpy(out + *at + n, more, sizeof(more));
	*at += n + sizeof(more) - 1;
	return 0;
}

/* One line of code (S, N bytes, without its '\n'): updates the bracket
 * DEPTH and whether a block comment is open, sets *LAST to its last
 * character outside a comment, and returns where its code ends (before a
 * // comment). */
static size_t scan_line(const char *s, size_t n, int *depth, int *in_comment, char *last)
{
	char quote = 0;
	size_t end;

	*last = 0;
	for (end = 0; end < n; end++) {
		char c = s[end];
		if (*in_comment) {
			if (c == '*' && end + 1 < n && s[end + 1] == '/') {
				*in_comment = 0;
				end++;
			}
			continue;
		}
		if (quote) {
			if (c == '\\' && end + 1 < n)
				end++;
			else if (c == quote)
				quote = 0;
			*last = c;
			continue;
		}
		if (c == '/' && end + 1 < n && s[end + 1] == '/')
			break;
		if (c == '/' && end + 1 < n && s[end + 1] == '*') {
			*in_comment = 1;
			end++;
			continue;
		}
		if (c == '"' || c == '\'')
			quote = c;
		else if (c == '(' || c == '[')
			(*depth)++;
		else if (c == ')' || c == ']')
			(*depth)--;
		if (c != ' ' && c != '\t' && c != '\r')
			*last = c;
	}
	return end;
}

/* A line that ends in one of these goes on on the next line. */
static int continues(char last)
{
	return last && strchr("+-*/%&|^=<>?,!~", last);
}

/*
 * The statement at LINE of SOURCE, its lines trimmed and joined by a
 * space: a loop's header split over lines ("for (i = 0;" / "i < n;
 * i++) {"), or an expression continued on the next line, shows whole (a
 * remark showed one line only, and the model could not see the loop). It
 * starts where the statement does: gcc cites a split loop at its
 * condition's line, inside the header's parentheses, and a continued
 * expression may be cited at its last line. It ends at a line that ends in
 * ';', '{' or '}' outside parentheses, or after a preprocessor line without
 * a '\\'; a loop header without a brace takes its body's statement with
 * it. At most STATEMENT_LINES lines, LINE among them: a longer statement
 * ends in " …". A line's // comment is left out (joined, it would swallow
 * the lines after it), and brackets inside comments, strings and
 * characters do not count.
 */
static void code_of(const char *source, int line, char *out, size_t len)
{
	/* for the lines just before LINE: where each starts, the bracket
	 * depth and comment state at its start, its last character */
	struct {
		const char *at;
		int depth, in_comment;
		char last;
	} ring[STATEMENT_LINES];
	const char *s = source;
	size_t at = 0;
	int depth = 0, in_comment = 0, first;

	out[0] = 0;
	if (!source || line <= 0 || len < 8)
		return;
	for (int l = 1; l <= line; l++) {
		size_t n;
		if (!*s && l < line)
			return;
		n = strcspn(s, "\n");
		while (n && (*s == ' ' || *s == '\t'))
			s++, n--;
		ring[l % STATEMENT_LINES].at = s;
		ring[l % STATEMENT_LINES].depth = depth;
		ring[l % STATEMENT_LINES].in_comment = in_comment;
		if (l < line) {
			scan_line(s, n, &depth, &in_comment, &ring[l % STATEMENT_LINES].last);
			if (*s == '#')
				depth = 0;
			s += n + (s[n] == '\n');
		}
	}
	/* Back to the statement's first line: while LINE's start is inside
	 * brackets, or the line before ends in an operator. */
	first = line;
	while (line - first < STATEMENT_LINES - 1 && first > 1) {
		int prev = (first - 1) % STATEMENT_LINES;
		if (*ring[prev].at == '#' && ring[prev].last != '\\')
			break;
		if (ring[first % STATEMENT_LINES].depth <= 0 && !continues(ring[prev].last))
			break;
		first--;
	}
	s = ring[first % STATEMENT_LINES].at;
	depth = ring[first % STATEMENT_LINES].depth;
	in_comment = ring[first % STATEMENT_LINES].in_comment;
	for (int k = 0; *s; k++) {
		size_t n = strcspn(s, "\n"), end;
		const char *next = s + n + (s[n] == '\n');
		char last;

		if (k == STATEMENT_LINES) {
			put(out, len, &at, " …", strlen(" …"));
			return;
		}
		while (n && (*s == ' ' || *s == '\t')) {
			s++;
			n--;
		}
		end = scan_line(s, n, &depth, &in_comment, &last);
		while (end && (s[end - 1] == ' ' || s[end - 1] == '\t' || s[end - 1] == '\r'))
			end--;
		if (end && ((at && !put(out, len, &at, " ", 1)) || !put(out, len, &at, s, end)))
			return;
		if (*s == '#' ? last != '\\' : depth <= 0 && (last == ';' || last == '{' || last == '}'))
			return;
		s = next;
	}
}

void pragma_static_mark_vector_loops(const char *objdump_text, struct pragma_profile *p)
{
	struct profile_code code;

	if (profile_code_parse(objdump_text, p->source_name, &code) < 0)
		return;
	for (size_t r = 0; r < p->n_remarks; r++) {
		struct pragma_remark *rm = &p->remarks[r];
		int vec = 0;
		if (rm->kind != PRAGMA_REMARK_NOT_VECTORIZED || rm->line <= 0)
			continue;
		for (size_t i = 0; i < code.n && !vec; i++) {
			struct profile_iclass c;
			if (code.insns[i].line != rm->line)
				continue;
			profile_insn_class(&code.insns[i], &c);
			vec = c.fp == 2 && c.width >= 128;
		}
		if (vec && strlen(rm->text) + 80 < sizeof(rm->text))
			strcat(rm->text, " (its code is packed vector instructions already: intrinsics or an unrolled body)");
	}
	profile_code_release(&code);
}

int pragma_static_parse_remarks(const char *text, const char *source_name, const char *source,
				struct pragma_profile *p)
{
	struct loop_note notes[256];
	int n = 0, pending = -1, orphan = -1;
	const char *line = text;

	while (line && *line) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		char buf[1024], file[512];
		int l = 0, c = 0, off = 0;

		snprintf(buf, sizeof(buf), "%.*s", (int)(len < sizeof(buf) - 1 ? len : sizeof(buf) - 1), line);
		line = eol ? eol + 1 : NULL;
		if (sscanf(buf, "%511[^:]:%d:%d: %n", file, &l, &c, &off) < 3 || !off)
			continue;
		const char *base = strrchr(file, '/');
		base = base ? base + 1 : file;
		if (source_name && *source_name && strcmp(base, source_name))
			continue;
		const char *msg = buf + off;
		int vec = -1;
		char reason[200] = "";

		if (starts(msg, "optimized: loop vectorized")) {
			const char *using = strstr(msg, "using ");
			vec = 1;
			if (using)
				clean_reason(using + 6, reason, sizeof(reason));
		} else if (starts(msg, "optimized:") && strstr(msg, "versioned for vectorization because of possible aliasing")) {
			vec = 1;
			snprintf(reason, sizeof(reason), "with a run-time alias check (restrict would remove it)");
		} else if (starts(msg, "remark: vectorized loop")) {
			const char *w = strstr(msg, "width: ");
			vec = 1;
			if (w)
				snprintf(reason, sizeof(reason), "width %d", atoi(w + 7));
		} else if (starts(msg, "missed: couldn't vectorize loop") || !strcmp(msg, "remark: loop not vectorized") ||
			   starts(msg, "remark: loop not vectorized [")) {
			vec = 0;
		} else if (starts(msg, "missed: not vectorized:") || starts(msg, "remark: loop not vectorized:")) {
			const char *r = strchr(msg + 8, ':');
			char raw[200];
			clean_reason(r ? r + 1 : "", raw, sizeof(raw));
			char *br = strstr(raw, " [-R");
			if (br)
				*br = 0;
			/* clang's advice after ';' is long; its reason comes first */
			br = strchr(raw, ';');
			if (br)
				*br = 0;
			const char *why = explain_reason(raw);
			/* Outer loops never vectorize in gcc: not news, only noise. */
			if (why && strstr(why, "outer loop")) {
				if (pending >= 0 && !notes[pending].vectorized)
					notes[pending].line = -1;
				pending = -1;
				continue;
			}
			if (why)
				snprintf(reason, sizeof(reason), "%s; compiler: %.120s", why, raw);
			else
				snprintf(reason, sizeof(reason), "%s", raw);
			/* The reason belongs to the loop reported just before it
			 * (gcc) or to this line's loop (clang). */
			int target = pending;
			for (int i = 0; i < n && target < 0; i++)
				if (notes[i].line == l && !notes[i].vectorized)
					target = i;
			if (target >= 0 && !notes[target].text[0])
				snprintf(notes[target].text, sizeof(notes[target].text), "%s", reason);
			else if (target < 0 && n < 256) {
				/* clang: the reason comes first, at the statement's line,
				 * and "loop not vectorized" at the loop's line follows. */
				notes[n] = (struct loop_note){ .line = l, .vectorized = 0 };
				snprintf(notes[n].text, sizeof(notes[n].text), "%s", reason);
				orphan = n++;
				pending = -1;
				continue;
			}
			pending = -1;
			orphan = -1;
			continue;
		} else {
			continue;
		}
		if (vec == 0 && orphan >= 0) {
			notes[orphan].line = l;
			orphan = -1;
			pending = -1;
			continue;
		}
		orphan = -1;
		int found = -1;
		for (int i = 0; i < n; i++)
			if (notes[i].line == l)
				found = i;
		if (found < 0 && n < 256) {
			found = n++;
			notes[found] = (struct loop_note){ .line = l, .vectorized = vec };
			snprintf(notes[found].text, sizeof(notes[found].text), "%s", vec ? reason : "");
		} else if (found >= 0 && vec == 1) {
			/* vectorized wins: a versioned or epilogue loop may also be reported missed */
			if (!notes[found].vectorized)
				notes[found].text[0] = 0;
			notes[found].vectorized = 1;
			if (reason[0] && !strstr(notes[found].text, reason)) {
				size_t k = strlen(notes[found].text);
				snprintf(notes[found].text + k, sizeof(notes[found].text) - k, "%s%s", k ? ", " : "", reason);
			}
		}
		pending = vec == 0 ? found : -1;
	}
	int nv = 0, nn = 0;
	for (int i = 0; i < n; i++) {
		char code[sizeof(((struct pragma_remark *)0)->code)];
		/* A loop gcc gave up on for reasons it only found in headers
		 * (intrinsics): the code is vector already. */
		if (notes[i].line < 0 || (!notes[i].vectorized && !notes[i].text[0]))
			continue;
		code_of(source, notes[i].line, code, sizeof(code));
		pragma_profile_remark(p, notes[i].vectorized ? PRAGMA_REMARK_VECTORIZED : PRAGMA_REMARK_NOT_VECTORIZED,
				      notes[i].line, notes[i].text, code);
		if (notes[i].vectorized)
			nv++;
		else
			nn++;
	}
	pragma_profile_set(p, "static.loops_vectorized", nv, "static");
	pragma_profile_set(p, "static.loops_not_vectorized", nn, "static");
	return 0;
}
