/*
 * The perf collector: CPU classification, the event table, the request, and
 * the formulas, on counter dumps built from the documented event semantics
 * (Zen 4/5 dispatch slots, Ice Lake topdown events, the 4-wide Skylake
 * formula); and the harness's counter code on this machine as far as it
 * goes (software events always; hardware events only with a PMU).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "pragma_test.h"
#include <errno.h>
#include <linux/perf_event.h>
#include <math.h>
#include <string.h>
#include <time.h>

#include "pragma/profile.h"

/* The harness side, compiled in here: it is not part of libpragma. */
#include "../../runtime/perf_counters.c"

static double metric(const struct pragma_profile *p, const char *name)
{
	double v = NAN;

	if (!pragma_profile_get(p, name, &v))
		fail_msg("metric %s missing", name);
	return v;
}

static void near(double got, double want, double tol)
{
	if (fabs(got - want) > tol)
		fail_msg("got %.6g, want %.6g (+-%g)", got, want, tol);
}

static void classify(void **state)
{
	(void)state;
	assert_int_equal(pragma_pmu_classify("AuthenticAMD", 25, 17), PRAGMA_PMU_AMD_ZEN4); /* this VM: EPYC Genoa */
	assert_int_equal(pragma_pmu_classify("AuthenticAMD", 0x19, 0x61), PRAGMA_PMU_AMD_ZEN4); /* Raphael */
	assert_int_equal(pragma_pmu_classify("AuthenticAMD", 0x19, 0x01), PRAGMA_PMU_AMD_ZEN); /* Milan */
	assert_int_equal(pragma_pmu_classify("AuthenticAMD", 0x17, 0x31), PRAGMA_PMU_AMD_ZEN); /* Rome */
	assert_int_equal(pragma_pmu_classify("AuthenticAMD", 0x1a, 0x02), PRAGMA_PMU_AMD_ZEN5);
	assert_int_equal(pragma_pmu_classify("GenuineIntel", 6, 0x8f), PRAGMA_PMU_INTEL_SLOTS); /* Sapphire Rapids */
	assert_int_equal(pragma_pmu_classify("GenuineIntel", 6, 0x6a), PRAGMA_PMU_INTEL_SLOTS); /* Ice Lake SP */
	assert_int_equal(pragma_pmu_classify("GenuineIntel", 6, 0x55), PRAGMA_PMU_INTEL_TMA4);  /* Skylake SP */
	assert_int_equal(pragma_pmu_classify("GenuineIntel", 6, 0x9e), PRAGMA_PMU_INTEL_TMA4);  /* Coffee Lake */
	assert_int_equal(pragma_pmu_classify("GenuineIntel", 6, 0x1c), PRAGMA_PMU_GENERIC);     /* Atom */
	assert_int_equal(pragma_pmu_classify("unknown", 0, 0), PRAGMA_PMU_GENERIC);
}

