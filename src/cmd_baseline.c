#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opts.h"
#include "pragma/backend.h"
#include "pragma/cuda.h"
#include "pragma/refdata.h"
#include "pragma/task.h"
#include "pragma/timing.h"

static const char usage[] =
	"usage: pragma baseline TASK [--set NAME=VALUE]... [--reps N] [--warmup N]\n"
	"                       [--warm] [--threads N] [--sets N] [--backend cpu|cuda] [--json]\n"
	"\n"
	"Times the task's reference by pragma's protocol (DESIGN 3.5): warm-up calls,\n"
	"then N timed calls cycling through the verified input sets, the cache flushed\n"
	"before each call unless --warm. KernelBench problems run in PyTorch (eager,\n"
	"threads = cores, OpenBLAS, tcmalloc); native C tasks run their reference (or\n"
	"baseline.c) built with -O3 -march=native in pragma's harness.\n"
	"\n"
	"  --reps N      timed calls (default 20)\n"
	"  --warmup N    untimed calls first (default 3)\n"
	"  --warm        do not flush the cache between calls\n"
	"  --threads N   threads for the reference (default: all usable cores)\n"
	"  --sets N      input sets (default 5)\n"
	"  --set N=V     override a module-level constant or a task size\n"
	"  --backend B   cuda: PyTorch on the GPU (CUDA events, L2 flushed), and\n"
	"                torch.compile as a second, named baseline; cpu (default)\n";

struct flags {
	struct pragma_timing_opts t;
	int sets;
	const struct pragma_backend *backend;
};

static int extra(int argc, char **argv, int i, void *ctx)
{
	struct flags *f = ctx;

	if (!strcmp(argv[i], "--reps"))
		return cli_int_arg(argc, argv, i, &f->t.reps);
	if (!strcmp(argv[i], "--warmup"))
		return cli_int_arg(argc, argv, i, &f->t.warmup);
	if (!strcmp(argv[i], "--threads"))
		return cli_int_arg(argc, argv, i, &f->t.threads);
	if (!strcmp(argv[i], "--sets"))
		return cli_int_arg(argc, argv, i, &f->sets);
	if (!strcmp(argv[i], "--warm")) {
		f->t.cold = 0;
		return 1;
	}
	if (!strcmp(argv[i], "--cold")) {
		f->t.cold = 1;
		return 1;
	}
	if (!strcmp(argv[i], "--backend")) {
		struct pragma_err e = PRAGMA_ERR_INIT;
		if (i + 1 >= argc)
			return cli_usage_error("--backend needs cpu or cuda"), -1;
		if (!(f->backend = pragma_backend_find(argv[i + 1], &e)))
			return cli_usage_error("%s", e.msg), -1;
		return 2;
	}
	return 0;
}

static const char *jstr(json_t *o, const char *k, const char *def)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : def;
}

