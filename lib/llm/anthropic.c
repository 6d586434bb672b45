/*
 * The Anthropic Messages API: x-api-key and anthropic-version headers,
 * system prompt apart from the messages, streaming events
 * (message_start, content_block_delta, message_delta, message_stop).
 * Thinking blocks go to the reply's reasoning. stop_reason is reported in
 * OpenAI's words (end_turn → stop, max_tokens → length) so callers see one
 * vocabulary.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm_int.h"

char *llm_anthropic_body(struct pragma_llm *c, const struct pragma_llm_request *req, int stream)
{
	json_t *o = json_object(), *msgs = json_array();
	struct pragma_buf sys = PRAGMA_BUF_INIT, cur = PRAGMA_BUF_INIT;
	const char *cur_role = NULL;
	double t = req->temperature >= 0 ? req->temperature : c->temperature;
	char *s;

	json_object_set_new(o, "model", json_string(c->model));
	json_object_set_new(o, "max_tokens", json_integer(req->max_tokens > 0 ? req->max_tokens : c->max_tokens));
	/* System messages join into "system"; consecutive turns of one role
	 * merge, as the API wants user and assistant to alternate. */
	for (size_t i = 0; i < req->n_msgs; i++) {
		const struct pragma_llm_msg *m = &req->msgs[i];
		if (!strcmp(m->role, "system")) {
			if (sys.len)
				pragma_buf_adds(&sys, "\n\n");
			pragma_buf_adds(&sys, m->content);
			continue;
		}
		if (cur_role && strcmp(cur_role, m->role)) {
			json_array_append_new(msgs, json_pack("{s:s, s:s%}", "role", cur_role, "content", cur.data,
							      cur.len));
			pragma_buf_reset(&cur);
		}
		if (cur.len)
			pragma_buf_adds(&cur, "\n\n");
		pragma_buf_adds(&cur, m->content);
		cur_role = m->role;
	}
	if (cur_role)
		json_array_append_new(msgs, json_pack("{s:s, s:s%}", "role", cur_role, "content", cur.data, cur.len));
	if (sys.len)
		json_object_set_new(o, "system", json_stringn(sys.data, sys.len));
	json_object_set_new(o, "messages", msgs);
	if (t >= 0)
		json_object_set_new(o, "temperature", json_real(t > 1 ? 1 : t));
	if (stream)
		json_object_set_new(o, "stream", json_true());
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	pragma_buf_release(&sys);
	pragma_buf_release(&cur);
	return s;
}

static uint64_t uint_of(json_t *v)
{
	if (json_is_integer(v) && json_integer_value(v) > 0)
		return (uint64_t)json_integer_value(v);
	return 0;
}

static void take_usage(struct llm_parse *p, json_t *u, int input)
{
	if (!json_is_object(u))
		return;
	if (input) {
		uint64_t in = uint_of(json_object_get(u, "input_tokens")) +
			      uint_of(json_object_get(u, "cache_creation_input_tokens")) +
			      uint_of(json_object_get(u, "cache_read_input_tokens"));
		if (in)
			p->rep->prompt_tokens = in;
	}
	if (json_object_get(u, "output_tokens")) {
		p->rep->completion_tokens = uint_of(json_object_get(u, "output_tokens"));
		p->saw_usage = 1;
	}
}

static void take_stop(struct llm_parse *p, json_t *v)
{
	const char *s = json_string_value(v);
	const char *mapped;

	if (!s)
		return;
	if (!strcmp(s, "end_turn") || !strcmp(s, "stop_sequence"))
		mapped = "stop";
	else if (!strcmp(s, "max_tokens"))
		mapped = "length";
	else if (!strcmp(s, "tool_use"))
		mapped = "tool_calls";
	else
		mapped = s;
	if (!strcmp(s, "refusal"))
		p->refusal = 1;
	snprintf(p->rep->finish_reason, sizeof(p->rep->finish_reason), "%s", mapped);
	p->saw_finish = 1;
}

