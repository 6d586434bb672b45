/* What the Coder's and the Conductor's requests show, from the complaints of
 * the model players of a trial (lib/agents/prompt.c and the templates under prompts/): a
 * glossary of only the metrics the request shows, cut between entries; code
 * numbered as the compiler and the profile cite it; the attempt limit in
 * every request; the best's code before the last kernel's, under a heading
 * that names it. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "pragma_test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include <unistd.h>

#include "agents/agents_priv.h"
#include "pragma/fs.h"
#include "pragma/template.h"

static void has(const struct pragma_buf *b, const char *want)
{
	if (!b->data || !strstr(b->data, want))
		fail_msg("lacks '%s':\n%s", want, b->data ? b->data : "(empty)");
}

static void lacks(const struct pragma_buf *b, const char *unwanted)
{
	if (b->data && strstr(b->data, unwanted))
		fail_msg("has '%s':\n%s", unwanted, b->data);
}

static struct pragma_knowledge *open_kb(void)
{
	struct pragma_knowledge *kb = NULL;
	struct pragma_err err = PRAGMA_ERR_INIT;

	if (pragma_knowledge_open(&kb, NULL, &err) < 0)
		fail_msg("compendium: %s", err.msg);
	return kb;
}

/* Where an entry for a metric starts in a glossary ("- name ("). */
static const char *entry(const struct pragma_buf *b, const char *name)
{
	char key[128];

	snprintf(key, sizeof(key), "- %s (", name);
	return strstr(b->data, key);
}

static void glossary_shown_metrics_only(void **state)
{
	struct pragma_knowledge *kb = open_kb();
	struct pragma_buf g = PRAGMA_BUF_INIT;
	json_t *metrics = json_pack("{s:{s:f}, s:{s:f}, s:{s:f}, s:{s:f}, s:{s:f}, s:{s:f}}", "time.median_ms", "value", 1.0,
				    "roof.pct_roof", "value", 40.0, "static.stack_spills", "value", 12.0, "sim.d1_misses",
				    "value", 3e6, "static.calls", "value", 0.0, "par.threads", "value", 2.0);
	json_t *extra = json_pack("[s]", "sim.d1_misses");
	json_t *diag = json_pack("[{s:s}]", "bottleneck", "register-spills");
	/* par.threads is in the profile but not in this request's text;
	 * static.loads is one register-spills' playbook points to, absent. */
	const char *shown = "timing\n  time.median_ms 1 ms\n  roof.pct_roof 40%\n  static.stack_spills 12\n"
			    "  static.calls 0\n  sim.d1_misses 3.00M\n(sim.d1_misses_per_call is not a name here)";

	(void)state;
	agents_glossary(kb, metrics, extra, diag, shown, 0, &g);
	has(&g, "Register spills");
	assert_non_null(entry(&g, "time.median_ms"));
	assert_non_null(entry(&g, "static.stack_spills"));
	assert_null(entry(&g, "par.threads"));
	assert_null(entry(&g, "static.loads"));
	/* the asked-for first, then the playbook's, then the table's order */
	assert_true(entry(&g, "sim.d1_misses") < entry(&g, "static.stack_spills"));
	assert_true(entry(&g, "static.stack_spills") < entry(&g, "time.median_ms"));
	assert_true(entry(&g, "time.median_ms") < entry(&g, "roof.pct_roof"));
	lacks(&g, "Left out");

	/* A budget: never over it, never a cut line, the left-out named. */
	size_t full = g.len;
	for (size_t max = 200; max < full; max += 211) {
		pragma_buf_reset(&g);
		agents_glossary(kb, metrics, extra, diag, shown, max, &g);
		assert_true(g.len <= max);
		assert_true(g.len == 0 || g.data[g.len - 1] == '\n');
		if (!entry(&g, "time.median_ms") && g.len)
			has(&g, "time.median_ms"); /* named in the last line */
		if (!entry(&g, "static.stack_spills")) /* a shorter entry never jumps a more relevant one */
			assert_null(entry(&g, "time.median_ms"));
	}
	pragma_buf_reset(&g);
	agents_glossary(kb, metrics, extra, diag, shown, full - 1, &g);
	has(&g, "(Left out for length: the metric");
	has(&g, "static.calls.)\n"); /* the least relevant goes first */
	assert_non_null(entry(&g, "sim.d1_misses"));
	pragma_buf_release(&g);
	json_decref(metrics);
	json_decref(extra);
	json_decref(diag);
	pragma_knowledge_free(kb);
}

