/*
 * Running the collectors on one candidate: build it, time it in the harness
 * with counters around pk_forward, check its outputs, then the static
 * analysis of the binary and, within a time budget, the cache simulation.
 */
#include <ctype.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pragma/build.h"
#include "pragma/config.h"
#include "pragma/fs.h"
#include "pragma/log.h"
#include "pragma/proc.h"
#include "pragma/profile.h"
#include "pragma/run.h"
#include "pragma/tensor.h"
#include "pragma/timing.h"
#include "pragma/verify.h"

/* valgrind's slowdown with cache and branch simulation, measured on this
 * kind of kernel (50-100x); estimates err on the slow side. */
#define SIM_SLOWDOWN 100.0
#define SIM_STARTUP_MS 3000.0
#define SIM_DEFAULT_BUDGET_S 300.0

int pragma_profile_check_extra(const char *const *extra, size_t n_extra, struct pragma_err *err)
{
	struct pragma_machine m;
	enum pragma_pmu_kind k = PRAGMA_PMU_GENERIC;
	struct pragma_err e = PRAGMA_ERR_INIT;

	if (pragma_machine_detect(&m, &e) == 0)
		k = pragma_pmu_classify(m.vendor, m.family, m.model);
	for (size_t i = 0; i < n_extra; i++) {
		struct pragma_perf_event ev;
		if (!strcmp(extra[i], "all") || pragma_metric_find(extra[i]))
			continue;
		if (!strncmp(extra[i], "perf:", 5)) {
			if (pragma_perf_event_lookup(k, extra[i] + 5, &ev) == 0)
				continue;
			struct pragma_buf names = PRAGMA_BUF_INIT;
			pragma_perf_event_names(k, &names);
			pragma_err_set(err, PRAGMA_E_INPUT, "unknown perf event '%s' for this CPU (%s)", extra[i] + 5,
				       pragma_pmu_kind_name(k));
			pragma_err_hint(err, "known events: %.900s", names.data);
			pragma_buf_release(&names);
			return -1;
		}
		size_t nd;
		const struct pragma_metric_def *d = pragma_metric_defs(&nd);
		struct pragma_buf names = PRAGMA_BUF_INIT;
		for (size_t j = 0; j < nd; j++)
			pragma_buf_addf(&names, "%s%s", j ? ", " : "", d[j].name);
		pragma_err_set(err, PRAGMA_E_INPUT, "unknown metric '%s'", extra[i]);
		pragma_err_hint(err, "metrics: %.900s; raw perf events as perf:EVENT; 'all' for everything",
				names.data);
		pragma_buf_release(&names);
		return -1;
	}
	return 0;
}

int pragma_profile_harness_run(const struct pragma_profile_harness *h, struct pragma_run_result *r,
			       struct pragma_err *err)
{
	struct pragma_run_opts ro = { 0 };
	struct pragma_rlimits lim;
	int ret, lk;

	ro.backend = pragma_backend_or_default(h->backend);
	ro.kernel_so = h->so;
	ro.task = h->task;
	ro.sets = h->sets;
	ro.n_sets = h->n_sets;
	ro.work_dir = h->dir;
	ro.time_mode = 1;
	ro.warmup = h->warmup;
	ro.reps = h->reps;
	ro.cold = h->cold;
	ro.flush_bytes = h->flush_bytes;
	ro.threads = h->threads;
	ro.timeout_ms = h->timeout_ms;
	ro.sandbox = h->sandbox;
	ro.final_settle_ms = h->final_settle_ms;
	ro.preload = h->preload;
	ro.save_timed = 1;
	ro.wrapper = h->wrapper;
	ro.request = h->request;
	if (h->wrapper && h->sandbox) {
		ro.backend->limits(&ro, &lim);
		lim.cpu_seconds = 0;
		lim.file_size = 0;
		lim.open_files = 0;
		ro.limits = &lim;
	}
	if (pragma_mkdir_p(h->dir, 0755, err) < 0)
		return -1;
	lk = pragma_measure_lock(PRAGMA_LOCK_EXCLUSIVE, h->what ? h->what : "profile a kernel");
	ret = pragma_run_kernel(&ro, r, err);
	pragma_measure_unlock(lk);
	return ret;
}

