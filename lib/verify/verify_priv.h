/* Shared between verify.c (correctness) and timecmp.c (timing). */
#ifndef PRAGMA_VERIFY_PRIV_H
#define PRAGMA_VERIFY_PRIV_H

#include "pragma/build.h"
#include "pragma/run.h"
#include "pragma/tensor.h"
#include "pragma/verify.h"

struct vctx {
	const struct pragma_task *t;
	const struct pragma_verify_opts *o;
	struct pragma_verdict *v;
	struct pragma_refset *sets;
	int n_sets;
	char work[4096];
	const char *preload[16];
	double atol, rtol;
	int threads;
	double verify_wall_ms;       /* the verification run (15 calls and checks) */
	const struct pragma_backend *b; /* the candidate's target */
};

/* Set the verdict (first one wins); returns 0 for `return vreject(...)`. */
__attribute__((format(printf, 3, 4)))
int vreject(struct pragma_verdict *v, enum pragma_vstatus s, const char *fmt, ...);
void vwarn(struct pragma_verdict *v, const char *fmt, ...) __attribute__((format(printf, 2, 3)));

/* Load output k of a set: the reference (out_NNN.npy in the ref dir) or
 * the candidate's (<work>/set<s>/<name>_NNN.npy). */
int vload_ref(struct vctx *c, int s, int k, struct pragma_tensor *t, struct pragma_err *err);
int vload_cand(struct vctx *c, int s, const char *name, int k, struct pragma_tensor *t, struct pragma_err *err);

/* Output k's tolerance in this run (the task's, with --atol/--rtol), and
 * pragma_compare() under it: 0 within, 1 outside, -1 shapes differ. */
void vtolerance(const struct vctx *c, int k, struct pragma_tolerance *tol);
int vcompare(const struct vctx *c, int k, const struct pragma_tensor *got, const struct pragma_tensor *want,
	     struct pragma_cmp *m);

/* One-line description of a comparison failure (message of wrong_output,
 * unwritten_output, nan_output). */
void vdescribe(char *out, size_t len, int k, int set, const struct pragma_tensor *want, const struct pragma_cmp *cmp,
	       const char *what);


/* The interleaved timing against the baseline, then the timed outputs and
 * the impossible-speed check (timecmp.c). */
int verify_time(struct vctx *c, const char *cand_so, struct pragma_err *err);

#endif
