/*
 * The kernel's machine code as the static, sim and mca collectors see it:
 * the instructions of objdump's listing, with kernel source lines, and the
 * loops of each function found the way a compiler finds them.
 *
 * Loops are natural loops of the control-flow graph (dominators, back
 * edges), not the ranges of backward jumps: gcc places cold blocks after a
 * function's return and jumps back from them into the main path, and a
 * range would then wrap the whole function ("calls free (inside an
 * innermost loop)" about a call at the top level).
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

static void *xrealloc(void *p, size_t n)
{
	void *q = realloc(p, n ? n : 1);

	if (!q)
		abort();
	return q;
}

static void *xcalloc(size_t n, size_t size)
{
	void *q = calloc(n ? n : 1, size);

	if (!q)
		abort();
	return q;
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

/* "62 d2 7d 48 18 19 " (objdump's raw bytes): 1 and the EVEX verdict when
 * s is such a field. In 64-bit mode a 0x62 opcode byte (after segment and
 * address-size prefixes, the only legacy prefixes EVEX allows) is always
 * EVEX: BOUND does not exist there. */
static int raw_bytes(const char *s, size_t len, int *evex)
{
	int nb = 0, first = -1;

	for (size_t k = 0; k < len;) {
		if (s[k] == ' ') {
			k++;
			continue;
		}
		if (k + 1 >= len || !isxdigit((unsigned char)s[k]) || !isxdigit((unsigned char)s[k + 1]) ||
		    (k + 2 < len && s[k + 2] != ' '))
			return 0;
		unsigned b = (unsigned)strtoul((char[3]){ s[k], s[k + 1], 0 }, NULL, 16);
		if (first < 0 && b != 0x26 && b != 0x2e && b != 0x36 && b != 0x3e && b != 0x64 && b != 0x65 && b != 0x67)
			first = (int)b;
		nb++;
		k += 2;
	}
	if (!nb)
		return 0;
	*evex = first == 0x62;
	return 1;
}

/* Mnemonics that exist only EVEX-encoded (AVX-512), for listings without
 * raw bytes; registers catch the rest. */
static int evex_only(const char *mn)
{
	static const char *const pre[] = { "vpternlog", "vpermt2", "vpermi2", "vprol", "vpror", "vpsraq", "vpabsq",
					   "vpmaxsq", "vpmaxuq", "vpminsq", "vpminuq", "vrndscale", "vscalef", "vgetexp",
					   "vgetmant", "vfixupimm", "vrange", "vreduce", "vrcp14", "vrsqrt14", "vpconflict",
					   "vplzcnt", "valign", "vshuff32x4", "vshuff64x2", "vshufi32x4", "vshufi64x2",
					   "vinsertf32x", "vinsertf64x", "vinserti32x", "vinserti64x", "vextractf32x",
					   "vextractf64x", "vextracti32x", "vextracti64x", "vbroadcastf32x", "vbroadcastf64x",
					   "vbroadcasti32x", "vbroadcasti64x", "vpcompress", "vpexpand", "vcompress", "vexpand",
					   "vmovdqu8", "vmovdqu16", "vmovdqu32", "vmovdqu64", "vmovdqa32", "vmovdqa64",
					   "vpandd", "vpandq", "vpandnd", "vpandnq", "vpord", "vporq", "vpxord", "vpxorq",
					   "vfpclass", "vptestm", "vptestnm", "vpmovm2", "vpmovb2m", "vpmovw2m", "vpmovd2m",
					   "vpmovq2m", "vcvtudq2", "vcvtuqq2", "vcvtqq2", "vcvtps2udq", "vcvtpd2udq",
					   "vcvttps2udq", "vcvttpd2udq", "vcvtps2qq", "vcvtpd2qq", "vcvtps2uqq", "vcvtpd2uqq",
					   "vcvttps2qq", "vcvttpd2qq", "vcvttps2uqq", "vcvttpd2uqq", "vcvtusi2", "vcvtss2usi",
					   "vcvtsd2usi", "vcvttss2usi", "vcvttsd2usi", "vpmultishift", "vpopcnt", "vpshld",
					   "vpshrd", "vdbpsadbw", "vpmadd52", "vcvtne2ps2bf16", "vdpbf16ps", "vpermw", "vpermb",
					   "vpsllvw", "vpsrlvw", "vpsravw", "vpmovqd", "vpmovqw", "vpmovqb", "vpmovdw",
					   "vpmovdb", "vpmovwb", "vpmovsq", "vpmovsd", "vpmovsw", "vpmovusq", "vpmovusd",
					   "vpmovusw", "kmov", "kand", "kor", "kxor", "knot", "kshift", "kunpck", "kadd",
					   "ktest", "kortest", "vgather", "vpgatherq", "vscatter", "vpscatter", NULL };

	for (int i = 0; pre[i]; i++)
		if (starts(mn, pre[i]))
			return 1;
	return 0;
}

