/* lib/suite and the store's shards: a shard keeps the rollback journal
 * (never WAL); merging a shard copies its runs whole and merging twice
 * changes nothing; a resumed shard's newer copy replaces the older one; a
 * Slurm array element resumes the run its shard holds; the Slurm helpers
 * (array specs, job states, squeue lines, exported names). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "pragma_test.h"
#include <sqlite3.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pragma/buf.h"
#include "pragma/fs.h"
#include "pragma/store.h"
#include "pragma/suite.h"
#include "suite/suite_int.h"

static char dir[256], db[512], shard[512];

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/pragma-test-suite-XXXXXX");
	if (!mkdtemp(dir))
		return -1;
	snprintf(db, sizeof(db), "%s/pragma.db", dir);
	snprintf(shard, sizeof(shard), "%s/shards/t-t1.db", dir);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pragma_rm_rf(dir, NULL);
	return 0;
}

static char *journal_mode(const char *path)
{
	sqlite3 *h;
	sqlite3_stmt *st;
	char *m = NULL;

	assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
	assert_int_equal(sqlite3_prepare_v2(h, "PRAGMA journal_mode", -1, &st, NULL), SQLITE_OK);
	if (sqlite3_step(st) == SQLITE_ROW)
		m = strdup((const char *)sqlite3_column_text(st, 0));
	sqlite3_finalize(st);
	sqlite3_close(h);
	return m;
}

/* Every row of runs, attempts and llm_calls (ids included), as text. */
static char *dump(const char *path)
{
	static const char *const q[] = { "SELECT * FROM runs ORDER BY id", "SELECT * FROM attempts ORDER BY run_id, n, candidate",
					 "SELECT * FROM llm_calls ORDER BY id" };
	struct pragma_buf b = PRAGMA_BUF_INIT;
	sqlite3 *h;

	assert_int_equal(sqlite3_open(path, &h), SQLITE_OK);
	for (size_t i = 0; i < 3; i++) {
		sqlite3_stmt *st;
		assert_int_equal(sqlite3_prepare_v2(h, q[i], -1, &st, NULL), SQLITE_OK);
		while (sqlite3_step(st) == SQLITE_ROW) {
			for (int c = 0; c < sqlite3_column_count(st); c++)
				pragma_buf_addf(&b, "%s|", sqlite3_column_text(st, c) ? (const char *)sqlite3_column_text(st, c) : "NULL");
			pragma_buf_addch(&b, '\n');
		}
		sqlite3_finalize(st);
		pragma_buf_adds(&b, "--\n");
	}
	sqlite3_close(h);
	return pragma_buf_detach(&b, NULL);
}

static void put_attempt(struct pragma_store *s, const char *run, int n)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	json_t *f = json_pack("{s:s, s:s, s:f}", "status", "ok", "code", "int pk_forward(void);", "speedup", 1.0 + n);

	assert_int_equal(pragma_store_attempt_put(s, run, n, 0, f, &err), 0);
	json_decref(f);
	f = json_pack("{s:i, s:s, s:i, s:i, s:s}", "attempt", n, "role", "coder", "prompt_tokens", 100 * n,
		      "completion_tokens", 10, "status", "ok");
	assert_int_equal(pragma_store_llm_call(s, run, f, &err), 0);
	json_decref(f);
	f = json_pack("{s:i, s:s, s:i, s:i, s:s}", "attempt", n, "role", "conductor", "prompt_tokens", 50, "completion_tokens",
		      5, "status", "ok");
	assert_int_equal(pragma_store_llm_call(s, run, f, &err), 0);
	json_decref(f);
}

static void shard_keeps_rollback_journal(void **state)
{
	struct pragma_store *s;
	struct pragma_err err = PRAGMA_ERR_INIT;
	char *m;

	(void)state;
	assert_int_equal(pragma_store_open_shard(&s, shard, &err), 0);
	pragma_store_close(s);
	m = journal_mode(shard);
	assert_string_equal(m, "delete");
	free(m);
	/* Opened later as any store (pragma optimize --db SHARD on the node):
	 * still no WAL. */
	assert_int_equal(pragma_store_open(&s, shard, &err), 0);
	pragma_store_close(s);
	m = journal_mode(shard);
	assert_string_equal(m, "delete");
	free(m);
	char wal[600];
	snprintf(wal, sizeof(wal), "%s-wal", shard);
	assert_false(pragma_path_exists(wal));
	/* An ordinary store is WAL, as before. */
	assert_int_equal(pragma_store_open(&s, db, &err), 0);
	pragma_store_close(s);
	m = journal_mode(db);
	assert_string_equal(m, "wal");
	free(m);
}

