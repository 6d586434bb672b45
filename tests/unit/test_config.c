/* Configuration files: format, precedence of files, the global lookup. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>
#include <cmocka.h>

#include "pragma_test.h"

#include "pragma/config.h"
#include "pragma/fs.h"

static char dir[256];
static char home[1024] = ".."; /* $PRAGMA_HOME, kept: the tests unset every setting */

static void put(const char *rel, const char *text)
{
	char path[600], parent[600];
	struct pragma_err err = PRAGMA_ERR_INIT;

	snprintf(path, sizeof(path), "%s/%s", dir, rel);
	snprintf(parent, sizeof(parent), "%s", path);
	*strrchr(parent, '/') = '\0';
	assert_int_equal(pragma_mkdir_p(parent, 0755, &err), 0);
	assert_int_equal(pragma_write_file_atomic(path, text, strlen(text), &err), 0);
}

static void test_parse(void **state)
{
	struct pragma_config c = PRAGMA_CONFIG_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;

	(void)state;
	assert_int_equal(pragma_config_load_string(&c,
						   "# comment\n; another\n\ntop = 1\n"
						   "[LLM]\n  spec = openai:gpt-4o  \nbase_url=http://h:1/v1\n"
						   "quoted = \"  spaced  \"\nempty =\n"
						   "[ build.cuda ]\nnvcc_flags = -O3 -arch=sm_80\n",
						   "t.conf", &err), 0);
	assert_string_equal(pragma_config_lookup(&c, NULL, "top"), "1");
	assert_string_equal(pragma_config_lookup(&c, "llm", "SPEC"), "openai:gpt-4o");
	assert_string_equal(pragma_config_lookup(&c, "llm", "base_url"), "http://h:1/v1");
	assert_string_equal(pragma_config_lookup(&c, "llm", "quoted"), "  spaced  ");
	assert_string_equal(pragma_config_lookup(&c, "llm", "empty"), "");
	assert_string_equal(pragma_config_lookup(&c, "build.cuda", "nvcc_flags"), "-O3 -arch=sm_80");
	assert_null(pragma_config_lookup(&c, "llm", "top"));
	assert_null(pragma_config_lookup(&c, "nope", "spec"));
	assert_string_equal(pragma_config_origin(&c, "llm", "spec"), "t.conf:6");

	/* A later text overrides; a broken one merges nothing. */
	assert_int_equal(pragma_config_load_string(&c, "[llm]\nspec = exec:cat\n", "u.conf", &err), 0);
	assert_string_equal(pragma_config_lookup(&c, "llm", "spec"), "exec:cat");
	assert_int_equal(pragma_config_load_string(&c, "[llm]\nspec = replay:x\nthis line is wrong\n", "v.conf", &err), -1);
	assert_int_equal(err.kind, PRAGMA_E_INPUT);
	assert_non_null(strstr(err.msg, "v.conf:3"));
	assert_string_equal(pragma_config_lookup(&c, "llm", "spec"), "exec:cat");
	assert_int_equal(pragma_config_load_string(&c, "[llm\n", "w.conf", &err), -1);
	assert_non_null(strstr(err.msg, "w.conf:1"));
	assert_int_equal(pragma_config_load_string(&c, "[]\n", "w.conf", &err), -1);
	assert_int_equal(pragma_config_load_string(&c, "bad key = 1\n", "w.conf", &err), -1);
	assert_non_null(strstr(err.msg, "bad key"));
	pragma_config_release(&c);
}

static void test_files(void **state)
{
	struct pragma_config c = PRAGMA_CONFIG_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	char path[600];

	(void)state;
	snprintf(path, sizeof(path), "%s/missing", dir);
	assert_int_equal(pragma_config_load_file(&c, path, 0, &err), 0);
	assert_int_equal(pragma_config_load_file(&c, path, 1, &err), -1);
	put("bin.conf", "a = 1\n");
	snprintf(path, sizeof(path), "%s/bin.conf", dir);
	FILE *f = fopen(path, "w");
	fwrite("a\0b = 2\n", 1, 8, f);
	fclose(f);
	assert_int_equal(pragma_config_load_file(&c, path, 1, &err), -1);
	assert_non_null(strstr(err.msg, "not a text file"));
	pragma_config_release(&c);
}

