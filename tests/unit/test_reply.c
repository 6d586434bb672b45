/* Reply parsing: kernels from Coder replies, sections from Conductor replies. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <cmocka.h>

#include "pragma_test.h"

#include "agents/agents_priv.h"
#include "pragma/reply.h"
#include "pragma/template.h"

#define KERNEL                                                                                      \
	"#include \"pragma/kernel.h\"\n"                                                            \
	"// pragma:flags -funroll-loops -ffast-math\n"                                              \
	"// pragma:tune BLOCK=32,64,128 UNROLL=2,4\n"                                               \
	"int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out)\n" \
	"{\n\tconst char *s = \"}\"; /* { */\n\treturn 0;\n}\n"

static int parse(const char *text, int cut, struct pragma_code_reply *r, struct pragma_err *err)
{
	return pragma_reply_parse_code(text, strlen(text), cut, r, err);
}

static void test_single_block(void **state)
{
	struct pragma_code_reply r = PRAGMA_CODE_REPLY_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;

	(void)state;
	assert_int_equal(parse("Here is the kernel:\n\n```c\n" KERNEL "```\n\nIt unrolls the loop.\n", 0, &r, &err), 0);
	assert_string_equal(r.code.data, KERNEL);
	assert_string_equal(r.lang, "c");
	assert_int_equal(r.n_blocks, 1);
	assert_int_equal(r.defines_forward, 1);
	assert_int_equal(r.truncated, 0);
	assert_int_equal(r.n_flags, 2);
	assert_string_equal(r.flags[0], "-funroll-loops");
	assert_string_equal(r.flags[1], "-ffast-math");
	assert_int_equal(r.n_tunables, 2);
	assert_string_equal(r.tunables[0].name, "BLOCK");
	assert_int_equal(r.tunables[0].n_values, 3);
	assert_string_equal(r.tunables[0].values[2], "128");
	assert_string_equal(r.tunables[1].name, "UNROLL");
	assert_string_equal(r.tunables[1].values[1], "4");
	assert_int_equal(r.notes.len, 0);
	pragma_code_reply_release(&r);
}

/* The requests show code numbered ("N | line"); a reply that copied the
 * numbers gets them off, and only a listing numbered 1, 2, 3... does. */
static void test_numbered_copy(void **state)
{
	struct pragma_code_reply r = PRAGMA_CODE_REPLY_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_buf listing = PRAGMA_BUF_INIT, reply = PRAGMA_BUF_INIT;

	(void)state;
	agents_code_listing(KERNEL, &listing);
	assert_true(strstr(listing.data, "1 | #include") == listing.data);
	assert_non_null(strstr(listing.data, "\n2 | // pragma:flags"));
	pragma_buf_addf(&reply, "Plan: unchanged.\n\n```c\n%s```\n", listing.data);
	assert_int_equal(parse(reply.data, 0, &r, &err), 0);
	assert_string_equal(r.code.data, KERNEL);
	assert_int_equal(r.defines_forward, 1);
	assert_int_equal(r.n_flags, 2); /* the directives are read after */
	assert_non_null(strstr(r.notes.data, "line numbers"));
	/* trimmed blank lines ("4 |") and no padding are fine too */
	assert_int_equal(parse("```c\n1 | int pk_forward(void)\n2 |\n3 | { return 0; }\n```\n", 0, &r, &err), 0);
	assert_string_equal(r.code.data, "int pk_forward(void)\n\n{ return 0; }\n");
	/* not a listing: a gap in the numbers, or C that starts with numbers */
	const char *c1 = "```c\n1 | int pk_forward(void)\n3 | { return 0; }\n```\n";
	assert_int_equal(parse(c1, 0, &r, &err), 0);
	assert_non_null(strstr(r.code.data, "3 | {"));
	assert_null(strstr(r.notes.data, "line numbers"));
	const char *c2 = "```c\nint pk_forward(void) { return 0 |\n1 | 2; }\n```\n";
	assert_int_equal(parse(c2, 0, &r, &err), 0);
	assert_string_equal(r.code.data, "int pk_forward(void) { return 0 |\n1 | 2; }\n");
	pragma_code_reply_release(&r);
	pragma_buf_release(&listing);
	pragma_buf_release(&reply);
}

