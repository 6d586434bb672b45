/* The SQLite run store: runs, attempts, LLM calls, listing, prefixes,
 * persistence across reopen, and the replay export. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "pragma_test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pragma/buf.h"
#include "pragma/fs.h"
#include "pragma/store.h"

static char dir[256], db[512];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/pragma-test-store-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(db, sizeof(db), "%s/sub/pragma.db", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pragma_rm_rf(dir, NULL);
	return 0;
}

static void runs_attempts_calls(void **state)
{
	struct pragma_store *s;
	struct pragma_err err = PRAGMA_ERR_INIT;
	char id[48], id2[48];
	json_t *f, *run, *list;

	(void)state;
	assert_int_equal(pragma_store_open(&s, db, &err), 0);
	pragma_store_new_run_id(id);
	assert_int_equal(id[0], 'r');
	f = json_pack("{s:s, s:s, s:s, s:{s:i}}", "task_name", "13_relu", "mode", "pragma", "status", "running", "config",
		      "attempts", 5);
	assert_int_equal(pragma_store_run_create(s, id, f, &err), 0);
	json_decref(f);

	f = json_pack("{s:s, s:s, s:f, s:{s:f}}", "status", "ok", "code", "int pk_forward(...)", "speedup", 1.5,
		      "metrics", "roof.bw_frac", 0.8);
	assert_int_equal(pragma_store_attempt_put(s, id, 1, 0, f, &err), 0);
	json_decref(f);
	f = json_pack("{s:s, s:s}", "status", "compile_error", "message", "kernel.c:3: error: expected ';'");
	assert_int_equal(pragma_store_attempt_put(s, id, 2, 0, f, &err), 0);
	json_decref(f);
	/* Replacing fields of an existing attempt keeps the others. */
	f = json_pack("{s:b}", "is_best", 1);
	assert_int_equal(pragma_store_attempt_put(s, id, 1, 0, f, &err), 0);
	json_decref(f);

	f = json_pack("{s:i, s:s, s:s, s:i, s:i, s:f, s:s, s:s}", "attempt", 1, "role", "coder", "model", "m", "prompt_tokens",
		      100, "completion_tokens", 50, "cost", 0.25, "status", "ok", "reply", "```c\nint x;\n```");
	assert_int_equal(pragma_store_llm_call(s, id, f, &err), 0);
	/* The attempt redone after a resume: a second coder call for attempt 1. */
	json_object_set_new(f, "reply", json_string("```c\nint y;\n```"));
	assert_int_equal(pragma_store_llm_call(s, id, f, &err), 0);
	json_decref(f);
	f = json_pack("{s:i, s:s, s:s, s:s}", "attempt", 1, "role", "conductor", "status", "ok", "reply", "Verdict: failure");
	assert_int_equal(pragma_store_llm_call(s, id, f, &err), 0);
	json_decref(f);
	f = json_pack("{s:i, s:s, s:s, s:s}", "attempt", 2, "role", "coder", "status", "rate_limit", "reply", "");
	assert_int_equal(pragma_store_llm_call(s, id, f, &err), 0);
	json_decref(f);

	f = json_pack("{s:s, s:i, s:f}", "status", "done", "best_attempt", 1, "best_speedup", 1.5);
	assert_int_equal(pragma_store_run_update(s, id, f, &err), 0);
	json_decref(f);
	f = json_pack("{s:s}", "status", "done");
	assert_int_equal(pragma_store_run_update(s, "r-nope", f, &err), -1);
	json_decref(f);
	/* Unknown columns are a bug, said loudly. */
	f = json_pack("{s:s}", "colour", "red");
	assert_int_equal(pragma_store_attempt_put(s, id, 3, 0, f, &err), -1);
	assert_non_null(strstr(err.msg, "colour"));
	json_decref(f);
	pragma_store_close(s);

	/* Reopen: everything persisted. */
	assert_int_equal(pragma_store_open(&s, db, &err), 0);
	run = pragma_store_run_get(s, id, &err);
	assert_non_null(run);
	assert_string_equal(json_string_value(json_object_get(run, "status")), "done");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(run, "config"), "attempts")), 5);
	json_t *att = json_object_get(run, "attempts");
	assert_int_equal(json_array_size(att), 2);
	json_t *a1 = json_array_get(att, 0);
	assert_int_equal(json_integer_value(json_object_get(a1, "is_best")), 1);
	assert_string_equal(json_string_value(json_object_get(a1, "status")), "ok");
	assert_true(json_real_value(json_object_get(json_object_get(a1, "metrics"), "roof.bw_frac")) == 0.8);
	json_t *calls = json_object_get(run, "llm_calls");
	assert_int_equal(json_integer_value(json_object_get(calls, "count")), 4);
	assert_int_equal(json_integer_value(json_object_get(calls, "prompt_tokens")), 200);
	assert_true(json_real_value(json_object_get(calls, "cost")) == 0.5);
	json_decref(run);

	/* A unique prefix resolves; an ambiguous or missing one does not. */
	char prefix[16];
	memcpy(prefix, id, 12);
	prefix[12] = '\0';
	run = pragma_store_run_get(s, id, &err);
	assert_non_null(run);
	json_decref(run);
	snprintf(id2, sizeof(id2), "%.12sZZZZ-ffff", id);
	f = json_pack("{s:s}", "status", "running");
	assert_int_equal(pragma_store_run_create(s, id2, f, &err), 0);
	json_decref(f);
	assert_null(pragma_store_run_get(s, prefix, &err));
	assert_non_null(strstr(err.msg, "ambiguous"));
	/* ... and says which ids it begins. */
	assert_int_equal(err.kind, PRAGMA_E_INPUT);
	assert_non_null(strstr(err.msg, id));
	assert_non_null(strstr(err.msg, id2));
	assert_non_null(strstr(err.hint, "more of the id"));
	/* LIKE's wildcards in a prefix are taken literally. */
	assert_null(pragma_store_run_get(s, "r%", &err));
	assert_non_null(strstr(err.msg, "no run"));
	assert_null(pragma_store_run_get(s, "r1999", &err));
	assert_non_null(strstr(err.msg, "no run"));

	list = pragma_store_runs(s, NULL, 0, &err);
	assert_int_equal(json_array_size(list), 2);
	json_decref(list);

	/* Replay export: per attempt and role the last answered call; failed
	 * calls are left out. */
	char path[600];
	struct pragma_buf b = PRAGMA_BUF_INIT;
	snprintf(path, sizeof(path), "%s/replay.jsonl", dir);
	assert_int_equal(pragma_store_export_replay(s, id, path, &err), 2);
	assert_int_equal(pragma_read_file(path, &b, 0, &err), 0);
	json_t *line = json_loadb(b.data, strcspn(b.data, "\n"), 0, NULL);
	assert_non_null(line);
	assert_string_equal(json_string_value(json_object_get(line, "agent")), "coder");
	assert_string_equal(json_string_value(json_object_get(line, "text")), "```c\nint y;\n```");
	json_decref(line);
	pragma_buf_release(&b);
	pragma_store_close(s);
}