/* The listing's line N is the line the compiler calls kernel.c:N, for the
 * file written from the same text (remarks cite kernel.c:49 while the code
 * shown had no numbers). Ten lines and more pad the numbers; a last line
 * without a newline, CRLF and empty lines count as the compiler counts. */
static void listing_lines_are_the_compilers(void **state)
{
	const char *code = "// pragma:flags -O2\r\n#include <stddef.h>\n\n\nstatic int g;\n\n\n\n"
			   "int f(int x)\n{\n\treturn x + g + undeclared_name;\n}";
	char dir[] = "/tmp/pragma-test-listing-XXXXXX", path[128], cmd[400], line[512];
	struct pragma_buf l = PRAGMA_BUF_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	int cited = 0;

	(void)state;
	agents_code_listing(code, &l);
	assert_true(strncmp(l.data, " 1 | // pragma:flags -O2\r\n", 25) == 0);
	has(&l, "\n 3 | \n");
	has(&l, "\n12 | }\n");
	assert_int_equal(l.data[l.len - 1], '\n');
	assert_non_null(mkdtemp(dir));
	snprintf(path, sizeof(path), "%s/kernel.c", dir);
	assert_int_equal(pragma_write_file_atomic(path, code, strlen(code), &err), 0);
	snprintf(cmd, sizeof(cmd), "cd %s && cc -fsyntax-only kernel.c 2>&1", dir);
	FILE *f = popen(cmd, "r");
	assert_non_null(f);
	while (fgets(line, sizeof(line), f)) {
		int n;
		char want[64];
		if (sscanf(line, "kernel.c:%d:", &n) != 1 || !strstr(line, "undeclared_name"))
			continue;
		/* the line the compiler cites, as the listing shows it */
		snprintf(want, sizeof(want), "\n%2d | \treturn x + g + undeclared_name;\n", n);
		has(&l, want);
		cited = 1;
	}
	pclose(f);
	assert_true(cited);
	unlink(path);
	rmdir(dir);
	pragma_buf_release(&l);

	/* Every request that shows numbered code says what the numbers are,
	 * and the Coder's asks for the file without them. */
	static const char *const t[] = { "conductor.md", "coder_refine.md", "single_refine.md" };
	for (size_t i = 0; i < 3; i++) {
		json_t *v = json_pack("{s:s, s:s, s:s, s:i, s:i}", "code", "1 | int x;\n", "listing_note",
				      "NOTE-ABOUT-NUMBERS", "file_name", "kernel.c", "attempt", 2, "max_attempts", 5);
		struct pragma_buf out = PRAGMA_BUF_INIT;
		assert_int_equal(pragma_template_render_file(t[i], v, &out, &err), 0);
		const char *note = strstr(out.data, "NOTE-ABOUT-NUMBERS"), *code_at = strstr(out.data, "1 | int x;");
		if (!note || !code_at || note > code_at)
			fail_msg("%s: no note before the numbered code:\n%s", t[i], out.data);
		if (i)
			has(&out, "without the line numbers");
		pragma_buf_release(&out);
		json_decref(v);
	}
}

static void render(const char *name, json_t *v, struct pragma_buf *out)
{
	struct pragma_err err = PRAGMA_ERR_INIT;

	pragma_buf_reset(out);
	json_object_set_new(v, "listing_note", json_string("(numbered)"));
	if (pragma_template_render_file(name, v, out, &err) < 0)
		fail_msg("%s: %s", name, err.msg);
}

