/*
 * The profiling knowledge compendium (the paper's offline compendium of
 * profiler features, metric meanings and the problems they diagnose),
 * kept as data under knowledge/:
 *
 *   knowledge/metrics/<namespace>.json   {"entries": [METRIC, ...]}
 *       one entry per registry metric (include/pragma/profile.h)
 *   knowledge/playbooks.json              {"playbooks": [PLAYBOOK, ...]}
 *       one per bottleneck name the diagnosis can produce
 *   knowledge/reference/TOOL.json          {"entries": [REFERENCE, ...]}
 *       profiler documentation consolidated by `pragma knowledge build`
 *
 * METRIC:    name, title, unit, collector, what, how, formula, healthy,
 *            reveals [bottleneck names], remedies [..], caveats, sources [..]
 * PLAYBOOK:  name, title, summary, signs [..], remedies [..], pitfalls [..],
 *            metrics [registry names], sources [..]
 * REFERENCE: name, tool, title, what, how, formula, healthy, reveals [..],
 *            remedies [..], maps_to (a registry name or ""), sources [..]
 *
 * Every entry names its sources (vendor manuals, perf and valgrind docs,
 * Nsight Compute docs). The text is ours, written from facts in them.
 */
#ifndef PRAGMA_KNOWLEDGE_H
#define PRAGMA_KNOWLEDGE_H

#include <stddef.h>

#include "pragma/buf.h"
#include "pragma/diagnose.h"
#include "pragma/err.h"
#include "pragma/profile.h"

enum pragma_kentry_kind { PRAGMA_KENTRY_METRIC, PRAGMA_KENTRY_PLAYBOOK, PRAGMA_KENTRY_REFERENCE };

/* One entry; strings are borrowed from the compendium ("" when absent),
 * lists are NULL-terminated. */
struct pragma_kentry {
	enum pragma_kentry_kind kind;
	const char *name, *title, *unit, *collector, *tool;
	const char *what, *how, *formula, *healthy, *caveats, *summary, *maps_to;
	const char **reveals, **remedies, **sources, **signs, **pitfalls, **metrics;
	const char *file;        /* where it was read from */
};

struct pragma_knowledge;

/* Load the compendium from dir (NULL: pragma_data_path("knowledge")).
 * A malformed file fails with PRAGMA_E_INPUT naming it; a missing
 * directory is PRAGMA_E_ENV. */
int pragma_knowledge_open(struct pragma_knowledge **kb, const char *dir, struct pragma_err *err);
void pragma_knowledge_free(struct pragma_knowledge *kb);
const char *pragma_knowledge_dir(const struct pragma_knowledge *kb);

size_t pragma_knowledge_count(const struct pragma_knowledge *kb);
const struct pragma_kentry *pragma_knowledge_at(const struct pragma_knowledge *kb, size_t i);
/* By kind and name; NULL when missing. */
const struct pragma_kentry *pragma_knowledge_get(const struct pragma_knowledge *kb, enum pragma_kentry_kind kind,
						 const char *name);

/* Hold the compendium to the registry and the diagnosis: a metric entry
 * for every registry metric and none for unknown names, a playbook for
 * every bottleneck name, required fields present, sources named, playbook
 * metrics registered. One problem per line in problems; returns how many. */
int pragma_knowledge_check(const struct pragma_knowledge *kb, struct pragma_buf *problems);

/* The compact form for a prompt: for each bottleneck, its playbook's top
 * remedies; for each metric, one or two lines (what it is, healthy range,
 * what it reveals), in the order given (most relevant first). With
 * max_bytes (0: no limit) the whole text, the last line included, stays
 * within it: entries that do not fit are left out whole, the last ones
 * first, and a last line names them. Never cuts inside an entry. */
void pragma_knowledge_prompt(const struct pragma_knowledge *kb, const char *const *metrics, size_t n_metrics,
			     const char *const *bottlenecks, size_t n_bottlenecks, size_t max_bytes,
			     struct pragma_buf *out);
/* The same for a profile: the metrics it shows (default set + extra) and
 * the bottlenecks of its diagnosis, in the diagnosis's order. */
void pragma_knowledge_for_profile(const struct pragma_knowledge *kb, const struct pragma_profile *p,
				  const char *const *extra, size_t n_extra, const struct pragma_diagnosis *d,
				  size_t max_bytes, struct pragma_buf *out);
/* Full text of one entry, for `pragma knowledge show`. */
void pragma_knowledge_format(const struct pragma_kentry *e, struct pragma_buf *out);

/* Full-text search (SQLite FTS5, ranked by bm25). Words are matched all
 * together first, then any of them. */
struct pragma_khit {
	const struct pragma_kentry *entry;
	char snippet[320];
	double score;            /* lower is better (bm25) */
};
int pragma_knowledge_search(const struct pragma_knowledge *kb, const char *query, struct pragma_khit *hits,
			    size_t max, size_t *n, struct pragma_err *err);

/* ---- consolidation: `pragma knowledge build DOC...` ---- */

/* Split documentation text into chunks of about chunk_bytes, at paragraph
 * boundaries where possible (headings start a new chunk). *chunks and each
 * chunk are malloc'ed. */
int pragma_knowledge_chunk(const char *text, size_t chunk_bytes, char ***chunks, size_t *n);
void pragma_knowledge_chunks_free(char **chunks, size_t n);

struct pragma_llm;

struct pragma_kbuild_opts {
	const char *const *docs;     /* files of raw profiler documentation (text, Markdown, HTML) */
	size_t n_docs;
	const char *tool;            /* "perf", "ncu", "valgrind", ...; NULL: from the file name */
	size_t chunk_bytes;          /* 0: 6000 */
	struct pragma_llm *llm;      /* the summarizer */
	const char *out_path;        /* NULL: <knowledge dir>/reference/<tool>.json */
	int max_chunks;              /* 0: no limit */
};

struct pragma_kbuild_stats {
	size_t chunks, summarized, failed, entries_raw, entries_merged, merges_by_llm, skipped_curated;
	char out_path[4096];
};

/* Stage 1: each chunk → the LLM → REFERENCE entries (JSON). Stage 2:
 * entries with the same name merged (by the LLM when there are several),
 * names that curated metric entries already cover left out, the result
 * written atomically to out_path. A chunk whose reply does not parse is
 * counted and skipped, not fatal. */
int pragma_knowledge_build(const struct pragma_knowledge *kb, const struct pragma_kbuild_opts *o,
			   struct pragma_kbuild_stats *st, struct pragma_err *err);

/* The prompts of the two stages (exposed for tests and for reading). */
const char *pragma_knowledge_summarize_prompt(void);
const char *pragma_knowledge_merge_prompt(void);

#endif
