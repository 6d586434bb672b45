/* pragma machine: what the CPU can do, and its measured peaks. */
#include <inttypes.h>
#include <string.h>

#include "cli.h"
#include "pragma/buf.h"
#include "pragma/fs.h"
#include "pragma/machine.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: pragma machine [--json] [--measure]\n"
		"\n"
		"Show the CPU, its caches, its micro-architecture (decoded from a table with\n"
		"sources) and its measured peak FP32 FLOP/s and memory bandwidth: the\n"
		"roofline pragma judges kernels against. Two bandwidth figures: the roof,\n"
		"what streaming kernels reach when timed like candidates (cold cache,\n"
		"pragma-harness), which %% of roof and the prompts use; and the highest\n"
		"bandwidth ever measured, which only the impossible-speed check uses. The\n"
		"peaks are measured once (some seconds, all usable cores) and cached in\n"
		"<cache dir>/machine.json until the CPU, core count or kernel changes.\n"
		"\n"
		"  --json     print the machine record as JSON\n"
		"  --measure  measure again and rewrite the cache (after a noisy first run)\n"
		"  -h, --help this text\n"
		"\n"
		"Environment: PRAGMA_CACHE_DIR (default $XDG_CACHE_HOME/pragma or ~/.cache/pragma).\n");
}

static const char *human_size(uint64_t b, char *buf, size_t len)
{
	if (b >= (1ull << 30) && b % (1ull << 30) == 0)
		snprintf(buf, len, "%" PRIu64 " GiB", b >> 30);
	else if (b >= (1ull << 20) && b % (1ull << 20) == 0)
		snprintf(buf, len, "%" PRIu64 " MiB", b >> 20);
	else if (b >= (1ull << 20))
		snprintf(buf, len, "%.1f MiB", (double)b / (1 << 20));
	else if (b >= 1024)
		snprintf(buf, len, "%" PRIu64 " KiB", b >> 10);
	else
		snprintf(buf, len, "%" PRIu64 " B", b);
	return buf;
}

