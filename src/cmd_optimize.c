#include <limits.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "cli.h"
#include "opts.h"
#include "pragma/agents.h"
#include "pragma/backend.h"
#include "pragma/bench.h"
#include "pragma/fs.h"
#include "pragma/report.h"
#include "pragma/store.h"
#include "pragma/task.h"
#include "pragma/timing.h"

static const char usage[] =
	"usage: pragma optimize TASK [--llm SPEC] [--mode pragma|n-pragma|single] [--attempts N]\n"
	"                       [--candidates K] [--target-speedup X] [--target-roof F] [--patience N]\n"
	"                       [--set NAME=VALUE]... [--db FILE] [--out DIR] [--no-cache] [--json]\n"
	"       pragma optimize --resume RUN [--db FILE] [--json]\n"
	"\n"
	"Runs the Coder/Verifier/Profiler/Conductor loop on TASK. Each attempt: the Coder\n"
	"writes a kernel, pragma compiles, verifies and times it against the baseline,\n"
	"profiles it (pragma mode), and the Conductor tells the Coder what to change.\n"
	"The fastest verified kernel (decided by interleaved timing) is kept as the best\n"
	"and written to <out>/best.c; everything is stored in the run store.\n"
	"\n"
	"  --llm SPEC          openai:MODEL, anthropic:MODEL, exec:COMMAND, replay:FILE\n"
	"                      (default $PRAGMA_LLM; with no model configured, a recorded\n"
	"                      session of a built-in task is replayed, and said so)\n"
	"  --mode M            pragma (default), n-pragma (no profile for the Conductor),\n"
	"                      single (no Conductor: correctness and time feedback only)\n"
	"  --attempts N        attempts (default 15, the paper's)\n"
	"  --target-speedup X  stop once the best is X times faster than the baseline\n"
	"  --target-roof F     stop once the best reaches fraction F of its roofline\n"
	"  --patience N        stop after N attempts without a new best\n"
	"  --db FILE           run store (default $PRAGMA_DB or ./.pragma/pragma.db)\n"
	"  --out DIR           artifacts (default <db dir>/runs/<run>)\n"
	"  --resume RUN        continue a run that was killed\n"
	"  --suite-run ID      file the run under a `pragma bench` suite run (set by bench;\n"
	"                      --trajectory K says which of its --repeat trajectories)\n"
	"  --no-cache          ask the model even for requests answered before\n"
	"  --backend B         cpu (C kernels, default) or cuda (CUDA C kernels on the GPU: the\n"
	"                      Coder sees the GPU model and the CUDA ABI; needs a CUDA device,\n"
	"                      else it stops at once with 'no CUDA device', exit 3)\n";

struct flags {
	const char *llm, *mode, *db, *out, *resume, *backend, *suite_run;
	int attempts, candidates, patience, no_cache, trajectory;
	int attempts_given, trajectory_given;
	double target_speedup, target_roof;
};

static int extra(int argc, char **argv, int i, void *ctx)
{
	struct flags *f = ctx;
	double v;
	int r;

	if (!strcmp(argv[i], "--llm"))
		return cli_str_arg(argc, argv, i, &f->llm);
	if (!strcmp(argv[i], "--mode"))
		return cli_str_arg(argc, argv, i, &f->mode);
	if (!strcmp(argv[i], "--db"))
		return cli_str_arg(argc, argv, i, &f->db);
	if (!strcmp(argv[i], "--out"))
		return cli_str_arg(argc, argv, i, &f->out);
	if (!strcmp(argv[i], "--resume"))
		return cli_str_arg(argc, argv, i, &f->resume);
	if (!strcmp(argv[i], "--backend"))
		return cli_str_arg(argc, argv, i, &f->backend);
	if (!strcmp(argv[i], "--suite-run"))
		return cli_str_arg(argc, argv, i, &f->suite_run);
	if (!strcmp(argv[i], "--trajectory")) {
		f->trajectory_given = 1;
		return cli_int_arg(argc, argv, i, &f->trajectory);
	}
	if (!strcmp(argv[i], "--no-cache")) {
		f->no_cache = 1;
		return 1;
	}
	if (!strcmp(argv[i], "--target-speedup") || !strcmp(argv[i], "--target-roof")) {
		int roof = argv[i][9] == 'r';
		if ((r = cli_num_arg(argc, argv, i, &v)) < 0)
			return r;
		if (v <= 0 || (roof && v > 1))
			return cli_usage_error("%s: %s is out of range: %s", argv[i], argv[i + 1],
					       roof ? "a fraction above 0 and at most 1 (0.8 = 80%% of the roofline)" :
						      "a speedup above 0 (e.g. 2 for twice as fast as the baseline)"), -1;
		*(roof ? &f->target_roof : &f->target_speedup) = v;
		return 2;
	}
	if (!strcmp(argv[i], "--attempts")) {
		f->attempts_given = 1;
		return cli_int_arg_range(argc, argv, i, 1, 10000, &f->attempts);
	}
	if (!strcmp(argv[i], "--candidates"))
		return cli_int_arg_range(argc, argv, i, 1, 64, &f->candidates);
	if (!strcmp(argv[i], "--patience"))
		return cli_int_arg_range(argc, argv, i, 0, 10000, &f->patience);
	return 0;
}

