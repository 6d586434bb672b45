/*
 * Client configuration: specs, flags over environment over config file,
 * keys and URLs, command-line flags, the price table. No server needed.
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "pragma_test.h"

#include "../fake_llm/fake_llm.h"
#include "pragma/config.h"
#include "pragma/llm.h"

static char dir[256];

static json_t *settings(struct pragma_llm *llm)
{
	char *s = pragma_llm_settings_json(llm);
	json_t *o = json_loads(s, 0, NULL);

	free(s);
	assert_non_null(o);
	return o;
}

static void write_config(const char *text)
{
	char path[512];
	struct pragma_err err = PRAGMA_ERR_INIT;

	snprintf(path, sizeof(path), "%s/config", dir);
	assert_int_equal(pragma_write_file_atomic(path, text, strlen(text), &err), 0);
	setenv("PRAGMA_CONFIG", path, 1);
	pragma_config_reload();
}

static void clear_config(void)
{
	unsetenv("PRAGMA_CONFIG");
	pragma_config_reload();
}

static void test_spec_errors(void **state)
{
	struct pragma_llm_options o = PRAGMA_LLM_OPTIONS_INIT;
	struct pragma_llm *llm = (void *)1;
	struct pragma_err err = PRAGMA_ERR_INIT;

	(void)state;
	assert_int_equal(pragma_llm_open(&llm, &o, &err), -1);
	assert_null(llm);
	assert_int_equal(err.kind, PRAGMA_E_ENV);
	assert_non_null(strstr(err.hint, "--llm"));
	assert_non_null(strstr(err.hint, "PRAGMA_LLM"));
	o.spec = "gpt-4o";
	assert_int_equal(pragma_llm_open(&llm, &o, &err), -1);
	assert_int_equal(err.kind, PRAGMA_E_INPUT);
	assert_non_null(strstr(err.hint, "PROVIDER:MODEL"));
	o.spec = "mistral:large";
	assert_int_equal(pragma_llm_open(&llm, &o, &err), -1);
	assert_non_null(strstr(err.msg, "unknown LLM provider 'mistral'"));
	o.spec = "openai:";
	assert_int_equal(pragma_llm_open(&llm, &o, &err), -1);
	/* A remote API without its key fails at open, naming the variable. */
	o.spec = "openai:gpt-4o";
	assert_int_equal(pragma_llm_open(&llm, &o, &err), -1);
	assert_int_equal(err.kind, PRAGMA_E_ENV);
	assert_non_null(strstr(err.msg, "OPENAI_API_KEY"));
	o.spec = "deepseek:deepseek-chat";
	assert_int_equal(pragma_llm_open(&llm, &o, &err), -1);
	assert_non_null(strstr(err.msg, "DEEPSEEK_API_KEY"));
	assert_non_null(strstr(err.msg, "api.deepseek.com"));
	o.spec = "anthropic:claude-sonnet-4-5";
	assert_int_equal(pragma_llm_open(&llm, &o, &err), -1);
	assert_non_null(strstr(err.msg, "ANTHROPIC_API_KEY"));
	/* A key with a newline would split the header: refused. */
	setenv("ANTHROPIC_API_KEY", "ak-1\r\nX-Evil: 1", 1);
	assert_int_equal(pragma_llm_open(&llm, &o, &err), -1);
	assert_non_null(strstr(err.msg, "cannot hold"));
	unsetenv("ANTHROPIC_API_KEY");
	o.spec = "exec:echo\nhi";
	assert_int_equal(pragma_llm_open(&llm, &o, &err), -1);
	assert_non_null(strstr(err.msg, "control character"));
}