int profile_insn_avx512(const struct profile_insn *in)
{
	const char *s;

	if (in->evex >= 0)
		return in->evex;
	if (strstr(in->ops, "%zmm") || strstr(in->ops, "{1to") || strstr(in->ops, "{%k") || strstr(in->ops, "-sae}"))
		return 1;
	for (s = in->ops; (s = strstr(s, "%k")); s += 2)
		if (s[2] >= '0' && s[2] <= '7' && !isalnum((unsigned char)s[3]))
			return 1;
	for (s = in->ops; (s = strstr(s, "mm")); s += 2)
		if (s > in->ops + 1 && (s[-1] == 'x' || s[-1] == 'y') && s[-2] == '%' && atoi(s + 2) >= 16)
			return 1;
	/* gather without a mask register operand is AVX2 (vgatherdps ymm, mem, ymm) */
	if (starts(in->mn, "vgather") || starts(in->mn, "vpgather"))
		return 0;
	return evex_only(in->mn);
}

static int is_cond_jump(const char *mn)
{
	return (mn[0] == 'j' && strcmp(mn, "jmp") && !starts(mn, "jmpq")) || starts(mn, "loop") || starts(mn, "jrcxz") ||
	       starts(mn, "jecxz");
}

static int is_jump(const char *mn)
{
	return mn[0] == 'j' || starts(mn, "loop");
}

static int ends_flow(const char *mn)
{
	return starts(mn, "ret") || !strcmp(mn, "ud2") || !strcmp(mn, "hlt");
}

/* A direct jump's target address ("1210 <pk_forward+0xe0>"); 0 when indirect. */
static int jump_target(const char *ops, unsigned long *t)
{
	if (!isxdigit((unsigned char)ops[0]))
		return 0;
	return sscanf(ops, "%lx", t) == 1;
}

static size_t find_addr(const struct profile_insn *v, size_t s, size_t e, unsigned long a)
{
	size_t lo = s, hi = e;

	while (lo < hi) {
		size_t mid = lo + (hi - lo) / 2;
		if (v[mid].addr < a)
			lo = mid + 1;
		else
			hi = mid;
	}
	return lo < e && v[lo].addr == a ? lo : (size_t)-1;
}

/* ---- one function's control-flow graph, dominators and natural loops ---- */

struct cfg {
	size_t s, e;             /* instruction range */
	int nb;                  /* blocks; node nb is the virtual root */
	int *block;              /* block of instruction s+k */
	size_t *bstart, *bend;
	int (*succ)[2];
	int *nsucc;
	int *pred, *pred_off;    /* CSR */
	int *rpo_num, *idom;
	int *tree;               /* which DFS tree reached it: 0 from the entry */
};

static void cfg_release(struct cfg *g)
{
	free(g->block);
	free(g->bstart);
	free(g->bend);
	free(g->succ);
	free(g->nsucc);
	free(g->pred);
	free(g->pred_off);
	free(g->rpo_num);
	free(g->idom);
	free(g->tree);
}

