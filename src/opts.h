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

/* Value-taking flags, for extra() callbacks: each returns 2 (the flag and
 * its value consumed) or -1 after printing a usage error. */
/* A count 1 .. 1000000; 0 only for the flags whose 0 means something
 * (--warmup, --trajectory, --limit, --patience, --retries, --attempt,
 * --seed): 0 must never quietly mean "not given". */
int cli_int_arg(int argc, char **argv, int i, int *out);
int cli_int_arg_range(int argc, char **argv, int i, long lo, long hi, int *out);
int cli_num_arg(int argc, char **argv, int i, double *out);       /* a number >= 0 */
int cli_str_arg(int argc, char **argv, int i, const char **out);

#endif
