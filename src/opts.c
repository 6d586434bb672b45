#include <stdio.h>
#include <stdlib.h>
#include <string.h>

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

int cli_int_arg(int argc, char **argv, int i, int *out)
{
	char *end;
	long v;

	if (i + 1 >= argc)
		return cli_usage_error("%s needs a number", argv[i]), -1;
	v = strtol(argv[i + 1], &end, 10);
	if (*end || end == argv[i + 1] || v < 0 || v > 1000000)
		return cli_usage_error("%s: '%s' is not a valid number", argv[i], argv[i + 1]), -1;
	*out = (int)v;
	return 2;
}

int cli_num_arg(int argc, char **argv, int i, double *out)
{
	char *end;

	if (i + 1 >= argc)
		return cli_usage_error("%s needs a value", argv[i]), -1;
	*out = strtod(argv[i + 1], &end);
	if (*end || end == argv[i + 1] || *out < 0)
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
