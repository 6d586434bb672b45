/* The pragma CLI: one src/cmd_<verb>.c per command over libpragma. */
#ifndef PRAGMA_CLI_H
#define PRAGMA_CLI_H

#include <jansson.h>
#include <stdio.h>

#include "pragma/err.h"

/* Each command: parse its own flags (argv[0] is the command name), print
 * results on stdout (JSON with --json), errors on stderr; return the exit
 * code (DESIGN 3.9: 0 ok, 1 negative verdict, 2 usage/input, 3 environment). */
int cmd_doctor(int argc, char **argv);
int cmd_machine(int argc, char **argv);
int cmd_tasks(int argc, char **argv);
int cmd_baseline(int argc, char **argv);
int cmd_verify(int argc, char **argv);
int cmd_eval(int argc, char **argv);
int cmd_cache(int argc, char **argv);
int cmd_llm(int argc, char **argv);
int cmd_profile(int argc, char **argv);
int cmd_knowledge(int argc, char **argv);
int cmd_runs(int argc, char **argv);
int cmd_optimize(int argc, char **argv);
int cmd_bench(int argc, char **argv);
int cmd_report(int argc, char **argv);

/* The run store path: $PRAGMA_DB, else ./.pragma/pragma.db. */
const char *cli_default_db(void);

/* Print "pragma: <message>\nHint: <hint>" to stderr; returns the exit code. */
int cli_error(const struct pragma_err *err);
/* Same, from a format (usage errors: exit 2). */
__attribute__((format(printf, 1, 2)))
int cli_usage_error(const char *fmt, ...);
/* Print a JSON value to stdout (indented), steal the reference. */
void cli_print_json(json_t *v);
/* True when argv[i] is --help or -h. */
int cli_wants_help(int argc, char **argv);
/* Exit-code-2 error object for --json consumers: {"status":"error",...}. */
int cli_error_json(const struct pragma_err *err);

#endif