static void event_table(void **state)
{
	struct pragma_perf_event ev;
	struct pragma_buf names = PRAGMA_BUF_INIT;

	(void)state;
	assert_int_equal(pragma_perf_event_lookup(PRAGMA_PMU_AMD_ZEN4, "cycles", &ev), 0);
	assert_int_equal(ev.type, PERF_TYPE_HARDWARE);
	assert_int_equal(ev.config, PERF_COUNT_HW_CPU_CYCLES);
	/* AMD event select 0x1A0: bits 0-7 and 32-35; unit mask 0x1E in bits 8-15. */
	assert_int_equal(pragma_perf_event_lookup(PRAGMA_PMU_AMD_ZEN4, "de_no_dispatch_per_slot.backend_stalls", &ev), 0);
	assert_int_equal(ev.type, PERF_TYPE_RAW);
	assert_true(ev.config == 0x100001ea0ull);
	assert_int_equal(pragma_perf_event_lookup(PRAGMA_PMU_AMD_ZEN4, "de_src_op_disp.all", &ev), 0);
	assert_true(ev.config == 0x07aaull);
	/* Intel topdown metric events exist only where the CPU has them. */
	assert_int_equal(pragma_perf_event_lookup(PRAGMA_PMU_INTEL_SLOTS, "topdown-be-bound", &ev), 0);
	assert_true(ev.config == 0x8300ull);
	assert_int_equal(pragma_perf_event_lookup(PRAGMA_PMU_AMD_ZEN4, "topdown-be-bound", &ev), -1);
	assert_int_equal(pragma_perf_event_lookup(PRAGMA_PMU_INTEL_TMA4, "int_misc.recovery_cycles", &ev), 0);
	assert_true(ev.config == 0x100030dull); /* event 0x0D, umask 0x03, cmask 1 */
	/* generic cache events: id | op << 8 | result << 16 */
	assert_int_equal(pragma_perf_event_lookup(PRAGMA_PMU_GENERIC, "L1-dcache-load-misses", &ev), 0);
	assert_int_equal(ev.type, PERF_TYPE_HW_CACHE);
	assert_true(ev.config == 0x10000ull);
	assert_int_equal(pragma_perf_event_lookup(PRAGMA_PMU_GENERIC, "task-clock", &ev), 0);
	assert_int_equal(ev.type, PERF_TYPE_SOFTWARE);
	/* raw codes as perf writes them */
	assert_int_equal(pragma_perf_event_lookup(PRAGMA_PMU_GENERIC, "r01c2", &ev), 0);
	assert_true(ev.config == 0x1c2ull && ev.type == PERF_TYPE_RAW);
	assert_int_equal(pragma_perf_event_lookup(PRAGMA_PMU_GENERIC, "rxyz", &ev), -1);
	assert_int_equal(pragma_perf_event_lookup(PRAGMA_PMU_GENERIC, "no-such-event", &ev), -1);
	pragma_perf_event_names(PRAGMA_PMU_AMD_ZEN4, &names);
	assert_non_null(strstr(names.data, "ls_not_halted_cyc"));
	assert_null(strstr(names.data, "topdown-retiring"));
	pragma_buf_release(&names);
}

static int group_sizes_ok(json_t *req)
{
	json_t *g;
	size_t i;

	json_array_foreach(json_object_get(req, "groups"), i, g)
		if (json_array_size(json_object_get(g, "events")) > 5)
			return 0;
	return 1;
}

static void request(void **state)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	const char *extra[] = { "perf:ex_ret_brn_misp", "cpu.ipc", "perf:page-faults" };
	const char *bad[] = { "perf:bogus_event" };
	json_t *r;

	(void)state;
	r = pragma_perf_request(PRAGMA_PMU_AMD_ZEN4, 1, 1, extra, 3, &err);
	assert_non_null(r);
	/* core, cache, topdown, two extra groups, the software group */
	assert_int_equal(json_array_size(json_object_get(r, "groups")), 6);
	assert_true(group_sizes_ok(r));
	json_decref(r);
	/* no PMU: software events only */
	r = pragma_perf_request(PRAGMA_PMU_AMD_ZEN4, 0, 1, extra, 3, &err);
	assert_int_equal(json_array_size(json_object_get(r, "groups")), 2); /* extra:page-faults, sw */
	json_decref(r);
	r = pragma_perf_request(PRAGMA_PMU_INTEL_SLOTS, 1, 0, NULL, 0, &err);
	assert_int_equal(json_array_size(json_object_get(r, "groups")), 3);
	assert_true(group_sizes_ok(r));
	json_decref(r);
	/* unknown names are refused with the list of known ones */
	assert_null(pragma_perf_request(PRAGMA_PMU_AMD_ZEN4, 1, 1, bad, 1, &err));
	assert_int_equal(err.kind, PRAGMA_E_INPUT);
	assert_non_null(strstr(err.msg, "bogus_event"));
	assert_non_null(strstr(err.hint, "ls_not_halted_cyc"));
}

/* A harness answer: groups of (name, value) with enabled/running times. */
static json_t *group(const char *name, double enabled, double running, ...)
{
	json_t *evs = json_array();
	va_list ap;
	const char *ev;

	va_start(ap, running);
	while ((ev = va_arg(ap, const char *)))
		json_array_append_new(evs, json_pack("{s:s, s:I}", "name", ev, "value", (json_int_t)va_arg(ap, double)));
	va_end(ap);
	return json_pack("{s:s, s:b, s:I, s:I, s:o}", "name", name, "ok", 1, "enabled_ns", (json_int_t)enabled,
			 "running_ns", (json_int_t)running, "events", evs);
}

