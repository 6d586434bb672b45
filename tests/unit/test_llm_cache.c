/*
 * The response cache, budgets, and concurrent requests (usage totals exact
 * under threads), against the fake server.
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

static void opts(struct pragma_llm_options *o, const char *base)
{
	*o = (struct pragma_llm_options)PRAGMA_LLM_OPTIONS_INIT;
	o->spec = "openai:fake";
	o->base_url = base;
	o->backoff_ms = 5;
	o->backoff_max_ms = 40;
	o->stall_timeout_ms = 1000;
	o->timeout_ms = 5000;
}

static int ask(struct pragma_llm *llm, const char *agent, const char *text, int attempt, int sample,
	       struct pragma_llm_reply *rep, struct pragma_err *err)
{
	struct pragma_llm_msg msgs[] = { { "system", "sys" }, { "user", text } };
	struct pragma_llm_request req = PRAGMA_LLM_REQUEST_INIT;

	req.agent = agent;
	req.attempt = attempt;
	req.sample = sample;
	req.msgs = msgs;
	req.n_msgs = 2;
	return pragma_llm_send(llm, &req, rep, err);
}

static void test_cache(void **state)
{
	struct fake_llm f;
	struct pragma_llm_options o;
	struct pragma_llm *llm;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_llm_reply rep = PRAGMA_LLM_REPLY_INIT;
	struct pragma_llm_usage u;
	char hash1[65], dir[512];

	(void)state;
	snprintf(dir, sizeof(dir), "%s/llm-cache-test", cache_dir);
	assert_int_equal(fake_llm_start(&f, "{}"), 0);
	opts(&o, f.base_openai);
	o.cache_dir = dir;
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);

	assert_int_equal(ask(llm, "coder", "q1", 1, 0, &rep, &err), 0);
	assert_string_equal(rep.text.data, "fake reply 1 for coder");
	assert_int_equal(rep.cached, 0);
	snprintf(hash1, sizeof(hash1), "%s", rep.request_hash);
	uint64_t pt = rep.prompt_tokens;

	/* Same request, another attempt number: answered locally, free. */
	assert_int_equal(ask(llm, "coder", "q1", 7, 0, &rep, &err), 0);
	assert_int_equal(rep.cached, 1);
	assert_string_equal(rep.text.data, "fake reply 1 for coder");
	assert_string_equal(rep.request_hash, hash1);
	assert_int_equal(rep.prompt_tokens, pt);
	assert_true(rep.cost == 0);
	assert_int_equal(fake_llm_count(&f), 1);

	/* A new sample, another text, another role: misses. */
	assert_int_equal(ask(llm, "coder", "q1", 1, 1, &rep, &err), 0);
	assert_int_equal(rep.cached, 0);
	assert_string_not_equal(rep.request_hash, hash1);
	assert_int_equal(ask(llm, "coder", "q2", 1, 0, &rep, &err), 0);
	assert_int_equal(rep.cached, 0);
	assert_int_equal(ask(llm, "conductor", "q1", 1, 0, &rep, &err), 0);
	assert_int_equal(rep.cached, 0);
	assert_int_equal(fake_llm_count(&f), 4);
	pragma_llm_usage_get(llm, &u);
	assert_int_equal(u.requests, 5);
	assert_int_equal(u.calls, 4);
	assert_int_equal(u.cached, 1);
	pragma_llm_free(llm);

	/* Another client with the same settings (a rerun) hits too ... */
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	assert_int_equal(ask(llm, "coder", "q1", 1, 0, &rep, &err), 0);
	assert_int_equal(rep.cached, 1);
	pragma_llm_free(llm);
	/* ... but not with another temperature (a different request) ... */
	o.temperature = 0.5;
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	assert_int_equal(ask(llm, "coder", "q1", 1, 0, &rep, &err), 0);
	assert_int_equal(rep.cached, 0);
	pragma_llm_free(llm);
	/* ... nor with the cache off. */
	o.temperature = -1;
	o.cache = 0;
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	assert_int_equal(ask(llm, "coder", "q1", 1, 0, &rep, &err), 0);
	assert_int_equal(rep.cached, 0);
	assert_int_equal(fake_llm_count(&f), 6);
	pragma_llm_free(llm);

	/* A damaged entry is a miss, then is rewritten. */
	char path[700];
	snprintf(path, sizeof(path), "%s/%s.json", dir, hash1);
	assert_int_equal(pragma_write_file_atomic(path, "{\"text\": 12", 11, &err), 0);
	o.cache = 1;
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	assert_int_equal(ask(llm, "coder", "q1", 1, 0, &rep, &err), 0);
	assert_int_equal(rep.cached, 0);
	assert_int_equal(ask(llm, "coder", "q1", 1, 0, &rep, &err), 0);
	assert_int_equal(rep.cached, 1);
	assert_int_equal(fake_llm_count(&f), 7);

	/* The hash is the cache key, computed without a call. */
	struct pragma_llm_msg msgs[] = { { "system", "sys" }, { "user", "q1" } };
	struct pragma_llm_request req = PRAGMA_LLM_REQUEST_INIT;
	char h[65];
	req.agent = "coder";
	req.attempt = 99;
	req.msgs = msgs;
	req.n_msgs = 2;
	assert_int_equal(pragma_llm_request_hash(llm, &req, h, &err), 0);
	assert_string_equal(h, hash1);
	pragma_llm_free(llm);
	pragma_llm_reply_release(&rep);
	fake_llm_stop(&f);
}

