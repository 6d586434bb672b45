/* Internal to lib/machine and its unit tests (tests/unit/test_machine.c). */
#ifndef PRAGMA_MACHINE_PRIV_H
#define PRAGMA_MACHINE_PRIV_H

#include <stddef.h>
#include <stdint.h>

#include "pragma/machine.h"

/* Bumped whenever the benchmarks change in a way that changes their numbers:
 * a cache file written by another format is re-measured. */
/* Format 2 (2026-11): the protocol roofs (roof_gbs, roofs[]), the clock,
 * peak_gbs_how. A format-1 file is re-measured; its peak_gbs is kept when
 * higher (pragma_machine_load_at). */
#define PRAGMA_MACHINE_CACHE_FORMAT 2

typedef int (*pragma_machine_measure_fn)(struct pragma_machine *m, struct pragma_err *err);

/* pragma_machine_detect() reading <root>/proc/cpuinfo,
 * <root>/proc/sys/kernel/osrelease and <root>/sys/devices/system/cpu/...;
 * root NULL or "" is the real system. cores always comes from this process's
 * affinity mask, whatever the root. */
int pragma_machine_detect_at(struct pragma_machine *m, const char *root, struct pragma_err *err);

/* pragma_machine_load() with the root, the cache file (NULL: no cache) and
 * the measuring function given. */
int pragma_machine_load_at(struct pragma_machine *m, const char *root, const char *cache_path,
			   int remeasure, pragma_machine_measure_fn measure, struct pragma_err *err);

/* Read a record written from pragma_machine_json(); -1 (PRAGMA_E_INPUT) when
 * a field is missing or of the wrong type. */
int pragma_machine_from_json(struct pragma_machine *m, const json_t *j, struct pragma_err *err);

/* 1 when b describes the same machine as a (the fields that decide whether
 * cached peaks still apply); otherwise 0, with what differs in why. */
int pragma_machine_same(const struct pragma_machine *a, const struct pragma_machine *b, char *why,
			size_t why_len);

/* Bytes per array of the protocol roof kernels for a last-level cache of
 * llc_bytes (lib/machine/roofs.c). */
uint64_t pragma_machine_roof_array_bytes(uint64_t llc_bytes);

/* sysfs formats: "32K", "1024K", "2M", "512" → bytes (0 if malformed);
 * "0-3,8,10-11" → 7; "00000000,000000ff" → 8 (-1 if malformed). */
uint64_t pragma_machine_parse_size(const char *s);
int pragma_machine_count_cpulist(const char *s);
int pragma_machine_count_cpumask(const char *s);

#endif