/* $XDG_CONFIG_HOME/pragma/config, then ./.pragma/config, then $PRAGMA_CONFIG. */
static void test_global(void **state)
{
	char xdg[600], cwd[1024], extra[600];
	struct pragma_err err = PRAGMA_ERR_INIT;
	double d = 0;
	long long l = 0;
	int b = -1;

	(void)state;
	assert_non_null(getcwd(cwd, sizeof(cwd)));
	put("xdg/pragma/config", "[llm]\nspec = openai:from-xdg\ntemperature = 0.5\nseed = 7\nstream = off\nmodel_x = 1\n");
	put("work/.pragma/config", "[llm]\nspec = anthropic:from-project\n");
	put("extra.conf", "[llm]\nseed = 8\n");
	snprintf(xdg, sizeof(xdg), "%s/xdg", dir);
	snprintf(extra, sizeof(extra), "%s/extra.conf", dir);
	setenv("XDG_CONFIG_HOME", xdg, 1);
	unsetenv("PRAGMA_CONFIG_NO_DEFAULTS");
	unsetenv("PRAGMA_CONFIG");
	snprintf(cwd + strlen(cwd), 0, "%s", "");
	char work[600];
	snprintf(work, sizeof(work), "%s/work", dir);
	assert_int_equal(chdir(work), 0);
	pragma_config_reload();
	assert_string_equal(pragma_config_get("llm", "spec"), "anthropic:from-project");
	assert_int_equal(pragma_config_get_double("llm", "temperature", &d, &err), 1);
	assert_true(d == 0.5);
	assert_int_equal(pragma_config_get_long("llm", "seed", &l, &err), 1);
	assert_int_equal(l, 7);
	assert_int_equal(pragma_config_get_bool("llm", "stream", &b, &err), 1);
	assert_int_equal(b, 0);
	assert_int_equal(pragma_config_get_long("llm", "absent", &l, &err), 0);
	assert_int_equal(pragma_config_get_bool("llm", "spec", &b, &err), -1);
	assert_non_null(strstr(err.msg, "config:2")); /* where the bad value is */
	assert_int_equal(pragma_config_check(&err), 0);

	setenv("PRAGMA_CONFIG", extra, 1);
	pragma_config_reload();
	assert_int_equal(pragma_config_get_long("llm", "seed", &l, &err), 1);
	assert_int_equal(l, 8);

	/* A broken file: lookups still work (it is ignored), check() reports it. */
	put("extra.conf", "[llm\n");
	pragma_config_reload();
	assert_string_equal(pragma_config_get("llm", "spec"), "anthropic:from-project");
	assert_int_equal(pragma_config_check(&err), -1);
	assert_non_null(strstr(err.msg, "extra.conf:1"));

	setenv("PRAGMA_CONFIG_NO_DEFAULTS", "1", 1);
	unsetenv("PRAGMA_CONFIG");
	pragma_config_reload();
	assert_null(pragma_config_get("llm", "spec"));
	assert_int_equal(chdir(cwd), 0);
	pragma_config_reload();
}

static void count_bad(void *ctx, const char *name, const struct pragma_err *e)
{
	(void)ctx;
	(void)name;
	assert_int_equal(e->kind, PRAGMA_E_INPUT);
}

/* Only the named variables: every other PRAGMA_* setting unset, no files. */
static void clean_env(void)
{
	size_t n;
	const struct pragma_setting *t = pragma_settings(&n);

	for (size_t i = 0; i < n; i++)
		if (t[i].env)
			unsetenv(t[i].env);
	setenv("PRAGMA_CONFIG_NO_DEFAULTS", "1", 1);
	pragma_config_reload();
}

static void expect_bad(const char *env, const char *value, const char *why)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	char want[256];

	clean_env();
	setenv(env, value, 1);
	assert_int_equal(pragma_settings_check(&err), -1);
	assert_int_equal(err.kind, PRAGMA_E_INPUT);
	/* Names the variable and the value, says what it accepts and why. */
	snprintf(want, sizeof(want), "%s='%s'", env, value);
	if (!strstr(err.msg, want) || !strstr(err.msg, "it accepts") || !strstr(err.msg, why))
		fail_msg("%s=%s: message '%s'", env, value, err.msg);
	assert_non_null(strstr(err.hint, env));
	unsetenv(env);
}

