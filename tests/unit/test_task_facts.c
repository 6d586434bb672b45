/* Task facts: what the forward pass depends on that no tensor shows
 * (cumsum's dim, pooling's kernel/stride/padding, layer norm's eps, a
 * native task's sizes), from the bridge's info or task.json, and their text
 * for prompts and `tasks show`. The KernelBench cases run the real bridge
 * (skipped without torch). */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "pragma_test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pragma/bridge.h"
#include "pragma/fs.h"
#include "pragma/task.h"

static char cache[256];

static int setup(void **state)
{
	(void)state;
	snprintf(cache, sizeof(cache), "/tmp/pragma-test-facts-XXXXXX");
	if (!mkdtemp(cache))
		return -1;
	setenv("PRAGMA_CACHE_DIR", cache, 1);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pragma_rm_rf(cache, NULL);
	return 0;
}

static const struct pragma_task_fact *fact(const struct pragma_task *t, const char *kind, const char *name)
{
	for (int i = 0; i < t->n_facts; i++)
		if (!strcmp(t->facts[i].kind, kind) && !strcmp(t->facts[i].name, name))
			return &t->facts[i];
	return NULL;
}

static void text_has(const struct pragma_task *t, const char *want)
{
	struct pragma_buf b = PRAGMA_BUF_INIT;

	pragma_task_facts_text(t, &b);
	if (!b.data || !strstr(b.data, want))
		fail_msg("facts text lacks '%s':\n%s", want, b.data ? b.data : "(empty)");
	pragma_buf_release(&b);
}

/* The info as the bridge writes it, parsed without the bridge. */
static void from_info(void **state)
{
	struct pragma_task t;
	json_error_t je;

	(void)state;
	memset(&t, 0, sizeof(t));
	t.kind = PRAGMA_TASK_KERNELBENCH;
	t.meta = json_loads("{\"constants\": {\"BATCH\": 8, \"KERNEL_SIZE\": 3, \"EPS\": 1e-05},"
			    " \"init_args\": [{\"name\": \"kernel_size\", \"value\": 3, \"text\": \"3\"},"
			    "                 {\"name\": \"dim\", \"value\": 1, \"text\": \"1\"}],"
			    " \"attributes\": [{\"name\": \"dim\", \"value\": 1, \"text\": \"1\"},"
			    "                  {\"name\": \"eps\", \"value\": 0.001, \"text\": \"0.001\"}],"
			    " \"modules\": [{\"name\": \"pool\", \"type\": \"MaxPool2d\","
			    "               \"config\": \"kernel_size=3, stride=2, padding=1\"}]}",
			    0, &je);
	assert_non_null(t.meta);
	pragma_task_facts_fill(&t);
	assert_string_equal(fact(&t, "init_arg", "kernel_size")->value, "3");
	assert_string_equal(fact(&t, "init_arg", "dim")->value, "1");
	assert_null(fact(&t, "attribute", "dim"));   /* said once, as the argument */
	assert_string_equal(fact(&t, "attribute", "eps")->value, "0.001");
	assert_string_equal(fact(&t, "module", "pool (MaxPool2d)")->value, "kernel_size=3, stride=2, padding=1");
	assert_string_equal(fact(&t, "constant", "EPS")->value, "1e-05");
	text_has(&t, "- Model(kernel_size=3, dim=1): the constructor arguments from get_init_inputs()");
	text_has(&t, "- self.eps = 0.001");
	text_has(&t, "- submodule pool (MaxPool2d): kernel_size=3, stride=2, padding=1");
	text_has(&t, "- module constants: BATCH=8, KERNEL_SIZE=3, EPS=1e-05");

	/* An info from an older bridge has none of it: no facts, no text. */
	json_decref(t.meta);
	t.meta = json_loads("{\"name\": \"x\"}", 0, &je);
	pragma_task_facts_fill(&t);
	assert_int_equal(t.n_facts, 0);
	struct pragma_buf b = PRAGMA_BUF_INIT;
	pragma_task_facts_text(&t, &b);
	assert_int_equal(b.len, 0);
	pragma_buf_release(&b);
	json_decref(t.meta);
	free(t.facts);
}

/* A --set value replaces the top-level assignment of that name in the text
 * shown, and nothing else: not a comparison, not another name's prefix. */
static void source_overrides(void **state)
{
	struct pragma_task t;
	struct pragma_buf b = PRAGMA_BUF_INIT;
	char *ov[] = { "N=4", "EPS=0.1" };

	(void)state;
	memset(&t, 0, sizeof(t));
	t.kind = PRAGMA_TASK_KERNELBENCH;
	t.source = "N = 1024\nNN = 7\nEPS=1e-5\nif N == 3:\n    N = 5\nx = N";
	t.overrides = ov;
	t.n_overrides = 2;
	pragma_task_source_text(&t, &b);
	assert_string_equal(b.data, "# pragma runs this problem with --set N=4 --set EPS=0.1: the assignments below "
				    "carry those values.\n"
				    "N = 4  # --set; the file says: N = 1024\nNN = 7\n"
				    "EPS = 0.1  # --set; the file says: EPS=1e-5\nif N == 3:\n    N = 5\nx = N");
	pragma_buf_release(&b);
	/* Without --set the text is the file's. */
	t.n_overrides = 0;
	pragma_task_source_text(&t, &b);
	assert_string_equal(b.data, t.source);
	pragma_buf_release(&b);
}