static void test_urls_and_keys(void **state)
{
	struct pragma_llm_options o = PRAGMA_LLM_OPTIONS_INIT;
	struct pragma_llm *llm;
	struct pragma_err err = PRAGMA_ERR_INIT;
	json_t *s;

	(void)state;
	o.spec = "openai:local-model";
	o.base_url = "http://127.0.0.1:8000/v1/";
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	s = settings(llm);
	assert_string_equal(json_string_value(json_object_get(s, "url")), "http://127.0.0.1:8000/v1/chat/completions");
	assert_true(json_is_null(json_object_get(s, "key_env"))); /* a local server needs none */
	assert_int_equal(json_integer_value(json_object_get(s, "max_tokens")), 8192);
	assert_true(json_is_true(json_object_get(s, "stream")));
	assert_int_equal(json_integer_value(json_object_get(s, "retries")), 5);
	assert_int_equal(json_integer_value(json_object_get(s, "timeout_ms")), 600000);
	assert_int_equal(json_integer_value(json_object_get(s, "connect_timeout_ms")), 10000);
	assert_int_equal(json_integer_value(json_object_get(s, "stall_timeout_ms")), 120000);
	assert_int_equal(json_integer_value(json_object_get(s, "exec_timeout_ms")), 1800000);
	assert_int_equal(json_integer_value(json_object_get(s, "backoff_ms")), 1000);
	assert_int_equal(json_integer_value(json_object_get(s, "backoff_max_ms")), 60000);
	json_decref(s);
	pragma_llm_free(llm);

	o.spec = "anthropic:claude-x";
	o.base_url = "http://127.0.0.1:9/";
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	assert_non_null(strstr(pragma_llm_describe(llm), "http://127.0.0.1:9/v1/messages"));
	pragma_llm_free(llm);
	o.base_url = "http://127.0.0.1:9/v1";
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	assert_non_null(strstr(pragma_llm_describe(llm), "http://127.0.0.1:9/v1/messages "));
	pragma_llm_free(llm);

	/* Keys: PRAGMA_LLM_API_KEY over the provider's own; never shown. */
	setenv("OPENAI_API_KEY", "sk-secret-1", 1);
	o.spec = "openai:o3-mini";
	o.base_url = NULL;
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	assert_non_null(strstr(pragma_llm_describe(llm), "key from $OPENAI_API_KEY"));
	assert_null(strstr(pragma_llm_describe(llm), "sk-secret"));
	s = settings(llm);
	assert_int_equal(json_integer_value(json_object_get(s, "max_tokens")), 32768); /* a reasoning model */
	char *dump = pragma_llm_settings_json(llm);
	assert_null(strstr(dump, "sk-secret"));
	free(dump);
	json_decref(s);
	pragma_llm_free(llm);
	setenv("PRAGMA_LLM_API_KEY", "sk-secret-2", 1);
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	assert_non_null(strstr(pragma_llm_describe(llm), "key from $PRAGMA_LLM_API_KEY"));
	pragma_llm_free(llm);
	unsetenv("PRAGMA_LLM_API_KEY");
	unsetenv("OPENAI_API_KEY");
}

