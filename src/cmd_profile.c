#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opts.h"
#include "pragma/build.h"
#include "pragma/backend.h"
#include "pragma/diagnose.h"
#include "pragma/fs.h"
#include "pragma/knowledge.h"
#include "pragma/profile.h"
#include "pragma/refdata.h"
#include "pragma/task.h"
#include "pragma/timing.h"
#include "pragma/verify.h"

static const char usage[] =
	"usage: pragma profile TASK KERNEL.c [--metrics a,b] [--collectors perf,sim,static,mca,roofline,par]\n"
	"                      [--set NAME=VALUE]... [--threads N] [--reps N] [--warmup N] [--warm]\n"
	"                      [--sets N] [--sim-budget SECONDS] [--baseline] [--compare BEST.json]\n"
	"                      [--explain] [--json]\n"
	"\n"
	"Builds KERNEL.c for TASK, checks its outputs against the reference, and profiles it:\n"
	"  timing    median of the timed calls (the cache flushed before each, unless --warm)\n"
	"  perf      cycles, instructions, IPC, branch and cache misses, top-down level 1,\n"
	"            counted around pk_forward only (needs a PMU and perf_event_paranoid <= 2)\n"
	"  par       CPU utilization from task-clock (works without a PMU)\n"
	"  roofline  GFLOP/s and GB/s against the peaks measured by 'pragma machine'\n"
	"  static    instruction mix of the binary, compiler vectorization remarks, where its\n"
	"            loops, calls and spills are\n"
	"  sim       valgrind cache and branch simulation of this build on one thread (20-100x\n"
	"            slower: skipped with a reason past the budget, or when valgrind cannot run\n"
	"            the build: AVX-512)\n"
	"  mca       llvm-mca's model of this build's hottest loops: cycles per iteration,\n"
	"            the busiest port, latency- or port-bound\n"
	"Then it names the bottlenecks the metrics show, with evidence and confidence.\n"
	"\n"
	"  --metrics a,b       extra metrics beyond the default set: registry names\n"
	"                      ('pragma knowledge list' shows them), raw events as\n"
	"                      perf:EVENT, or 'all'\n"
	"  --collectors LIST   which collectors run (default: all of the above)\n"
	"  --threads N         threads for the kernel (default: all usable cores)\n"
	"  --reps N            timed calls (default 10); --warmup N untimed calls first (2)\n"
	"  --sets N            input sets (default 2)\n"
	"  --sim-budget S      longest valgrind run to allow, in seconds (default 300,\n"
	"                      or [profile] sim_budget in the config)\n"
	"  --baseline          also time the task's reference and report the speedup\n"
	"  --compare FILE      compare with a profile saved by --json (the best so far)\n"
	"  --explain           print the compendium entries for what is shown\n"
	"  --backend B         cpu or cuda (default: cuda for a .cu file). CUDA: ptxas resources\n"
	"                      (static), CUDA-event timing, the GPU roofline and Nsight Compute (ncu:\n"
	"                      gpu.*; extra raw ncu metrics as ncu:NAME); without a GPU it reports\n"
	"                      the static analysis and stops with 'no CUDA device' (exit 3)\n";

struct flags {
	const char *metrics, *collectors, *compare, *backend;
	int threads, reps, warmup, warm, sets, baseline, explain;
	double sim_budget;
};

static int extra(int argc, char **argv, int i, void *ctx)
{
	struct flags *f = ctx;

	if (!strcmp(argv[i], "--metrics"))
		return cli_str_arg(argc, argv, i, &f->metrics);
	if (!strcmp(argv[i], "--collectors"))
		return cli_str_arg(argc, argv, i, &f->collectors);
	if (!strcmp(argv[i], "--compare"))
		return cli_str_arg(argc, argv, i, &f->compare);
	if (!strcmp(argv[i], "--backend"))
		return cli_str_arg(argc, argv, i, &f->backend);
	if (!strcmp(argv[i], "--threads"))
		return cli_int_arg(argc, argv, i, &f->threads);
	if (!strcmp(argv[i], "--reps"))
		return cli_int_arg(argc, argv, i, &f->reps);
	if (!strcmp(argv[i], "--warmup"))
		return cli_int_arg(argc, argv, i, &f->warmup);
	if (!strcmp(argv[i], "--sets"))
		return cli_int_arg(argc, argv, i, &f->sets);
	if (!strcmp(argv[i], "--sim-budget")) {
		const char *v;
		char *end;
		if (cli_str_arg(argc, argv, i, &v) < 0)
			return -1;
		f->sim_budget = strtod(v, &end);
		if (*end || f->sim_budget <= 0)
			return cli_usage_error("--sim-budget: '%s' is not a positive number of seconds", v), -1;
		return 2;
	}
	if (!strcmp(argv[i], "--warm"))
		return f->warm = 1, 1;
	if (!strcmp(argv[i], "--baseline"))
		return f->baseline = 1, 1;
	if (!strcmp(argv[i], "--explain"))
		return f->explain = 1, 1;
	return 0;
}

