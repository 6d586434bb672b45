#include <stdio.h>
#include <string.h>

#include "cli.h"
#include "opts.h"
#include "pragma/fs.h"
#include "pragma/report.h"
#include "pragma/store.h"

static const char usage[] =
	"usage: pragma report RUN [RUN...] [--format md|html] [-o FILE] [--db FILE] [--json]\n"
	"\n"
	"Renders stored runs as a report: the Table I summary (success, fast_p, mean\n"
	"and geometric mean speedup, median fraction of roofline, tokens and cost per\n"
	"task; PyTorch-baselined and native C tasks apart, per category, spreads over\n"
	"--repeat trajectories), the speedup distribution per category (Fig. 3), and\n"
	"per task the speedup over attempts (Fig. 4), the Conductor's reasoning, the\n"
	"best kernel's profile against the first correct one, and its source.\n"
	"\n"
	"RUN is a run id (r..., from 'pragma optimize'), a suite id (s..., from\n"
	"'pragma bench'), or a unique prefix of either; several are compared side by\n"
	"side.\n"
	"\n"
	"  --format md|html  Markdown (default; html when FILE ends in .html): HTML is\n"
	"                    one self-contained file with SVG plots, nothing fetched\n"
	"  -o FILE           write the report to FILE (default: standard output)\n"
	"  --db FILE         the run store (default $PRAGMA_DB or .pragma/pragma.db)\n"
	"  --json            the numbers the report shows: per series its outcomes\n"
	"                    and Table I metrics\n";

struct flags {
	const char *db, *format, *out;
};

static int extra(int argc, char **argv, int i, void *ctx)
{
	struct flags *f = ctx;

	if (!strcmp(argv[i], "--db"))
		return cli_str_arg(argc, argv, i, &f->db);
	if (!strcmp(argv[i], "--format"))
		return cli_str_arg(argc, argv, i, &f->format);
	if (!strcmp(argv[i], "-o") || !strcmp(argv[i], "--output"))
		return cli_str_arg(argc, argv, i, &f->out);
	return 0;
}

static json_t *numbers(json_t *model)
{
	json_t *cols = json_array(), *c;
	size_t i;

	json_array_foreach(json_object_get(model, "columns"), i, c)
		json_array_append_new(cols, json_pack("{s:O, s:O, s:O, s:O, s:O, s:O, s:O}", "id", json_object_get(c, "id"),
						      "kind", json_object_get(c, "kind"), "label", json_object_get(c, "label"),
						      "mode", json_object_get(c, "mode"), "llm", json_object_get(c, "llm"),
						      "metrics", json_object_get(c, "metrics"), "outcomes",
						      json_object_get(c, "outcomes")));
	return json_pack("{s:s, s:o, s:I}", "status", "ok", "series", cols, "tasks",
			 (json_int_t)json_array_size(json_object_get(model, "tasks")));
}

int cmd_report(int argc, char **argv)
{
	struct flags f = { 0 };
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_store *s = NULL;
	struct pragma_buf out = PRAGMA_BUF_INIT;
	enum pragma_report_format fmt = PRAGMA_REPORT_MARKDOWN;
	json_t *sources = NULL, *model = NULL;
	struct cli_opts o;
	int rc, ret = 0;

	if (cli_wants_help(argc, argv)) {
		fputs(usage, stdout);
		return 0;
	}
	if ((rc = cli_parse(argc, argv, &o, extra, &f)))
		return rc;
	if (o.n_positional == 0)
		return cli_usage_error("report: which run? give a run or suite id ('pragma runs' lists them)\n%s", usage);
	if (f.format && !strcmp(f.format, "html"))
		fmt = PRAGMA_REPORT_HTML;
	else if (f.format && strcmp(f.format, "md") && strcmp(f.format, "markdown"))
		return cli_usage_error("report: --format is md or html, not '%s'", f.format);
	else if (!f.format && f.out && strlen(f.out) > 5 &&
		 (!strcmp(f.out + strlen(f.out) - 5, ".html") || !strcmp(f.out + strlen(f.out) - 4, ".htm")))
		fmt = PRAGMA_REPORT_HTML;

	if (pragma_store_open_existing(&s, f.db ? f.db : cli_default_db(), &err) < 0) /* reading makes no store */
		goto fail;
	if (!(sources = pragma_report_load(s, o.positional, o.n_positional, &err)))
		goto fail;
	if (!(model = pragma_report_model(sources, &err)))
		goto fail;
	if (pragma_report_render(model, fmt, pragma_store_path(s), &out, &err) < 0)
		goto fail;
	if (f.out) {
		if (pragma_write_file_atomic(f.out, out.data, out.len, &err) < 0)
			goto fail;
		if (!o.json)
			printf("wrote the %s report on %zu task%s (%zu series) to %s\n", fmt == PRAGMA_REPORT_HTML ? "HTML" : "Markdown",
			       json_array_size(json_object_get(model, "tasks")),
			       json_array_size(json_object_get(model, "tasks")) == 1 ? "" : "s",
			       json_array_size(json_object_get(model, "columns")), f.out);
	} else if (!o.json) {
		fwrite(out.data, 1, out.len, stdout);
	}
	if (o.json)
		cli_print_json(numbers(model));
	goto out;
fail:
	ret = o.json ? cli_error_json(&err) : cli_error(&err);
out:
	pragma_buf_release(&out);
	json_decref(model);
	json_decref(sources);
	pragma_store_close(s);
	return ret;
}
