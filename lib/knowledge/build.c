/*
 * `pragma knowledge build`: the paper's two-stage consolidation of raw
 * profiler documentation into compendium entries.
 *   stage 1  split the documents into chunks; the LLM summarizes each into
 *            entries of one schema (REFERENCE in knowledge.h);
 *   stage 2  entries with the same name from different chunks are merged
 *            (by the LLM, falling back to a union of their fields); names
 *            the curated entries already cover are left to them.
 */
#include <ctype.h>
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "knowledge/knowledge_int.h"
#include "pragma/fs.h"
#include "pragma/llm.h"
#include "pragma/log.h"

/* ---- chunking ---- */

static int heading_at(const char *s)
{
	/* Markdown "# ", a man-page section (an all-caps line), or an HTML heading
	 * already turned into "# " by strip_html. */
	if (*s == '#')
		return 1;
	int caps = 0, len = 0;
	for (const char *t = s; *t && *t != '\n'; t++, len++) {
		if (islower((unsigned char)*t))
			return 0;
		caps += isupper((unsigned char)*t) != 0;
	}
	return caps >= 3 && len < 60;
}

int pragma_knowledge_chunk(const char *text, size_t chunk_bytes, char ***chunks, size_t *n)
{
	struct pragma_buf cur = PRAGMA_BUF_INIT;
	const char *s = text;

	*chunks = NULL;
	*n = 0;
	if (!chunk_bytes)
		chunk_bytes = 6000;
	while (*s) {
		/* one paragraph: up to a blank line */
		const char *e = strstr(s, "\n\n");
		size_t len = e ? (size_t)(e - s) + 2 : strlen(s);
		int head = heading_at(s);

		if (cur.len && (cur.len + len > chunk_bytes || (head && cur.len > chunk_bytes / 4))) {
			*chunks = realloc(*chunks, (*n + 1) * sizeof(**chunks));
			(*chunks)[(*n)++] = pragma_buf_detach(&cur, NULL);
		}
		/* A paragraph longer than a chunk is cut at line ends. */
		while (len > chunk_bytes) {
			size_t cut = chunk_bytes;
			while (cut > chunk_bytes / 2 && s[cut] != '\n')
				cut--;
			pragma_buf_add(&cur, s, cut);
			*chunks = realloc(*chunks, (*n + 1) * sizeof(**chunks));
			(*chunks)[(*n)++] = pragma_buf_detach(&cur, NULL);
			s += cut;
			len -= cut;
		}
		pragma_buf_add(&cur, s, len);
		s += len;
	}
	pragma_buf_rtrim(&cur);
	if (cur.len) {
		*chunks = realloc(*chunks, (*n + 1) * sizeof(**chunks));
		(*chunks)[(*n)++] = pragma_buf_detach(&cur, NULL);
	}
	pragma_buf_release(&cur);
	return 0;
}

void pragma_knowledge_chunks_free(char **chunks, size_t n)
{
	for (size_t i = 0; i < n; i++)
		free(chunks[i]);
	free(chunks);
}

/* Crawled pages are HTML: keep the text, headings as "# ". */
static void strip_html(struct pragma_buf *b)
{
	struct pragma_buf out = PRAGMA_BUF_INIT;
	const char *s = b->data;

	if (!strstr(s, "<html") && !strstr(s, "<HTML") && !strstr(s, "<body") && !strstr(s, "<p>"))
		return;
	while (*s) {
		if (*s == '<') {
			if (!strncasecmp(s, "<script", 7) || !strncasecmp(s, "<style", 6)) {
				const char *end = strncasecmp(s, "<script", 7) ? strcasestr(s, "</style>")
									     : strcasestr(s, "</script>");
				s = end ? strchr(end, '>') + 1 : s + strlen(s);
				continue;
			}
			if ((s[1] == 'h' || s[1] == 'H') && isdigit((unsigned char)s[2]))
				pragma_buf_adds(&out, "\n\n# ");
			else if (!strncasecmp(s, "<p", 2) || !strncasecmp(s, "<br", 3) || !strncasecmp(s, "<li", 3) ||
				 !strncasecmp(s, "<tr", 3) || !strncasecmp(s, "</h", 3) || !strncasecmp(s, "<div", 4))
				pragma_buf_adds(&out, "\n");
			const char *gt = strchr(s, '>');
			s = gt ? gt + 1 : s + strlen(s);
			continue;
		}
		if (*s == '&') {
			static const struct {
				const char *ent, *ch;
			} ents[] = { { "&amp;", "&" }, { "&lt;", "<" }, { "&gt;", ">" }, { "&quot;", "\"" },
				     { "&#39;", "'" }, { "&nbsp;", " " }, { NULL, NULL } };
			int done = 0;
			for (int i = 0; ents[i].ent && !done; i++)
				if (!strncmp(s, ents[i].ent, strlen(ents[i].ent))) {
					pragma_buf_adds(&out, ents[i].ch);
					s += strlen(ents[i].ent);
					done = 1;
				}
			if (done)
				continue;
		}
		pragma_buf_addch(&out, *s++);
	}
	pragma_buf_release(b);
	*b = out;
}