/* "a,b , c" → array of strings (in buf). */
static size_t split_list(const char *s, char *buf, size_t len, const char **out, size_t max)
{
	size_t n = 0;
	char *save = NULL;

	snprintf(buf, len, "%s", s ? s : "");
	for (char *t = strtok_r(buf, ", ", &save); t && n < max; t = strtok_r(NULL, ", ", &save))
		out[n++] = t;
	return n;
}

static int check_timed(void *ctx, const struct pragma_side *sd, const char *dir, json_t *timed_calls, char *why,
		       size_t why_len, struct pragma_err *err)
{
	const struct pragma_profile_opts *po = ctx;

	(void)sd;
	return pragma_verify_saved(po->task, po->sets, po->n_sets, dir, "timed", timed_calls, -1, -1, why, why_len, err);
}

/* The kernel's time and the baseline's, from one timing session: the
 * profile's roofline then uses the same time as the speedup. */
static int baseline_session(const struct pragma_backend *b, const struct pragma_task *t,
			    const struct pragma_refset *sets, struct flags f, struct pragma_profile_opts *po,
			    double *base_ms, struct pragma_err *err)
{
	struct pragma_buf so = PRAGMA_BUF_INIT, src = PRAGMA_BUF_INIT;
	struct pragma_flags fl = PRAGMA_FLAGS_INIT;
	struct pragma_backend_build bb = { 0 };
	struct pragma_side sides[2];
	struct pragma_session_opts o = { 0 };
	struct pragma_session s = { 0 };
	int ret = -1;

	memset(sides, 0, sizeof(sides));
	if (b->require(err) < 0)
		goto out;
	if (pragma_read_file(po->kernel_src, &src, 16 << 20, err) < 0 ||
	    b->flags(&fl, src.data, src.len, NULL, t->atol, t->rtol, err) < 0)
		goto out;
	bb.flags = pragma_flags_argv(&fl);
	bb.confine = 1;
	if (b->build(po->kernel_src, &bb, &so, NULL, err) < 0)
		goto out;
	sides[0].label = "baseline";
	sides[0].backend = b;
	sides[1].label = "kernel";
	sides[1].so = so.data;
	sides[1].backend = b;
	o.task = t;
	o.sets = sets;
	o.n_sets = f.sets;
	o.threads = f.threads;
	o.cold = !f.warm;
	o.rounds = 8;
	o.sessions = 4;
	o.sandbox = 1;
	o.check = check_timed;
	o.check_ctx = po;
	o.what = "profile --baseline";
	if (pragma_session_run(sides, 2, &o, &s, err) < 0)
		goto out;
	if (sides[1].failed) {
		pragma_err_set(err, PRAGMA_E_NEGATIVE, "the kernel failed while timed (%s): %s", sides[1].fail.status,
			       sides[1].fail.message);
		pragma_err_hint(err, "only verified kernels are profiled: 'pragma verify' says what is wrong");
		goto out;
	}
	po->time_ms = sides[1].estimate_ms;
	*base_ms = sides[0].estimate_ms;
	ret = 0;
out:
	pragma_side_release(&sides[0]);
	pragma_side_release(&sides[1]);
	pragma_session_release(&s);
	pragma_flags_release(&fl);
	pragma_buf_release(&so);
	pragma_buf_release(&src);
	return ret;
}

