#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <math.h>

#include "cli.h"
#include "opts.h"

int cli_parse(int argc, char **argv, struct cli_opts *o, int (*extra)(int argc, char **argv, int i, void *ctx),
	      void *ctx)
{
	memset(o, 0, sizeof(*o));
	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		int used;

		if (!strcmp(a, "--json")) {
			o->json = 1;
		} else if (!strcmp(a, "--set") || !strncmp(a, "--set=", 6)) {
			const char *v = a[5] == '=' ? a + 6 : (i + 1 < argc ? argv[++i] : NULL);
			if (!v || !strchr(v, '='))
				return cli_usage_error("--set needs NAME=VALUE");
			if (o->n_sets == 64)
				return cli_usage_error("too many --set");
			o->sets[o->n_sets++] = v;
		} else if (extra && (used = extra(argc, argv, i, ctx)) != 0) {
			if (used < 0)
				return 2;
			i += used - 1;
		} else if (a[0] == '-' && a[1]) {
			return cli_usage_error("%s: unknown option '%s' (see 'pragma %s --help')", argv[0], a, argv[0]);
		} else {
			if (o->n_positional == 8)
				return cli_usage_error("%s: too many arguments", argv[0]);
			o->positional[o->n_positional++] = a;
		}
	}
	return 0;
}

/* Counts whose 0 means something ("no warm-up", "trajectory 0", "list all",
 * "no patience limit", "no retries"). Every other count refuses 0: too
 * often 0 silently meant "not given" and ran the default instead. */
static const char *const zero_ok[] = { "--warmup", "--trajectory", "--limit", "--patience", "--retries", "--attempt",
				       "--seed", NULL };

int cli_int_arg_range(int argc, char **argv, int i, long lo, long hi, int *out)
{
	char *end;
	long v;

	if (i + 1 >= argc)
		return cli_usage_error("%s needs a whole number (%ld to %ld)", argv[i], lo, hi), -1;
	errno = 0;
	v = strtol(argv[i + 1], &end, 10);
	if (*end || end == argv[i + 1] || errno || isspace((unsigned char)argv[i + 1][0]))
		return cli_usage_error("%s: '%s' is not a whole number (%ld to %ld)", argv[i], argv[i + 1], lo, hi), -1;
	if (v < lo || v > hi)
		return cli_usage_error("%s: %ld is out of range: %ld to %ld%s", argv[i], v, lo, hi,
				       v == 0 && lo > 0 ? " (0 does not mean \"the default\": leave the flag out for that)" : ""),
		       -1;
	*out = (int)v;
	return 2;
}

int cli_int_arg(int argc, char **argv, int i, int *out)
{
	long lo = 1;

	for (int k = 0; zero_ok[k]; k++)
		if (!strcmp(argv[i], zero_ok[k]))
			lo = 0;
	return cli_int_arg_range(argc, argv, i, lo, 1000000, out);
}

int cli_num_arg(int argc, char **argv, int i, double *out)
{
	char *end;

	if (i + 1 >= argc)
		return cli_usage_error("%s needs a value", argv[i]), -1;
	*out = strtod(argv[i + 1], &end);
	if (*end || end == argv[i + 1] || !isfinite(*out) || *out < 0)
		return cli_usage_error("%s: '%s' is not a number >= 0", argv[i], argv[i + 1]), -1;
	return 2;
}

int cli_str_arg(int argc, char **argv, int i, const char **out)
{
	if (i + 1 >= argc)
		return cli_usage_error("%s needs a value", argv[i]), -1;
	*out = argv[i + 1];
	return 2;
}