/* ---- prompts ---- */

static char *summarize_prompt;

static void make_summarize_prompt(void)
{
	{
		struct pragma_buf b = PRAGMA_BUF_INIT;
		size_t nd, nb;
		const struct pragma_metric_def *d = pragma_metric_defs(&nd);
		const char *const *bn = pragma_bottleneck_names(&nb);

		pragma_buf_adds(&b,
			"You consolidate profiler documentation into a compendium that a performance engineer "
			"(an LLM) reads while optimizing C kernels on CPUs and CUDA kernels on GPUs.\n"
			"From the documentation excerpt the user sends, extract every performance metric, counter "
			"or event it defines that helps diagnose a kernel. Use only facts stated in the excerpt; "
			"never invent numbers or remedies.\n"
			"For each one, write a JSON object with these keys:\n"
			"  name      the tool's own name for it (exactly as written)\n"
			"  title     a few words\n"
			"  what      what it measures, one or two sentences\n"
			"  how       how the tool measures or derives it\n"
			"  formula   the formula if the excerpt gives one, else \"\"\n"
			"  healthy   a healthy range if the excerpt gives one, else \"\"\n"
			"  reveals   bottlenecks it can reveal, from this list only: ");
		for (size_t i = 0; i < nb; i++)
			pragma_buf_addf(&b, "%s%s", i ? ", " : "", bn[i]);
		pragma_buf_adds(&b, "\n"
			"  remedies  concrete changes to kernel code that improve it, if the excerpt supports any\n"
			"  maps_to   the pragma metric that is the same quantity, or \"\"; pragma's metrics: ");
		for (size_t i = 0; i < nd; i++)
			pragma_buf_addf(&b, "%s%s", i ? ", " : "", d[i].name);
		pragma_buf_adds(&b, "\n"
			"Answer with one JSON array of these objects in a ```json block, and nothing else. "
			"If the excerpt defines no metric, answer with an empty array.\n");
		summarize_prompt = pragma_buf_detach(&b, NULL);
	}
}

const char *pragma_knowledge_summarize_prompt(void)
{
	static pthread_once_t once = PTHREAD_ONCE_INIT;

	pthread_once(&once, make_summarize_prompt);
	return summarize_prompt;
}

const char *pragma_knowledge_merge_prompt(void)
{
	return "The JSON objects the user sends describe the same profiler metric, each summarized from a "
	       "different part of the documentation. Merge them into one object with the same keys (name, "
	       "title, what, how, formula, healthy, reveals, remedies, maps_to): keep every distinct fact, "
	       "drop repetition, keep the lists short and concrete, add nothing that is not in them. Answer "
	       "with the one JSON object in a ```json block, and nothing else.\n";
}

/* ---- parsing replies ---- */

/* The JSON in a reply: a ```json block, else the first [ or { onwards. */
static json_t *reply_json(const char *text)
{
	const char *s = strstr(text, "```json"), *start = NULL;
	json_error_t e;

	if (s)
		start = s + 7;
	else if ((s = strstr(text, "```")))
		start = s + 3;
	else
		start = text;
	while (*start && *start != '[' && *start != '{')
		start++;
	if (!*start)
		return NULL;
	return json_loads(start, JSON_DISABLE_EOF_CHECK, &e);
}

