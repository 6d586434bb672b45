/*
 * pragma bench: `pragma optimize` over every task of a suite — the CLI over
 * lib/suite (pragma/suite.h), which runs the elements through an executor:
 * child processes on this machine (local, the default) or one Slurm job
 * array (--executor slurm). This file parses flags, prints progress and
 * the paper's Table I.
 *
 * Resumable as a whole: the suite run and each task's run are in the store;
 * `--resume` skips finished tasks, resumes interrupted ones and starts the
 * rest.
 */
#include <errno.h>
#include <limits.h>
#include <stddef.h>
#include <math.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "opts.h"
#include "pragma/agents.h"
#include "pragma/bench.h"
#include "pragma/buf.h"
#include "pragma/fs.h"
#include "pragma/store.h"
#include "pragma/suite.h"
#include "pragma/task.h"

static const char usage[] =
	"usage: pragma bench SUITE|TASK... [--llm SPEC] [--mode pragma|n-pragma|single] [--attempts N]\n"
	"                    [--jobs J] [--repeat R] [--backend cpu|cuda] [--set NAME=VALUE]...\n"
	"                    [--executor local|slurm] [SLURM OPTIONS] [--db FILE] [--json]\n"
	"       pragma bench --resume SUITE_RUN [--jobs J] [SLURM OPTIONS] [--db FILE] [--json]\n"
	"       pragma bench --show SUITE_RUN [--db FILE] [--json]\n"
	"       pragma bench --compare SUITE_RUN SUITE_RUN... [--db FILE] [--json]\n"
	"       pragma bench --list [--db FILE] [--json]\n"
	"\n"
	"Runs `pragma optimize` on every task of SUITE (a directory of tasks, or a\n"
	"built-in suite: cpu-l1, c) or on the TASKs named (names, paths, or a comma list),\n"
	"then prints the paper's metrics per category: Success, fast_p (p = 0, 1, 1.5, 2),\n"
	"arithmetic and geometric mean speedup over correct kernels, median fraction of\n"
	"the roofline, tokens and cost per task. PyTorch-baselined and native C tasks\n"
	"are reported apart, never averaged together.\n"
	"\n"
	"  --jobs J        tasks in flight at once (default 1). Their model calls and\n"
	"                  compilations overlap; verification, timing and profiling take\n"
	"                  turns under one machine-wide lock that also holds back\n"
	"                  compilations, so no measurement shares the CPU with other\n"
	"                  work of pragma. With --executor slurm: --max-jobs, if that is not given\n"
	"  --repeat R      R independent trajectories per task (default 1): every metric\n"
	"                  is then shown with its spread across trajectories\n"
	"  --resume ID     continue a suite run that was stopped: finished tasks are kept,\n"
	"                  interrupted ones resumed, the rest started\n"
	"  --show ID       the results of a suite run\n"
	"  --compare A B   suite runs side by side (the paper's Table I), with whether each\n"
	"                  difference is larger than the spread across trajectories\n"
	"  --list          the suite runs in the store\n"
	"  --set NAME=V    applied to every task that defines NAME (a constant of a KernelBench\n"
	"                  file, a size of a native task); an error when no task does\n"
	"  --executor E    local: child processes on this machine (default); slurm: one Slurm\n"
	"                  job array, an element per task x trajectory (docs/cluster.md)\n"
	"  other flags     as for `pragma optimize` (passed to every task)\n"
	"\n"
	"Slurm options (--executor slurm; given with --resume they replace the stored ones):\n"
	"  --partition P   the partition to run in          --account A   the account to charge\n"
	"  --time T        each element's time limit (MINUTES, HH:MM:SS, D-HH:MM); a job that\n"
	"                  hits it is resubmitted and resumes from its shard\n"
	"  --gres G        generic resources per element (CUDA tasks: gpu:1 unless given; none: no GRES)\n"
	"  --max-jobs N    elements running at once (the array's %N throttle)\n"
	"  --sbatch-arg A  one more sbatch argument (repeatable), e.g. --sbatch-arg=--exclusive\n"
	"  --shared-dir D  where the run directory goes: D/suites/<suite run>/ with the batch script,\n"
	"                  logs, store shards and artifacts; must be visible at the same path on\n"
	"                  the nodes (default: the store's folder)\n"
	"  --element N SPEC what a job of the array runs: element N of the run directory's\n"
	"                  suite.json (pragma optimize with its shard, resumed when it holds the run)\n"
	"\n"
	"Exit codes: 0 every task ran, 1 some task run failed (the table counts it; --resume\n"
	"runs it again), 2 usage, 3 environment (Slurm unreachable, ...), 130 interrupted.\n";

struct flags {
	const char *llm, *mode, *db, *resume, *show, *backend, *executor;
	int attempts, jobs, repeat, list, compare, element;
	const char *partition, *account, *time, *gres, *shared_dir;
	const char *sbatch_args[64];
	int n_sbatch_args, max_jobs, slurm_given;
	const char *element_arg;
};

