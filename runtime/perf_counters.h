/*
 * Hardware and software counters around pk_forward, inside the harness
 * (DESIGN 3.6). The parent (lib/profile/perf.c) chooses the events; the
 * request's "perf" section lists them in groups:
 *
 *   "perf": {"groups": [{"name": "core", "events": [{"name": "cycles",
 *                         "type": 0, "config": 0}, ...]}, ...]}
 *
 * Each group is opened disabled, user space only, inherited by the threads
 * the kernel starts (OpenMP), before the sandbox is entered. Around each
 * counted pk_forward call the groups are enabled and disabled by ioctl, so
 * the counts cover the kernel and nothing else (not the cache flush, not
 * the input checks). The result gets
 *
 *   "perf": {"calls": N, "wall_ns": W, "groups": [{"name": "core", "ok": true,
 *            "enabled_ns": E, "running_ns": R, "events": [{"name", "value"}]},
 *            {"name": "topdown", "ok": false, "event": "...", "errno": 2,
 *             "error": "..."}]}
 *
 * A group that cannot be opened is reported with the errno of the failing
 * event; the other groups still count.
 *
 * "method": "ioctl" (the default) enables and disables the groups around
 * each call. The sandbox's seccomp filter answers every ioctl with ENOTTY,
 * so a sandboxed run asks for "read": the groups count from the moment they
 * are opened, and each counted call adds the difference of two read()s
 * taken just outside the timed window (value, time enabled, time running
 * alike, so multiplexing is scaled over the kernel's windows only).
 */
#ifndef PRAGMA_PERF_COUNTERS_H
#define PRAGMA_PERF_COUNTERS_H

#include <jansson.h>
#include <stdint.h>

#define PC_MAX_GROUPS 16
#define PC_MAX_EVENTS 8

struct pc_group {
	char name[80];
	int n;
	char ev[PC_MAX_EVENTS][64];
	uint32_t type[PC_MAX_EVENTS];
	uint64_t config[PC_MAX_EVENTS];
	int fd[PC_MAX_EVENTS];
	int ok;
	int err;                 /* errno of the failure */
	char failed[64];         /* the event that failed */
};

struct perf_counters {
	int active;              /* the request asked for counters */
	int n_groups;
	struct pc_group g[PC_MAX_GROUPS];
	int by_read;             /* method "read": see below */
	int calls;
	uint64_t wall_ns;
	uint64_t t_start;
	uint64_t before[PC_MAX_GROUPS][PC_MAX_EVENTS][3];
	uint64_t sum[PC_MAX_GROUPS][PC_MAX_EVENTS][3];
};

/* Read the request's "perf" section; pc->active is 0 without one.
 * Returns -1 for a malformed section. */
int perf_counters_parse(json_t *req, struct perf_counters *pc);
/* Open every group, disabled. Before the sandbox (perf_event_open is not
 * on its allow-list) and before the kernel starts threads. */
void perf_counters_open(struct perf_counters *pc);
/* Around one counted call. Cheap: one ioctl per group. */
void perf_counters_start(struct perf_counters *pc);
void perf_counters_stop(struct perf_counters *pc);
/* Read, close, and add the "perf" object to result. */
void perf_counters_report(struct perf_counters *pc, json_t *result);

#endif
