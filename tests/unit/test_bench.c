/* The paper's metrics from stored runs (lib/bench/metrics.c), against
 * numbers counted by hand; and suite runs in the store. */
#include <math.h>
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "pragma_test.h"
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "pragma/bench.h"
#include "pragma/fs.h"
#include "pragma/store.h"

/* A stored run as pragma_store_run_get gives it: best attempt `best` (0:
 * none) with final speedup sp, roof percentage roof (<0: none); statuses of
 * its attempts. */
static json_t *run(const char *task, const char *cat, const char *kind, int traj, int best, double sp, double roof,
		   const char *const *statuses, int n, long tokens)
{
	json_t *att = json_array();

	for (int i = 0; i < n; i++) {
		json_t *a = json_pack("{s:i, s:i, s:s, s:s, s:{s:f, s:f, s:f, s:f, s:f}}", "n", i + 1, "candidate", 0,
				      "status", statuses[i], "stage", "done", "durations", "llm", 2.0, "verify", 1.0,
				      "timing", 0.5, "profile", 0.25, "lock_wait", 0.125);
		if (i + 1 == best && roof >= 0)
			json_object_set_new(a, "metrics", json_pack("{s:{s:f}}", "roof.pct_roof", "value", roof));
		json_array_append_new(att, a);
	}
	/* An attempt in flight when the run stopped: not counted. */
	json_array_append_new(att, json_pack("{s:i, s:i, s:s, s:s}", "n", n + 1, "candidate", 0, "status", "running",
					     "stage", "verifying"));
	json_t *r = json_pack("{s:s, s:s, s:s, s:s, s:s, s:{s:i}, s:o, s:{s:s}, s:{s:I, s:I, s:f}}", "id", task,
			      "task_name", task, "category", cat, "task_kind", kind, "status", "done", "config",
			      "trajectory", traj, "attempts", att, "baseline", "kind", "pytorch", "llm_calls",
			      "prompt_tokens", (json_int_t)(tokens - tokens / 4), "completion_tokens",
			      (json_int_t)(tokens / 4), "cost", tokens * 1e-6);
	if (best) {
		json_object_set_new(r, "best_attempt", json_integer(best));
		json_object_set_new(r, "summary", json_pack("{s:{s:f, s:{s:f, s:f}}, s:{s:f, s:f}}", "best", "speedup", sp,
							   "speedup_spread", "lo", sp * 0.9, "hi", sp * 1.1,
							   "final_seconds", "timing", 3.0, "lock_wait", 1.0));
	}
	return r;
}

static const char *const ok2[] = { "compile_error", "ok" };
static const char *const ok1[] = { "ok" };
static const char *const bad3[] = { "compile_error", "wrong_output", "wrong_output" };

static json_t *outcome(json_t *r)
{
	json_t *o = pragma_bench_outcome(r);
	json_decref(r);
	return o;
}

static void outcome_of_a_run(void **state)
{
	(void)state;
	json_t *o = outcome(run("t", "conv", "kernelbench", 0, 2, 2.5, 40, ok2, 2, 1000));

	assert_true(json_is_true(json_object_get(o, "correct")));
	assert_float_equal(json_number_value(json_object_get(o, "speedup")), 2.5, 1e-12);
	assert_float_equal(json_number_value(json_object_get(o, "speedup_lo")), 2.25, 1e-12);
	assert_float_equal(json_number_value(json_object_get(o, "roof")), 0.40, 1e-12);
	assert_int_equal(json_integer_value(json_object_get(o, "attempts")), 2); /* not the one in flight */
	assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "failed"), "compile_error")), 1);
	assert_int_equal(json_integer_value(json_object_get(o, "tokens")), 1000);
	json_t *sec = json_object_get(o, "seconds");
	assert_float_equal(json_number_value(json_object_get(sec, "llm")), 4.0, 1e-12);
	assert_float_equal(json_number_value(json_object_get(sec, "timing")), 1.0 + 3.0, 1e-12); /* + the final */
	assert_float_equal(json_number_value(json_object_get(sec, "lock_wait")), 0.25 + 1.0, 1e-12);
	json_decref(o);

	o = outcome(run("u", "weird", "native", 0, 0, 0, -1, bad3, 3, 10));
	assert_false(json_is_true(json_object_get(o, "correct")));
	assert_true(json_is_null(json_object_get(o, "speedup")));
	assert_string_equal(json_string_value(json_object_get(o, "category")), "others");
	assert_string_equal(json_string_value(json_object_get(o, "kind")), "native");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(o, "failed"), "wrong_output")), 2);
	json_decref(o);
}