static int extra(int argc, char **argv, int i, void *ctx)
{
	struct flags *f = ctx;
	static const struct {
		const char *flag;
		size_t off;
	} slurm_str[] = {
		{ "--partition", offsetof(struct flags, partition) },
		{ "--account", offsetof(struct flags, account) },
		{ "--time", offsetof(struct flags, time) },
		{ "--gres", offsetof(struct flags, gres) },
		{ "--shared-dir", offsetof(struct flags, shared_dir) },
	};

	for (size_t k = 0; k < sizeof(slurm_str) / sizeof(slurm_str[0]); k++)
		if (!strcmp(argv[i], slurm_str[k].flag)) {
			f->slurm_given = 1;
			return cli_str_arg(argc, argv, i, (const char **)((char *)f + slurm_str[k].off));
		}
	if (!strcmp(argv[i], "--sbatch-arg") || !strncmp(argv[i], "--sbatch-arg=", 13)) {
		const char *v = argv[i][12] == '=' ? argv[i] + 13 : i + 1 < argc ? argv[i + 1] : NULL;
		if (!v)
			return cli_usage_error("--sbatch-arg needs a value (e.g. --sbatch-arg=--exclusive)"), -1;
		if (f->n_sbatch_args == 64)
			return cli_usage_error("too many --sbatch-arg"), -1;
		f->sbatch_args[f->n_sbatch_args++] = v;
		f->slurm_given = 1;
		return argv[i][12] == '=' ? 1 : 2;
	}
	if (!strcmp(argv[i], "--max-jobs")) {
		f->slurm_given = 1;
		return cli_int_arg(argc, argv, i, &f->max_jobs);
	}
	if (!strcmp(argv[i], "--executor"))
		return cli_str_arg(argc, argv, i, &f->executor);
	if (!strcmp(argv[i], "--element")) {
		f->element = 1;
		return cli_str_arg(argc, argv, i, &f->element_arg);
	}
	if (!strcmp(argv[i], "--llm"))
		return cli_str_arg(argc, argv, i, &f->llm);
	if (!strcmp(argv[i], "--mode"))
		return cli_str_arg(argc, argv, i, &f->mode);
	if (!strcmp(argv[i], "--db"))
		return cli_str_arg(argc, argv, i, &f->db);
	if (!strcmp(argv[i], "--resume"))
		return cli_str_arg(argc, argv, i, &f->resume);
	if (!strcmp(argv[i], "--show"))
		return cli_str_arg(argc, argv, i, &f->show);
	if (!strcmp(argv[i], "--backend"))
		return cli_str_arg(argc, argv, i, &f->backend);
	if (!strcmp(argv[i], "--attempts"))
		return cli_int_arg(argc, argv, i, &f->attempts);
	if (!strcmp(argv[i], "--jobs"))
		return cli_int_arg(argc, argv, i, &f->jobs);
	if (!strcmp(argv[i], "--repeat"))
		return cli_int_arg(argc, argv, i, &f->repeat);
	if (!strcmp(argv[i], "--list")) {
		f->list = 1;
		return 1;
	}
	if (!strcmp(argv[i], "--compare")) {
		f->compare = 1;
		return 1;
	}
	return 0;
}

/* ----------------------------------------------------------- the results */

enum unit { U_PCT, U_X, U_TOKENS, U_COST };

static void fmt_value(char *b, size_t n, double v, enum unit u)
{
	switch (u) {
	case U_PCT:
		snprintf(b, n, "%.0f%%", 100 * v);
		break;
	case U_X:
		snprintf(b, n, "%.2fx", v);
		break;
	case U_TOKENS:
		snprintf(b, n, "%.0f", v);
		break;
	case U_COST:
		snprintf(b, n, "$%.3f", v);
		break;
	}
}

/* "62%" or "62% (50-75)" with the spread across trajectories. */
static void fmt_metric(char *b, size_t n, json_t *m, const char *name, int pct)
{
	json_t *v = !strncmp(name, "fast_", 5) ? json_object_get(json_object_get(m, "fast"), name + 5) :
						  json_object_get(m, name);
	json_t *sp = json_object_get(json_object_get(m, "spread"), name);
	enum unit u = pct ? U_PCT : !strcmp(name, "tokens_per_task") ? U_TOKENS : !strcmp(name, "cost_per_task") ? U_COST : U_X;

	if (!json_is_number(v)) {
		snprintf(b, n, "-");
		return;
	}
	char main_[48], lo[48] = "", hi[48] = "";
	fmt_value(main_, sizeof(main_), json_number_value(v), u);
	if (sp && json_is_number(json_object_get(sp, "min"))) {
		fmt_value(lo, sizeof(lo), json_number_value(json_object_get(sp, "min")), u);
		fmt_value(hi, sizeof(hi), json_number_value(json_object_get(sp, "max")), u);
		snprintf(b, n, "%s [%s..%s]", main_, lo, hi);
	} else {
		snprintf(b, n, "%s", main_);
	}
}