/* Failures are never cached. */
static void test_cache_skips_failures(void **state)
{
	struct fake_llm f;
	struct pragma_llm_options o;
	struct pragma_llm *llm;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_llm_reply rep = PRAGMA_LLM_REPLY_INIT;

	(void)state;
	assert_int_equal(fake_llm_start(&f, "{\"faults\": [{\"n\": 1, \"kind\": \"refusal\"}]}"), 0);
	opts(&o, f.base_openai);
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	assert_int_equal(ask(llm, "coder", "fail-me", 1, 0, &rep, &err), -1);
	assert_int_equal(rep.fail, PRAGMA_LLM_FAIL_REFUSAL);
	assert_int_equal(ask(llm, "coder", "fail-me", 1, 0, &rep, &err), 0);
	assert_int_equal(rep.cached, 0);
	assert_int_equal(fake_llm_count(&f), 2);
	pragma_llm_free(llm);
	pragma_llm_reply_release(&rep);
	fake_llm_stop(&f);
}

static void test_budget_calls(void **state)
{
	struct fake_llm f;
	struct pragma_llm_options o;
	struct pragma_llm *llm;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_llm_reply rep = PRAGMA_LLM_REPLY_INIT;
	struct pragma_llm_usage u;
	char q[32];

	(void)state;
	assert_int_equal(fake_llm_start(&f, "{}"), 0);
	opts(&o, f.base_openai);
	o.budget_calls = 3;
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	for (int i = 0; i < 3; i++) {
		snprintf(q, sizeof(q), "q%d", i);
		assert_int_equal(ask(llm, "coder", q, i, 0, &rep, &err), 0);
	}
	/* A cache hit is free: it does not count and is not refused. */
	assert_int_equal(ask(llm, "coder", "q0", 9, 0, &rep, &err), 0);
	assert_int_equal(rep.cached, 1);
	assert_int_equal(ask(llm, "coder", "q3", 3, 0, &rep, &err), PRAGMA_LLM_STOP);
	assert_int_equal(rep.fail, PRAGMA_LLM_FAIL_BUDGET);
	assert_non_null(strstr(err.msg, "call budget"));
	assert_non_null(strstr(err.msg, "3 of 3"));
	assert_int_equal(fake_llm_count(&f), 3);
	pragma_llm_usage_get(llm, &u);
	assert_int_equal(u.calls, 3);
	assert_int_equal(u.stopped, 1);
	assert_int_equal(u.failed, 0);
	pragma_llm_free(llm);
	pragma_llm_reply_release(&rep);
	fake_llm_stop(&f);
}

