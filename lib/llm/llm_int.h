/* Internals of the LLM layer: the client, the HTTP transport, the providers. */
#ifndef PRAGMA_LLM_INT_H
#define PRAGMA_LLM_INT_H

#include <curl/curl.h>
#include <jansson.h>
#include <pthread.h>
#include <signal.h>

#include "pragma/llm.h"

struct llm_price_entry {
	char *model;      /* exact, or prefix when it ends in '*' */
	double in, out;
};

struct llm_replay_entry {
	char *agent;
	char *model;
	char *provider;
	char *text;
	char *reasoning;
	char finish_reason[32];
	uint64_t prompt_tokens, completion_tokens, reasoning_tokens;
	int estimated;
	double cost;
	int used;
};

struct pragma_llm {
	enum pragma_llm_provider provider;
	char *spec, *model, *base_url, *url, *api_key, *api_key_env, *describe;
	char *command;         /* exec */
	char *replay_path;     /* replay */
	double temperature;    /* < 0: not sent */
	int max_tokens;
	int max_tokens_param_new; /* send max_completion_tokens (OpenAI reasoning models) */
	long long seed;
	int has_seed;
	int stream;
	int timeout_ms, connect_timeout_ms, stall_timeout_ms, exec_timeout_ms;
	int retries, backoff_ms, backoff_max_ms, retry_after_max_ms;
	int cache;
	char *cache_dir;
	char *record_path;
	size_t max_text, max_raw;
	uint64_t budget_calls, budget_tokens;
	double budget_cost;
	char *anthropic_version;
	struct llm_price_entry *prices; /* overrides from the price file */
	size_t n_prices;

	pthread_mutex_t lock;  /* usage, replay cursor, in-flight reservations, record file */
	struct pragma_llm_usage usage;
	uint64_t inflight;
	int warned_price;

	struct llm_replay_entry *replay;
	size_t n_replay;

	CURLSH *share;
	pthread_mutex_t share_lock[CURL_LOCK_DATA_LAST];
};

/* One HTTP attempt. */
struct llm_http {
	/* in */
	const char *url;
	struct curl_slist *headers;
	const char *body;
	size_t body_len;
	int stream;  /* the request asked for SSE; the stall detector is on */
	/* SSE: called with each `data:` payload (not [DONE]); returns 0, or -1
	 * to abort the transfer as malformed (msg filled). */
	int (*on_event)(void *ctx, const char *data, size_t len, char *msg, size_t msglen);
	void *ctx;

	/* out */
	long status;
	int sse;               /* the body was an event stream */
	int done;              /* saw data: [DONE] */
	int n_events;
	struct pragma_buf raw; /* the body when not SSE (capped) */
	struct pragma_buf line;/* SSE line being assembled */
	double retry_after_ms; /* < 0: none */
	int stalled, too_large, malformed;
	char malformed_msg[512];
	char content_type[128];
	double ms;

	/* private */
	struct pragma_llm *c;
	double t_start, t_last;
	curl_off_t last_dl, last_ul;
	int started;
};

/* Perform; returns the transport-level failure (NONE when an HTTP response
 * arrived whatever its status; a non-2xx status is classified too, with
 * the message of the API's error body and hints for 401/403/404/429). */
enum pragma_llm_fail llm_http_perform(struct pragma_llm *c, struct llm_http *h, struct pragma_err *err);
void llm_http_release(struct llm_http *h);
/* After the transfer: turn transport result + parse state into the
 * attempt's outcome (truncated stream, refusal, ...); parse() reads a
 * non-streaming body. end_marker names the stream's end for messages. */
struct llm_parse;
enum pragma_llm_fail llm_http_conclude(struct llm_parse *p, struct llm_http *h, enum pragma_llm_fail f,
				       enum pragma_llm_fail (*parse)(struct llm_parse *, const char *, size_t,
								     struct pragma_err *),
				       const char *end_marker, struct pragma_err *err);
/* The connection/DNS/TLS-session share of a client (thread-safe). */
void llm_http_share_init(struct pragma_llm *c);
void llm_http_share_free(struct pragma_llm *c);

/* What a provider attempt accumulates. */
struct llm_parse {
	struct pragma_llm *c;
	struct pragma_llm_reply *rep;
	int saw_finish;        /* a finish/stop reason arrived */
	int saw_end;           /* the end marker arrived (message_stop, [DONE]) */
	int saw_usage;
	int refusal;
	struct pragma_buf refusal_text;
	int too_large;
	uint64_t pending_prompt; /* Anthropic: input tokens from message_start */
};

/* openai.c */
char *llm_openai_body(struct pragma_llm *c, const struct pragma_llm_request *req, int stream);
int llm_openai_event(void *ctx, const char *data, size_t len, char *msg, size_t msglen);
enum pragma_llm_fail llm_openai_parse(struct llm_parse *p, const char *body, size_t len, struct pragma_err *err);
enum pragma_llm_fail llm_openai_attempt(struct pragma_llm *c, const struct pragma_llm_request *req,
					struct pragma_llm_reply *rep, double *retry_after_ms, struct pragma_err *err);

/* anthropic.c */
char *llm_anthropic_body(struct pragma_llm *c, const struct pragma_llm_request *req, int stream);
enum pragma_llm_fail llm_anthropic_attempt(struct pragma_llm *c, const struct pragma_llm_request *req,
					   struct pragma_llm_reply *rep, double *retry_after_ms,
					   struct pragma_err *err);

/* exec.c */
enum pragma_llm_fail llm_exec_attempt(struct pragma_llm *c, const struct pragma_llm_request *req,
				      struct pragma_llm_reply *rep, double *retry_after_ms, struct pragma_err *err);

/* replay.c */
int llm_replay_load(struct pragma_llm *c, struct pragma_err *err);
void llm_replay_free(struct pragma_llm *c);
/* Under c->lock: take the next entry for the agent. Returns 0, or
 * PRAGMA_LLM_STOP when there is none. */
/* Mark the next n replies of agent as served (a resumed run's earlier
 * calls); returns how many there were. */
int llm_replay_skip(struct pragma_llm *c, const char *agent, int n);
int llm_replay_next(struct pragma_llm *c, const struct pragma_llm_request *req, struct pragma_llm_reply *rep,
		    struct pragma_err *err);

/* cache.c */
int llm_cache_get(struct pragma_llm *c, const char *hash, struct pragma_llm_reply *rep);
void llm_cache_put(struct pragma_llm *c, const char *hash, const struct pragma_llm_reply *rep);

/* price.c */
int llm_prices_load(struct pragma_llm *c, const char *path, struct pragma_err *err);
void llm_prices_free(struct pragma_llm *c);

/* client.c helpers shared by the providers */
/* The request as OpenAI chat JSON (exec's stdin; the body's base). */
json_t *llm_request_json(struct pragma_llm *c, const struct pragma_llm_request *req);
/* Append to a capped reply buffer; returns -1 past the cap. */
int llm_buf_add_capped(struct pragma_buf *b, const char *s, size_t n, size_t cap);
/* Prompt characters of a request (for estimates). */
size_t llm_request_chars(const struct pragma_llm_request *req);
double llm_now_ms(void);
/* Block SIGPIPE in this thread (restore discards what became pending). */
void llm_sigpipe_block(sigset_t *old);
void llm_sigpipe_restore(const sigset_t *old);
/* Message from an API error body: {"error":{"message":...}} or similar. */
void llm_error_message(const char *body, size_t len, char *out, size_t outlen);

#endif