static double fast(json_t *m, const char *p)
{
	return json_number_value(json_object_get(json_object_get(m, "fast"), p));
}

/* Eight PyTorch tasks and two native ones, one trajectory; counted by hand:
 *   matmul:     a 3.0x (roof 60%), b 0.5x (roof 10%)
 *   activation: c 1.2x (roof 80%), d none
 *   conv:       e 2.0x (no roof), f none, g 1.5x (roof 30%)
 *   others:     h 1.0x (roof 50%)
 *   native:     n1 4.0x, n2 none
 * PyTorch, all 8: correct 6 → Success 0.75; fast_0 6/8, fast_1 (> 1) 4/8
 * (3, 1.2, 2, 1.5), fast_1.5 (> 1.5) 2/8 (3, 2), fast_2 1/8 (3);
 * mean (3 + .5 + 1.2 + 2 + 1.5 + 1)/6 = 1.5333…, geomean (3·.5·1.2·2·1.5·1)^(1/6)
 * = 5.4^(1/6); median roof of {.6, .1, .8, .3, .5} = .5. */
/* Table I's roof column for a Winograd-style best kernel: a profile stored
 * with 133% of the compute roof (as older pragma wrote it) gives its
 * bandwidth fraction instead, and says why; a new profile (roof.pct_roof
 * already of the bandwidth roof, roof.flops_over_peak set) says why too. */
static void roof_of_a_kernel_doing_fewer_flops(void **state)
{
	(void)state;
	json_t *r = run("w", "conv", "kernelbench", 0, 1, 3.0, 133, ok1, 1, 10);
	json_t *m = json_object_get(json_array_get(json_object_get(r, "attempts"), 0), "metrics");
	json_object_set_new(m, "roof.pct_peak_flops", json_pack("{s:f}", "value", 133.0));
	json_object_set_new(m, "roof.pct_peak_bw", json_pack("{s:f}", "value", 12.0));
	json_t *o = outcome(r);
	assert_float_equal(json_number_value(json_object_get(o, "roof")), 0.12, 1e-12);
	assert_non_null(strstr(json_string_value(json_object_get(o, "roof_note")), "1.33x the FP32 peak"));
	assert_non_null(strstr(json_string_value(json_object_get(o, "roof_note")), "fewer FLOPs than counted"));
	json_decref(o);

	r = run("w", "conv", "kernelbench", 0, 1, 3.0, 12, ok1, 1, 10);
	m = json_object_get(json_array_get(json_object_get(r, "attempts"), 0), "metrics");
	json_object_set_new(m, "roof.flops_over_peak", json_pack("{s:f}", "value", 1.58));
	json_object_set_new(m, "roof.pct_peak_bw", json_pack("{s:f}", "value", 12.0));
	o = outcome(r);
	assert_float_equal(json_number_value(json_object_get(o, "roof")), 0.12, 1e-12);
	assert_non_null(strstr(json_string_value(json_object_get(o, "roof_note")), "1.58x"));
	json_decref(o);

	/* An ordinary kernel has no note. */
	o = outcome(run("t", "conv", "kernelbench", 0, 1, 3.0, 40, ok1, 1, 10));
	assert_null(json_object_get(o, "roof_note"));
	json_decref(o);
}

/* A fraction above 100% of an ordinary kernel's roof carries its reason,
 * and Table I counts the fractions that need a word; the spread a run
 * stored is named for what it is (a 95% interval, or an older run's IQR). */