int cmd_baseline(int argc, char **argv)
{
	struct flags f = { .t = PRAGMA_TIMING_DEFAULTS, .sets = PRAGMA_DEFAULT_SETS };
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct cli_opts o;
	struct pragma_task t;
	struct pragma_refset *sets = NULL;
	struct pragma_baseline b = { 0 };
	uint64_t seeds[64];
	char *path = NULL;
	json_t *second = NULL;
	int rc;

	if (cli_wants_help(argc, argv)) {
		fputs(usage, stdout);
		return 0;
	}
	if ((rc = cli_parse(argc, argv, &o, extra, &f)))
		return rc;
	if (o.n_positional != 1)
		return cli_usage_error("baseline needs one TASK\n%s", usage);
	if (f.sets < 1 || f.sets > 64)
		return cli_usage_error("--sets must be 1..64");
	if (f.t.reps < 1)
		return cli_usage_error("--reps must be at least 1");
	if (pragma_task_resolve(o.positional[0], &path, &err) < 0)
		goto fail;
	if (pragma_task_load(path, o.sets, o.n_sets, &t, &err) < 0)
		goto fail;
	sets = calloc((size_t)f.sets, sizeof(*sets));
	for (int i = 0; i < f.sets; i++)
		seeds[i] = pragma_ref_seed(i);
	if (pragma_ref_ensure(&t, seeds, f.sets, sets, &err) < 0 ||
	    pragma_backend_or_default(f.backend)->baseline(&t, sets, f.sets, &f.t, &b, &err) < 0) {
		pragma_task_release(&t);
		goto fail;
	}
	/* torch.compile, the second named baseline (lib/cuda/baseline.c) */
	second = pragma_backend_or_default(f.backend)->second_baseline(&t, f.sets, &f.t, 0);

	if (o.json) {
		json_t *res = json_pack("{s:s, s:s, s:s, s:s}", "status", "ok", "task", t.name, "task_kind",
					t.kind == PRAGMA_TASK_NATIVE ? "native" : "kernelbench", "category", t.category);
		json_object_update_new(res, pragma_baseline_json(&b));
		json_object_set_new(res, "flops", t.flops >= 0 ? json_real(t.flops) : json_null());
		json_object_set_new(res, "bytes", json_real(t.bytes));
		if (b.stats.median > 0) {
			if (t.flops > 0)
				json_object_set_new(res, "gflops", json_real(t.flops / b.stats.median / 1e6));
			json_object_set_new(res, "gbs", json_real(t.bytes / b.stats.median / 1e6));
		}
		json_object_set_new(res, "second_baselines", json_pack("[O]", second));
		cli_print_json(res);
	} else {
		json_t *c = b.config, *p = json_object_get(c, "protocol");
		printf("task:      %s (%s, %s)\n", t.name, t.category,
		       t.kind == PRAGMA_TASK_NATIVE ? "native C" : "KernelBench");
		if (!strcmp(b.kind, "pytorch") && !strcmp(jstr(c, "device", ""), "cuda"))
			printf("baseline:  PyTorch %s eager on %s (CUDA %s, cuDNN %lld), CUDA events\n", jstr(c, "torch", "?"),
			       jstr(c, "device_name", jstr(c, "arch", "the GPU")), jstr(c, "cuda", "?"),
			       json_integer_value(json_object_get(c, "cudnn")));
		else if (!strcmp(b.kind, "pytorch"))
			printf("baseline:  PyTorch %s eager, %lld threads, BLAS %s, allocator %s\n",
			       jstr(c, "torch", "?"), json_integer_value(json_object_get(c, "threads")),
			       jstr(c, "blas", "?"), jstr(c, "allocator", "?"));
		else
			printf("baseline:  %s built by %s %s, %lld threads\n", jstr(c, "source", "?"),
			       jstr(c, "compiler", "?"), jstr(c, "flags", ""),
			       json_integer_value(json_object_get(c, "threads")));
		printf("protocol:  %lld warm-up + %lld timed calls over %lld input sets, %s\n",
		       json_integer_value(json_object_get(p, "warmup")), json_integer_value(json_object_get(p, "reps")),
		       json_integer_value(json_object_get(p, "input_sets")),
		       json_is_true(json_object_get(p, "cold")) ? "cache flushed before each call" : "warm cache");
		printf("time:      median %.3f ms   mean %.3f   stdev %.3f (%.1f%%)   min %.3f   max %.3f   n=%d\n",
		       b.stats.median, b.stats.mean, b.stats.stdev,
		       b.stats.mean > 0 ? 100 * b.stats.stdev / b.stats.mean : 0, b.stats.min, b.stats.max, b.stats.count);
		if (b.stats.median > 0)
			printf("rate:      %s%.2f GB/s of minimal traffic (%.1f MiB)\n",
			       t.flops > 0 ? "" : "", t.bytes / b.stats.median / 1e6, t.bytes / 1048576.0);
		if (b.stats.median > 0 && t.flops > 0)
			printf("           %.2f GFLOP/s (%s FLOP count)\n", t.flops / b.stats.median / 1e6, t.flops_method);
		{
			struct pragma_buf line = PRAGMA_BUF_INIT;
			double m = json_number_value(json_object_get(second, "median_ms"));
			pragma_cuda_compile_baseline_text(second, 0, &line);
			printf("second:    %s\n", line.data);
			if (m > 0 && b.stats.median > 0)
				printf("           torch.compile is %.2fx eager's speed here\n", b.stats.median / m);
			pragma_buf_release(&line);
		}
	}
	json_decref(second);
	pragma_baseline_release(&b);
	pragma_task_release(&t);
	free(sets);
	free(path);
	return 0;
fail:
	free(sets);
	free(path);
	return o.json ? cli_error_json(&err) : cli_error(&err);
}
