/*
 * The LLM layer (DESIGN 3.7): one client over four providers.
 *
 *   openai:MODEL     any OpenAI-compatible POST {base}/chat/completions
 *   anthropic:MODEL  the Anthropic Messages API, POST {base}/v1/messages
 *   exec:COMMAND     `sh -c COMMAND`, request JSON on stdin, reply on stdout
 *   replay:FILE      replies from a recording (JSON Lines), by role and order
 *
 * A client resolves its options (flags over environment over the config
 * file), keeps running usage totals, enforces budgets, answers identical
 * requests from a cache, retries transient failures with backoff, and is
 * safe to use from several threads at once (pragma_llm_send_many()).
 *
 *     struct pragma_llm_options opt = PRAGMA_LLM_OPTIONS_INIT;
 *     struct pragma_llm *llm;
 *     opt.spec = "openai:gpt-4o";                     // or NULL: $PRAGMA_LLM
 *     if (pragma_llm_open(&llm, &opt, &err) < 0) ...
 *     struct pragma_llm_msg msgs[] = { { "system", sys }, { "user", prompt } };
 *     struct pragma_llm_request req = PRAGMA_LLM_REQUEST_INIT;
 *     req.agent = "coder"; req.attempt = 3; req.msgs = msgs; req.n_msgs = 2;
 *     struct pragma_llm_reply rep = PRAGMA_LLM_REPLY_INIT;
 *     int rc = pragma_llm_send(llm, &req, &rep, &err);
 *     // rc 0: rep.text holds the answer; -1: failed (rep.fail says how);
 *     // PRAGMA_LLM_STOP: a budget is spent or the recording is used up.
 *     pragma_llm_reply_release(&rep);
 *     pragma_llm_free(llm);
 */
#ifndef PRAGMA_LLM_H
#define PRAGMA_LLM_H

#include <stddef.h>
#include <stdint.h>

#include "pragma/buf.h"
#include "pragma/err.h"

/* pragma_llm_send() returns this when the run must end cleanly: a budget
 * (calls, tokens, cost) is reached, or a replay has no more replies for the
 * role. err (kind PRAGMA_E_NEGATIVE) says which; rep->fail is
 * PRAGMA_LLM_FAIL_BUDGET or _REPLAY_END. */
#define PRAGMA_LLM_STOP (-2)

enum pragma_llm_provider {
	PRAGMA_LLM_OPENAI,
	PRAGMA_LLM_ANTHROPIC,
	PRAGMA_LLM_EXEC,
	PRAGMA_LLM_REPLAY,
};

/*
 * How a request failed: rep->fail after send() returns -1 (err->kind is
 * PRAGMA_E_ENV for everything but a bad request or option, PRAGMA_E_INPUT).
 * The retryable ones are retried inside send() (up to the retry limit), each
 * retry logged as a warning as it happens ("what failed; retry 2 of 5 in
 * 2.1 s"); the reply of a failed send carries the last failure, and err says
 * "after N attempts over S s: ..." with a Hint. pragma_llm_fail_class()
 * groups them for callers that decide what to do next (the optimize loop
 * stops after consecutive model failures, exit 3):
 *
 *   class        fails                                    means
 *   unreachable  UNREACHABLE, NETWORK                     no server there: refused, DNS, TLS, reset
 *   timeout      TIMEOUT, STALL                           the server is there but too slow
 *   auth         AUTH                                     key missing or rejected (401/403)
 *   rate_limit   RATE_LIMIT                               429 (after Retry-After waits)
 *   server       SERVER                                   5xx, 529, exec exit 75
 *   request      REQUEST                                  other 4xx: model name, limits
 *   bad_reply    MALFORMED, TRUNCATED, EMPTY, TOO_LARGE,  an answer pragma cannot use
 *                LENGTH, REFUSAL
 *   exec         EXEC                                     the exec: command failed, timed out, printed nothing
 *   config       CONFIG                                   bad spec, option or price file
 *   stop         BUDGET, REPLAY_END                       PRAGMA_LLM_STOP: end cleanly
 */