static void cfg_build(const struct profile_insn *v, size_t s, size_t e, struct cfg *g)
{
	size_t n = e - s;
	unsigned char *leader = xcalloc(n + 1, 1);
	unsigned long t;

	memset(g, 0, sizeof(*g));
	g->s = s;
	g->e = e;
	leader[0] = 1;
	for (size_t k = 0; k < n; k++) {
		const struct profile_insn *in = &v[s + k];
		if (is_jump(in->mn)) {
			if (jump_target(in->ops, &t)) {
				size_t idx = find_addr(v, s, e, t);
				if (idx != (size_t)-1)
					leader[idx - s] = 1;
			}
			leader[k + 1] = 1;
		} else if (ends_flow(in->mn)) {
			leader[k + 1] = 1;
		}
	}
	g->block = xcalloc(n, sizeof(int));
	for (size_t k = 0; k < n; k++) {
		if (leader[k] && k)
			g->nb++;
		g->block[k] = g->nb;
	}
	g->nb++;
	free(leader);
	g->bstart = xcalloc((size_t)g->nb, sizeof(size_t));
	g->bend = xcalloc((size_t)g->nb, sizeof(size_t));
	for (size_t k = n; k-- > 0;)
		g->bstart[g->block[k]] = s + k;
	for (size_t k = 0; k < n; k++)
		g->bend[g->block[k]] = s + k + 1;
	g->succ = xcalloc((size_t)g->nb + 1, sizeof(*g->succ));
	g->nsucc = xcalloc((size_t)g->nb + 1, sizeof(int));
	for (int b = 0; b < g->nb; b++) {
		const struct profile_insn *last = &v[g->bend[b] - 1];
		int fall = b + 1 < g->nb;
		if (is_jump(last->mn)) {
			if (jump_target(last->ops, &t)) {
				size_t idx = find_addr(v, s, e, t);
				if (idx != (size_t)-1)
					g->succ[b][g->nsucc[b]++] = g->block[idx - s];
			}
			fall = fall && is_cond_jump(last->mn);
		} else if (ends_flow(last->mn)) {
			fall = 0;
		}
		if (fall && (g->nsucc[b] == 0 || g->succ[b][0] != b + 1))
			g->succ[b][g->nsucc[b]++] = b + 1;
	}
	/* predecessors, CSR */
	g->pred_off = xcalloc((size_t)g->nb + 2, sizeof(int));
	for (int b = 0; b < g->nb; b++)
		for (int k = 0; k < g->nsucc[b]; k++)
			g->pred_off[g->succ[b][k] + 1]++;
	for (int b = 0; b < g->nb + 1; b++)
		g->pred_off[b + 1] += g->pred_off[b];
	g->pred = xcalloc((size_t)g->pred_off[g->nb + 1] + 1, sizeof(int));
	{
		int *fill = xcalloc((size_t)g->nb + 1, sizeof(int));
		for (int b = 0; b < g->nb; b++)
			for (int k = 0; k < g->nsucc[b]; k++) {
				int d = g->succ[b][k];
				g->pred[g->pred_off[d] + fill[d]++] = b;
			}
		free(fill);
	}
}

/* Reverse postorder from a virtual root that reaches the entry and then
 * every block nothing else reached (targets of jump tables, alignment
 * padding after a jump), in address order; then Cooper, Harvey and
 * Kennedy's iterative dominators within each tree: an edge from code the
 * entry does not reach (padding falling into a loop head) does not count,
 * or it would take every dominator away. */
static void cfg_dominators(struct cfg *g)
{
	int nb = g->nb, root = nb, n_order = 0;
	int *order = xcalloc((size_t)nb + 1, sizeof(int)), *stack = xcalloc((size_t)nb + 1, sizeof(int)),
	    *it = xcalloc((size_t)nb + 1, sizeof(int)), *vroot = xcalloc((size_t)nb + 1, sizeof(int));
	int n_vroot = 0;
	unsigned char *seen = xcalloc((size_t)nb + 1, 1);

	g->rpo_num = xcalloc((size_t)nb + 1, sizeof(int));
	g->idom = xcalloc((size_t)nb + 1, sizeof(int));
	g->tree = xcalloc((size_t)nb + 1, sizeof(int));
	/* postorder DFS from each new root */
	for (int r = 0; r < nb; r++) {
		if (seen[r])
			continue;
		vroot[n_vroot++] = r;
		int sp = 0;
		stack[sp++] = r;
		seen[r] = 1;
		g->tree[r] = n_vroot - 1;
		it[r] = 0;
		while (sp) {
			int x = stack[sp - 1];
			if (it[x] < g->nsucc[x]) {
				int y = g->succ[x][it[x]++];
				if (!seen[y]) {
					seen[y] = 1;
					g->tree[y] = n_vroot - 1;
					it[y] = 0;
					stack[sp++] = y;
				}
			} else {
				order[n_order++] = x;
				sp--;
			}
		}
	}
	/* postorder of the whole graph: the trees in reverse root order, the
	 * root last; rpo_num: larger = earlier in reverse postorder */
	for (int k = 0; k < n_order; k++)
		g->rpo_num[order[k]] = k + 1;
	g->rpo_num[root] = n_order + 1;
	for (int b = 0; b <= nb; b++)
		g->idom[b] = -1;
	g->idom[root] = root;
	int changed = 1;
	while (changed) {
		changed = 0;
		for (int k = n_order - 1; k >= 0; k--) {
			int b = order[k], nd = -1;
			/* the virtual root is a predecessor of each tree's root */
			for (int r = 0; r < n_vroot; r++)
				if (vroot[r] == b)
					nd = root;
			for (int q = g->pred_off[b]; q < g->pred_off[b + 1]; q++) {
				int pb = g->pred[q];
				if (g->idom[pb] < 0 || g->tree[pb] != g->tree[b])
					continue;
				if (nd < 0) {
					nd = pb;
					continue;
				}
				int x = pb, y = nd;
				while (x != y) {
					while (g->rpo_num[x] < g->rpo_num[y])
						x = g->idom[x];
					while (g->rpo_num[y] < g->rpo_num[x])
						y = g->idom[y];
				}
				nd = x;
			}
			if (nd >= 0 && g->idom[b] != nd) {
				g->idom[b] = nd;
				changed = 1;
			}
		}
	}
	free(order);
	free(stack);
	free(it);
	free(vroot);
	free(seen);
}