/* Flags over environment over config file. */
static void test_precedence(void **state)
{
	struct pragma_llm_options o = PRAGMA_LLM_OPTIONS_INIT;
	struct pragma_llm *llm;
	struct pragma_err err = PRAGMA_ERR_INIT;
	json_t *s;

	(void)state;
	write_config("# pragma config\nllm = exec:cat\n[llm]\ntemperature = 0.3\nmax_tokens = 1000\nseed = 5\n"
		     "timeout = 20\nretries = 2\ncache = off\n");
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	s = settings(llm);
	assert_string_equal(json_string_value(json_object_get(s, "provider")), "exec");
	assert_true(json_real_value(json_object_get(s, "temperature")) == 0.3);
	assert_int_equal(json_integer_value(json_object_get(s, "max_tokens")), 1000);
	assert_int_equal(json_integer_value(json_object_get(s, "seed")), 5);
	assert_int_equal(json_integer_value(json_object_get(s, "timeout_ms")), 20000);
	assert_int_equal(json_integer_value(json_object_get(s, "retries")), 2);
	assert_true(json_is_false(json_object_get(s, "cache")));
	json_decref(s);
	pragma_llm_free(llm);

	/* The environment wins over the file ... */
	setenv("PRAGMA_LLM", "replay:/dev/null", 1);
	setenv("PRAGMA_LLM_TEMPERATURE", "0.7", 1);
	setenv("PRAGMA_LLM_MAX_TOKENS", "2000", 1);
	setenv("PRAGMA_LLM", "exec:tee", 1);
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	s = settings(llm);
	assert_string_equal(json_string_value(json_object_get(s, "command")), "tee");
	assert_true(json_real_value(json_object_get(s, "temperature")) == 0.7);
	assert_int_equal(json_integer_value(json_object_get(s, "max_tokens")), 2000);
	assert_int_equal(json_integer_value(json_object_get(s, "seed")), 5); /* still the file's */
	json_decref(s);
	pragma_llm_free(llm);

	/* ... and flags win over both. */
	char *argv[] = { "x", "--llm", "exec:head", "--temperature=0.1", "--max-tokens", "300", "--no-cache",
			 "--seed", "-4", "--timeout", "1.5", "--budget-calls", "9", "--frobnicate", NULL };
	int argc = 14, i;
	for (i = 1; i < argc; i++) {
		int r = pragma_llm_options_flag(&o, argc, argv, &i, &err);
		if (r == 0)
			break;
		assert_int_equal(r, 1);
	}
	assert_string_equal(argv[i], "--frobnicate"); /* not an LLM flag: left to the caller */
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	s = settings(llm);
	assert_string_equal(json_string_value(json_object_get(s, "command")), "head");
	assert_true(json_real_value(json_object_get(s, "temperature")) == 0.1);
	assert_int_equal(json_integer_value(json_object_get(s, "max_tokens")), 300);
	assert_int_equal(json_integer_value(json_object_get(s, "seed")), -4);
	assert_int_equal(json_integer_value(json_object_get(s, "timeout_ms")), 1500);
	assert_int_equal(json_integer_value(json_object_get(s, "budget_calls")), 9);
	assert_true(json_is_false(json_object_get(s, "cache")));
	json_decref(s);
	pragma_llm_free(llm);

	/* Bad values say where they came from. */
	o = (struct pragma_llm_options)PRAGMA_LLM_OPTIONS_INIT;
	setenv("PRAGMA_LLM_TEMPERATURE", "hot", 1);
	assert_int_equal(pragma_llm_open(&llm, &o, &err), -1);
	assert_non_null(strstr(err.msg, "$PRAGMA_LLM_TEMPERATURE"));
	unsetenv("PRAGMA_LLM_TEMPERATURE");
	unsetenv("PRAGMA_LLM_MAX_TOKENS");
	write_config("[llm]\nspec = exec:cat\nretries = many\n");
	unsetenv("PRAGMA_LLM");
	assert_int_equal(pragma_llm_open(&llm, &o, &err), -1);
	assert_non_null(strstr(err.msg, "config llm.retries"));
	clear_config();
}

static void test_flag_errors(void **state)
{
	struct pragma_llm_options o = PRAGMA_LLM_OPTIONS_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	char *bad[][3] = {
		{ "x", "--temperature", "3" }, { "x", "--max-tokens", "0" }, { "x", "--seed", "1.5" },
		{ "x", "--timeout", "-1" },    { "x", "--retries", "1000" }, { "x", "--budget-cost", "free" },
	};
	int i;

	(void)state;
	for (size_t k = 0; k < sizeof(bad) / sizeof(bad[0]); k++) {
		i = 1;
		assert_int_equal(pragma_llm_options_flag(&o, 3, bad[k], &i, &err), -1);
		assert_int_equal(err.kind, PRAGMA_E_INPUT);
	}
	char *missing[] = { "x", "--llm", NULL };
	i = 1;
	assert_int_equal(pragma_llm_options_flag(&o, 2, missing, &i, &err), -1);
	assert_non_null(strstr(err.msg, "needs a value"));
	assert_non_null(strstr(pragma_llm_options_help(), "--budget-cost"));
}

