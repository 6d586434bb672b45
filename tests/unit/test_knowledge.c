/*
 * The compendium: held to the metric registry and the diagnosis (the real
 * knowledge/ directory), broken compendia reported, full-text search, the
 * compact prompt form, chunking, and the two-stage build with a stand-in
 * summarizer (exec: tests/profile_kernels/fake_summarizer.py).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "pragma_test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pragma/fs.h"
#include "pragma/knowledge.h"
#include "pragma/llm.h"

static struct pragma_knowledge *open_real(void)
{
	struct pragma_knowledge *kb = NULL;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_buf dir = PRAGMA_BUF_INIT;
	const char *root = getenv("PRAGMA_TEST_DATA");

	pragma_buf_addf(&dir, "%s/../knowledge", root ? root : "tests");
	if (pragma_knowledge_open(&kb, dir.data, &err) < 0)
		fail_msg("%s", err.msg);
	pragma_buf_release(&dir);
	return kb;
}

static void complete(void **state)
{
	struct pragma_knowledge *kb = open_real();
	struct pragma_buf probs = PRAGMA_BUF_INIT;
	size_t nd, nb;
	const struct pragma_metric_def *d = pragma_metric_defs(&nd);
	const char *const *b = pragma_bottleneck_names(&nb);

	(void)state;
	if (pragma_knowledge_check(kb, &probs) != 0)
		fail_msg("the compendium disagrees with the registry:\n%s", probs.data);
	for (size_t i = 0; i < nd; i++) {
		const struct pragma_kentry *e = pragma_knowledge_get(kb, PRAGMA_KENTRY_METRIC, d[i].name);
		assert_non_null(e);
		assert_true(*e->what && *e->how && *e->healthy && e->remedies[0] && e->sources[0]);
	}
	for (size_t i = 0; i < nb; i++)
		assert_non_null(pragma_knowledge_get(kb, PRAGMA_KENTRY_PLAYBOOK, b[i]));
	/* the GPU entries are there for the CUDA backend */
	assert_non_null(strstr(pragma_knowledge_get(kb, PRAGMA_KENTRY_METRIC, "gpu.achieved_occupancy")->how,
			       "sm__warps_active"));
	pragma_buf_release(&probs);
	pragma_knowledge_free(kb);
}

static void write_file(const char *dir, const char *name, const char *text)
{
	char path[4096];
	struct pragma_err err = PRAGMA_ERR_INIT;

	snprintf(path, sizeof(path), "%s/%s", dir, name);
	if (pragma_write_file_atomic(path, text, strlen(text), &err) < 0)
		fail_msg("%s", err.msg);
}

static void broken(void **state)
{
	struct pragma_buf dir = PRAGMA_BUF_INIT, sub = PRAGMA_BUF_INIT, probs = PRAGMA_BUF_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_knowledge *kb = NULL;

	(void)state;
	assert_int_equal(pragma_mkdtemp("/tmp", "pragma-kb-", &dir, &err), 0);
	pragma_buf_addf(&sub, "%s/metrics", dir.data);
	pragma_mkdir_p(sub.data, 0755, &err);
	write_file(sub.data, "cpu.json",
		   "{\"entries\": [{\"name\": \"cpu.ipc\", \"unit\": \"%\", \"collector\": \"perf\", \"what\": \"w\","
		   " \"how\": \"h\", \"healthy\": \"x\", \"remedies\": [\"r\"], \"reveals\": [\"slow\"], \"sources\": []},"
		   " {\"name\": \"cpu.madeup\", \"sources\": [\"s\"]}]}");
	write_file(dir.data, "playbooks.json", "{\"playbooks\": [{\"name\": \"memory-bound\", \"summary\": \"s\","
					       " \"signs\": [\"x\"], \"remedies\": [\"r\"], \"metrics\": [\"cpu.nope\"],"
					       " \"sources\": [\"s\"]}]}");
	assert_int_equal(pragma_knowledge_open(&kb, dir.data, &err), 0);
	assert_true(pragma_knowledge_check(kb, &probs) > 10);
	assert_non_null(strstr(probs.data, "metric cpu.cycles (registry) has no compendium entry"));
	assert_non_null(strstr(probs.data, "cpu.ipc has unit '%', the registry says 'ratio'"));
	assert_non_null(strstr(probs.data, "cpu.ipc names no sources"));
	assert_non_null(strstr(probs.data, "reveals 'slow', which is no bottleneck name"));
	assert_non_null(strstr(probs.data, "cpu.madeup is not a registry metric"));
	assert_non_null(strstr(probs.data, "bottleneck low-parallelism (diagnosis) has no playbook"));
	assert_non_null(strstr(probs.data, "lists unknown metric cpu.nope"));
	pragma_knowledge_free(kb);

	/* malformed JSON: named, with its line */
	write_file(sub.data, "bad.json", "{\"entries\": [\n{\"name\": }\n]}");
	assert_int_equal(pragma_knowledge_open(&kb, dir.data, &err), -1);
	assert_int_equal(err.kind, PRAGMA_E_INPUT);
	assert_non_null(strstr(err.msg, "bad.json:2"));
	assert_null(kb);
	/* no directory at all */
	assert_int_equal(pragma_knowledge_open(&kb, "/nonexistent/knowledge", &err), -1);
	assert_int_equal(err.kind, PRAGMA_E_ENV);
	pragma_rm_rf(dir.data, NULL);
	pragma_buf_release(&dir);
	pragma_buf_release(&sub);
	pragma_buf_release(&probs);
}

