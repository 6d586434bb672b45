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

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(runs_attempts_calls),
		cmocka_unit_test(not_a_database),
	};
	return pragma_run_tests(tests, setup, teardown);
}