static const struct {
	const char *name, *label;
	int pct;
} rows[] = {
	{ "success", "Success", 1 },     { "fast_0", "fast_0", 1 },       { "fast_1", "fast_1", 1 },
	{ "fast_1.5", "fast_1.5", 1 },   { "fast_2", "fast_2", 1 },       { "mean", "mean", 0 },
	{ "geomean", "geomean", 0 },     { "median_roof", "roof", 1 },    { "tokens_per_task", "tokens", 0 },
	{ "cost_per_task", "cost", 0 },
};

/* Table I for one or more suite runs: per group, a row per (scope, run)
 * with the metrics as columns; the scopes are the whole group, then each
 * category present. */
static void print_table(json_t *const *metrics, const char *const *labels, int n)
{
	static const char *const groups[] = { "pytorch", "native" };
	static const char *const group_label[] = { "KernelBench tasks (baseline: PyTorch)",
						   "native C tasks (baseline: the C reference or its baseline.c)" };
	int spread = 0;
	long long above = 0, fewer = 0;
	char cell[96];

	for (int k = 0; k < n; k++)
		for (int g = 0; g < 2; g++)
			spread |= json_object_get(json_object_get(json_object_get(metrics[k], groups[g]), "all"), "spread") != NULL;
	int w = spread ? 20 : 9;
	for (int g = 0; g < 2; g++) {
		int any = 0;
		for (int k = 0; k < n; k++)
			any |= json_object_get(metrics[k], groups[g]) != NULL;
		if (!any)
			continue;
		printf("\n%s%s\n", group_label[g], spread ? " — mean over trajectories [min..max]" : "");
		const char *scopes[1 + PRAGMA_BENCH_N_CATEGORIES];
		int ns = 0;
		scopes[ns++] = "ALL";
		for (int c = 0; c < PRAGMA_BENCH_N_CATEGORIES; c++)
			for (int k = 0; k < n; k++)
				if (json_object_get(json_object_get(json_object_get(metrics[k], groups[g]), "categories"),
						    pragma_bench_categories[c])) {
					scopes[ns++] = pragma_bench_categories[c];
					break;
				}
		printf("  %-18s %-16s %5s", "scope", "run", "tasks");
		for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++)
			printf(" %-*s", w, rows[r].label);
		printf("\n");
		for (int sc = 0; sc < ns; sc++)
			for (int k = 0; k < n; k++) {
				json_t *grp = json_object_get(metrics[k], groups[g]);
				json_t *m = sc == 0 ? json_object_get(grp, "all") :
						      json_object_get(json_object_get(grp, "categories"), scopes[sc]);
				printf("  %-18s %-16.16s %5lld", k == 0 ? scopes[sc] : "", labels[k],
				       (long long)json_integer_value(json_object_get(m, "tasks")));
				for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
					fmt_metric(cell, sizeof(cell), m, rows[r].name, rows[r].pct);
					if (m && !strcmp(rows[r].name, "median_roof") && strcmp(cell, "-")) {
						/* Roof fractions that need a word: the legend below. */
						json_t *rn = json_object_get(m, "roof_notes");
						json_int_t a = json_integer_value(json_object_get(rn, "above_roof"));
						json_int_t f = json_integer_value(json_object_get(rn, "fewer_flops"));
						size_t l = strlen(cell);
						snprintf(cell + l, sizeof(cell) - l, "%s%s", a ? "*" : "", f ? "#" : "");
						if (sc == 0) {
							above += a;
							fewer += f;
						}
					}
					printf(" %-*s", w, m ? cell : "-");
				}
				printf("\n");
			}
	}
	if (above)
		printf("roof *: %lld best kernel%s above 100%% of the roofline: %s moved the task's minimal bytes\n"
		       "faster than pragma's streaming kernels did when the roof was measured (cache-resident\n"
		       "data, or a roof measured on a busier machine): read it as at the roof.\n",
		       above, above == 1 ? " is" : "s are", above == 1 ? "it" : "they");
	if (fewer)
		printf("roof #: %lld best kernel%s the task's FLOP count above the FP32 peak (fewer FLOPs than\n"
		       "counted: Winograd, Strassen); %s fraction is of the bandwidth roof, not the compute roof.\n",
		       fewer, fewer == 1 ? " runs" : "s run", fewer == 1 ? "its" : "their");
}

static void fmt_secs(char *b, size_t n, double s)
{
	if (s >= 3600)
		snprintf(b, n, "%dh%02dm", (int)(s / 3600), (int)fmod(s / 60, 60));
	else if (s >= 60)
		snprintf(b, n, "%dm%02ds", (int)(s / 60), (int)fmod(s, 60));
	else
		snprintf(b, n, "%.1fs", s);
}

