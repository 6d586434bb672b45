#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opts.h"
#include "pragma/fs.h"
#include "pragma/store.h"

static const char usage[] =
	"usage: pragma runs [--db FILE] [--limit N] [--json]\n"
	"       pragma runs show RUN [--db FILE] [--json]\n"
	"       pragma runs export RUN FILE [--db FILE]\n"
	"\n"
	"Lists the runs in the store (default $PRAGMA_DB or ./.pragma/pragma.db),\n"
	"newest first (--limit N, default 50; 0 lists all); show prints one run with\n"
	"its attempts; export writes the run's LLM replies as a recording for the\n"
	"replay provider (--llm replay:FILE). RUN may be any unique beginning of an id.\n"
	"A run whose process is gone (killed, Ctrl-C, a reboot) shows as interrupted:\n"
	"'pragma optimize --resume RUN' continues it. Reading never creates a store.\n";

struct flags {
	const char *db;
	int limit;
};

static int extra(int argc, char **argv, int i, void *ctx)
{
	struct flags *f = ctx;

	if (!strcmp(argv[i], "--db")) {
		if (i + 1 >= argc)
			return cli_usage_error("--db needs a file"), -1;
		f->db = argv[i + 1];
		return 2;
	}
	if (!strcmp(argv[i], "--limit"))
		return cli_int_arg_range(argc, argv, i, 0, 1000000, &f->limit);
	return 0;
}

const char *cli_default_db(void)
{
	const char *e = getenv("PRAGMA_DB");

	return e && *e ? e : ".pragma/pragma.db";
}

static double jnum(json_t *o, const char *k)
{
	return json_number_value(json_object_get(o, k));
}

static const char *jstr(json_t *o, const char *k)
{
	const char *s = json_string_value(json_object_get(o, k));

	return s ? s : "-";
}

static void show_human(json_t *run)
{
	json_t *att = json_object_get(run, "attempts"), *a;
	size_t i;

	printf("run:       %s\ntask:      %s (%s)\nmode:      %s\nllm:       %s\nstatus:    %s\n", jstr(run, "id"),
	       jstr(run, "task_name"), jstr(run, "category"), jstr(run, "mode"), jstr(run, "llm"), jstr(run, "status"));
	if (!strcmp(jstr(run, "status"), "interrupted")) {
		json_t *why = json_object_get(run, "interrupted_because");
		if (why)
			printf("           its process (pid %lld on %s) is gone\n",
			       (long long)json_integer_value(json_object_get(why, "pid")), jstr(why, "host"));
		printf("           resume it: pragma optimize --resume %s\n", jstr(run, "id"));
	} else if (!strcmp(jstr(run, "status"), "running") && json_is_integer(json_object_get(run, "owner_pid"))) {
		printf("           by pid %lld on %s\n", (long long)json_integer_value(json_object_get(run, "owner_pid")),
		       jstr(run, "owner_host"));
	}
	if (json_is_number(json_object_get(run, "best_speedup")))
		printf("best:      attempt %lld, %.2fx (%.3f ms)\n",
		       (long long)json_integer_value(json_object_get(run, "best_attempt")), jnum(run, "best_speedup"),
		       jnum(run, "best_time_ms"));
	printf("\n%-4s %-4s %-18s %9s %9s  %s\n", "N", "CAND", "STATUS", "TIME ms", "SPEEDUP", "MESSAGE");
	json_array_foreach(att, i, a) {
		char t[32] = "-", s[32] = "-";
		if (json_is_number(json_object_get(a, "time_ms")))
			snprintf(t, sizeof(t), "%.3f", jnum(a, "time_ms"));
		if (json_is_number(json_object_get(a, "speedup")))
			snprintf(s, sizeof(s), "%.2fx", jnum(a, "speedup"));
		printf("%-4lld %-4lld %-18s %9s %9s  %s%.90s\n", (long long)json_integer_value(json_object_get(a, "n")),
		       (long long)json_integer_value(json_object_get(a, "candidate")), jstr(a, "status"), t, s,
		       json_integer_value(json_object_get(a, "is_best")) ? "[best] " : "", jstr(a, "message"));
	}
}