static void merge_is_idempotent(void **state)
{
	struct pragma_store *s, *m;
	struct pragma_err err = PRAGMA_ERR_INIT;
	int copied = -1;
	json_t *f, *run;

	(void)state;
	/* The suite's store already holds another task's run. */
	assert_int_equal(pragma_store_open(&m, db, &err), 0);
	f = json_pack("{s:s, s:s, s:s}", "task_name", "other", "status", "done", "suite_id", "s1");
	assert_int_equal(pragma_store_run_create(m, "r-other", f, &err), 0);
	json_decref(f);
	put_attempt(m, "r-other", 1);

	/* A job's shard: one run, one attempt. */
	assert_int_equal(pragma_store_open_shard(&s, shard, &err), 0);
	f = json_pack("{s:s, s:s, s:s, s:{s:i}}", "task_name", "t", "status", "running", "suite_id", "s1", "config",
		      "trajectory", 0);
	assert_int_equal(pragma_store_run_create(s, "r-job", f, &err), 0);
	json_decref(f);
	put_attempt(s, "r-job", 1);

	assert_int_equal(pragma_store_merge(m, shard, &copied, &err), 0);
	assert_int_equal(copied, 1);
	run = pragma_store_run_get(m, "r-job", &err);
	assert_non_null(run);
	assert_int_equal(json_array_size(json_object_get(run, "attempts")), 1);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(run, "llm_calls"), "count")), 2);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(run, "config"), "trajectory")), 0);
	json_decref(run);

	/* Twice: nothing changes, row for row, ids included. */
	char *before = dump(db);
	assert_int_equal(pragma_store_merge(m, shard, &copied, &err), 0);
	assert_int_equal(copied, 0);
	char *after = dump(db);
	assert_string_equal(before, after);
	free(after);

	/* The job resumed and did one more attempt: the newer copy replaces
	 * the older, without duplicating calls or attempts. */
	put_attempt(s, "r-job", 2);
	f = json_pack("{s:s}", "status", "done");
	assert_int_equal(pragma_store_run_update(s, "r-job", f, &err), 0);
	json_decref(f);
	pragma_store_close(s);
	assert_int_equal(pragma_store_merge(m, shard, &copied, &err), 0);
	assert_int_equal(copied, 1);
	run = pragma_store_run_get(m, "r-job", &err);
	assert_string_equal(json_string_value(json_object_get(run, "status")), "done");
	assert_int_equal(json_array_size(json_object_get(run, "attempts")), 2);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(run, "llm_calls"), "count")), 4);
	assert_int_equal(json_integer_value(json_object_get(json_object_get(run, "llm_calls"), "prompt_tokens")),
			 100 + 50 + 200 + 50);
	json_decref(run);
	after = dump(db);
	assert_string_not_equal(before, after);
	free(before);
	before = after;
	assert_int_equal(pragma_store_merge(m, shard, &copied, &err), 0);
	assert_int_equal(copied, 0);
	after = dump(db);
	assert_string_equal(before, after);
	free(before);
	free(after);

	/* The other run was never touched. */
	run = pragma_store_run_get(m, "r-other", &err);
	assert_int_equal(json_array_size(json_object_get(run, "attempts")), 1);
	json_decref(run);

	/* A job that never created its shard merges as nothing. */
	char none[600];
	snprintf(none, sizeof(none), "%s/shards/never.db", dir);
	assert_int_equal(pragma_store_merge(m, none, &copied, &err), 0);
	assert_int_equal(copied, 0);
	assert_false(pragma_path_exists(none));
	pragma_store_close(m);
}