enum pragma_llm_fail {
	PRAGMA_LLM_FAIL_NONE = 0,
	PRAGMA_LLM_FAIL_CONFIG,     /* bad spec, option or price file */
	PRAGMA_LLM_FAIL_NETWORK,    /* the connection broke mid-request: reset, recv error (retryable) */
	PRAGMA_LLM_FAIL_TIMEOUT,    /* total or connect timeout (retryable) */
	PRAGMA_LLM_FAIL_STALL,      /* no bytes for stall_timeout (retryable) */
	PRAGMA_LLM_FAIL_RATE_LIMIT, /* HTTP 429 (retryable) */
	PRAGMA_LLM_FAIL_SERVER,     /* HTTP 5xx, Anthropic 529 (retryable) */
	PRAGMA_LLM_FAIL_AUTH,       /* HTTP 401/403 */
	PRAGMA_LLM_FAIL_REQUEST,    /* other HTTP 4xx: bad model name, too long, ... */
	PRAGMA_LLM_FAIL_TRUNCATED,  /* the stream ended before its end marker (retryable) */
	PRAGMA_LLM_FAIL_MALFORMED,  /* JSON that is not what the API promised (retryable) */
	PRAGMA_LLM_FAIL_TOO_LARGE,  /* the response passed max_response_bytes */
	PRAGMA_LLM_FAIL_EMPTY,      /* no text, not cut by the token limit (retryable) */
	PRAGMA_LLM_FAIL_REFUSAL,    /* the model refused or a content filter fired */
	PRAGMA_LLM_FAIL_LENGTH,     /* the token limit was spent before any answer text */
	PRAGMA_LLM_FAIL_EXEC,       /* the exec command failed, timed out or printed nothing */
	PRAGMA_LLM_FAIL_BUDGET,     /* a budget is spent (PRAGMA_LLM_STOP) */
	PRAGMA_LLM_FAIL_REPLAY_END, /* the recording has no more replies (PRAGMA_LLM_STOP) */
	PRAGMA_LLM_FAIL_UNREACHABLE, /* nothing received: connection refused, DNS, no route, TLS handshake (retryable) */
};

/* "unreachable", "rate_limit", ... (the enum's name in lower case). */
const char *pragma_llm_fail_name(enum pragma_llm_fail f);
/* The class of the table above: "unreachable", "timeout", "auth",
 * "rate_limit", "server", "request", "bad_reply", "exec", "config", "stop";
 * "none" for NONE. */
const char *pragma_llm_fail_class(enum pragma_llm_fail f);
int pragma_llm_fail_retryable(enum pragma_llm_fail f);
const char *pragma_llm_provider_name(enum pragma_llm_provider p);

/*
 * Options. Unset fields (the INIT values) are filled by pragma_llm_open()
 * from the environment, then the config file ([llm] section), then the
 * provider's defaults. Strings are borrowed for the duration of open().
 *
 *   field              env                         config ([llm])      default
 *   spec               PRAGMA_LLM                  spec (or top-level llm)  (required)
 *   base_url           PRAGMA_LLM_BASE_URL         base_url            api.openai.com/v1, api.anthropic.com
 *   api_key_env        -                           api_key_env         PRAGMA_LLM_API_KEY, then per provider
 *   temperature        PRAGMA_LLM_TEMPERATURE      temperature         not sent (provider's own)
 *   max_tokens         PRAGMA_LLM_MAX_TOKENS       max_tokens          8192 (32768 for reasoning models)
 *   seed               PRAGMA_LLM_SEED             seed                not sent
 *   stream             PRAGMA_LLM_STREAM           stream              on
 *   timeout_ms         PRAGMA_LLM_TIMEOUT (s)      timeout (s)         600 s total per HTTP attempt
 *   connect_timeout_ms PRAGMA_LLM_CONNECT_TIMEOUT  connect_timeout (s) 10 s
 *   stall_timeout_ms   PRAGMA_LLM_STALL_TIMEOUT    stall_timeout (s)   120 s without a byte (streaming)
 *   exec_timeout_ms    PRAGMA_LLM_EXEC_TIMEOUT (s) exec_timeout (s)    1800 s
 *   retries            PRAGMA_LLM_RETRIES          retries             5
 *   backoff_ms         PRAGMA_LLM_BACKOFF_MS       backoff_ms          1000 (wait base*2^n + jitter)
 *   backoff_max_ms     PRAGMA_LLM_BACKOFF_MAX_MS   backoff_max_ms      60000
 *   cache              PRAGMA_LLM_CACHE (0/1)      cache (on/off)      on
 *   price_file         PRAGMA_LLM_PRICES           price_file          built-in table only
 *   record_path        PRAGMA_LLM_RECORD           record              none
 *   budget_*           PRAGMA_LLM_BUDGET_{CALLS,TOKENS,COST}  budget_calls, ...  none
 */
