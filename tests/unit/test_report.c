/* Reports from hand-made runs: log ticks, the historical best as the loop
 * held it, the Fig. 4 SVG (points, failures, the best-so-far values, the
 * final speedup), Fig. 3 series, Table I with spreads and the two groups
 * apart, Markdown fences, and HTML escaping of everything stored. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "pragma_test.h"
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pragma/report.h"
#include "report/report_priv.h"

/* One attempt: status, speedup (0: none), vs_best_lo (0: not compared). */
struct att {
	const char *status;
	double speedup, vs_lo;
	const char *message;
};

static json_t *mk_run(const char *id, const char *task, const char *category, const char *kind, const char *mode,
		      int traj, const struct att *a, int n, int best, double final, const char *code)
{
	json_t *atts = json_array();

	for (int i = 0; i < n; i++) {
		json_t *x = json_pack("{s:i, s:i, s:s, s:s, s:s, s:b}", "n", i + 1, "candidate", 0, "status", a[i].status,
				      "stage", "done", "message", a[i].message ? a[i].message : "", "is_best", i + 1 == best);
		if (a[i].speedup > 0) {
			json_object_set_new(x, "speedup", json_real(a[i].speedup));
			json_object_set_new(x, "time_ms", json_real(10 / a[i].speedup));
			json_object_set_new(x, "metrics",
					    json_pack("{s:{s:f, s:s}, s:{s:f, s:s}}", "roof.pct_roof", "value", 10 * a[i].speedup,
						      "unit", "%", "static.fma", "value", i * 4.0, "unit", "count"));
		}
		if (a[i].vs_lo > 0)
			json_object_set_new(x, "speedup_spread",
					    json_pack("{s:f, s:f, s:f, s:i}", "vs_best", a[i].vs_lo + 0.1, "vs_best_lo", a[i].vs_lo,
						      "vs_best_hi", a[i].vs_lo + 0.2, "vs_best_attempt", 2));
		json_object_set_new(x, "conductor",
				    json_pack("{s:s, s:s, s:s, s:[s]}", "verdict", a[i].speedup > 0 ? "improvement" : "failure",
					      "bottleneck", "memory bound <b>here</b>", "actions", "1. tile the loop",
					      "metrics", "static.fma"));
		if (i + 1 == best && code)
			json_object_set_new(x, "code", json_string(code));
		json_array_append_new(atts, x);
	}
	json_t *run = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:{s:i, s:i}, s:{s:s, s:{s:f}}, s:o, s:{s:i, s:i, s:f}}",
				"id", id, "task_name", task, "task_path", task, "category", category, "task_kind", kind, "mode", mode, "llm",
				"openai:test-model at http://x", "status", "done", "config", "attempts", n, "trajectory", traj,
				"baseline", "kind", strcmp(kind, "native") ? "pytorch" : "c", "stats", "median", 10.0,
				"attempts", atts, "llm_calls", "prompt_tokens", 1000, "completion_tokens", 200, "cost", 0.01);
	if (best) {
		json_object_set_new(run, "best_attempt", json_integer(best));
		json_object_set_new(run, "summary",
				    json_pack("{s:{s:f, s:{s:f, s:f, s:s}}, s:s}", "best", "speedup", final, "speedup_spread",
					      "lo", final * 0.9, "hi", final * 1.1, "method", "IQR of 9 interleaved rounds",
					      "stop_reason", "attempt budget used"));
	}
	return run;
}

static const struct att session[] = {
	{ "compile_error", 0, 0, "kernel.c:3: error: <expected> ';'" },
	{ "ok", 1.5, 0, NULL },
	{ "ok", 2.0, 0.95, NULL },  /* faster on its own, but inside the spread: best kept */
	{ "ok", 2.5, 1.2, NULL },   /* beats the best interleaved: new best */
	{ "wrong_output", 0, 0, "output[0] wrong" },
};

static const char evil_code[] = "// </code></pre><script>alert(1)</script>\n"
				"/* ```c fences ``` inside */\nint pk_forward(void) { return 1 < 2 && 3 > 2; }\n";

static int count(const char *hay, const char *needle)
{
	int n = 0;

	for (const char *p = hay; (p = strstr(p, needle)); p += strlen(needle))
		n++;
	return n;
}

/* Markdown with runs of spaces squeezed: table rows without their padding. */
static char *squeeze(const char *s)
{
	char *o = malloc(strlen(s) + 1), *p = o;

	for (; *s; s++)
		if (!(*s == ' ' && p > o && p[-1] == ' '))
			*p++ = *s;
	*p = 0;
	return o;
}