static int add(struct llm_parse *p, struct pragma_buf *b, json_t *v)
{
	const char *s = json_string_value(v);

	if (!s)
		return 0;
	if (llm_buf_add_capped(b, s, json_string_length(v), p->c->max_text) < 0) {
		p->too_large = 1;
		return -1;
	}
	return 0;
}

static int take_block(struct llm_parse *p, json_t *b)
{
	const char *type = json_string_value(json_object_get(b, "type"));

	if (!type)
		return 0;
	if (!strcmp(type, "text"))
		return add(p, &p->rep->text, json_object_get(b, "text"));
	if (!strcmp(type, "thinking"))
		return add(p, &p->rep->reasoning, json_object_get(b, "thinking"));
	return 0;
}

static int anthropic_event(void *ctx, const char *data, size_t len, char *msg, size_t msglen)
{
	struct llm_parse *p = ctx;
	json_error_t jerr;
	json_t *root = json_loadb(data, len, 0, &jerr);
	const char *type;
	int ret = -1;

	if (!json_is_object(root)) {
		snprintf(msg, msglen, "a stream event is not a JSON object: %.80s", data);
		goto out;
	}
	type = json_string_value(json_object_get(root, "type"));
	if (!type) {
		snprintf(msg, msglen, "a stream event has no 'type': %.80s", data);
		goto out;
	}
	if (!strcmp(type, "message_start")) {
		json_t *m = json_object_get(root, "message");
		const char *model = json_string_value(json_object_get(m, "model"));
		if (!json_is_object(m)) {
			snprintf(msg, msglen, "message_start without a message");
			goto out;
		}
		if (model && *model)
			snprintf(p->rep->model, sizeof(p->rep->model), "%s", model);
		/* Counted only once message_delta brings the output count: a cut
		 * stream reports no usage at all. */
		json_t *u = json_object_get(m, "usage");
		p->pending_prompt = uint_of(json_object_get(u, "input_tokens")) +
				    uint_of(json_object_get(u, "cache_creation_input_tokens")) +
				    uint_of(json_object_get(u, "cache_read_input_tokens"));
	} else if (!strcmp(type, "content_block_start")) {
		if (take_block(p, json_object_get(root, "content_block")) < 0)
			goto cap;
	} else if (!strcmp(type, "content_block_delta")) {
		json_t *d = json_object_get(root, "delta");
		const char *dt = json_string_value(json_object_get(d, "type"));
		if (!json_is_object(d) || !dt) {
			snprintf(msg, msglen, "content_block_delta without a typed delta");
			goto out;
		}
		if (!strcmp(dt, "text_delta") && add(p, &p->rep->text, json_object_get(d, "text")) < 0)
			goto cap;
		if (!strcmp(dt, "thinking_delta") && add(p, &p->rep->reasoning, json_object_get(d, "thinking")) < 0)
			goto cap;
	} else if (!strcmp(type, "message_delta")) {
		take_stop(p, json_object_get(json_object_get(root, "delta"), "stop_reason"));
		take_usage(p, json_object_get(root, "usage"), 1);
		if (!p->rep->prompt_tokens)
			p->rep->prompt_tokens = p->pending_prompt;
	} else if (!strcmp(type, "message_stop")) {
		p->saw_end = 1;
	} else if (!strcmp(type, "error")) {
		const char *em = json_string_value(json_object_get(json_object_get(root, "error"), "message"));
		snprintf(msg, msglen, "the server reported an error mid-stream: %s", em ? em : "(no message)");
		p->saw_end = -1;
		goto out;
	}
	/* ping, content_block_stop and event types added later: nothing to do. */
	ret = 0;
	goto out;
cap:
	snprintf(msg, msglen, "the reply passed the size cap (%zu bytes)", p->c->max_text);
out:
	json_decref(root);
	return ret;
}

static enum pragma_llm_fail anthropic_parse(struct llm_parse *p, const char *body, size_t len, struct pragma_err *err)
{
	json_error_t jerr;
	json_t *root, *content, *b;
	enum pragma_llm_fail f = PRAGMA_LLM_FAIL_MALFORMED;
	size_t i;