/* Run the CPU harness once; *res gets its JSON answer. A kernel failure is
 * PRAGMA_E_NEGATIVE with the harness's category and message. perf: the
 * counters to request (borrowed; NULL: none). */
static int run_harness(const struct pragma_profile_opts *o, const struct pragma_profile_harness *hh, json_t *perf,
		       json_t **res, struct pragma_err *err)
{
	struct pragma_profile_harness h = *hh;
	struct pragma_run_result r = { 0 };
	json_t *req = perf ? json_pack("{s:O}", "perf", perf) : NULL;
	int ret = -1;

	*res = NULL;
	h.backend = &pragma_backend_cpu;
	h.task = o->task;
	h.sets = o->sets;
	h.request = req;
	h.what = h.wrapper ? "simulate a kernel" : "profile a kernel";
	if (pragma_profile_harness_run(&h, &r, err) < 0)
		goto out;
	if (r.ok) {
		*res = r.raw;
		r.raw = NULL;
		ret = 0;
	} else {
		pragma_err_set(err, PRAGMA_E_NEGATIVE, "%s: %s", r.status, r.message);
	}
out:
	json_decref(req);
	pragma_run_result_release(&r);
	return ret;
}

/* The outputs of the timed run against the reference: the profile is only
 * for kernels that compute the right thing (a wrong kernel's metrics would
 * mislead). The Verifier's comparison. */
static int check_outputs(const struct pragma_profile_opts *o, const char *dir, json_t *calls, struct pragma_err *err)
{
	char why[1800];
	int r = pragma_verify_saved(o->task, o->sets, o->n_sets, dir, "timed", calls, -1, -1, why, sizeof(why), err);

	if (r > 0) {
		pragma_err_set(err, PRAGMA_E_NEGATIVE, "wrong_output: %s", why);
		pragma_err_hint(err, "only verified kernels are profiled: 'pragma verify' says what is wrong");
		return -1;
	}
	return r;
}

/* The disassembly of a .so's code, with source lines (through inline
 * chains: an intrinsic's instructions get the kernel's line) and raw bytes
 * (an EVEX prefix tells AVX-512 apart exactly). */
static int objdump(const char *so, struct pragma_buf *out, struct pragma_err *err)
{
	const char *argv[] = { "objdump", "-d", "-l", "-w", "--inlines", "-j", ".text", so, NULL };
	struct pragma_child c = PRAGMA_CHILD_INIT;
	int ret = -1;

	c.argv = argv;
	c.timeout_ms = 60000;
	c.out_cap = 64 << 20;
	if (pragma_child_run(&c, err) < 0) {
		pragma_err_hint(err, "install binutils");
	} else if (!c.exited || c.exit_code || c.out_truncated) {
		pragma_err_set(err, PRAGMA_E_ENV, "objdump could not disassemble %s%s%.200s", so, c.err.len ? ": " : "",
			       c.err.data);
	} else {
		pragma_buf_reset(out);
		pragma_buf_add(out, c.out.data, c.out.len);
		ret = 0;
	}
	pragma_child_release(&c);
	return ret;
}

/* The verified .so's disassembly, shared by static, sim and mca: all
 * three read the same build. */
struct code_ev {
	struct pragma_buf dis;
	char dis_err[256];       /* why there is none */
	struct pragma_buf cg;    /* callgrind's output for this .so, when sim ran */
};

static void run_static(const struct pragma_profile_opts *o, const char *so, const struct code_ev *ev,
		       struct pragma_profile *p)
{
	struct pragma_child c = PRAGMA_CHILD_INIT;
	struct pragma_err e = PRAGMA_ERR_INIT;
	struct pragma_buf inc = PRAGMA_BUF_INIT, src = PRAGMA_BUF_INIT;
	const char *cc = getenv("PRAGMA_CC") && *getenv("PRAGMA_CC") ? getenv("PRAGMA_CC") : "gcc";
	int clang = strstr(cc, "clang") != NULL;

