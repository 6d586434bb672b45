/*
 * Reference data: for each input set (seed), the inputs and expected
 * outputs as .npy files, made once per (task content hash, seed, overrides,
 * runtime versions) in the cache and reused (DESIGN 3.2).
 *
 * Layout: <cache>/ref/<key>/{in_000.npy, …, out_000.npy, …, MANIFEST}.
 * An entry is made in a temp directory and renamed into place; MANIFEST
 * (sizes and content hashes of every file) is written last and checked on
 * every use, so a partial or corrupt entry is rebuilt, never used.
 */
#ifndef PRAGMA_REFDATA_H
#define PRAGMA_REFDATA_H

#include <stdint.h>

#include "pragma/err.h"
#include "pragma/task.h"

struct pragma_refset {
	uint64_t seed;
	char dir[4096];
	int rebuilt;             /* made now, not taken from the cache */
};

/* Make sure reference data exists for seeds[0..n) and fill sets[]. */
int pragma_ref_ensure(const struct pragma_task *t, const uint64_t *seeds, int n,
		      struct pragma_refset *sets, struct pragma_err *err);

/* Default seeds of the verified input sets: 5 of them (DESIGN 3.4). */
#define PRAGMA_DEFAULT_SETS 5
uint64_t pragma_ref_seed(int i);

/* Paths inside a set. */
void pragma_ref_input_path(const struct pragma_refset *s, int i, char *out, size_t len);
void pragma_ref_output_path(const struct pragma_refset *s, int i, char *out, size_t len);

/* Refuse (PRAGMA_E_INPUT, before anything is allocated) a task whose
 * inputs and outputs of n_sets input sets (the harness holds them all at
 * once) need more than this machine's memory (or its cgroup's limit): says
 * how many bytes and which --set sizes to lower. pragma_ref_ensure calls it
 * before it makes data. */
int pragma_task_check_memory(const struct pragma_task *t, int n_sets, struct pragma_err *err);
/* The hint for a task too large: its size variables and their values. */
void pragma_task_size_hint(const struct pragma_task *t, char *out, size_t len);

/* Cache bound (bytes): $PRAGMA_CACHE_MAX (e.g. "8G"), default 8 GiB. */
uint64_t pragma_ref_cache_limit(void);
/* Evict least recently used entries until the reference cache is under
 * limit; returns bytes freed. keep_key (may be NULL) is never evicted. */
int pragma_ref_prune(uint64_t limit, const char *keep_key, uint64_t *freed, int *entries_left,
		     struct pragma_err *err);
/* Size and entry count of the reference cache. */
int pragma_ref_stats(uint64_t *bytes, int *entries, struct pragma_err *err);

/* Validate one entry directory against its MANIFEST (0 valid, -1 not). */
int pragma_ref_validate(const char *dir, struct pragma_err *err);
/* Write MANIFEST for a directory of .npy files. */
int pragma_ref_write_manifest(const char *dir, struct pragma_err *err);

/* Native tasks: generate inputs for a seed from task.json's distributions. */
int pragma_gen_inputs(const struct pragma_task *t, uint64_t seed, const char *dir, struct pragma_err *err);

#endif
