#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pragma/log.h"

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
		   "Exit codes: 0 ok, 1 negative verdict, 2 usage or input error, 3 environment problem.\n");
}

int main(int argc, char **argv)
{
	int i = 1;

	for (; i < argc && argv[i][0] == '-'; i++) {
		if (!strcmp(argv[i], "-v"))
			pragma_log_set_level(pragma_log_get_level() < PRAGMA_LOG_INFO ? PRAGMA_LOG_INFO : PRAGMA_LOG_DEBUG);
		else if (!strcmp(argv[i], "-q"))
			pragma_log_set_level(PRAGMA_LOG_ERROR);
		else if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
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
	for (size_t c = 0; c < sizeof(commands) / sizeof(commands[0]); c++)
		if (!strcmp(argv[i], commands[c].name))
			return commands[c].fn(argc - i, argv + i);
	fprintf(stderr, "pragma: '%s' is not a pragma command\n", argv[i]);
	usage(stderr);
	return 2;
}