static void test_budget_tokens_and_cost(void **state)
{
	struct fake_llm f;
	struct pragma_llm_options o;
	struct pragma_llm *llm;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_llm_reply rep = PRAGMA_LLM_REPLY_INIT;
	struct pragma_llm_usage u;
	char prices[700], q[32];
	int i;

	(void)state;
	assert_int_equal(fake_llm_start(&f, "{\"cycle\": true, \"replies\": {\"*\": [{\"text\": \"x\", "
					    "\"usage\": {\"prompt\": 1000, \"completion\": 500}}]}}"), 0);
	/* 1000 prompt + 500 completion per call. */
	opts(&o, f.base_openai);
	o.cache = 0;
	o.budget_tokens = 4000;
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	for (i = 0; i < 10; i++) {
		snprintf(q, sizeof(q), "t%d", i);
		int rc = ask(llm, "coder", q, i, 0, &rep, &err);
		if (rc == PRAGMA_LLM_STOP)
			break;
		assert_int_equal(rc, 0);
	}
	/* 3 calls (4500 tokens) pass the 4000 budget; the 4th is refused. */
	assert_int_equal(i, 3);
	assert_non_null(strstr(err.msg, "token budget"));
	pragma_llm_usage_get(llm, &u);
	assert_int_equal(u.prompt_tokens + u.completion_tokens, 4500);
	pragma_llm_free(llm);

	/* Cost: $2/Mtok in, $10/Mtok out → 0.002 + 0.005 = $0.007 a call. */
	snprintf(prices, sizeof(prices), "%s/prices.json", f.dir);
	const char *pj = "{\"fake\": {\"input\": 2.0, \"output\": 10.0}}";
	assert_int_equal(pragma_write_file_atomic(prices, pj, strlen(pj), &err), 0);
	o.budget_tokens = 0;
	o.budget_cost = 0.02;
	o.price_file = prices;
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	for (i = 0; i < 10; i++) {
		snprintf(q, sizeof(q), "c%d", i);
		int rc = ask(llm, "coder", q, i, 0, &rep, &err);
		if (rc == PRAGMA_LLM_STOP)
			break;
		assert_int_equal(rc, 0);
		assert_int_equal(rep.cost_known, 1);
		assert_true(rep.cost > 0.00699 && rep.cost < 0.00701);
	}
	assert_int_equal(i, 3); /* 0.021 >= 0.02 after three */
	assert_non_null(strstr(err.msg, "cost budget"));
	pragma_llm_usage_get(llm, &u);
	assert_true(u.cost > 0.02099 && u.cost < 0.02101);
	assert_int_equal(u.cost_unknown, 0);
	pragma_llm_free(llm);
	pragma_llm_reply_release(&rep);
	fake_llm_stop(&f);
}