static const char *const str_keys[] = { "name", "title", "what", "how", "formula", "healthy", "maps_to", NULL };
static const char *const list_keys[] = { "reveals", "remedies", "sources", NULL };

/* Keep the schema's keys with the right types; NULL if it has no name or
 * no description. */
static json_t *clean_entry(json_t *in, const char *tool, const char *source)
{
	json_t *o = json_object();
	size_t nb;
	const char *const *bn = pragma_bottleneck_names(&nb);

	if (!json_is_object(in) || !json_string_value(json_object_get(in, "name")) ||
	    !*json_string_value(json_object_get(in, "name")) || !json_string_value(json_object_get(in, "what"))) {
		json_decref(o);
		return NULL;
	}
	for (int i = 0; str_keys[i]; i++) {
		const char *v = json_string_value(json_object_get(in, str_keys[i]));
		json_object_set_new(o, str_keys[i], json_string(v ? v : ""));
	}
	for (int i = 0; list_keys[i]; i++) {
		json_t *a = json_array(), *v;
		size_t k;
		json_array_foreach(json_object_get(in, list_keys[i]), k, v) {
			const char *s = json_string_value(v);
			int ok = s && *s;
			if (ok && !strcmp(list_keys[i], "reveals")) {
				ok = 0;
				for (size_t b = 0; b < nb; b++)
					ok |= !strcmp(bn[b], s);
			}
			if (ok)
				json_array_append_new(a, json_string(s));
		}
		json_object_set_new(o, list_keys[i], a);
	}
	const char *m = json_string_value(json_object_get(o, "maps_to"));
	if (m && *m && !pragma_metric_find(m))
		json_object_set_new(o, "maps_to", json_string(""));
	if (!json_array_size(json_object_get(o, "sources")) && source)
		json_array_append_new(json_object_get(o, "sources"), json_string(source));
	json_object_set_new(o, "tool", json_string(tool));
	return o;
}

/* Deterministic merge: the first entry, longer texts, union of lists. */
static json_t *union_merge(json_t *group)
{
	json_t *out = json_deep_copy(json_array_get(group, 0)), *e;
	size_t i;

	json_array_foreach(group, i, e) {
		if (!i)
			continue;
		for (int k = 0; str_keys[k]; k++) {
			const char *a = json_string_value(json_object_get(out, str_keys[k]));
			const char *b = json_string_value(json_object_get(e, str_keys[k]));
			if (b && (!a || strlen(b) > strlen(a)))
				json_object_set_new(out, str_keys[k], json_string(b));
		}
		for (int k = 0; list_keys[k]; k++) {
			json_t *dst = json_object_get(out, list_keys[k]), *v;
			size_t j;
			json_array_foreach(json_object_get(e, list_keys[k]), j, v) {
				int dup = 0;
				json_t *w;
				size_t x;
				json_array_foreach(dst, x, w)
					dup |= json_equal(w, v);
				if (!dup)
					json_array_append(dst, v);
			}
		}
	}
	return out;
}

static void norm_name(const char *in, char *out, size_t len)
{
	size_t k = 0;

	for (; *in && k + 1 < len; in++)
		if (isalnum((unsigned char)*in))
			out[k++] = (char)tolower((unsigned char)*in);
	out[k] = 0;
}

int pragma_knowledge_build(const struct pragma_knowledge *kb, const struct pragma_kbuild_opts *o,
			   struct pragma_kbuild_stats *st, struct pragma_err *err)
{
	char **chunks = NULL;
	size_t n_chunks = 0;
	char **chunk_src = NULL;
	json_t *entries = json_array(), *groups = json_object(), *merged = json_array(), *doc = NULL;
	struct pragma_llm_job *jobs = NULL;
	struct pragma_llm_request *reqs = NULL;
	struct pragma_llm_msg (*msgs)[2] = NULL;
	char **users = NULL;
	char tool[64] = "";
	int ret = -1;

