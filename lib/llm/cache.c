/*
 * The response cache: <cache>/llm/<request hash>.json, written atomically.
 * The key (pragma_llm_request_hash) covers provider, endpoint, model, agent,
 * sample, messages and parameters, never the attempt number: a rerun of the
 * same requests is answered locally, free and reproducibly. Only successful
 * replies are stored. A damaged entry is a miss, never an error.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm_int.h"
#include "pragma/fs.h"
#include "pragma/log.h"

static void entry_path(struct pragma_llm *c, const char *hash, struct pragma_buf *out)
{
	pragma_buf_reset(out);
	pragma_buf_addf(out, "%s/%s.json", c->cache_dir, hash);
}

static uint64_t u64_of(json_t *v)
{
	return json_is_integer(v) && json_integer_value(v) > 0 ? (uint64_t)json_integer_value(v) : 0;
}

int llm_cache_get(struct pragma_llm *c, const char *hash, struct pragma_llm_reply *rep)
{
	struct pragma_buf path = PRAGMA_BUF_INIT, text = PRAGMA_BUF_INIT;
	json_t *o = NULL, *u;
	const char *s;
	int ret = -1;

	if (!c->cache_dir)
		return -1;
	entry_path(c, hash, &path);
	if (!pragma_path_exists(path.data) || pragma_read_file(path.data, &text, c->max_text * 2 + 65536, NULL) < 0)
		goto out;
	o = json_loadb(text.data, text.len, 0, NULL);
	s = json_string_value(json_object_get(o, "text"));
	if (!json_is_object(o) || !s || strcmp(json_string_value(json_object_get(o, "request_hash")) ?
						       json_string_value(json_object_get(o, "request_hash")) : "", hash))
		goto out;
	pragma_buf_reset(&rep->text);
	pragma_buf_add(&rep->text, s, json_string_length(json_object_get(o, "text")));
	pragma_buf_reset(&rep->reasoning);
	if ((s = json_string_value(json_object_get(o, "reasoning"))))
		pragma_buf_adds(&rep->reasoning, s);
	if ((s = json_string_value(json_object_get(o, "finish_reason"))))
		snprintf(rep->finish_reason, sizeof(rep->finish_reason), "%s", s);
	if ((s = json_string_value(json_object_get(o, "model"))))
		snprintf(rep->model, sizeof(rep->model), "%s", s);
	rep->truncated = !strcmp(rep->finish_reason, "length");
	u = json_object_get(o, "usage");
	rep->prompt_tokens = u64_of(json_object_get(u, "prompt_tokens"));
	rep->completion_tokens = u64_of(json_object_get(u, "completion_tokens"));
	rep->reasoning_tokens = u64_of(json_object_get(u, "reasoning_tokens"));
	rep->estimated = json_is_true(json_object_get(u, "estimated"));
	ret = 0;
out:
	json_decref(o);
	pragma_buf_release(&path);
	pragma_buf_release(&text);
	return ret;
}

void llm_cache_put(struct pragma_llm *c, const char *hash, const struct pragma_llm_reply *rep)
{
	struct pragma_buf path = PRAGMA_BUF_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	json_t *o, *u;
	char *s;

	if (!c->cache_dir)
		return;
	o = json_object();
	u = json_object();
	json_object_set_new(o, "v", json_integer(1));
	json_object_set_new(o, "request_hash", json_string(hash));
	json_object_set_new(o, "provider", json_string(rep->provider));
	json_object_set_new(o, "model", json_string(rep->model));
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
	s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	if (!s)
		return;
	entry_path(c, hash, &path);
	if (pragma_mkdir_p(c->cache_dir, 0755, &err) < 0 ||
	    pragma_write_file_atomic(path.data, s, strlen(s), &err) < 0)
		pragma_warn("LLM cache: %s", err.msg);
	free(s);
	pragma_buf_release(&path);
}