static void expect_good(const char *env, const char *value)
{
	struct pragma_err err = PRAGMA_ERR_INIT;

	clean_env();
	setenv(env, value, 1);
	if (pragma_settings_check(&err) != 0)
		fail_msg("%s=%s refused: %s", env, value, err.msg);
	unsetenv(env);
}

/* A bad setting is an error naming it, never a silent default. */
static void test_settings_values(void **state)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	uint64_t u = 0;
	double d = 0;

	(void)state;
	expect_bad("PRAGMA_CACHE_MAX", "lots", "is not a size");
	expect_bad("PRAGMA_CACHE_MAX", "-5", "is not a size");
	expect_bad("PRAGMA_CACHE_MAX", "0", "is not a size");
	expect_bad("PRAGMA_CACHE_MAX", "8Q", "is not a size");
	expect_good("PRAGMA_CACHE_MAX", "8G");
	expect_good("PRAGMA_CACHE_MAX", "1.5GiB");
	expect_good("PRAGMA_CACHE_MAX", "4096");
	expect_bad("PRAGMA_LLM", "bogus", "is not PROVIDER:MODEL");
	expect_bad("PRAGMA_LLM", "gpt:4o", "unknown provider 'gpt'");
	expect_good("PRAGMA_LLM", "exec:cat");
	expect_good("PRAGMA_LLM", "openai:gpt-4o");
	expect_bad("PRAGMA_LLM_TEMPERATURE", "3", "out of range");
	expect_bad("PRAGMA_LLM_RETRIES", "lots", "not a whole number");
	expect_bad("PRAGMA_LLM_TIMEOUT", "0", "out of range");
	expect_bad("PRAGMA_LLM_STREAM", "maybe", "not a yes/no");
	expect_bad("PRAGMA_LLM_BASE_URL", "127.0.0.1:8000", "not an http");
	expect_bad("PRAGMA_BRIDGE_TIMEOUT", "soon", "not a number of seconds");
	expect_bad("PRAGMA_BRIDGE_TIMEOUT", "-1", "out of range");
	expect_bad("PRAGMA_NO_TCMALLOC", "please", "not a yes/no");
	expect_bad("PRAGMA_HOME", "/nonexistent/pragma", "does not exist");
	expect_bad("PRAGMA_CUDA_ARCH", "ampere", "not a CUDA architecture");
	expect_good("PRAGMA_CUDA_ARCH", "sm_90a");
	expect_good("PRAGMA_CUDA_ARCH", "80");
	expect_bad("PRAGMA_TORCH_COMPILE_MODE", "turbo", "not one of the choices");
	expect_good("PRAGMA_TORCH_COMPILE_MODE", "max-autotune");

	/* An empty variable is unset. */
	clean_env();
	setenv("PRAGMA_CACHE_MAX", "", 1);
	assert_int_equal(pragma_settings_check(&err), 0);
	assert_int_equal(pragma_setting_size("PRAGMA_CACHE_MAX", &u, &err), 0);
	setenv("PRAGMA_CACHE_MAX", "512M", 1);
	assert_int_equal(pragma_setting_size("PRAGMA_CACHE_MAX", &u, &err), 1);
	assert_true(u == 512ull << 20);
	setenv("PRAGMA_CACHE_MAX", "lots", 1);
	assert_int_equal(pragma_setting_size("PRAGMA_CACHE_MAX", &u, &err), -1);
	assert_non_null(strstr(err.msg, "PRAGMA_CACHE_MAX='lots'"));
	setenv("PRAGMA_BRIDGE_TIMEOUT", "2.5", 1);
	assert_int_equal(pragma_setting_seconds("PRAGMA_BRIDGE_TIMEOUT", &d, &err), 1);
	assert_true(d == 2.5);
	clean_env();
}