static json_t *answer(json_t *topdown)
{
	json_t *groups = json_array();

	json_array_append_new(groups, group("core", 1e6, 1e6, "cycles", 1e9, "instructions", 1.5e9, "branches", 1e8,
					    "branch-misses", 2e6, NULL));
	/* counted half the time: scaled by enabled/running */
	json_array_append_new(groups, group("cache", 2e6, 1e6, "instructions", 7.5e8, "L1-dcache-load-misses", 5e6,
					    "ls_dmnd_fills_from_sys.beyond_l3", 1e5, NULL));
	if (topdown)
		json_array_append_new(groups, topdown);
	json_array_append_new(groups, group("sw", 1e9, 1e9, "task-clock", 1.8e9, NULL));
	return json_pack("{s:i, s:f, s:o}", "calls", 10, "wall_ns", 1e9, "groups", groups);
}

static void zen4_formulas(void **state)
{
	struct pragma_profile p;
	/* 1e9 cycles x 6 slots: 40% retired, 5% thrown away, 10% no ops from
	 * the frontend, 45% backend stalls. */
	json_t *a = answer(group("topdown", 1e6, 1e6, "ls_not_halted_cyc", 1e9, "de_src_op_disp.all", 2.7e9,
				 "ex_ret_ops", 2.4e9, "de_no_dispatch_per_slot.no_ops_from_frontend", 0.6e9,
				 "de_no_dispatch_per_slot.backend_stalls", 2.7e9, NULL));

	(void)state;
	pragma_profile_init(&p);
	pragma_perf_derive(PRAGMA_PMU_AMD_ZEN4, a, 2, &p);
	near(metric(&p, "topdown.retiring"), 40, 1e-9);
	near(metric(&p, "topdown.bad_speculation"), 5, 1e-9);
	near(metric(&p, "topdown.frontend_bound"), 10, 1e-9);
	near(metric(&p, "topdown.backend_bound"), 45, 1e-9);
	near(metric(&p, "cpu.ipc"), 1.5, 1e-12);
	near(metric(&p, "cpu.cycles"), 1e8, 1e-3);          /* per call */
	near(metric(&p, "cpu.branch_miss_rate"), 2, 1e-12);
	near(metric(&p, "cpu.branch_misses"), 2e5, 1e-6);
	near(metric(&p, "cpu.l1d_misses"), 1e6, 1e-6);      /* 5e6 x 2 (multiplexed) / 10 calls */
	near(metric(&p, "cpu.l1d_mpki"), 1000 * 1e7 / 1.5e9, 1e-9);
	near(metric(&p, "cpu.llc_misses"), 2e4, 1e-6);
	near(metric(&p, "par.busy_cores"), 1.8, 1e-12);
	near(metric(&p, "par.utilization"), 90, 1e-9);
	near(metric(&p, "par.cpu_ms"), 180, 1e-9);
	assert_null(pragma_profile_why(&p, "perf"));
	/* the multiplexed group says so */
	int noted = 0;
	for (size_t i = 0; i < p.n_notes; i++)
		noted |= strstr(p.notes[i], "group cache counted 50%") != NULL;
	assert_true(noted);
	pragma_profile_release(&p);
	json_decref(a);

	/* the same counts on Zen 5: 8 dispatch slots per cycle */
	a = answer(group("topdown", 1e6, 1e6, "ls_not_halted_cyc", 1e9, "de_src_op_disp.all", 2.7e9, "ex_ret_ops",
			 2.4e9, "de_no_dispatch_per_slot.no_ops_from_frontend", 0.6e9,
			 "de_no_dispatch_per_slot.backend_stalls", 2.7e9, NULL));
	pragma_profile_init(&p);
	pragma_perf_derive(PRAGMA_PMU_AMD_ZEN5, a, 2, &p);
	near(metric(&p, "topdown.retiring"), 30, 1e-9);
	near(metric(&p, "topdown.backend_bound"), 33.75, 1e-9);
	pragma_profile_release(&p);
	json_decref(a);
}