static void not_a_database(void **state)
{
	struct pragma_store *s;
	struct pragma_err err = PRAGMA_ERR_INIT;
	char path[600];
	FILE *f;

	(void)state;
	snprintf(path, sizeof(path), "%s/garbage.db", dir);
	f = fopen(path, "w");
	fputs("this is not sqlite, it is a long enough line of text to be read as a header", f);
	fclose(f);
	assert_int_equal(pragma_store_open(&s, path, &err), -1);
	assert_int_equal(err.kind, PRAGMA_E_ENV);
	assert_null(s);
}

/* A child process that marks a run (or suite run) running and dies. */
static void run_by_dead_process(const char *id, int suite)
{
	pid_t pid = fork();
	int status;

	assert_true(pid >= 0);
	if (pid == 0) {
		struct pragma_store *s;
		struct pragma_err err = PRAGMA_ERR_INIT;
		json_t *f = json_pack("{s:s, s:s}", suite ? "suite_path" : "task_name", "13_relu", "status", "running");
		if (pragma_store_open(&s, db, &err) < 0 ||
		    (suite ? pragma_store_suite_create(s, id, f, &err) : pragma_store_run_create(s, id, f, &err)) < 0)
			_exit(1);
		pragma_store_close(s);
		_exit(0); /* as if killed: nobody sets it back */
	}
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFEXITED(status) && WEXITSTATUS(status) == 0);
}

/* Killed runs do not stay "running": a row whose process is gone reads,
 * and is then stored, as interrupted. */