static void native_sizes(void **state)
{
	struct pragma_task t;
	struct pragma_err err = PRAGMA_ERR_INIT;
	const char *ov[] = { "N=2000" };
	char p[1200];

	(void)state;
	snprintf(p, sizeof(p), "%s/fixtures/tasks/good_native",
		 getenv("PRAGMA_TEST_DATA") ? getenv("PRAGMA_TEST_DATA") : "tests");
	assert_int_equal(pragma_task_load(p, ov, 1, &t, &err), 0);
	assert_string_equal(fact(&t, "size", "N")->value, "2000");   /* after --set */
	text_has(&t, "- sizes: N=2000");
	json_t *j = pragma_task_json(&t);
	assert_int_equal(json_array_size(json_object_get(j, "facts")), t.n_facts);
	json_decref(j);
	pragma_task_release(&t);
}

static int have_torch(void)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	char v[128];

	return pragma_bridge_versions(v, sizeof(v), &err) == 0;
}

static void load_builtin(const char *name, const char *const *ov, int n, struct pragma_task *t)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	char p[1200];

	snprintf(p, sizeof(p), "%s/../tasks/cpu-l1/%s.py",
		 getenv("PRAGMA_TEST_DATA") ? getenv("PRAGMA_TEST_DATA") : "tests", name);
	if (pragma_task_load(p, ov, n, t, &err) < 0)
		fail_msg("loading %s: %s", p, err.msg);
}

static void kernelbench_tasks(void **state)
{
	struct pragma_task t;

	(void)state;
	if (!have_torch())
		skip_because("/usr/bin/python3 cannot import torch: KernelBench tasks cannot be loaded here");
	/* cumsum: the scan dimension is a constructor argument. */
	const char *cs[] = { "BATCH=2", "LENGTH=64" };
	load_builtin("52_cumsum", cs, 2, &t);
	assert_string_equal(fact(&t, "init_arg", "dim")->value, "1");
	assert_string_equal(fact(&t, "constant", "SCAN_DIM")->value, "1");
	text_has(&t, "Model(dim=1)");
	/* The source a model reads carries the values it is run with. */
	{
		struct pragma_buf b = PRAGMA_BUF_INIT;
		pragma_task_source_text(&t, &b);
		if (!strstr(b.data, "\nBATCH = 2  # --set; the file says: BATCH = 128\n") ||
		    !strstr(b.data, "\nLENGTH = 64  # --set; the file says: LENGTH = 131072\n") ||
		    !strstr(b.data, "# pragma runs this problem with --set BATCH=2 --set LENGTH=64"))
			fail_msg("the source does not show the overrides:\n%s", b.data);
		assert_null(strstr(b.data, "\nBATCH = 128\n"));
		pragma_buf_release(&b);
	}
	pragma_task_release(&t);

	/* max pooling: kernel, stride, padding by their names in __init__,
	 * and the submodule's full settings. */
	const char *mp[] = { "BATCH=1", "CHANNELS=2", "HEIGHT=8", "WIDTH=8" };
	load_builtin("33_max_pool2d", mp, 4, &t);
	assert_string_equal(fact(&t, "init_arg", "kernel_size")->value, "3");
	assert_string_equal(fact(&t, "init_arg", "stride")->value, "2");
	assert_string_equal(fact(&t, "init_arg", "padding")->value, "1");
	assert_non_null(strstr(fact(&t, "module", "pool (MaxPool2d)")->value, "dilation=1"));
	text_has(&t, "Model(kernel_size=3, stride=2, padding=1)");
	pragma_task_release(&t);

	/* layer norm: eps is nobody's argument, only the submodule's setting. */
	const char *ln[] = { "BATCH=1", "FEATURES=2", "DIM1=4", "DIM2=4" };
	load_builtin("25_layer_norm", ln, 4, &t);
	assert_string_equal(fact(&t, "init_arg", "normalized_shape")->value, "(2, 4, 4)");
	assert_non_null(strstr(fact(&t, "module", "ln (LayerNorm)")->value, "eps=1e-05"));
	text_has(&t, "eps=1e-05");
	pragma_task_release(&t);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(from_info),
		cmocka_unit_test(source_overrides),
		cmocka_unit_test(native_sizes),
		cmocka_unit_test(kernelbench_tasks),
	};

	return pragma_run_tests(tests, setup, teardown);
}