static int dominates(const struct cfg *g, int h, int u)
{
	for (int x = u, guard = 0; guard <= g->nb + 1; guard++) {
		if (x == h)
			return 1;
		if (x < 0 || x == g->nb || g->idom[x] == x)
			return 0;
		x = g->idom[x];
	}
	return 0;
}

struct floop {
	int head;
	unsigned char *body;     /* per block */
	int size;
};

static void add_loops(struct profile_code *c, int fn_id)
{
	struct profile_fn *f = &c->fns[fn_id];
	struct profile_insn *v = c->insns;
	struct cfg g;
	struct floop *fl = NULL;
	int nfl = 0;

	if (f->last <= f->first)
		return;
	cfg_build(v, f->first, f->last, &g);
	cfg_dominators(&g);
	/* back edges u -> h with h dominating u; one loop per header */
	int *work = xcalloc((size_t)g.nb + 1, sizeof(int));
	for (int u = 0; u < g.nb; u++)
		for (int k = 0; k < g.nsucc[u]; k++) {
			int h = g.succ[u][k], L = -1;
			if (g.idom[u] < 0 || g.tree[u] != g.tree[h] || !dominates(&g, h, u))
				continue;
			for (int l = 0; l < nfl; l++)
				if (fl[l].head == h)
					L = l;
			if (L < 0) {
				fl = xrealloc(fl, (size_t)(nfl + 1) * sizeof(*fl));
				L = nfl++;
				fl[L].head = h;
				fl[L].body = xcalloc((size_t)g.nb, 1);
				fl[L].body[h] = 1;
				fl[L].size = 1;
			}
			int sp = 0;
			if (!fl[L].body[u]) {
				fl[L].body[u] = 1;
				fl[L].size++;
				work[sp++] = u;
			}
			while (sp) {
				int x = work[--sp];
				for (int q = g.pred_off[x]; q < g.pred_off[x + 1]; q++) {
					int pb = g.pred[q];
					if (!fl[L].body[pb] && g.idom[pb] >= 0 && g.tree[pb] == g.tree[x]) {
						fl[L].body[pb] = 1;
						fl[L].size++;
						work[sp++] = pb;
					}
				}
			}
		}
	free(work);
	/* nesting: natural loops with distinct headers nest or are disjoint */
	size_t base = c->n_loops;
	if (nfl) {
		c->loops = xrealloc(c->loops, (c->n_loops + (size_t)nfl) * sizeof(*c->loops));
		c->member = xrealloc(c->member, (c->n_loops + (size_t)nfl) * sizeof(*c->member));
	}
	for (int l = 0; l < nfl; l++) {
		struct profile_loop *L = &c->loops[base + (size_t)l];
		int depth = 1, parent = -1, psize = 0;
		memset(L, 0, sizeof(*L));
		for (int m = 0; m < nfl; m++)
			if (m != l && fl[m].body[fl[l].head] && fl[m].size > fl[l].size) {
				depth++;
				if (parent < 0 || fl[m].size < psize) {
					parent = m;
					psize = fl[m].size;
				}
			}
		L->fn_id = fn_id;
		L->head = g.bstart[fl[l].head];
		L->depth = depth;
		L->parent = parent < 0 ? -1 : (int)base + parent;
		L->innermost = 1;
		L->first = (size_t)-1;
		for (int b = 0; b < g.nb; b++)
			if (fl[l].body[b]) {
				if (g.bstart[b] < L->first)
					L->first = g.bstart[b];
				if (g.bend[b] > L->last)
					L->last = g.bend[b];
			}
		/* last: exclusive above, inclusive from here on */
		L->last--;
		c->member[base + (size_t)l] = xcalloc(L->last - L->first + 1, 1);
		for (size_t i = L->first; i <= L->last; i++)
			if (fl[l].body[g.block[i - f->first]]) {
				c->member[base + (size_t)l][i - L->first] = 1;
				L->n_insns++;
			}
	}
	c->n_loops += (size_t)nfl;
	for (int l = 0; l < nfl; l++)
		if (c->loops[base + (size_t)l].parent >= 0)
			c->loops[c->loops[base + (size_t)l].parent].innermost = 0;
	/* per instruction: depth and the innermost loop holding it */
	for (size_t i = f->first; i < f->last; i++) {
		int blk = g.block[i - f->first], best = -1;
		v[i].depth = 0;
		for (int l = 0; l < nfl; l++)
			if (fl[l].body[blk]) {
				v[i].depth++;
				if (best < 0 || c->loops[base + (size_t)l].depth > c->loops[base + (size_t)best].depth)
					best = l;
			}
		v[i].loop = best < 0 ? -1 : (int)base + best;
		v[i].in_loop = best >= 0;
		v[i].in_inner = best >= 0 && c->loops[base + (size_t)best].innermost;
	}
	/* lines, branches and calls of each loop */
	for (int l = 0; l < nfl; l++) {
		size_t li = base + (size_t)l;
		struct profile_loop *L = &c->loops[li];
		unsigned long head_addr = v[L->head].addr, t;
		int lines[64], counts[64], nlines = 0, back_line = 0;
		for (size_t i = L->first; i <= L->last; i++) {
			if (!profile_loop_has(c, li, i))
				continue;
			if (v[i].line > 0) {
				if (!L->line_lo || v[i].line < L->line_lo)
					L->line_lo = v[i].line;
				if (v[i].line > L->line_hi)
					L->line_hi = v[i].line;
				int k = 0;
				while (k < nlines && lines[k] != v[i].line)
					k++;
				if (k == nlines && nlines < 64) {
					lines[nlines] = v[i].line;
					counts[nlines++] = 0;
				}
				if (k < nlines)
					counts[k]++;
			}
			int to_head = jump_target(v[i].ops, &t) && t == head_addr;
			if (is_cond_jump(v[i].mn) && !to_head)
				L->branches++;
			if (to_head && (is_cond_jump(v[i].mn) || starts(v[i].mn, "jmp")) && v[i].line > 0)
				back_line = v[i].line;
			if (starts(v[i].mn, "call"))
				L->calls++;
		}
		/* The line of the jump back to its head names it: the loop's own
		 * `for` or `while`, even when most of its instructions are an
		 * inlined helper's (a player read "the loop at kernel.c:12",
		 * the helper's body, for the loop at line 40 that called it).
		 * Without one, the line most of its instructions come from. */
		for (int k = 0, best = -1; k < nlines; k++)
			if (best < 0 || counts[k] > counts[best]) {
				best = k;
				L->line_head = lines[k];
			}
		if (back_line > 0)
			L->line_head = back_line;
	}
	for (int l = 0; l < nfl; l++)
		free(fl[l].body);
	free(fl);
	cfg_release(&g);
}

