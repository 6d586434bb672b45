/*
 * exec:COMMAND and replay:FILE, and recordings (--record) that a replay
 * plays back by role and order.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "pragma_test.h"

#include "../fake_llm/fake_llm.h"
#include "pragma/llm.h"

static char dir[256];

static int ask(struct pragma_llm *llm, const char *agent, int attempt, const char *text,
	       struct pragma_llm_reply *rep, struct pragma_err *err)
{
	struct pragma_llm_msg msgs[] = { { "system", "You are a test." }, { "user", text } };
	struct pragma_llm_request req = PRAGMA_LLM_REQUEST_INIT;

	req.agent = agent;
	req.attempt = attempt;
	req.msgs = msgs;
	req.n_msgs = 2;
	return pragma_llm_send(llm, &req, rep, err);
}

static int open_exec(struct pragma_llm **llm, const char *cmd, int timeout_ms, struct pragma_err *err)
{
	struct pragma_llm_options o = PRAGMA_LLM_OPTIONS_INIT;
	char spec[2048];

	snprintf(spec, sizeof(spec), "exec:%s", cmd);
	o.spec = spec;
	o.cache = 0;
	o.exec_timeout_ms = timeout_ms;
	o.backoff_ms = 5;
	return pragma_llm_open(llm, &o, err);
}

/* The command sees the request JSON on stdin and the role and attempt in its
 * environment; its stdout is the reply; tokens are estimated. */
static void test_exec_basic(void **state)
{
	struct pragma_llm *llm;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_llm_reply rep = PRAGMA_LLM_REPLY_INIT;
	char cmd[1024], path[512];
	struct pragma_buf seen = PRAGMA_BUF_INIT;

	(void)state;
	snprintf(path, sizeof(path), "%s/stdin.json", dir);
	snprintf(cmd, sizeof(cmd), "cat > %s; echo \"agent=$PRAGMA_AGENT attempt=$PRAGMA_ATTEMPT\"; echo note >&2", path);
	assert_int_equal(open_exec(&llm, cmd, 10000, &err), 0);
	assert_string_equal(pragma_llm_model(llm), "cat");
	assert_int_equal(ask(llm, "conductor", 4, "0123456789abcdef", &rep, &err), 0);
	assert_string_equal(rep.text.data, "agent=conductor attempt=4");
	assert_string_equal(rep.provider, "exec");
	assert_int_equal(rep.estimated, 1);
	assert_int_equal(rep.prompt_tokens, (15 + 16 + 3) / 4);
	assert_int_equal(rep.completion_tokens, (25 + 3) / 4);
	assert_string_equal(rep.diag.data, "note\n");
	assert_int_equal(pragma_read_file(path, &seen, 0, &err), 0);
	json_t *j = json_loads(seen.data, 0, NULL);
	assert_non_null(j);
	json_t *m = json_object_get(j, "messages");
	assert_int_equal(json_array_size(m), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(m, 1), "content")), "0123456789abcdef");
	assert_string_equal(json_string_value(json_object_get(json_array_get(m, 0), "role")), "system");
	assert_non_null(json_object_get(j, "max_tokens"));
	json_decref(j);

	struct pragma_llm_usage u;
	pragma_llm_usage_get(llm, &u);
	assert_int_equal(u.estimated_calls, 1);
	assert_int_equal(u.prompt_tokens, rep.prompt_tokens);
	pragma_buf_release(&seen);
	pragma_llm_reply_release(&rep);
	pragma_llm_free(llm);
}