static void roof_above_and_spread_kinds(void **state)
{
	(void)state;
	json_t *o = outcome(run("t", "conv", "kernelbench", 0, 1, 3.0, 118, ok1, 1, 10));
	assert_float_equal(json_number_value(json_object_get(o, "roof")), 1.18, 1e-12);
	assert_non_null(strstr(json_string_value(json_object_get(o, "roof_note")), "above 100%"));
	json_t *outs = json_pack("[o, O]", o, o);
	json_t *r = run("w", "conv", "kernelbench", 0, 1, 3.0, 12, ok1, 1, 10);
	json_t *m = json_object_get(json_array_get(json_object_get(r, "attempts"), 0), "metrics");
	json_object_set_new(m, "roof.flops_over_peak", json_pack("{s:f}", "value", 1.58));
	json_object_set_new(m, "roof.pct_peak_bw", json_pack("{s:f}", "value", 12.0));
	json_array_append_new(outs, outcome(r));
	json_array_append_new(outs, outcome(run("u", "conv", "kernelbench", 0, 1, 2.0, 40, ok1, 1, 10)));
	json_t *met = pragma_bench_metrics(outs);
	json_t *rn = json_object_get(json_object_get(json_object_get(met, "pytorch"), "all"), "roof_notes");
	assert_int_equal(json_integer_value(json_object_get(rn, "above_roof")), 2);
	assert_int_equal(json_integer_value(json_object_get(rn, "fewer_flops")), 1);
	json_decref(met);
	json_decref(outs);

	char note[512];
	json_t *mm = json_pack("{s:{s:f}}", "roof.pct_roof", "value", 40.0);
	assert_float_equal(pragma_bench_roof(mm, note, sizeof(note)), 0.40, 1e-12);
	assert_string_equal(note, "");
	json_decref(mm);

	json_t *s95 = json_pack("{s:f, s:f, s:s}", "lo", 1.0, "hi", 2.0, "method",
				"95% interval: a bootstrap over the session's sessions and rounds");
	json_t *siqr = json_pack("{s:f, s:f, s:s}", "lo", 1.0, "hi", 2.0, "method",
				 "interquartile range of per-round ratios, 9 interleaved rounds");
	json_t *snone = json_pack("{s:f}", "lo", 1.0);
	assert_string_equal(pragma_bench_spread_kind(s95), "95% interval");
	assert_string_equal(pragma_bench_spread_kind(siqr), "interquartile range (older run)");
	assert_null(pragma_bench_spread_kind(snone));
	json_decref(s95);
	json_decref(siqr);
	json_decref(snone);

	char buf[320];
	json_t *fin = json_pack("{s:i, s:i, s:f, s:b}", "rounds_made", 15, "rounds_clean", 3, "worst_run_delay_share", 0.25,
				"busy", 1);
	assert_int_equal(pragma_bench_final_text(fin, buf, sizeof(buf)), 1);
	assert_string_equal(buf, "a BUSY machine: 3 of 15 rounds undisturbed, the worst round kept lost 25% of its time to "
				 "other processes");
	json_decref(fin);
}

