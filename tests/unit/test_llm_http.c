/*
 * The OpenAI and Anthropic providers against the fake server, through the
 * real libcurl path: streaming and not, the request as sent (headers, body),
 * reasoning kept apart from the answer, usage, finish reasons.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "pragma_test.h"

#include "../fake_llm/fake_llm.h"
#include "pragma/llm.h"

static const char *cache_dir;

static const char *script =
	"{\"model\": \"fake-model-0613\", \"replies\": {"
	"\"coder\": [{\"text\": \"```c\\nint pk_forward(void) { return 0; }\\n```\", "
	"\"reasoning\": \"I should write a kernel.\"},"
	"            {\"text\": \"second coder reply\", \"usage\": {\"prompt\": 100, \"completion\": 20, \"reasoning\": 7}},"
	"            {\"text\": \"cut\", \"finish\": \"length\"},"
	"            {\"text\": \"after thinking\", \"reasoning\": \"inline thoughts\", \"think_inline\": true}],"
	"\"conductor\": [\"Verdict: improvement\"]}}";

static void opts(struct pragma_llm_options *o, const char *spec, const char *base, int stream)
{
	*o = (struct pragma_llm_options)PRAGMA_LLM_OPTIONS_INIT;
	o->spec = spec;
	o->base_url = base;
	o->stream = stream;
	o->cache = 0;
	o->backoff_ms = 5;
	o->backoff_max_ms = 50;
	o->timeout_ms = 10000;
	o->stall_timeout_ms = 2000;
}

static int send1(struct pragma_llm *llm, const char *agent, const char *user, struct pragma_llm_reply *rep,
		 struct pragma_err *err)
{
	struct pragma_llm_msg msgs[] = { { "system", "You write kernels." }, { "user", user } };
	struct pragma_llm_request req = PRAGMA_LLM_REQUEST_INIT;

	req.agent = agent;
	req.attempt = 1;
	req.msgs = msgs;
	req.n_msgs = 2;
	return pragma_llm_send(llm, &req, rep, err);
}

static void run_openai(int stream)
{
	struct fake_llm f;
	struct pragma_llm_options o;
	struct pragma_llm *llm;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_llm_reply rep = PRAGMA_LLM_REPLY_INIT;

	assert_int_equal(fake_llm_start(&f, script), 0);
	setenv("PRAGMA_LLM_API_KEY", "sk-test-123", 1);
	opts(&o, "openai:fake-model", f.base_openai, stream);
	o.temperature = 0.25;
	o.seed = 42;
	o.has_seed = 1;
	o.max_tokens = 1234;
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);

	/* 1: a kernel, with reasoning kept apart. */
	assert_int_equal(send1(llm, "coder", "write relu", &rep, &err), 0);
	assert_string_equal(rep.text.data, "```c\nint pk_forward(void) { return 0; }\n```");
	assert_string_equal(rep.reasoning.data, "I should write a kernel.");
	assert_null(strstr(rep.text.data, "I should"));
	assert_string_equal(rep.finish_reason, "stop");
	assert_string_equal(rep.provider, "openai");
	assert_string_equal(rep.model, "fake-model-0613");
	assert_int_equal(rep.estimated, 0);
	assert_int_equal(rep.retries, 0);
	assert_int_equal(rep.http_status, 200);
	assert_int_equal(strlen(rep.request_hash), 64);
	assert_true(rep.prompt_tokens > 0);
	assert_true(rep.reasoning_tokens > 0);
	assert_true(rep.completion_tokens > rep.reasoning_tokens);

	/* 2: scripted usage comes through exactly. */
	assert_int_equal(send1(llm, "coder", "again", &rep, &err), 0);
	assert_string_equal(rep.text.data, "second coder reply");
	assert_int_equal(rep.prompt_tokens, 100);
	assert_int_equal(rep.completion_tokens, 20);
	assert_int_equal(rep.reasoning_tokens, 7);

	/* 3: cut by the token limit. */
	assert_int_equal(send1(llm, "coder", "more", &rep, &err), 0);
	assert_string_equal(rep.finish_reason, "length");
	assert_int_equal(rep.truncated, 1);

	/* 4: <think> inline goes to reasoning. */
	assert_int_equal(send1(llm, "coder", "think", &rep, &err), 0);
	assert_string_equal(rep.text.data, "after thinking");
	assert_string_equal(rep.reasoning.data, "inline thoughts");

	/* Another role has its own sequence. */
	assert_int_equal(send1(llm, "conductor", "judge", &rep, &err), 0);
	assert_string_equal(rep.text.data, "Verdict: improvement");

	/* What the server saw. */
	json_t *log = fake_llm_requests(&f), *e = json_array_get(log, 0), *h = json_object_get(e, "headers"),
	       *b = json_object_get(e, "body");
	assert_int_equal(json_array_size(log), 5);
	assert_string_equal(json_string_value(json_object_get(e, "path")), "/v1/chat/completions");
	assert_string_equal(json_string_value(json_object_get(h, "x-pragma-agent")), "coder");
	assert_string_equal(json_string_value(json_object_get(h, "authorization")), "Bearer sk-test-123");
	assert_string_equal(json_string_value(json_object_get(b, "model")), "fake-model");
	assert_true(json_real_value(json_object_get(b, "temperature")) == 0.25);
	assert_int_equal(json_integer_value(json_object_get(b, "seed")), 42);
	assert_int_equal(json_integer_value(json_object_get(b, "max_tokens")), 1234);
	assert_int_equal(json_is_true(json_object_get(b, "stream")), stream);
	if (stream)
		assert_true(json_is_true(json_object_get(json_object_get(b, "stream_options"), "include_usage")));
	json_t *msgs = json_object_get(b, "messages");
	assert_int_equal(json_array_size(msgs), 2);
	assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 0), "role")), "system");
	assert_string_equal(json_string_value(json_object_get(json_array_get(msgs, 1), "content")), "write relu");
	assert_string_equal(json_string_value(json_object_get(json_object_get(json_array_get(log, 4), "headers"),
							      "x-pragma-agent")), "conductor");
	/* Totals: exactly what the server reported. */
	struct pragma_llm_usage u;
	uint64_t sp = 0, sc = 0, sr = 0;
	size_t i;
	json_array_foreach(log, i, e) {
		json_t *us = json_object_get(e, "usage");
		assert_true(json_is_object(us));
		sp += json_integer_value(json_object_get(us, "prompt_tokens"));
		sc += json_integer_value(json_object_get(us, "completion_tokens"));
		sr += json_integer_value(json_object_get(us, "reasoning_tokens"));
	}
	pragma_llm_usage_get(llm, &u);
	assert_int_equal(u.calls, 5);
	assert_int_equal(u.prompt_tokens, sp);
	assert_int_equal(u.completion_tokens, sc);
	assert_int_equal(u.reasoning_tokens, sr);
	json_decref(log);
	unsetenv("PRAGMA_LLM_API_KEY");
	pragma_llm_reply_release(&rep);
	pragma_llm_free(llm);
	fake_llm_stop(&f);
}