static json_t *one_run_model(void)
{
	json_t *src = json_pack("[o]", mk_run("r20260101-000000-aaaa", "softmax", "activation", "kernelbench", "pragma", 0,
					       session, 5, 4, 2.4, evil_code));
	struct pragma_err err = PRAGMA_ERR_INIT;
	json_t *model = pragma_report_model(src, &err);

	assert_non_null(model);
	json_decref(src);
	return model;
}

static void log_ticks(void **state)
{
	double t[24];
	int n;

	(void)state;
	n = svg_log_ticks(0.4, 3.2, t, 24);
	assert_int_equal(n, 6); /* 1-2-5 gives only 0.5 1 2: the denser 0.5 0.7 1 1.5 2 3 */
	for (int i = 0; i < n; i++)
		assert_true(t[i] >= 0.4 && t[i] <= 3.2);
	n = svg_log_ticks(0.05, 40, t, 24);
	assert_int_equal(n, 9); /* 0.05 0.1 0.2 0.5 1 2 5 10 20 */
	n = svg_log_ticks(1.1, 1.6, t, 24);
	assert_true(n >= 2);
	for (int i = 0; i < n; i++)
		assert_true(t[i] >= 1.1 && t[i] <= 1.6);
	assert_int_equal(svg_log_ticks(2, 1, t, 24), 0);
}

static void best_so_far(void **state)
{
	json_t *run = mk_run("r1", "t", "activation", "kernelbench", "pragma", 0, session, 5, 4, 2.4, NULL);
	json_t *atts = report_attempts(run);
	int bn[5];
	double bx[5];

	(void)state;
	report_best_so_far(atts, bn, bx);
	assert_int_equal(bn[0], 0);
	assert_true(isnan(bx[0]));
	assert_int_equal(bn[1], 2);
	assert_int_equal(bn[2], 2); /* 2.0x alone, but lost the interleaved comparison */
	assert_true(bx[2] == 1.5);
	assert_int_equal(bn[3], 4);
	assert_true(bx[3] == 2.5);
	assert_int_equal(bn[4], 4);
	json_decref(atts);
	json_decref(run);
}

static void fig4_svg(void **state)
{
	json_t *model = one_run_model();
	struct pragma_buf b = PRAGMA_BUF_INIT;

	(void)state;
	report_svg_attempts(&b, model, json_array_get(json_object_get(model, "tasks"), 0));
	assert_int_equal(count(b.data, "<svg "), 1);
	assert_int_equal(count(b.data, "</svg>"), 1);
	/* three correct attempts drawn, the best one marked; two failures */
	assert_int_equal(count(b.data, "class=\"pt"), 3);
	assert_int_equal(count(b.data, "class=\"pt bestpt\""), 1);
	assert_int_equal(count(b.data, "class=\"fail\""), 2);
	assert_non_null(strstr(b.data, "attempt 1: compile_error: kernel.c:3: error: &lt;expected&gt; &#39;;&#39;"));
	/* the best-so-far line, value by value */
	assert_non_null(strstr(b.data, "data-best=\"nan 1.500 1.500 2.500 2.500\""));
	assert_int_equal(count(b.data, "class=\"best\""), 1);
	/* the final interleaved speedup with its spread */
	assert_int_equal(count(b.data, "class=\"final\""), 1);
	assert_int_equal(count(b.data, "class=\"spread\""), 1);
	assert_non_null(strstr(b.data, "final speedup of the best kernel 2.40x (spread: interquartile range (older run), "
				       "2.16x–2.64x)"));
	/* the 1x reference line on a log axis */
	assert_int_equal(count(b.data, "class=\"ref\""), 1);
	assert_non_null(strstr(b.data, ">1x</text>"));
	pragma_buf_release(&b);
	json_decref(model);
}

