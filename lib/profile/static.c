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

#include "pragma/profile.h"

struct insn {
	unsigned long addr;
	char mn[32];          /* mnemonic, prefixes dropped */
	char ops[160];        /* operands */
	int line;             /* source line in the kernel file; 0 elsewhere */
	int in_loop;
};

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

/* FP arithmetic: 0 not, 1 scalar, 2 packed; base (may be NULL) gets the
 * operation without prefix, suffix and FMA operand order ("fmadd", "mul"). */
static int fp_arith_base(const char *mn, char *base_out);

static int fp_arith(const char *mn)
{
	return fp_arith_base(mn, NULL);
}

static int fp_arith_base(const char *mn, char *base_out)
{
	static const char *const ops[] = { "add", "sub", "mul", "div", "sqrt", "max", "min", "rcp", "rsqrt",
					   "hadd", "hsub", "dp", "round", "rndscale", "addsub", "scalef", "getexp",
					   "fmadd", "fmsub", "fnmadd", "fnmsub", "fmaddsub", "fmsubadd", "range", NULL };
	static const char *const x87[] = { "fadd", "faddp", "fsub", "fsubp", "fsubr", "fsubrp", "fmul", "fmulp",
					   "fdiv", "fdivp", "fdivr", "fdivrp", "fsqrt", NULL };
	const char *m = mn[0] == 'v' ? mn + 1 : mn;
	size_t n = strlen(m);
	char base[32];

	for (int i = 0; x87[i]; i++)
		if (!strcmp(mn, x87[i])) {
			if (base_out)
				snprintf(base_out, 32, "%s", mn + 1);
			return 1;
		}
	if (n < 4)
		return 0;
	snprintf(base, sizeof(base), "%.*s", (int)(n - 2), m);
	/* fmadd231 → fmadd */
	for (size_t k = strlen(base); k > 0 && isdigit((unsigned char)base[k - 1]); k--)
		base[k - 1] = 0;
	for (int i = 0; ops[i]; i++)
		if (!strcmp(base, ops[i])) {
			const char *suf = m + n - 2;
			if (base_out)
				snprintf(base_out, 32, "%s", base);
			if (!strcmp(suf, "ps") || !strcmp(suf, "pd") || !strcmp(suf, "ph"))
				return 2;
			if (!strcmp(suf, "ss") || !strcmp(suf, "sd") || !strcmp(suf, "sh"))
				return 1;
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

/* Split AT&T operands at top-level commas. */
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

	if (fp_arith(mn) == 2)
		return 1;
	if ((ends(m, "ss") || ends(m, "sd") || ends(m, "sh")) && !starts(m, "broadcast"))
		return 0;
	if (!strcmp(m, "movd") || !strcmp(m, "movq") || starts(m, "pextr") || starts(m, "pinsr") || starts(m, "cvt"))
		return 0;
	if ((starts(m, "xorp") || starts(m, "pxor")) && nops >= 2 && !strcmp(ops[0], ops[1]))
		return 0;
	if (starts(m, "movup") || starts(m, "movap") || starts(m, "movdq") || starts(m, "movntp") ||
	    starts(m, "movntdq") || starts(m, "broadcast"))
		return 1;
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

struct mix {
	double total, fp_packed, fp_scalar, fma, fp_mul, fp_add, loads, stores, branches, calls, spills, nt, prefetch;
	double w128, w256, w512;
	int width;
};

static void analyse(struct insn *v, int n, const char (*raw)[192], struct mix *x, struct pragma_profile *p)
{
	/* Loops: the range of every backward jump inside the function. */
	for (int i = 0; i < n; i++) {
		unsigned long target;
		if (v[i].mn[0] != 'j' || sscanf(v[i].ops, "%lx", &target) != 1 || target > v[i].addr)
			continue;
		for (int k = 0; k < n; k++)
			if (v[k].addr >= target && v[k].addr <= v[i].addr)
				v[k].in_loop = 1;
	}
	for (int i = 0; i < n; i++) {
		struct insn *in = &v[i];
		char ops[4][96];
		char base[32] = "";
		int nops = split_ops(in->ops, ops), fp = fp_arith_base(in->mn, base), w = width_of(in->ops);

		x->total++;
		if (starts(base, "mul"))
			x->fp_mul++;
		else if (starts(base, "add") || starts(base, "sub"))
			x->fp_add++;
		if (fp == 2)
			x->fp_packed++;
		else if (fp == 1)
			x->fp_scalar++;
		if (strstr(in->mn, "fmadd") || strstr(in->mn, "fmsub") || strstr(in->mn, "fnmadd") ||
		    strstr(in->mn, "fnmsub"))
			x->fma++;
		if (packed_evidence(in->mn, ops, nops)) {
			if (w == 512)
				x->w512++;
			else if (w == 256)
				x->w256++;
			else if (w == 128)
				x->w128++;
			if (w > x->width)
				x->width = w;
		}
		if (strstr(in->mn, "movnt"))
			x->nt++;
		if (starts(in->mn, "prefetch"))
			x->prefetch++;
		if (in->mn[0] == 'j') {
			x->branches++;
			continue;
		}
		if (starts(in->mn, "call")) {
			char t[96];
			call_target(raw[i], t, sizeof(t));
			/* The OpenMP runtime's entry points are how parallel
			 * regions work, not calls in the kernel's loops. */
			if (starts(t, "GOMP_") || starts(t, "omp_"))
				continue;
			x->calls++;
			if (t[0]) {
				char text[160];
				snprintf(text, sizeof(text), "%s%s", t, in->in_loop ? " (inside a loop)" : "");
				pragma_profile_remark(p, PRAGMA_REMARK_CALL, in->line, text, NULL);
			}
			continue;
		}
		if (starts(in->mn, "lea") || starts(in->mn, "nop") || starts(in->mn, "prefetch") ||
		    starts(in->mn, "push") || starts(in->mn, "pop") || !nops)
			continue;
		int dst_mem = is_mem(ops[nops - 1]), src_mem = 0;
		for (int k = 0; k < nops - 1; k++)
			src_mem |= is_mem(ops[k]);
		if (nops == 1 && dst_mem && !pure_write(in->mn))
			src_mem = 1;
		if (src_mem || (dst_mem && (reads_only(in->mn) || !pure_write(in->mn))))
			x->loads++;
		if (dst_mem && !reads_only(in->mn))
			x->stores++;
		/* A vector or FP register moved to or from the stack inside a
		 * loop: a spill (the SysV ABI has no callee-saved vector regs). */
		if (in->in_loop && (starts(in->mn, "vmov") || starts(in->mn, "mov")) && nops == 2 &&
		    ((stack_mem(ops[1]) && vec_reg(ops[0])) || (stack_mem(ops[0]) && vec_reg(ops[1]))))
			x->spills++;
	}
}

int pragma_static_parse_objdump(const char *text, struct pragma_profile *p)
{
	struct insn *v = NULL;
	char (*raw)[192] = NULL;
	int n = 0, alloc = 0, in_fn = 0, cur_line = 0, funcs = 0;
	struct mix x = { 0 };
	const char *line = text;
	const char *src = p->source_name;

	while (line && *line) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		char buf[512];
		unsigned long addr;
		char fn[256];

		snprintf(buf, sizeof(buf), "%.*s", (int)(len < sizeof(buf) - 1 ? len : sizeof(buf) - 1), line);
		line = eol ? eol + 1 : NULL;
		if (sscanf(buf, "%lx <%255[^>]>:", &addr, fn) == 2 && buf[0] != ' ') {
			if (in_fn && n)
				analyse(v, n, (const char (*)[192])raw, &x, p);
			n = 0;
			in_fn = !stub(fn) && !strstr(fn, "@plt");
			funcs += in_fn;
			cur_line = 0;
			continue;
		}
		if (!in_fn)
			continue;
		/* "/path/kernel.c:31" or "/path/kernel.c:31 (discriminator 2)" */
		if (buf[0] == '/' || (buf[0] != ' ' && strchr(buf, ':') && !strstr(buf, "():"))) {
			char *colon = strrchr(buf, ':'), *paren = strstr(buf, " (discriminator");
			if (paren) {
				*paren = 0;
				colon = strrchr(buf, ':');
			}
			if (colon) {
				const char *base = strrchr(buf, '/');
				*colon = 0;
				base = base ? base + 1 : buf;
				cur_line = (!*src || !strcmp(base, src)) ? atoi(colon + 1) : 0;
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
			v = realloc(v, (size_t)alloc * sizeof(*v));
			raw = realloc(raw, (size_t)alloc * sizeof(*raw));
			if (!v || !raw)
				abort();
		}
		struct insn *in = &v[n];
		memset(in, 0, sizeof(*in));
		in->addr = addr;
		in->line = cur_line;
		size_t ml = strcspn(ins, " \t");
		snprintf(in->mn, sizeof(in->mn), "%.*s", (int)(ml < 31 ? ml : 31), ins);
		const char *o = ins + ml;
		while (*o == ' ' || *o == '\t')
			o++;
		snprintf(in->ops, sizeof(in->ops), "%s", o);
		snprintf(raw[n], sizeof(raw[n]), "%s", o);
		n++;
	}
	if (in_fn && n)
		analyse(v, n, (const char (*)[192])raw, &x, p);
	free(v);
	free(raw);
	if (!funcs || x.total == 0)
		return -1;
	pragma_profile_set(p, "static.instructions", x.total, "static");
	pragma_profile_set(p, "static.fp_ops", x.fp_packed + x.fp_scalar, "static");
	if (x.fp_packed + x.fp_scalar > 0)
		pragma_profile_set(p, "static.fp_packed_pct", 100 * x.fp_packed / (x.fp_packed + x.fp_scalar), "static");
	pragma_profile_set(p, "static.vector_bits", x.width, "static");
	pragma_profile_set(p, "static.fma", x.fma, "static");
	pragma_profile_set(p, "static.fp_mul", x.fp_mul, "static");
	pragma_profile_set(p, "static.fp_add", x.fp_add, "static");
	pragma_profile_set(p, "static.loads", x.loads, "static");
	pragma_profile_set(p, "static.stores", x.stores, "static");
	pragma_profile_set(p, "static.branches", x.branches, "static");
	pragma_profile_set(p, "static.calls", x.calls, "static");
	pragma_profile_set(p, "static.stack_spills", x.spills, "static");
	pragma_profile_set(p, "static.nt_stores", x.nt, "static");
	pragma_profile_set(p, "static.prefetches", x.prefetch, "static");
	pragma_profile_set(p, "static.zmm", x.w512, "static");
	pragma_profile_set(p, "static.ymm", x.w256, "static");
	pragma_profile_set(p, "static.xmm", x.w128, "static");
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
	int n = 0, pending = -1;
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
				notes[n] = (struct loop_note){ .line = l, .vectorized = 0 };
				snprintf(notes[n].text, sizeof(notes[n].text), "%s", reason);
				n++;
			}
			pending = -1;
			continue;
		} else {
			continue;
		}
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
