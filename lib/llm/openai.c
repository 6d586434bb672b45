/*
 * OpenAI-compatible chat completions (OpenAI, DeepSeek, vLLM, llama.cpp,
 * Ollama /v1, OpenRouter): streaming (SSE chunks, [DONE]) and not.
 * reasoning_content (DeepSeek, vLLM) and reasoning (OpenRouter) go to the
 * reply's reasoning, never into its text.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm_int.h"

char *llm_openai_body(struct pragma_llm *c, const struct pragma_llm_request *req, int stream)
{
	json_t *o = llm_request_json(c, req);
	char *s;

	if (stream) {
		json_object_set_new(o, "stream", json_true());
		json_object_set_new(o, "stream_options", json_pack("{s:b}", "include_usage", 1));
	}
	s = json_dumps(o, JSON_COMPACT);
	json_decref(o);
	return s;
}

static uint64_t uint_of(json_t *v)
{
	if (json_is_integer(v) && json_integer_value(v) > 0)
		return (uint64_t)json_integer_value(v);
	if (json_is_real(v) && json_real_value(v) > 0)
		return (uint64_t)json_real_value(v);
	return 0;
}

static void take_usage(struct llm_parse *p, json_t *u)
{
	if (!json_is_object(u))
		return;
	p->rep->prompt_tokens = uint_of(json_object_get(u, "prompt_tokens"));
	p->rep->completion_tokens = uint_of(json_object_get(u, "completion_tokens"));
	p->rep->reasoning_tokens =
		uint_of(json_object_get(json_object_get(u, "completion_tokens_details"), "reasoning_tokens"));
	if (!p->rep->reasoning_tokens)
		p->rep->reasoning_tokens = uint_of(json_object_get(u, "reasoning_tokens"));
	p->saw_usage = 1;
}

static void take_model(struct llm_parse *p, json_t *root)
{
	const char *m = json_string_value(json_object_get(root, "model"));

	if (m && *m)
		snprintf(p->rep->model, sizeof(p->rep->model), "%s", m);
}

static int add_text(struct llm_parse *p, struct pragma_buf *b, json_t *v)
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

static void take_finish(struct llm_parse *p, json_t *fr)
{
	const char *s = json_string_value(fr);

	if (!s)
		return;
	snprintf(p->rep->finish_reason, sizeof(p->rep->finish_reason), "%s", s);
	p->saw_finish = 1;
	if (!strcmp(s, "content_filter"))
		p->refusal = 1;
}

/* The fields of a message (non-streaming) or a delta (streaming). */
static int take_message(struct llm_parse *p, json_t *m)
{
	json_t *refusal = json_object_get(m, "refusal");

	if (add_text(p, &p->rep->text, json_object_get(m, "content")) < 0 ||
	    add_text(p, &p->rep->reasoning, json_object_get(m, "reasoning_content")) < 0 ||
	    add_text(p, &p->rep->reasoning, json_object_get(m, "reasoning")) < 0)
		return -1;
	if (json_is_string(refusal) && json_string_length(refusal)) {
		p->refusal = 1;
		if (p->refusal_text.len < 4096)
			pragma_buf_add(&p->refusal_text, json_string_value(refusal), json_string_length(refusal));
	}
	return 0;
}

int llm_openai_event(void *ctx, const char *data, size_t len, char *msg, size_t msglen)
{
	struct llm_parse *p = ctx;
	json_error_t jerr;
	json_t *root = json_loadb(data, len, 0, &jerr), *choices, *e;
	int ret = -1;

	if (!json_is_object(root)) {
		snprintf(msg, msglen, "a stream event is not a JSON object: %.80s", data);
		goto out;
	}
	if ((e = json_object_get(root, "error"))) {
		char em[256];
		char *dump = json_dumps(root, JSON_COMPACT);
		llm_error_message(dump ? dump : "", dump ? strlen(dump) : 0, em, sizeof(em));
		free(dump);
		snprintf(msg, msglen, "the server reported an error mid-stream: %s", em);
		p->saw_end = -1; /* server-side failure, not a parsing one */
		goto out;
	}
	take_model(p, root);
	take_usage(p, json_object_get(root, "usage"));
	choices = json_object_get(root, "choices");
	if (choices && !json_is_array(choices)) {
		snprintf(msg, msglen, "'choices' is not an array in a stream event");
		goto out;
	}
	if (json_array_size(choices)) {
		json_t *ch = json_array_get(choices, 0), *delta = json_object_get(ch, "delta");
		if (!json_is_object(ch) || (delta && !json_is_object(delta))) {
			snprintf(msg, msglen, "a stream choice is not an object with a 'delta'");
			goto out;
		}
		if (delta && take_message(p, delta) < 0) {
			snprintf(msg, msglen, "the reply passed the size cap (%zu bytes)", p->c->max_text);
			goto out;
		}
		take_finish(p, json_object_get(ch, "finish_reason"));
	}
	ret = 0;
out:
	json_decref(root);
	return ret;
}

enum pragma_llm_fail llm_openai_parse(struct llm_parse *p, const char *body, size_t len, struct pragma_err *err)
{
	json_error_t jerr;
	json_t *root, *choices, *ch, *msg;
	enum pragma_llm_fail f = PRAGMA_LLM_FAIL_MALFORMED;