static void test_variants(void **state)
{
	struct pragma_code_reply r = PRAGMA_CODE_REPLY_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;

	(void)state;
	/* No language tag. */
	assert_int_equal(parse("```\n" KERNEL "```", 0, &r, &err), 0);
	assert_string_equal(r.lang, "");
	assert_int_equal(r.defines_forward, 1);
	/* Tildes, CUDA, info after the tag, indentation, CRLF-free. */
	assert_int_equal(parse("  ~~~~cuda title=k.cu\n" KERNEL "  ~~~~\n", 0, &r, &err), 0);
	assert_string_equal(r.lang, "cuda");
	assert_string_equal(r.code.data, KERNEL);
	/* A four-backtick block holding a three-backtick line. */
	assert_int_equal(parse("````c\n// ```\n" KERNEL "````\n", 0, &r, &err), 0);
	assert_int_equal(r.defines_forward, 1);
	assert_non_null(strstr(r.code.data, "// ```"));
	/* C++ tag. */
	assert_int_equal(parse("```C++\n" KERNEL "```", 0, &r, &err), 0);
	assert_string_equal(r.lang, "cpp");
	/* An unfenced reply that is plainly C. */
	assert_int_equal(parse(KERNEL, 0, &r, &err), 0);
	assert_int_equal(r.chosen, -1);
	assert_int_equal(r.n_flags, 2);
	assert_non_null(strstr(r.notes.data, "no fenced code block"));
	pragma_code_reply_release(&r);
}

static void test_several_blocks(void **state)
{
	struct pragma_code_reply r = PRAGMA_CODE_REPLY_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;

	(void)state;
	/* A helper snippet, a shell line, then the kernel: the kernel wins. */
	assert_int_equal(parse("First a helper:\n```c\nstatic inline float relu(float x) { return x > 0 ? x : 0; }\n```\n"
			       "Compile with:\n```sh\ngcc -O3 k.c\n```\nKernel:\n```c\n" KERNEL "```\n",
			       0, &r, &err), 0);
	assert_int_equal(r.n_blocks, 3);
	assert_int_equal(r.chosen, 2);
	assert_string_equal(r.code.data, KERNEL);
	/* Two definitions: the last is the final answer. */
	assert_int_equal(parse("Old:\n```c\nint pk_forward(void) { return 1; }\n```\nNew:\n```c\n" KERNEL "```\n", 0, &r,
			       &err), 0);
	assert_int_equal(r.chosen, 1);
	assert_non_null(strstr(r.notes.data, "2 code blocks define pk_forward"));
	/* A declaration or a mention in a comment is not a definition. */
	assert_int_equal(parse("```c\nint pk_forward(const struct pk_tensor *in, int n);\n// pk_forward(x) { }\n"
			       "const char *s = \"pk_forward() {\";\n```\n", 0, &r, &err), 0);
	assert_int_equal(r.defines_forward, 0);
	assert_non_null(strstr(r.notes.data, "no code block defines pk_forward"));
	/* The largest code block is taken then, not the shell one. */
	assert_int_equal(parse("```c\nint helper(void) { return 0; }\n```\n```bash\nls -la /tmp /var /usr /etc /opt\n```\n",
			       0, &r, &err), 0);
	assert_string_equal(r.lang, "c");
	pragma_code_reply_release(&r);
}