/* a occurs in b, before c */
static void before(const struct pragma_buf *b, const char *a, const char *c)
{
	const char *x = strstr(b->data, a), *y = strstr(b->data, c);

	if (!x || !y || x > y)
		fail_msg("'%s' is not before '%s':\n%s", a, c, b->data);
}

/* The best's code comes before the last kernel's, under a heading that
 * says it is the best and gives its numbers, in every request that shows
 * both (a player missed it after the last kernel's code). */
static void best_before_last_code(void **state)
{
	struct agents_best_view b = { .n = 3, .code = "int best_kernel;\n", .ms = 12.36, .speedup = 1.59,
				      .lo = 1.45, .hi = 1.70 };
	struct pragma_buf out = PRAGMA_BUF_INIT;
	const char *coder[] = { "coder_refine.md", "single_refine.md" };

	(void)state;
	for (int i = 0; i < 2; i++) {
		json_t *v = json_pack("{s:i, s:i}", "attempt", 5, "max_attempts", 5);
		agents_coder_code_vars(v, 5, "int last_kernel;\n", 4, &b);
		render(coder[i], v, &out);
		has(&out, "## The best so far (the historical best): attempt 3 — 12.36 ms, 1.59x [1.45–1.70] over the "
			  "baseline in its own attempt's session\n");
		has(&out, "## Your last kernel (attempt 4)");
		before(&out, "## The best so far", "## Your last kernel (attempt 4)");
		before(&out, "1 | int best_kernel;", "## Your last kernel");
		before(&out, "## Your last kernel", "1 | int last_kernel;");
		json_decref(v);

		/* the last kernel is the best: shown once, and said */
		v = json_pack("{s:i, s:i}", "attempt", 5, "max_attempts", 5);
		agents_coder_code_vars(v, 5, b.code, 4, &(struct agents_best_view){ .n = 4, .code = b.code, .ms = 1, .speedup = 2 });
		render(coder[i], v, &out);
		has(&out, "## Your last kernel (attempt 4), now the best so far");
		lacks(&out, "(the historical best)");
		json_decref(v);

		/* the last reply had no code: the best's, named as the best's */
		v = json_pack("{s:i, s:i}", "attempt", 5, "max_attempts", 5);
		agents_coder_code_vars(v, 5, b.code, 3, &b);
		render(coder[i], v, &out);
		has(&out, "## The best so far (attempt 3): your last reply (attempt 4) held no usable code");
		lacks(&out, "## Your last kernel");
		json_decref(v);

		/* the last kernel's session timed the best too: the heading has
		 * those numbers, the ones the result above it shows (a player
		 * read 39.22 ms here beside 34.95 ms in the result) */
		struct agents_best_view seen = b;
		seen.same_rounds = 1;
		seen.ms = 11.5;
		seen.speedup = 1.71;
		v = json_pack("{s:i, s:i}", "attempt", 5, "max_attempts", 5);
		agents_coder_code_vars(v, 5, "int last_kernel;\n", 4, &seen);
		render(coder[i], v, &out);
		has(&out, "## The best so far (the historical best): attempt 3 — 11.5 ms, 1.71x over the baseline in the "
			  "rounds of your last kernel (attempt 4)\n");
		lacks(&out, "12.36");
		json_decref(v);
	}

	/* The Conductor: section 1 is the best, section 2 the current kernel. */
	json_t *v = json_pack("{s:i, s:i, s:s}", "attempt", 4, "max_attempts", 5, "verdict", "ok");
	agents_conductor_code_vars(v, 4, "int current_kernel;\n", &b);
	render("conductor.md", v, &out);
	has(&out, "## 1. The best so far (the historical best): attempt 3 — 12.36 ms, 1.59x");
	has(&out, "The kernel pragma keeps as the best");
	before(&out, "## 1. The best so far", "## 2. Current kernel (attempt 4)");
	before(&out, "1 | int best_kernel;", "## 2. Current kernel");
	before(&out, "## 2. Current kernel", "1 | int current_kernel;");
	json_decref(v);
	/* measured in this attempt's rounds, and replaced by it */
	b.same_rounds = 1;
	b.replaced = 1;
	v = json_pack("{s:i, s:i, s:s}", "attempt", 4, "max_attempts", 5, "verdict", "ok");
	agents_conductor_code_vars(v, 4, "int current_kernel;\n", &b);
	render("conductor.md", v, &out);
	has(&out, "## 1. The best before this attempt (the historical best): attempt 3 — 12.36 ms, 1.59x over the "
		  "baseline in this attempt's rounds\n");
	has(&out, "replaces it");
	json_decref(v);
	/* the same code: not shown twice */
	b.replaced = 0;
	v = json_pack("{s:i, s:i, s:s}", "attempt", 4, "max_attempts", 5, "verdict", "ok");
	agents_conductor_code_vars(v, 4, b.code, &b);
	render("conductor.md", v, &out);
	has(&out, "Its code is the current kernel's");
	const char *first = strstr(out.data, "int best_kernel;");
	assert_non_null(first);
	assert_null(strstr(first + 1, "int best_kernel;"));
	json_decref(v);
	/* no code this attempt */
	v = json_pack("{s:i, s:i, s:s}", "attempt", 2, "max_attempts", 5, "verdict", "no_code");
	agents_conductor_code_vars(v, 2, NULL, &(struct agents_best_view){ 0 });
	render("conductor.md", v, &out);
	has(&out, "## 1. Current kernel (attempt 2)\n(none");
	lacks(&out, "## 2. Current kernel");
	json_decref(v);
	pragma_buf_release(&out);
}

