/* Internals shared by the static, sim and mca collectors: the kernel's
 * instructions from objdump, classified once, and its loops. */
#ifndef PRAGMA_PROFILE_INT_H
#define PRAGMA_PROFILE_INT_H

#include <stddef.h>

#include "pragma/profile.h"

struct profile_insn {
	unsigned long addr;      /* as objdump prints it (the .so's own addresses) */
	char fn[64];             /* the function it belongs to */
	char mn[32];             /* mnemonic, prefixes dropped */
	char ops[160];           /* operands as printed (with "<sym>" for jumps and calls) */
	int line;                /* line in the kernel's source; 0 elsewhere or unknown */
	int fn_id;               /* its function (index into profile_code.fns) */
	int depth;               /* loops of its function that contain it; 0 none */
	int loop;                /* the innermost loop containing it (index into profile_code.loops); -1 none */
	int in_loop, in_inner;   /* depth > 0; that innermost loop contains no other loop */
	int evex;                /* 1 EVEX-encoded (AVX-512), 0 not, -1 unknown (no raw bytes in the listing) */
};

struct profile_iclass {
	int fp;                  /* 0 no FP arithmetic, 1 scalar, 2 packed */
	int fma, mul, add;
	int width;               /* 128/256/512 for packed vector work, else 0 */
	int load, store, branch, call, nt, prefetch;
	int dbl;                 /* FP arithmetic on doubles (sd/pd) */
};

/* A natural loop: the blocks that reach a back edge's source without
 * passing its header, where the header dominates the source. A backward
 * jump whose target does not dominate it (a cold block jumping back into
 * the main path) is no loop. */
struct profile_loop {
	int fn_id;
	size_t head;             /* the header's first instruction */
	size_t first, last;      /* lowest and highest instruction index in the loop */
	size_t n_insns;          /* instructions in its blocks */
	int depth;               /* 1: outermost loop of its function */
	int parent;              /* the enclosing loop, -1 */
	int innermost;           /* contains no other loop */
	int line_lo, line_hi;    /* kernel source lines of its instructions; 0 unknown */
	int line_head;           /* its back-edge's kernel line (the loop statement), else the most common one */
	int branches;            /* conditional branches inside besides its back edges */
	int calls;               /* calls inside */
};

struct profile_fn {
	char name[64];
	size_t first, last;      /* instruction indexes, last exclusive */
	int outer_depth;         /* loop depth of its call sites (or of the OpenMP region's start) in the
	                          * kernel's other functions; 0 at the top level */
	int omp_region;          /* an OpenMP outlined function ("pk_forward._omp_fn.0") */
};

struct profile_code {
	struct profile_insn *insns;
	size_t n;
	struct profile_loop *loops;
	size_t n_loops;
	struct profile_fn *fns;
	size_t n_fns;
	unsigned char **member;  /* member[l][i - loops[l].first]: instruction i is in loop l */
};

/* Parse `objdump -d -l -w [--inlines] [--no-show-raw-insn]` output: the
 * instructions of the kernel's own functions (crt stubs and PLT left out),
 * with kernel source lines (the first line of the kernel's file in an
 * inline chain), EVEX flags from the raw bytes when shown, and the loops of
 * each function. source_name (base name) limits line numbers to the
 * kernel's file. -1 when there are no instructions. */
int profile_code_parse(const char *text, const char *source_name, struct profile_code *c);
void profile_code_release(struct profile_code *c);
/* Is instruction i in loop l? */
int profile_loop_has(const struct profile_code *c, size_t l, size_t i);
/* Where instruction i is, in words: "inside an innermost loop: depth 3 of
 * pk_forward._omp_fn.0", "in a loop, not the innermost: depth 1 of
 * pk_forward", "not in a loop: top level of pk_forward", "not in a loop:
 * OpenMP parallel region pk_forward._omp_fn.0" (", which runs inside loops
 * N deep" for a function called from loops). */
void profile_code_where(const struct profile_code *c, size_t i, char *out, size_t len);
/* An AVX-512 instruction: EVEX-encoded by its raw bytes, or (without
 * bytes) by its registers (zmm, k masks, x/ymm16-31, {1toN}) and the
 * EVEX-only mnemonics. */
int profile_insn_avx512(const struct profile_insn *in);

/* The old view for the sim mix: the instructions only. *out is malloc'ed. */
int profile_objdump_insns(const char *text, const char *source_name, struct profile_insn **out, size_t *n);
void profile_insn_class(const struct profile_insn *in, struct profile_iclass *c);
/* AT&T operands split at top-level commas (a trailing "<sym>" or "# ..."
 * comment is not an operand); how many (at most 4). */
int profile_split_ops(const char *ops, char out[4][96]);

/* callgrind's per-instruction counts (--dump-instr=yes) for the object
 * so_name, aligned to the objdump addresses of code: cost[i] is the Ir of
 * code->insns[i] (0 when never executed). -1 when the output has none. */
int profile_callgrind_costs(const char *callgrind_text, const char *so_name, const struct profile_code *code,
			    double **cost);

/* Vector-register spills: stack slots (the same base and displacement,
 * no index register) that a vector register is stored to and loaded back
 * from, outside any stack array whose address the code takes. Counts the
 * spill and reload instructions in innermost loops (*inner) and elsewhere
 * (*outer); *first gets the first in an innermost loop (or -1). */
void profile_code_spills(const struct profile_code *c, int *inner, int *outer, long *first);

#endif
