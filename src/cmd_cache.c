#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "opts.h"
#include "pragma/config.h"
#include "pragma/fs.h"
#include "pragma/refdata.h"

static const char usage[] =
	"usage: pragma cache [info] [--json]\n"
	"       pragma cache prune [--max SIZE] [--json]\n"
	"       pragma cache clear [--json]\n"
	"\n"
	"The cache holds reference data (inputs and expected outputs per task and seed),\n"
	"task metadata and compiled references, under $PRAGMA_CACHE_DIR, else\n"
	"$XDG_CACHE_HOME/pragma, else ~/.cache/pragma. Reference data is bounded by\n"
	"$PRAGMA_CACHE_MAX (default 8G); pragma prunes least recently used entries\n"
	"after making new ones. prune does it now (to --max, e.g. 2G, 500M; 0 removes\n"
	"all reference data);\n"
	"clear removes the whole cache.\n";

struct flags {
	const char *max;
};

static int extra(int argc, char **argv, int i, void *ctx)
{
	struct flags *f = ctx;

	if (!strcmp(argv[i], "--max")) {
		if (i + 1 >= argc)
			return cli_usage_error("--max needs a size, e.g. 2G"), -1;
		f->max = argv[i + 1];
		return 2;
	}
	return 0;
}

int cmd_cache(int argc, char **argv)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_buf dir = PRAGMA_BUF_INIT;
	struct flags f = { 0 };
	struct cli_opts o;
	const char *sub;
	int rc;

	if (cli_wants_help(argc, argv)) {
		fputs(usage, stdout);
		return 0;
	}
	if ((rc = cli_parse(argc, argv, &o, extra, &f)))
		return rc;
	sub = o.n_positional ? o.positional[0] : "info";
	if (pragma_cache_dir(&dir, &err) < 0)
		return o.json ? cli_error_json(&err) : cli_error(&err);

	if (!strcmp(sub, "info")) {
		uint64_t bytes = 0;
		int entries = 0;
		if (pragma_ref_stats(&bytes, &entries, &err) < 0)
			return cli_error(&err);
		uint64_t all = pragma_du(dir.data);
		if (o.json)
			cli_print_json(json_pack("{s:s, s:s, s:I, s:i, s:I, s:I}", "status", "ok", "dir", dir.data,
						 "reference_bytes", (json_int_t)bytes, "reference_entries", entries,
						 "total_bytes", (json_int_t)all, "limit_bytes",
						 (json_int_t)pragma_ref_cache_limit()));
		else
			printf("cache:      %s\nreference:  %d entries, %.1f MiB (limit %.1f GiB, PRAGMA_CACHE_MAX)\n"
			       "total:      %.1f MiB\n", dir.data, entries, bytes / 1048576.0,
			       pragma_ref_cache_limit() / 1073741824.0, all / 1048576.0);
	} else if (!strcmp(sub, "prune")) {
		uint64_t limit = pragma_ref_cache_limit(), freed = 0;
		int left = 0;
		/* --max 0 empties the reference cache; anything else is a size. */
		if (f.max && strcmp(f.max, "0") && pragma_parse_size(f.max, &limit) < 0)
			return cli_usage_error("--max '%s' is not a size (e.g. 2G, 500M, or 0 to remove all reference data)",
					       f.max);
		if (f.max && !strcmp(f.max, "0"))
			limit = 0;
		if (pragma_ref_prune(limit, NULL, &freed, &left, &err) < 0)
			return o.json ? cli_error_json(&err) : cli_error(&err);
		if (o.json)
			cli_print_json(json_pack("{s:s, s:I, s:i, s:I}", "status", "ok", "freed_bytes", (json_int_t)freed,
						 "entries_left", left, "limit_bytes", (json_int_t)limit));
		else
			printf("freed %.1f MiB; %d reference entries left (limit %.1f MiB)\n", freed / 1048576.0, left,
			       limit / 1048576.0);
	} else if (!strcmp(sub, "clear")) {
		uint64_t all = pragma_du(dir.data);
		if (pragma_rm_rf(dir.data, &err) < 0)
			return o.json ? cli_error_json(&err) : cli_error(&err);
		if (o.json)
			cli_print_json(json_pack("{s:s, s:I}", "status", "ok", "freed_bytes", (json_int_t)all));
		else
			printf("removed %s (%.1f MiB)\n", dir.data, all / 1048576.0);
	} else {
		pragma_buf_release(&dir);
		return cli_usage_error("cache: unknown subcommand '%s'\n%s", sub, usage);
	}
	pragma_buf_release(&dir);
	return 0;
}