static void print_table(const struct pragma_machine *m, const char *cache_path)
{
	char sz[32];

	printf("CPU          %s (%s, family %d model %d stepping %d)\n", m->cpu_model, m->vendor, m->family,
	       m->model, m->stepping);
	printf("Cores        %d usable of %d online%s\n", m->cores, m->online_cpus,
	       m->hypervisor ? ", virtual machine (hypervisor flag)" : "");
	printf("Kernel       %s\n", m->kernel);
	printf("ISA          %s\n", m->isa[0] ? m->isa : "(none recognized)");
	if (!m->n_caches)
		printf("Caches       unknown (no /sys/devices/system/cpu/cpu0/cache)\n");
	for (int i = 0; i < m->n_caches; i++) {
		const struct pragma_cache_level *c = &m->caches[i];
		char name[16], ways[16], shared[32];

		snprintf(name, sizeof(name), "L%d%s", c->level,
			 !strcmp(c->type, "Data") ? "d" : !strcmp(c->type, "Instruction") ? "i" : "");
		if (c->ways)
			snprintf(ways, sizeof(ways), "%d-way", c->ways);
		else
			snprintf(ways, sizeof(ways), "?-way");
		if (c->shared_cpus > 1)
			snprintf(shared, sizeof(shared), "shared by %d CPUs", c->shared_cpus);
		else
			snprintf(shared, sizeof(shared), "per CPU");
		printf("%-12s %-4s %9s  %6s  %3d B lines  %s\n", i ? "" : "Caches", name,
		       human_size(c->size, sz, sizeof(sz)), ways, c->line, shared);
	}
	{
		struct pragma_buf u = PRAGMA_BUF_INIT;
		char *line, *save = NULL;
		int first = 1;

		/* The uarch lines, as prompts get them, under one label. */
		pragma_machine_uarch_text(m, &u);
		for (line = strtok_r(u.data, "\n", &save); line; line = strtok_r(NULL, "\n", &save), first = 0)
			printf("%-12s %s\n", first ? "Core" : "", line + 2);
		pragma_buf_release(&u);
	}
	if (!m->measured) {
		printf("Peaks        not measured\n");
	} else {
		printf("Peak FP32    %.1f GFLOP/s on %d core%s (%s FMA; %.1f GFLOP/s on 1 core)\n", m->peak_gflops,
		       m->cores, m->cores == 1 ? "" : "s", m->peak_isa, m->peak_gflops_1core);
		printf("             12 independent FMA chains per core, best of many short runs\n");
		if (m->roof_gbs > 0) {
			printf("Roof         %.1f GB/s memory bandwidth: the roof for %% of roof and the prompts, the best\n"
			       "             streaming kernel (%s) under the timing protocol kernels are judged by\n",
			       m->roof_gbs, m->roof_method);
			for (int i = 0; i < m->n_roofs; i++)
				printf("             %-7s %6.1f GB/s  median %.3f ms (min %.3f) for %.0f MB: %s\n", m->roofs[i].name,
				       m->roofs[i].gbs, m->roofs[i].median_ms, m->roofs[i].min_ms, m->roofs[i].bytes / 1e6,
				       m->roofs[i].what);
			printf("             how: %s\n", m->roof_protocol);
			printf("             bytes: inputs read once + outputs written once (like a task's minimal bytes);\n"
			       "             the write-allocate read of ordinary stores is real traffic but not counted\n");
		} else {
			printf("Roof         not measured under the timing protocol: %s\n"
			       "             (%% of roof falls back to the peak below; 'pragma machine --measure' retries)\n",
			       m->roof_why[0] ? m->roof_why : "unknown reason");
		}
		printf("Peak memory  %.1f GB/s: the highest bandwidth ever measured here, for the impossible-speed\n"
		       "             check only (%s)\n", m->peak_gbs, m->peak_gbs_how[0] ? m->peak_gbs_how : "microbenchmarks");
		printf("             microbenchmarks: read %.1f, triad %.1f, non-temporal copy %.1f GB/s (all cores,\n"
		       "             short windows of arrays >= 4x the last-level cache, best of many runs, warm threads,\n"
		       "             no cache flush)\n", m->bw_read_gbs, m->bw_triad_gbs, m->bw_ntcopy_gbs);
		printf("Measured     %s\n", m->measured_at);
	}
	if (cache_path)
		printf("Cache file   %s ('pragma machine --measure' measures again)\n", cache_path);
}

int cmd_machine(int argc, char **argv)
{
	struct pragma_err err = PRAGMA_ERR_INIT, cerr = PRAGMA_ERR_INIT;
	struct pragma_buf cache = PRAGMA_BUF_INIT;
	struct pragma_machine m;
	int json = 0, measure = 0, rc = 0;

	for (int i = 1; i < argc; i++) {
		if (!strcmp(argv[i], "--help") || !strcmp(argv[i], "-h")) {
			usage(stdout);
			return 0;
		} else if (!strcmp(argv[i], "--json")) {
			json = 1;
		} else if (!strcmp(argv[i], "--measure")) {
			measure = 1;
		} else {
			return cli_usage_error("machine: unknown option '%s' (see 'pragma machine --help')", argv[i]);
		}
	}

	if (pragma_machine_load(&m, measure, &err) < 0) {
		rc = json ? cli_error_json(&err) : cli_error(&err);
		goto out;
	}
	if (pragma_cache_dir(&cache, &cerr) == 0)
		pragma_buf_adds(&cache, "/machine.json");
	if (json) {
		json_t *o = pragma_machine_json(&m);

		json_object_set_new(o, "cache_file", cache.len ? json_string(cache.data) : json_null());
		cli_print_json(o);
	} else {
		print_table(&m, cache.len ? cache.data : NULL);
	}
out:
	pragma_buf_release(&cache);
	return rc;
}