static void icelake_formulas(void **state)
{
	struct pragma_profile p;
	/* the kernel reports each topdown event as slots x its fraction */
	json_t *a = answer(group("topdown", 1e6, 1e6, "slots", 4e9, "topdown-retiring", 1.6e9, "topdown-bad-spec",
				 0.2e9, "topdown-fe-bound", 0.4e9, "topdown-be-bound", 1.8e9, NULL));

	(void)state;
	pragma_profile_init(&p);
	pragma_perf_derive(PRAGMA_PMU_INTEL_SLOTS, a, 2, &p);
	near(metric(&p, "topdown.retiring"), 40, 1e-9);
	near(metric(&p, "topdown.bad_speculation"), 5, 1e-9);
	near(metric(&p, "topdown.frontend_bound"), 10, 1e-9);
	near(metric(&p, "topdown.backend_bound"), 45, 1e-9);
	pragma_profile_release(&p);
	json_decref(a);
}

static void skylake_formulas(void **state)
{
	struct pragma_profile p;
	/* 4 slots x 1e9 cycles: retired 1.6e9 slots (40%); issued 1.7e9 and
	 * 25e6 recovery cycles: (1.7 - 1.6 + 4 x 0.025) / 4 = 5%; 0.4e9 slots
	 * not delivered (10%); backend the rest (45%). */
	json_t *a = answer(group("topdown", 1e6, 1e6, "cycles", 1e9, "uops_issued.any", 1.7e9,
				 "uops_retired.retire_slots", 1.6e9, "idq_uops_not_delivered.core", 0.4e9,
				 "int_misc.recovery_cycles", 0.025e9, NULL));

	(void)state;
	pragma_profile_init(&p);
	pragma_perf_derive(PRAGMA_PMU_INTEL_TMA4, a, 2, &p);
	near(metric(&p, "topdown.retiring"), 40, 1e-9);
	near(metric(&p, "topdown.bad_speculation"), 5, 1e-9);
	near(metric(&p, "topdown.frontend_bound"), 10, 1e-9);
	near(metric(&p, "topdown.backend_bound"), 45, 1e-9);
	pragma_profile_release(&p);
	json_decref(a);
}

static json_t *failed(const char *name, const char *event, int e)
{
	return json_pack("{s:s, s:b, s:s, s:i, s:s}", "name", name, "ok", 0, "event", event, "errno", e, "error",
			 strerror(e));
}

static void failures_say_why(void **state)
{
	struct pragma_profile p;
	json_t *groups = json_array(), *a;

	(void)state;
	/* a VM without a PMU: hardware groups fail with ENOENT, task-clock works */
	json_array_append_new(groups, failed("core", "cycles", ENOENT));
	json_array_append_new(groups, failed("cache", "instructions", ENOENT));
	json_array_append_new(groups, group("sw", 1e9, 1e9, "task-clock", 0.5e9, NULL));
	a = json_pack("{s:i, s:f, s:o}", "calls", 5, "wall_ns", 1e9, "groups", groups);
	pragma_profile_init(&p);
	pragma_perf_derive(PRAGMA_PMU_AMD_ZEN4, a, 2, &p);
	assert_non_null(pragma_profile_why(&p, "perf"));
	assert_non_null(strstr(pragma_profile_why(&p, "perf"), "no PMU"));
	assert_non_null(strstr(pragma_profile_why(&p, "perf"), "Hint"));
	/* nothing, not zeros */
	assert_false(pragma_profile_get(&p, "cpu.cycles", NULL));
	assert_false(pragma_profile_get(&p, "cpu.ipc", NULL));
	assert_false(pragma_profile_get(&p, "topdown.retiring", NULL));
	near(metric(&p, "par.utilization"), 25, 1e-9);
	pragma_profile_release(&p);
	json_decref(a);

	/* perf_event_paranoid */
	groups = json_array();
	json_array_append_new(groups, failed("core", "cycles", EACCES));
	json_array_append_new(groups, failed("sw", "task-clock", EACCES));
	a = json_pack("{s:i, s:f, s:o}", "calls", 5, "wall_ns", 1e9, "groups", groups);
	pragma_profile_init(&p);
	pragma_perf_derive(PRAGMA_PMU_AMD_ZEN4, a, 2, &p);
	assert_non_null(strstr(pragma_profile_why(&p, "perf"), "perf_event_paranoid"));
	assert_non_null(strstr(pragma_profile_why(&p, "par"), "perf_event_paranoid"));
	assert_false(pragma_profile_get(&p, "par.utilization", NULL));
	pragma_profile_release(&p);
	json_decref(a);
}