static void test_prices(void **state)
{
	struct pragma_llm_options o = PRAGMA_LLM_OPTIONS_INIT;
	struct pragma_llm *llm;
	struct pragma_err err = PRAGMA_ERR_INIT;
	double in = -1, out = -1;
	char path[512];

	(void)state;
	assert_non_null(pragma_llm_builtin_prices()[0].model);
	assert_int_equal(pragma_llm_price_of(NULL, "gpt-4o-2024-08-06", &in, &out), 1);
	assert_true(in == 2.5 && out == 10);
	assert_int_equal(pragma_llm_price_of(NULL, "gpt-4o-mini-2024-07-18", &in, &out), 1);
	assert_true(in == 0.15); /* the longest prefix wins */
	assert_int_equal(pragma_llm_price_of(NULL, "openai/gpt-4o", &in, &out), 1); /* OpenRouter names */
	assert_int_equal(pragma_llm_price_of(NULL, "deepseek-chat", &in, &out), 1);
	assert_int_equal(pragma_llm_price_of(NULL, "deepseek-chat-v9", &in, &out), 0); /* exact only */
	assert_int_equal(pragma_llm_price_of(NULL, "llama-3-70b", &in, &out), 0);

	snprintf(path, sizeof(path), "%s/prices.json", dir);
	const char *pj = "{\"llama-3*\": [0.5, 0.75], \"gpt-4o\": {\"input\": 1, \"output\": 2}}";
	assert_int_equal(pragma_write_file_atomic(path, pj, strlen(pj), &err), 0);
	o.spec = "exec:cat";
	o.price_file = path;
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	assert_int_equal(pragma_llm_price_of(llm, "llama-3-70b", &in, &out), 1);
	assert_true(in == 0.5 && out == 0.75);
	assert_int_equal(pragma_llm_price_of(llm, "gpt-4o", &in, &out), 1);
	assert_true(in == 1 && out == 2); /* the override */
	assert_int_equal(pragma_llm_price_of(llm, "gpt-4o-mini", &in, &out), 1);
	assert_true(in == 0.15); /* not overridden: built-in */
	pragma_llm_free(llm);

	/* "~/" in a configured path is the home directory. */
	char home_rel[64];
	snprintf(home_rel, sizeof(home_rel), "~/prices.json");
	char *old_home = getenv("HOME") ? strdup(getenv("HOME")) : NULL;
	setenv("HOME", dir, 1);
	o.price_file = NULL;
	setenv("PRAGMA_LLM_PRICES", home_rel, 1);
	assert_int_equal(pragma_llm_open(&llm, &o, &err), 0);
	assert_int_equal(pragma_llm_price_of(llm, "llama-3-8b", &in, &out), 1);
	pragma_llm_free(llm);
	unsetenv("PRAGMA_LLM_PRICES");
	if (old_home)
		setenv("HOME", old_home, 1);
	free(old_home);
	o.price_file = path;

	pj = "{\"m\": {\"input\": \"cheap\"}}";
	assert_int_equal(pragma_write_file_atomic(path, pj, strlen(pj), &err), 0);
	assert_int_equal(pragma_llm_open(&llm, &o, &err), -1);
	assert_non_null(strstr(err.msg, "'m' needs"));
	assert_int_equal(pragma_write_file_atomic(path, "[1,2", 4, &err), 0);
	assert_int_equal(pragma_llm_open(&llm, &o, &err), -1);
	assert_non_null(strstr(err.msg, "price file"));
}

static void test_names(void **state)
{
	(void)state;
	assert_string_equal(pragma_llm_fail_name(PRAGMA_LLM_FAIL_STALL), "stall");
	assert_string_equal(pragma_llm_fail_name((enum pragma_llm_fail)999), "unknown");
	assert_true(pragma_llm_fail_retryable(PRAGMA_LLM_FAIL_RATE_LIMIT));
	assert_true(pragma_llm_fail_retryable(PRAGMA_LLM_FAIL_TRUNCATED));
	assert_false(pragma_llm_fail_retryable(PRAGMA_LLM_FAIL_AUTH));
	assert_false(pragma_llm_fail_retryable(PRAGMA_LLM_FAIL_REQUEST));
	assert_false(pragma_llm_fail_retryable(PRAGMA_LLM_FAIL_REFUSAL));
	assert_false(pragma_llm_fail_retryable(PRAGMA_LLM_FAIL_BUDGET));
	assert_string_equal(pragma_llm_provider_name(PRAGMA_LLM_ANTHROPIC), "anthropic");
}

static int setup(void **state)
{
	struct pragma_buf tmp = PRAGMA_BUF_INIT;

	(void)state;
	fake_llm_env_reset();
	if (pragma_mkdtemp("/tmp", "pragma-llm-opt-", &tmp, NULL) < 0)
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
		cmocka_unit_test(test_spec_errors),
		cmocka_unit_test(test_urls_and_keys),
		cmocka_unit_test(test_precedence),
		cmocka_unit_test(test_flag_errors),
		cmocka_unit_test(test_prices),
		cmocka_unit_test(test_names),
	};
	return pragma_run_tests(tests, setup, teardown);
}