static void html_escapes_and_is_self_contained(void **state)
{
	json_t *model = one_run_model();
	struct pragma_buf b = PRAGMA_BUF_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;

	(void)state;
	assert_int_equal(pragma_report_render(model, PRAGMA_REPORT_HTML, "/tmp/<db>", &b, &err), 0);
	/* the kernel source, stored text and the origin are escaped */
	assert_null(strcasestr(b.data, "<script"));
	assert_non_null(strstr(b.data, "&lt;/code&gt;&lt;/pre&gt;&lt;script&gt;alert(1)&lt;/script&gt;"));
	assert_non_null(strstr(b.data, "return 1 &lt; 2 &amp;&amp; 3 &gt; 2;"));
	assert_non_null(strstr(b.data, "memory bound &lt;b&gt;here&lt;/b&gt;"));
	assert_non_null(strstr(b.data, "/tmp/&lt;db&gt;"));
	assert_null(strstr(b.data, "<b>here"));
	/* nothing fetched: no external references of any kind */
	assert_null(strstr(b.data, " src="));
	assert_null(strstr(b.data, "href=\"http"));
	assert_null(strstr(b.data, "@import"));
	assert_null(strstr(b.data, "url("));
	assert_int_equal(count(b.data, "http"), count(b.data, "xmlns=\"http://www.w3.org/2000/svg\""));
	/* structure: one Fig. 4, one Fig. 3, a table of contents linking the task */
	assert_int_equal(count(b.data, "class=\"plot fig4\""), 1);
	assert_int_equal(count(b.data, "class=\"plot fig3\""), 1);
	assert_non_null(strstr(b.data, "<a href=\"#task-softmax\">softmax</a>"));
	assert_non_null(strstr(b.data, "id=\"task-softmax\""));
	/* the trace: historical best vs current, per round */
	assert_non_null(strstr(b.data, "historical best (#2)"));
	assert_non_null(strstr(b.data, "current (#4)"));
	assert_true(strstr(b.data, "</html>") != NULL);
	pragma_buf_release(&b);
	json_decref(model);
}

static void markdown_single(void **state)
{
	json_t *model = one_run_model();
	struct pragma_buf b = PRAGMA_BUF_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;

	(void)state;
	assert_int_equal(pragma_report_render(model, PRAGMA_REPORT_MARKDOWN, NULL, &b, &err), 0);
	char *sq = squeeze(b.data);
	/* Table I from lib/bench: one correct task at 2.4x */
	assert_non_null(strstr(sq, "| Success (correct kernel) | 100.0% |"));
	assert_non_null(strstr(sq, "| fast_2 (correct, speedup > 2) | 100.0% |"));
	assert_non_null(strstr(sq, "| geometric mean speedup (correct kernels) | 2.40x |"));
	assert_non_null(strstr(sq, "| median fraction of roofline (best kernels) | 25.0% |"));
	assert_non_null(strstr(sq, "| tokens per task | 1200 |"));
	assert_null(strstr(sq, "Native C tasks"));
	/* the attempts table: failures, the best so far, the interleaved
	 * comparisons (this older store's brackets are interquartile ranges,
	 * and say so), the measurement's decision */
	assert_non_null(strstr(sq, "| 1 | compile_error | - | - | ✗ | - | compile_error | - |"));
	assert_non_null(strstr(sq, "| 3 | ok | 5.000 | 2.00x | ████████████████ | 1.05x vs #2 [0.95–1.15] (older run: "
				   "interquartile range) | best kept | #2 (1.50x) |"));
	assert_non_null(strstr(sq, "| 4 | ok | 4.000 | 2.50x |"));
	assert_non_null(strstr(sq, "| new best | #4 (2.50x) | best kernel. |"));
	/* the final speedup's bracket, named for what the older run stored */
	assert_non_null(strstr(b.data, "final speedup 2.40x (spread: interquartile range (older run), 2.16x–2.64x)"));
	assert_null(strstr(b.data, "95% interval 2.16x"));
	/* the trace reads like Listing 1: the measurement's word, then the
	 * Conductor's */
	assert_non_null(strstr(b.data, "Attempt 3: best kept — the Conductor's verdict: improvement\nHistorical best (attempt "
				       "2):\n  speedup                = 1.50x\n"));
	assert_non_null(strstr(b.data, "  1.05x the best's speed, measured interleaved with attempt 2 (interquartile range, "
				       "older run:\n  0.95–1.15): inside the range, best kept\n"));
	assert_non_null(strstr(b.data, "Attempt 4: new best — the Conductor's verdict: improvement\n"));
	assert_non_null(strstr(b.data, "Analysis:\n  memory bound <b>here</b>\n"));
	/* profile: best vs first correct, metric by metric, after each
	 * attempt's session time */
	assert_non_null(strstr(sq, "| time (its attempt's timing session) | 6.667 ms | 4.000 ms | better |"));
	assert_non_null(strstr(sq, "| % of roofline | 15.0% | 25.0% | better |"));
	assert_non_null(strstr(sq, "| FMA instructions | 4 | 12 | better |"));
	/* the source in a fence longer than the ``` it holds */
	assert_non_null(strstr(b.data, "````c\n// </code></pre><script>alert(1)</script>\n"));
	assert_non_null(strstr(b.data, "return 1 < 2 && 3 > 2; }\n````\n"));
	free(sq);
	pragma_buf_release(&b);
	json_decref(model);
}