int profile_loop_has(const struct profile_code *c, size_t l, size_t i)
{
	const struct profile_loop *L = &c->loops[l];

	return i >= L->first && i <= L->last && c->member[l][i - L->first];
}

/* The function a "<name+0x10>" reference names, or -1. */
static int fn_named(const struct profile_code *c, const char *ops)
{
	const char *lt = strchr(ops, '<');
	char name[96];

	if (!lt)
		return -1;
	size_t n = strcspn(lt + 1, "+>@");
	snprintf(name, sizeof(name), "%.*s", (int)(n < 95 ? n : 95), lt + 1);
	for (size_t f = 0; f < c->n_fns; f++)
		if (!strcmp(c->fns[f].name, name))
			return (int)f;
	return -1;
}

/* How deep in loops each function runs: a helper called from a loop of
 * depth 3 runs at depth 3 plus its own; an OpenMP region at the depth of the
 * code that starts it (the outlined function's address is loaded there). */
static void outer_depths(struct profile_code *c)
{
	for (int pass = 0; pass < 4; pass++) {
		int changed = 0;
		for (size_t i = 0; i < c->n; i++) {
			const struct profile_insn *in = &c->insns[i];
			/* a call, a tail call, or the address of an OpenMP region
			 * loaded for GOMP_parallel ("lea ... # 1180 <pk_forward._omp_fn.0>");
			 * a jump inside the function itself is neither */
			int g = fn_named(c, in->ops);
			if (g < 0 || g == in->fn_id)
				continue;
			int d = c->fns[in->fn_id].outer_depth + in->depth;
			if (d > c->fns[g].outer_depth) {
				c->fns[g].outer_depth = d;
				changed = 1;
			}
		}
		if (!changed)
			break;
	}
}

