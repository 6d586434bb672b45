/*
 * replay:FILE and recordings. A recording is JSON Lines, one answered call
 * per line (see pragma_llm_record_append). Requests differ in their numbers
 * from run to run, so replies are matched by agent role and order: the n-th
 * request of the coder gets the n-th recorded coder reply. When the run asks
 * for more than the recording holds, send() stops (PRAGMA_LLM_STOP) rather
 * than guess.
 */
#include <errno.h>
#include <fcntl.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "llm_int.h"
#include "pragma/fs.h"

#define REPLAY_FILE_CAP ((size_t)256 << 20)

static char *dup_or_null(const char *s)
{
	char *p;

	if (!s)
		return NULL;
	p = strdup(s);
	if (!p)
		abort();
	return p;
}

static uint64_t u64_of(json_t *v)
{
	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

void llm_replay_free(struct pragma_llm *c)
{
	for (size_t i = 0; i < c->n_replay; i++) {
		struct llm_replay_entry *e = &c->replay[i];
		free(e->agent);
		free(e->model);
		free(e->provider);
		free(e->text);
		free(e->reasoning);
	}
	free(c->replay);
	c->replay = NULL;
	c->n_replay = 0;
}

int llm_replay_load(struct pragma_llm *c, struct pragma_err *err)
{
	struct pragma_buf text = PRAGMA_BUF_INIT;
	size_t alloc = 0;
	int lineno = 0, ret = -1;
	char *p, *save = NULL;

	if (pragma_read_file(c->replay_path, &text, REPLAY_FILE_CAP, err) < 0) {
		pragma_err_hint(err, "replay:FILE names a recording made with --record FILE (or exported by the store)");
		goto out;
	}
	/* strtok_r would skip empty lines and lose the line numbers. */
	for (p = text.data; p && *p; p = save) {
		char *nl = strchr(p, '\n');
		json_error_t jerr;
		json_t *o, *u;
		const char *agent, *txt;

		save = nl ? nl + 1 : NULL;
		if (nl)
			*nl = '\0';
		lineno++;
		while (*p == ' ' || *p == '\t' || *p == '\r')
			p++;
		if (!*p)
			continue;
		o = json_loads(p, 0, &jerr);
		if (!json_is_object(o)) {
			pragma_err_set(err, PRAGMA_E_INPUT, "%s:%d: not a JSON object (%s)", c->replay_path, lineno,
				       jerr.text);
			json_decref(o);
			goto out;
		}
		agent = json_string_value(json_object_get(o, "agent"));
		if (!agent)
			agent = json_string_value(json_object_get(o, "role"));
		txt = json_string_value(json_object_get(o, "text"));
		if (!agent || !txt) {
			pragma_err_set(err, PRAGMA_E_INPUT, "%s:%d: a recorded call needs \"agent\" and \"text\"",
				       c->replay_path, lineno);
			json_decref(o);
			goto out;
		}
		if (c->n_replay == alloc) {
			alloc = alloc ? alloc * 2 : 16;
			c->replay = realloc(c->replay, alloc * sizeof(*c->replay));
			if (!c->replay)
				abort();
		}
		struct llm_replay_entry *e = &c->replay[c->n_replay++];
		memset(e, 0, sizeof(*e));
		e->agent = dup_or_null(agent);
		e->text = dup_or_null(txt);
		e->model = dup_or_null(json_string_value(json_object_get(o, "model")));
		e->provider = dup_or_null(json_string_value(json_object_get(o, "provider")));
		e->reasoning = dup_or_null(json_string_value(json_object_get(o, "reasoning")));
		snprintf(e->finish_reason, sizeof(e->finish_reason), "%s",
			 json_string_value(json_object_get(o, "finish_reason")) ?
				 json_string_value(json_object_get(o, "finish_reason")) : "stop");
		u = json_object_get(o, "usage");
		e->prompt_tokens = u64_of(json_object_get(u, "prompt_tokens"));
		e->completion_tokens = u64_of(json_object_get(u, "completion_tokens"));
		e->reasoning_tokens = u64_of(json_object_get(u, "reasoning_tokens"));
		e->estimated = json_is_true(json_object_get(u, "estimated"));
		e->cost = json_number_value(json_object_get(o, "cost"));
		json_decref(o);
	}
	if (!c->n_replay) {
		pragma_err_set(err, PRAGMA_E_INPUT, "%s holds no recorded calls", c->replay_path);
		goto out;
	}
	ret = 0;
out:
	pragma_buf_release(&text);
	return ret;
}

int llm_replay_next(struct pragma_llm *c, const struct pragma_llm_request *req, struct pragma_llm_reply *rep,
		    struct pragma_err *err)
{
	size_t have = 0;

	for (size_t i = 0; i < c->n_replay; i++) {
		struct llm_replay_entry *e = &c->replay[i];
		if (strcmp(e->agent, req->agent))
			continue;
		have++;
		if (e->used)
			continue;
		e->used = 1;
		pragma_buf_adds(&rep->text, e->text);
		if (e->reasoning)
			pragma_buf_adds(&rep->reasoning, e->reasoning);
		snprintf(rep->finish_reason, sizeof(rep->finish_reason), "%s", e->finish_reason);
		rep->truncated = !strcmp(e->finish_reason, "length");
		if (e->model)
			snprintf(rep->model, sizeof(rep->model), "%s", e->model);
		rep->prompt_tokens = e->prompt_tokens;
		rep->completion_tokens = e->completion_tokens;
		rep->reasoning_tokens = e->reasoning_tokens;
		rep->estimated = e->estimated;
		rep->cost = e->cost;
		rep->cost_known = 1;
		return 0;
	}
	rep->fail = PRAGMA_LLM_FAIL_REPLAY_END;
	pragma_err_set(err, PRAGMA_E_NEGATIVE, "replay %s has %zu recorded repl%s for agent '%s' and the run asked for "
		       "one more", c->replay_path, have, have == 1 ? "y" : "ies", req->agent);
	pragma_err_hint(err, "the run went further than the recorded session: record a longer one, or lower the "
			"run's attempts to match");
	return PRAGMA_LLM_STOP;
}

int pragma_llm_record_append(const char *path, const char *agent, int attempt, const struct pragma_llm_reply *rep,
			     struct pragma_err *err)
{
	json_t *o = json_object(), *u = json_object();
	char *line;
	size_t len, off = 0;
	int fd, ret = -1;

	json_object_set_new(o, "v", json_integer(1));
	json_object_set_new(o, "agent", json_string(agent ? agent : "default"));
	json_object_set_new(o, "attempt", json_integer(attempt));
	json_object_set_new(o, "provider", json_string(rep->provider));
	json_object_set_new(o, "model", json_string(rep->model));
	json_object_set_new(o, "request_hash", json_string(rep->request_hash));
	json_object_set_new(o, "text", json_stringn(rep->text.data, rep->text.len));
	if (rep->reasoning.len)
		json_object_set_new(o, "reasoning", json_stringn(rep->reasoning.data, rep->reasoning.len));
	json_object_set_new(o, "finish_reason", json_string(rep->finish_reason));
	json_object_set_new(u, "prompt_tokens", json_integer((json_int_t)rep->prompt_tokens));
	json_object_set_new(u, "completion_tokens", json_integer((json_int_t)rep->completion_tokens));
	json_object_set_new(u, "reasoning_tokens", json_integer((json_int_t)rep->reasoning_tokens));
	json_object_set_new(u, "estimated", json_boolean(rep->estimated));
	json_object_set_new(o, "usage", u);
	json_object_set_new(o, "cost", json_real(rep->cost));
	json_object_set_new(o, "cached", json_boolean(rep->cached));
	json_object_set_new(o, "latency_ms", json_real(rep->latency_ms));
	line = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (!line)
		return pragma_err_set(err, PRAGMA_E_INTERNAL, "cannot encode a recorded call (invalid UTF-8?)");
	len = strlen(line);
	line[len++] = '\n'; /* replaces the NUL; json_dumps left room for it */
	fd = open(path, O_WRONLY | O_APPEND | O_CREAT | O_CLOEXEC, 0644);
	if (fd < 0) {
		pragma_err_set(err, PRAGMA_E_INPUT, "cannot open recording %s: %s", path, strerror(errno));
		goto out;
	}
	while (off < len) {
		ssize_t n = write(fd, line + off, len - off);
		if (n < 0 && errno == EINTR)
			continue;
		if (n < 0) {
			pragma_err_set(err, PRAGMA_E_INTERNAL, "cannot write recording %s: %s", path, strerror(errno));
			close(fd);
			goto out;
		}
		off += (size_t)n;
	}
	if (close(fd) < 0) {
		pragma_err_set(err, PRAGMA_E_INTERNAL, "cannot write recording %s: %s", path, strerror(errno));
		goto out;
	}
	ret = 0;
out:
	free(line);
	return ret;
}

int llm_replay_skip(struct pragma_llm *c, const char *agent, int n)
{
	int skipped = 0;

	for (size_t i = 0; i < c->n_replay && skipped < n; i++) {
		struct llm_replay_entry *e = &c->replay[i];
		if (!strcmp(e->agent, agent) && !e->used) {
			e->used = 1;
			skipped++;
		}
	}
	return skipped;
}