static void element_resumes_from_its_shard(void **state)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	char spec[600], task[600], out[600];
	char **argv = NULL, *about = NULL;
	const char *data = getenv("PRAGMA_TEST_DATA");

	(void)state;
	assert_non_null(data);
	snprintf(task, sizeof(task), "%s/fixtures/bench_slurm/suite/sl_relu", data);
	snprintf(spec, sizeof(spec), "%s/suite.json", dir);
	snprintf(out, sizeof(out), "%s/runs/sl_relu-t2", dir);
	json_t *j = json_pack("{s:i, s:s, s:s, s:{s:s, s:s, s:{s:i, s:[s, s], s:s}}, s:[{s:i, s:{s:s, s:s}, s:i, s:s, s:s}]}",
			      "version", 1, "pragma", "/opt/pragma/bin/pragma", "run_dir", dir, "suite", "id", "s1", "mode",
			      "n-pragma", "config", "attempts", 3, "overrides", "N=64", "NOT_DEFINED=2", "llm_spec",
			      "openai:m", "elements", "index", 5, "task", "path", task, "name", "sl_relu", "trajectory", 1,
			      "shard", shard, "out", out);
	assert_int_equal(json_dump_file(j, spec, 0), 0);
	json_decref(j);

	assert_int_equal(pragma_suite_element_argv(spec, 4, &argv, &about, &err), -1);
	assert_int_equal(err.kind, PRAGMA_E_INPUT);

	/* A first run: a new run, into the shard, the suite's settings. */
	assert_int_equal(pragma_suite_element_argv(spec, 5, &argv, &about, &err), 0);
	assert_non_null(argv);
	struct pragma_buf line = PRAGMA_BUF_INIT;
	for (char **a = argv; *a; a++)
		pragma_buf_addf(&line, "%s ", *a);
	char want[2048];
	snprintf(want, sizeof(want),
		 "/opt/pragma/bin/pragma optimize %s --mode n-pragma --attempts 3 --suite-run s1 --trajectory 1 --llm openai:m "
		 "--set N=64 --out %s --db %s ",
		 task, out, shard);
	assert_string_equal(line.data, want);
	pragma_buf_release(&line);
	assert_non_null(strstr(about, "element 5 of suite run s1"));
	pragma_suite_argv_free(argv);
	free(about);
	char *m = journal_mode(shard);
	assert_string_equal(m, "delete");
	free(m);

	/* The job was killed mid-run; resubmitted, it resumes that run. */
	struct pragma_store *s;
	assert_int_equal(pragma_store_open(&s, shard, &err), 0);
	json_t *f = json_pack("{s:s, s:s, s:s, s:{s:i}}", "task_path", task, "status", "running", "suite_id", "s1", "config",
			      "trajectory", 1);
	assert_int_equal(pragma_store_run_create(s, "r-killed", f, &err), 0);
	json_decref(f);
	assert_int_equal(pragma_suite_element_argv(spec, 5, &argv, &about, &err), 0);
	line = (struct pragma_buf)PRAGMA_BUF_INIT;
	for (char **a = argv; *a; a++)
		pragma_buf_addf(&line, "%s ", *a);
	snprintf(want, sizeof(want), "/opt/pragma/bin/pragma optimize --resume r-killed --db %s ", shard);
	assert_string_equal(line.data, want);
	assert_non_null(strstr(about, "resuming its run r-killed"));
	pragma_buf_release(&line);
	pragma_suite_argv_free(argv);
	free(about);

	/* Done already (requeued after it finished): nothing to run. */
	f = json_pack("{s:s}", "status", "done");
	assert_int_equal(pragma_store_run_update(s, "r-killed", f, &err), 0);
	json_decref(f);
	pragma_store_close(s);
	assert_int_equal(pragma_suite_element_argv(spec, 5, &argv, &about, &err), 0);
	assert_null(argv);
	assert_non_null(strstr(about, "nothing to do"));
	free(about);
}