/* A run as today's loop stores it (DESIGN 3.5): each correct attempt timed
 * in one session with the baseline and the best (speedup with a 95%
 * interval, vs_best with the session's verdict), a final comparison of its
 * own, a Winograd-style best (fewer FMAs, the task's FLOP count above the
 * FP32 peak, 112% of the bandwidth roof), the model's replies replayed from
 * a recording, and a Conductor whose own verdict disagrees with the
 * measurement. */
static json_t *session_run(void)
{
	const char *m95 = "95% interval: a bootstrap over the session's sessions and rounds";
	json_t *atts = json_pack(
		"[{s:i, s:i, s:s, s:s, s:s, s:b, s:f, s:f, s:f, s:{s:f, s:f, s:s},"
		"  s:{s:{s:f, s:s}, s:{s:f, s:s}, s:{s:f, s:s}, s:{s:f, s:s}, s:{s:f, s:s}},"
		"  s:{s:s, s:s, s:s, s:[s]}},"
		" {s:i, s:i, s:s, s:s, s:s, s:b, s:f, s:f, s:f, s:{s:f, s:f, s:s},"
		"  s:{s:i, s:f, s:f, s:f, s:s, s:f, s:f, s:b},"
		"  s:{s:{s:f, s:s}, s:{s:f, s:s}, s:{s:f, s:s}, s:{s:f, s:s}, s:{s:f, s:s}, s:{s:f, s:s}},"
		"  s:{s:s, s:s, s:s, s:[s]}, s:s},"
		" {s:i, s:i, s:s, s:s, s:s, s:b, s:f, s:f, s:f, s:{s:f, s:f, s:s},"
		"  s:{s:i, s:f, s:f, s:f, s:s, s:f, s:f, s:b},"
		"  s:{s:s, s:s, s:s, s:s, s:b}}]",
		/* 1: the direct convolution */
		"n", 1, "candidate", 0, "status", "ok", "stage", "done", "message", "", "is_best", 0, "time_ms", 20.0,
		"baseline_ms", 30.0, "speedup", 1.5, "speedup_spread", "lo", 1.4, "hi", 1.6, "method", m95, "metrics",
		"time.median_ms", "value", 18.25, "unit", "ms", "static.fma", "value", 48.0, "unit", "count",
		"roof.pct_roof", "value", 40.0, "unit", "%", "roof.pct_peak_flops", "value", 40.0, "unit", "%",
		"roof.pct_peak_bw", "value", 30.0, "unit", "%", "conductor", "verdict", "improvement", "bottleneck",
		"compute bound", "actions", "1. use Winograd", "metrics", "time.median_ms",
		/* 2: Winograd, faster in its session: the new best, whatever the
		 * Conductor said */
		"n", 2, "candidate", 0, "status", "ok", "stage", "done", "message", "", "is_best", 1, "time_ms", 17.286,
		"baseline_ms", 30.0, "speedup", 1.74, "speedup_spread", "lo", 1.6, "hi", 1.9, "method", m95, "vs_best",
		"attempt", 1, "ratio", 1.16, "lo", 1.08, "hi", 1.24, "verdict", "faster", "best_ms", 20.1, "best_speedup",
		1.49, "same_build", 0, "metrics", "time.median_ms", "value", 15.714, "unit", "ms", "static.fma", "value",
		12.0, "unit", "count", "roof.pct_roof", "value", 112.0, "unit", "%", "roof.flops_over_peak", "value",
		1.33, "unit", "x", "roof.pct_peak_bw", "value", 112.0, "unit", "%", "roof.gbs", "value", 40.0, "unit",
		"GB/s", "conductor", "verdict", "regression", "bottleneck", "fewer multiplies", "actions",
		"1. tile the transforms", "metrics", "time.median_ms", "code", "int winograd;",
		/* 3: the same build again */
		"n", 3, "candidate", 0, "status", "ok", "stage", "done", "message", "", "is_best", 0, "time_ms", 17.31,
		"baseline_ms", 30.0, "speedup", 1.73, "speedup_spread", "lo", 1.6, "hi", 1.88, "method", m95, "vs_best",
		"attempt", 2, "ratio", 1.0, "lo", 0.97, "hi", 1.03, "verdict", "the same build", "best_ms", 17.3,
		"best_speedup", 1.73, "same_build", 1, "conductor", "verdict", "improvement", "bottleneck", "",
		"actions", "", "summary", "Winograd was the step that counted", "last", 1);
	json_t *run = json_pack("{s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:s, s:{s:i, s:i, s:s}, s:{s:s, s:{s:f}}, s:o,"
				" s:{s:i, s:i, s:f}, s:i}",
				"id", "r20260102-000000-cccc", "task_name", "conv2d", "task_path", "conv2d", "category",
				"convolution", "task_kind", "kernelbench", "mode", "pragma", "llm", "replay:/rec/conv.jsonl",
				"status", "done", "config", "attempts", 3, "trajectory", 0, "llm_spec",
				"replay:/rec/conv.jsonl", "baseline", "kind", "pytorch", "stats", "median", 30.0, "attempts",
				atts, "llm_calls", "prompt_tokens", 1000, "completion_tokens", 200, "cost", 0.0, "best_attempt",
				2);
	json_object_set_new(run, "summary",
			    json_pack("{s:{s:i, s:f, s:f, s:{s:f, s:f, s:s}, s:{s:f, s:f, s:i, s:i, s:i, s:f, s:b},"
				      " s:{s:f, s:f, s:f, s:f}}, s:s}",
				      "best", "attempt", 2, "speedup", 1.8, "time_ms", 16.9, "speedup_spread", "lo", 1.7, "hi",
				      1.9, "method", "95% interval: a bootstrap over the final comparison's sessions and rounds",
				      "final", "time_ms", 16.9, "baseline_ms", 30.4, "rounds", 9, "rounds_made", 15,
				      "rounds_clean", 14, "worst_run_delay_share", 0.04, "busy", 0, "in_its_attempt",
				      "speedup", 1.74, "lo", 1.6, "hi", 1.9, "time_ms", 17.286, "stop_reason",
				      "attempt budget (3) used"));
	assert_non_null(run);
	return run;
}