/* The config file: bad values and unknown keys are errors with file:line. */
static void test_settings_file(void **state)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	char path[600];
	int bad = 0;

	(void)state;
	clean_env();
	put("settings.conf", "[llm]\ntemprature = 0.3\n");
	snprintf(path, sizeof(path), "%s/settings.conf", dir);
	setenv("PRAGMA_CONFIG", path, 1);
	pragma_config_reload();
	assert_int_equal(pragma_settings_check(&err), -1);
	assert_non_null(strstr(err.msg, "settings.conf:2: unknown setting 'llm.temprature'"));
	assert_non_null(strstr(err.hint, "temperature"));

	put("settings.conf", "[cache]\nmax = lots\n[bridge]\ntimeout = 30\n");
	pragma_config_reload();
	assert_int_equal(pragma_settings_check(&err), -1);
	assert_non_null(strstr(err.msg, "settings.conf:2: cache.max = 'lots' is not a size"));

	/* Good values: read back through the typed getters, the
	 * environment over the file. */
	put("settings.conf", "[cache]\nmax = 2G\n[bridge]\ntimeout = 30\nllm = exec:cat\n");
	pragma_config_reload();
	assert_int_equal(pragma_settings_check(&err), -1); /* 'llm' belongs before any section */
	assert_non_null(strstr(err.msg, "unknown setting 'bridge.llm'"));
	put("settings.conf", "llm = exec:cat\n[cache]\nmax = 2G\n[bridge]\ntimeout = 30\n");
	pragma_config_reload();
	assert_int_equal(pragma_settings_check(&err), 0);
	uint64_t u = 0;
	assert_int_equal(pragma_setting_size("PRAGMA_CACHE_MAX", &u, &err), 1);
	assert_true(u == 2ull << 30);
	setenv("PRAGMA_CACHE_MAX", "1G", 1);
	assert_int_equal(pragma_setting_size("PRAGMA_CACHE_MAX", &u, &err), 1);
	assert_true(u == 1ull << 30);

	/* doctor's view: every problem, not only the first. */
	put("settings.conf", "[llm]\nretries = x\nnope = 1\n[nosuch]\na = 1\n");
	pragma_config_reload();
	setenv("PRAGMA_CACHE_MAX", "lots", 1);
	bad = pragma_settings_check_each(count_bad, NULL);
	assert_int_equal(bad, 4);
	unsetenv("PRAGMA_CONFIG");
	clean_env();
}

/* README's Configuration section lists every environment setting. */
static void test_settings_documented(void **state)
{
	struct pragma_buf readme = PRAGMA_BUF_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	char path[1100];
	size_t n;
	const struct pragma_setting *t = pragma_settings(&n);

	(void)state;
	snprintf(path, sizeof(path), "%s/README.md", home);
	assert_int_equal(pragma_read_file(path, &readme, 0, &err), 0);
	for (size_t i = 0; i < n; i++) {
		char want[128];
		if (t[i].env)
			snprintf(want, sizeof(want), "`%s`", t[i].env);
		else
			snprintf(want, sizeof(want), "`%s%s%s`", t[i].section, *t[i].section ? "." : "", t[i].key);
		if (!strstr(readme.data, want))
			fail_msg("README.md does not document %s", want);
	}
	pragma_buf_release(&readme);
}

static int setup(void **state)
{
	struct pragma_buf tmp = PRAGMA_BUF_INIT;

	(void)state;
	if (getenv("PRAGMA_HOME"))
		snprintf(home, sizeof(home), "%s", getenv("PRAGMA_HOME"));
	if (pragma_mkdtemp("/tmp", "pragma-config-", &tmp, NULL) < 0)
		return -1;
	snprintf(dir, sizeof(dir), "%s", tmp.data);
	pragma_buf_release(&tmp);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pragma_rm_rf(dir, NULL);
	return 0;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_parse),
		cmocka_unit_test(test_files),
		cmocka_unit_test(test_global),
		cmocka_unit_test(test_settings_values),
		cmocka_unit_test(test_settings_file),
		cmocka_unit_test(test_settings_documented),
	};
	return pragma_run_tests(tests, setup, teardown);
}
