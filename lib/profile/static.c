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

/* crt and loader stubs that are in every .so */
static int stub(const char *fn)
{
	static const char *const names[] = { "deregister_tm_clones", "register_tm_clones", "__do_global_dtors_aux",
					     "frame_dummy", "_init", "_fini", "_start", NULL };

	for (int i = 0; names[i]; i++)
		if (!strcmp(fn, names[i]))
			return 1;
	return 0;
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
static int split_ops(const char *ops, char out[4][96])
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

static int stack_mem(const char *op)
{
	return is_mem(op) && (strstr(op, "(%rsp") || strstr(op, "(%rbp"));
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
	int nops = split_ops(in->ops, ops);

	memset(c, 0, sizeof(*c));
	c->fp = fp_arith(in->mn, base);
	c->fma = c->fp && (starts(base, "fmadd") || starts(base, "fmsub") || starts(base, "fnmadd") ||
			   starts(base, "fnmsub") || starts(base, "fmaddsub") || starts(base, "fmsubadd"));
	c->mul = c->fp && !strcmp(base, "mul");
	c->add = c->fp && (!strcmp(base, "add") || !strcmp(base, "sub"));
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
	/* A vector or FP register moved to or from the stack: a spill or a
	 * reload (the SysV ABI has no callee-saved vector registers). movq and
	 * movd are gcc parking integers in xmm registers, not FP data. */
	const char *m = in->mn[0] == 'v' ? in->mn + 1 : in->mn;
	int fp_move = starts(m, "movap") || starts(m, "movup") || !strcmp(m, "movss") || !strcmp(m, "movsd") ||
		      ((starts(m, "movdq")) && width_of(in->ops) > 128);
	c->stack_vec = fp_move && nops == 2 &&
		       ((stack_mem(ops[1]) && vec_reg(ops[0])) || (stack_mem(ops[0]) && vec_reg(ops[1])));
}

/* Loops: the range of every backward jump inside one function; innermost
 * when no other loop lies inside it. */
static void mark_loops(struct profile_insn *v, size_t n)
{
	unsigned long lo[512], hi[512];
	size_t nl = 0;

	for (size_t i = 0; i < n && nl < 512; i++) {
		unsigned long target;
		if (v[i].mn[0] != 'j' || sscanf(v[i].ops, "%lx", &target) != 1 || target > v[i].addr ||
		    target < v[0].addr)
			continue;
		lo[nl] = target;
		hi[nl++] = v[i].addr;
	}
	for (size_t l = 0; l < nl; l++) {
		int inner = 1;
		for (size_t m = 0; m < nl && inner; m++)
			if (m != l && lo[m] >= lo[l] && hi[m] <= hi[l] && (lo[m] != lo[l] || hi[m] != hi[l]))
				inner = 0;
		for (size_t i = 0; i < n; i++)
			if (v[i].addr >= lo[l] && v[i].addr <= hi[l]) {
				v[i].in_loop = 1;
				if (inner)
					v[i].in_inner = 1;
			}
	}
}

int profile_objdump_insns(const char *text, const char *source_name, struct profile_insn **out, size_t *n_out)
{
	struct profile_insn *v = NULL;
	size_t n = 0, alloc = 0, fn_start = 0;
	int in_fn = 0, cur_line = 0, funcs = 0;
	char cur_fn[64] = "";
	const char *line = text;

	*out = NULL;
	*n_out = 0;
	while (line && *line) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		char buf[512];
		unsigned long addr;
		char fn[256];

		snprintf(buf, sizeof(buf), "%.*s", (int)(len < sizeof(buf) - 1 ? len : sizeof(buf) - 1), line);
		line = eol ? eol + 1 : NULL;
		if (buf[0] != ' ' && sscanf(buf, "%lx <%255[^>]>:", &addr, fn) == 2) {
			if (in_fn)
				mark_loops(v + fn_start, n - fn_start);
			fn_start = n;
			in_fn = !stub(fn) && !strstr(fn, "@plt");
			funcs += in_fn;
			snprintf(cur_fn, sizeof(cur_fn), "%.63s", fn);
			cur_line = 0;
			continue;
		}
		if (!in_fn)
			continue;
		/* "/path/kernel.c:31" or "/path/kernel.c:31 (discriminator 2)" */
		if (buf[0] != ' ' && strchr(buf, ':') && !strstr(buf, "():")) {
			char *colon, *paren = strstr(buf, " (discriminator");
			if (paren)
				*paren = 0;
			colon = strrchr(buf, ':');
			if (colon) {
				const char *base = strrchr(buf, '/');
				*colon = 0;
				base = base ? base + 1 : buf;
				cur_line = (!source_name || !*source_name || !strcmp(base, source_name)) ? atoi(colon + 1) : 0;
			}
			continue;
		}
		char *tab = strchr(buf, '\t');
		if (buf[0] != ' ' || !tab || sscanf(buf, " %lx:", &addr) != 1)
			continue;
		char *ins = tab + 1;
		while (*ins == ' ')
			ins++;
		/* Prefixes objdump prints as words. */
		static const char *const prefixes[] = { "rep ", "repz ", "repnz ", "lock ", "notrack ", "bnd ",
							"data16 ", "cs ", "ds ", "{vex} ", "{evex} ", NULL };
		for (int k = 0; prefixes[k]; k++)
			if (starts(ins, prefixes[k])) {
				ins += strlen(prefixes[k]);
				while (*ins == ' ')
					ins++;
				k = -1;
			}
		if (!*ins || starts(ins, "(bad)"))
			continue;
		if (n == alloc) {
			alloc = alloc ? 2 * alloc : 1024;
			v = realloc(v, alloc * sizeof(*v));
			if (!v)
				abort();
		}
		struct profile_insn *in = &v[n++];
		memset(in, 0, sizeof(*in));
		in->addr = addr;
		in->line = cur_line;
		snprintf(in->fn, sizeof(in->fn), "%s", cur_fn);
		size_t ml = strcspn(ins, " \t");
		snprintf(in->mn, sizeof(in->mn), "%.*s", (int)(ml < 31 ? ml : 31), ins);
		const char *o = ins + ml;
		while (*o == ' ' || *o == '\t')
			o++;
		snprintf(in->ops, sizeof(in->ops), "%s", o);
	}
	if (in_fn)
		mark_loops(v + fn_start, n - fn_start);
	if (!funcs || !n) {
		free(v);
		return -1;
	}
	*out = v;
	*n_out = n;
	return 0;
}