int cmd_runs(int argc, char **argv)
{
	struct flags f = { .limit = 50 };
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_store *s = NULL;
	struct cli_opts o;
	const char *db;
	int rc, ret = 0, list;

	if (cli_wants_help(argc, argv)) {
		fputs(usage, stdout);
		return 0;
	}
	if ((rc = cli_parse(argc, argv, &o, extra, &f)))
		return rc;
	list = o.n_positional == 0 || (!strcmp(o.positional[0], "list") && o.n_positional == 1);
	if (!list && !(!strcmp(o.positional[0], "show") && o.n_positional == 2) &&
	    !(!strcmp(o.positional[0], "export") && o.n_positional == 3))
		return cli_usage_error("runs: bad arguments\n%s", usage);
	db = f.db ? f.db : cli_default_db();
	/* Reading creates nothing: no store is no runs. */
	if (!pragma_path_exists(db) && list) {
		if (o.json)
			cli_print_json(json_pack("{s:s, s:[], s:s}", "status", "ok", "runs", "store", db));
		else
			printf("no runs: there is no run store at %s (pragma optimize makes one; --db or PRAGMA_DB "
			       "point elsewhere)\n", db);
		return 0;
	}
	if (pragma_store_open_existing(&s, db, &err) < 0) {
		if (!list && err.kind == PRAGMA_E_INPUT)
			pragma_err_prefix(&err, "no run '%s'", o.positional[1]);
		return o.json ? cli_error_json(&err) : cli_error(&err);
	}
	if (list) {
		json_t *runs = pragma_store_runs(s, NULL, f.limit, &err), *r;
		size_t i;
		int interrupted = 0;
		const char *last_interrupted = NULL;
		if (!runs) {
			ret = cli_error(&err);
		} else if (o.json) {
			cli_print_json(json_pack("{s:s, s:o, s:s}", "status", "ok", "runs", runs, "store", pragma_store_path(s)));
		} else {
			printf("%-26s %-28s %-9s %-11s %4s %9s\n", "RUN", "TASK", "MODE", "STATUS", "ATT", "BEST");
			json_array_foreach(runs, i, r) {
				char best[32] = "-";
				if (json_is_number(json_object_get(r, "best_speedup")))
					snprintf(best, sizeof(best), "%.2fx", jnum(r, "best_speedup"));
				if (!strcmp(jstr(r, "status"), "interrupted")) {
					interrupted++;
					if (!last_interrupted)
						last_interrupted = jstr(r, "id");
				}
				printf("%-26s %-28.28s %-9s %-11s %4lld %9s\n", jstr(r, "id"), jstr(r, "task_name"),
				       jstr(r, "mode"), jstr(r, "status"),
				       (long long)json_integer_value(json_object_get(r, "attempts")), best);
			}
			printf("\n%zu run%s in %s\n", json_array_size(runs), json_array_size(runs) == 1 ? "" : "s",
			       pragma_store_path(s));
			if (interrupted)
				printf("%d interrupted (its process is gone); resume one with: pragma optimize --resume %s\n",
				       interrupted, last_interrupted);
			json_decref(runs);
		}
	} else if (!strcmp(o.positional[0], "show")) {
		json_t *run = pragma_store_run_get(s, o.positional[1], &err);
		if (!run)
			ret = o.json ? cli_error_json(&err) : cli_error(&err);
		else if (o.json)
			cli_print_json(run);
		else {
			show_human(run);
			json_decref(run);
		}
	} else {
		int n = pragma_store_export_replay(s, o.positional[1], o.positional[2], &err);
		if (n < 0)
			ret = cli_error(&err);
		else
			printf("wrote %d LLM replies to %s (use --llm replay:%s)\n", n, o.positional[2], o.positional[2]);
	}
	pragma_store_close(s);
	return ret;
}