/* Every line of text holding needle also holds one of the words. */
static void every_line_with(const char *text, const char *needle, const char *const *words, int nw)
{
	for (const char *p = text; (p = strstr(p, needle)); p += strlen(needle)) {
		const char *a = p, *z = strchr(p, '\n');
		int found = 0;
		while (a > text && a[-1] != '\n')
			a--;
		if (!z)
			z = p + strlen(p);
		for (int w = 0; w < nw; w++) {
			const char *q = strstr(a, words[w]);
			found |= q && q < z;
		}
		if (!found)
			fail_msg("a line shows %s without %s: %.*s", needle, words[0], (int)(z - a), a);
	}
}

static void report_agrees_with_measurements(void **state)
{
	json_t *src = json_pack("[o]", session_run()), *model, *dec;
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_buf b = PRAGMA_BUF_INIT, h = PRAGMA_BUF_INIT;
	static const char *const profiled[] = { "profiled run" };
	static const char *const explained[] = { " *", "†", "bandwidth roof" };

	(void)state;
	model = pragma_report_model(src, &err);
	assert_non_null(model);
	assert_int_equal(pragma_report_render(model, PRAGMA_REPORT_MARKDOWN, NULL, &b, &err), 0);
	char *sq = squeeze(b.data);

	/* One time per attempt: attempt 2's session time in the attempts
	 * table, the trace and the profile table; the profiled run's own time
	 * only ever labelled as that. */
	assert_non_null(strstr(sq, "| 2 | ok | 17.286 | 1.74x [1.60–1.90] |"));
	assert_non_null(strstr(b.data, "  time (its session)     = 17.286 ms\n"));
	assert_non_null(strstr(sq, "| time (its attempt's timing session) | 20.000 ms | 17.286 ms | better |"));
	assert_true(count(b.data, "17.286") >= 5);
	assert_non_null(strstr(b.data, "15.714"));
	every_line_with(b.data, "15.714", profiled, 1);
	every_line_with(b.data, "18.250", profiled, 1);

	/* Roofline fractions above 100% explained where they appear: Table I,
	 * the task's line, the profile table, the trace. */
	assert_non_null(strstr(sq, "| median fraction of roofline (best kernels) | 112.0% † ‡ |"));
	assert_non_null(strstr(b.data, "† 1 roofline fraction is above 100%"));
	assert_non_null(strstr(b.data, "‡ 1 best kernel runs the task's FLOP count above the FP32 peak"));
	assert_non_null(strstr(b.data, "112.0% of its roofline (bandwidth roof: the task's FLOP count runs at 1.33x the "
				       "FP32 peak"));
	assert_non_null(strstr(sq, "| % of roofline | 40.0% | 112.0% * |"));
	assert_non_null(strstr(b.data, "\\* % of roofline: #2: bandwidth roof"));
	assert_non_null(strstr(b.data, "above 100%: it moved the task's minimal bytes faster"));
	every_line_with(b.data, "112.0%", explained, 3);

	/* The FMA count fell because Winograd does fewer multiplies: not
	 * "worse". */
	assert_non_null(strstr(sq, "| FMA instructions | 48 | 12 | changed with the algorithm |"));
	{
		static const char *const not_worse[] = { "changed with the algorithm" };
		every_line_with(b.data, "| FMA instructions", not_worse, 1);
	}

	/* Badges are the measurement's, the Conductor's word beside them, and
	 * its replayed text is marked as recorded elsewhere. */
	assert_non_null(strstr(b.data, "Attempt 2: new best — the Conductor's verdict: regression (recorded)\n"));
	assert_non_null(strstr(b.data, "Attempt 3: the same build — the Conductor's verdict: improvement (recorded)\n"));
	assert_non_null(strstr(b.data, "> The Conductor's text in this run was recorded on another machine"));
	assert_non_null(strstr(b.data, "Summary of the run:\n  Winograd was the step that counted\n"));
	assert_non_null(strstr(sq, "| 1.16x vs #1 [1.08–1.24], faster | new best | #2 (1.74x) |"));
	assert_non_null(strstr(sq, "| 1.00x vs #2 [0.97–1.03], the same build | the same build | #2 (1.73x in this session) |"));
	dec = pragma_report_decisions(json_array_get(src, 0));
	assert_int_equal(json_array_size(dec), 3);
	assert_string_equal(report_str(json_array_get(dec, 0), "badge"), "new best");
	assert_string_equal(report_str(json_array_get(dec, 1), "badge"), "new best");
	assert_string_equal(report_str(json_array_get(dec, 1), "conductor"), "regression");
	assert_string_equal(report_str(json_array_get(dec, 2), "badge"), "the same build");
	assert_true(json_is_true(json_object_get(json_array_get(dec, 2), "same_build")));
	json_decref(dec);

	/* Intervals as the timing layer computes them. */
	assert_non_null(strstr(b.data, "final speedup 1.80x (95% interval 1.70x–1.90x), from the final comparison "
				       "(16.900 ms against the baseline's 30.400 ms): 14 of 15 rounds undisturbed"));
	assert_non_null(strstr(b.data, "in its own attempt's session 1.74x [1.60x–1.90x] at 17.286 ms"));
	/* (the sources section alone names the older runs' ranges) */
	assert_non_null(strstr(b.data, "## Where the numbers come from"));
	*strstr(b.data, "## Where the numbers come from") = '\0';
	assert_null(strcasestr(b.data, "interquartile"));
	assert_null(strstr(b.data, "IQR"));
	assert_null(strcasestr(b.data, "middle half"));

	/* The HTML says the same. */
	assert_int_equal(pragma_report_render(model, PRAGMA_REPORT_HTML, NULL, &h, &err), 0);
	assert_non_null(strstr(h.data, "<span class=\"badge newbest\">new best</span><span class=\"cverdict\">the "
				       "Conductor's verdict: regression (recorded)</span>"));
	assert_non_null(strstr(h.data, "<span class=\"badge samebuild\">the same build</span>"));
	assert_non_null(strstr(h.data, "<p class=\"recorded\">The Conductor's text in this run was recorded on another "
				       "machine"));
	assert_non_null(strstr(h.data, "112.0% *"));
	assert_non_null(strstr(h.data, "<p class=\"note\">* % of roofline: #2: bandwidth roof"));
	assert_non_null(strstr(h.data, "† 1 roofline fraction is above 100%"));
	assert_non_null(strstr(h.data, "changed with the algorithm"));
	assert_non_null(strstr(h.data, "final speedup of the best kernel 1.80x (95% interval 1.70x–1.90x)"));
	assert_null(strstr(h.data, "badge improvement"));
	assert_null(strstr(h.data, "badge regression"));
	assert_non_null(strstr(h.data, "<section id=\"sources\">"));
	*strstr(h.data, "<section id=\"sources\">") = '\0';
	assert_null(strcasestr(h.data, "interquartile"));
	assert_null(strcasestr(h.data, "middle half"));

	free(sq);
	pragma_buf_release(&b);
	pragma_buf_release(&h);
	json_decref(model);
	json_decref(src);
}