void profile_code_where(const struct profile_code *c, size_t i, char *out, size_t len)
{
	const struct profile_insn *in = &c->insns[i];
	const struct profile_fn *f = &c->fns[in->fn_id];
	char outer[96] = "";

	if (f->outer_depth > 0)
		snprintf(outer, sizeof(outer), ", which runs inside loops %d deep", f->outer_depth);
	if (in->depth > 0 && in->in_inner)
		snprintf(out, len, "inside an innermost loop: depth %d of %s%s", in->depth, f->name, outer);
	else if (in->depth > 0)
		snprintf(out, len, "in a loop, not the innermost: depth %d of %s%s", in->depth, f->name, outer);
	else if (f->omp_region)
		snprintf(out, len, "not in a loop: OpenMP parallel region %s%s", f->name, outer);
	else if (!strcmp(f->name, "pk_forward"))
		snprintf(out, len, "not in a loop: top level of pk_forward%s", outer);
	else
		snprintf(out, len, "not in a loop of %s%s", f->name, outer);
}

void profile_code_release(struct profile_code *c)
{
	for (size_t l = 0; l < c->n_loops; l++)
		free(c->member[l]);
	free(c->member);
	free(c->loops);
	free(c->fns);
	free(c->insns);
	memset(c, 0, sizeof(*c));
}

/* A location line: "/path/kernel.c:31", "/path/kernel.c:31 (discriminator
 * 2)" or "inlined by /path/kernel.c:31 (fn)". The line when the file is
 * the kernel's, else 0. */
static int location_line(char *buf, const char *source_name)
{
	char *paren = strstr(buf, " (");
	char *colon;

	if (paren)
		*paren = 0;
	colon = strrchr(buf, ':');
	if (!colon)
		return 0;
	*colon = 0;
	const char *base = strrchr(buf, '/');
	base = base ? base + 1 : buf;
	if (starts(base, "inlined by "))
		base += 11;
	return (!source_name || !*source_name || !strcmp(base, source_name)) ? atoi(colon + 1) : 0;
}

