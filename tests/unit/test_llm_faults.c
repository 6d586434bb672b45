/*
 * Every fault the fake server can inject, in both formats, streaming and
 * not: transient ones are retried (and the retry gets the scripted reply),
 * the others fail cleanly with the right category and a useful message.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include <stdlib.h>
#include <unistd.h>

#include "pragma_test.h"

#include "../fake_llm/fake_llm.h"
#include "pragma/llm.h"
#include "pragma/log.h"

static const char *cache_dir;

struct fault_case {
	const char *kind;
	int stream;              /* -1: both */
	enum pragma_llm_fail expect; /* NONE: retried, then answered */
	const char *msg_has;     /* for failures */
};

static const struct fault_case cases[] = {
	{ "500", -1, PRAGMA_LLM_FAIL_NONE, NULL },
	{ "502", -1, PRAGMA_LLM_FAIL_NONE, NULL },
	{ "503", -1, PRAGMA_LLM_FAIL_NONE, NULL },
	{ "529", -1, PRAGMA_LLM_FAIL_NONE, NULL },
	{ "truncate", -1, PRAGMA_LLM_FAIL_NONE, NULL },
	{ "reset", -1, PRAGMA_LLM_FAIL_NONE, NULL },
	{ "malformed", -1, PRAGMA_LLM_FAIL_NONE, NULL },
	{ "badshape", 0, PRAGMA_LLM_FAIL_NONE, NULL },
	{ "empty", -1, PRAGMA_LLM_FAIL_NONE, NULL },
	{ "stall", 1, PRAGMA_LLM_FAIL_NONE, NULL },
	{ "refusal", -1, PRAGMA_LLM_FAIL_REFUSAL, "refused" },
	{ "length_empty", -1, PRAGMA_LLM_FAIL_LENGTH, "max-tokens" },
	{ "400", -1, PRAGMA_LLM_FAIL_REQUEST, "HTTP 400" },
	{ "404", -1, PRAGMA_LLM_FAIL_REQUEST, "HTTP 404" },
	{ "401", -1, PRAGMA_LLM_FAIL_AUTH, "HTTP 401" },
	{ "403", -1, PRAGMA_LLM_FAIL_AUTH, "HTTP 403" },
};

static void opts(struct pragma_llm_options *o, const char *spec, const char *base, int stream)
{
	*o = (struct pragma_llm_options)PRAGMA_LLM_OPTIONS_INIT;
	o->spec = spec;
	o->base_url = base;
	o->stream = stream;
	o->cache = 0;
	o->retries = 3;
	o->backoff_ms = 5;
	o->backoff_max_ms = 40;
	o->timeout_ms = 1500;
	o->stall_timeout_ms = 1000;
}

static int ask(struct pragma_llm *llm, struct pragma_llm_reply *rep, struct pragma_err *err)
{
	struct pragma_llm_msg msgs[] = { { "user", "hello" } };
	struct pragma_llm_request req = PRAGMA_LLM_REQUEST_INIT;

	req.agent = "coder";
	req.msgs = msgs;
	req.n_msgs = 1;
	return pragma_llm_send(llm, &req, rep, err);
}