	if (!ev->dis.len) {
		pragma_profile_unavailable(p, "static", "%s", ev->dis_err);
		goto out;
	}
	if (pragma_static_parse_objdump(ev->dis.data, p) < 0) {
		pragma_profile_unavailable(p, "static", "no code of the kernel's own in the disassembly of %s", so);
		goto out;
	}

	/* Vectorization remarks: a compile to nowhere with the same flags. */
	{
		struct pragma_buf root = PRAGMA_BUF_INIT;
		if (pragma_data_path("include", &root, &e) == 0)
			pragma_buf_addf(&inc, "-I%s", root.data);
		pragma_buf_release(&root);
	}
	const char *cargv[32];
	int n = 0;
	cargv[n++] = cc;
	cargv[n++] = "-O3";
	cargv[n++] = "-march=native";
	cargv[n++] = "-fopenmp";
	cargv[n++] = "-fPIC";
	cargv[n++] = "-g";
	if (inc.len)
		cargv[n++] = inc.data;
	for (int i = 0; o->flags && o->flags[i] && n < 20; i++)
		cargv[n++] = o->flags[i];
	if (clang) {
		cargv[n++] = "-Rpass=loop-vectorize";
		cargv[n++] = "-Rpass-missed=loop-vectorize";
		cargv[n++] = "-Rpass-analysis=loop-vectorize";
	} else {
		cargv[n++] = "-fopt-info-vec-all";
	}
	cargv[n++] = "-c";
	cargv[n++] = o->kernel_src;
	cargv[n++] = "-o";
	cargv[n++] = "/dev/null";
	cargv[n] = NULL;
	c = (struct pragma_child)PRAGMA_CHILD_INIT;
	c.argv = cargv;
	c.timeout_ms = 120000;
	c.err_cap = 8 << 20;
	c.discard_out = 1;
	if (pragma_child_run(&c, &e) == 0 && c.exited && !c.exit_code) {
		pragma_read_file(o->kernel_src, &src, 16 << 20, NULL);
		pragma_static_parse_remarks(c.err.data, p->source_name, src.len ? src.data : NULL, p);
		pragma_static_mark_vector_loops(ev->dis.data, p);
	} else {
		pragma_profile_note(p, "static: the compiler's vectorization remarks are missing (%s)", e.msg[0] ? e.msg : "compile failed");
	}
out:
	pragma_child_release(&c);
	pragma_buf_release(&inc);
	pragma_buf_release(&src);
}

static double sim_budget(const struct pragma_profile_opts *o)
{
	double b = o->sim_budget_s;
	struct pragma_err e = PRAGMA_ERR_INIT;

	if (b > 0)
		return b;
	if (pragma_config_get_double("profile", "sim_budget", &b, &e) == 1 && b > 0)
		return b;
	return SIM_DEFAULT_BUDGET_S;
}

/* callgrind on the very .so that was verified and timed: never another
 * build. Where valgrind cannot run it (AVX-512 on a machine that has it),
 * sim says so and produces nothing. */