static void test_exec_failures(void **state)
{
	struct pragma_llm *llm;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_llm_reply rep = PRAGMA_LLM_REPLY_INIT;
	char cmd[1024];

	(void)state;
	/* A non-zero exit: stderr in the message, not retried. */
	assert_int_equal(open_exec(&llm, "echo 'model is down' >&2; exit 3", 10000, &err), 0);
	assert_int_equal(ask(llm, "coder", 1, "x", &rep, &err), -1);
	assert_int_equal(rep.fail, PRAGMA_LLM_FAIL_EXEC);
	assert_non_null(strstr(err.msg, "exited 3"));
	assert_non_null(strstr(err.msg, "model is down"));
	assert_int_equal(rep.retries, 0);
	assert_int_equal(err.kind, PRAGMA_E_ENV);
	pragma_llm_free(llm);

	/* The deadline. */
	assert_int_equal(open_exec(&llm, "sleep 10; echo late", 300, &err), 0);
	double t0 = llm_test_now_ms();
	assert_int_equal(ask(llm, "coder", 1, "x", &rep, &err), -1);
	assert_true(llm_test_now_ms() - t0 < 3000);
	assert_int_equal(rep.fail, PRAGMA_LLM_FAIL_EXEC);
	assert_non_null(strstr(err.msg, "no answer within"));
	assert_non_null(strstr(err.hint, "--exec-timeout"));
	pragma_llm_free(llm);

	/* Nothing printed. */
	assert_int_equal(open_exec(&llm, "cat >/dev/null", 10000, &err), 0);
	assert_int_equal(ask(llm, "coder", 1, "x", &rep, &err), -1);
	assert_non_null(strstr(err.msg, "printed nothing"));
	pragma_llm_free(llm);

	/* Exit 75 (EX_TEMPFAIL) is retried: the second run answers. */
	snprintf(cmd, sizeof(cmd), "if [ -e %s/once ]; then echo second; else touch %s/once; exit 75; fi", dir, dir);
	assert_int_equal(open_exec(&llm, cmd, 10000, &err), 0);
	assert_int_equal(ask(llm, "coder", 1, "x", &rep, &err), 0);
	assert_string_equal(rep.text.data, "second");
	assert_int_equal(rep.retries, 1);
	pragma_llm_free(llm);

	/* Bytes that are not UTF-8 are replaced, never passed on. */
	assert_int_equal(open_exec(&llm, "printf 'ok \\377\\376 done'", 10000, &err), 0);
	assert_int_equal(ask(llm, "coder", 1, "x", &rep, &err), 0);
	assert_string_equal(rep.text.data, "ok ?? done");
	pragma_llm_free(llm);

	/* A program that does not exist. */
	assert_int_equal(open_exec(&llm, "/nonexistent/model-cli", 10000, &err), 0);
	assert_int_equal(ask(llm, "coder", 1, "x", &rep, &err), -1);
	assert_int_equal(rep.fail, PRAGMA_LLM_FAIL_EXEC);
	assert_non_null(strstr(err.msg, "exited 127"));
	pragma_llm_free(llm);
	pragma_llm_reply_release(&rep);
}

/* Record a session through exec, then replay it: same replies, by role and
 * order, whatever the requests say; then a clean stop past the end. */
static void test_record_replay(void **state)
{
	struct pragma_llm_options o = PRAGMA_LLM_OPTIONS_INIT;
	struct pragma_llm *llm;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_llm_reply rep = PRAGMA_LLM_REPLY_INIT;
	char rec[512], spec[600], cmd[600];
	struct pragma_llm_usage u;

	(void)state;
	snprintf(rec, sizeof(rec), "%s/session.jsonl", dir);
	snprintf(cmd, sizeof(cmd), "exec:echo \"$PRAGMA_AGENT reply $PRAGMA_ATTEMPT\"");
	o.spec = cmd;
	o.cache = 0;
	o.record_path = rec;
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	assert_int_equal(ask(llm, "coder", 1, "write v1 (t=1.23 ms)", &rep, &err), 0);
	assert_int_equal(ask(llm, "conductor", 1, "judge", &rep, &err), 0);
	assert_int_equal(ask(llm, "coder", 2, "write v2", &rep, &err), 0);
	assert_string_equal(rep.text.data, "coder reply 2");
	pragma_llm_free(llm);

	o = (struct pragma_llm_options)PRAGMA_LLM_OPTIONS_INIT;
	snprintf(spec, sizeof(spec), "replay:%s", rec);
	o.spec = spec;
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	assert_non_null(strstr(pragma_llm_describe(llm), "3 recorded"));
	/* Different numbers in the prompt, other interleaving: matched by role and order. */
	assert_int_equal(ask(llm, "conductor", 1, "judge (t=9.99 ms)", &rep, &err), 0);
	assert_string_equal(rep.text.data, "conductor reply 1");
	assert_string_equal(rep.provider, "replay");
	assert_int_equal(rep.estimated, 1); /* recorded from exec */
	assert_int_equal(ask(llm, "coder", 1, "write v1 (t=4.56 ms)", &rep, &err), 0);
	assert_string_equal(rep.text.data, "coder reply 1");
	assert_true(rep.completion_tokens > 0);
	assert_int_equal(ask(llm, "coder", 2, "something else", &rep, &err), 0);
	assert_string_equal(rep.text.data, "coder reply 2");
	assert_int_equal(ask(llm, "coder", 3, "one more", &rep, &err), PRAGMA_LLM_STOP);
	assert_int_equal(rep.fail, PRAGMA_LLM_FAIL_REPLAY_END);
	assert_non_null(strstr(err.msg, "2 recorded replies for agent 'coder'"));
	assert_int_equal(ask(llm, "summarizer", 1, "sum", &rep, &err), PRAGMA_LLM_STOP);
	assert_non_null(strstr(err.msg, "0 recorded replies"));
	pragma_llm_usage_get(llm, &u);
	assert_int_equal(u.calls, 3);
	assert_int_equal(u.stopped, 2);
	pragma_llm_free(llm);
	pragma_llm_reply_release(&rep);
}