static json_t *time_totals(json_t *outcomes)
{
	static const char *const k[] = { "llm", "compile", "verify", "timing", "profile", "lock_wait", "total" };
	double t[7] = { 0 };
	size_t i;
	json_t *o;

	json_array_foreach(outcomes, i, o)
		for (int j = 0; j < 7; j++)
			t[j] += json_number_value(json_object_get(json_object_get(o, "seconds"), k[j]));
	return json_pack("{s:f, s:f, s:f, s:f, s:f, s:f, s:f}", k[0], t[0], k[1], t[1], k[2], t[2], k[3], t[3], k[4], t[4],
			 k[5], t[5], k[6], t[6]);
}

static void print_suite(json_t *suite, json_t *outcomes, json_t *metrics)
{
	json_t *cfg = json_object_get(suite, "config"), *o, *tt = time_totals(outcomes);
	size_t i;
	char a[32], b[32], c[32], d[32], e[32], w[32], cc[32];

	printf("suite run: %s (%s mode, %s, %lld attempts per task%s) — %s\n",
	       json_string_value(json_object_get(suite, "id")), json_string_value(json_object_get(suite, "mode")),
	       json_string_value(json_object_get(suite, "llm")) ?: "?",
	       (long long)json_integer_value(json_object_get(cfg, "attempts")),
	       json_integer_value(json_object_get(cfg, "repeat")) > 1 ? ", several trajectories" : "",
	       json_string_value(json_object_get(suite, "status")));
	printf("suite:     %s\n", json_string_value(json_object_get(suite, "suite_path")));
	printf("\nPer task (trajectory):\n");
	printf("  %-28s %-18s %-3s %-12s %-22s %-8s %-9s %s\n", "task", "category", "traj", "baseline", "best speedup [95%]",
	       "attempt", "tokens", "failures");
	int older = 0, busy = 0;
	json_array_foreach(outcomes, i, o) {
		char sp[64], fl[256] = "";
		json_t *s = json_object_get(o, "speedup");
		if (json_is_true(json_object_get(o, "correct")) && json_is_number(s)) {
			/* Older runs stored an interquartile range: marked, not
			 * passed off as the 95% interval. */
			const char *kind = json_string_value(json_object_get(o, "spread_kind"));
			int old = kind && strcmp(kind, "95% interval");
			older |= old;
			busy += json_is_true(json_object_get(o, "busy"));
			if (json_is_number(json_object_get(o, "speedup_lo")))
				snprintf(sp, sizeof(sp), "%.2fx [%.2f..%.2f]%s%s", json_number_value(s),
					 json_number_value(json_object_get(o, "speedup_lo")),
					 json_number_value(json_object_get(o, "speedup_hi")), old ? " IQR" : "",
					 json_is_true(json_object_get(o, "busy")) ? " BUSY" : "");
			else
				snprintf(sp, sizeof(sp), "%.2fx", json_number_value(s));
		} else {
			snprintf(sp, sizeof(sp), "none (%s)", json_string_value(json_object_get(o, "status")));
		}
		const char *k;
		json_t *v;
		size_t fl_len = 0;
		json_object_foreach(json_object_get(o, "failed"), k, v)
			if (fl_len < sizeof(fl) - 40)
				fl_len += (size_t)snprintf(fl + fl_len, sizeof(fl) - fl_len, "%s%s x%lld", fl_len ? ", " : "", k,
							   (long long)json_integer_value(v));
		char att[16] = "-";
		if (json_is_integer(json_object_get(o, "best_attempt")))
			snprintf(att, sizeof(att), "%lld", (long long)json_integer_value(json_object_get(o, "best_attempt")));
		char tok[32];
		snprintf(tok, sizeof(tok), "%s%lld", json_is_true(json_object_get(o, "tokens_estimated")) ? "~" : "",
			 (long long)json_integer_value(json_object_get(o, "tokens")));
		printf("  %-28.28s %-18s %-4lld %-12s %-22s %-8s %-9s %s\n", json_string_value(json_object_get(o, "task")),
		       json_string_value(json_object_get(o, "category")),
		       (long long)json_integer_value(json_object_get(o, "trajectory")) + 1,
		       json_string_value(json_object_get(o, "baseline_kind")), sp, att, tok, fl);
	}
	const char *label = json_string_value(json_object_get(suite, "mode"));
	print_table(&metrics, &label, 1);
	fmt_secs(a, sizeof(a), json_number_value(json_object_get(tt, "llm")));
	fmt_secs(cc, sizeof(cc), json_number_value(json_object_get(tt, "compile")));
	fmt_secs(b, sizeof(b), json_number_value(json_object_get(tt, "verify")));
	fmt_secs(c, sizeof(c), json_number_value(json_object_get(tt, "timing")));
	fmt_secs(d, sizeof(d), json_number_value(json_object_get(tt, "profile")));
	fmt_secs(e, sizeof(e), json_number_value(json_object_get(tt, "lock_wait")));
	fmt_secs(w, sizeof(w), json_number_value(json_object_get(json_object_get(suite, "timing"), "wall")));
	printf("\ntime (summed over tasks): waiting for the model %s; compiling %s; verifying and first timing %s;\n"
	       "head-to-head and final timing %s; profiling %s; waiting for the measurement lock %s.\n"
	       "The suite's wall time: %s.\n", a, cc, b, c, d, e, w);
	json_t *chg = json_object_get(json_object_get(suite, "summary"), "baseline_config_changed");
	if (json_array_size(chg)) {
		char *s = json_dumps(chg, JSON_COMPACT);
		printf("WARNING: the baseline configuration changed during the suite run, for: %s\n", s);
		free(s);
	}
	printf("\n~: tokens estimated from characters (an exec provider reports none).\n");
	printf("Speedups are the final comparison of each task's best kernel against its baseline: a\n"
	       "timing session of its own (interleaved rounds in fresh processes), the ratio of the\n"
	       "medians with [its 95%% interval], a bootstrap over the session's sessions and rounds\n"
	       "(stretched for few sessions: a process keeps its memory placement for its life; and\n"
	       "for the looks of a comparison that added rounds until it was decided).\n"
	       "Means are over correct kernels only; Success and fast_p count every task.\n");
	if (older)
		printf("IQR: a run stored before the 95%% intervals; its bracket is the interquartile range of\n"
		       "per-round ratios, not an interval of the speedup.\n");
	if (busy)
		printf("WARNING: %d final comparison%s ran on a BUSY machine (few rounds undisturbed by other\n"
		       "processes): %s unreliable; measure again when it is quieter (pragma eval).\n",
		       busy, busy == 1 ? "" : "s", busy == 1 ? "its speedup is" : "their speedups are");
	json_decref(tt);
}