static void run_sim(const struct pragma_profile_opts *o, const struct pragma_machine *m, const char *so,
		    const char *dir, double median_ms, struct code_ev *ev, struct pragma_profile *p)
{
	struct pragma_buf valgrind = PRAGMA_BUF_INIT, out = PRAGMA_BUF_INIT, sdir = PRAGMA_BUF_INIT,
			  toggle = PRAGMA_BUF_INIT;
	struct pragma_err e = PRAGMA_ERR_INIT;
	char cache[3][64];
	const char *wrapper[16], *refuse;
	double cpu_ms, budget = sim_budget(o), est;
	int n = 0, line = 64;
	json_t *res = NULL;

	if (!pragma_which("valgrind", &valgrind)) {
		pragma_profile_unavailable(p, "sim", "valgrind is not installed (apt-get install valgrind)");
		goto out;
	}
	if (!ev->dis.len) {
		pragma_profile_unavailable(p, "sim", "cannot tell whether valgrind can run this build: %s", ev->dis_err);
		goto out;
	}
	if ((refuse = pragma_sim_refuse(ev->dis.data, p->source_name, m))) {
		pragma_profile_unavailable(p, "sim", "%s", refuse);
		goto out;
	}
	/* The work of one call on one thread: CPU time if we counted it. */
	if (!pragma_profile_get(p, "par.cpu_ms", &cpu_ms))
		cpu_ms = median_ms * (p->threads > 0 ? p->threads : 1);
	est = (cpu_ms * SIM_SLOWDOWN + SIM_STARTUP_MS) / 1e3;
	if (est > budget) {
		pragma_profile_unavailable(p, "sim",
					   "skipped: about %.0f s under valgrind (%.1f ms of CPU per call x %.0f) is over "
					   "the budget of %.0f s (--sim-budget, or [profile] sim_budget in the config); "
					   "a smaller size (--set) makes it affordable",
					   est, cpu_ms, SIM_SLOWDOWN, budget);
		goto out;
	}
	pragma_buf_addf(&sdir, "%s/sim", dir);
	pragma_buf_addf(&out, "%s/callgrind.out", dir);
	pragma_buf_addf(&toggle, "--callgrind-out-file=%s", out.data);
	wrapper[n++] = valgrind.data;
	wrapper[n++] = "--tool=callgrind";
	wrapper[n++] = "--toggle-collect=pk_forward";
	wrapper[n++] = "--collect-atstart=no";
	wrapper[n++] = "--cache-sim=yes";
	wrapper[n++] = "--branch-sim=yes";
	wrapper[n++] = "--dump-instr=yes";
	wrapper[n++] = "--error-limit=no";
	int nc = pragma_sim_cache_args(m, cache);
	for (int i = 0; i < nc; i++)
		wrapper[n++] = cache[i];
	wrapper[n++] = toggle.data;
	wrapper[n] = NULL;
	for (int i = 0; m && i < m->n_caches; i++)
		if (m->caches[i].line > 0)
			line = m->caches[i].line;
	if (nc < 3)
		pragma_profile_note(p, "sim: valgrind chose part of the cache geometry itself (sysfs did not describe every level)");

	struct pragma_profile_harness h = { .so = so, .dir = sdir.data, .n_sets = 1, .warmup = 0, .reps = 1, .cold = 1,
					    .sandbox = 0, .threads = 1, .wrapper = wrapper,
					    .timeout_ms = (int)(fmin(budget * 3, 7200) * 1000) };
	if (run_harness(o, &h, NULL, &res, &e) < 0) {
		pragma_profile_unavailable(p, "sim", "the run under valgrind failed: %s", e.msg);
		goto out;
	}
	if (pragma_read_file(out.data, &ev->cg, 256 << 20, &e) < 0 ||
	    pragma_sim_parse(ev->cg.data, 1, line, p, &e) < 0) {
		pragma_buf_reset(&ev->cg);
		pragma_profile_unavailable(p, "sim", "%s", e.msg);
		goto out;
	}
	if (pragma_sim_parse_mix(ev->cg.data, ev->dis.data, so, 1, p) < 0)
		pragma_profile_note(p, "sim: no per-instruction counts for the kernel, so no executed instruction mix");
	double busy = 0;
	pragma_profile_note(p, "sim: threads simulated: 1 of %d%s; cache and branch rates are one thread's view of a "
			       "cold cache, with absolute counts beside them (a rare mispredicted loop exit is not a "
			       "branch problem)", p->threads > 0 ? p->threads : 1,
			    pragma_profile_get(p, "par.busy_cores", &busy) && busy < 1.2 && p->threads > 1
				    ? " (the kernel keeps one core busy: little is lost)" : "");
	pragma_profile_note(p, "sim: simulated the verified build itself; the simulated run is not sandboxed "
			       "(valgrind cannot run under seccomp and Landlock), and only kernels that passed "
			       "verification get here");
out:
	json_decref(res);
	pragma_buf_release(&valgrind);
	pragma_buf_release(&out);
	pragma_buf_release(&sdir);
	pragma_buf_release(&toggle);
}

