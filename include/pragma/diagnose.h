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
	int assessment;          /* +1 better, -1 worse, 0 neither (the registry has no preference, or see algorithm) */
	int algorithm;           /* a count of the work done, neither better nor worse (the text says why):
				  * 1 moved with the algorithm (one kernel does fewer FLOPs than counted),
				  * 2 moved against the time (less work yet slower, more yet faster: the
				  * work is done another way, a tile or an unroll as well as an algorithm) */
	char text[256];          /* "IPC higher (1.37 -> 1.49)" */
};

/* What an interleaved timing session said about the candidate against the
 * best (DESIGN 3.5), for comparisons whose caller knows it: the profiles'
 * own time.* figures are one profiled run each (counters on), not the
 * attempt's time. */
enum pragma_time_verdict {
	PRAGMA_TIME_UNKNOWN = 0,    /* not given: judged from the profiles (see below) */
	PRAGMA_TIME_FASTER,         /* the candidate is faster, beyond the interval and the margin */
	PRAGMA_TIME_SLOWER,
	PRAGMA_TIME_SAME,           /* not distinguishable, or the same within the noise */
};

/* Metric by metric, what changed beyond each metric's noise between best
 * and cur (both must have it). *out is malloc'ed (free it); the speedup or
 * time comes first, then registry order.
 *
 * Counts of the work a kernel does (FMA, FP and total instructions, loads,
 * stores, uops per hot-loop iteration...) move when the algorithm changes
 * (Winograd does fewer multiplies), so they are judged by the time, never
 * against it: a count whose registry direction would call it worse while
 * the time improved (or better while the time got worse) is "changed with
 * the algorithm", as is every such count when one kernel runs the task's
 * FLOP count above the FP32 peak and the other does not (it does fewer
 * FLOPs than counted: roof.flops_over_peak). The time is t when given; else
 * the profiles' roofline rates (which use the attempt's session time where
 * the loop profiled), else their speedups, else their median times. Given
 * t, the time and the roofline's rates (pragma_metric_session_rate) are
 * left out: each profile's come from its own attempt's session, and the
 * session that ran both decided. A miss rate whose count did not change is
 * not judged (it moved with the number of accesses). */
int pragma_profile_compare(const struct pragma_profile *best, const struct pragma_profile *cur,
			   struct pragma_change **out, size_t *n);
/* Whether a metric is a rate the roofline derives from the attempt's own
 * session time (roof.gbs, roof.gflops, roof.pct_*). */
int pragma_metric_session_rate(const char *name);
int pragma_profile_compare_timed(const struct pragma_profile *best, const struct pragma_profile *cur,
				 enum pragma_time_verdict t, struct pragma_change **out, size_t *n);
/* The paper's sentences: "speedup dropped from 2.93x to 2.54x; IPC higher
 * (1.37 -> 1.49); backend bound lower (61.8% -> 57.2%)", one change per
 * line, with a caveat line when the simulated figures cover one thread of
 * several or when the time change is within one run's noise. With a
 * session verdict (the _timed form), a first line says that the session
 * decides the time and why the time and roofline are not compared. */
void pragma_profile_compare_text(const struct pragma_profile *best, const struct pragma_profile *cur,
				 struct pragma_buf *out);
void pragma_profile_compare_text_timed(const struct pragma_profile *best, const struct pragma_profile *cur,
				       enum pragma_time_verdict t, struct pragma_buf *out);
/* A change's word in tables and JSON: "changed with the algorithm", "not
 * judged: moved against the time", "better", "worse", or `neutral`. */
const char *pragma_change_label(const struct pragma_change *c, const char *neutral);
/* [{"name", "before", "after", "change": "higher"|"lower", "assessment":
 * pragma_change_label's word, "neutral" for neither, "text"}] */
json_t *pragma_profile_compare_json(const struct pragma_profile *best, const struct pragma_profile *cur);

#endif