int pragma_static_parse_objdump(const char *text, struct pragma_profile *p)
{
	struct profile_insn *v;
	size_t n;
	double total = 0, packed = 0, scalar = 0, fma = 0, mul = 0, add = 0, loads = 0, stores = 0, branches = 0,
	       calls = 0, spills = 0, nt = 0, prefetch = 0, w128 = 0, w256 = 0, w512 = 0;
	int width = 0;

	if (profile_objdump_insns(text, p->source_name, &v, &n) < 0)
		return -1;
	for (size_t i = 0; i < n; i++) {
		struct profile_iclass c;
		profile_insn_class(&v[i], &c);
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
		if (c.width > width)
			width = c.width;
		if (c.stack_vec && v[i].in_inner)
			spills++;
		if (c.call) {
			char t[96], rtext[160];
			call_target(v[i].ops, t, sizeof(t));
			/* The OpenMP runtime's entry points are how parallel
			 * regions work, not calls in the kernel's loops. */
			if (starts(t, "GOMP_") || starts(t, "omp_"))
				continue;
			calls++;
			if (t[0]) {
				snprintf(rtext, sizeof(rtext), "%s%s", t,
					 v[i].in_inner ? " (inside an innermost loop)" : v[i].in_loop ? " (inside a loop)" : "");
				pragma_profile_remark(p, PRAGMA_REMARK_CALL, v[i].line, rtext, NULL);
			}
		}
	}
	free(v);
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
	pragma_profile_set(p, "static.stack_spills", spills, "static");
	pragma_profile_set(p, "static.nt_stores", nt, "static");
	pragma_profile_set(p, "static.prefetches", prefetch, "static");
	pragma_profile_set(p, "static.zmm", w512, "static");
	pragma_profile_set(p, "static.ymm", w256, "static");
	pragma_profile_set(p, "static.xmm", w128, "static");
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

static void code_of(const char *source, int line, char *out, size_t len)
{
	const char *s = source;

	out[0] = 0;
	if (!source || line <= 0)
		return;
	for (int l = 1; l < line && s; l++) {
		s = strchr(s, '\n');
		if (s)
			s++;
	}
	if (!s)
		return;
	while (*s == ' ' || *s == '\t')
		s++;
	size_t n = strcspn(s, "\n");
	snprintf(out, len, "%.*s", (int)(n < len - 1 ? n : len - 1), s);
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
		char code[128];
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