static void test_truncated(void **state)
{
	struct pragma_code_reply r = PRAGMA_CODE_REPLY_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;

	(void)state;
	/* Cut inside the block by the token limit. */
	assert_int_equal(parse("Sure:\n```c\nint pk_forward(const struct pk_tensor *in, int n)\n{\n\tfor (int i = 0;", 1,
			       &r, &err), -1);
	assert_int_equal(r.truncated, 1);
	assert_int_equal(err.kind, PRAGMA_E_NEGATIVE);
	assert_non_null(strstr(err.msg, "cut off by the token limit"));
	assert_non_null(strstr(r.code.data, "for (int i"));
	/* No closing fence and unbalanced braces, even without the flag. */
	assert_int_equal(parse("```c\nint pk_forward(void)\n{\n\tif (x) {\n", 0, &r, &err), -1);
	assert_int_equal(r.truncated, 1);
	/* No closing fence but whole code: accepted, with a note. */
	assert_int_equal(parse("```c\n" KERNEL, 0, &r, &err), 0);
	assert_int_equal(r.truncated, 0);
	assert_non_null(strstr(r.notes.data, "no closing fence"));
	/* Cut before any block began. */
	assert_int_equal(parse("Let me think about the memory layout first. The", 1, &r, &err), -1);
	assert_non_null(strstr(err.msg, "before any code block"));
	/* Prose only. */
	assert_int_equal(parse("I cannot help with that.", 0, &r, &err), -1);
	assert_non_null(strstr(err.msg, "no code block"));
	assert_int_equal(parse("", 0, &r, &err), -1);
	assert_int_equal(pragma_reply_parse_code(NULL, 0, 0, &r, &err), -1);
	pragma_code_reply_release(&r);
}

static void test_directives(void **state)
{
	struct pragma_code_reply r = PRAGMA_CODE_REPLY_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;

	(void)state;
	assert_int_equal(parse("```c\n"
			       "/* pragma:flags -O3 */\n"
			       "//pragma:flags   -march=native\n"
			       "// pragma:tune 1BAD=1,2 GOOD=a,,b, EVIL=$(rm),7 EMPTY= GOOD=9\n"
			       "// pragma:tunes X=1\n"
			       "// pragma:unknown stuff\n"
			       "int pk_forward(void) { return 0; }\n```",
			       0, &r, &err), 0);
	assert_int_equal(r.n_flags, 2);
	assert_string_equal(r.flags[0], "-O3");
	assert_string_equal(r.flags[1], "-march=native");
	assert_int_equal(r.n_tunables, 2);
	assert_string_equal(r.tunables[0].name, "GOOD");
	assert_int_equal(r.tunables[0].n_values, 2);
	assert_string_equal(r.tunables[0].values[1], "b");
	assert_string_equal(r.tunables[1].name, "EVIL");
	assert_int_equal(r.tunables[1].n_values, 1);
	assert_string_equal(r.tunables[1].values[0], "7");
	assert_non_null(strstr(r.notes.data, "1BAD=1,2"));
	assert_non_null(strstr(r.notes.data, "$(rm)"));
	assert_non_null(strstr(r.notes.data, "EMPTY has no values"));
	assert_non_null(strstr(r.notes.data, "GOOD given twice"));
	assert_non_null(strstr(r.notes.data, "unknown directive"));
	pragma_code_reply_release(&r);
}

/* Damaged replies never crash and never read out of bounds (ASan checks). */
static void test_fuzz(void **state)
{
	struct pragma_code_reply r = PRAGMA_CODE_REPLY_INIT;
	struct pragma_conductor_reply c = PRAGMA_CONDUCTOR_REPLY_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	const char *base = "Intro\n```c\n" KERNEL "```\n**Verdict:** improvement\n## Metrics\ncpu.ipc, perf:cycles\n";
	size_t n = strlen(base);
	unsigned seed = 12345;

	(void)state;
	for (size_t cut = 0; cut <= n; cut++) {
		char *t = malloc(cut ? cut : 1);
		memcpy(t, base, cut);
		pragma_reply_parse_code(t, cut, cut % 2, &r, &err);
		pragma_reply_parse_conductor(t, cut, &c, &err);
		free(t);
	}
	for (int k = 0; k < 2000; k++) {
		size_t len = (size_t)(rand_r(&seed) % 300);
		char *t = malloc(len + 1);
		for (size_t i = 0; i < len; i++) {
			static const char alphabet[] = "`~{}()/*\"'\\\n #:pk_forward=,.-VerdictActions";
			t[i] = rand_r(&seed) % 4 ? alphabet[rand_r(&seed) % (sizeof(alphabet) - 1)] : (char)rand_r(&seed);
		}
		pragma_reply_parse_code(t, len, 0, &r, &err);
		pragma_reply_parse_conductor(t, len, &c, &err);
		free(t);
	}
	assert_int_equal(parse("```c\n" KERNEL "```", 0, &r, &err), 0); /* still sane */
	pragma_code_reply_release(&r);
	pragma_conductor_reply_release(&c);
}