static void table_one_by_hand(void **state)
{
	(void)state;
	json_t *os = json_array();

	json_array_append_new(os, outcome(run("a", "matmul", "kernelbench", 0, 1, 3.0, 60, ok1, 1, 100)));
	json_array_append_new(os, outcome(run("b", "matmul", "kernelbench", 0, 2, 0.5, 10, ok2, 2, 100)));
	json_array_append_new(os, outcome(run("c", "activation", "kernelbench", 0, 1, 1.2, 80, ok1, 1, 100)));
	json_array_append_new(os, outcome(run("d", "activation", "kernelbench", 0, 0, 0, -1, bad3, 3, 100)));
	json_array_append_new(os, outcome(run("e", "conv", "kernelbench", 0, 1, 2.0, -1, ok1, 1, 100)));
	json_array_append_new(os, outcome(run("f", "conv", "kernelbench", 0, 0, 0, -1, bad3, 3, 100)));
	json_array_append_new(os, outcome(run("g", "conv", "kernelbench", 0, 2, 1.5, 30, ok2, 2, 100)));
	json_array_append_new(os, outcome(run("h", "others", "kernelbench", 0, 1, 1.0, 50, ok1, 1, 900)));
	json_array_append_new(os, outcome(run("n1", "others", "native", 0, 1, 4.0, -1, ok1, 1, 100)));
	json_array_append_new(os, outcome(run("n2", "others", "native", 0, 0, 0, -1, bad3, 3, 100)));

	json_t *m = pragma_bench_metrics(os);
	json_t *all = json_object_get(json_object_get(m, "pytorch"), "all");
	assert_int_equal(json_integer_value(json_object_get(all, "tasks")), 8);
	assert_float_equal(json_number_value(json_object_get(all, "success")), 0.75, 1e-12);
	assert_float_equal(fast(all, "0"), 6 / 8.0, 1e-12);
	assert_float_equal(fast(all, "1"), 4 / 8.0, 1e-12);
	assert_float_equal(fast(all, "1.5"), 2 / 8.0, 1e-12);
	assert_float_equal(fast(all, "2"), 1 / 8.0, 1e-12);
	assert_float_equal(json_number_value(json_object_get(all, "mean")), 9.2 / 6, 1e-12);
	assert_float_equal(json_number_value(json_object_get(all, "geomean")), pow(5.4, 1 / 6.0), 1e-12);
	assert_float_equal(json_number_value(json_object_get(all, "median_roof")), 0.5, 1e-12);
	assert_float_equal(json_number_value(json_object_get(all, "tokens_per_task")), 1600 / 8.0, 1e-12);
	assert_null(json_object_get(all, "spread")); /* one trajectory */

	json_t *cats = json_object_get(json_object_get(m, "pytorch"), "categories");
	json_t *conv = json_object_get(cats, "conv");
	assert_float_equal(json_number_value(json_object_get(conv, "success")), 2 / 3.0, 1e-12);
	assert_float_equal(fast(conv, "1.5"), 1 / 3.0, 1e-12); /* 2.0 only: 1.5 is not > 1.5 */
	assert_float_equal(json_number_value(json_object_get(conv, "median_roof")), 0.3, 1e-12);
	assert_null(json_object_get(cats, "normalization")); /* no task there */
	json_t *act = json_object_get(cats, "activation");
	assert_float_equal(json_number_value(json_object_get(act, "geomean")), 1.2, 1e-12);

	/* Native tasks apart: never averaged with the PyTorch ones. */
	json_t *nat = json_object_get(json_object_get(m, "native"), "all");
	assert_int_equal(json_integer_value(json_object_get(nat, "tasks")), 2);
	assert_float_equal(json_number_value(json_object_get(nat, "success")), 0.5, 1e-12);
	assert_float_equal(json_number_value(json_object_get(nat, "mean")), 4.0, 1e-12);
	json_decref(m);
	json_decref(os);
}

/* Two trajectories: the metrics are means over them with their spread. */
static void trajectories_and_spread(void **state)
{
	(void)state;
	json_t *os = json_array();

	/* trajectory 0: x 2.0, y none → success .5, geomean 2
	 * trajectory 1: x 1.0, y 4.0  → success 1, geomean 2 */
	json_array_append_new(os, outcome(run("x", "matmul", "kernelbench", 0, 1, 2.0, -1, ok1, 1, 10)));
	json_array_append_new(os, outcome(run("y", "matmul", "kernelbench", 0, 0, 0, -1, bad3, 3, 10)));
	json_array_append_new(os, outcome(run("x", "matmul", "kernelbench", 1, 1, 1.0, -1, ok1, 1, 10)));
	json_array_append_new(os, outcome(run("y", "matmul", "kernelbench", 1, 1, 4.0, -1, ok1, 1, 10)));
	json_t *m = pragma_bench_metrics(os);
	json_t *all = json_object_get(json_object_get(m, "pytorch"), "all");
	assert_int_equal(json_integer_value(json_object_get(all, "tasks")), 2);
	assert_int_equal(json_integer_value(json_object_get(all, "trajectories")), 2);
	assert_float_equal(json_number_value(json_object_get(all, "success")), 0.75, 1e-12);
	assert_float_equal(json_number_value(json_object_get(all, "geomean")), 2.0, 1e-12);
	assert_float_equal(json_number_value(json_object_get(all, "mean")), (2.0 + 2.5) / 2, 1e-12);
	json_t *sp = json_object_get(json_object_get(all, "spread"), "success");
	assert_float_equal(json_number_value(json_object_get(sp, "min")), 0.5, 1e-12);
	assert_float_equal(json_number_value(json_object_get(sp, "max")), 1.0, 1e-12);
	assert_float_equal(json_number_value(json_object_get(sp, "sd")), sqrt(0.125), 1e-12);

	/* The judgement: ranges that overlap are inside the spread. */
	json_t *a = json_real(0.75), *b = json_real(0.9), *bs = json_pack("{s:f, s:f}", "min", 0.85, "max", 0.95);
	assert_string_equal(pragma_bench_judge(a, sp, b, bs), "inside the spread across trajectories");
	json_decref(bs);
	bs = json_pack("{s:f, s:f}", "min", 1.5, "max", 2.0);
	json_decref(b);
	b = json_real(1.75);
	assert_string_equal(pragma_bench_judge(a, sp, b, bs), "larger than the spread across trajectories");
	assert_string_equal(pragma_bench_judge(a, NULL, b, NULL), "one trajectory: no evidence either way");
	json_decref(a);
	json_decref(b);
	json_decref(bs);
	json_decref(m);
	json_decref(os);
}