static json_t *load_suite(struct pragma_store *s, const char *id, json_t **outcomes, json_t **metrics,
			  struct pragma_err *err)
{
	json_t *suite = pragma_store_suite_get(s, id, err);

	if (!suite)
		return NULL;
	*outcomes = pragma_bench_suite_outcomes(suite, NULL);
	*metrics = pragma_bench_metrics(*outcomes);
	return suite;
}

static int show(const char *db, const char *id, int json)
{
	struct pragma_store *s;
	struct pragma_err err = PRAGMA_ERR_INIT;
	json_t *suite, *outcomes, *metrics;

	if (pragma_store_open_existing(&s, db, &err) < 0) /* reading makes no store */
		return json ? cli_error_json(&err) : cli_error(&err);
	suite = load_suite(s, id, &outcomes, &metrics, &err);
	pragma_store_close(s);
	if (!suite)
		return json ? cli_error_json(&err) : cli_error(&err);
	if (json) {
		json_t *j = json_pack("{s:O, s:O, s:O, s:O, s:O, s:o, s:O, s:o, s:o}", "suite_run",
				      json_object_get(suite, "id"), "suite", json_object_get(suite, "suite_path"), "mode",
				      json_object_get(suite, "mode"), "status", json_object_get(suite, "status"), "config",
				      json_object_get(suite, "config"), "tasks", outcomes, "timing",
				      json_object_get(suite, "timing"), "time", time_totals(outcomes), "metrics", metrics);
		json_object_set(j, "baseline_config_changed",
				json_object_get(json_object_get(suite, "summary"), "baseline_config_changed") ?: json_array());
		cli_print_json(j);
	} else {
		print_suite(suite, outcomes, metrics);
		json_decref(outcomes);
		json_decref(metrics);
	}
	json_decref(suite);
	return 0;
}

