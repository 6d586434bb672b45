/* pragma verify / pragma eval: the Verifier from the command line. */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opts.h"
#include "pragma/backend.h"
#include "pragma/cuda.h"
#include "pragma/machine.h"
#include "pragma/timing.h"
#include "pragma/verify.h"

static const char verify_usage[] =
	"usage: pragma verify TASK KERNEL.c|KERNEL.cu [--json] [--set NAME=VALUE]... [--sets N]\n"
	"                     [--flags \"-funroll-loops ...\"] [--cc gcc|clang] [--atol X] [--rtol X]\n"
	"                     [--timeout SECONDS] [--threads N] [--keep] [--work-dir DIR]\n"
	"\n"
	"Compiles KERNEL.c (flags from '// pragma:flags' lines and --flags, filtered by\n"
	"an allow-list), refuses forbidden imports, runs it in a sandboxed harness on N\n"
	"seeded input sets (three passes: plain, repeated, and with inputs moved between\n"
	"buffers), and compares every output with the reference here, where the harness\n"
	"cannot see it. Exit 0 when correct, 1 with the category and a one-line reason\n"
	"otherwise (DESIGN 3.4), 2 for usage errors, 3 for environment problems.\n"
	"\n"
	"  --sets N        input sets (default 5)\n"
	"  --set N=V       override a module-level constant or a task size\n"
	"  --flags F       extra compiler flags (same allow-list as the kernel's own)\n"
	"  --cc C          gcc (default, or $PRAGMA_CC) or clang\n"
	"  --atol/--rtol   tolerance (default: the task's, per dtype)\n"
	"  --timeout S     deadline for the harness run (default 60)\n"
	"  --threads N     threads (default: all usable cores)\n"
	"  --keep          keep the work directory and say where it is: the harness request, every\n"
	"                  output of every pass, compile.log, harness.log (what the kernel printed),\n"
	"                  verdict.json\n"
	"  --work-dir DIR  use (and keep) DIR as the work directory\n"
	"  --no-sandbox    no seccomp/Landlock (debugging only; the verdict says so)\n"
	"  --backend B     cpu (C via gcc/clang) or cuda (CUDA C via nvcc, run on the GPU);\n"
	"                  default: cuda for a .cu file, else cpu. Without a GPU a CUDA kernel is\n"
	"                  built and checked (imports, ptxas resources), then stops: no_device, exit 3\n";

static const char eval_usage[] =
	"usage: pragma eval TASK KERNEL.c [verify options] [--rounds N] [--reps N] [--warmup N]\n"
	"                   [--warm] [--margin X] [--max-wait S] [--attempts N] [--json]\n"
	"\n"
	"Verifies KERNEL.c like 'pragma verify', then times it against the task's\n"
	"baseline (PyTorch for KernelBench problems, the C reference or baseline.c for\n"
	"native tasks) by the same protocol (DESIGN 3.5): one warm process per side,\n"
	"rounds of timed calls interleaved B C / C B ..., cold cache before every call,\n"
	"the verified input sets in turn, threads = usable cores on both sides. Reports\n"
	"time_ms and baseline_ms (median/mean/stdev/min/max/count), the speedup (ratio\n"
	"of medians) with its 95% interval (a bootstrap over the sessions, then the\n"
	"rounds within them, stretched for few sessions), and checks the outputs of the timed calls and the time\n"
	"against the memory system's peak (impossible_speed).\n"
	"\n"
	"  --rounds N      interleaved rounds that no other process disturbed (default\n"
	"                  15; on a busy machine up to 3N rounds are made to get them)\n"
	"  --reps N        timed calls per round per side (default 5)\n"
	"  --warmup N      untimed calls per side before the first round (default 3)\n"
	"  --warm          do not flush the cache between calls\n"
	"  --margin X      impossible_speed above X times the peak bandwidth (default 1.5)\n"
	"  --max-wait S    wait up to S seconds in all for a quiet machine before rounds\n"
	"                  (default 20; 0: never wait)\n"
	"  --sessions N    spread the rounds over N fresh pairs of processes, started\n"
	"                  baseline-first and candidate-first in turn (default: one\n"
	"                  per 2 rounds, at least 4, 8 for 15; fewer widen the interval)\n"
	"  --attempts N    measure a round up to N times while other processes take the\n"
	"                  CPU from it (default 3; the least disturbed attempt counts)\n";

struct vflags {
	struct pragma_verify_opts o;
	int eval;
	int backend_set;
};