static int hit(struct pragma_khit *h, size_t n, size_t within, const char *name)
{
	for (size_t i = 0; i < n && i < within; i++)
		if (!strcmp(h[i].entry->name, name))
			return 1;
	return 0;
}

static void search(void **state)
{
	struct pragma_knowledge *kb = open_real();
	struct pragma_khit h[10];
	struct pragma_err err = PRAGMA_ERR_INIT;
	size_t n;

	(void)state;
	assert_int_equal(pragma_knowledge_search(kb, "streaming stores bandwidth", h, 10, &n, &err), 0);
	assert_true(n > 0);
	assert_true(hit(h, n, 5, "memory-bound") || hit(h, n, 5, "static.nt_stores"));
	assert_int_equal(pragma_knowledge_search(kb, "occupancy registers", h, 10, &n, &err), 0);
	assert_true(hit(h, n, 5, "gpu.achieved_occupancy") || hit(h, n, 5, "gpu.theoretical_occupancy"));
	/* names with dots, and words FTS5 would take for syntax */
	assert_int_equal(pragma_knowledge_search(kb, "cpu.ipc", h, 10, &n, &err), 0);
	assert_true(hit(h, n, 3, "cpu.ipc"));
	assert_int_equal(pragma_knowledge_search(kb, "AND OR ( \"*", h, 10, &n, &err), 0);
	/* all words first, then any */
	assert_int_equal(pragma_knowledge_search(kb, "reduction accumulators xyzzy", h, 10, &n, &err), 0);
	assert_true(hit(h, n, 10, "latency-bound-reduction"));
	assert_int_equal(pragma_knowledge_search(kb, "xyzzyplugh", h, 10, &n, &err), 0);
	assert_int_equal(n, 0);
	assert_true(h[0].snippet[0] || 1);
	pragma_knowledge_free(kb);
}