	memset(st, 0, sizeof(*st));
	if (!o->n_docs)
		return pragma_err_set(err, PRAGMA_E_INPUT, "knowledge build needs documentation files");
	if (o->tool)
		snprintf(tool, sizeof(tool), "%s", o->tool);
	for (size_t d = 0; d < o->n_docs; d++) {
		struct pragma_buf text = PRAGMA_BUF_INIT, stem = PRAGMA_BUF_INIT;
		char **c;
		size_t nc;

		if (pragma_read_file(o->docs[d], &text, 32 << 20, err) < 0)
			goto out;
		if (!tool[0]) {
			pragma_path_stem(o->docs[d], &stem);
			snprintf(tool, sizeof(tool), "%s", stem.data);
		}
		strip_html(&text);
		pragma_knowledge_chunk(text.data, o->chunk_bytes, &c, &nc);
		chunks = realloc(chunks, (n_chunks + nc + 1) * sizeof(*chunks));
		chunk_src = realloc(chunk_src, (n_chunks + nc + 1) * sizeof(*chunk_src));
		for (size_t i = 0; i < nc; i++) {
			chunks[n_chunks] = c[i];
			chunk_src[n_chunks++] = (char *)o->docs[d];
		}
		free(c);
		pragma_buf_release(&text);
		pragma_buf_release(&stem);
	}
	if (o->max_chunks > 0 && n_chunks > (size_t)o->max_chunks) {
		for (size_t i = (size_t)o->max_chunks; i < n_chunks; i++)
			free(chunks[i]);
		n_chunks = (size_t)o->max_chunks;
	}
	st->chunks = n_chunks;

	/* Stage 1: summarize every chunk (several at once). */
	jobs = calloc(n_chunks + 1, sizeof(*jobs));
	reqs = calloc(n_chunks + 1, sizeof(*reqs));
	msgs = calloc(n_chunks + 1, sizeof(*msgs));
	users = calloc(n_chunks + 1, sizeof(*users));
	for (size_t i = 0; i < n_chunks; i++) {
		if (asprintf(&users[i], "Tool: %s\nSource: %s (part %zu of %zu)\n\n%s", tool, chunk_src[i], i + 1, n_chunks,
			     chunks[i]) < 0)
			abort();
		msgs[i][0] = (struct pragma_llm_msg){ "system", pragma_knowledge_summarize_prompt() };
		msgs[i][1] = (struct pragma_llm_msg){ "user", users[i] };
		reqs[i] = (struct pragma_llm_request)PRAGMA_LLM_REQUEST_INIT;
		reqs[i].agent = "summarizer";
		reqs[i].attempt = (int)i + 1;
		reqs[i].msgs = msgs[i];
		reqs[i].n_msgs = 2;
		jobs[i].req = &reqs[i];
		pragma_llm_reply_init(&jobs[i].reply);
	}
	pragma_llm_send_many(o->llm, jobs, n_chunks, 4);
	for (size_t i = 0; i < n_chunks; i++) {
		json_t *arr = jobs[i].rc == 0 ? reply_json(jobs[i].reply.text.data) : NULL, *v;
		size_t k;
		if (jobs[i].rc == PRAGMA_LLM_STOP) {
			pragma_warn("knowledge build: %s", jobs[i].err.msg);
		}
		if (json_is_object(arr)) {
			json_t *a = json_array();
			json_array_append_new(a, arr);
			arr = a;
		}
		if (!json_is_array(arr)) {
			st->failed++;
			pragma_warn("knowledge build: chunk %zu of %s: %s", i + 1, chunk_src[i],
				    jobs[i].rc ? jobs[i].err.msg : "the reply holds no JSON array");
			json_decref(arr);
			continue;
		}
		st->summarized++;
		json_array_foreach(arr, k, v) {
			json_t *e = clean_entry(v, tool, chunk_src[i]);
			if (e) {
				json_array_append_new(entries, e);
				st->entries_raw++;
			}
		}
		json_decref(arr);
	}