struct status {
	int tty;
	int shown;
};

static void on_progress(void *ctx, const struct pragma_progress *p)
{
	struct status *s = ctx;

	if (p->line) {
		if (s->tty && s->shown)
			fputs("\r\033[K", stderr);
		fprintf(stderr, "%s\n", p->line);
		s->shown = 0;
		return;
	}
	if (!s->tty)
		return;
	fprintf(stderr, "\r\033[K[%s] attempt %d/%d: %-11s best %s%.2fx  tokens %llu  cost $%.4f", p->run_id, p->attempt,
		p->max_attempts, p->stage, p->best_attempt ? "" : "-", p->best_speedup, p->tokens, p->cost);
	fflush(stderr);
	s->shown = 1;
}

/* Whether a TASK argument names the stored run's task (paths, or built-in
 * names that resolve to the same place). */
static int same_task(const char *given, const char *stored)
{
	char *gp = NULL, *sp = NULL, ga[PATH_MAX], sa[PATH_MAX];
	struct pragma_err e = PRAGMA_ERR_INIT;
	int same;

	if (!strcmp(given, stored))
		return 1;
	if (pragma_task_resolve(given, &gp, &e) < 0)
		gp = strdup(given);
	if (pragma_task_resolve(stored, &sp, &e) < 0)
		sp = strdup(stored);
	same = realpath(gp, ga) && realpath(sp, sa) ? !strcmp(ga, sa) : !strcmp(gp, sp);
	free(gp);
	free(sp);
	return same;
}

/* With no model configured, a built-in task may have a recorded session. */
/* The recorded session for TASK and MODE that this CPU can run: the
 * recordings' kernels use the vector instructions of the machine they were
 * recorded on, so a CPU without AVX-512 gets the one recorded on such a
 * CPU (<task>.<mode>.avx2.jsonl) where there is one. *no_avx512 says the
 * one chosen was recorded with AVX-512 on a CPU that lacks it. */
static const char *demo_recording(const char *task, const char *mode, char *buf, size_t len, int *no_avx512)
{
	struct pragma_buf dir = PRAGMA_BUF_INIT, stem = PRAGMA_BUF_INIT;
	struct pragma_err e = PRAGMA_ERR_INIT;
	const char *r = NULL;
	int avx512 = __builtin_cpu_supports("avx512f");

	*no_avx512 = 0;
	if (pragma_data_path("demo", &dir, &e) < 0)
		return NULL;
	pragma_path_stem(task, &stem);
	if (!avx512) {
		snprintf(buf, len, "%s/%s.%s.avx2.jsonl", dir.data, stem.data, mode);
		if (access(buf, R_OK) == 0)
			r = buf;
	}
	if (!r) {
		snprintf(buf, len, "%s/%s.%s.jsonl", dir.data, stem.data, mode);
		if (access(buf, R_OK) == 0) {
			r = buf;
			*no_avx512 = !avx512;
		}
	}
	pragma_buf_release(&dir);
	pragma_buf_release(&stem);
	return r;
}

/* The run's attempts as the report shows them: one time per attempt (its
 * timing session's), its speedup with the 95% interval, its comparison with
 * the best in that session, the measurement's decision, and the Conductor's
 * own verdict beside it (marked when the replies were replayed). */