static void suites_in_the_store(void **state)
{
	(void)state;
	char dir[] = "/tmp/pragma-test-bench-XXXXXX", db[128], sid[48], rid[48];
	struct pragma_store *s;
	struct pragma_err err = PRAGMA_ERR_INIT;

	assert_non_null(mkdtemp(dir));
	snprintf(db, sizeof(db), "%s/p.db", dir);
	assert_int_equal(pragma_store_open(&s, db, &err), 0);
	pragma_store_new_suite_id(sid);
	assert_int_equal(sid[0], 's');
	json_t *f = json_pack("{s:s, s:s, s:s, s:{s:i}}", "suite_path", "tasks/x", "mode", "pragma", "status", "created",
			      "config", "repeat", 2);
	assert_int_equal(pragma_store_suite_create(s, sid, f, &err), 0);
	json_decref(f);
	pragma_store_new_run_id(rid);
	f = json_pack("{s:s, s:s, s:s}", "task_name", "t", "suite_id", sid, "status", "done");
	assert_int_equal(pragma_store_run_create(s, rid, f, &err), 0);
	json_decref(f);
	f = json_pack("{s:s}", "status", "done");
	assert_int_equal(pragma_store_suite_update(s, sid, f, &err), 0);
	json_decref(f);

	/* By a unique prefix; with its runs. */
	sid[12] = '\0';
	json_t *g = pragma_store_suite_get(s, sid, &err);
	assert_non_null(g);
	assert_string_equal(json_string_value(json_object_get(g, "status")), "done");
	assert_int_equal(json_integer_value(json_object_get(json_object_get(g, "config"), "repeat")), 2);
	assert_int_equal(json_array_size(json_object_get(g, "runs")), 1);
	assert_string_equal(json_string_value(json_object_get(json_array_get(json_object_get(g, "runs"), 0), "id")), rid);
	json_decref(g);
	json_t *l = pragma_store_suites(s, 0, &err);
	assert_int_equal(json_array_size(l), 1);
	assert_int_equal(json_integer_value(json_object_get(json_array_get(l, 0), "runs")), 1);
	json_decref(l);
	assert_null(pragma_store_suite_get(s, "s1999", &err));
	assert_non_null(strstr(err.msg, "no suite run"));
	pragma_store_close(s);
	pragma_rm_rf(dir, NULL);
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(outcome_of_a_run),
		cmocka_unit_test(roof_of_a_kernel_doing_fewer_flops),
		cmocka_unit_test(roof_above_and_spread_kinds),
		cmocka_unit_test(table_one_by_hand),
		cmocka_unit_test(trajectories_and_spread),
		cmocka_unit_test(suites_in_the_store),
	};
	return pragma_run_tests(tests, NULL, NULL);
}