/* A suite of two trajectories (a KernelBench task and a native one) next to
 * a single run: the groups stay apart, spreads show, series compare. */
static void compare_groups_spreads(void **state)
{
	static const struct att ok20[] = { { "ok", 2.0, 0, NULL } }, ok30[] = { { "ok", 3.0, 0, NULL } };
	static const struct att bad[] = { { "wrong_output", 0, 0, "x" } }, ok12[] = { { "ok", 1.2, 0, NULL } };
	static const struct att ok15[] = { { "ok", 1.5, 0, NULL } };
	/* gelu is in the suite but never ran: it counts against Success, as in
	 * `pragma bench` */
	json_t *suite = json_pack("{s:s, s:s, s:s, s:s, s:s, s:{s:i, s:[{s:s, s:s, s:s, s:s}, {s:s, s:s, s:s, s:s},"
				  " {s:s, s:s, s:s, s:s}]}, s:[o, o, o, o]}",
				  "id", "s20260101-000000-bbbb", "mode", "pragma", "llm", "openai:m", "status", "done",
				  "suite_path", "tasks/x", "config", "repeat", 2, "tasks", "name", "relu", "path", "relu",
				  "category", "activation", "kind", "kernelbench", "name", "stencil", "path", "stencil", "category",
				  "others", "kind", "native", "name", "gelu", "path", "gelu", "category", "activation", "kind",
				  "kernelbench", "runs",
				  mk_run("r-a1", "relu", "activation", "kernelbench", "pragma", 0, ok20, 1, 1, 2.0, "int a;"),
				  mk_run("r-a2", "relu", "activation", "kernelbench", "pragma", 1, ok30, 1, 1, 3.0, "int b;"),
				  mk_run("r-n1", "stencil", "others", "native", "pragma", 0, bad, 1, 0, 0, NULL),
				  mk_run("r-n2", "stencil", "others", "native", "pragma", 1, ok12, 1, 1, 1.2, "int c;"));
	json_t *src = json_pack("[o, o]", suite,
				mk_run("r-b", "relu", "activation", "kernelbench", "n-pragma", 0, ok15, 1, 1, 1.5, "int d;"));
	struct pragma_err err = PRAGMA_ERR_INIT;
	json_t *model = pragma_report_model(src, &err);
	struct pragma_buf b = PRAGMA_BUF_INIT, h = PRAGMA_BUF_INIT;

	(void)state;
	assert_non_null(model);
	assert_int_equal(json_array_size(json_object_get(model, "columns")), 2);
	/* tasks: KernelBench first, then native; relu has three entries */
	assert_string_equal(report_str(json_array_get(json_object_get(model, "tasks"), 0), "name"), "gelu");
	assert_string_equal(report_str(json_array_get(json_object_get(model, "tasks"), 1), "name"), "relu");
	assert_string_equal(report_str(json_array_get(json_object_get(model, "tasks"), 2), "name"), "stencil");
	assert_int_equal(json_array_size(json_object_get(json_array_get(json_object_get(model, "tasks"), 1), "entries")), 3);

	assert_int_equal(pragma_report_render(model, PRAGMA_REPORT_MARKDOWN, NULL, &b, &err), 0);
	assert_non_null(strstr(b.data, "### PyTorch-baselined tasks"));
	assert_non_null(strstr(b.data, "### Native C tasks"));
	/* gelu never ran: Success 1 of 2 in both trajectories; the tasks line */
	assert_non_null(strstr(b.data, "50.0% ± 0.0% [50.0% – 50.0%]"));
	assert_non_null(strstr(b.data, "2 × 2"));
	assert_non_null(strstr(b.data, "pragma, trajectory 1: not run"));
	/* the suite's relu: mean of 2x and 3x over two trajectories, with spread */
	assert_non_null(strstr(b.data, "2.50x ± 0.71x [2.00x – 3.00x]"));
	/* native success: one trajectory failed, one did */
	assert_non_null(strstr(b.data, "50.0% ± 70.7% [0.0% – 100.0%]"));
	/* the native 1.2x never enters the PyTorch means */
	assert_null(strstr(b.data, "2.07x"));
	assert_non_null(strstr(b.data, "one trajectory: no evidence either way"));
	assert_non_null(strstr(b.data, "pragma, trajectory 2"));

	assert_int_equal(pragma_report_render(model, PRAGMA_REPORT_HTML, NULL, &h, &err), 0);
	/* Fig. 3: one plot per group, one series per column */
	assert_int_equal(count(h.data, "class=\"plot fig3\""), 2);
	assert_int_equal(count(h.data, "<g class=\"cat\" data-category=\"activation\" data-series=\"pragma\">"), 1);
	assert_int_equal(count(h.data, "<g class=\"cat\" data-category=\"activation\" data-series=\"n-pragma\">"), 1);
	/* one Fig. 4 per task, series per trajectory */
	assert_int_equal(count(h.data, "class=\"plot fig4\""), 2);
	assert_int_equal(count(h.data, "<g class=\"series\""), 5);
	assert_non_null(strstr(h.data, "No run of this task is stored"));
	pragma_buf_release(&b);
	pragma_buf_release(&h);
	json_decref(model);
	json_decref(src);
}