	if (!len) {
		pragma_err_set(err, PRAGMA_E_ENV, "%s answered with an empty body", p->c->url);
		return f;
	}
	root = json_loadb(body, len, 0, &jerr);
	if (!json_is_object(root)) {
		pragma_err_set(err, PRAGMA_E_ENV, "the response from %s is not JSON (%s): %.80s", p->c->url, jerr.text,
			       body);
		goto out;
	}
	if (json_object_get(root, "type") && json_is_string(json_object_get(root, "type")) &&
	    !strcmp(json_string_value(json_object_get(root, "type")), "error")) {
		const char *em = json_string_value(json_object_get(json_object_get(root, "error"), "message"));
		pragma_err_set(err, PRAGMA_E_ENV, "%s reported an error: %s", p->c->url, em ? em : "(no message)");
		f = PRAGMA_LLM_FAIL_SERVER;
		goto out;
	}
	content = json_object_get(root, "content");
	if (!json_is_array(content)) {
		pragma_err_set(err, PRAGMA_E_ENV, "the response from %s has no 'content' array", p->c->url);
		goto out;
	}
	const char *model = json_string_value(json_object_get(root, "model"));
	if (model && *model)
		snprintf(p->rep->model, sizeof(p->rep->model), "%s", model);
	json_array_foreach(content, i, b) {
		if (!json_is_object(b)) {
			pragma_err_set(err, PRAGMA_E_ENV, "content[%zu] of the response from %s is not an object", i,
				       p->c->url);
			goto out;
		}
		if (take_block(p, b) < 0) {
			pragma_err_set(err, PRAGMA_E_ENV, "the reply passed the size cap (%zu bytes)", p->c->max_text);
			f = PRAGMA_LLM_FAIL_TOO_LARGE;
			goto out;
		}
	}
	take_stop(p, json_object_get(root, "stop_reason"));
	take_usage(p, json_object_get(root, "usage"), 1);
	p->saw_end = 1;
	f = PRAGMA_LLM_FAIL_NONE;
out:
	json_decref(root);
	return f;
}

enum pragma_llm_fail llm_anthropic_attempt(struct pragma_llm *c, const struct pragma_llm_request *req,
					   struct pragma_llm_reply *rep, double *retry_after_ms, struct pragma_err *err)
{
	struct llm_parse p = { .c = c, .rep = rep, .refusal_text = PRAGMA_BUF_INIT };
	struct llm_http h = { .raw = PRAGMA_BUF_INIT, .line = PRAGMA_BUF_INIT };
	struct curl_slist *hd = NULL;
	struct pragma_buf line = PRAGMA_BUF_INIT;
	char *body = llm_anthropic_body(c, req, c->stream);
	enum pragma_llm_fail f;

	hd = curl_slist_append(hd, "Content-Type: application/json");
	hd = curl_slist_append(hd, "Expect:");
	pragma_buf_addf(&line, "anthropic-version: %s", c->anthropic_version);
	hd = curl_slist_append(hd, line.data);
	pragma_buf_reset(&line);
	pragma_buf_addf(&line, "X-Pragma-Agent: %s", req->agent);
	hd = curl_slist_append(hd, line.data);
	if (c->api_key) {
		pragma_buf_reset(&line);
		pragma_buf_addf(&line, "x-api-key: %s", c->api_key);
		hd = curl_slist_append(hd, line.data);
		explicit_bzero(line.data, line.len);
	}
	h.url = c->url;
	h.headers = hd;
	h.body = body;
	h.body_len = strlen(body);
	h.stream = c->stream;
	h.on_event = anthropic_event;
	h.ctx = &p;
	f = llm_http_perform(c, &h, err);
	*retry_after_ms = h.retry_after_ms;
	f = llm_http_conclude(&p, &h, f, anthropic_parse, "message_stop", err);
	llm_http_release(&h);
	pragma_buf_release(&p.refusal_text);
	pragma_buf_release(&line);
	curl_slist_free_all(hd);
	free(body);
	return f;
}