/* Many requests at once: every one answered, totals exact, faster than in turn. */
static void test_concurrency(void **state)
{
	enum { N = 48 };
	struct fake_llm f;
	struct pragma_llm_options o;
	struct pragma_llm *llm;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_llm_msg msgs[N][1];
	struct pragma_llm_request reqs[N];
	struct pragma_llm_job jobs[N];
	char texts[N][32];
	struct pragma_llm_usage u;
	uint64_t sp = 0, sc = 0;
	size_t i;
	json_t *log, *e;

	(void)state;
	memset(jobs, 0, sizeof(jobs));
	assert_int_equal(fake_llm_start(&f, "{\"cycle\": true, \"faults\": [{\"n\": 5, \"kind\": \"500\"}, "
					    "{\"n\": 9, \"kind\": \"429\", \"retry_after_ms\": 50}], "
					    "\"replies\": {\"*\": [{\"text\": \"ok\", \"delay\": 0.1}]}}"), 0);
	opts(&o, f.base_openai);
	o.cache = 0;
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	for (i = 0; i < N; i++) {
		snprintf(texts[i], sizeof(texts[i]), "request %zu", i);
		msgs[i][0] = (struct pragma_llm_msg){ "user", texts[i] };
		reqs[i] = (struct pragma_llm_request)PRAGMA_LLM_REQUEST_INIT;
		reqs[i].agent = i % 2 ? "coder" : "conductor";
		reqs[i].msgs = msgs[i];
		reqs[i].n_msgs = 1;
		jobs[i].req = &reqs[i];
	}
	double t0 = llm_test_now_ms();
	assert_int_equal(pragma_llm_send_many(llm, jobs, N, 8), N);
	double wall = llm_test_now_ms() - t0;
	print_message("  %d requests of 100 ms each, 8 at once: %.0f ms\n", N, wall);
	assert_true(wall < N * 100 / 2); /* in turn it would take 4.8 s */
	log = fake_llm_requests(&f);
	assert_int_equal(json_array_size(log), N + 2);
	json_array_foreach(log, i, e) {
		sp += json_integer_value(json_object_get(json_object_get(e, "usage"), "prompt_tokens"));
		sc += json_integer_value(json_object_get(json_object_get(e, "usage"), "completion_tokens"));
	}
	json_decref(log);
	pragma_llm_usage_get(llm, &u);
	assert_int_equal(u.calls, N);
	assert_int_equal(u.retries, 2);
	assert_int_equal(u.prompt_tokens, sp);
	assert_int_equal(u.completion_tokens, sc);
	uint64_t rp = 0;
	for (i = 0; i < N; i++) {
		assert_int_equal(jobs[i].rc, 0);
		assert_string_equal(jobs[i].reply.text.data, "ok");
		rp += jobs[i].reply.prompt_tokens;
		pragma_llm_reply_release(&jobs[i].reply);
	}
	assert_int_equal(rp, sp);
	pragma_llm_free(llm);
	fake_llm_stop(&f);
}

/* A calls budget under concurrency is never overshot. */
static void test_concurrent_budget(void **state)
{
	enum { N = 20 };
	struct fake_llm f;
	struct pragma_llm_options o;
	struct pragma_llm *llm;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_llm_msg msgs[N][1];
	struct pragma_llm_request reqs[N];
	struct pragma_llm_job jobs[N];
	char texts[N][32];
	int ok = 0, stopped = 0;

	(void)state;
	memset(jobs, 0, sizeof(jobs));
	assert_int_equal(fake_llm_start(&f, "{\"cycle\": true, \"replies\": {\"*\": [{\"text\": \"ok\", \"delay\": 0.05}]}}"),
			 0);
	opts(&o, f.base_openai);
	o.cache = 0;
	o.budget_calls = 7;
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	for (int i = 0; i < N; i++) {
		snprintf(texts[i], sizeof(texts[i]), "b %d", i);
		msgs[i][0] = (struct pragma_llm_msg){ "user", texts[i] };
		reqs[i] = (struct pragma_llm_request)PRAGMA_LLM_REQUEST_INIT;
		reqs[i].msgs = msgs[i];
		reqs[i].n_msgs = 1;
		jobs[i].req = &reqs[i];
	}
	pragma_llm_send_many(llm, jobs, N, 6);
	for (int i = 0; i < N; i++) {
		ok += jobs[i].rc == 0;
		stopped += jobs[i].rc == PRAGMA_LLM_STOP;
		pragma_llm_reply_release(&jobs[i].reply);
	}
	assert_int_equal(ok, 7);
	assert_int_equal(stopped, N - 7);
	assert_int_equal(fake_llm_count(&f), 7);
	pragma_llm_free(llm);
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
		cmocka_unit_test(test_cache),
		cmocka_unit_test(test_cache_skips_failures),
		cmocka_unit_test(test_budget_calls),
		cmocka_unit_test(test_budget_tokens_and_cost),
		cmocka_unit_test(test_concurrency),
		cmocka_unit_test(test_concurrent_budget),
	};
	return pragma_run_tests(tests, setup, teardown);
}
