/* Internals shared by the static and sim collectors: the kernel's
 * instructions from objdump, classified once. */
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
	int in_loop, in_inner;   /* inside a loop; inside an innermost loop */
};

struct profile_iclass {
	int fp;                  /* 0 no FP arithmetic, 1 scalar, 2 packed */
	int fma, mul, add;
	int width;               /* 128/256/512 for packed vector work, else 0 */
	int load, store, branch, call, nt, prefetch;
	int stack_vec;           /* a vector register moved to or from the stack */
};

/* The instructions of the kernel's own functions in `objdump -d -l -w
 * --no-show-raw-insn` output (crt stubs and PLT left out). source_name
 * (base name) limits line numbers to the kernel's file. -1 when there are
 * none. *out is malloc'ed. */
int profile_objdump_insns(const char *text, const char *source_name, struct profile_insn **out, size_t *n);
void profile_insn_class(const struct profile_insn *in, struct profile_iclass *c);

#endif