/* Every request's first line names the attempt and the limit (the first
 * Coder request had no limit; the later ones and the Conductor's did). */
static void attempt_limit_everywhere(void **state)
{
	static const char *const user_prompts[] = { "coder_first.md", "coder_first_cuda.md", "coder_refine.md",
						    "single_refine.md", "conductor.md" };
	struct pragma_err err = PRAGMA_ERR_INIT;

	(void)state;
	for (size_t i = 0; i < sizeof(user_prompts) / sizeof(user_prompts[0]); i++) {
		for (int n = 1; n <= 5; n += 4) {
			json_t *v = json_pack("{s:s, s:s, s:i, s:i, s:s}", "task_name", "18_softmax", "category",
					      "activation", "attempt", n, "max_attempts", 5, "code", "int x;");
			struct pragma_buf out = PRAGMA_BUF_INIT;
			char want[64];
			if (pragma_template_render_file(user_prompts[i], v, &out, &err) < 0)
				fail_msg("%s: %s", user_prompts[i], err.msg);
			snprintf(want, sizeof(want), "# Task: 18_softmax (activation) — attempt %d of 5\n", n);
			if (strncmp(out.data, want, strlen(want)))
				fail_msg("%s starts '%.80s', not '%s'", user_prompts[i], out.data, want);
			pragma_buf_release(&out);
			json_decref(v);
		}
	}
}

/* A section inside a line of text leaves the line's break alone; a
 * section that is its own line takes its line with it (a player read
 * "weigh them with their absolute counts.3. For a failure"). */