static void test_openai_stream(void **state)
{
	(void)state;
	run_openai(1);
}

static void test_openai_plain(void **state)
{
	(void)state;
	run_openai(0);
}

static void run_anthropic(int stream)
{
	struct fake_llm f;
	struct pragma_llm_options o;
	struct pragma_llm *llm;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_llm_reply rep = PRAGMA_LLM_REPLY_INIT;

	assert_int_equal(fake_llm_start(&f, script), 0);
	setenv("ANTHROPIC_API_KEY", "ak-test-9", 1);
	opts(&o, "anthropic:claude-fake", f.base_anthropic, stream);
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	assert_non_null(strstr(pragma_llm_describe(llm), "/v1/messages"));
	assert_non_null(strstr(pragma_llm_describe(llm), "ANTHROPIC_API_KEY"));

	assert_int_equal(send1(llm, "coder", "write relu", &rep, &err), 0);
	assert_string_equal(rep.text.data, "```c\nint pk_forward(void) { return 0; }\n```");
	assert_string_equal(rep.reasoning.data, "I should write a kernel.");
	assert_string_equal(rep.finish_reason, "stop");
	assert_string_equal(rep.provider, "anthropic");
	assert_string_equal(rep.model, "fake-model-0613");
	assert_true(rep.prompt_tokens > 0 && rep.completion_tokens > 0);

	assert_int_equal(send1(llm, "coder", "again", &rep, &err), 0);
	assert_int_equal(rep.prompt_tokens, 100);
	assert_int_equal(rep.completion_tokens, 20);

	assert_int_equal(send1(llm, "coder", "more", &rep, &err), 0);
	assert_string_equal(rep.finish_reason, "length"); /* max_tokens, in OpenAI's word */
	assert_int_equal(rep.truncated, 1);

	json_t *log = fake_llm_requests(&f), *e = json_array_get(log, 0), *h = json_object_get(e, "headers"),
	       *b = json_object_get(e, "body");
	assert_int_equal(json_array_size(log), 3);
	assert_string_equal(json_string_value(json_object_get(e, "path")), "/v1/messages");
	assert_string_equal(json_string_value(json_object_get(h, "x-api-key")), "ak-test-9");
	assert_string_equal(json_string_value(json_object_get(h, "anthropic-version")), "2023-06-01");
	assert_string_equal(json_string_value(json_object_get(h, "x-pragma-agent")), "coder");
	assert_null(json_object_get(h, "authorization"));
	assert_string_equal(json_string_value(json_object_get(b, "system")), "You write kernels.");
	assert_int_equal(json_array_size(json_object_get(b, "messages")), 1);
	assert_int_equal(json_integer_value(json_object_get(b, "max_tokens")), 8192);
	assert_null(json_object_get(b, "temperature")); /* not set: the provider's default */

	struct pragma_llm_usage u;
	uint64_t sp = 0, sc = 0;
	size_t i;
	json_array_foreach(log, i, e) {
		sp += json_integer_value(json_object_get(json_object_get(e, "usage"), "prompt_tokens"));
		sc += json_integer_value(json_object_get(json_object_get(e, "usage"), "completion_tokens"));
	}
	pragma_llm_usage_get(llm, &u);
	assert_int_equal(u.prompt_tokens, sp);
	assert_int_equal(u.completion_tokens, sc);
	json_decref(log);
	unsetenv("ANTHROPIC_API_KEY");
	pragma_llm_reply_release(&rep);
	pragma_llm_free(llm);
	fake_llm_stop(&f);
}