struct pragma_llm_options {
	const char *spec;
	const char *base_url;
	const char *api_key_env;    /* name of the variable holding the key */
	double temperature;         /* < 0: unset */
	int max_tokens;             /* 0: unset */
	long long seed;
	int has_seed;               /* seed is set */
	int stream;                 /* -1 unset, 0 off, 1 on */
	int timeout_ms, connect_timeout_ms, stall_timeout_ms, exec_timeout_ms; /* 0: unset */
	int retries;                /* -1: unset */
	int backoff_ms, backoff_max_ms; /* 0: unset */
	int retry_after_max_ms;     /* longest Retry-After honoured; 0: 300 s */
	int cache;                  /* -1 unset, 0 off, 1 on */
	const char *cache_dir;      /* NULL: <pragma_cache_dir>/llm */
	const char *price_file;
	const char *record_path;    /* append every answered call (pragma_llm_record_append) */
	size_t max_response_bytes;  /* 0: 8 MiB of reply text, 64 MiB raw */
	uint64_t budget_calls;      /* 0: none; calls answered by the provider, not the cache */
	uint64_t budget_tokens;     /* 0: none; prompt + completion tokens */
	double budget_cost;         /* <= 0: none; USD */
	const char *anthropic_version; /* NULL: 2023-06-01 */
};

#define PRAGMA_LLM_OPTIONS_INIT                                                                         \
	{ .temperature = -1, .stream = -1, .retries = -1, .cache = -1 }

/* One chat message. role: "system", "user" or "assistant". */
struct pragma_llm_msg {
	const char *role;
	const char *content;
};

struct pragma_llm_request {
	const char *agent;          /* coder, conductor, summarizer, ... (X-Pragma-Agent) */
	int attempt;                /* PRAGMA_ATTEMPT for exec; not in the cache key */
	int sample;                 /* in the cache key: ask again for a fresh answer */
	const struct pragma_llm_msg *msgs;
	size_t n_msgs;
	int max_tokens;             /* 0: the client's */
	double temperature;         /* < 0: the client's */
};

#define PRAGMA_LLM_REQUEST_INIT { .agent = "default", .temperature = -1 }

struct pragma_llm_reply {
	struct pragma_buf text;       /* the answer (never the reasoning) */
	struct pragma_buf reasoning;  /* reasoning_content / thinking, kept for the record */
	struct pragma_buf diag;       /* exec: the command's stderr (capped); http: error body */
	char finish_reason[32];       /* stop, length, refusal, ... as the provider said */
	int truncated;                /* cut by the token limit (finish_reason length) */
	uint64_t prompt_tokens, completion_tokens, reasoning_tokens; /* reasoning ⊂ completion */
	int estimated;                /* tokens estimated from characters (exec, or no usage sent) */
	int cached;                   /* answered from the cache: no call was made, cost 0 */
	int cost_known;               /* the model is in the price table */
	double cost;                  /* USD for this call */
	double latency_ms;            /* of the attempt that answered */
	double elapsed_ms;            /* the whole send(), retries and waits included */
	int retries;                  /* attempts made beyond the first */
	int http_status;              /* last HTTP status (0: none) */
	char request_hash[65];        /* sha256 of the request: the cache key */
	char provider[16];
	char model[128];              /* as the provider reported it, else as asked */
	enum pragma_llm_fail fail;    /* NONE on success */
};

#define PRAGMA_LLM_REPLY_INIT                                                                         \
	{ .text = PRAGMA_BUF_INIT, .reasoning = PRAGMA_BUF_INIT, .diag = PRAGMA_BUF_INIT }

void pragma_llm_reply_init(struct pragma_llm_reply *r);
void pragma_llm_reply_release(struct pragma_llm_reply *r);

/* Running totals of a client. */
struct pragma_llm_usage {
	uint64_t requests;          /* send() calls that were made */
	uint64_t calls;             /* answered by the provider */
	uint64_t cached;            /* answered from the cache */
	uint64_t failed;            /* ended in an error (budget stops not included) */
	uint64_t stopped;           /* refused by a budget or an exhausted replay */
	uint64_t retries;
	uint64_t prompt_tokens, completion_tokens, reasoning_tokens;
	uint64_t estimated_calls;   /* calls whose tokens are estimates */
	double cost;                /* USD */
	int cost_unknown;           /* some call's model had no price */
	double latency_ms;          /* summed over calls */
};

struct pragma_llm;

/* The model spec open() would use (--llm, $PRAGMA_LLM, config llm.spec,
 * config llm) and where it comes from; NULL when none is configured. */
const char *pragma_llm_spec_source(const struct pragma_llm_options *o, const char **from);