static void run_case(const struct fault_case *fc, int anthropic, int stream)
{
	char script[512];
	struct fake_llm f;
	struct pragma_llm_options o;
	struct pragma_llm *llm;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_llm_reply rep = PRAGMA_LLM_REPLY_INIT;
	struct pragma_llm_usage u;
	int rc;

	snprintf(script, sizeof(script),
		 "{\"stall_seconds\": 4, \"faults\": [{\"n\": 1, \"kind\": \"%s\"}], "
		 "\"replies\": {\"coder\": [{\"text\": \"the scripted answer\", "
		 "\"usage\": {\"prompt\": 11, \"completion\": 5}}]}}",
		 fc->kind);
	assert_int_equal(fake_llm_start(&f, script), 0);
	opts(&o, anthropic ? "anthropic:fake" : "openai:fake", anthropic ? f.base_anthropic : f.base_openai, stream);
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	rc = ask(llm, &rep, &err);
	pragma_llm_usage_get(llm, &u);
	print_message("  %-12s %-9s %-6s rc=%d fail=%s retries=%d %s\n", fc->kind, anthropic ? "anthropic" : "openai",
		      stream ? "stream" : "plain", rc, pragma_llm_fail_name(rep.fail), rep.retries, rc ? err.msg : "");
	if (fc->expect == PRAGMA_LLM_FAIL_NONE) {
		assert_int_equal(rc, 0);
		assert_string_equal(rep.text.data, "the scripted answer");
		assert_int_equal(rep.retries, 1);
		assert_int_equal(fake_llm_count(&f), 2);
		/* Usage is what the server reported, attempt by attempt: the
		 * scripted answer's, plus the empty reply's when there was one
		 * (it was billed); a fault without usage adds nothing. */
		json_t *log = fake_llm_requests(&f), *e;
		uint64_t sp = 0, sc = 0;
		size_t i;
		json_array_foreach(log, i, e) {
			sp += json_integer_value(json_object_get(json_object_get(e, "usage"), "prompt_tokens"));
			sc += json_integer_value(json_object_get(json_object_get(e, "usage"), "completion_tokens"));
		}
		json_decref(log);
		assert_int_equal(u.prompt_tokens, sp);
		assert_int_equal(u.completion_tokens, sc);
		assert_int_equal(rep.prompt_tokens, 11);
		assert_int_equal(rep.completion_tokens, 5);
		if (strcmp(fc->kind, "empty"))
			assert_int_equal(u.prompt_tokens, 11);
		assert_int_equal(u.calls, 1);
		assert_int_equal(u.retries, 1);
		assert_int_equal(u.failed, 0);
	} else {
		assert_int_equal(rc, -1);
		assert_int_equal(rep.fail, fc->expect);
		assert_int_equal(rep.retries, 0); /* not retried */
		assert_int_equal(fake_llm_count(&f), 1);
		assert_non_null(strstr(err.msg, fc->msg_has) ? strstr(err.msg, fc->msg_has) : strstr(err.hint, fc->msg_has));
		assert_int_equal(err.kind, PRAGMA_E_ENV);
		assert_int_equal(u.failed, 1);
		assert_int_equal(u.calls, 0);
	}
	pragma_llm_reply_release(&rep);
	pragma_llm_free(llm);
	fake_llm_stop(&f);
}

static void test_all_faults(void **state)
{
	(void)state;
	for (size_t i = 0; i < sizeof(cases) / sizeof(cases[0]); i++)
		for (int anthropic = 0; anthropic < 2; anthropic++)
			for (int stream = 0; stream < 2; stream++)
				if (cases[i].stream < 0 || cases[i].stream == stream)
					run_case(&cases[i], anthropic, stream);
}

/* A non-streaming request that never answers hits the total timeout. */
static void test_timeout_plain(void **state)
{
	struct fake_llm f;
	struct pragma_llm_options o;
	struct pragma_llm *llm;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_llm_reply rep = PRAGMA_LLM_REPLY_INIT;

	(void)state;
	assert_int_equal(fake_llm_start(&f, "{\"stall_seconds\": 5, \"faults\": [{\"n\": 1, \"kind\": \"stall\"}]}"), 0);
	opts(&o, "openai:fake", f.base_openai, 0);
	o.timeout_ms = 600;
	o.retries = 0;
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	assert_int_equal(ask(llm, &rep, &err), -1);
	assert_int_equal(rep.fail, PRAGMA_LLM_FAIL_TIMEOUT);
	assert_non_null(strstr(err.msg, "timed out"));
	assert_true(rep.elapsed_ms >= 550 && rep.elapsed_ms < 3000);
	pragma_llm_reply_release(&rep);
	pragma_llm_free(llm);
	fake_llm_stop(&f);
}

/* The stall detector fires on a silent stream, well before the total timeout. */
static void test_stall_detected(void **state)
{
	struct fake_llm f;
	struct pragma_llm_options o;
	struct pragma_llm *llm;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_llm_reply rep = PRAGMA_LLM_REPLY_INIT;

	(void)state;
	assert_int_equal(fake_llm_start(&f, "{\"stall_seconds\": 8, \"faults\": [{\"n\": 1, \"kind\": \"stall\"}]}"), 0);
	opts(&o, "openai:fake", f.base_openai, 1);
	o.timeout_ms = 60000;
	o.stall_timeout_ms = 800;
	o.retries = 0;
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	assert_int_equal(ask(llm, &rep, &err), -1);
	assert_int_equal(rep.fail, PRAGMA_LLM_FAIL_STALL);
	assert_non_null(strstr(err.msg, "stalled"));
	assert_true(rep.elapsed_ms >= 750 && rep.elapsed_ms < 4000);
	pragma_llm_reply_release(&rep);
	pragma_llm_free(llm);
	fake_llm_stop(&f);
}