static void test_anthropic_stream(void **state)
{
	(void)state;
	run_anthropic(1);
}

static void test_anthropic_plain(void **state)
{
	(void)state;
	run_anthropic(0);
}

/* Anthropic wants alternating turns: consecutive user messages merge. */
static void test_anthropic_merges_turns(void **state)
{
	struct fake_llm f;
	struct pragma_llm_options o;
	struct pragma_llm *llm;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_llm_reply rep = PRAGMA_LLM_REPLY_INIT;
	struct pragma_llm_msg msgs[] = { { "system", "a" }, { "user", "b" }, { "user", "c" },
					 { "assistant", "d" }, { "system", "e" }, { "user", "f" } };
	struct pragma_llm_request req = PRAGMA_LLM_REQUEST_INIT;

	(void)state;
	assert_int_equal(fake_llm_start(&f, "{}"), 0);
	opts(&o, "anthropic:claude-fake", f.base_anthropic, 0);
	o.temperature = 1.5; /* Anthropic's range ends at 1 */
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	req.msgs = msgs;
	req.n_msgs = 6;
	assert_int_equal(pragma_llm_send(llm, &req, &rep, &err), 0);
	json_t *log = fake_llm_requests(&f), *b = json_object_get(json_array_get(log, 0), "body");
	json_t *m = json_object_get(b, "messages");
	assert_string_equal(json_string_value(json_object_get(b, "system")), "a\n\ne");
	assert_int_equal(json_array_size(m), 3);
	assert_string_equal(json_string_value(json_object_get(json_array_get(m, 0), "content")), "b\n\nc");
	assert_string_equal(json_string_value(json_object_get(json_array_get(m, 1), "role")), "assistant");
	assert_true(json_real_value(json_object_get(b, "temperature")) == 1.0);
	/* The default agent role is sent too. */
	assert_string_equal(json_string_value(json_object_get(json_object_get(json_array_get(log, 0), "headers"),
							      "x-pragma-agent")), "default");
	json_decref(log);
	pragma_llm_reply_release(&rep);
	pragma_llm_free(llm);
	fake_llm_stop(&f);
}

/* Bad requests are refused before anything is sent. */
static void test_bad_requests(void **state)
{
	struct pragma_llm_options o;
	struct pragma_llm *llm;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_llm_reply rep = PRAGMA_LLM_REPLY_INIT;
	struct pragma_llm_msg bad_role[] = { { "tool", "x" } };
	struct pragma_llm_msg bad_utf8[] = { { "user", "caf\xc3" } };
	struct pragma_llm_request req = PRAGMA_LLM_REQUEST_INIT;

	(void)state;
	opts(&o, "openai:m", "http://127.0.0.1:9/v1", 1);
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	assert_int_equal(pragma_llm_send(llm, &req, &rep, &err), -1); /* no messages */
	assert_int_equal(err.kind, PRAGMA_E_INPUT);
	req.msgs = bad_role;
	req.n_msgs = 1;
	assert_int_equal(pragma_llm_send(llm, &req, &rep, &err), -1);
	assert_non_null(strstr(err.msg, "role 'tool'"));
	req.msgs = bad_utf8;
	assert_int_equal(pragma_llm_send(llm, &req, &rep, &err), -1);
	assert_non_null(strstr(err.msg, "UTF-8"));
	req.msgs = bad_role;
	req.agent = "bad agent\r\nX-Evil: 1";
	bad_role[0].role = "user";
	assert_int_equal(pragma_llm_send(llm, &req, &rep, &err), -1);
	assert_non_null(strstr(err.msg, "agent role"));
	pragma_llm_reply_release(&rep);
	pragma_llm_free(llm);
}

static int setup(void **state)
{
	(void)state;
	cache_dir = fake_llm_env_reset();
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pragma_rm_rf(cache_dir, NULL);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_openai_stream),
		cmocka_unit_test(test_openai_plain),
		cmocka_unit_test(test_anthropic_stream),
		cmocka_unit_test(test_anthropic_plain),
		cmocka_unit_test(test_anthropic_merges_turns),
		cmocka_unit_test(test_bad_requests),
	};
	return pragma_run_tests(tests, setup, teardown);
}