static void print_trace(const char *db, const char *run_id)
{
	struct pragma_store *s;
	struct pragma_err e = PRAGMA_ERR_INIT;
	json_t *run, *a, *dec;
	size_t i;
	int recorded;

	if (pragma_store_open(&s, db, &e) < 0)
		return;
	run = pragma_store_run_get(s, run_id, &e);
	pragma_store_close(s);
	if (!run)
		return;
	dec = pragma_report_decisions(run);
	recorded = pragma_report_replayed(run);
	printf("\nattempts (time and speedup from each attempt's timing session; the decision is the\n"
	       "measurement's, the Conductor's verdict its own opinion):\n");
	if (recorded)
		printf("note: the Conductor's text was %s.\n", pragma_report_replay_note);
	json_array_foreach(json_object_get(run, "attempts"), i, a) {
		json_t *c = json_object_get(a, "conductor"), *d = NULL, *x, *spr = json_object_get(a, "speedup_spread");
		char iv[72];
		size_t k;
		const char *st = json_string_value(json_object_get(a, "status"));
		if (json_integer_value(json_object_get(a, "candidate")))
			continue;
		json_array_foreach(dec, k, x)
			if (json_integer_value(json_object_get(x, "n")) == json_integer_value(json_object_get(a, "n")))
				d = x;
		printf("\n-- attempt %lld: %s", (long long)json_integer_value(json_object_get(a, "n")), st ? st : "?");
		if (json_is_number(json_object_get(a, "time_ms")))
			printf(", %.3f ms", json_number_value(json_object_get(a, "time_ms")));
		if (json_is_number(json_object_get(a, "speedup"))) {
			printf(", %.2fx", json_number_value(json_object_get(a, "speedup")));
			if (json_is_number(json_object_get(spr, "lo")) && json_is_number(json_object_get(spr, "hi")))
				printf(" [%s%s]", pragma_interval_str(json_number_value(json_object_get(spr, "lo")),
								  json_number_value(json_object_get(spr, "hi")), iv,
								  sizeof(iv)),
				       !strcmp(pragma_bench_spread_kind(spr) ?: "", "95% interval") ? ", 95% interval" :
												    ", older run: interquartile range");
		}
		if (d) {
			if (json_is_string(json_object_get(d, "vs_best")))
				printf("; vs best: %s", json_string_value(json_object_get(d, "vs_best")));
			printf("; decision: %s", json_string_value(json_object_get(d, "badge")));
		}
		printf("\n");
		if (!c || json_is_null(c))
			continue;
		const char *v = json_string_value(json_object_get(c, "verdict"));
		const char *b = json_string_value(json_object_get(c, "bottleneck"));
		const char *act = json_string_value(json_object_get(c, "actions"));
		const char *sum = json_string_value(json_object_get(c, "summary"));
		printf("   the Conductor's verdict: %s%s\n", v && *v ? v : "none", recorded ? " (recorded)" : "");
		if (b && *b)
			printf("   bottleneck: %.400s\n", b);
		if (act && *act)
			printf("   actions:    %.600s\n", act);
		if (sum && *sum)
			printf("   summary:    %.600s\n", sum);
	}
	json_decref(dec);
	json_decref(run);
}

