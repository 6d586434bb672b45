#include <stdlib.h>
#include <string.h>

#include "cli.h"
#include "pragma/diagnose.h"
#include "pragma/knowledge.h"
#include "pragma/llm.h"

static void usage(FILE *f)
{
	fprintf(f,
		"usage: pragma knowledge <subcommand> [--dir DIR] [--json]\n"
		"\n"
		"The profiling compendium: what each metric means, how it is measured, its healthy\n"
		"range, what it reveals and what to do; and a playbook per bottleneck.\n"
		"\n"
		"  list                      every entry (metrics, playbooks, references)\n"
		"  show NAME                 one entry in full (a metric, a bottleneck, a reference)\n"
		"  search QUERY              full-text search, best matches first (--limit N, default 10)\n"
		"  prompt [--metrics a,b] [--bottlenecks x,y] [--max-bytes N]\n"
		"                            the compact form the Conductor's prompt gets\n"
		"  check                     hold the compendium to the metric registry and the diagnosis\n"
		"  build DOC... [--tool NAME] [--out FILE] [--chunk-bytes N] [--max-chunks N] [LLM flags]\n"
		"                            consolidate raw profiler documentation (text, Markdown, HTML)\n"
		"                            into reference entries: the LLM summarizes each chunk, then\n"
		"                            merges entries that describe the same metric\n"
		"\n"
		"  --dir DIR   the compendium directory (default: the knowledge/ pragma ships)\n\n%s",
		pragma_llm_options_help());
}

static const char *kind_name(enum pragma_kentry_kind k)
{
	return k == PRAGMA_KENTRY_METRIC ? "metric" : k == PRAGMA_KENTRY_PLAYBOOK ? "playbook" : "reference";
}

static json_t *entry_json(const struct pragma_kentry *e)
{
	json_t *o = json_pack("{s:s, s:s, s:s}", "kind", kind_name(e->kind), "name", e->name, "title", e->title);
	const char **lists[] = { e->reveals, e->remedies, e->sources, e->signs, e->pitfalls, e->metrics };
	const char *lnames[] = { "reveals", "remedies", "sources", "signs", "pitfalls", "metrics" };
	const char *fields[][2] = { { "unit", e->unit },       { "collector", e->collector }, { "tool", e->tool },
				    { "what", e->what },       { "how", e->how },	     { "formula", e->formula },
				    { "healthy", e->healthy }, { "caveats", e->caveats },    { "summary", e->summary },
				    { "maps_to", e->maps_to } };

	for (size_t i = 0; i < sizeof(fields) / sizeof(fields[0]); i++)
		if (*fields[i][1])
			json_object_set_new(o, fields[i][0], json_string(fields[i][1]));
	for (size_t i = 0; i < 6; i++) {
		json_t *a = json_array();
		for (int k = 0; lists[i][k]; k++)
			json_array_append_new(a, json_string(lists[i][k]));
		if (json_array_size(a))
			json_object_set_new(o, lnames[i], a);
		else
			json_decref(a);
	}
	return o;
}

static size_t split(const char *s, char *buf, size_t len, const char **out, size_t max)
{
	size_t n = 0;
	char *save = NULL;

	snprintf(buf, len, "%s", s ? s : "");
	for (char *t = strtok_r(buf, ", ", &save); t && n < max; t = strtok_r(NULL, ", ", &save))
		out[n++] = t;
	return n;
}

