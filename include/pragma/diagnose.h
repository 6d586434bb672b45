/*
 * Rule-based bottleneck diagnosis: metrics in, named bottlenecks out, each
 * with the evidence that led to it (numbers, with units and absolute counts)
 * and a confidence. The Conductor gets these next to the raw metrics; each
 * name has a playbook in the knowledge compendium (knowledge/playbooks.json).
 *
 * Rules put the roofline and instruction-level facts first and hedge what
 * single-threaded simulation says about multi-threaded kernels (DESIGN 4).
 */
#ifndef PRAGMA_DIAGNOSE_H
#define PRAGMA_DIAGNOSE_H

#include <jansson.h>
#include <stddef.h>

#include "pragma/buf.h"
#include "pragma/machine.h"
#include "pragma/profile.h"

struct pragma_finding {
	char bottleneck[48];     /* a playbook name: "memory-bound", "under-vectorized", ... */
	char evidence[768];      /* "21.7 GB/s = 86% of the measured bandwidth peak; ..." */
	double confidence;       /* 0..1 */
};

struct pragma_diagnosis {
	struct pragma_finding *f;
	size_t n;
};

#define PRAGMA_DIAGNOSIS_INIT { 0 }

/* Apply the rules to p (m may be NULL: ISA-dependent rules are skipped).
 * Findings come out most confident first. Never fails. */
void pragma_diagnose(const struct pragma_profile *p, const struct pragma_machine *m, struct pragma_diagnosis *d);
void pragma_diagnosis_release(struct pragma_diagnosis *d);
/* [{"bottleneck", "evidence", "confidence"}] */
json_t *pragma_diagnosis_json(const struct pragma_diagnosis *d);
/* "memory-bound (0.92): 21.7 GB/s = ..." one per line. */
void pragma_diagnosis_text(const struct pragma_diagnosis *d, struct pragma_buf *out);

/* Every bottleneck name a rule can produce (the compendium must have a
 * playbook for each). */
const char *const *pragma_bottleneck_names(size_t *n);

/* ---- comparing a candidate with the best so far ---- */

struct pragma_change {
	char name[96];
	double before, after;
	int direction;           /* +1 higher, -1 lower */
	int assessment;          /* +1 better, -1 worse, 0 neither (the registry has no preference) */
	char text[256];          /* "IPC higher (1.37 -> 1.49)" */
};

/* Metric by metric, what changed beyond each metric's noise between best
 * and cur (both must have it). *out is malloc'ed (free it); the speedup or
 * time comes first, then registry order. */
int pragma_profile_compare(const struct pragma_profile *best, const struct pragma_profile *cur,
			   struct pragma_change **out, size_t *n);
/* The paper's sentences: "speedup dropped from 2.93x to 2.54x; IPC higher
 * (1.37 -> 1.49); backend bound lower (61.8% -> 57.2%)", one change per
 * line, with a caveat line when the simulated figures cover one thread of
 * several or when the time change is within one run's noise. */
void pragma_profile_compare_text(const struct pragma_profile *best, const struct pragma_profile *cur,
				 struct pragma_buf *out);
json_t *pragma_profile_compare_json(const struct pragma_profile *best, const struct pragma_profile *cur);

#endif
