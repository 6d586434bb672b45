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

static int setup(void **state)
{
	struct pragma_buf tmp = PRAGMA_BUF_INIT;

	(void)state;
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
	};
	return pragma_run_tests(tests, setup, teardown);
}