static void spin_ms(double ms)
{
	struct timespec t0, t;
	volatile double x = 0;

	clock_gettime(CLOCK_MONOTONIC, &t0);
	do {
		for (int i = 0; i < 1000; i++)
			x += i;
		clock_gettime(CLOCK_MONOTONIC, &t);
	} while ((t.tv_sec - t0.tv_sec) * 1e3 + (t.tv_nsec - t0.tv_nsec) / 1e6 < ms);
}

/* The harness's counter code on this machine: task-clock (software) by
 * both methods; a hardware event counts where there is a PMU and reports
 * the errno where there is none. */
static void harness_counters_here(void **state)
{
	const char *methods[] = { "ioctl", "read" };

	(void)state;
	for (int m = 0; m < 2; m++) {
		struct perf_counters pc;
		json_t *req = json_pack("{s:{s:s, s:[{s:s, s:[{s:s, s:i, s:i}]}, {s:s, s:[{s:s, s:i, s:i}]}]}}", "perf",
					"method", methods[m], "groups", "name", "sw", "events", "name", "task-clock",
					"type", PERF_TYPE_SOFTWARE, "config", PERF_COUNT_SW_TASK_CLOCK, "name", "core",
					"events", "name", "instructions", "type", PERF_TYPE_HARDWARE, "config",
					PERF_COUNT_HW_INSTRUCTIONS);
		json_t *res = json_object(), *perf, *sw, *hw;

		assert_int_equal(perf_counters_parse(req, &pc), 0);
		assert_true(pc.active);
		perf_counters_open(&pc);
		spin_ms(5); /* not counted */
		for (int c = 0; c < 3; c++) {
			perf_counters_start(&pc);
			spin_ms(10);
			perf_counters_stop(&pc);
			spin_ms(5); /* not counted */
		}
		perf_counters_report(&pc, res);
		perf = json_object_get(res, "perf");
		assert_int_equal(json_integer_value(json_object_get(perf, "calls")), 3);
		sw = json_array_get(json_object_get(perf, "groups"), 0);
		hw = json_array_get(json_object_get(perf, "groups"), 1);
		if (!json_is_true(json_object_get(sw, "ok")))
			fail_msg("%s: task-clock failed: %s", methods[m], json_string_value(json_object_get(sw, "error")));
		double tc = (double)json_integer_value(json_object_get(json_array_get(json_object_get(sw, "events"), 0), "value"));
		double wall = (double)json_integer_value(json_object_get(perf, "wall_ns"));
		assert_true(wall >= 30e6);
		/* one busy thread: at most the windows' wall time, and most of it
		 * unless the machine took the core away */
		assert_true(tc <= wall * 1.01);
		assert_true(tc >= 0.2 * wall);
		if (json_is_true(json_object_get(hw, "ok"))) {
			assert_true(json_integer_value(json_object_get(json_array_get(json_object_get(hw, "events"), 0),
								       "value")) > 1000000);
		} else {
			/* no PMU here: an errno, never a zero count */
			assert_null(json_object_get(hw, "events"));
			assert_true(json_integer_value(json_object_get(hw, "errno")) != 0);
		}
		json_decref(req);
		json_decref(res);
	}
}

static void probe_here(void **state)
{
	const char *why = pragma_perf_probe();

	(void)state;
	if (!why)
		return; /* a PMU: nothing to explain */
	assert_true(strstr(why, "no PMU") || strstr(why, "paranoid") || strstr(why, "perf_event_open"));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(classify),	   cmocka_unit_test(event_table),      cmocka_unit_test(request),
		cmocka_unit_test(zen4_formulas),  cmocka_unit_test(icelake_formulas), cmocka_unit_test(skylake_formulas),
		cmocka_unit_test(failures_say_why), cmocka_unit_test(harness_counters_here), cmocka_unit_test(probe_here),
	};
	return pragma_run_tests(tests, NULL, NULL);
}