int cmd_optimize(int argc, char **argv)
{
	struct flags f = { .attempts = 15, .candidates = 1 };
	static char *resume_sets[64];
	struct pragma_optimize_opts o = { 0 };
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct status st = { .tty = isatty(2) };
	struct cli_opts c;
	json_t *res = NULL;
	char demo[4200];
	const char *replay = NULL;
	int no_avx512 = 0;
	int rc;

	if (cli_wants_help(argc, argv)) {
		fputs(usage, stdout);
		return 0;
	}
	if ((rc = cli_parse(argc, argv, &c, extra, &f)))
		return rc;
	int attempts_given = f.attempts_given;
	if (!f.resume && c.n_positional != 1)
		return cli_usage_error("optimize needs one TASK (or --resume RUN)\n%s", usage);
	if (c.n_positional > 1)
		return cli_usage_error("optimize takes one TASK, not %d\n%s", c.n_positional, usage);
	o.llm = (struct pragma_llm_options)PRAGMA_LLM_OPTIONS_INIT;
	o.task = c.n_positional ? c.positional[0] : NULL;
	o.overrides = c.sets;
	o.n_overrides = c.n_sets;
	o.mode = PRAGMA_MODE_PRAGMA;
	if (f.mode && pragma_mode_parse(f.mode, &o.mode) < 0)
		return cli_usage_error("--mode must be pragma, n-pragma or single");
	if (f.backend && !(o.backend = pragma_backend_find(f.backend, &err)))
		return cli_usage_error("%s (%s)", err.msg, err.hint);
	o.attempts = f.attempts;
	o.candidates = f.candidates;
	o.target_speedup = f.target_speedup;
	o.target_roof = f.target_roof;
	o.patience = f.patience;
	o.db = f.db ? f.db : cli_default_db();
	o.out = f.out;
	o.resume = f.resume;
	o.suite_id = f.suite_run;
	o.trajectory = f.trajectory;
	o.llm.spec = f.llm;
	if (f.no_cache)
		o.llm.cache = 0;
	if (f.resume) {
		/* The stored run says which task, mode, model and sizes it was;
		 * a TASK given too must be that task. */
		struct pragma_store *s;
		json_t *run;
		if (pragma_store_open_existing(&s, o.db, &err) < 0) {
			pragma_err_prefix(&err, "cannot resume '%s'", f.resume);
			return c.json ? cli_error_json(&err) : cli_error(&err);
		}
		run = pragma_store_run_get(s, f.resume, &err);
		pragma_store_close(s);
		if (!run)
			return c.json ? cli_error_json(&err) : cli_error(&err);
		static char task[4096], mode[32];
		snprintf(task, sizeof(task), "%s", json_string_value(json_object_get(run, "task_path")) ?: "");
		snprintf(mode, sizeof(mode), "%s", json_string_value(json_object_get(run, "mode")) ?: "pragma");
		if (o.task && !same_task(o.task, task)) {
			pragma_err_set(&err, PRAGMA_E_INPUT, "run %s is of task %s, not %s",
				       json_string_value(json_object_get(run, "id")), task, o.task);
			pragma_err_hint(&err, "leave TASK out to resume the run as it was: pragma optimize --resume %s",
					f.resume);
			json_decref(run);
			return c.json ? cli_error_json(&err) : cli_error(&err);
		}
		o.task = task;
		json_t *cfg = json_object_get(run, "config");
		/* A resumed run goes on as it was: another mode or other sizes
		 * would make its attempts incomparable. */
		if (f.mode && strcmp(f.mode, mode)) {
			pragma_err_set(&err, PRAGMA_E_INPUT, "run %s ran in %s mode; it cannot go on in %s mode",
				       json_string_value(json_object_get(run, "id")), mode, f.mode);
			pragma_err_hint(&err, "leave --mode out, or start a new run");
			json_decref(run);
			return c.json ? cli_error_json(&err) : cli_error(&err);
		}
		if (c.n_sets) {
			json_t *ov = json_object_get(cfg, "overrides");
			int same = json_array_size(ov) == (size_t)c.n_sets;
			for (int k = 0; same && k < c.n_sets; k++) {
				int found = 0;
				size_t i;
				json_t *x;
				json_array_foreach(ov, i, x)
					found |= !strcmp(json_string_value(x) ?: "", c.sets[k]);
				same = found;
			}
			if (!same) {
				pragma_err_set(&err, PRAGMA_E_INPUT, "run %s was made with other --set sizes than these",
					       json_string_value(json_object_get(run, "id")));
				pragma_err_hint(&err, "leave --set out to resume with the run's own sizes, or start a new run");
				json_decref(run);
				return c.json ? cli_error_json(&err) : cli_error(&err);
			}
		}
		pragma_mode_parse(mode, &o.mode);
		static char spec[4096];
		if (!o.llm.spec && json_string_value(json_object_get(cfg, "llm_spec"))) {
			snprintf(spec, sizeof(spec), "%s", json_string_value(json_object_get(cfg, "llm_spec")));
			o.llm.spec = spec;
		}
		if (json_is_string(json_object_get(cfg, "backend")) && !f.backend)
			o.backend = pragma_backend_find(json_string_value(json_object_get(cfg, "backend")), NULL);
		if (json_is_integer(json_object_get(cfg, "attempts")) && !attempts_given)
			o.attempts = (int)json_integer_value(json_object_get(cfg, "attempts"));
		/* A suite's trajectory: the exec provider's model sees it as
		 * PRAGMA_TRAJECTORY, and the run stays that trajectory's. */
		if (json_is_integer(json_object_get(cfg, "trajectory")) && !f.trajectory_given)
			o.trajectory = (int)json_integer_value(json_object_get(cfg, "trajectory"));
		if (!c.n_sets) {
			json_t *ov = json_object_get(cfg, "overrides");
			size_t i;
			json_t *x;
			o.n_overrides = 0;
			json_array_foreach(ov, i, x)
				if (i < 64)
					resume_sets[o.n_overrides++] = strdup(json_string_value(x));
			o.overrides = (const char *const *)resume_sets;
		}
		json_decref(run);
	} else if (!f.llm && !(getenv("PRAGMA_LLM") && *getenv("PRAGMA_LLM")) && o.task &&
		   (replay = demo_recording(o.task, pragma_mode_name(o.mode), demo, sizeof(demo) - 8, &no_avx512))) {
		static char spec[4300];
		snprintf(spec, sizeof(spec), "replay:%s", replay);
		o.llm.spec = spec;
		fprintf(stderr, "pragma: no model configured (--llm or PRAGMA_LLM): REPLAYING the recorded session %s.\n"
				"        The model's replies come from that recording; compiling, verifying, timing and\n"
				"        profiling run for real on this machine.\n", replay);
		if (no_avx512)
			fprintf(stderr, "pragma: warning: that session was recorded on a CPU with AVX-512, which this one "
					"lacks, and its kernels use it: expect them to fail to compile here (demo/README.md "
					"lists the recordings; --mode pragma has one for CPUs without AVX-512).\n"
					"Hint: configure a model (--llm, PRAGMA_LLM) to optimize for this CPU\n");
	}
	o.progress = on_progress;
	o.progress_ctx = &st;
	rc = pragma_optimize(&o, &res, &err);
	if (o.overrides == (const char *const *)resume_sets)
		for (int i = 0; i < o.n_overrides; i++)
			free(resume_sets[i]);
	if (rc < 0) {
		if (st.tty && st.shown)
			fputs("\n", stderr);
		return c.json ? cli_error_json(&err) : cli_error(&err);
	}
	if (st.tty && st.shown)
		fputs("\r\033[K", stderr);
	if (c.json) {
		if (replay)
			json_object_set_new(res, "replayed_from", json_string(replay));
		cli_print_json(res);
		return 0;
	}
	json_t *best = json_object_get(res, "best");
	printf("run:       %s (%s mode%s)\n", json_string_value(json_object_get(res, "run")),
	       json_string_value(json_object_get(res, "mode")), replay ? ", REPLAYED model replies" : "");
	printf("task:      %s\n", json_string_value(json_object_get(res, "task")));
	printf("baseline:  %.3f ms (%s, measured at the start; each timing session times it again beside the kernels)\n", json_number_value(json_object_get(json_object_get(res, "baseline"), "median")),
	       json_string_value(json_object_get(res, "baseline_kind")));
	if (json_is_object(best)) {
		json_t *sp = json_object_get(best, "speedup_spread"), *fin = json_object_get(best, "final");
		json_t *own = json_object_get(best, "in_its_attempt");
		char iv[72];
		char cond[320];
		/* The attempt's one time is its session's; the final comparison
		 * is a session of its own, and says so. */
		printf("best:      attempt %lld", (long long)json_integer_value(json_object_get(best, "attempt")));
		if (json_is_object(own))
			printf(": %.3f ms, %.2fx [%s] in its attempt's session",
			       json_number_value(json_object_get(own, "time_ms")), json_number_value(json_object_get(own, "speedup")),
			       pragma_interval_str(json_number_value(json_object_get(own, "lo")),
						   json_number_value(json_object_get(own, "hi")), iv, sizeof(iv)));
		printf("\n");
		if (json_is_object(fin)) {
			int busy = pragma_bench_final_text(fin, cond, sizeof(cond));
			printf("final:     %.3f ms against the baseline's %.3f ms in the same rounds: %.2fx",
			       json_number_value(json_object_get(fin, "time_ms")),
			       json_number_value(json_object_get(fin, "baseline_ms")),
			       json_number_value(json_object_get(best, "speedup")));
			if (sp)
				printf(" [%s, 95%% interval]", pragma_interval_str(json_number_value(json_object_get(sp, "lo")),
										json_number_value(json_object_get(sp, "hi")),
										iv, sizeof(iv)));
			printf("\n           (%s)\n", cond);
			if (busy && json_is_string(json_object_get(best, "warning")))
				printf("WARNING:   %s\n", json_string_value(json_object_get(best, "warning")));
		} else {
			printf("final:     no final comparison ran; the figures above are the attempt's session's\n");
		}
		printf("kernel:    %s\n", json_string_value(json_object_get(best, "path")));
	} else {
		printf("best:      none — no attempt produced a verified kernel\n");
	}
	json_t *u = json_object_get(res, "usage");
	printf("usage:     %lld tokens%s, $%.4f\n", (long long)json_integer_value(json_object_get(u, "tokens")),
	       json_is_true(json_object_get(u, "tokens_estimated")) ? " (some estimated)" : "",
	       json_number_value(json_object_get(u, "cost")));
	printf("stopped:   %s\n", json_string_value(json_object_get(res, "stop_reason")));
	print_trace(o.db, json_string_value(json_object_get(res, "run")));
	json_decref(res);
	return 0;
}