/* 429: Retry-After (seconds) and retry-after-ms are honoured over a shorter backoff. */
static void test_retry_after(void **state)
{
	struct fake_llm f;
	struct pragma_llm_options o;
	struct pragma_llm *llm;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_llm_reply rep = PRAGMA_LLM_REPLY_INIT;

	(void)state;
	assert_int_equal(fake_llm_start(&f, "{\"faults\": [{\"n\": 1, \"kind\": \"429\", \"retry_after\": 1},"
					    " {\"n\": 2, \"kind\": \"429\", \"retry_after_ms\": 300}],"
					    " \"replies\": {\"*\": [\"finally\"]}}"), 0);
	opts(&o, "openai:fake", f.base_openai, 1);
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	assert_int_equal(ask(llm, &rep, &err), 0);
	assert_string_equal(rep.text.data, "finally");
	assert_int_equal(rep.retries, 2);
	assert_true(rep.elapsed_ms >= 1300);
	assert_true(rep.elapsed_ms < 5000);
	pragma_llm_reply_release(&rep);
	pragma_llm_free(llm);
	fake_llm_stop(&f);
}

/* Retries run out: the last error, with the count. */
static void test_retries_exhausted(void **state)
{
	struct fake_llm f;
	struct pragma_llm_options o;
	struct pragma_llm *llm;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_llm_reply rep = PRAGMA_LLM_REPLY_INIT;
	struct pragma_llm_usage u;

	(void)state;
	assert_int_equal(fake_llm_start(&f, "{\"faults\": [{\"n\": 1, \"kind\": \"500\"}, {\"n\": 2, \"kind\": \"503\"},"
					    " {\"n\": 3, \"kind\": \"500\"}, {\"n\": 4, \"kind\": \"500\"}]}"), 0);
	opts(&o, "openai:fake", f.base_openai, 1);
	o.retries = 2;
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	/* Each retry is a warning as it happens: what failed, which retry
	 * of how many, the wait. */
	char logpath[] = "/tmp/pragma-test-llmlog-XXXXXX";
	int logfd = mkstemp(logpath);
	assert_true(logfd >= 0);
	pragma_log_set_fd(logfd);
	int rc = ask(llm, &rep, &err);
	pragma_log_set_fd(2);
	char logtext[8192] = "";
	ssize_t nread = pread(logfd, logtext, sizeof(logtext) - 1, 0);
	close(logfd);
	unlink(logpath);
	assert_true(nread > 0);
	logtext[nread] = '\0';
	assert_non_null(strstr(logtext, "pragma: warning: coder request to fake failed (server): HTTP 500"));
	assert_non_null(strstr(logtext, "retry 1 of 2 in "));
	assert_non_null(strstr(logtext, "HTTP 503"));
	assert_non_null(strstr(logtext, "retry 2 of 2 in "));
	assert_int_equal(rc, -1);
	assert_int_equal(rep.fail, PRAGMA_LLM_FAIL_SERVER);
	assert_string_equal(pragma_llm_fail_class(rep.fail), "server");
	assert_int_equal(rep.retries, 2);
	assert_int_equal(fake_llm_count(&f), 3);
	assert_non_null(strstr(err.msg, "after 3 attempts over "));
	assert_non_null(strstr(err.msg, "HTTP 500"));
	pragma_llm_usage_get(llm, &u);
	assert_int_equal(u.failed, 1);
	assert_int_equal(u.retries, 2);
	/* The next request meets one more 500 (n=4), then the default answer. */
	assert_int_equal(ask(llm, &rep, &err), 0);
	assert_int_equal(rep.retries, 1);
	assert_string_equal(rep.text.data, "fake reply 5 for coder");
	pragma_llm_reply_release(&rep);
	pragma_llm_free(llm);
	fake_llm_stop(&f);
}