	/* Stage 2: group by name, merge groups. */
	{
		json_t *e;
		size_t i;
		json_array_foreach(entries, i, e) {
			char key[128];
			norm_name(json_string_value(json_object_get(e, "name")), key, sizeof(key));
			json_t *g = json_object_get(groups, key);
			if (!g) {
				g = json_array();
				json_object_set_new(groups, key, g);
			}
			json_array_append(g, e);
		}
	}
	{
		const char *key;
		json_t *g;
		json_object_foreach(groups, key, g) {
			json_t *one = NULL;
			const char *name = json_string_value(json_object_get(json_array_get(g, 0), "name"));
			if (kb && (pragma_knowledge_get(kb, PRAGMA_KENTRY_METRIC, name) ||
				   pragma_knowledge_get(kb, PRAGMA_KENTRY_PLAYBOOK, name))) {
				st->skipped_curated++;
				continue;
			}
			if (json_array_size(g) > 1) {
				char *body = json_dumps(g, JSON_INDENT(1));
				struct pragma_llm_msg m[2] = { { "system", pragma_knowledge_merge_prompt() }, { "user", body } };
				struct pragma_llm_request r = PRAGMA_LLM_REQUEST_INIT;
				struct pragma_llm_reply rep = PRAGMA_LLM_REPLY_INIT;
				struct pragma_err e = PRAGMA_ERR_INIT;
				r.agent = "summarizer";
				r.msgs = m;
				r.n_msgs = 2;
				if (pragma_llm_send(o->llm, &r, &rep, &e) == 0) {
					json_t *j = reply_json(rep.text.data);
					if (json_is_array(j) && json_array_size(j) == 1) {
						json_t *x = json_incref(json_array_get(j, 0));
						json_decref(j);
						j = x;
					}
					one = clean_entry(j, tool, NULL);
					json_decref(j);
					if (one) {
						/* sources: the union, whatever the model kept */
						json_t *u = union_merge(g);
						json_object_set(one, "sources", json_object_get(u, "sources"));
						json_object_set_new(one, "name", json_string(name));
						json_decref(u);
						st->merges_by_llm++;
					}
				}
				pragma_llm_reply_release(&rep);
				free(body);
			}
			if (!one)
				one = union_merge(g);
			json_array_append_new(merged, one);
		}
	}
	st->entries_merged = json_array_size(merged);

	{
		struct pragma_buf path = PRAGMA_BUF_INIT, dir = PRAGMA_BUF_INIT;
		if (o->out_path) {
			const char *slash = strrchr(o->out_path, '/');
			pragma_buf_adds(&path, o->out_path);
			if (slash && slash != o->out_path) {
				pragma_buf_add(&dir, o->out_path, (size_t)(slash - o->out_path));
				if (pragma_mkdir_p(dir.data, 0755, err) < 0) {
					pragma_buf_release(&dir);
					pragma_buf_release(&path);
					goto out;
				}
			}
		} else {
			pragma_buf_addf(&dir, "%s/reference", kb ? pragma_knowledge_dir(kb) : ".");
			if (pragma_mkdir_p(dir.data, 0755, err) < 0) {
				pragma_buf_release(&dir);
				goto out;
			}
			pragma_buf_addf(&path, "%s/%s.json", dir.data, tool);
		}
		doc = json_pack("{s:s, s:s, s:i, s:o}", "generated_by", "pragma knowledge build", "tool", tool, "chunks",
				(int)n_chunks, "entries", json_incref(merged));
		char *text = json_dumps(doc, JSON_INDENT(2) | JSON_PRESERVE_ORDER);
		int rc = pragma_write_file_atomic(path.data, text, strlen(text), err);
		free(text);
		snprintf(st->out_path, sizeof(st->out_path), "%s", path.data);
		pragma_buf_release(&path);
		pragma_buf_release(&dir);
		if (rc < 0)
			goto out;
	}
	if (!st->summarized && n_chunks) {
		pragma_err_set(err, PRAGMA_E_ENV, "no chunk was summarized (%zu failed)", st->failed);
		goto out;
	}
	ret = 0;
out:
	for (size_t i = 0; i < n_chunks; i++) {
		if (jobs)
			pragma_llm_reply_release(&jobs[i].reply);
		if (users)
			free(users[i]);
	}
	pragma_knowledge_chunks_free(chunks, n_chunks);
	free(chunk_src);
	free(jobs);
	free(reqs);
	free(msgs);
	free(users);
	json_decref(entries);
	json_decref(groups);
	json_decref(merged);
	json_decref(doc);
	return ret;
}