/* llvm-mca, the newest installed (Debian: llvm-mca-19 from llvm-19, or
 * llvm-mca from the llvm package, which is 14 on Debian 12); *version its
 * major version (from the name, else from --version; 0 unknown). */
static int find_llvm_mca(struct pragma_buf *path, int *version)
{
	static const char *const names[] = { "llvm-mca-21", "llvm-mca-20", "llvm-mca-19", "llvm-mca-18", "llvm-mca-17",
					     "llvm-mca-16", "llvm-mca-15", "llvm-mca", "llvm-mca-14", "llvm-mca-13", NULL };

	*version = 0;
	for (int i = 0; names[i]; i++) {
		if (!pragma_which(names[i], path))
			continue;
		const char *dash = strrchr(names[i], '-');
		if (dash && isdigit((unsigned char)dash[1])) {
			*version = atoi(dash + 1);
		} else {
			const char *argv[] = { path->data, "--version", NULL };
			struct pragma_child c = PRAGMA_CHILD_INIT;
			struct pragma_err e = PRAGMA_ERR_INIT;
			c.argv = argv;
			c.timeout_ms = 10000;
			c.out_cap = 16 << 10;
			if (pragma_child_run(&c, &e) == 0 && c.out.len) {
				const char *v = strstr(c.out.data, "LLVM version ");
				if (v)
					*version = atoi(v + 13);
			}
			pragma_child_release(&c);
		}
		return 1;
	}
	return 0;
}

#define MCA_MAX_LOOPS 8
#define MCA_BUDGET_MS 60000.0

/* llvm-mca on the hottest innermost loops of the verified .so; with
 * callgrind's counts of the same .so when sim ran, to find them. */