	if (!len) {
		pragma_err_set(err, PRAGMA_E_ENV, "%s answered with an empty body", p->c->url);
		return PRAGMA_LLM_FAIL_MALFORMED;
	}
	root = json_loadb(body, len, 0, &jerr);
	if (!json_is_object(root)) {
		pragma_err_set(err, PRAGMA_E_ENV, "the response from %s is not JSON (%s): %.80s", p->c->url, jerr.text,
			       body);
		pragma_err_hint(err, "is the base URL an OpenAI-compatible API (it should end in /v1)?");
		goto out;
	}
	take_model(p, root);
	choices = json_object_get(root, "choices");
	ch = json_array_get(choices, 0);
	msg = json_object_get(ch, "message");
	if (!json_is_object(msg)) {
		pragma_err_set(err, PRAGMA_E_ENV, "the response from %s has no choices[0].message", p->c->url);
		goto out;
	}
	if (take_message(p, msg) < 0) {
		pragma_err_set(err, PRAGMA_E_ENV, "the reply passed the size cap (%zu bytes)", p->c->max_text);
		f = PRAGMA_LLM_FAIL_TOO_LARGE;
		goto out;
	}
	take_finish(p, json_object_get(ch, "finish_reason"));
	take_usage(p, json_object_get(root, "usage"));
	p->saw_end = 1;
	f = PRAGMA_LLM_FAIL_NONE;
out:
	json_decref(root);
	return f;
}

/* Shared by both HTTP providers once the transfer is over. */
enum pragma_llm_fail llm_http_conclude(struct llm_parse *p, struct llm_http *h, enum pragma_llm_fail f,
				       enum pragma_llm_fail (*parse)(struct llm_parse *, const char *, size_t,
								     struct pragma_err *),
				       const char *end_marker, struct pragma_err *err)
{
	struct pragma_llm *c = p->c;
	struct pragma_llm_reply *rep = p->rep;

	rep->http_status = (int)h->status;
	if (p->too_large) {
		pragma_err_set(err, PRAGMA_E_ENV, "the reply from %s passed the size cap (%zu bytes)", c->url, c->max_text);
		return PRAGMA_LLM_FAIL_TOO_LARGE;
	}
	if (f == PRAGMA_LLM_FAIL_MALFORMED && p->saw_end < 0)
		return PRAGMA_LLM_FAIL_SERVER;
	if (f != PRAGMA_LLM_FAIL_NONE) {
		if (h->raw.len)
			llm_buf_add_capped(&rep->diag, h->raw.data, h->raw.len > 4096 ? 4096 : h->raw.len, 4096);
		return f;
	}
	if (h->sse) {
		if (!h->n_events) {
			pragma_err_set(err, PRAGMA_E_ENV, "the stream from %s carried no events", c->url);
			return h->done ? PRAGMA_LLM_FAIL_MALFORMED : PRAGMA_LLM_FAIL_TRUNCATED;
		}
		if (!h->done && !p->saw_end && !p->saw_finish) {
			pragma_err_set(err, PRAGMA_E_ENV, "the stream from %s ended before %s (%zu characters received)",
				       c->url, end_marker, rep->text.len);
			return PRAGMA_LLM_FAIL_TRUNCATED;
		}
	} else {
		f = parse(p, h->raw.data, h->raw.len, err);
		if (f != PRAGMA_LLM_FAIL_NONE) {
			llm_buf_add_capped(&rep->diag, h->raw.data, h->raw.len > 4096 ? 4096 : h->raw.len, 4096);
			return f;
		}
	}
	if (p->refusal) {
		pragma_err_set(err, PRAGMA_E_ENV, "%s refused: %s", c->model,
			       p->refusal_text.len ? p->refusal_text.data : "(content filter)");
		pragma_err_hint(err, "the model declined this prompt; rephrasing will not be retried automatically");
		snprintf(rep->finish_reason, sizeof(rep->finish_reason), "refusal");
		return PRAGMA_LLM_FAIL_REFUSAL;
	}
	return PRAGMA_LLM_FAIL_NONE;
}

enum pragma_llm_fail llm_openai_attempt(struct pragma_llm *c, const struct pragma_llm_request *req,
					struct pragma_llm_reply *rep, double *retry_after_ms, struct pragma_err *err)
{
	struct llm_parse p = { .c = c, .rep = rep, .refusal_text = PRAGMA_BUF_INIT };
	struct llm_http h = { .raw = PRAGMA_BUF_INIT, .line = PRAGMA_BUF_INIT };
	struct curl_slist *hd = NULL;
	struct pragma_buf line = PRAGMA_BUF_INIT;
	char *body = llm_openai_body(c, req, c->stream);
	enum pragma_llm_fail f;

	hd = curl_slist_append(hd, "Content-Type: application/json");
	hd = curl_slist_append(hd, c->stream ? "Accept: text/event-stream" : "Accept: application/json");
	hd = curl_slist_append(hd, "Expect:");
	pragma_buf_addf(&line, "X-Pragma-Agent: %s", req->agent);
	hd = curl_slist_append(hd, line.data);
	if (c->api_key) {
		pragma_buf_reset(&line);
		pragma_buf_addf(&line, "Authorization: Bearer %s", c->api_key);
		hd = curl_slist_append(hd, line.data);
		explicit_bzero(line.data, line.len);
	}
	h.url = c->url;
	h.headers = hd;
	h.body = body;
	h.body_len = strlen(body);
	h.stream = c->stream;
	h.on_event = llm_openai_event;
	h.ctx = &p;
	f = llm_http_perform(c, &h, err);
	*retry_after_ms = h.retry_after_ms;
	f = llm_http_conclude(&p, &h, f, llm_openai_parse, "[DONE]", err);
	llm_http_release(&h);
	pragma_buf_release(&p.refusal_text);
	pragma_buf_release(&line);
	curl_slist_free_all(hd);
	free(body);
	return f;
}