static int compare(const char *db, const char *const *ids, int n, int json)
{
	struct pragma_store *s;
	struct pragma_err err = PRAGMA_ERR_INIT;
	json_t *suites[8] = { 0 }, *outs[8] = { 0 }, *mets[8] = { 0 };
	char labels_buf[8][96];
	const char *labels[8];
	int rc = 0;

	if (n < 2)
		return cli_usage_error("--compare needs two or more suite runs");
	if (n > 8)
		return cli_usage_error("--compare takes at most 8 suite runs");
	if (pragma_store_open_existing(&s, db, &err) < 0) /* reading makes no store */
		return json ? cli_error_json(&err) : cli_error(&err);
	for (int k = 0; k < n; k++) {
		if (!(suites[k] = load_suite(s, ids[k], &outs[k], &mets[k], &err))) {
			rc = json ? cli_error_json(&err) : cli_error(&err);
			goto out;
		}
	}
	/* Labels: the mode, and the model where the runs differ in it, and the
	 * id where both agree (the same agent twice). */
	int same_llm = 1, same_mode = 1;
	for (int k = 1; k < n; k++) {
		same_llm &= json_equal(json_object_get(suites[k], "llm"), json_object_get(suites[0], "llm"));
		same_mode &= json_equal(json_object_get(suites[k], "mode"), json_object_get(suites[0], "mode"));
	}
	for (int k = 0; k < n; k++) {
		const char *llm = json_string_value(json_object_get(suites[k], "llm")) ?: "";
		const char *id = json_string_value(json_object_get(suites[k], "id"));
		if (same_llm && same_mode)
			snprintf(labels_buf[k], sizeof(labels_buf[k]), "%s %s",
				 json_string_value(json_object_get(suites[k], "mode")), id + strlen(id) - 4);
		else if (same_llm)
			snprintf(labels_buf[k], sizeof(labels_buf[k]), "%s", json_string_value(json_object_get(suites[k], "mode")));
		else
			snprintf(labels_buf[k], sizeof(labels_buf[k]), "%s %.60s",
				 json_string_value(json_object_get(suites[k], "mode")), llm);
		labels[k] = labels_buf[k];
	}
	/* The judgement: each run against the first, metric by metric. */
	json_t *judge = json_array();
	static const char *const groups[] = { "pytorch", "native" };
	for (int k = 1; k < n; k++)
		for (int g = 0; g < 2; g++) {
			json_t *a = json_object_get(json_object_get(mets[0], groups[g]), "all");
			json_t *b = json_object_get(json_object_get(mets[k], groups[g]), "all");
			if (!a || !b)
				continue;
			for (size_t r = 0; r < sizeof(rows) / sizeof(rows[0]); r++) {
				const char *nm = rows[r].name;
				json_t *va = !strncmp(nm, "fast_", 5) ? json_object_get(json_object_get(a, "fast"), nm + 5) :
									 json_object_get(a, nm);
				json_t *vb = !strncmp(nm, "fast_", 5) ? json_object_get(json_object_get(b, "fast"), nm + 5) :
									 json_object_get(b, nm);
				json_array_append_new(
					judge, json_pack("{s:s, s:s, s:s, s:O, s:O, s:s}", "a",
							 json_string_value(json_object_get(suites[0], "id")), "b",
							 json_string_value(json_object_get(suites[k], "id")), "metric",
							 nm, "a_value", va ? va : json_null(), "b_value", vb ? vb : json_null(),
							 "verdict",
							 pragma_bench_judge(va, json_object_get(json_object_get(a, "spread"), nm), vb,
									    json_object_get(json_object_get(b, "spread"), nm))));
				json_object_set_new(json_array_get(judge, json_array_size(judge) - 1), "group",
						    json_string(groups[g]));
			}
		}
	if (json) {
		json_t *runs = json_array();
		for (int k = 0; k < n; k++)
			json_array_append_new(runs, json_pack("{s:O, s:O, s:O, s:O, s:O}", "suite_run",
							     json_object_get(suites[k], "id"), "mode",
							     json_object_get(suites[k], "mode"), "llm",
							     json_object_get(suites[k], "llm"), "tasks", outs[k], "metrics",
							     mets[k]));
		cli_print_json(json_pack("{s:o, s:o}", "runs", runs, "judgement", judge));
	} else {
		printf("Table I — ");
		for (int k = 0; k < n; k++)
			printf("%s%s = %s", k ? ", " : "", labels[k], json_string_value(json_object_get(suites[k], "id")));
		printf("\n");
		print_table(mets, labels, n);
		printf("\nIs each difference larger than the spread across trajectories? (vs %s)\n", labels[0]);
		size_t i;
		json_t *j;
		json_array_foreach(judge, i, j) {
			const char *m = json_string_value(json_object_get(j, "metric"));
			if (strcmp(m, "success") && strcmp(m, "fast_1") && strcmp(m, "geomean"))
				continue;
			printf("  %-8s %-8s %s vs %s: %s\n", json_string_value(json_object_get(j, "group")), m,
			       json_string_value(json_object_get(j, "b")), json_string_value(json_object_get(j, "a")),
			       json_string_value(json_object_get(j, "verdict")));
		}
		json_decref(judge);
	}
out:
	for (int k = 0; k < n; k++) {
		json_decref(suites[k]);
		json_decref(outs[k]);
		json_decref(mets[k]);
	}
	pragma_store_close(s);
	return rc;
}

static int list_suites(const char *db, int json)
{
	struct pragma_store *s;
	struct pragma_err err = PRAGMA_ERR_INIT;
	json_t *l, *x;
	size_t i;

	if (pragma_store_open_existing(&s, db, &err) < 0) /* reading makes no store */
		return json ? cli_error_json(&err) : cli_error(&err);
	l = pragma_store_suites(s, 0, &err);
	pragma_store_close(s);
	if (!l)
		return json ? cli_error_json(&err) : cli_error(&err);
	if (json) {
		cli_print_json(l);
		return 0;
	}
	printf("%-24s %-9s %-10s %-5s %-40s %s\n", "suite run", "mode", "status", "runs", "suite", "llm");
	json_array_foreach(l, i, x)
		printf("%-24s %-9s %-10s %-5lld %-40.40s %s\n", json_string_value(json_object_get(x, "id")),
		       json_string_value(json_object_get(x, "mode")), json_string_value(json_object_get(x, "status")),
		       (long long)json_integer_value(json_object_get(x, "runs")),
		       json_string_value(json_object_get(x, "suite_path")), json_string_value(json_object_get(x, "llm")) ?: "");
	json_decref(l);
	return 0;
}