static void liveness(void **state)
{
	struct pragma_store *s;
	struct pragma_err err = PRAGMA_ERR_INIT;
	json_t *run, *f, *list, *why;
	char host[256];

	(void)state;
	gethostname(host, sizeof(host));
	assert_int_equal(pragma_store_open(&s, db, &err), 0);

	/* Ours: alive, with who runs it. */
	f = json_pack("{s:s, s:s}", "task_name", "13_relu", "status", "running");
	assert_int_equal(pragma_store_run_create(s, "rlive-mine", f, &err), 0);
	json_decref(f);
	run = pragma_store_run_get(s, "rlive-mine", &err);
	assert_string_equal(json_string_value(json_object_get(run, "status")), "running");
	assert_int_equal(json_integer_value(json_object_get(run, "owner_pid")), getpid());
	assert_string_equal(json_string_value(json_object_get(run, "owner_host")), host);
	json_decref(run);

	/* A dead one. */
	run_by_dead_process("rlive-dead", 0);
	run = pragma_store_run_get(s, "rlive-dead", &err);
	assert_non_null(run);
	assert_string_equal(json_string_value(json_object_get(run, "status")), "interrupted");
	why = json_object_get(run, "interrupted_because");
	assert_non_null(strstr(json_string_value(json_object_get(why, "reason")), "gone"));
	json_decref(run);
	list = pragma_store_runs(s, NULL, 0, &err);
	size_t i;
	json_t *r;
	int seen = 0;
	json_array_foreach(list, i, r)
		if (!strcmp(json_string_value(json_object_get(r, "id")), "rlive-dead")) {
			assert_string_equal(json_string_value(json_object_get(r, "status")), "interrupted");
			seen = 1;
		}
	assert_true(seen);
	json_decref(list);

	/* The same pid now names another process (its start time differs). */
	f = json_pack("{s:s}", "owner_start", "1");
	assert_int_equal(pragma_store_run_update(s, "rlive-mine", f, &err), 0);
	json_decref(f);
	run = pragma_store_run_get(s, "rlive-mine", &err);
	assert_string_equal(json_string_value(json_object_get(run, "status")), "interrupted");
	json_decref(run);

	/* Resumed: running again, by us. */
	f = json_pack("{s:s}", "status", "running");
	assert_int_equal(pragma_store_run_update(s, "rlive-mine", f, &err), 0);
	json_decref(f);
	run = pragma_store_run_get(s, "rlive-mine", &err);
	assert_string_equal(json_string_value(json_object_get(run, "status")), "running");
	json_decref(run);

	/* Another host (a cluster node): cannot tell, stays running. */
	run_by_dead_process("rlive-remote", 0);
	f = json_pack("{s:s}", "owner_host", "some-other-node");
	assert_int_equal(pragma_store_run_update(s, "rlive-remote", f, &err), 0);
	json_decref(f);
	run = pragma_store_run_get(s, "rlive-remote", &err);
	assert_string_equal(json_string_value(json_object_get(run, "status")), "running");
	json_decref(run);

	/* Suite runs alike. */
	run_by_dead_process("slive-dead", 1);
	run = pragma_store_suite_get(s, "slive-dead", &err);
	assert_non_null(run);
	assert_string_equal(json_string_value(json_object_get(run, "status")), "interrupted");
	json_decref(run);
	pragma_store_close(s);

	/* It was stored, not only shown: a raw reopen sees it. */
	assert_int_equal(pragma_store_open_existing(&s, db, &err), 0);
	list = pragma_store_suites(s, 0, &err);
	json_array_foreach(list, i, r)
		if (!strcmp(json_string_value(json_object_get(r, "id")), "slive-dead"))
			assert_string_equal(json_string_value(json_object_get(r, "status")), "interrupted");
	json_decref(list);
	pragma_store_close(s);
}

/* Opening for reading creates nothing. */
static void open_existing(void **state)
{
	struct pragma_store *s = NULL;
	struct pragma_err err = PRAGMA_ERR_INIT;
	char path[700], parent[600];

	(void)state;
	snprintf(parent, sizeof(parent), "%s/not/there", dir);
	snprintf(path, sizeof(path), "%s/pragma.db", parent);
	assert_int_equal(pragma_store_open_existing(&s, path, &err), -1);
	assert_int_equal(err.kind, PRAGMA_E_INPUT);
	assert_non_null(strstr(err.msg, "no run store"));
	assert_null(s);
	assert_false(pragma_path_exists(path));
	assert_false(pragma_path_exists(parent));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(runs_attempts_calls),
		cmocka_unit_test(not_a_database),
		cmocka_unit_test(liveness),
		cmocka_unit_test(open_existing),
	};
	return pragma_run_tests(tests, setup, teardown);
}
