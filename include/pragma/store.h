/*
 * The run store (DESIGN 3.8): one SQLite file (WAL) with everything needed to
 * resume a run and to report it — runs, attempts, LLM calls.
 * Default path ./.pragma/pragma.db; artifacts under ./.pragma/runs/<run>/.
 * Every write is its own transaction, so a process killed at any point
 * loses at most what it was writing.
 */
#ifndef PRAGMA_STORE_H
#define PRAGMA_STORE_H

#include <jansson.h>
#include <stdint.h>

#include "pragma/err.h"

struct pragma_store;

/* Open (creating the file, its directory and the schema as needed). */
int pragma_store_open(struct pragma_store **out, const char *path, struct pragma_err *err);
/* Open a store that exists; creates nothing (no file, no folder): for
 * commands that only read. A missing file fails with PRAGMA_E_INPUT
 * "there is no run store at PATH" (callers that list may say "no runs"). */
int pragma_store_open_existing(struct pragma_store **out, const char *path, struct pragma_err *err);
void pragma_store_close(struct pragma_store *s);

/* A store shard: the store of one job of a suite run on a cluster
 * (`pragma bench --executor slurm`), on a shared (network) filesystem.
 * Opened as pragma_store_open does, but with the rollback journal
 * (journal_mode=DELETE, synchronous=FULL) and never WAL: WAL keeps its
 * index in shared memory, which processes on different hosts cannot share,
 * so a WAL file on NFS/Lustre can be corrupted or read stale. The file
 * remembers it is a shard: pragma_store_open on it later (pragma optimize
 * --db SHARD on the node) keeps the rollback journal too. A shard has one
 * writer, its job; the suite's store is written only by bench on the submit
 * host, which merges each shard once its job has ended. */
int pragma_store_open_shard(struct pragma_store **out, const char *path, struct pragma_err *err);

/* Merge a shard into this store: its runs with their attempts and LLM
 * calls. A run this store already holds as the shard has it (same update
 * times and counts) is left alone, so merging twice changes nothing; a run
 * with more in the shard (a resumed job) is replaced by the shard's copy as
 * a whole, in one transaction. The shard is only read; a shard that does
 * not exist or holds no tables yet merges as nothing. *copied (may be
 * NULL): the number of runs copied. Returns 0 or -1 (err). */
int pragma_store_merge(struct pragma_store *s, const char *shard, int *copied, struct pragma_err *err);
const char *pragma_store_path(const struct pragma_store *s);

/* A new run id: "r" + UTC date-time + 4 random hex digits. */
void pragma_store_new_run_id(char out[48]);

/*
 * Liveness. Whenever a run or a suite run is written with status "running",
 * the store records who runs it: owner_pid, owner_host and owner_start (the
 * process's start time, so a reused pid is not mistaken for it). Reading a
 * row that says "running" (run_get, runs, suite_get, suites) checks that
 * process: when it is gone (same host, no such process or another one with
 * that pid), the row is answered — and stored, unless the file is read-only
 * or a resume has taken the run over meanwhile — as "interrupted", with
 * "interrupted_because": {"reason", "pid", "host"}. A row from another host
 * (a cluster node) or from before owners were recorded stays "running".
 * Such a run resumes with `pragma optimize --resume ID` (a suite run with
 * `pragma bench --resume ID`).
 *
 * Ids: a unique beginning of an id works wherever an id is asked for; one
 * that begins several ids fails with PRAGMA_E_INPUT listing them (up to 10).
 */

/* Runs. fields is a JSON object with any of: task_path, task_name, category,
 * task_kind, task_hash, mode, llm, status, config, machine, baseline,
 * best_attempt, best_speedup, best_time_ms, suite_id, usage, summary
 * (objects are stored as JSON text). */
int pragma_store_run_create(struct pragma_store *s, const char *run_id, json_t *fields, struct pragma_err *err);
int pragma_store_run_update(struct pragma_store *s, const char *run_id, json_t *fields, struct pragma_err *err);
/* The run with its attempts (ordered) and LLM-call totals; NULL when absent
 * (err: PRAGMA_E_INPUT "no run ..."). A unique prefix of the id works. */
json_t *pragma_store_run_get(struct pragma_store *s, const char *run_id, struct pragma_err *err);
/* Runs, newest first (limit 0: all); suite_id NULL: any. */
json_t *pragma_store_runs(struct pragma_store *s, const char *suite_id, int limit, struct pragma_err *err);

/* Attempts: (run, n, candidate) is the key; put inserts or replaces. fields:
 * status, message, code, flags, tunables, compile_log, time_ms, time_stats,
 * speedup, speedup_spread, metrics, diagnosis, conductor, coder_reply,
 * is_best, stage, durations ({"llm", "verify", "timing", "profile",
 * "lock_wait"} seconds spent by the attempt), round (with --candidates K:
 * [{"version", "idea", "status", "message", "speedup", "chosen"}]).
 * Candidate 0 is the attempt's own row (the round's chosen version); with
 * --candidates K, rows 1..K are the round's versions. */
int pragma_store_attempt_put(struct pragma_store *s, const char *run_id, int n, int candidate, json_t *fields,
			     struct pragma_err *err);

/* LLM calls. fields: attempt, role, provider, model, prompt_tokens,
 * completion_tokens, reasoning_tokens, estimated, cost, latency_ms,
 * request_hash, cached, status, prompt, reply, reasoning, retries. */
int pragma_store_llm_call(struct pragma_store *s, const char *run_id, json_t *fields, struct pragma_err *err);

/* Export the run's answered LLM calls as a replay recording (JSON Lines, the
 * format of pragma_llm_record_append): per attempt and role the last
 * answered call (an attempt redone after a resume counts once), in attempt
 * order. Returns the number of calls written. */
/* How many model calls of a run were answered (by the provider, not the
 * cache), per role: {"coder": 4, "conductor": 3}. For resuming a replay. */
json_t *pragma_store_calls_by_role(struct pragma_store *s, const char *run_id, struct pragma_err *err);
int pragma_store_export_replay(struct pragma_store *s, const char *run_id, const char *path,
			       struct pragma_err *err);

/* Suite runs (`pragma bench`). fields: suite_path, mode, llm, status,
 * config, machine, baseline_config, timing, summary. Their tasks are runs
 * whose suite_id is the suite run's id. */
void pragma_store_new_suite_id(char out[48]);   /* "s" + UTC date-time + 4 hex digits */
int pragma_store_suite_create(struct pragma_store *s, const char *suite_id, json_t *fields, struct pragma_err *err);
int pragma_store_suite_update(struct pragma_store *s, const char *suite_id, json_t *fields, struct pragma_err *err);
/* The suite run with "runs": every run of it, oldest first, each as
 * pragma_store_run_get gives it; NULL when absent. A unique prefix works. */
json_t *pragma_store_suite_get(struct pragma_store *s, const char *suite_id, struct pragma_err *err);
/* Suite runs, newest first (limit 0: all), each with "runs": their count. */
json_t *pragma_store_suites(struct pragma_store *s, int limit, struct pragma_err *err);

#endif