/* Open a client. Fails with PRAGMA_E_INPUT for a malformed spec or option,
 * PRAGMA_E_ENV when nothing names a model (hint: --llm or PRAGMA_LLM) or a
 * key is missing for a remote API. *out is NULL on failure. */
int pragma_llm_open(struct pragma_llm **out, const struct pragma_llm_options *opt, struct pragma_err *err);
void pragma_llm_free(struct pragma_llm *c);

enum pragma_llm_provider pragma_llm_provider_of(const struct pragma_llm *c);
const char *pragma_llm_model(const struct pragma_llm *c);
/* "openai:gpt-4o at https://api.openai.com/v1 (key from OPENAI_API_KEY)". */
const char *pragma_llm_describe(const struct pragma_llm *c);
/* Effective settings as JSON text (no secrets), for records and --json. */
char *pragma_llm_settings_json(const struct pragma_llm *c);

/*
 * Send one request. Returns 0 with *rep filled; -1 with err set (kind
 * PRAGMA_E_ENV for network, auth, provider and exec problems, PRAGMA_E_INPUT
 * for a bad request) and rep->fail saying how; PRAGMA_LLM_STOP when a budget
 * is spent or a replay is used up. rep is reset first. Thread-safe.
 */
int pragma_llm_send(struct pragma_llm *c, const struct pragma_llm_request *req, struct pragma_llm_reply *rep,
		    struct pragma_err *err);

/* Several requests at once, on up to `parallel` threads (<= 1: in order).
 * Each job gets its own rc, reply and err. Returns the number that
 * succeeded. */
struct pragma_llm_job {
	const struct pragma_llm_request *req;
	int rc;
	struct pragma_llm_reply reply;
	struct pragma_err err;
};
size_t pragma_llm_send_many(struct pragma_llm *c, struct pragma_llm_job *jobs, size_t n, int parallel);

/* A resumed run's calls already answered: a replay provider moves past
 * the next n recorded replies of agent, so the run goes on where it
 * stopped instead of hearing the recording from the start. Other providers
 * ignore it. Returns how many were skipped. */
int pragma_llm_skip(struct pragma_llm *c, const char *agent, int n);
void pragma_llm_usage_get(struct pragma_llm *c, struct pragma_llm_usage *out);

/* The request hash send() would use as cache key (no call is made). */
int pragma_llm_request_hash(struct pragma_llm *c, const struct pragma_llm_request *req, char out[65],
			    struct pragma_err *err);

/*
 * Recordings for replay:FILE, one JSON object per line:
 *   {"v":1,"agent":"coder","attempt":2,"provider":"openai","model":"gpt-4o",
 *    "request_hash":"…","text":"…","reasoning":"…","finish_reason":"stop",
 *    "usage":{"prompt_tokens":…,"completion_tokens":…,"reasoning_tokens":…,
 *    "estimated":false},"cost":0.0123,"latency_ms":812.5}
 * Appends one line (O_APPEND, one write); the store calls this to export a
 * run. */
int pragma_llm_record_append(const char *path, const char *agent, int attempt, const struct pragma_llm_reply *rep,
			     struct pragma_err *err);

/* Price per million tokens (USD). Built-in list prices, overridable. */
struct pragma_llm_price {
	const char *model;          /* exact name, or a prefix ending in '*' */
	double input_per_mtok, output_per_mtok;
};
/* The built-in table, terminated by a NULL model. */
const struct pragma_llm_price *pragma_llm_builtin_prices(void);
/* Price of a model in the client's table (overrides first); 0 when unknown. */
int pragma_llm_price_of(struct pragma_llm *c, const char *model, double *in_per_mtok, double *out_per_mtok);

/*
 * Command-line flags shared by every command that talks to a model. Returns
 * 1 when argv[*i] was an LLM flag (and advances *i past its value), 0 when
 * it is not one, -1 on a bad value (err set, PRAGMA_E_INPUT). Strings point
 * into argv.
 *   --llm SPEC --base-url URL --temperature T --max-tokens N --seed N
 *   --timeout S --stall-timeout S --exec-timeout S --retries N --no-cache
 *   --stream/--no-stream --prices FILE --record FILE
 *   --budget-calls N --budget-tokens N --budget-cost USD
 */
int pragma_llm_options_flag(struct pragma_llm_options *opt, int argc, char **argv, int *i, struct pragma_err *err);
/* Help text for those flags. */
const char *pragma_llm_options_help(void);

/* The directory of the response cache for these options (created). */
int pragma_llm_cache_dir(const struct pragma_llm_options *opt, struct pragma_buf *out, struct pragma_err *err);

#endif