/* Single runs of different tasks, same mode and model: one series; a task
 * seen again starts a second series to compare with. */
static void runs_group_into_series(void **state)
{
	static const struct att ok2[] = { { "ok", 2.0, 0, NULL } };
	json_t *src = json_pack("[o, o, o]", mk_run("r-1", "relu", "activation", "kernelbench", "pragma", 0, ok2, 1, 1, 2.0, NULL),
				mk_run("r-2", "gelu", "activation", "kernelbench", "pragma", 0, ok2, 1, 1, 2.0, NULL),
				mk_run("r-3", "relu", "activation", "kernelbench", "pragma", 0, ok2, 1, 1, 4.0, NULL));
	struct pragma_err err = PRAGMA_ERR_INIT;
	json_t *model = pragma_report_model(src, &err), *cols;

	(void)state;
	assert_non_null(model);
	cols = json_object_get(model, "columns");
	assert_int_equal(json_array_size(cols), 2);
	assert_string_equal(report_str(json_array_get(cols, 0), "id"), "r-1, r-2");
	assert_string_equal(report_str(json_array_get(cols, 1), "id"), "r-3");
	assert_int_equal(json_integer_value(json_object_get(
				 json_object_get(json_object_get(json_object_get(json_array_get(cols, 0), "metrics"), "pytorch"), "all"),
				 "tasks")),
			 2);
	assert_string_not_equal(report_str(json_array_get(cols, 0), "label"), report_str(json_array_get(cols, 1), "label"));
	json_decref(model);
	json_decref(src);
}