static void prompt_form(void **state)
{
	struct pragma_knowledge *kb = open_real();
	struct pragma_buf out = PRAGMA_BUF_INIT, one = PRAGMA_BUF_INIT;
	const char *m[] = { "roof.pct_roof", "sim.d1_miss_rate", "cpu.ipc", "not.a.metric", "roof.pct_roof" };
	const char *b[] = { "memory-bound", "low-parallelism" };

	(void)state;
	pragma_knowledge_prompt(kb, m, 5, b, 2, 0, &out);
	assert_non_null(strstr(out.data, "Bottlenecks found"));
	assert_non_null(strstr(out.data, "- Memory-bound:"));
	assert_non_null(strstr(out.data, "Streaming stores"));
	assert_non_null(strstr(out.data, "- roof.pct_roof (%):"));
	assert_non_null(strstr(out.data, "Caveat: Simulated on one thread"));
	assert_null(strstr(out.data, "not.a.metric"));
	/* each entry once */
	const char *first = strstr(out.data, "- roof.pct_roof");
	assert_null(strstr(first + 1, "- roof.pct_roof"));
	/* playbooks come before metric definitions */
	assert_true(strstr(out.data, "Memory-bound") < strstr(out.data, "Metrics shown"));
	size_t full = out.len;
	pragma_buf_reset(&out);
	pragma_knowledge_prompt(kb, m, 5, b, 2, 1200, &out);
	assert_true(out.len < full);
	/* The budget holds the line saying what was left out too (a request
	 * once ended "(16 more compe" where a later cut met it), and that line
	 * names the entries, whole. */
	assert_true(out.len <= 1200);
	assert_true(out.len > 0 && out.data[out.len - 1] == '\n');
	const char *lo = strstr(out.data, "(Left out for length:");
	assert_non_null(lo);
	assert_non_null(strstr(lo, "cpu.ipc"));
	assert_true(strchr(lo, '\n') + 1 == out.data + out.len); /* the last line */
	assert_non_null(strstr(out.data, "Memory-bound"));
	/* every entry kept is whole: each line is one of the full text's */
	for (const char *l = out.data; l < lo;) {
		const char *nl = strchr(l, '\n');
		char line[4096];
		snprintf(line, sizeof(line), "%.*s", (int)(nl - l + 1), l);
		pragma_buf_reset(&one);
		pragma_knowledge_prompt(kb, m, 5, b, 2, 0, &one);
		if (!strstr(one.data, line))
			fail_msg("a cut line: %s", line);
		l = nl + 1;
	}
	/* Any budget, however small: never over it, never mid-line. */
	for (size_t max = 0; max < full; max += 97) {
		pragma_buf_reset(&out);
		pragma_knowledge_prompt(kb, m, 5, b, 2, max ? max : 1, &out);
		assert_true(out.len <= (max ? max : 1));
		assert_true(out.len == 0 || out.data[out.len - 1] == '\n');
	}
	pragma_buf_release(&out);
	pragma_buf_release(&one);

	/* for a profile: the metrics it shows and its diagnosis */
	struct pragma_profile p;
	struct pragma_diagnosis d = PRAGMA_DIAGNOSIS_INIT;
	pragma_profile_init(&p);
	pragma_profile_set(&p, "par.utilization", 50, "par");
	pragma_profile_set(&p, "static.loads", 3, "static"); /* not in the default set */
	d.f = calloc(1, sizeof(*d.f));
	d.n = 1;
	snprintf(d.f[0].bottleneck, sizeof(d.f[0].bottleneck), "low-parallelism");
	pragma_knowledge_for_profile(kb, &p, NULL, 0, &d, 0, &out);
	assert_non_null(strstr(out.data, "par.utilization"));
	assert_null(strstr(out.data, "static.loads"));
	assert_non_null(strstr(out.data, "Low parallelism"));
	pragma_buf_release(&out);
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);
	pragma_knowledge_free(kb);
}

static void chunking(void **state)
{
	struct pragma_buf doc = PRAGMA_BUF_INIT;
	char **c;
	size_t n, total = 0;

	(void)state;
	for (int s = 0; s < 6; s++) {
		pragma_buf_addf(&doc, "# Section %d\n\n", s);
		for (int p = 0; p < 5; p++)
			pragma_buf_addf(&doc, "Paragraph %d of section %d says something about counters and events.\n\n", p, s);
	}
	pragma_buf_adds(&doc, "A very long paragraph without a blank line\n");
	for (int i = 0; i < 200; i++)
		pragma_buf_adds(&doc, "line of a long table row with values 1 2 3\n");
	assert_int_equal(pragma_knowledge_chunk(doc.data, 1000, &c, &n), 0);
	assert_true(n >= 8);
	for (size_t i = 0; i < n; i++) {
		assert_true(strlen(c[i]) <= 1000);
		assert_true(strlen(c[i]) > 0);
		total += strlen(c[i]);
	}
	assert_true(total >= doc.len - 64); /* nothing lost but trailing whitespace */
	/* a new section starts a new chunk once the current one is substantial */
	int starts = 0;
	for (size_t i = 0; i < n; i++)
		starts += !strncmp(c[i], "# Section", 9);
	assert_true(starts >= 3);
	pragma_knowledge_chunks_free(c, n);
	pragma_buf_release(&doc);
}

