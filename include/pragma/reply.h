/*
 * Parsing agent replies (DESIGN 3.10). The prompts (lib/agents) ask for the
 * formats; these parsers accept reasonable variations and say what they
 * could not find.
 *
 * Coder: one fenced block (```c or ```cuda) with the whole kernel; inside it
 * optional lines
 *     // pragma:flags -funroll-loops -ffast-math
 *     // pragma:tune BLOCK=32,64,128 UNROLL=2,4
 * Accepted too: no language tag, ~~~ fences, prose around the block, several
 * blocks (the one that defines pk_forward wins; among several, the last),
 * an unfenced reply that is plainly C. A block cut off by the token limit is
 * detected and reported.
 *
 * Conductor: Markdown with the headings Verdict:, Bottleneck:, Actions:,
 * optional Algorithm: and Metrics:. Accepted: "## Verdict", "**Verdict:**",
 * "**Verdict**:", "Verdict -", any case, list markers before them.
 */
#ifndef PRAGMA_REPLY_H
#define PRAGMA_REPLY_H

#include <stddef.h>

#include "pragma/buf.h"
#include "pragma/err.h"

#define PRAGMA_REPLY_MAX_TUNABLES 16
#define PRAGMA_REPLY_MAX_VALUES 32
#define PRAGMA_REPLY_MAX_FLAGS 64
#define PRAGMA_REPLY_MAX_METRICS 32

struct pragma_tunable {
	char name[64];                                /* a C identifier: becomes -DNAME=value */
	char values[PRAGMA_REPLY_MAX_VALUES][64];     /* [A-Za-z0-9_.+-] */
	int n_values;
};

struct pragma_code_reply {
	struct pragma_buf code;      /* the kernel source, fences removed */
	char lang[16];               /* "c", "cuda", "cpp" or "" (no tag) */
	int n_blocks;                /* fenced blocks in the reply */
	int chosen;                  /* index of the chosen block (-1: unfenced reply) */
	int defines_forward;         /* the code defines pk_forward (not just declares it) */
	int truncated;               /* the block was cut off (no closing fence, or finish_reason length) */
	char *flags[PRAGMA_REPLY_MAX_FLAGS]; /* from // pragma:flags lines, in order */
	int n_flags;
	struct pragma_tunable tunables[PRAGMA_REPLY_MAX_TUNABLES];
	int n_tunables;
	struct pragma_buf notes;     /* what was odd or missing, one per line, for the Conductor */
};

#define PRAGMA_CODE_REPLY_INIT { .code = PRAGMA_BUF_INIT, .notes = PRAGMA_BUF_INIT, .chosen = -1 }

void pragma_code_reply_init(struct pragma_code_reply *r);
void pragma_code_reply_release(struct pragma_code_reply *r);

/*
 * Extract the kernel from a Coder reply. cut_by_limit: the provider said the
 * reply hit the token limit (pragma_llm_reply.truncated).
 * Returns 0 with out filled (out->notes may list oddities, and
 * defines_forward may be 0: the caller decides whether that is fatal);
 * -1 with err (PRAGMA_E_NEGATIVE) when there is no code at all, or the block
 * was cut off (out->truncated = 1, out->code holds what arrived).
 * Malformed pragma: lines are skipped with a note, never fatal.
 */
int pragma_reply_parse_code(const char *text, size_t len, int cut_by_limit, struct pragma_code_reply *out,
			    struct pragma_err *err);

enum pragma_verdict {
	PRAGMA_VERDICT_UNKNOWN = 0,
	PRAGMA_VERDICT_IMPROVEMENT,
	PRAGMA_VERDICT_REGRESSION,
	PRAGMA_VERDICT_FAILURE,
	PRAGMA_VERDICT_NO_CHANGE,    /* not distinguishable from the best */
};

/* Bits of pragma_conductor_reply.found. */
#define PRAGMA_SECTION_VERDICT    (1u << 0)
#define PRAGMA_SECTION_BOTTLENECK (1u << 1)
#define PRAGMA_SECTION_ACTIONS    (1u << 2)
#define PRAGMA_SECTION_ALGORITHM  (1u << 3)
#define PRAGMA_SECTION_METRICS    (1u << 4)
#define PRAGMA_SECTION_SUMMARY    (1u << 5)   /* the last attempt's: for the report, not the Coder */

struct pragma_conductor_reply {
	enum pragma_verdict verdict;
	struct pragma_buf verdict_text;  /* the section as written */
	struct pragma_buf bottleneck;
	struct pragma_buf actions;
	struct pragma_buf algorithm;     /* empty: no different approach proposed */
	struct pragma_buf summary;       /* the last attempt's summary of the run */
	char *metrics[PRAGMA_REPLY_MAX_METRICS]; /* registry names or perf:EVENT, as written */
	int n_metrics;
	unsigned found;                  /* PRAGMA_SECTION_* present */
	struct pragma_buf missing;       /* "Verdict, Actions": required sections not found */
};

#define PRAGMA_CONDUCTOR_REPLY_INIT                                                                  \
	{ .verdict_text = PRAGMA_BUF_INIT, .bottleneck = PRAGMA_BUF_INIT, .actions = PRAGMA_BUF_INIT, \
	  .algorithm = PRAGMA_BUF_INIT, .summary = PRAGMA_BUF_INIT, .missing = PRAGMA_BUF_INIT }

void pragma_conductor_reply_init(struct pragma_conductor_reply *r);
void pragma_conductor_reply_release(struct pragma_conductor_reply *r);

/*
 * Parse a Conductor reply. Returns 0 when at least Actions (or, failing
 * that, any section) was found — out->missing names required sections
 * (Verdict, Bottleneck, Actions) that were not; -1 with err
 * (PRAGMA_E_NEGATIVE) when no section at all was recognized (the caller may
 * then pass the whole text on as instructions).
 */
int pragma_reply_parse_conductor(const char *text, size_t len, struct pragma_conductor_reply *out,
				 struct pragma_err *err);

const char *pragma_verdict_name(enum pragma_verdict v);

#endif