int cmd_profile(int argc, char **argv)
{
	struct flags f = { .sets = 2 };
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct cli_opts o;
	struct pragma_task t;
	int task_loaded = 0;
	struct pragma_refset *sets = NULL;
	struct pragma_profile p = PRAGMA_PROFILE_INIT, best = PRAGMA_PROFILE_INIT;
	struct pragma_diagnosis d = PRAGMA_DIAGNOSIS_INIT;
	struct pragma_machine m;
	int have_m = 0, have_best = 0, rc;
	struct pragma_profile_opts po = { 0 };
	char mbuf[2048];
	const char *extra_list[64];
	size_t n_extra;
	uint64_t seeds[64];
	char *path = NULL;
	json_t *best_json = NULL;
	double po_base_ms = 0;
	/* The backend's collectors; without a device (CUDA) the static
	 * analysis is shown, then exit 3. */
	const struct pragma_backend *backend;
	int stopped = 0;

	if (cli_wants_help(argc, argv)) {
		fputs(usage, stdout);
		return 0;
	}
	if ((rc = cli_parse(argc, argv, &o, extra, &f)))
		return rc;
	if (o.n_positional != 2)
		return cli_usage_error("profile needs TASK and KERNEL.c\n%s", usage);
	if (f.sets < 1 || f.sets > 64)
		return cli_usage_error("--sets must be 1..64");
	n_extra = split_list(f.metrics, mbuf, sizeof(mbuf), extra_list, 64);
	po.collectors = PRAGMA_COL_CPU_ALL;
	if (f.collectors && pragma_collectors_parse(f.collectors, &po.collectors, &err) < 0)
		goto fail;
	backend = pragma_backend_for_path(o.positional[1]);
	if (f.backend && !(backend = pragma_backend_find(f.backend, &err)))
		goto fail;
	if (!f.collectors)
		po.collectors = backend->collectors;
	{
		/* Raw metric names of another collector (ncu:NAME) are its
		 * backend's to check. */
		const char *chk[64];
		size_t n_chk = 0;
		for (size_t i = 0; i < n_extra; i++)
			if (strcmp(backend->raw_metric_prefix, "perf:") == 0 ||
			    strncmp(extra_list[i], backend->raw_metric_prefix, strlen(backend->raw_metric_prefix)))
				chk[n_chk++] = extra_list[i];
		if (pragma_profile_check_extra(chk, n_chk, &err) < 0)
			goto fail;
	}
	if (!pragma_path_exists(o.positional[1])) {
		pragma_err_set(&err, PRAGMA_E_INPUT, "no such kernel source: %s", o.positional[1]);
		goto fail;
	}
	if (f.compare) {
		json_error_t jerr;
		best_json = json_load_file(f.compare, 0, &jerr);
		if (!best_json) {
			pragma_err_set(&err, PRAGMA_E_INPUT, "cannot read %s: %s (line %d)", f.compare, jerr.text, jerr.line);
			goto fail;
		}
		if (pragma_profile_from_json(best_json, &best, &err) < 0) {
			pragma_err_prefix(&err, "%s", f.compare);
			goto fail;
		}
		have_best = 1;
	}
	if (pragma_task_resolve(o.positional[0], &path, &err) < 0 ||
	    pragma_task_load(path, o.sets, o.n_sets, &t, &err) < 0)
		goto fail;
	task_loaded = 1;
	sets = calloc((size_t)f.sets, sizeof(*sets));
	for (int i = 0; i < f.sets; i++)
		seeds[i] = pragma_ref_seed(i);
	if (pragma_ref_ensure(&t, seeds, f.sets, sets, &err) < 0)
		goto fail;
	if (po.collectors & PRAGMA_COL_ROOFLINE) {
		struct pragma_err e = PRAGMA_ERR_INIT;
		have_m = pragma_machine_load(&m, 0, &e) == 0;
	}

	po.task = &t;
	po.kernel_src = o.positional[1];
	po.sets = sets;
	po.n_sets = f.sets;
	po.extra = extra_list;
	po.n_extra = n_extra;
	po.threads = f.threads;
	po.warmup = f.warmup;
	po.reps = f.reps;
	po.warm = f.warm;
	po.sim_budget_s = f.sim_budget;
	po.machine = have_m ? &m : NULL;
	po.check_outputs = 1;
	/* --baseline: the kernel and the baseline in one timing session
	 * first, so the speedup and the roofline share one time. */
	if (f.baseline && baseline_session(backend, &t, sets, f, &po, &po_base_ms, &err) < 0) {
		if (err.kind != PRAGMA_E_ENV)
			goto fail;
		stopped = 1;
	}
	if (!stopped && backend->profile(&po, &p, &err) < 0) {
		if (err.kind != PRAGMA_E_ENV || !p.n)
			goto fail;
		stopped = 1; /* no device: show what the static analysis found */
	}
	if (po.time_ms > 0 && p.n) {
		pragma_profile_set(&p, "time.baseline_ms", po_base_ms, "timing");
		pragma_profile_set(&p, "time.speedup", po_base_ms / po.time_ms, "timing");
	}
	backend->diagnose(&p, have_m ? &m : NULL, &d);

	if (o.json) {
		json_t *res = json_pack("{s:s, s:s, s:s}", "status", stopped ? "no_device" : "ok", "task", t.name, "kernel",
					o.positional[1]);
		json_object_set_new(res, "backend", json_string(backend->name));
		if (stopped)
			json_object_set_new(res, "message", json_string(err.msg));
		json_object_update_new(res, pragma_profile_json(&p, extra_list, n_extra));
		json_object_set_new(res, "diagnosis", pragma_diagnosis_json(&d));
		{
			/* the same profile as a table, for logs and prompts */
			struct pragma_buf tb = PRAGMA_BUF_INIT;
			pragma_profile_table(&p, extra_list, n_extra, &tb);
			pragma_buf_adds(&tb, "\ndiagnosis\n");
			pragma_diagnosis_text(&d, &tb);
			json_object_set_new(res, "table", json_string(tb.data));
			pragma_buf_release(&tb);
		}
		if (have_best)
			json_object_set_new(res, "comparison", pragma_profile_compare_json(&best, &p));
		if (f.explain) {
			struct pragma_knowledge *kb = NULL;
			struct pragma_buf ex = PRAGMA_BUF_INIT;
			if (pragma_knowledge_open(&kb, NULL, &err) == 0) {
				pragma_knowledge_for_profile(kb, &p, extra_list, n_extra, &d, 6000, &ex);
				json_object_set_new(res, "explanation", json_string(ex.data));
				pragma_knowledge_free(kb);
			}
			pragma_buf_release(&ex);
		}
		cli_print_json(res);
	} else {
		struct pragma_buf out = PRAGMA_BUF_INIT;
		printf("task:     %s (%s)\n", t.name, t.category);
		printf("kernel:   %s (%s backend), built by %s", o.positional[1], backend->name,
		       backend->compiler_version(NULL));
		if (p.threads > 0)
			printf(", %d thread%s of %d cores", p.threads, p.threads == 1 ? "" : "s", p.cores);
		printf("\n\n");
		pragma_profile_table(&p, extra_list, n_extra, &out);
		fputs(out.data, stdout);
		pragma_buf_reset(&out);
		printf("\ndiagnosis\n");
		if (d.n) {
			pragma_diagnosis_text(&d, &out);
			fputs(out.data, stdout);
		} else {
			printf("  nothing stands out\n");
		}
		if (have_best) {
			pragma_buf_reset(&out);
			pragma_profile_compare_text(&best, &p, &out);
			printf("\ncompared with %s\n%s", f.compare, out.data);
		}
		if (f.explain) {
			struct pragma_knowledge *kb = NULL;
			pragma_buf_reset(&out);
			if (pragma_knowledge_open(&kb, NULL, &err) == 0) {
				pragma_knowledge_for_profile(kb, &p, extra_list, n_extra, &d, 6000, &out);
				printf("\nwhat these mean\n%s", out.data);
				pragma_knowledge_free(kb);
			} else {
				fprintf(stderr, "pragma: %s\n", err.msg);
			}
		}
		pragma_buf_release(&out);
	}
	pragma_diagnosis_release(&d);
	pragma_profile_release(&p);
	pragma_profile_release(&best);
	json_decref(best_json);
	pragma_task_release(&t);
	free(sets);
	free(path);
	if (stopped)
		return cli_error(&err); /* "no CUDA device: ...", exit 3 */
	return 0;
fail:
	pragma_profile_release(&p);
	pragma_profile_release(&best);
	json_decref(best_json);
	if (task_loaded)
		pragma_task_release(&t);
	free(sets);
	free(path);
	return o.json ? cli_error_json(&err) : cli_error(&err);
}