/* 401 names the variable the key came from and the base URL. */
static void test_auth_hint(void **state)
{
	struct fake_llm f;
	struct pragma_llm_options o;
	struct pragma_llm *llm;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_llm_reply rep = PRAGMA_LLM_REPLY_INIT;

	(void)state;
	assert_int_equal(fake_llm_start(&f, "{\"require_key\": \"right-key\"}"), 0);
	setenv("OPENAI_API_KEY", "wrong-key", 1);
	opts(&o, "openai:fake", f.base_openai, 1);
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	assert_int_equal(ask(llm, &rep, &err), -1);
	assert_int_equal(rep.fail, PRAGMA_LLM_FAIL_AUTH);
	assert_int_equal(rep.http_status, 401);
	assert_non_null(strstr(err.hint, "OPENAI_API_KEY"));
	assert_non_null(strstr(err.hint, f.base_openai));
	assert_null(strstr(err.msg, "wrong-key"));
	assert_null(strstr(err.hint, "wrong-key"));
	pragma_llm_free(llm);

	/* The right key passes; PRAGMA_LLM_API_KEY wins over OPENAI_API_KEY. */
	setenv("PRAGMA_LLM_API_KEY", "right-key", 1);
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	assert_int_equal(ask(llm, &rep, &err), 0);
	pragma_llm_free(llm);
	unsetenv("PRAGMA_LLM_API_KEY");

	/* No key at all: the hint says which variable to set. */
	unsetenv("OPENAI_API_KEY");
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	assert_int_equal(ask(llm, &rep, &err), -1);
	assert_non_null(strstr(err.hint, "no API key was sent"));
	assert_non_null(strstr(err.hint, "OPENAI_API_KEY"));
	pragma_llm_reply_release(&rep);
	pragma_llm_free(llm);
	fake_llm_stop(&f);
}

/* Nobody listening: a network failure, retried, then reported with a hint. */
static void test_connection_refused(void **state)
{
	struct fake_llm f;
	struct pragma_llm_options o;
	struct pragma_llm *llm;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_llm_reply rep = PRAGMA_LLM_REPLY_INIT;
	char base[128];

	(void)state;
	/* A port that was just in use and is now free. */
	assert_int_equal(fake_llm_start(&f, "{}"), 0);
	snprintf(base, sizeof(base), "%s", f.base_openai);
	fake_llm_stop(&f);
	opts(&o, "openai:fake", base, 1);
	o.retries = 1;
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	assert_int_equal(ask(llm, &rep, &err), -1);
	assert_int_equal(rep.fail, PRAGMA_LLM_FAIL_UNREACHABLE);
	assert_string_equal(pragma_llm_fail_class(rep.fail), "unreachable");
	assert_int_equal(err.kind, PRAGMA_E_ENV);
	assert_int_equal(rep.retries, 1);
	/* After the last retry it says plainly what is wrong. */
	assert_non_null(strstr(err.msg, "after 2 attempts"));
	assert_non_null(strstr(err.msg, "is unreachable: connection refused"));
	assert_non_null(strstr(err.hint, "server running"));
	pragma_llm_reply_release(&rep);
	pragma_llm_free(llm);
}

/* Responses are size-capped, streaming or not. */
static void test_size_cap(void **state)
{
	struct fake_llm f;
	struct pragma_llm_options o;
	struct pragma_llm *llm;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_llm_reply rep = PRAGMA_LLM_REPLY_INIT;

	(void)state;
	assert_int_equal(fake_llm_start(&f, "{\"cycle\": true, \"replies\": {\"*\": [{\"text\": \"0123456789\", "
					    "\"repeat\": 2000}]}}"), 0);
	for (int stream = 0; stream < 2; stream++) {
		opts(&o, "openai:fake", f.base_openai, stream);
		o.max_response_bytes = 1000;
		assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
		assert_int_equal(ask(llm, &rep, &err), -1);
		assert_int_equal(rep.fail, PRAGMA_LLM_FAIL_TOO_LARGE);
		assert_int_equal(rep.retries, 0);
		assert_true(rep.text.len <= 1000);
		pragma_llm_free(llm);
		/* The same reply under the default cap is fine. */
		o.max_response_bytes = 0;
		assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
		assert_int_equal(ask(llm, &rep, &err), 0);
		assert_int_equal(rep.text.len, 20000);
		pragma_llm_free(llm);
	}
	pragma_llm_reply_release(&rep);
	fake_llm_stop(&f);
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
		cmocka_unit_test(test_all_faults),
		cmocka_unit_test(test_timeout_plain),
		cmocka_unit_test(test_stall_detected),
		cmocka_unit_test(test_retry_after),
		cmocka_unit_test(test_retries_exhausted),
		cmocka_unit_test(test_auth_hint),
		cmocka_unit_test(test_connection_refused),
		cmocka_unit_test(test_size_cap),
	};
	if (getenv("TEST_FILTER"))
		cmocka_set_test_filter(getenv("TEST_FILTER"));
	return pragma_run_tests(tests, setup, teardown);
}
