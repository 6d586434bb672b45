/*
 * The perf collector, library side: which events to count on this CPU, the
 * request the harness opens them from (runtime/perf_counters.c), and the
 * formulas that turn the counts into cpu.*, topdown.* and par.* metrics.
 *
 * Top-down level 1 (Yasin, ISPASS 2014; Intel optimization manual, "Top-down
 * Microarchitecture Analysis"; AMD's pipeline-utilization metrics):
 *  - Intel Ice Lake and later: the slots event leads a group with the four
 *    topdown-* metric events; the kernel reports each as slots x fraction,
 *    so category = topdown-X / (sum of the four).
 *  - Intel Sandy Bridge .. Cascade Lake: 4 issue slots per cycle,
 *      slots     = 4 * CPU_CLK_UNHALTED.THREAD
 *      frontend  = IDQ_UOPS_NOT_DELIVERED.CORE / slots
 *      bad spec  = (UOPS_ISSUED.ANY - UOPS_RETIRED.RETIRE_SLOTS + 4 * INT_MISC.RECOVERY_CYCLES) / slots
 *      retiring  = UOPS_RETIRED.RETIRE_SLOTS / slots
 *      backend   = 1 - (frontend + bad spec + retiring)
 *  - AMD Zen 4 (6 dispatch slots per cycle) and Zen 5 (8):
 *      slots     = W * ls_not_halted_cyc
 *      frontend  = de_no_dispatch_per_slot.no_ops_from_frontend / slots
 *      backend   = de_no_dispatch_per_slot.backend_stalls / slots
 *      retiring  = ex_ret_ops / slots
 *      bad spec  = (de_src_op_disp.all - ex_ret_ops) / slots
 */
#include <errno.h>
#include <linux/perf_event.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/syscall.h>
#include <unistd.h>

#include "pragma/profile.h"

enum pragma_pmu_kind pragma_pmu_classify(const char *vendor, int family, int model)
{
	if (vendor && (strstr(vendor, "AMD") || strstr(vendor, "Hygon"))) {
		if (family == 0x1a)
			return PRAGMA_PMU_AMD_ZEN5;
		if (family == 0x19 && ((model >= 0x10 && model <= 0x1f) || (model >= 0x60 && model <= 0xaf)))
			return PRAGMA_PMU_AMD_ZEN4;
		if (family == 0x17 || family == 0x18 || family == 0x19)
			return PRAGMA_PMU_AMD_ZEN;
		if (family > 0x1a)
			return PRAGMA_PMU_AMD_ZEN5; /* newer: assume the Zen 5 layout until told otherwise */
		return PRAGMA_PMU_GENERIC;
	}
	if (vendor && strstr(vendor, "Intel") && family == 6) {
		static const int slots_models[] = {
			0x6a, 0x6c, 0x7d, 0x7e, 0x8c, 0x8d, 0x8f, 0x97, 0x9a, 0xa7, 0xaa, 0xac,
			0xad, 0xae, 0xb7, 0xba, 0xbd, 0xbf, 0xc5, 0xc6, 0xcf,
		};
		static const int tma4_models[] = {
			0x2a, 0x2d, 0x3a, 0x3e, 0x3c, 0x3f, 0x45, 0x46, 0x3d, 0x47, 0x4f,
			0x56, 0x4e, 0x5e, 0x55, 0x8e, 0x9e, 0xa5, 0xa6, 0x66,
		};
		for (size_t i = 0; i < sizeof(slots_models) / sizeof(slots_models[0]); i++)
			if (model == slots_models[i])
				return PRAGMA_PMU_INTEL_SLOTS;
		for (size_t i = 0; i < sizeof(tma4_models) / sizeof(tma4_models[0]); i++)
			if (model == tma4_models[i])
				return PRAGMA_PMU_INTEL_TMA4;
	}
	return PRAGMA_PMU_GENERIC;
}