static int num_arg(int argc, char **argv, int i, double lo, double hi, double *out)
{
	char *end;
	double v;

	if (i + 1 >= argc)
		return cli_usage_error("%s needs a value", argv[i]), -1;
	v = strtod(argv[i + 1], &end);
	if (*end || end == argv[i + 1] || v < lo || v > hi)
		return cli_usage_error("%s: '%s' is not a valid value (%g..%g)", argv[i], argv[i + 1], lo, hi), -1;
	*out = v;
	return 2;
}

static int int_arg(int argc, char **argv, int i, int lo, int hi, int *out)
{
	double d;
	int rc = num_arg(argc, argv, i, lo, hi, &d);

	if (rc > 0) {
		if (d != (int)d)
			return cli_usage_error("%s: '%s' is not a whole number", argv[i], argv[i + 1]), -1;
		*out = (int)d;
	}
	return rc;
}

static int extra(int argc, char **argv, int i, void *ctx)
{
	struct vflags *f = ctx;
	struct pragma_verify_opts *o = &f->o;
	const char *a = argv[i];
	double d;
	int rc;

	if (!strcmp(a, "--sets"))
		return int_arg(argc, argv, i, 1, 64, &o->n_sets);
	if (!strcmp(a, "--threads"))
		return int_arg(argc, argv, i, 1, 1024, &o->threads);
	if (!strcmp(a, "--timeout")) {
		rc = num_arg(argc, argv, i, 0.1, 86400, &d);
		if (rc > 0)
			o->timeout_ms = (int)(d * 1000);
		return rc;
	}
	if (!strcmp(a, "--atol"))
		return num_arg(argc, argv, i, 0, 1e30, &o->atol);
	if (!strcmp(a, "--rtol"))
		return num_arg(argc, argv, i, 0, 1e30, &o->rtol);
	if (!strcmp(a, "--flags") || !strcmp(a, "--cc") || !strcmp(a, "--work-dir")) {
		if (i + 1 >= argc)
			return cli_usage_error("%s needs a value", a), -1;
		if (!strcmp(a, "--flags"))
			o->flags = argv[i + 1];
		else if (!strcmp(a, "--cc"))
			o->compiler = argv[i + 1];
		else
			o->work_dir = argv[i + 1];
		return 2;
	}
	if (!strcmp(a, "--keep")) {
		o->keep = 1;
		return 1;
	}
	if (!strcmp(a, "--backend")) {
		struct pragma_err e = PRAGMA_ERR_INIT;
		if (i + 1 >= argc)
			return cli_usage_error("--backend needs cpu or cuda"), -1;
		if (!(o->backend = pragma_backend_find(argv[i + 1], &e)))
			return cli_usage_error("%s (%s)", e.msg, e.hint), -1;
		f->backend_set = 1;
		return 2;
	}
	if (!strcmp(a, "--no-sandbox")) {
		o->no_sandbox = 1;
		return 1;
	}
	if (!strcmp(a, "--no-compile-jail")) {
		o->no_compile_jail = 1;
		return 1;
	}
	if (!f->eval)
		return 0;
	if (!strcmp(a, "--rounds"))
		return int_arg(argc, argv, i, 1, 1000, &o->rounds);
	if (!strcmp(a, "--reps"))
		return int_arg(argc, argv, i, 1, 100000, &o->reps);
	if (!strcmp(a, "--warmup"))
		return int_arg(argc, argv, i, 0, 100000, &o->warmup);
	if (!strcmp(a, "--margin"))
		return num_arg(argc, argv, i, 1, 1000, &o->speed_margin);
	if (!strcmp(a, "--max-wait")) {
		rc = num_arg(argc, argv, i, 0, 3600, &d);
		if (rc > 0)
			o->max_wait_ms = d > 0 ? (int)(d * 1000) : -1;
		return rc;
	}
	if (!strcmp(a, "--attempts"))
		return int_arg(argc, argv, i, 1, 100, &o->max_attempts);
	if (!strcmp(a, "--sessions"))
		return int_arg(argc, argv, i, 1, 100, &o->sessions);
	if (!strcmp(a, "--warm")) {
		o->cold = 0;
		return 1;
	}
	if (!strcmp(a, "--cold")) {
		o->cold = 1;
		return 1;
	}
	return 0;
}