/* ------------------------------------------------------------ the runner */


/* ------------------------------------------------------------ the runner */

static volatile sig_atomic_t interrupted;

static void on_signal(int sig)
{
	(void)sig;
	interrupted = 1;
}

static void on_event(void *ctx, const struct pragma_suite_event *ev)
{
	(void)ctx;
	if (!ev->el) {
		fprintf(stderr, "bench: %s\n", ev->what);
		return;
	}
	if (ev->el->state == PRAGMA_SUITE_DONE || ev->el->state == PRAGMA_SUITE_FAILED) {
		char el[32];
		fmt_secs(el, sizeof(el), ev->seconds);
		fprintf(stderr, "[%d/%d] %s (trajectory %d): %s, %s\n", ev->finished, ev->total, ev->el->name,
			ev->el->traj + 1, ev->what, el);
	} else {
		fprintf(stderr, "[%d/%d] %s (trajectory %d): %s\n", ev->finished, ev->total, ev->el->name,
			ev->el->traj + 1, ev->what);
	}
}

static int run_suite(const char *db, const char *suite_id, int jobs, const struct pragma_slurm_opts *slurm, int json)
{
	struct pragma_suite_run_opts o = { 0 };
	struct pragma_suite_result res;
	struct pragma_err err = PRAGMA_ERR_INIT;
	char self[PATH_MAX];

	ssize_t sl = readlink("/proc/self/exe", self, sizeof(self) - 1);
	if (sl <= 0)
		return cli_usage_error("cannot find the pragma binary (/proc/self/exe)");
	self[sl] = '\0';
	struct sigaction sa = { .sa_handler = on_signal };
	sigaction(SIGINT, &sa, NULL);
	sigaction(SIGTERM, &sa, NULL);
	o.db = db;
	o.suite_id = suite_id;
	o.self = self;
	o.jobs = jobs;
	o.slurm = slurm;
	o.stop = &interrupted;
	o.event = on_event;
	if (pragma_suite_run(&o, &res, &err) < 0)
		return json ? cli_error_json(&err) : cli_error(&err);
	if (res.interrupted) {
		fprintf(stderr, "bench: interrupted; the tasks in flight were stopped (resume with: pragma bench --resume %s%s%s)\n",
			suite_id, strcmp(db, cli_default_db()) ? " --db " : "", strcmp(db, cli_default_db()) ? db : "");
		return 130;
	}
	int rc = show(db, suite_id, json);
	if (rc == 0 && res.failed) {
		fprintf(stderr, "bench: %d of %d task run%s failed (above: how, and the log); `pragma bench --resume %s%s%s` "
				"runs %s again\n",
			res.failed, res.total, res.total > 1 ? "s" : "", suite_id, strcmp(db, cli_default_db()) ? " --db " : "",
			strcmp(db, cli_default_db()) ? db : "", res.failed > 1 ? "them" : "it");
		rc = 1;
	}
	return rc;
}

/* On a Slurm node: one element of the array — `pragma optimize` with its
 * shard (resumed when the shard holds its run). */
static int run_element(const char *index, const char *spec)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	char **argv = NULL, *about = NULL, *end;
	long k = strtol(index ? index : "", &end, 10);

	if (!index || !*index || *end || k < 0)
		return cli_usage_error("--element needs the array index (SLURM_ARRAY_TASK_ID is '%s')", index ? index : "");
	if (!spec)
		return cli_usage_error("--element N needs the run directory's suite.json");
	if (pragma_suite_element_argv(spec, (int)k, &argv, &about, &err) < 0)
		return cli_error(&err);
	fprintf(stderr, "%s\n", about);
	free(about);
	if (!argv)
		return 0;
	fflush(stderr);
	execv(argv[0], argv);
	fprintf(stderr, "pragma: cannot run %s: %s\n", argv[0], strerror(errno));
	pragma_suite_argv_free(argv);
	return 3;
}