static void build(void **state)
{
	struct pragma_knowledge *kb = open_real();
	struct pragma_buf dir = PRAGMA_BUF_INIT, spec = PRAGMA_BUF_INIT, doc = PRAGMA_BUF_INIT, out = PRAGMA_BUF_INIT,
			  text = PRAGMA_BUF_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_llm_options opt = PRAGMA_LLM_OPTIONS_INIT;
	struct pragma_llm *llm = NULL;
	struct pragma_kbuild_opts bo = { 0 };
	struct pragma_kbuild_stats st;
	const char *root = getenv("PRAGMA_TEST_DATA");
	const char *docs[1];

	(void)state;
	assert_int_equal(pragma_mkdtemp("/tmp", "pragma-kbuild-", &dir, &err), 0);
	pragma_buf_addf(&spec, "exec:/usr/bin/python3 %s/profile_kernels/fake_summarizer.py", root ? root : "tests");
	opt.spec = spec.data;
	opt.cache = 0;
	opt.retries = 0;
	assert_int_equal(pragma_llm_open(&llm, &opt, &err), 0);

	/* three chunks: two name cycles and branch-misses, one is garbage */
	pragma_buf_addf(&doc, "%s/perf-list.html", dir.data);
	write_file(dir.data, "perf-list.html",
		   "<html><body><h1>Hardware events</h1><p>cycles counts core cycles &amp; more. branch-misses "
		   "counts mispredicted branches. IPC is instructions over cycles.</p>\n\n"
		   "<h2>More</h2><p>cycles again, and branch-misses again, with other words to fill the chunk "
		   "up.</p>\n\n<h2>Noise</h2><p>GARBAGE GARBAGE GARBAGE GARBAGE GARBAGE GARBAGE GARBAGE</p>"
		   "<script>var x = 'cycles';</script></body></html>\n");
	pragma_buf_addf(&out, "%s/reference/perf.json", dir.data);
	docs[0] = doc.data;
	bo.docs = docs;
	bo.n_docs = 1;
	bo.tool = "perf";
	bo.chunk_bytes = 150;
	bo.llm = llm;
	bo.out_path = out.data;
	assert_int_equal(pragma_knowledge_build(kb, &bo, &st, &err), 0);
	assert_int_equal(st.chunks, 3);
	assert_int_equal(st.summarized, 2);
	assert_int_equal(st.failed, 1);
	assert_int_equal(st.skipped_curated, 1);   /* "cpu.ipc" is a curated entry's name */
	assert_int_equal(st.entries_merged, 2);    /* cycles, branch-misses */
	assert_int_equal(st.merges_by_llm, 2);

	/* the result is a compendium directory's reference file */
	struct pragma_knowledge *k2 = NULL;
	pragma_buf_addf(&text, "%s/metrics", dir.data);
	pragma_mkdir_p(text.data, 0755, &err);
	if (pragma_knowledge_open(&k2, dir.data, &err) < 0)
		fail_msg("%s", err.msg);
	const struct pragma_kentry *e = pragma_knowledge_get(k2, PRAGMA_KENTRY_REFERENCE, "cycles");
	assert_non_null(e);
	assert_string_equal(e->tool, "perf");
	assert_string_equal(e->maps_to, "cpu.cycles");
	assert_non_null(strstr(e->title, "merged"));
	assert_non_null(strstr(e->what, "part 1"));
	assert_non_null(strstr(e->what, "part 2"));
	assert_string_equal(e->reveals[0], "backend-bound"); /* unknown bottleneck names dropped */
	assert_null(e->reveals[1]);
	assert_non_null(strstr(e->sources[0], "perf-list.html"));
	e = pragma_knowledge_get(k2, PRAGMA_KENTRY_REFERENCE, "branch-misses");
	assert_string_equal(e->maps_to, ""); /* an unknown metric is not a mapping */
	pragma_knowledge_free(k2);

	/* the prompts carry the schema, the registry and the bottleneck names */
	assert_non_null(strstr(pragma_knowledge_summarize_prompt(), "maps_to"));
	assert_non_null(strstr(pragma_knowledge_summarize_prompt(), "sim.d1_miss_rate"));
	assert_non_null(strstr(pragma_knowledge_summarize_prompt(), "latency-bound-reduction"));

	pragma_llm_free(llm);
	pragma_rm_rf(dir.data, NULL);
	pragma_buf_release(&dir);
	pragma_buf_release(&spec);
	pragma_buf_release(&doc);
	pragma_buf_release(&out);
	pragma_buf_release(&text);
	pragma_knowledge_free(kb);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(complete), cmocka_unit_test(broken),	cmocka_unit_test(search),
		cmocka_unit_test(prompt_form), cmocka_unit_test(chunking), cmocka_unit_test(build),
	};
	return pragma_run_tests(tests, NULL, NULL);
}