const char *pragma_pmu_kind_name(enum pragma_pmu_kind k)
{
	switch (k) {
	case PRAGMA_PMU_INTEL_TMA4:
		return "Intel (4-wide top-down)";
	case PRAGMA_PMU_INTEL_SLOTS:
		return "Intel (slots + topdown events)";
	case PRAGMA_PMU_AMD_ZEN:
		return "AMD Zen 1-3";
	case PRAGMA_PMU_AMD_ZEN4:
		return "AMD Zen 4 (6 dispatch slots)";
	case PRAGMA_PMU_AMD_ZEN5:
		return "AMD Zen 5 (8 dispatch slots)";
	default:
		return "generic";
	}
}

/* Where an event is valid. */
#define K_ALL 0u
#define K_INTEL ((1u << PRAGMA_PMU_INTEL_TMA4) | (1u << PRAGMA_PMU_INTEL_SLOTS))
#define K_ICL (1u << PRAGMA_PMU_INTEL_SLOTS)
#define K_TMA4 (1u << PRAGMA_PMU_INTEL_TMA4)
#define K_ZEN45 ((1u << PRAGMA_PMU_AMD_ZEN4) | (1u << PRAGMA_PMU_AMD_ZEN5))
#define K_AMD ((1u << PRAGMA_PMU_AMD_ZEN) | K_ZEN45)
#define K_ZEN123 (1u << PRAGMA_PMU_AMD_ZEN)

#define HWC(id, op, res) ((uint64_t)(id) | ((uint64_t)(op) << 8) | ((uint64_t)(res) << 16))
/* AMD: event select bits 0-7 and 32-35, unit mask bits 8-15. */
#define AMD(ev, um) (((uint64_t)(ev)&0xff) | ((uint64_t)(um) << 8) | (((uint64_t)(ev) >> 8) << 32))
/* Intel: event 0-7, umask 8-15, cmask 24-31. */
#define INTEL(ev, um, cmask) ((uint64_t)(ev) | ((uint64_t)(um) << 8) | ((uint64_t)(cmask) << 24))

struct evdef {
	const char *name;
	uint32_t type;
	uint64_t config;
	unsigned kinds;
};