int profile_code_parse(const char *text, const char *source_name, struct profile_code *c)
{
	struct profile_insn *v = NULL;
	size_t n = 0, alloc = 0;
	int in_fn = 0, loc_line = 0, inl_line = 0, chain_done = 1;
	char cur_fn[64] = "";
	const char *line = text;

	memset(c, 0, sizeof(*c));
	while (line && *line) {
		const char *eol = strchr(line, '\n');
		size_t len = eol ? (size_t)(eol - line) : strlen(line);
		char buf[512];
		unsigned long addr;
		char fn[256];

		snprintf(buf, sizeof(buf), "%.*s", (int)(len < sizeof(buf) - 1 ? len : sizeof(buf) - 1), line);
		line = eol ? eol + 1 : NULL;
		if (buf[0] != ' ' && sscanf(buf, "%lx <%255[^>]>:", &addr, fn) == 2) {
			if (c->n_fns)
				c->fns[c->n_fns - 1].last = n;
			in_fn = !stub(fn) && !strstr(fn, "@plt");
			if (in_fn) {
				c->fns = xrealloc(c->fns, (c->n_fns + 1) * sizeof(*c->fns));
				struct profile_fn *f = &c->fns[c->n_fns++];
				memset(f, 0, sizeof(*f));
				snprintf(f->name, sizeof(f->name), "%.63s", fn);
				f->first = n;
				f->omp_region = strstr(fn, "._omp_fn.") || strstr(fn, "omp_outlined");
			}
			snprintf(cur_fn, sizeof(cur_fn), "%.63s", fn);
			loc_line = inl_line = 0;
			chain_done = 1;
			continue;
		}
		if (!in_fn)
			continue;
		if (buf[0] != ' ' && strstr(buf, "():"))
			continue;
		if (starts(buf, "inlined by ")) {
			/* The first line of the kernel's file in a chain: the
			 * innermost place in the kernel (a helper's loop, not the
			 * call of the helper). */
			if (chain_done)
				inl_line = 0;
			chain_done = 0;
			int l = location_line(buf, source_name);
			if (!inl_line)
				inl_line = l;
			continue;
		}
		if (buf[0] != ' ' && strchr(buf, ':')) {
			loc_line = location_line(buf, source_name);
			inl_line = 0;
			chain_done = 0;
			continue;
		}
		char *tab = strchr(buf, '\t');
		if (buf[0] != ' ' || !tab || sscanf(buf, " %lx:", &addr) != 1)
			continue;
		char *ins = tab + 1;
		int evex = -1;
		char *tab2 = strchr(ins, '\t');
		if (tab2 && raw_bytes(ins, (size_t)(tab2 - ins), &evex))
			ins = tab2 + 1;
		else if (!tab2 && raw_bytes(ins, strlen(ins), &evex))
			continue; /* a continuation line of bytes (no -w) */
		while (*ins == ' ')
			ins++;
		/* Prefixes objdump prints as words. */
		static const char *const prefixes[] = { "rep ", "repz ", "repnz ", "repe ", "repne ", "lock ", "notrack ",
							"bnd ", "data16 ", "addr32 ", "cs ", "ds ", "ss ", "es ", "{vex} ",
							"{evex} ", "{vex3} ", NULL };
		for (int k = 0; prefixes[k]; k++)
			if (starts(ins, prefixes[k])) {
				ins += strlen(prefixes[k]);
				while (*ins == ' ')
					ins++;
				k = -1;
			}
		chain_done = 1;
		if (!*ins || starts(ins, "(bad)"))
			continue;
		if (n == alloc) {
			alloc = alloc ? 2 * alloc : 1024;
			v = xrealloc(v, alloc * sizeof(*v));
		}
		struct profile_insn *in = &v[n++];
		memset(in, 0, sizeof(*in));
		in->addr = addr;
		in->line = loc_line ? loc_line : inl_line;
		in->fn_id = (int)c->n_fns - 1;
		in->loop = -1;
		in->evex = evex;
		snprintf(in->fn, sizeof(in->fn), "%s", cur_fn);
		size_t ml = strcspn(ins, " \t");
		snprintf(in->mn, sizeof(in->mn), "%.*s", (int)(ml < 31 ? ml : 31), ins);
		const char *o = ins + ml;
		while (*o == ' ' || *o == '\t')
			o++;
		snprintf(in->ops, sizeof(in->ops), "%s", o);
	}
	if (c->n_fns)
		c->fns[c->n_fns - 1].last = n;
	c->insns = v;
	c->n = n;
	if (!n) {
		profile_code_release(c);
		return -1;
	}
	for (size_t f = 0; f < c->n_fns; f++)
		add_loops(c, (int)f);
	outer_depths(c);
	return 0;
}

int profile_objdump_insns(const char *text, const char *source_name, struct profile_insn **out, size_t *n_out)
{
	struct profile_code c;

	*out = NULL;
	*n_out = 0;
	if (profile_code_parse(text, source_name, &c) < 0)
		return -1;
	*out = c.insns;
	*n_out = c.n;
	c.insns = NULL;
	profile_code_release(&c);
	return 0;
}