static void bad_sources(void **state)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	json_t *empty = json_array(), *odd = json_pack("[{s:s}]", "id", "x");

	(void)state;
	assert_null(pragma_report_model(empty, &err));
	assert_int_equal(err.kind, PRAGMA_E_INPUT);
	pragma_err_clear(&err);
	assert_null(pragma_report_model(odd, &err));
	assert_non_null(strstr(err.msg, "neither a run"));
	json_decref(empty);
	json_decref(odd);
}

static void wrap_and_tables(void **state)
{
	struct pragma_buf b = PRAGMA_BUF_INIT;
	struct rtable t;

	(void)state;
	report_wrap(&b, "one two three four five six", 12, 2);
	assert_string_equal(b.data, "  one two\n  three four\n  five six\n");
	pragma_buf_reset(&b);
	rtable_init(&t, 2, "lr");
	rtable_cell(&t, "a|b");
	rtable_cell(&t, "n");
	rtable_cell(&t, "x");
	rtable_cell(&t, "12.5");
	rtable_md(&t, &b);
	assert_string_equal(b.data, "| a\\|b |    n |\n| ---- | ---: |\n| x    | 12.5 |\n");
	pragma_buf_reset(&b);
	rtable_html(&t, "c", &b);
	assert_non_null(strstr(b.data, "<th>a|b</th><th class=\"num\">n</th>"));
	rtable_release(&t);
	pragma_buf_release(&b);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(log_ticks),
		cmocka_unit_test(best_so_far),
		cmocka_unit_test(fig4_svg),
		cmocka_unit_test(html_escapes_and_is_self_contained),
		cmocka_unit_test(markdown_single),
		cmocka_unit_test(report_agrees_with_measurements),
		cmocka_unit_test(compare_groups_spreads),
		cmocka_unit_test(runs_group_into_series),
		cmocka_unit_test(bad_sources),
		cmocka_unit_test(wrap_and_tables),
	};

	return pragma_run_tests(tests, NULL, NULL);
}