static const struct evdef events[] = {
	/* perf's generic hardware events */
	{ "cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, K_ALL },
	{ "cpu-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CPU_CYCLES, K_ALL },
	{ "instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_INSTRUCTIONS, K_ALL },
	{ "cache-references", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_REFERENCES, K_ALL },
	{ "cache-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_CACHE_MISSES, K_ALL },
	{ "branches", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, K_ALL },
	{ "branch-instructions", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_INSTRUCTIONS, K_ALL },
	{ "branch-misses", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BRANCH_MISSES, K_ALL },
	{ "bus-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_BUS_CYCLES, K_ALL },
	{ "stalled-cycles-frontend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_FRONTEND, K_ALL },
	{ "stalled-cycles-backend", PERF_TYPE_HARDWARE, PERF_COUNT_HW_STALLED_CYCLES_BACKEND, K_ALL },
	{ "ref-cycles", PERF_TYPE_HARDWARE, PERF_COUNT_HW_REF_CPU_CYCLES, K_ALL },
	/* generic cache events */
	{ "L1-dcache-loads", PERF_TYPE_HW_CACHE, HWC(0, 0, 0), K_ALL },
	{ "L1-dcache-load-misses", PERF_TYPE_HW_CACHE, HWC(0, 0, 1), K_ALL },
	{ "L1-dcache-stores", PERF_TYPE_HW_CACHE, HWC(0, 1, 0), K_ALL },
	{ "L1-dcache-prefetches", PERF_TYPE_HW_CACHE, HWC(0, 2, 0), K_ALL },
	{ "L1-icache-load-misses", PERF_TYPE_HW_CACHE, HWC(1, 0, 1), K_ALL },
	{ "LLC-loads", PERF_TYPE_HW_CACHE, HWC(2, 0, 0), K_ALL },
	{ "LLC-load-misses", PERF_TYPE_HW_CACHE, HWC(2, 0, 1), K_ALL },
	{ "LLC-stores", PERF_TYPE_HW_CACHE, HWC(2, 1, 0), K_ALL },
	{ "LLC-store-misses", PERF_TYPE_HW_CACHE, HWC(2, 1, 1), K_ALL },
	{ "dTLB-loads", PERF_TYPE_HW_CACHE, HWC(3, 0, 0), K_ALL },
	{ "dTLB-load-misses", PERF_TYPE_HW_CACHE, HWC(3, 0, 1), K_ALL },
	{ "iTLB-load-misses", PERF_TYPE_HW_CACHE, HWC(4, 0, 1), K_ALL },
	{ "branch-loads", PERF_TYPE_HW_CACHE, HWC(5, 0, 0), K_ALL },
	{ "branch-load-misses", PERF_TYPE_HW_CACHE, HWC(5, 0, 1), K_ALL },
	/* software events: no PMU needed */
	{ "cpu-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_CLOCK, K_ALL },
	{ "task-clock", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_TASK_CLOCK, K_ALL },
	{ "page-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS, K_ALL },
	{ "minor-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MIN, K_ALL },
	{ "major-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_PAGE_FAULTS_MAJ, K_ALL },
	{ "context-switches", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CONTEXT_SWITCHES, K_ALL },
	{ "cpu-migrations", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_CPU_MIGRATIONS, K_ALL },
	{ "alignment-faults", PERF_TYPE_SOFTWARE, PERF_COUNT_SW_ALIGNMENT_FAULTS, K_ALL },

	/* Intel Ice Lake and later: slots and the topdown metric events */
	{ "slots", PERF_TYPE_RAW, INTEL(0x00, 0x04, 0), K_ICL },
	{ "topdown-retiring", PERF_TYPE_RAW, INTEL(0x00, 0x80, 0), K_ICL },
	{ "topdown-bad-spec", PERF_TYPE_RAW, INTEL(0x00, 0x81, 0), K_ICL },
	{ "topdown-fe-bound", PERF_TYPE_RAW, INTEL(0x00, 0x82, 0), K_ICL },
	{ "topdown-be-bound", PERF_TYPE_RAW, INTEL(0x00, 0x83, 0), K_ICL },
	/* Intel Sandy Bridge .. Cascade Lake */
	{ "uops_issued.any", PERF_TYPE_RAW, INTEL(0x0e, 0x01, 0), K_TMA4 },
	{ "uops_retired.retire_slots", PERF_TYPE_RAW, INTEL(0xc2, 0x02, 0), K_TMA4 },
	{ "idq_uops_not_delivered.core", PERF_TYPE_RAW, INTEL(0x9c, 0x01, 0), K_TMA4 },
	{ "int_misc.recovery_cycles", PERF_TYPE_RAW, INTEL(0x0d, 0x03, 1), K_TMA4 },
	/* Intel, common */
	{ "mem_load_retired.l3_miss", PERF_TYPE_RAW, INTEL(0xd1, 0x20, 0), K_INTEL },
	{ "cycle_activity.stalls_total", PERF_TYPE_RAW, INTEL(0xa3, 0x04, 4), K_INTEL },
	{ "cycle_activity.stalls_mem_any", PERF_TYPE_RAW, INTEL(0xa3, 0x14, 20), K_INTEL },

	/* AMD Zen (PPR event names) */
	{ "ls_not_halted_cyc", PERF_TYPE_RAW, AMD(0x76, 0x00), K_AMD },
	{ "ex_ret_instr", PERF_TYPE_RAW, AMD(0xc0, 0x00), K_AMD },
	{ "ex_ret_ops", PERF_TYPE_RAW, AMD(0xc1, 0x00), K_AMD },
	{ "ex_ret_brn", PERF_TYPE_RAW, AMD(0xc2, 0x00), K_AMD },
	{ "ex_ret_brn_misp", PERF_TYPE_RAW, AMD(0xc3, 0x00), K_AMD },
	{ "ex_ret_brn_tkn", PERF_TYPE_RAW, AMD(0xc4, 0x00), K_AMD },
	{ "ex_div_busy", PERF_TYPE_RAW, AMD(0xd3, 0x00), K_AMD },
	{ "de_src_op_disp.all", PERF_TYPE_RAW, AMD(0xaa, 0x07), K_ZEN45 },
	{ "de_no_dispatch_per_slot.no_ops_from_frontend", PERF_TYPE_RAW, AMD(0x1a0, 0x01), K_ZEN45 },
	{ "de_no_dispatch_per_slot.backend_stalls", PERF_TYPE_RAW, AMD(0x1a0, 0x1e), K_ZEN45 },
	{ "de_no_dispatch_per_slot.smt_contention", PERF_TYPE_RAW, AMD(0x1a0, 0x60), K_ZEN45 },
	{ "ls_dmnd_fills_from_sys.local_l2", PERF_TYPE_RAW, AMD(0x43, 0x01), K_ZEN45 },
	{ "ls_dmnd_fills_from_sys.local_ccx", PERF_TYPE_RAW, AMD(0x43, 0x02), K_ZEN45 },
	{ "ls_dmnd_fills_from_sys.near_cache", PERF_TYPE_RAW, AMD(0x43, 0x04), K_ZEN45 },
	{ "ls_dmnd_fills_from_sys.dram_io_near", PERF_TYPE_RAW, AMD(0x43, 0x08), K_ZEN45 },
	{ "ls_dmnd_fills_from_sys.far_cache", PERF_TYPE_RAW, AMD(0x43, 0x10), K_ZEN45 },
	{ "ls_dmnd_fills_from_sys.dram_io_far", PERF_TYPE_RAW, AMD(0x43, 0x40), K_ZEN45 },
	/* Demand data-cache fills from beyond this CCX's L3 (other caches, DRAM,
	 * I/O): our last-level-miss count on Zen, whose core PMU has no generic
	 * LLC event. Zen 4/5 umasks: near_cache|dram_io_near|far_cache|dram_io_far. */
	{ "ls_dmnd_fills_from_sys.beyond_l3", PERF_TYPE_RAW, AMD(0x43, 0x5c), K_ZEN45 },
	/* Zen 1-3 umasks of the same event: remote cache, local and remote DRAM. */
	{ "ls_refills_from_sys.beyond_l3", PERF_TYPE_RAW, AMD(0x43, 0x58), K_ZEN123 },
	{ "ls_any_fills_from_sys.dram_io_all", PERF_TYPE_RAW, AMD(0x44, 0x48), K_ZEN45 },
	{ "ls_l1_d_tlb_miss.all", PERF_TYPE_RAW, AMD(0x45, 0xff), K_AMD },
	{ "l2_cache_req_stat.ic_dc_miss_in_l2", PERF_TYPE_RAW, AMD(0x64, 0x09), K_AMD },
	{ "ls_sw_pf_dc_fills.all", PERF_TYPE_RAW, AMD(0x59, 0xdf), K_ZEN45 },
	{ "ls_hw_pf_dc_fills.all", PERF_TYPE_RAW, AMD(0x5a, 0xdf), K_ZEN45 },
};

static int valid_on(const struct evdef *e, enum pragma_pmu_kind k)
{
	return e->kinds == K_ALL || (e->kinds & (1u << k));
}

int pragma_perf_event_lookup(enum pragma_pmu_kind k, const char *name, struct pragma_perf_event *ev)
{
	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++)
		if (!strcmp(events[i].name, name) && valid_on(&events[i], k)) {
			snprintf(ev->name, sizeof(ev->name), "%s", name);
			ev->type = events[i].type;
			ev->config = events[i].config;
			return 0;
		}
	/* perf's raw syntax: r followed by hex digits. */
	if (name[0] == 'r' && name[1] && strlen(name) <= 17 && strspn(name + 1, "0123456789abcdefABCDEF") ==
								       strlen(name + 1)) {
		snprintf(ev->name, sizeof(ev->name), "%s", name);
		ev->type = PERF_TYPE_RAW;
		ev->config = strtoull(name + 1, NULL, 16);
		return 0;
	}
	return -1;
}

void pragma_perf_event_names(enum pragma_pmu_kind k, struct pragma_buf *out)
{
	for (size_t i = 0; i < sizeof(events) / sizeof(events[0]); i++)
		if (valid_on(&events[i], k))
			pragma_buf_addf(out, "%s%s", out->len ? ", " : "", events[i].name);
	pragma_buf_addf(out, "%srXXXX (raw code)", out->len ? ", " : "");
}

static json_t *group(enum pragma_pmu_kind k, const char *gname, const char *const *names)
{
	json_t *evs = json_array();
	struct pragma_perf_event ev;

	for (int i = 0; names[i]; i++) {
		if (pragma_perf_event_lookup(k, names[i], &ev) < 0)
			abort(); /* our own tables disagree: a bug */
		json_array_append_new(evs, json_pack("{s:s, s:i, s:I}", "name", ev.name, "type", (int)ev.type,
						     "config", (json_int_t)ev.config));
	}
	return json_pack("{s:s, s:o}", "name", gname, "events", evs);
}

json_t *pragma_perf_request(enum pragma_pmu_kind k, int with_hw, int with_par, const char *const *extra,
			    size_t n_extra, struct pragma_err *err)
{
	/* Groups of at most five events: Zen has six counters and the NMI
	 * watchdog may hold one; a group larger than the free counters never
	 * schedules. Ratios inside a group are exact even when groups take
	 * turns (multiplexing). */
	static const char *const core[] = { "cycles", "instructions", "branches", "branch-misses", NULL };
	static const char *const cache_intel[] = { "instructions", "L1-dcache-load-misses", "LLC-load-misses", NULL };
	static const char *const cache_zen45[] = { "instructions", "L1-dcache-load-misses",
						   "ls_dmnd_fills_from_sys.beyond_l3", NULL };
	static const char *const cache_zen[] = { "instructions", "L1-dcache-load-misses",
						 "ls_refills_from_sys.beyond_l3", NULL };
	static const char *const td_icl[] = { "slots", "topdown-retiring", "topdown-bad-spec", "topdown-fe-bound",
					      "topdown-be-bound", NULL };
	static const char *const td_tma4[] = { "cycles", "uops_issued.any", "uops_retired.retire_slots",
					       "idq_uops_not_delivered.core", "int_misc.recovery_cycles", NULL };
	static const char *const td_zen[] = { "ls_not_halted_cyc", "de_src_op_disp.all", "ex_ret_ops",
					      "de_no_dispatch_per_slot.no_ops_from_frontend",
					      "de_no_dispatch_per_slot.backend_stalls", NULL };
	/* task-clock alone: every event costs a read per call in the sandbox. */
	static const char *const sw[] = { "task-clock", NULL };
	json_t *groups = json_array();

	if (with_hw) {
		json_array_append_new(groups, group(k, "core", core));
		if (k == PRAGMA_PMU_AMD_ZEN4 || k == PRAGMA_PMU_AMD_ZEN5)
			json_array_append_new(groups, group(k, "cache", cache_zen45));
		else if (k == PRAGMA_PMU_AMD_ZEN)
			json_array_append_new(groups, group(k, "cache", cache_zen));
		else
			json_array_append_new(groups, group(k, "cache", cache_intel));
		if (k == PRAGMA_PMU_INTEL_SLOTS)
			json_array_append_new(groups, group(k, "topdown", td_icl));
		else if (k == PRAGMA_PMU_INTEL_TMA4)
			json_array_append_new(groups, group(k, "topdown", td_tma4));
		else if (k == PRAGMA_PMU_AMD_ZEN4 || k == PRAGMA_PMU_AMD_ZEN5)
			json_array_append_new(groups, group(k, "topdown", td_zen));
	}
	/* Extra events one per group: one the CPU cannot schedule does not take
	 * the others down with it. */
	for (size_t i = 0; i < n_extra; i++) {
		const char *name;
		struct pragma_perf_event ev;
		char gname[80];

		if (strncmp(extra[i], "perf:", 5))
			continue;
		name = extra[i] + 5;
		if (pragma_perf_event_lookup(k, name, &ev) < 0) {
			struct pragma_buf names = PRAGMA_BUF_INIT;
			pragma_perf_event_names(k, &names);
			pragma_err_set(err, PRAGMA_E_INPUT, "unknown perf event '%s' for %s", name,
				       pragma_pmu_kind_name(k));
			pragma_err_hint(err, "known events: %.900s", names.data);
			pragma_buf_release(&names);
			json_decref(groups);
			return NULL;
		}
		if (ev.type != PERF_TYPE_SOFTWARE && !with_hw)
			continue;
		snprintf(gname, sizeof(gname), "extra:%s", name);
		json_array_append_new(groups, json_pack("{s:s, s:[{s:s, s:i, s:I}]}", "name", gname, "events", "name",
							ev.name, "type", (int)ev.type, "config",
							(json_int_t)ev.config));
	}
	if (with_par)
		json_array_append_new(groups, group(k, "sw", sw));
	return json_pack("{s:o}", "groups", groups);
}

static int paranoid_level(void)
{
	FILE *f = fopen("/proc/sys/kernel/perf_event_paranoid", "r");
	int v = -100;

	if (f) {
		if (fscanf(f, "%d", &v) != 1)
			v = -100;
		fclose(f);
	}
	return v;
}

/* A reason with a hint, from the errno perf_event_open gave. */
static void explain(int e, int hardware, char *out, size_t len)
{
	int par = paranoid_level();

	if ((e == ENOENT || e == EOPNOTSUPP || e == ENODEV) && hardware)
		snprintf(out, len,
			 "no PMU: this CPU or its hypervisor exposes no hardware counters (perf_event_open: %s). "
			 "Hint: on a VM, enable the virtual PMU (KVM: -cpu host,pmu=on; in a cloud, an instance "
			 "type with PMU access); the sim collector gives simulated counts meanwhile",
			 strerror(e));
	else if (e == EACCES || e == EPERM)
		snprintf(out, len,
			 "perf_event_paranoid forbids it (perf_event_open: %s; kernel.perf_event_paranoid is %d). "
			 "Hint: 'sysctl kernel.perf_event_paranoid=2' allows counting user space of your own "
			 "processes, or give pragma CAP_PERFMON",
			 strerror(e), par);
	else if (e == EINVAL)
		snprintf(out, len,
			 "the kernel rejected the counter group (perf_event_open: %s): an event this CPU lacks, "
			 "or more events than free counters",
			 strerror(e));
	else if (e == EBUSY)
		snprintf(out, len, "the counters are in use by another tool (perf_event_open: %s)", strerror(e));
	else
		snprintf(out, len, "perf_event_open: %s", strerror(e));
}

const char *pragma_perf_probe(void)
{
	static _Thread_local char why[512];
	struct perf_event_attr a;
	long fd;

	memset(&a, 0, sizeof(a));
	a.size = sizeof(a);
	a.type = PERF_TYPE_HARDWARE;
	a.config = PERF_COUNT_HW_INSTRUCTIONS;
	a.disabled = 1;
	a.exclude_kernel = 1;
	a.exclude_hv = 1;
	fd = syscall(SYS_perf_event_open, &a, 0, -1, -1, 0);
	if (fd >= 0) {
		close((int)fd);
		return NULL;
	}
	explain(errno, 1, why, sizeof(why));
	return why;
}

/* Counts of the groups that worked, by event name, per call, scaled for
 * multiplexing. A name can appear in several groups (cycles, instructions):
 * each group's ratios use its own. */
struct counts {
	json_t *groups;
	int calls;
};

static int gval(json_t *g, const char *name, double *v)
{
	json_t *e;
	size_t i;
	double en = json_number_value(json_object_get(g, "enabled_ns"));
	double run = json_number_value(json_object_get(g, "running_ns"));

	if (!json_is_true(json_object_get(g, "ok")) || run <= 0)
		return 0;
	json_array_foreach(json_object_get(g, "events"), i, e)
		if (!strcmp(json_string_value(json_object_get(e, "name")) ?: "", name)) {
			double raw = json_number_value(json_object_get(e, "value"));
			*v = en > run ? raw * en / run : raw;
			return 1;
		}
	return 0;
}

static json_t *find_group(json_t *groups, const char *name)
{
	json_t *g;
	size_t i;

	json_array_foreach(groups, i, g)
		if (!strcmp(json_string_value(json_object_get(g, "name")) ?: "", name))
			return g;
	return NULL;
}

static void topdown(enum pragma_pmu_kind k, json_t *g, struct pragma_profile *p)
{
	double fe = NAN, bad = NAN, ret = NAN, be = NAN;

	if (k == PRAGMA_PMU_INTEL_SLOTS) {
		double r, b, f, e, sum;
		if (gval(g, "topdown-retiring", &r) && gval(g, "topdown-bad-spec", &b) &&
		    gval(g, "topdown-fe-bound", &f) && gval(g, "topdown-be-bound", &e) && (sum = r + b + f + e) > 0) {
			ret = r / sum;
			bad = b / sum;
			fe = f / sum;
			be = e / sum;
		}
	} else if (k == PRAGMA_PMU_INTEL_TMA4) {
		double cyc, issued, retired, notdel, recov;
		if (gval(g, "cycles", &cyc) && gval(g, "uops_issued.any", &issued) &&
		    gval(g, "uops_retired.retire_slots", &retired) && gval(g, "idq_uops_not_delivered.core", &notdel) &&
		    gval(g, "int_misc.recovery_cycles", &recov) && cyc > 0) {
			double slots = 4 * cyc;
			fe = notdel / slots;
			bad = (issued - retired + 4 * recov) / slots;
			ret = retired / slots;
			if (bad < 0)
				bad = 0;
			be = 1 - (fe + bad + ret);
			if (be < 0)
				be = 0;
		}
	} else if (k == PRAGMA_PMU_AMD_ZEN4 || k == PRAGMA_PMU_AMD_ZEN5) {
		double cyc, disp, rops, nofe, nobe;
		if (gval(g, "ls_not_halted_cyc", &cyc) && gval(g, "de_src_op_disp.all", &disp) &&
		    gval(g, "ex_ret_ops", &rops) && gval(g, "de_no_dispatch_per_slot.no_ops_from_frontend", &nofe) &&
		    gval(g, "de_no_dispatch_per_slot.backend_stalls", &nobe) && cyc > 0) {
			double slots = (k == PRAGMA_PMU_AMD_ZEN4 ? 6 : 8) * cyc;
			fe = nofe / slots;
			be = nobe / slots;
			ret = rops / slots;
			bad = (disp - rops) / slots;
			if (bad < 0)
				bad = 0;
		}
	}
	if (isnan(ret))
		return;
	pragma_profile_set(p, "topdown.retiring", 100 * ret, "perf");
	pragma_profile_set(p, "topdown.bad_speculation", 100 * bad, "perf");
	pragma_profile_set(p, "topdown.frontend_bound", 100 * fe, "perf");
	pragma_profile_set(p, "topdown.backend_bound", 100 * be, "perf");
}

void pragma_perf_derive(enum pragma_pmu_kind k, json_t *answer, int threads, struct pragma_profile *p)
{
	json_t *groups = json_object_get(answer, "groups"), *g;
	int calls = (int)json_integer_value(json_object_get(answer, "calls"));
	double wall_ns = json_number_value(json_object_get(answer, "wall_ns"));
	double v, w;
	size_t i;
	int hw_failed = 0;
	char why[600];

	if (!json_is_array(groups) || calls <= 0) {
		pragma_profile_unavailable(p, "perf", "the harness counted no calls");
		return;
	}
	/* Failures first: the reason of the first hardware group is the cause. */
	json_array_foreach(groups, i, g) {
		const char *name = json_string_value(json_object_get(g, "name")) ?: "?";
		int sw = !strcmp(name, "sw");
		double en = json_number_value(json_object_get(g, "enabled_ns"));
		double run = json_number_value(json_object_get(g, "running_ns"));

		if (!json_is_true(json_object_get(g, "ok"))) {
			int e = (int)json_integer_value(json_object_get(g, "errno"));
			const char *ev = json_string_value(json_object_get(g, "event")) ?: "?";
			explain(e, !sw, why, sizeof(why));
			if (sw)
				pragma_profile_unavailable(p, "par", "task-clock: %s", why);
			else if (!strcmp(name, "core"))
				hw_failed = 1, pragma_profile_unavailable(p, "perf", "%s", why);
			else if (!hw_failed)
				pragma_profile_note(p, "perf: group %s (event %s) not counted: %s", name, ev, why);
			continue;
		}
		if (run <= 0)
			pragma_profile_note(p, "perf: group %s was never scheduled on a counter", name);
		else if (en > run * 1.02)
			pragma_profile_note(p, "perf: group %s counted %.0f%% of the time (counters shared); its counts are scaled",
					    name, 100 * run / en);
	}

	g = find_group(groups, "core");
	if (g && gval(g, "cycles", &v)) {
		pragma_profile_set(p, "cpu.cycles", v / calls, "perf");
		if (gval(g, "instructions", &w)) {
			pragma_profile_set(p, "cpu.instructions", w / calls, "perf");
			if (v > 0)
				pragma_profile_set(p, "cpu.ipc", w / v, "perf");
		}
		if (gval(g, "branches", &v)) {
			pragma_profile_set(p, "cpu.branches", v / calls, "perf");
			if (gval(g, "branch-misses", &w)) {
				pragma_profile_set(p, "cpu.branch_misses", w / calls, "perf");
				if (v > 0)
					pragma_profile_set(p, "cpu.branch_miss_rate", 100 * w / v, "perf");
			}
		}
	}
	g = find_group(groups, "cache");
	if (g && gval(g, "instructions", &w) && w > 0) {
		if (gval(g, "L1-dcache-load-misses", &v)) {
			pragma_profile_set(p, "cpu.l1d_misses", v / calls, "perf");
			pragma_profile_set(p, "cpu.l1d_mpki", 1000 * v / w, "perf");
		}
		if (gval(g, "LLC-load-misses", &v) || gval(g, "ls_dmnd_fills_from_sys.beyond_l3", &v) ||
		    gval(g, "ls_refills_from_sys.beyond_l3", &v)) {
			pragma_profile_set(p, "cpu.llc_misses", v / calls, "perf");
			pragma_profile_set(p, "cpu.llc_mpki", 1000 * v / w, "perf");
		}
	}
	g = find_group(groups, "topdown");
	if (g)
		topdown(k, g, p);
	json_array_foreach(groups, i, g) {
		const char *name = json_string_value(json_object_get(g, "name")) ?: "";
		char mname[96];
		if (strncmp(name, "extra:", 6) || !gval(g, name + 6, &v))
			continue;
		snprintf(mname, sizeof(mname), "perf:%s", name + 6);
		pragma_profile_set(p, mname, v / calls, "perf");
	}

	/* par: CPU time of all the kernel's threads over the wall time of the
	 * calls. Spinning OpenMP workers count as busy: it is utilization of
	 * the cores, not useful work. */
	g = find_group(groups, "sw");
	if (g && gval(g, "task-clock", &v) && wall_ns > 0) {
		double busy = v / wall_ns;
		int th = threads > 0 ? threads : 1;
		pragma_profile_set(p, "par.threads", th, "par");
		pragma_profile_set(p, "par.busy_cores", busy, "par");
		pragma_profile_set(p, "par.utilization", 100 * busy / th, "par");
		pragma_profile_set(p, "par.cpu_ms", v / calls / 1e6, "par");
		if (gval(g, "cpu-migrations", &w) && w / calls >= 1)
			pragma_profile_note(p, "par: %.1f thread migrations per call: threads moved between cores", w / calls);
	} else if (g && json_is_true(json_object_get(g, "ok"))) {
		pragma_profile_unavailable(p, "par", "task-clock was not counted during the calls");
	}
}