static void test_conductor(void **state)
{
	struct pragma_conductor_reply c = PRAGMA_CONDUCTOR_REPLY_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	const char *plain = "Verdict: regression (2.1 ms vs 1.7 ms best)\n"
			    "Bottleneck: memory bound; 38% of peak bandwidth.\n"
			    "Actions:\n1. Use streaming stores.\n2. Block for L2.\n"
			    "Algorithm: none\n"
			    "Metrics: cpu.ipc, roof.bandwidth_pct, perf:LLC-load-misses\n";

	(void)state;
	assert_int_equal(pragma_reply_parse_conductor(plain, strlen(plain), &c, &err), 0);
	assert_int_equal(c.verdict, PRAGMA_VERDICT_REGRESSION);
	assert_string_equal(c.verdict_text.data, "regression (2.1 ms vs 1.7 ms best)");
	assert_string_equal(c.bottleneck.data, "memory bound; 38% of peak bandwidth.");
	assert_string_equal(c.actions.data, "1. Use streaming stores.\n2. Block for L2.");
	assert_int_equal(c.algorithm.len, 0);
	assert_int_equal(c.n_metrics, 3);
	assert_string_equal(c.metrics[0], "cpu.ipc");
	assert_string_equal(c.metrics[2], "perf:LLC-load-misses");
	assert_int_equal(c.missing.len, 0);
	assert_int_equal(c.found, PRAGMA_SECTION_VERDICT | PRAGMA_SECTION_BOTTLENECK | PRAGMA_SECTION_ACTIONS |
					  PRAGMA_SECTION_ALGORITHM | PRAGMA_SECTION_METRICS);

	const char *md = "Looking at the profile...\n\n"
			 "## Verdict\n**Improvement** over the best (1.2x).\n\n"
			 "**Bottleneck:** the inner loop is scalar.\n\n"
			 "- **Actions**:\n  - vectorize with AVX2\n  - unroll by 4\n\n"
			 "### Algorithm\nWinograd F(6,3) instead of direct convolution.\n\n"
			 "## Metrics\n- `static.vector_width`\n- `sim.l1d_miss_rate`\n";
	assert_int_equal(pragma_reply_parse_conductor(md, strlen(md), &c, &err), 0);
	assert_int_equal(c.verdict, PRAGMA_VERDICT_IMPROVEMENT);
	assert_string_equal(c.bottleneck.data, "the inner loop is scalar.");
	assert_non_null(strstr(c.actions.data, "vectorize with AVX2"));
	assert_non_null(strstr(c.actions.data, "unroll by 4"));
	assert_string_equal(c.algorithm.data, "Winograd F(6,3) instead of direct convolution.");
	assert_int_equal(c.n_metrics, 2);
	assert_string_equal(c.metrics[0], "static.vector_width");
	assert_string_equal(c.metrics[1], "sim.l1d_miss_rate");

	/* Missing sections are named; prose mentioning "actions" is not a heading. */
	const char *partial = "The actions taken so far were good.\nVerdict - failure: it does not compile.\n";
	assert_int_equal(pragma_reply_parse_conductor(partial, strlen(partial), &c, &err), 0);
	assert_int_equal(c.verdict, PRAGMA_VERDICT_FAILURE);
	assert_string_equal(c.missing.data, "Bottleneck, Actions");
	assert_int_equal(c.actions.len, 0);

	/* A verdict without a verdict word. */
	const char *vague = "Verdict: hard to say\nActions: try again\nBottleneck: unknown\n";
	assert_int_equal(pragma_reply_parse_conductor(vague, strlen(vague), &c, &err), 0);
	assert_int_equal(c.verdict, PRAGMA_VERDICT_UNKNOWN);
	assert_non_null(strstr(c.missing.data, "verdict word"));

	/* Headings inside a code block do not count. */
	const char *fenced = "```\nVerdict: improvement\n```\nNothing else.";
	assert_int_equal(pragma_reply_parse_conductor(fenced, strlen(fenced), &c, &err), -1);
	assert_int_equal(err.kind, PRAGMA_E_NEGATIVE);
	assert_non_null(strstr(err.msg, "none of the sections"));
	assert_string_equal(pragma_verdict_name(PRAGMA_VERDICT_REGRESSION), "regression");
	pragma_conductor_reply_release(&c);
}