static void run_mca(const struct pragma_machine *m, const char *so, const struct code_ev *ev, struct pragma_profile *p)
{
	struct pragma_buf mca = PRAGMA_BUF_INIT;
	struct pragma_mca_plan plan;
	char first_err[300] = "";
	double spent = 0;
	int analyzed = 0, version;

	memset(&plan, 0, sizeof(plan));
	if (!find_llvm_mca(&mca, &version)) {
		pragma_profile_unavailable(p, "mca", "llvm-mca is not installed (apt-get install llvm; "
						     "scripts/install-deps.sh)");
		goto out;
	}
	if (!ev->dis.len) {
		pragma_profile_unavailable(p, "mca", "needs the disassembly of the build: %s", ev->dis_err);
		goto out;
	}
	if (pragma_mca_plan(ev->dis.data, p->source_name, ev->cg.len ? ev->cg.data : NULL, so, m, version,
			    MCA_MAX_LOOPS, &plan) < 0) {
		pragma_profile_unavailable(p, "mca", "no code of the kernel's own in the disassembly of %s", so);
		goto out;
	}
	if (!plan.n) {
		if (!plan.n_found)
			pragma_profile_unavailable(p, "mca", "the kernel's code has no loops: nothing to model");
		else
			pragma_profile_unavailable(p, "mca",
						   "none of the %zu innermost loops (of %zu) can be modeled: over %d "
						   "instructions, or never executed in the simulated call",
						   plan.n_innermost, plan.n_found, 2000);
		goto out;
	}
	for (size_t k = 0; k < plan.n && spent < MCA_BUDGET_MS; k++) {
		struct pragma_mca_loop *l = &plan.loops[k];
		char cpu[48], iters[32];
		snprintf(cpu, sizeof(cpu), "-mcpu=%s", plan.cpu);
		/* a few hundred iterations of a small body; of a large one
		 * (unrolled code), enough for the same number of instructions */
		int it = l->n_insns > 200 ? 40000 / l->n_insns : plan.iterations;
		snprintf(iters, sizeof(iters), "-iterations=%d", it < 20 ? 20 : it);
		for (int attempt = 0; attempt < 4; attempt++) {
			const char *argv[] = { mca.data, "-mtriple=x86_64-unknown-linux-gnu", cpu, iters,
					       "-bottleneck-analysis", "-", NULL };
			struct pragma_child c = PRAGMA_CHILD_INIT;
			struct pragma_err e = PRAGMA_ERR_INIT;
			c.argv = argv;
			c.stdin_data = l->input;
			c.stdin_len = strlen(l->input);
			c.timeout_ms = 30000;
			c.out_cap = 8 << 20;
			c.err_cap = 64 << 10;
			int rc = pragma_child_run(&c, &e);
			spent += c.wall_ms;
			if (rc == 0 && c.exited && !c.exit_code && !c.out_truncated) {
				if (pragma_mca_parse(c.out.data, l, &e) == 0)
					analyzed++;
				else
					snprintf(l->error, sizeof(l->error), "%.190s", e.msg);
				pragma_child_release(&c);
				break;
			}
			snprintf(l->error, sizeof(l->error), "%.190s", rc < 0 ? e.msg : c.err.len ? c.err.data : "llvm-mca failed");
			int again = rc == 0 && c.exited && pragma_mca_fix_input(l, c.err.data) > 0;
			pragma_child_release(&c);
			if (!again)
				break;
		}
		if (!l->analyzed && !first_err[0]) {
			char *nl = strchr(l->error, '\n');
			if (nl)
				*nl = 0;
			snprintf(first_err, sizeof(first_err), "%.199s", l->error);
		}
	}
	if (!analyzed) {
		pragma_profile_unavailable(p, "mca", "llvm-mca (model %s) could not analyze any loop: %s", plan.cpu,
					   first_err);
		goto out;
	}
	pragma_mca_report(&plan, p->source_name, p);
	if (spent >= MCA_BUDGET_MS)
		pragma_profile_note(p, "mca: stopped after %.0f s (budget): fewer loops modeled", spent / 1e3);
out:
	pragma_mca_plan_release(&plan);
	pragma_buf_release(&mca);
}