static void sections_keep_line_breaks(void **state)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_buf out = PRAGMA_BUF_INIT;
	json_t *t = json_pack("{s:b, s:b}", "t", 1, "f", 0);

	(void)state;
	assert_int_equal(pragma_template_render("a {{#t}}X{{/t}}\nb", t, &out, &err), 0);
	assert_string_equal(out.data, "a X\nb");
	pragma_buf_reset(&out);
	assert_int_equal(pragma_template_render("a {{#f}}X{{/f}}{{^f}}Y{{/f}}\nb", t, &out, &err), 0);
	assert_string_equal(out.data, "a Y\nb");
	pragma_buf_reset(&out);
	assert_int_equal(pragma_template_render("{{#f}}M{{/f}}\nE", t, &out, &err), 0);
	assert_string_equal(out.data, "E");
	pragma_buf_reset(&out);
	assert_int_equal(pragma_template_render("{{#t}}M{{/t}}\n\nE", t, &out, &err), 0);
	assert_string_equal(out.data, "M\n\nE");
	pragma_buf_reset(&out);
	assert_int_equal(pragma_template_render("x\n{{#t}}\nbody\n{{/t}}\ny\n{{#f}}\nno\n{{/f}}\nz", t, &out, &err), 0);
	assert_string_equal(out.data, "x\nbody\ny\nz");
	pragma_buf_release(&out);
	json_decref(t);

	/* The Conductor's system prompt, both ways. */
	for (int prof = 0; prof < 2; prof++) {
		json_t *v = json_pack("{s:b}", "profiled", prof);
		render("conductor_system.md", v, &out);
		has(&out, prof ? "absolute counts.\n3. For a failure" : "say how sure you are.\n3. For a failure");
		has(&out, prof ? "change next.\n\nHow to reason:" : "lower bounds.\n\nHow to reason:");
		has(&out, "no best to compare with: it is an improvement (it becomes the best); give its speedup over the baseline");
		has(&out, "On the run's last attempt the request asks instead for Verdict:, Bottleneck: and Summary:");
		lacks(&out, "from this list");
		if (prof) {
			has(&out, "or one the glossary names).\n");
			has(&out, "(static: 412 vs 318 per element block)");
		} else {
			/* Its example cites no metric the run never shows. */
			lacks(&out, "Metrics:");
			lacks(&out, "static:");
			lacks(&out, "FMA count");
			has(&out, "(an estimate from the code: this run has no profile)");
		}
		pragma_buf_release(&out);
		json_decref(v);
	}
	/* The Coder's system prompt promises a profile only in a run that
	 * makes one (pragma mode), and a Conductor only where there is one. */
	for (int mode = 0; mode < 3; mode++) { /* pragma, n-pragma, single */
		for (int cuda = 0; cuda < 2; cuda++) {
			json_t *v = json_pack("{s:b, s:b}", "profiled", mode == 0, "single", mode == 2);
			render(cuda ? "coder_system_cuda.md" : "coder_system.md", v, &out);
			if (mode == 0)
				has(&out, cuda ? "and profiles it with Nsight Compute; a Conductor" : "and profiles it; a Conductor");
			else
				lacks(&out, "profiles it");
			if (mode == 1)
				has(&out, cuda ? "baseline on the GPU; a Conductor reads" : "baseline; a Conductor reads");
			if (mode == 2)
				has(&out, "(no profile, no Conductor)");
			pragma_buf_release(&out);
			json_decref(v);
		}
	}
	/* Every Coder request says what the task is, in its own words (a
	 * player found the later requests without the task's description). */
	for (int i = 0; i < 2; i++) {
		json_t *v = json_pack("{s:s, s:i, s:i, s:s}", "task_name", "43_conv1d", "attempt", 2, "max_attempts", 5,
				      "task_description", "Standard 1D convolution, kernel 3.");
		render(i ? "single_refine.md" : "coder_refine.md", v, &out);
		has(&out, "attempt 2 of 5\n\nStandard 1D convolution, kernel 3.\n\n## The task's tensors and settings");
		pragma_buf_release(&out);
		json_decref(v);
	}
	/* The Coder is told when its attempt is the last. */
	for (int last = 0; last < 2; last++) {
		json_t *v = json_pack("{s:i, s:i, s:b}", "attempt", 5, "max_attempts", 5, "last", last);
		render("coder_refine.md", v, &out);
		if (last)
			has(&out, "attempt 5 of 5\nThis is the last attempt of the run");
		else
			lacks(&out, "This is the last attempt");
		pragma_buf_release(&out);
		json_decref(v);
	}
	/* Without a profile the Conductor is not asked for metrics that show
	 * the bottleneck (an n-pragma player had none to give). */
	for (int prof = 0; prof < 2; prof++) {
		json_t *v = json_pack("{s:b}", "profiled", prof);
		render("conductor_system.md", v, &out);
		if (prof)
			has(&out, "Bottleneck: one or two sentences naming the bottleneck, with the metrics that show it.");
		else
			has(&out, "Bottleneck: one or two sentences naming the bottleneck, with the numbers and code that "
				  "point to it.");
		pragma_buf_release(&out);
		json_decref(v);
	}
	/* The Coder may overrule instructions that contradict the
	 * measurements, and says so (players followed a misreading). */
	{
		json_t *v = json_pack("{s:s}", "instructions", "Unroll by 8.");
		render("coder_refine.md", v, &out);
		has(&out, "## The Conductor's instructions\nThe Conductor reads the same measurements you are given here, "
			  "and can misread them");
		has(&out, "say in your plan what you did instead and why.\n\nUnroll by 8.");
		pragma_buf_release(&out);
		json_decref(v);
	}
	/* The Conductor before the last attempt is told its actions are the
	 * last carried out; the last one summarizes, the others neither. */
	for (int k = 0; k < 3; k++) {
		json_t *v = json_pack("{s:b, s:b}", "last", k == 2, "next_last", k == 1);
		render("conductor.md", v, &out);
		if (k == 1) {
			has(&out, "The next attempt is the run's last");
			/* variants are a free hedge (a player asked) */
			has(&out, "Tunable variants (`// pragma:tune`) cost no attempt");
		}
		else
			lacks(&out, "The next attempt is the run's last");
		if (k == 2)
			has(&out, "This was the last attempt of the run");
		else
			has(&out, "Answer with Verdict:, Bottleneck:, Actions:");
		pragma_buf_release(&out);
		json_decref(v);
	}
}

