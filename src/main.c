#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pragma/config.h"
#include "pragma/log.h"
#include "pragma/proc.h"

struct cli_cmd {
	const char *name;
	int (*fn)(int argc, char **argv);
	const char *summary;
};

static const struct cli_cmd commands[] = {
	{ "doctor", cmd_doctor, "what works on this machine and what does not" },
	{ "machine", cmd_machine, "CPU, caches and measured peak FLOP/s and bandwidth" },
	{ "tasks", cmd_tasks, "list and inspect tasks" },
	{ "baseline", cmd_baseline, "time a task's reference (PyTorch or C)" },
	{ "verify", cmd_verify, "check a kernel: compile, sandboxed runs, compare with the reference" },
	{ "eval", cmd_eval, "verify, then time a kernel against the baseline (speedup)" },
	{ "cache", cmd_cache, "reference-data cache: info, prune, clear" },
	{ "llm", cmd_llm, "LLM providers: ping" },
	{ "profile", cmd_profile, "profile a kernel: metrics, roofline, bottleneck diagnosis" },
	{ "knowledge", cmd_knowledge, "the profiling compendium: metric meanings, playbooks, search" },
	{ "optimize", cmd_optimize, "optimize a task: the Coder/Verifier/Profiler/Conductor loop" },
	{ "runs", cmd_runs, "runs in the store: list, show, export a replay" },
	{ "bench", cmd_bench, "optimize a whole suite; the paper's metrics; compare suite runs" },
	{ "report", cmd_report, "a report of runs or suite runs: Markdown, or HTML with SVG plots" },
};

static void usage(FILE *f)
{
	fprintf(f, "usage: pragma [-v|-q] <command> [options]\n\ncommands:\n");
	for (size_t i = 0; i < sizeof(commands) / sizeof(commands[0]); i++)
		fprintf(f, "  %-10s %s\n", commands[i].name, commands[i].summary);
	fprintf(f, "\n'pragma <command> --help' for a command's options.\n"
		   "-v (twice: debug) says more, -q only errors; both work anywhere on the command line.\n"
		   "Exit codes: 0 ok, 1 negative verdict, 2 usage or input error, 3 environment problem;\n"
		   "killed by a signal: 128+N (Ctrl-C 130), children stopped too.\n");
}

/* -v, -q, --verbose, --quiet anywhere before a "--": taken out of argv so
 * every command treats them alike. Returns the new argc. */
static int take_log_flags(int argc, char **argv)
{
	int out = 1, verbose = 0, quiet = 0, dashdash = 0;

	for (int i = 1; i < argc; i++) {
		const char *a = argv[i];
		if (!dashdash && !strcmp(a, "--"))
			dashdash = 1;
		if (!dashdash && (!strcmp(a, "-v") || !strcmp(a, "--verbose"))) {
			verbose++;
			continue;
		}
		if (!dashdash && (!strcmp(a, "-vv"))) {
			verbose += 2;
			continue;
		}
		if (!dashdash && (!strcmp(a, "-q") || !strcmp(a, "--quiet"))) {
			quiet = 1;
			continue;
		}
		argv[out++] = argv[i];
	}
	argv[out] = NULL;
	if (quiet)
		pragma_log_set_level(PRAGMA_LOG_ERROR);
	else if (verbose)
		pragma_log_set_level(verbose > 1 ? PRAGMA_LOG_DEBUG : PRAGMA_LOG_INFO);
	return out;
}

static int wants_help(int argc, char **argv)
{
	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--"))
			break;
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h") || !strcmp(argv[i], "--version"))
			return 1;
	}
	return 0;
}

int main(int argc, char **argv)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	int i = 1;

	argc = take_log_flags(argc, argv);
	/* Children (the bridge, the harness, compilers, valgrind, exec
	 * models) run in their own process groups: stop them with us. */
	pragma_proc_install_signal_handlers();
	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--version")) {
			printf("pragma %s\n", PRAGMA_VERSION);
			return 0;
		} else {
			fprintf(stderr, "pragma: unknown option '%s'\n", argv[i]);
			usage(stderr);
			return 2;
		}
	}
	if (i >= argc) {
		usage(stderr);
		return 2;
	}
	for (size_t c = 0; c < sizeof(commands) / sizeof(commands[0]); c++) {
		if (strcmp(argv[i], commands[c].name))
			continue;
		/* Bad settings stop every command before it starts (doctor
		 * reports each instead; --help always works). */
		if (strcmp(argv[i], "doctor") && !wants_help(argc - i, argv + i) && pragma_settings_check(&err) < 0)
			return cli_error(&err);
		return commands[c].fn(argc - i, argv + i);
	}
	fprintf(stderr, "pragma: '%s' is not a pragma command\n", argv[i]);
	usage(stderr);
	return 2;
}