static void test_replay_bad_files(void **state)
{
	struct pragma_llm_options o = PRAGMA_LLM_OPTIONS_INIT;
	struct pragma_llm *llm;
	struct pragma_err err = PRAGMA_ERR_INIT;
	char path[512], spec[600];

	(void)state;
	snprintf(path, sizeof(path), "%s/bad.jsonl", dir);
	snprintf(spec, sizeof(spec), "replay:%s", path);
	o.spec = spec;
	const char *bad = "{\"agent\": \"coder\", \"text\": \"ok\"}\n\n{\"agent\": \"coder\", \"text\": \n";
	assert_int_equal(pragma_write_file_atomic(path, bad, strlen(bad), &err), 0);
	assert_int_equal(pragma_llm_open(&llm, &o, &err), -1);
	assert_null(llm);
	assert_int_equal(err.kind, PRAGMA_E_INPUT);
	assert_non_null(strstr(err.msg, "bad.jsonl:3"));
	const char *notext = "{\"agent\": \"coder\"}\n";
	assert_int_equal(pragma_write_file_atomic(path, notext, strlen(notext), &err), 0);
	assert_int_equal(pragma_llm_open(&llm, &o, &err), -1);
	assert_non_null(strstr(err.msg, "\"text\""));
	assert_int_equal(pragma_write_file_atomic(path, "", 0, &err), 0);
	assert_int_equal(pragma_llm_open(&llm, &o, &err), -1);
	assert_non_null(strstr(err.msg, "no recorded calls"));
	snprintf(spec, sizeof(spec), "replay:%s/missing.jsonl", dir);
	assert_int_equal(pragma_llm_open(&llm, &o, &err), -1);
	assert_non_null(strstr(err.hint, "--record"));
}

/* The store's export path: pragma_llm_record_append with a filled reply. */
static void test_record_append(void **state)
{
	struct pragma_llm_reply rep = PRAGMA_LLM_REPLY_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_buf text = PRAGMA_BUF_INIT;
	char path[512];

	(void)state;
	snprintf(path, sizeof(path), "%s/export.jsonl", dir);
	pragma_buf_adds(&rep.text, "line one\nline \"two\"\n");
	pragma_buf_adds(&rep.reasoning, "why");
	snprintf(rep.provider, sizeof(rep.provider), "openai");
	snprintf(rep.model, sizeof(rep.model), "gpt-x");
	snprintf(rep.finish_reason, sizeof(rep.finish_reason), "stop");
	rep.prompt_tokens = 10;
	rep.completion_tokens = 20;
	rep.reasoning_tokens = 5;
	rep.cost = 0.5;
	assert_int_equal(pragma_llm_record_append(path, "coder", 3, &rep, &err), 0);
	assert_int_equal(pragma_llm_record_append(path, "conductor", 3, &rep, &err), 0);
	assert_int_equal(pragma_read_file(path, &text, 0, &err), 0);
	const char *nl = strchr(text.data, '\n');
	assert_non_null(nl);
	json_t *o = json_loadb(text.data, (size_t)(nl - text.data), 0, NULL);
	assert_non_null(o);
	assert_string_equal(json_string_value(json_object_get(o, "agent")), "coder");
	assert_int_equal(json_integer_value(json_object_get(o, "attempt")), 3);
	assert_string_equal(json_string_value(json_object_get(o, "text")), "line one\nline \"two\"\n");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "usage"), "completion_tokens")), 20);
	json_decref(o);

	/* It replays. */
	struct pragma_llm_options opt = PRAGMA_LLM_OPTIONS_INIT;
	struct pragma_llm *llm;
	char spec[600];
	snprintf(spec, sizeof(spec), "replay:%s", path);
	opt.spec = spec;
	assert_int_equal(pragma_llm_open(&llm, &opt, &err), 0);
	assert_int_equal(ask(llm, "conductor", 1, "q", &rep, &err), 0);
	assert_string_equal(rep.model, "gpt-x");
	assert_string_equal(rep.reasoning.data, "why");
	assert_true(rep.cost == 0.5);
	pragma_llm_free(llm);
	pragma_buf_release(&text);
	pragma_llm_reply_release(&rep);
	assert_int_equal(pragma_llm_record_append("/nonexistent/dir/x.jsonl", "coder", 1, &rep, &err), -1);
}

static int setup(void **state)
{
	struct pragma_buf tmp = PRAGMA_BUF_INIT;

	(void)state;
	fake_llm_env_reset();
	if (pragma_mkdtemp("/tmp", "pragma-llm-exec-", &tmp, NULL) < 0)
		return -1;
	snprintf(dir, sizeof(dir), "%s", tmp.data);
	pragma_buf_release(&tmp);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pragma_rm_rf(dir, NULL);
	pragma_rm_rf(getenv("PRAGMA_CACHE_DIR"), NULL);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_exec_basic),
		cmocka_unit_test(test_exec_failures),
		cmocka_unit_test(test_record_replay),
		cmocka_unit_test(test_replay_bad_files),
		cmocka_unit_test(test_record_append),
	};
	return pragma_run_tests(tests, setup, teardown);
}