/* The numbered sections of a request, in order, must read 1, 2, 3, ...
 * whichever of them it holds; returns how many. */
static int numbered_from_one(const struct pragma_buf *b)
{
	int want = 1;

	for (const char *p = b->data; p && (p = strstr(p, "\n## ")); p++) {
		if (p[4] < '0' || p[4] > '9')
			continue;
		if (atoi(p + 4) != want)
			fail_msg("a section numbered %d where %d was due:\n%s", atoi(p + 4), want, b->data);
		want++;
	}
	return want - 1;
}

/* The Conductor's sections are numbered from 1 whichever it holds (the
 * first request, with no best yet, began at "## 2."), and its text names a
 * section rather than give a number that depends on which are present. */
static void sections_numbered_from_one(void **state)
{
	struct agents_best_view b = { .n = 3, .code = "int best_kernel;\n", .ms = 12.36, .speedup = 1.59,
				      .lo = 1.45, .hi = 1.70 };
	struct pragma_buf out = PRAGMA_BUF_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	json_t *v;

	(void)state;
	/* the template engine's counter: a left-out section takes no number */
	v = json_pack("{s:b, s:b}", "t", 1, "f", 0);
	assert_int_equal(pragma_template_render("{{+}}.a\n{{#f}}{{+}}.b\n{{/f}}{{#t}}{{+}}.c\n{{/t}}{{+}}.d", v,
						&out, &err), 0);
	assert_string_equal(out.data, "1.a\n2.c\n3.d");
	pragma_buf_release(&out);
	json_decref(v);

	/* attempt 1: it failed, no best, no profile */
	v = json_pack("{s:i, s:i, s:s, s:s}", "attempt", 1, "max_attempts", 5, "verdict", "compile_error",
		      "error_causes", "- a cause");
	agents_conductor_code_vars(v, 1, "int current_kernel;\n", &(struct agents_best_view){ 0 });
	render("conductor.md", v, &out);
	has(&out, "## 1. Current kernel (attempt 1)\n");
	has(&out, "## 2. Verdict of the Verifier\n");
	assert_int_equal(numbered_from_one(&out), 2);
	pragma_buf_release(&out);
	json_decref(v);

	/* attempt 1 correct and profiled: no best's sections */
	v = json_pack("{s:i, s:i, s:s, s:s, s:s, s:s}", "attempt", 1, "max_attempts", 5, "verdict", "ok",
		      "profile", "P", "diagnosis", "D", "knowledge", "K");
	agents_conductor_code_vars(v, 1, "int current_kernel;\n", &(struct agents_best_view){ 0 });
	render("conductor.md", v, &out);
	has(&out, "## 3. Profile of the current kernel\n");
	has(&out, "## 5. What these metrics mean\n");
	assert_int_equal(numbered_from_one(&out), 5);
	pragma_buf_release(&out);
	json_decref(v);

	/* everything, and the best (the same code or other code) */
	for (int same = 0; same < 2; same++) {
		v = json_pack("{s:i, s:i, s:s, s:s, s:s, s:s, s:s, s:s}", "attempt", 4, "max_attempts", 5, "verdict",
			      "ok", "profile", "P", "diagnosis", "D", "knowledge", "K", "best_profile", "BP",
			      "comparison", "C");
		agents_conductor_code_vars(v, 4, same ? b.code : "int current_kernel;\n", &b);
		render("conductor.md", v, &out);
		has(&out, "## 1. The best so far");
		has(&out, "## 8. Current vs best, metric by metric\n");
		assert_int_equal(numbered_from_one(&out), 8);
		has(&out, "the current kernel (section \"Current kernel\" below)");
		lacks(&out, "section 2");
		pragma_buf_release(&out);
		json_decref(v);
	}

	/* an unprofiled run with a best: the best's sections, no profile */
	v = json_pack("{s:i, s:i, s:s}", "attempt", 4, "max_attempts", 5, "verdict", "ok");
	agents_conductor_code_vars(v, 4, "int current_kernel;\n", &b);
	render("conductor.md", v, &out);
	has(&out, "## 3. Verdict of the Verifier\n");
	assert_int_equal(numbered_from_one(&out), 3);
	pragma_buf_release(&out);
	json_decref(v);

	/* The Conductor is told the Coder sees no section numbers. */
	for (int cuda = 0; cuda < 2; cuda++) {
		v = json_pack("{s:b}", "profiled", 1);
		render(cuda ? "conductor_system_cuda.md" : "conductor_system.md", v, &out);
		has(&out, "The Coder does not see this request's section numbers: name code by its attempt");
		pragma_buf_release(&out);
		json_decref(v);
	}

	/* No request names a section by a number. */
	static const char *const all[] = { "coder_first.md", "coder_first_cuda.md", "coder_refine.md",
					   "single_refine.md", "coder_candidates.md", "conductor.md",
					   "conductor_system.md", "conductor_system_cuda.md", "coder_system.md",
					   "coder_system_cuda.md" };
	for (size_t i = 0; i < sizeof(all) / sizeof(all[0]); i++) {
		v = json_pack("{s:i, s:i, s:s, s:b, s:i}", "attempt", 2, "max_attempts", 5, "verdict", "ok",
			      "profiled", 1, "candidates", 2);
		agents_conductor_code_vars(v, 2, "int x;\n", &b);
		render(all[i], v, &out);
		for (const char *p = out.data; (p = strstr(p, "section ")); p++)
			if (p[8] >= '0' && p[8] <= '9')
				fail_msg("%s names a section by its number: '%.40s'", all[i], p);
		numbered_from_one(&out);
		pragma_buf_release(&out);
		json_decref(v);
	}
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(glossary_shown_metrics_only),
		cmocka_unit_test(attempt_limit_everywhere),
		cmocka_unit_test(listing_lines_are_the_compilers),
		cmocka_unit_test(best_before_last_code),
		cmocka_unit_test(sections_keep_line_breaks),
		cmocka_unit_test(sections_numbered_from_one),
	};

	return pragma_run_tests(tests, NULL, NULL);
}