int cmd_knowledge(int argc, char **argv)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_knowledge *kb = NULL;
	struct pragma_llm_options lopt = PRAGMA_LLM_OPTIONS_INIT;
	const char *dir = NULL, *sub = NULL, *metrics = NULL, *bottlenecks = NULL, *tool = NULL, *outp = NULL;
	const char *pos[256];
	int n_pos = 0, json = 0, limit = 10, rc = 0, max_chunks = 0, llm_flags = 0;
	long max_bytes = 0, chunk_bytes = 0;

	if (cli_wants_help(argc, argv) || argc < 2) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	sub = argv[1];
	for (int i = 2; i < argc; i++) {
		const char *a = argv[i];
		int r;
		if (!strcmp(sub, "build") && (r = pragma_llm_options_flag(&lopt, argc, argv, &i, &err)) != 0) {
			if (r < 0)
				return cli_error(&err);
			llm_flags++;
			continue;
		}
		if (!strcmp(a, "--json")) {
			json = 1;
		} else if (i + 1 < argc && (!strcmp(a, "--dir") || !strcmp(a, "--metrics") || !strcmp(a, "--bottlenecks") ||
					    !strcmp(a, "--tool") || !strcmp(a, "--out"))) {
			const char *v = argv[++i];
			if (!strcmp(a, "--dir"))
				dir = v;
			else if (!strcmp(a, "--metrics"))
				metrics = v;
			else if (!strcmp(a, "--bottlenecks"))
				bottlenecks = v;
			else if (!strcmp(a, "--tool"))
				tool = v;
			else
				outp = v;
		} else if (i + 1 < argc && (!strcmp(a, "--limit") || !strcmp(a, "--max-bytes") ||
					    !strcmp(a, "--chunk-bytes") || !strcmp(a, "--max-chunks"))) {
			char *end;
			long v = strtol(argv[++i], &end, 10);
			/* 0 would quietly mean "the default" (or no results): refused. */
			if (*end || end == argv[i] || v < 1 || v > 100000000)
				return cli_usage_error("%s: '%s' is not a whole number from 1 to 100000000", a, argv[i]);
			if (!strcmp(a, "--limit"))
				limit = (int)v;
			else if (!strcmp(a, "--max-bytes"))
				max_bytes = v;
			else if (!strcmp(a, "--chunk-bytes"))
				chunk_bytes = v;
			else
				max_chunks = (int)v;
		} else if (a[0] == '-' && a[1]) {
			return cli_usage_error("knowledge: unknown option '%s' (see 'pragma knowledge --help')", a);
		} else if (n_pos < 256) {
			pos[n_pos++] = a;
		}
	}
	(void)llm_flags;
	if (pragma_knowledge_open(&kb, dir, &err) < 0)
		return json ? cli_error_json(&err) : cli_error(&err);

	if (!strcmp(sub, "list")) {
		json_t *a = json_array();
		for (size_t i = 0; i < pragma_knowledge_count(kb); i++) {
			const struct pragma_kentry *e = pragma_knowledge_at(kb, i);
			if (json)
				json_array_append_new(a, json_pack("{s:s, s:s, s:s}", "kind", kind_name(e->kind), "name",
								   e->name, "title", e->title));
			else
				printf("%-9s %-34s %s\n", kind_name(e->kind), e->name, e->title);
		}
		if (json)
			cli_print_json(json_pack("{s:s, s:o}", "status", "ok", "entries", a));
		else
			json_decref(a);
	} else if (!strcmp(sub, "show")) {
		const struct pragma_kentry *e = NULL;
		if (n_pos != 1) {
			rc = cli_usage_error("knowledge show needs one NAME");
			goto out;
		}
		for (int k = 0; k < 3 && !e; k++)
			e = pragma_knowledge_get(kb, (enum pragma_kentry_kind)k, pos[0]);
		if (!e) {
			pragma_err_set(&err, PRAGMA_E_INPUT, "no compendium entry named '%s'", pos[0]);
			pragma_err_hint(&err, "'pragma knowledge list' shows the names; 'pragma knowledge search' finds by words");
			rc = json ? cli_error_json(&err) : cli_error(&err);
			goto out;
		}
		if (json) {
			cli_print_json(json_pack("{s:s, s:o}", "status", "ok", "entry", entry_json(e)));
		} else {
			struct pragma_buf b = PRAGMA_BUF_INIT;
			pragma_knowledge_format(e, &b);
			fputs(b.data, stdout);
			pragma_buf_release(&b);
		}
	} else if (!strcmp(sub, "search")) {
		struct pragma_buf q = PRAGMA_BUF_INIT;
		struct pragma_khit *hits;
		size_t n = 0;
		if (!n_pos) {
			rc = cli_usage_error("knowledge search needs a QUERY");
			goto out;
		}
		for (int i = 0; i < n_pos; i++)
			pragma_buf_addf(&q, "%s%s", i ? " " : "", pos[i]);
		hits = calloc((size_t)limit + 1, sizeof(*hits));
		if (pragma_knowledge_search(kb, q.data, hits, (size_t)limit, &n, &err) < 0) {
			rc = json ? cli_error_json(&err) : cli_error(&err);
		} else if (json) {
			json_t *a = json_array();
			for (size_t i = 0; i < n; i++)
				json_array_append_new(a, json_pack("{s:s, s:s, s:s, s:s, s:f}", "kind",
								   kind_name(hits[i].entry->kind), "name", hits[i].entry->name,
								   "title", hits[i].entry->title, "snippet", hits[i].snippet,
								   "score", hits[i].score));
			cli_print_json(json_pack("{s:s, s:s, s:o}", "status", "ok", "query", q.data, "hits", a));
		} else if (!n) {
			printf("nothing matches '%s'\n", q.data);
		} else {
			for (size_t i = 0; i < n; i++)
				printf("%-9s %-32s %s\n          %s\n", kind_name(hits[i].entry->kind), hits[i].entry->name,
				       hits[i].entry->title, hits[i].snippet);
		}
		free(hits);
		pragma_buf_release(&q);
	} else if (!strcmp(sub, "prompt")) {
		char mb[2048], bb[1024];
		const char *m[128], *b[64];
		size_t nm = split(metrics, mb, sizeof(mb), m, 128), nb = split(bottlenecks, bb, sizeof(bb), b, 64);
		struct pragma_buf out = PRAGMA_BUF_INIT;
		for (size_t i = 0; i < nm; i++)
			if (!pragma_metric_find(m[i])) {
				rc = cli_usage_error("unknown metric '%s' ('pragma knowledge list' shows them)", m[i]);
				goto out;
			}
		pragma_knowledge_prompt(kb, m, nm, b, nb, (size_t)max_bytes, &out);
		if (json)
			cli_print_json(json_pack("{s:s, s:s}", "status", "ok", "prompt", out.data));
		else
			fputs(out.data, stdout);
		pragma_buf_release(&out);
	} else if (!strcmp(sub, "check")) {
		struct pragma_buf probs = PRAGMA_BUF_INIT;
		int bad = pragma_knowledge_check(kb, &probs);
		if (json)
			cli_print_json(json_pack("{s:s, s:i, s:i, s:s}", "status", bad ? "problems" : "ok", "entries",
						 (int)pragma_knowledge_count(kb), "problems", bad, "report", probs.data));
		else if (bad)
			fprintf(stderr, "%s%d problem%s in %s\n", probs.data, bad, bad == 1 ? "" : "s",
				pragma_knowledge_dir(kb));
		else
			printf("compendium ok: %zu entries in %s\n", pragma_knowledge_count(kb), pragma_knowledge_dir(kb));
		rc = bad ? 1 : 0;
		pragma_buf_release(&probs);
	} else if (!strcmp(sub, "build")) {
		struct pragma_llm *llm = NULL;
		struct pragma_kbuild_opts bo = { 0 };
		struct pragma_kbuild_stats st;
		if (!n_pos) {
			rc = cli_usage_error("knowledge build needs documentation files (DOC...)");
			goto out;
		}
		if (pragma_llm_open(&llm, &lopt, &err) < 0) {
			rc = json ? cli_error_json(&err) : cli_error(&err);
			goto out;
		}
		bo.docs = pos;
		bo.n_docs = (size_t)n_pos;
		bo.tool = tool;
		bo.chunk_bytes = (size_t)chunk_bytes;
		bo.llm = llm;
		bo.out_path = outp;
		bo.max_chunks = max_chunks;
		if (pragma_knowledge_build(kb, &bo, &st, &err) < 0) {
			rc = json ? cli_error_json(&err) : cli_error(&err);
		} else if (json) {
			cli_print_json(json_pack("{s:s, s:s, s:i, s:i, s:i, s:i, s:i, s:i, s:i}", "status", "ok", "out",
						 st.out_path, "chunks", (int)st.chunks, "summarized", (int)st.summarized,
						 "failed", (int)st.failed, "entries_raw", (int)st.entries_raw,
						 "entries", (int)st.entries_merged, "merged_by_llm", (int)st.merges_by_llm,
						 "skipped_curated", (int)st.skipped_curated));
		} else {
			printf("%zu chunks, %zu summarized, %zu failed; %zu entries -> %zu after merging (%zu merged by "
			       "the LLM, %zu left to curated entries)\nwritten to %s\n",
			       st.chunks, st.summarized, st.failed, st.entries_raw, st.entries_merged, st.merges_by_llm,
			       st.skipped_curated, st.out_path);
		}
		pragma_llm_free(llm);
	} else {
		rc = cli_usage_error("knowledge: unknown subcommand '%s' (list, show, search, prompt, check, build)", sub);
	}
out:
	pragma_knowledge_free(kb);
	return rc;
}