static void print_human(const struct pragma_verdict *v, const struct pragma_task *t, const char *kernel, int eval)
{
	printf("task:      %s (%s, %s)\n", t->name, t->category, t->kind == PRAGMA_TASK_NATIVE ? "native C" : "KernelBench");
	printf("kernel:    %s (%s", kernel, v->compiler);
	for (int i = 0; i < v->n_flags; i++)
		printf(" %s", v->flags[i]);
	printf(")\n");
	printf("sandbox:   %s; seccomp %s; landlock %s%s\n", v->sandboxed ? "on" : "OFF", v->seccomp ? "on" : "off",
	       v->landlock,
	       v->sandbox_unconfirmed ? " (as requested: the harness ended before it could confirm)" : "");
	if (v->status != PRAGMA_V_OK)
		return;
	char tol[1024], bound[48] = "";
	if (v->norm_bound > 0)
		snprintf(bound, sizeof(bound), " of %.3g allowed", v->norm_bound);
	printf("verified:  ok on %d input sets x 3 passes (max abs error %.3g, max rel error %.3g, norm-wise error "
	       "%.3g%s)\n",
	       v->n_sets, v->max_abs_err, v->max_rel_err, v->norm_err, bound);
	printf("tolerance: %s\n", pragma_verdict_tolerance_str(v, tol, sizeof(tol)));
	if (!v->certified)
		printf("NOT CERTIFIED: the check cannot tell trivial answers from right ones: %s\n", v->not_certified);
	if (!eval)
		return;
	/* The time is pragma_estimate(): the median of every call kept. */
	printf("time:      %.4g ms   (median of the %d calls kept, %d rounds; min %.4g, max %.4g)\n",
	       v->cand.estimate_ms, v->cand.stats.count, v->cand.t.n_rounds, v->cand.stats.min, v->cand.stats.max);
	printf("baseline:  %.4g ms   (%s, the same rounds; median of %d calls, min %.4g, max %.4g)\n",
	       v->base.estimate_ms, v->baseline_kind, v->base.stats.count, v->base.stats.min, v->base.stats.max);
	printf("speedup:   %.3fx [%.3f–%.3f]   (baseline time / kernel time; 95%% interval: a bootstrap over the "
	       "sessions, then the rounds within them, stretched for few sessions)\n",
	       v->speedup, v->speedup_lo, v->speedup_hi);
	printf("noise:     %d of %d rounds undisturbed on both sides (%d used); %d measured again after other "
	       "processes took the CPU; worst kept round lost %.0f%% to the run queue; waited %.1f s for quiet\n",
	       v->rounds_clean, v->rounds_made, v->rounds_used, v->retried_rounds, 100 * v->worst_disturbance,
	       v->waited_ms / 1000);
	/* The roof a kernel timed like this can reach (pragma machine's
	 * protocol roof), when the verdict's peaks are this CPU's: the peak in
	 * the verdict is the impossible-speed limit, which no such kernel nears. */
	struct pragma_machine m;
	struct pragma_err merr = PRAGMA_ERR_INIT;
	double roof = v->peak_gbs > 0 && pragma_machine_cached(&m, &merr) == 0 && m.peak_gbs == v->peak_gbs ? m.roof_gbs : 0;
	if (v->gbs > 0) {
		printf("rate:      %.2f GB/s of minimal traffic", v->gbs);
		if (roof > 0)
			printf(" (%.0f%% of the bandwidth roof %.1f GB/s, the best a streaming kernel reaches timed this "
			       "way; the impossible-speed limit is %.1f GB/s)", 100 * v->gbs / roof, roof, v->peak_gbs);
		else if (v->peak_gbs > 0)
			printf(" (%.0f%% of the measured peak %.1f GB/s)", 100 * v->gbs / v->peak_gbs, v->peak_gbs);
		printf("\n");
	}
	if (v->gflops > 0) {
		printf("           %.2f GFLOP/s", v->gflops);
		if (v->peak_gflops > 0 && v->gflops > v->peak_gflops)
			printf(" (%.2fx the measured FP32 peak %.1f GFLOP/s by the task's FLOP count: fewer FLOPs done "
			       "than counted, e.g. Winograd or Strassen)", v->gflops / v->peak_gflops, v->peak_gflops);
		else if (v->peak_gflops > 0)
			printf(" (%.0f%% of the measured peak %.1f GFLOP/s)", 100 * v->gflops / v->peak_gflops, v->peak_gflops);
		printf("\n");
	}
	for (int i = 0; i < v->n_warnings; i++)
		printf("warning:   %s\n", v->warnings[i]);
}

/* Shared by cmd_verify and cmd_eval (cmd_eval.c). */
int verify_command(int argc, char **argv, int eval);

