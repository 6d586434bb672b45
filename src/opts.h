/* Small shared flag parsing for commands: --json, --set N=V, TASK. */
#ifndef PRAGMA_OPTS_H
#define PRAGMA_OPTS_H

struct cli_opts {
	int json;
	const char *sets[64];
	int n_sets;
	const char *positional[8];
	int n_positional;
};

/* Take --json and --set from argv (argv[0] is the command); other flags are
 * handed to extra(), which returns how many arguments it consumed (0: not
 * its flag). Returns 0, or an exit code (2) after printing the error. */
int cli_parse(int argc, char **argv, struct cli_opts *o,
	      int (*extra)(int argc, char **argv, int i, void *ctx), void *ctx);

#endif