/* Prompt templates: sections, inverted sections, booleans; the
 * --candidates prompt in both of its shapes. */
static void test_template_sections(void **state)
{
	(void)state;
	struct pragma_buf out = PRAGMA_BUF_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	const char *t = "a{{#x}}X{{/x}}{{^x}}Y{{/x}}b";
	json_t *cases[] = { json_pack("{s:b}", "x", 1), json_pack("{s:b}", "x", 0), json_object(),
			    json_pack("{s:s}", "x", ""), json_pack("{s:s}", "x", "s") };
	const char *want[] = { "aXb", "aYb", "aYb", "aYb", "aXb" };

	for (int i = 0; i < 5; i++) {
		pragma_buf_reset(&out);
		assert_int_equal(pragma_template_render(t, cases[i], &out, &err), 0);
		assert_string_equal(out.data, want[i]);
		json_decref(cases[i]);
	}
	json_t *v = json_pack("{s:i, s:b, s:s}", "candidates", 3, "different_algorithms", 1, "roof_pct", "12%");
	pragma_buf_reset(&out);
	assert_int_equal(pragma_template_render_file("coder_candidates.md", v, &out, &err), 0);
	assert_non_null(strstr(out.data, "Write 3 versions"));
	assert_non_null(strstr(out.data, "reaches only 12% of its roofline"));
	assert_null(strstr(out.data, "near its roofline"));
	assert_null(strstr(out.data, "{{"));
	json_object_set_new(v, "different_algorithms", json_false());
	pragma_buf_reset(&out);
	assert_int_equal(pragma_template_render_file("coder_candidates.md", v, &out, &err), 0);
	assert_non_null(strstr(out.data, "near its roofline (12%)"));
	assert_null(strstr(out.data, "different approaches"));
	json_decref(v);
	/* n-pragma's Conductor is promised no profile and asked for no metrics */
	for (int prof = 0; prof < 2; prof++) {
		const char *files[] = { "conductor_system.md", "conductor_system_cuda.md" };
		for (int f = 0; f < 2; f++) {
			v = json_pack("{s:b, s:s}", "profiled", prof, "metric_names", "see the profile");
			pragma_buf_reset(&out);
			assert_int_equal(pragma_template_render_file(files[f], v, &out, &err), 0);
			assert_int_equal(strstr(out.data, "the hardware profile with a rule-based diagnosis") == NULL, !prof);
			assert_int_equal(strstr(out.data, "\nMetrics:") == NULL, !prof);
			assert_int_equal(strstr(out.data, "This run gives you no profile") == NULL, prof);
			assert_null(strstr(out.data, "{{"));
			json_decref(v);
		}
	}
	/* single mode's Coder hears of no Conductor and no profile (a model
	 * player waited for a Conductor the system prompt promised) */
	for (int single = 0; single < 2; single++) {
		const char *files[] = { "coder_system.md", "coder_system_cuda.md" };
		for (int f = 0; f < 2; f++) {
			v = json_pack("{s:b}", "single", single);
			pragma_buf_reset(&out);
			assert_int_equal(pragma_template_render_file(files[f], v, &out, &err), 0);
			assert_int_equal(strstr(out.data, "a Conductor reads that evidence") == NULL, single);
			assert_int_equal(strstr(out.data, "no profile, no Conductor") == NULL, !single);
			json_decref(v);
		}
	}
	pragma_buf_release(&out);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_single_block), cmocka_unit_test(test_numbered_copy), cmocka_unit_test(test_variants), cmocka_unit_test(test_template_sections),
		cmocka_unit_test(test_several_blocks), cmocka_unit_test(test_truncated),
		cmocka_unit_test(test_directives), cmocka_unit_test(test_fuzz),
		cmocka_unit_test(test_conductor),
	};
	return pragma_run_tests(tests, NULL, NULL);
}