int verify_command(int argc, char **argv, int eval)
{
	struct vflags f = { .o = PRAGMA_VERIFY_DEFAULTS, .eval = eval };
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_verdict v;
	struct pragma_task t;
	struct cli_opts o;
	char *path = NULL;
	json_t *second = NULL;
	int rc;

	if (cli_wants_help(argc, argv)) {
		fputs(eval ? eval_usage : verify_usage, stdout);
		return 0;
	}
	if ((rc = cli_parse(argc, argv, &o, extra, &f)))
		return rc;
	if (o.n_positional != 2)
		return cli_usage_error("%s needs TASK and KERNEL.c\n%s", argv[0], eval ? eval_usage : verify_usage);
	f.o.time = eval;
	if (!f.backend_set)
		f.o.backend = pragma_backend_for_path(o.positional[1]);
	pragma_verdict_init(&v);
	if (pragma_task_resolve(o.positional[0], &path, &err) < 0)
		goto fail;
	if (pragma_task_load(path, o.sets, o.n_sets, &t, &err) < 0)
		goto fail;
	rc = pragma_verify(&t, o.positional[1], &f.o, &v, &err);
	if (rc < 0) {
		pragma_task_release(&t);
		goto fail;
	}
	/* torch.compile, the second named baseline (lib/cuda/baseline.c):
	 * timed after the comparison, on the GPU for a CUDA kernel. */
	if (eval && v.status == PRAGMA_V_OK && t.kind == PRAGMA_TASK_KERNELBENCH) {
		struct pragma_timing_opts to = PRAGMA_TIMING_DEFAULTS;
		to.warmup = f.o.warmup > 0 ? f.o.warmup : to.warmup;
		to.cold = f.o.cold;
		second = f.o.backend->second_baseline(&t, v.n_sets, &to, v.cand.estimate_ms);
	}
	if (o.json) {
		json_t *j = pragma_verdict_json(&v);
		if (second)
			json_object_set_new(j, "second_baselines", json_pack("[O]", second));
		json_object_set_new(j, "kernel", json_string(o.positional[1]));
		json_object_set_new(j, "kind", json_string(t.kind == PRAGMA_TASK_NATIVE ? "native" : "kernelbench"));
		json_object_set_new(j, "backend", json_string(f.o.backend->name));
		if (f.o.backend->compile_report_json && v.status != PRAGMA_V_COMPILE_ERROR)
			json_object_set_new(j, "resources", f.o.backend->compile_report_json(v.compile_log.data));
		cli_print_json(j);
	} else {
		print_human(&v, &t, o.positional[1], eval);
		if (second) {
			struct pragma_buf line = PRAGMA_BUF_INIT;
			pragma_cuda_compile_baseline_text(second, v.speedup, &line);
			printf("second:    %s\n", line.data);
			pragma_buf_release(&line);
		}
		if (f.o.backend->compile_report && v.compile_log.len && v.status != PRAGMA_V_COMPILE_ERROR) {
			struct pragma_buf res = PRAGMA_BUF_INIT;
			f.o.backend->compile_report(v.compile_log.data, "           ", &res);
			printf("ptxas:     %s", res.len ? res.data : "(no kernels reported)\n");
			pragma_buf_release(&res);
		}
		if (v.status == PRAGMA_V_NO_DEVICE) {
			fprintf(stderr, "pragma: stopped: no_device: %s\n", v.message);
			fprintf(stderr, "Hint: %s\n", pragma_vstatus_hint(v.status));
		} else if (v.status != PRAGMA_V_OK) {
			fprintf(stderr, "pragma: rejected: %s: %s\n", pragma_vstatus_name(v.status), v.message);
			fprintf(stderr, "Hint: %s\n", pragma_vstatus_hint(v.status));
			if (v.output.len)
				fprintf(stderr, "--- what the kernel printed (first %zu bytes) ---\n%.*s\n",
					v.output.len > 2000 ? (size_t)2000 : v.output.len,
					(int)(v.output.len > 2000 ? 2000 : v.output.len), v.output.data);
			if (v.status == PRAGMA_V_COMPILE_ERROR && v.compile_log.len)
				fprintf(stderr, "--- compiler output ---\n%.*s\n",
					(int)(v.compile_log.len > 8000 ? 8000 : v.compile_log.len), v.compile_log.data);
		} else if (!eval) {
			printf("status:    ok\n");
		}
	}
	if (!o.json && v.work_dir[0] && (f.o.keep || f.o.work_dir))
		fprintf(stderr, "kept:      %s (request, outputs, compile.log, harness.log, verdict.json)\n", v.work_dir);
	/* No device is the environment's problem, not the kernel's (DESIGN 3.9). */
	rc = v.status == PRAGMA_V_OK ? 0 : v.status == PRAGMA_V_NO_DEVICE ? 3 : 1;
	json_decref(second);
	pragma_verdict_release(&v);
	pragma_task_release(&t);
	free(path);
	return rc;
fail:
	pragma_verdict_release(&v);
	free(path);
	return o.json ? cli_error_json(&err) : cli_error(&err);
}

int cmd_verify(int argc, char **argv)
{
	return verify_command(argc, argv, 0);
}