static void slurm_helpers(void **state)
{
	struct pragma_buf b = PRAGMA_BUF_INIT;
	struct suite_squeue_row r;

	(void)state;
	int idx[] = { 0, 1, 2, 3, 7, 9, 10 };
	suite_array_spec(idx, 7, &b);
	assert_string_equal(b.data, "0-3,7,9-10");
	pragma_buf_reset(&b);
	int one[] = { 5 };
	suite_array_spec(one, 1, &b);
	assert_string_equal(b.data, "5");
	pragma_buf_release(&b);

	assert_int_equal(suite_slurm_state("PENDING"), PRAGMA_SUITE_PENDING);
	assert_int_equal(suite_slurm_state("REQUEUED"), PRAGMA_SUITE_PENDING);
	assert_int_equal(suite_slurm_state("RUNNING"), PRAGMA_SUITE_RUNNING);
	assert_int_equal(suite_slurm_state("COMPLETING"), PRAGMA_SUITE_RUNNING);
	assert_int_equal(suite_slurm_state("COMPLETED"), PRAGMA_SUITE_DONE);
	assert_int_equal(suite_slurm_state("CANCELLED by 0"), PRAGMA_SUITE_FAILED);
	assert_int_equal(suite_slurm_state("CANCELLED+"), PRAGMA_SUITE_FAILED);
	assert_int_equal(suite_slurm_state("TIMEOUT"), PRAGMA_SUITE_FAILED);
	assert_int_equal(suite_slurm_state("OUT_OF_MEMORY"), PRAGMA_SUITE_FAILED);
	assert_true(suite_slurm_retryable("TIMEOUT"));
	assert_true(suite_slurm_retryable("PREEMPTED"));
	assert_true(suite_slurm_retryable("NODE_FAIL"));
	assert_false(suite_slurm_retryable("CANCELLED"));
	assert_false(suite_slurm_retryable("FAILED"));

	assert_int_equal(suite_parse_squeue_line("4711_3|FAILED|768|node[1-2]|NonZeroExitCode", &r), 0);
	assert_int_equal(r.job, 4711);
	assert_int_equal(r.index, 3);
	assert_string_equal(r.state, "FAILED");
	assert_int_equal(r.exit_code, 3);
	assert_int_equal(r.signal, 0);
	assert_string_equal(r.nodes, "node[1-2]");
	assert_string_equal(r.reason, "NonZeroExitCode");
	assert_int_equal(suite_parse_squeue_line("12_0|PENDING|0||ReqNodeNotAvail, UnavailableNodes:n1 \n", &r), 0);
	assert_string_equal(r.nodes, "");
	assert_string_equal(r.reason, "ReqNodeNotAvail, UnavailableNodes:n1");
	assert_int_equal(suite_parse_squeue_line("12_1|CANCELLED|15|n1|None", &r), 0);
	assert_int_equal(r.signal, 15);
	assert_int_equal(suite_parse_squeue_line("12|RUNNING|0|n1|None", &r), -1); /* not an array element */
	assert_int_equal(suite_parse_squeue_line("garbage", &r), -1);

	/* Names only, the ones a job needs, never a value. */
	char *env[] = { "PATH=/usr/bin", "HOME=/root", "OPENAI_API_KEY=sk-secret-1", "PRAGMA_LLM=openai:m",
			"MY_KEY_VAR=x", "LC_ALL=C", "RANDOM_THING=1", "BAD-NAME=2", "MYTOKEN=sk-secret-2", NULL };
	setenv("MYTOKEN", "sk-secret-2", 1);
	suite_export_names(env, "MYTOKEN", &b);
	assert_string_equal(b.data, "PATH,HOME,OPENAI_API_KEY,PRAGMA_LLM,LC_ALL,MYTOKEN");
	assert_null(strstr(b.data, "secret"));
	pragma_buf_release(&b);
}

static void executor_config(void **state)
{
	const char *args[] = { "--exclusive", "--qos=high" };
	struct pragma_slurm_opts so = { .partition = "gpu", .time = "1:00:00", .max_jobs = 4, .sbatch_args = args,
					.n_sbatch_args = 2 };
	json_t *c = pragma_suite_executor_config("slurm", &so);
	char *s = json_dumps(c, JSON_COMPACT | JSON_SORT_KEYS);

	(void)state;
	assert_string_equal(s, "{\"max_jobs\":4,\"name\":\"slurm\",\"partition\":\"gpu\",\"sbatch_args\":[\"--exclusive\","
			       "\"--qos=high\"],\"time\":\"1:00:00\"}");
	free(s);
	json_decref(c);
	c = pragma_suite_executor_config("local", NULL);
	s = json_dumps(c, JSON_COMPACT);
	assert_string_equal(s, "{\"name\":\"local\"}");
	free(s);
	json_decref(c);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test_setup_teardown(shard_keeps_rollback_journal, setup, teardown),
		cmocka_unit_test_setup_teardown(merge_is_idempotent, setup, teardown),
		cmocka_unit_test_setup_teardown(element_resumes_from_its_shard, setup, teardown),
		cmocka_unit_test(slurm_helpers),
		cmocka_unit_test(executor_config),
	};
	return pragma_run_tests(tests, NULL, NULL);
}