int pragma_profile_run(const struct pragma_profile_opts *o, struct pragma_profile *p, struct pragma_err *err)
{
	unsigned mask = (o->collectors ? o->collectors : PRAGMA_COL_CPU_ALL) | PRAGMA_COL_TIMING;
	struct pragma_machine mach, *m = NULL;
	struct pragma_buf so = PRAGMA_BUF_INIT, cache = PRAGMA_BUF_INIT, work = PRAGMA_BUF_INIT;
	struct pragma_err e = PRAGMA_ERR_INIT;
	json_t *res = NULL, *perf_req = NULL;
	enum pragma_pmu_kind kind = PRAGMA_PMU_GENERIC;
	const char *no_pmu = NULL;
	struct pragma_symbols syms = PRAGMA_SYMBOLS_INIT;
	const char *preload[16] = { NULL };
	double median = 0;
	int ret = -1;

	pragma_profile_init(p);
	/* Names nobody can collect (a Conductor's guess) are noted and left
	 * out: the profile of the rest is still worth having. The CLI refuses
	 * them before it gets here. */
	const char **extra = calloc(o->n_extra + 1, sizeof(*extra));
	size_t n_extra = 0;
	if (!extra)
		abort();
	for (size_t i = 0; i < o->n_extra; i++) {
		struct pragma_err e1 = PRAGMA_ERR_INIT;
		if (pragma_profile_check_extra(&o->extra[i], 1, &e1) == 0)
			extra[n_extra++] = o->extra[i];
		else
			pragma_profile_note(p, "metrics: %s; not collected", e1.msg);
	}
	{
		const char *b = strrchr(o->kernel_src, '/');
		snprintf(p->source_name, sizeof(p->source_name), "%s", b ? b + 1 : o->kernel_src);
	}
	p->flops = o->task->flops;
	p->bytes = o->task->bytes;
	p->out_bytes = pragma_task_output_bytes(o->task);
	p->cores = pragma_usable_cores();
	p->threads = o->threads > 0 ? o->threads : p->cores;
	if (p->threads > p->cores) {
		pragma_err_set(err, PRAGMA_E_INPUT, "%d threads, but this process may use %d cores", p->threads, p->cores);
		pragma_err_hint(err, "--threads 1..%d (the default is all of them)", p->cores);
		free(extra);
		return -1;
	}

	/* The machine: vendor and model for the counters, cache geometry for
	 * the simulator, measured peaks for the roofline (measured once and
	 * cached; the first profile on a machine pays a few seconds). */
	if (o->machine) {
		m = (struct pragma_machine *)o->machine;
	} else if ((mask & PRAGMA_COL_ROOFLINE) ? pragma_machine_load(&mach, 0, &e) == 0
						  : pragma_machine_detect(&mach, &e) == 0) {
		m = &mach;
	} else {
		pragma_profile_note(p, "machine: %s", e.msg);
	}
	if (m)
		kind = pragma_pmu_classify(m->vendor, m->family, m->model);

	{
		/* The very build the Verifier checked: the source's own
		 * "// pragma:flags" then the caller's, the same backend and jail
		 * (so the build cache hands back the same object). */
		struct pragma_buf src = PRAGMA_BUF_INIT, extra_flags = PRAGMA_BUF_INIT;
		struct pragma_flags fl = PRAGMA_FLAGS_INIT;
		struct pragma_backend_build bb = { .confine = !o->no_sandbox };
		int br = -1;
		for (int i = 0; o->flags && o->flags[i]; i++)
			pragma_buf_addf(&extra_flags, "%s%s", i ? " " : "", o->flags[i]);
		if (pragma_read_file(o->kernel_src, &src, 16 << 20, err) == 0 &&
		    pragma_backend_cpu.flags(&fl, src.data, src.len, extra_flags.len ? extra_flags.data : NULL,
					     o->task->atol, o->task->rtol, err) == 0) {
			int lk = pragma_measure_lock(PRAGMA_LOCK_SHARED, "compile a kernel");
			bb.flags = pragma_flags_argv(&fl);
			br = pragma_backend_cpu.build(o->kernel_src, &bb, &so, NULL, err);
			pragma_measure_unlock(lk);
		}
		pragma_flags_release(&fl);
		pragma_buf_release(&src);
		pragma_buf_release(&extra_flags);
		if (br < 0)
			goto out;
	}
	/* OpenMP and friends initialize before the sandbox, as in verification. */
	if (pragma_symbols_read(so.data, &syms, &e) == 0)
		pragma_symbols_preload(&syms, preload, 16);
	if (pragma_cache_dir(&cache, err) < 0 || pragma_mkdtemp(cache.data, "profile-", &work, err) < 0)
		goto out;

	if (mask & PRAGMA_COL_PERF) {
		no_pmu = pragma_perf_probe();
		if (no_pmu)
			pragma_profile_unavailable(p, "perf", "%s", no_pmu);
	}
	if ((mask & PRAGMA_COL_PERF && !no_pmu) || (mask & PRAGMA_COL_PAR)) {
		perf_req = pragma_perf_request(kind, (mask & PRAGMA_COL_PERF) && !no_pmu, !!(mask & PRAGMA_COL_PAR),
					       extra, n_extra, err);
		if (!perf_req)
			goto out;
		/* The sandbox answers ioctl with ENOTTY: count by reading. */
		json_object_set_new(perf_req, "method", json_string("read"));
	}

	struct pragma_profile_harness h = { .so = so.data, .preload = preload, .dir = work.data, .n_sets = o->n_sets,
					    .warmup = o->warmup > 0 ? o->warmup : 2, .reps = o->reps > 0 ? o->reps : 10,
					    .cold = !o->warm, .sandbox = 1, .threads = p->threads, .timeout_ms = 600000 };
	if (run_harness(o, &h, perf_req, &res, err) < 0) {
		if (err->kind == PRAGMA_E_NEGATIVE)
			pragma_err_prefix(err, "the kernel failed in the harness");
		goto out;
	}
	if (o->check_outputs && check_outputs(o, work.data, json_object_get(res, "timed_calls"), err) < 0)
		goto out;

	{
		json_t *t = json_object_get(res, "times_ms"), *v;
		size_t i, nt = json_array_size(t);
		double *times = calloc(nt + 1, sizeof(double));
		struct pragma_stats st;
		json_array_foreach(t, i, v)
			times[i] = json_number_value(v);
		pragma_stats_compute(times, (int)nt, &st);
		free(times);
		median = st.median;
		pragma_profile_set(p, "time.median_ms", st.median, "timing");
		pragma_profile_set(p, "time.min_ms", st.min, "timing");
		if (st.mean > 0)
			pragma_profile_set(p, "time.stdev_pct", 100 * st.stdev / st.mean, "timing");
		pragma_profile_note(p, "timing: median of %d calls after %d warm-up calls, %s, %d thread%s; one run on a "
				       "shared machine can be 10-30%% off, so compare times only by interleaved runs",
				    st.count, h.warmup, o->warm ? "warm cache" : "cache flushed before each call",
				    p->threads, p->threads == 1 ? "" : "s");
	}
	if (perf_req) {
		json_t *ans = json_object_get(res, "perf");
		if (!ans) {
			const char *why = "this pragma-harness has no counter hook (runtime/perf_counters.c): rebuild it";
			if (mask & PRAGMA_COL_PERF && !no_pmu)
				pragma_profile_unavailable(p, "perf", "%s", why);
			if (mask & PRAGMA_COL_PAR)
				pragma_profile_unavailable(p, "par", "%s", why);
		} else {
			pragma_perf_derive(kind, ans, p->threads, p);
		}
	}
	if (o->time_ms > 0) {
		/* The timing session measured this build side by side with the
		 * baseline: the roofline uses that time, so the fraction shown
		 * matches the time shown. A profiled run far off it (counters,
		 * another process's placement, a busy machine) is said. */
		p->timed_ms = o->time_ms;
		pragma_profile_note(p, "roofline: from the timing session's %.4g ms; this profiled run's median was %.4g ms%s",
				    o->time_ms, median,
				    pragma_profile_far_from_timed(p) ? " — far from it, so rates derived from this run (busy cores, "
							  "counters per call) may not describe the timed kernel, and the diagnosis leaves its busy cores out"
							: "");
	}
	if (mask & PRAGMA_COL_ROOFLINE)
		pragma_roofline(o->task->flops, o->task->bytes, o->time_ms > 0 ? o->time_ms : median, m, p);
	{
		/* static, sim and mca all read this one build's code */
		struct code_ev ev = { PRAGMA_BUF_INIT, "", PRAGMA_BUF_INIT };
		if (mask & (PRAGMA_COL_STATIC | PRAGMA_COL_SIM | PRAGMA_COL_MCA)) {
			struct pragma_err de = PRAGMA_ERR_INIT;
			if (objdump(so.data, &ev.dis, &de) < 0)
				snprintf(ev.dis_err, sizeof(ev.dis_err), "%.250s", de.msg);
		}
		if (mask & PRAGMA_COL_STATIC)
			run_static(o, so.data, &ev, p);
		if (mask & PRAGMA_COL_SIM)
			run_sim(o, m, so.data, work.data, median, &ev, p);
		if (mask & PRAGMA_COL_MCA)
			run_mca(m, so.data, &ev, p);
		pragma_buf_release(&ev.dis);
		pragma_buf_release(&ev.cg);
	}
	ret = 0;
out:
	free(extra);
	json_decref(res);
	json_decref(perf_req);
	if (work.len)
		pragma_rm_rf(work.data, NULL);
	pragma_symbols_release(&syms);
	pragma_buf_release(&so);
	pragma_buf_release(&cache);
	pragma_buf_release(&work);
	return ret;
}