int cmd_bench(int argc, char **argv)
{
	struct flags f = { .jobs = 0, .repeat = 1 };
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct cli_opts c;
	const char *db;
	int rc;

	if (cli_wants_help(argc, argv)) {
		fputs(usage, stdout);
		return 0;
	}
	if ((rc = cli_parse(argc, argv, &c, extra, &f)))
		return rc;
	if (f.element)
		return run_element(f.element_arg, c.n_positional ? c.positional[0] : NULL);
	db = f.db ? f.db : cli_default_db();
	if (f.list)
		return list_suites(db, c.json);
	if (f.compare)
		return compare(db, c.positional, c.n_positional, c.json);
	if (f.show)
		return show(db, f.show, c.json);
	int jobs_given = f.jobs > 0;
	if (!jobs_given)
		f.jobs = 1;
	if (f.jobs < 1 || f.jobs > 64)
		return cli_usage_error("--jobs must be 1..64");
	if (f.executor && strcmp(f.executor, "local") && strcmp(f.executor, "slurm"))
		return cli_usage_error("--executor must be local or slurm");
	int slurm = f.executor && !strcmp(f.executor, "slurm");
	if (f.slurm_given && !slurm && !f.resume)
		return cli_usage_error("--partition, --account, --time, --gres, --max-jobs, --sbatch-arg and --shared-dir "
				       "go with --executor slurm");
	if (f.resume && f.shared_dir)
		return cli_usage_error("--shared-dir cannot change on --resume: the suite run's shards and logs stay where "
				       "it was started");
	struct pragma_slurm_opts so = { .partition = f.partition, .account = f.account, .time = f.time, .gres = f.gres,
					.max_jobs = f.max_jobs, .sbatch_args = f.sbatch_args,
					.n_sbatch_args = f.n_sbatch_args, .shared_dir = f.shared_dir };
	char shared_abs[PATH_MAX];
	if (f.shared_dir) {
		if (pragma_mkdir_p(f.shared_dir, 0755, &err) < 0)
			return cli_error(&err);
		if (realpath(f.shared_dir, shared_abs))
			so.shared_dir = shared_abs;
	}
	if (f.resume) {
		if (f.executor)
			return cli_usage_error("--resume uses the executor the suite run was started with");
		if (jobs_given && !so.max_jobs)
			so.max_jobs = f.jobs;
		return run_suite(db, f.resume, f.jobs, f.slurm_given ? &so : NULL, c.json);
	}
	if (!c.n_positional)
		return cli_usage_error("bench needs a SUITE or TASKs (or --resume/--show/--compare/--list)\n%s", usage);
	if (f.repeat < 1 || f.repeat > 100)
		return cli_usage_error("--repeat must be 1..100");

	enum pragma_mode mode = PRAGMA_MODE_PRAGMA;
	if (f.mode && pragma_mode_parse(f.mode, &mode) < 0)
		return cli_usage_error("--mode must be pragma, n-pragma or single");
	char *name = NULL;
	json_t *tasks = pragma_suite_tasks(c.positional, c.n_positional, &name, &err);
	if (!tasks)
		return c.json ? cli_error_json(&err) : cli_error(&err);
	for (int i = 0; i < c.n_sets; i++) {
		char nm[128];
		int any = 0;
		size_t k;
		json_t *t;
		snprintf(nm, sizeof(nm), "%.*s", (int)strcspn(c.sets[i], "="), c.sets[i]);
		json_array_foreach(tasks, k, t)
			any |= pragma_suite_task_defines(json_string_value(json_object_get(t, "path")), nm);
		if (!any) {
			json_decref(tasks);
			free(name);
			return cli_usage_error("--set %s: no task of the suite defines %s", c.sets[i], nm);
		}
	}
	/* Slurm reachable before anything is written: no suite run is left
	 * behind by a submission that could never happen. */
	if (slurm) {
		if (jobs_given && !so.max_jobs)
			so.max_jobs = f.jobs;
		if (pragma_slurm_check(&err) < 0) {
			json_decref(tasks);
			free(name);
			return c.json ? cli_error_json(&err) : cli_error(&err);
		}
	}
	const char *spec = f.llm ? f.llm : getenv("PRAGMA_LLM");
	json_t *ov = json_array();
	for (int i = 0; i < c.n_sets; i++)
		json_array_append_new(ov, json_string(c.sets[i]));
	json_t *cfg = json_pack("{s:o, s:i, s:i, s:i, s:o, s:o}", "tasks", tasks, "attempts", f.attempts > 0 ? f.attempts : 15,
				"repeat", f.repeat, "jobs", f.jobs, "overrides", ov, "executor",
				pragma_suite_executor_config(slurm ? "slurm" : "local", slurm ? &so : NULL));
	if (spec && *spec)
		json_object_set_new(cfg, "llm_spec", json_string(spec));
	if (f.backend)
		json_object_set_new(cfg, "backend", json_string(f.backend));
	char id[48];
	pragma_store_new_suite_id(id);
	json_t *fields = json_pack("{s:s, s:s, s:s, s:s, s:o}", "suite_path", name, "mode", pragma_mode_name(mode),
				   "llm", spec && *spec ? spec : "(replay of a recording, or none)", "status", "created",
				   "config", cfg);
	free(name);
	struct pragma_store *s;
	if (pragma_store_open(&s, db, &err) < 0 || pragma_store_suite_create(s, id, fields, &err) < 0) {
		json_decref(fields);
		pragma_store_close(s);
		return c.json ? cli_error_json(&err) : cli_error(&err);
	}
	json_decref(fields);
	pragma_store_close(s);
	return run_suite(db, id, f.jobs, NULL, c.json);
}
