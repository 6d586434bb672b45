/*
 * The client: options (flags over environment over config), the spec,
 * send() with cache, budgets, retries and usage accounting, and
 * send_many() on threads.
 */
#include <ctype.h>
#include <signal.h>
#include <errno.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>
#include <unistd.h>

#include "llm_int.h"
#include "pragma/config.h"
#include "pragma/fs.h"
#include "pragma/hash.h"
#include "pragma/log.h"

#define DEFAULT_MAX_TEXT ((size_t)8 << 20)
#define DEFAULT_MAX_RAW ((size_t)64 << 20)

static pthread_once_t curl_once = PTHREAD_ONCE_INIT;
static CURLcode curl_init_rc;

static void curl_init(void)
{
	curl_init_rc = curl_global_init(CURL_GLOBAL_DEFAULT);
}

static char *xstrdup(const char *s)
{
	char *p;

	if (!s)
		return NULL;
	p = strdup(s);
	if (!p)
		abort();
	return p;
}

/* Writing to a peer that hung up (an exec command that did not read its
 * stdin, a TLS peer gone away) raises SIGPIPE, which would kill the
 * process. Block it in this thread around such calls, then discard any
 * that became pending: the write itself reports EPIPE. */
void llm_sigpipe_block(sigset_t *old)
{
	sigset_t set;

	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &set, old);
}

void llm_sigpipe_restore(const sigset_t *old)
{
	sigset_t set;
	struct timespec zero = { 0, 0 };

	sigemptyset(&set);
	sigaddset(&set, SIGPIPE);
	if (!sigismember(old, SIGPIPE))
		while (sigtimedwait(&set, NULL, &zero) > 0)
			;
	pthread_sigmask(SIG_SETMASK, old, NULL);
}

double llm_now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

const char *pragma_llm_fail_name(enum pragma_llm_fail f)
{
	static const char *const names[] = {
		[PRAGMA_LLM_FAIL_NONE] = "none",         [PRAGMA_LLM_FAIL_CONFIG] = "config",
		[PRAGMA_LLM_FAIL_NETWORK] = "network",   [PRAGMA_LLM_FAIL_TIMEOUT] = "timeout",
		[PRAGMA_LLM_FAIL_STALL] = "stall",       [PRAGMA_LLM_FAIL_RATE_LIMIT] = "rate_limit",
		[PRAGMA_LLM_FAIL_SERVER] = "server",     [PRAGMA_LLM_FAIL_AUTH] = "auth",
		[PRAGMA_LLM_FAIL_REQUEST] = "request",   [PRAGMA_LLM_FAIL_TRUNCATED] = "truncated",
		[PRAGMA_LLM_FAIL_MALFORMED] = "malformed", [PRAGMA_LLM_FAIL_TOO_LARGE] = "too_large",
		[PRAGMA_LLM_FAIL_EMPTY] = "empty",       [PRAGMA_LLM_FAIL_REFUSAL] = "refusal",
		[PRAGMA_LLM_FAIL_LENGTH] = "length",     [PRAGMA_LLM_FAIL_EXEC] = "exec",
		[PRAGMA_LLM_FAIL_BUDGET] = "budget",     [PRAGMA_LLM_FAIL_REPLAY_END] = "replay_end",
		[PRAGMA_LLM_FAIL_UNREACHABLE] = "unreachable",
	};

	if ((unsigned)f < sizeof(names) / sizeof(names[0]) && names[f])
		return names[f];
	return "unknown";
}

const char *pragma_llm_fail_class(enum pragma_llm_fail f)
{
	switch (f) {
	case PRAGMA_LLM_FAIL_NONE:
		return "none";
	case PRAGMA_LLM_FAIL_UNREACHABLE:
	case PRAGMA_LLM_FAIL_NETWORK:
		return "unreachable";
	case PRAGMA_LLM_FAIL_TIMEOUT:
	case PRAGMA_LLM_FAIL_STALL:
		return "timeout";
	case PRAGMA_LLM_FAIL_AUTH:
		return "auth";
	case PRAGMA_LLM_FAIL_RATE_LIMIT:
		return "rate_limit";
	case PRAGMA_LLM_FAIL_SERVER:
		return "server";
	case PRAGMA_LLM_FAIL_REQUEST:
		return "request";
	case PRAGMA_LLM_FAIL_MALFORMED:
	case PRAGMA_LLM_FAIL_TRUNCATED:
	case PRAGMA_LLM_FAIL_EMPTY:
	case PRAGMA_LLM_FAIL_TOO_LARGE:
	case PRAGMA_LLM_FAIL_LENGTH:
	case PRAGMA_LLM_FAIL_REFUSAL:
		return "bad_reply";
	case PRAGMA_LLM_FAIL_EXEC:
		return "exec";
	case PRAGMA_LLM_FAIL_CONFIG:
		return "config";
	case PRAGMA_LLM_FAIL_BUDGET:
	case PRAGMA_LLM_FAIL_REPLAY_END:
		return "stop";
	}
	return "unknown";
}

int pragma_llm_fail_retryable(enum pragma_llm_fail f)
{
	switch (f) {
	case PRAGMA_LLM_FAIL_UNREACHABLE:
	case PRAGMA_LLM_FAIL_NETWORK:
	case PRAGMA_LLM_FAIL_TIMEOUT:
	case PRAGMA_LLM_FAIL_STALL:
	case PRAGMA_LLM_FAIL_RATE_LIMIT:
	case PRAGMA_LLM_FAIL_SERVER:
	case PRAGMA_LLM_FAIL_TRUNCATED:
	case PRAGMA_LLM_FAIL_MALFORMED:
	case PRAGMA_LLM_FAIL_EMPTY:
		return 1;
	default:
		return 0;
	}
}

const char *pragma_llm_provider_name(enum pragma_llm_provider p)
{
	switch (p) {
	case PRAGMA_LLM_OPENAI:
		return "openai";
	case PRAGMA_LLM_ANTHROPIC:
		return "anthropic";
	case PRAGMA_LLM_EXEC:
		return "exec";
	case PRAGMA_LLM_REPLAY:
		return "replay";
	}
	return "unknown";
}

void pragma_llm_reply_init(struct pragma_llm_reply *r)
{
	memset(r, 0, sizeof(*r));
	pragma_buf_init(&r->text);
	pragma_buf_init(&r->reasoning);
	pragma_buf_init(&r->diag);
}

void pragma_llm_reply_release(struct pragma_llm_reply *r)
{
	pragma_buf_release(&r->text);
	pragma_buf_release(&r->reasoning);
	pragma_buf_release(&r->diag);
	pragma_llm_reply_init(r);
}

int llm_buf_add_capped(struct pragma_buf *b, const char *s, size_t n, size_t cap)
{
	if (b->len + n > cap)
		return -1;
	pragma_buf_add(b, s, n);
	return 0;
}

size_t llm_request_chars(const struct pragma_llm_request *req)
{
	size_t n = 0;

	for (size_t i = 0; i < req->n_msgs; i++)
		n += strlen(req->msgs[i].content ? req->msgs[i].content : "");
	return n;
}

/* Length of the valid UTF-8 sequence at s (1..4), or 0. */
static size_t utf8_seq(const unsigned char *s, size_t n)
{
	size_t k;
	uint32_t cp;

	if (s[0] < 0x80)
		return 1;
	if ((s[0] & 0xe0) == 0xc0)
		k = 2, cp = s[0] & 0x1f;
	else if ((s[0] & 0xf0) == 0xe0)
		k = 3, cp = s[0] & 0x0f;
	else if ((s[0] & 0xf8) == 0xf0)
		k = 4, cp = s[0] & 0x07;
	else
		return 0;
	if (k > n)
		return 0;
	for (size_t i = 1; i < k; i++) {
		if ((s[i] & 0xc0) != 0x80)
			return 0;
		cp = cp << 6 | (s[i] & 0x3f);
	}
	if ((k == 2 && cp < 0x80) || (k == 3 && cp < 0x800) || (k == 4 && (cp < 0x10000 || cp > 0x10ffff)) ||
	    (cp >= 0xd800 && cp <= 0xdfff))
		return 0;
	return k;
}

static int utf8_valid(const char *s, size_t n)
{
	for (size_t i = 0; i < n;) {
		size_t k = utf8_seq((const unsigned char *)s + i, n - i);
		if (!k)
			return 0;
		i += k;
	}
	return 1;
}

/* Replace bytes that are not UTF-8 (an exec command may print anything). */
static void utf8_fix(struct pragma_buf *b)
{
	for (size_t i = 0; i < b->len;) {
		size_t k = utf8_seq((unsigned char *)b->data + i, b->len - i);
		if (!k) {
			b->data[i] = '?';
			k = 1;
		}
		i += k;
	}
}

/* ---- options ---------------------------------------------------------- */

static const char *env_str(const char *name)
{
	const char *v = getenv(name);

	return v && *v ? v : NULL;
}

/* A setting from the environment, else the config file; *from names the source. */
static const char *setting(const char *env, const char *key, char *from, size_t fromlen)
{
	const char *v = env ? env_str(env) : NULL;

	if (v) {
		snprintf(from, fromlen, "$%s", env);
		return v;
	}
	v = pragma_config_get("llm", key);
	if (v) {
		snprintf(from, fromlen, "config llm.%s", key);
		return v;
	}
	return NULL;
}

/* "~/x" from a config file or the environment means $HOME/x. */
static const char *expand_home(const char *v, struct pragma_buf *tmp)
{
	const char *home = getenv("HOME");

	if (!v || strncmp(v, "~/", 2) || !home || !*home)
		return v;
	pragma_buf_reset(tmp);
	pragma_buf_addf(tmp, "%s/%s", home, v + 2);
	return tmp->data;
}

static int parse_double(const char *v, double *out)
{
	char *end;

	errno = 0;
	*out = strtod(v, &end);
	return end != v && !*end && !errno && isfinite(*out) ? 0 : -1;
}

static int parse_ll(const char *v, long long *out)
{
	char *end;

	errno = 0;
	*out = strtoll(v, &end, 10);
	return end != v && !*end && !errno ? 0 : -1;
}

static int parse_bool(const char *v, int *out)
{
	if (!strcasecmp(v, "1") || !strcasecmp(v, "yes") || !strcasecmp(v, "on") || !strcasecmp(v, "true"))
		*out = 1;
	else if (!strcasecmp(v, "0") || !strcasecmp(v, "no") || !strcasecmp(v, "off") || !strcasecmp(v, "false"))
		*out = 0;
	else
		return -1;
	return 0;
}

/* Fill an int setting given in seconds (or ms) when the option is unset. */
static int resolve_ms(int *field, const char *env, const char *key, double scale, int def, struct pragma_err *err)
{
	char from[96];
	const char *v;
	double d;

	if (*field > 0)
		return 0;
	v = setting(env, key, from, sizeof(from));
	if (!v) {
		*field = def;
		return 0;
	}
	if (parse_double(v, &d) < 0 || d <= 0 || d * scale > 2e9)
		return pragma_err_set(err, PRAGMA_E_INPUT, "%s = '%s' is not a positive number", from, v);
	*field = (int)(d * scale + 0.5);
	if (*field < 1)
		*field = 1;
	return 0;
}

static int resolve_u64(uint64_t *field, const char *env, const char *key, struct pragma_err *err)
{
	char from[96];
	const char *v;
	long long l;

	if (*field)
		return 0;
	v = setting(env, key, from, sizeof(from));
	if (!v)
		return 0;
	if (parse_ll(v, &l) < 0 || l < 0)
		return pragma_err_set(err, PRAGMA_E_INPUT, "%s = '%s' is not a non-negative integer", from, v);
	*field = (uint64_t)l;
	return 0;
}

static int is_reasoning_model(const char *m)
{
	const char *base = strrchr(m, '/');

	base = base ? base + 1 : m;
	return (base[0] == 'o' && isdigit((unsigned char)base[1])) || !strncmp(base, "gpt-5", 5) ||
	       strstr(base, "reasoner") || strstr(base, "-r1") || !strncmp(base, "r1", 2) || strstr(base, "qwq") ||
	       strstr(base, "thinking");
}

static void strip_slash(char *s)
{
	size_t n = strlen(s);

	while (n > 1 && s[n - 1] == '/')
		s[--n] = '\0';
}

static int ends_with(const char *s, const char *suffix)
{
	size_t n = strlen(s), k = strlen(suffix);

	return n >= k && !strcmp(s + n - k, suffix);
}

/* The API key: api_key_env, else PRAGMA_LLM_API_KEY, else the provider's. */
static void resolve_key(struct pragma_llm *c, const char *explicit_env, const char *def_env)
{
	const char *name = explicit_env;

	if (!name)
		name = env_str("PRAGMA_LLM_API_KEY") ? "PRAGMA_LLM_API_KEY" : def_env;
	c->api_key_env = xstrdup(name);
	c->api_key = xstrdup(env_str(name));
}

/* A key goes into a header line: nothing that could end or split it. */
static int check_key(struct pragma_llm *c, struct pragma_err *err)
{
	if (!c->api_key)
		return 0;
	for (const unsigned char *q = (const unsigned char *)c->api_key; *q; q++)
		if (*q < 0x20 || *q >= 0x7f) {
			pragma_err_set(err, PRAGMA_E_ENV, "$%s contains a character an API key cannot hold (a newline?)",
				       c->api_key_env);
			pragma_err_hint(err, "set it to the bare key, e.g. export %s=\"$(tr -d '\\n' < keyfile)\"",
					c->api_key_env);
			return -1;
		}
	return 0;
}

static int is_loopback_url(const char *url)
{
	const char *p = strstr(url, "://");

	p = p ? p + 3 : url;
	return !strncmp(p, "127.", 4) || !strncmp(p, "localhost", 9) || !strncmp(p, "[::1]", 5) ||
	       !strncmp(p, "0.0.0.0", 7);
}

static int parse_spec(struct pragma_llm *c, const char *spec, const char *spec_from, struct pragma_err *err)
{
	const char *colon = strchr(spec, ':');
	size_t k = colon ? (size_t)(colon - spec) : 0;
	const char *rest = colon ? colon + 1 : "";

	if (!colon || !*rest) {
		pragma_err_set(err, PRAGMA_E_INPUT, "bad LLM spec '%s' (from %s)", spec, spec_from);
		pragma_err_hint(err, "write PROVIDER:MODEL, e.g. openai:gpt-4o, anthropic:claude-sonnet-4-5, "
				"exec:'my-agent --flag', replay:session.jsonl");
		return -1;
	}
	for (const unsigned char *q = (const unsigned char *)spec; *q; q++)
		if (*q < 0x20 || *q == 0x7f)
			return pragma_err_set(err, PRAGMA_E_INPUT, "the LLM spec (from %s) contains a control character",
					      spec_from);
	if (!utf8_valid(spec, strlen(spec)))
		return pragma_err_set(err, PRAGMA_E_INPUT, "the LLM spec (from %s) is not valid UTF-8", spec_from);
	c->spec = xstrdup(spec);
	if (k == 6 && !strncmp(spec, "openai", 6)) {
		c->provider = PRAGMA_LLM_OPENAI;
	} else if (k == 9 && !strncmp(spec, "anthropic", 9)) {
		c->provider = PRAGMA_LLM_ANTHROPIC;
	} else if (k == 4 && !strncmp(spec, "exec", 4)) {
		c->provider = PRAGMA_LLM_EXEC;
	} else if (k == 6 && !strncmp(spec, "replay", 6)) {
		c->provider = PRAGMA_LLM_REPLAY;
	} else if ((k == 8 && !strncmp(spec, "deepseek", 8)) || (k == 6 && !strncmp(spec, "ollama", 6)) ||
		   (k == 10 && !strncmp(spec, "openrouter", 10))) {
		/* Shorthands for OpenAI-compatible services: only the default base URL differs. */
		c->provider = PRAGMA_LLM_OPENAI;
	} else {
		pragma_err_set(err, PRAGMA_E_INPUT, "unknown LLM provider '%.*s' in '%s' (from %s)", (int)k, spec, spec,
			       spec_from);
		pragma_err_hint(err, "providers: openai, anthropic, exec, replay (and the openai-compatible "
				"shorthands deepseek, ollama, openrouter)");
		return -1;
	}
	switch (c->provider) {
	case PRAGMA_LLM_EXEC: {
		/* The model's name for records: the command's program name. */
		const char *p = rest;
		while (*p == ' ')
			p++;
		size_t n = strcspn(p, " \t");
		const char *slash = memrchr(p, '/', n);
		if (slash) {
			n -= (size_t)(slash + 1 - p);
			p = slash + 1;
		}
		c->command = xstrdup(rest);
		c->model = strndup(p, n ? n : 4);
		if (!n) {
			free(c->model);
			c->model = xstrdup("exec");
		}
		break;
	}
	case PRAGMA_LLM_REPLAY:
		c->replay_path = xstrdup(rest);
		c->model = xstrdup("replay");
		break;
	default:
		c->model = xstrdup(rest);
		break;
	}
	return 0;
}

const char *pragma_llm_spec_source(const struct pragma_llm_options *o, const char **from)
{
	const char *spec = o ? o->spec : NULL, *f = "--llm";

	if (!spec && (spec = env_str("PRAGMA_LLM")))
		f = "$PRAGMA_LLM";
	if (!spec && (spec = pragma_config_get("llm", "spec")))
		f = "config llm.spec";
	if (!spec && (spec = pragma_config_get(NULL, "llm")))
		f = "config llm";
	if (from)
		*from = spec ? f : NULL;
	return spec;
}

static int resolve(struct pragma_llm *c, const struct pragma_llm_options *o, struct pragma_err *err)
{
	char from[96];
	const char *v, *spec = o->spec, *spec_from = "--llm";
	double d;
	long long l;
	int b;

	spec = pragma_llm_spec_source(o, &spec_from);
	if (!spec) {
		pragma_err_set(err, PRAGMA_E_ENV, "no LLM configured");
		pragma_err_hint(err, "pass --llm PROVIDER:MODEL (e.g. openai:gpt-4o), set PRAGMA_LLM, or put "
				"'llm = ...' in ~/.config/pragma/config; see docs/llm.md");
		return -1;
	}
	if (parse_spec(c, spec, spec_from, err) < 0)
		return -1;

	/* Base URL and key. */
	const char *base = o->base_url;
	if (!base)
		base = setting("PRAGMA_LLM_BASE_URL", "base_url", from, sizeof(from));
	const char *key_env = o->api_key_env ? o->api_key_env : pragma_config_get("llm", "api_key_env");
	if (c->provider == PRAGMA_LLM_OPENAI) {
		const char *def_key = "OPENAI_API_KEY";
		if (!base) {
			if (!strncmp(c->spec, "deepseek:", 9))
				base = "https://api.deepseek.com/v1";
			else if (!strncmp(c->spec, "ollama:", 7))
				base = "http://127.0.0.1:11434/v1";
			else if (!strncmp(c->spec, "openrouter:", 11))
				base = "https://openrouter.ai/api/v1";
			else
				base = "https://api.openai.com/v1";
		}
		if (strstr(base, "deepseek.com"))
			def_key = "DEEPSEEK_API_KEY";
		else if (strstr(base, "openrouter.ai"))
			def_key = "OPENROUTER_API_KEY";
		c->base_url = xstrdup(base);
		strip_slash(c->base_url);
		resolve_key(c, key_env, def_key);
		c->url = malloc(strlen(c->base_url) + 32);
		if (!c->url)
			abort();
		sprintf(c->url, "%s%s", c->base_url, ends_with(c->base_url, "/chat/completions") ? "" : "/chat/completions");
		c->max_tokens_param_new = strstr(c->base_url, "api.openai.com") && is_reasoning_model(c->model);
	} else if (c->provider == PRAGMA_LLM_ANTHROPIC) {
		if (!base)
			base = "https://api.anthropic.com";
		c->base_url = xstrdup(base);
		strip_slash(c->base_url);
		resolve_key(c, key_env, "ANTHROPIC_API_KEY");
		c->url = malloc(strlen(c->base_url) + 32);
		if (!c->url)
			abort();
		sprintf(c->url, "%s%s", c->base_url,
			ends_with(c->base_url, "/messages") ? "" : ends_with(c->base_url, "/v1") ? "/messages" : "/v1/messages");
	}
	if (check_key(c, err) < 0)
		return -1;
	if ((c->provider == PRAGMA_LLM_OPENAI || c->provider == PRAGMA_LLM_ANTHROPIC) && !c->api_key &&
	    !is_loopback_url(c->base_url) && (strstr(c->base_url, "api.openai.com") ||
					       strstr(c->base_url, "anthropic.com") ||
					       strstr(c->base_url, "deepseek.com") || strstr(c->base_url, "openrouter.ai"))) {
		pragma_err_set(err, PRAGMA_E_ENV, "no API key for %s: $%s is not set", c->base_url, c->api_key_env);
		pragma_err_hint(err, "export %s=... (or PRAGMA_LLM_API_KEY); keys come from the environment, "
				"never from files in the repository", c->api_key_env);
		return -1;
	}

	/* Model parameters. */
	c->temperature = o->temperature;
	if (c->temperature < 0 && (v = setting("PRAGMA_LLM_TEMPERATURE", "temperature", from, sizeof(from)))) {
		if (parse_double(v, &d) < 0 || d < 0 || d > 2)
			return pragma_err_set(err, PRAGMA_E_INPUT, "%s = '%s' is not a temperature in [0, 2]", from, v);
		c->temperature = d;
	}
	c->max_tokens = o->max_tokens;
	if (c->max_tokens <= 0 && (v = setting("PRAGMA_LLM_MAX_TOKENS", "max_tokens", from, sizeof(from)))) {
		if (parse_ll(v, &l) < 0 || l <= 0 || l > 10000000)
			return pragma_err_set(err, PRAGMA_E_INPUT, "%s = '%s' is not a token count", from, v);
		c->max_tokens = (int)l;
	}
	if (c->max_tokens <= 0)
		c->max_tokens = is_reasoning_model(c->model) ? 32768 : 8192;
	c->has_seed = o->has_seed;
	c->seed = o->seed;
	if (!c->has_seed && (v = setting("PRAGMA_LLM_SEED", "seed", from, sizeof(from)))) {
		if (parse_ll(v, &l) < 0)
			return pragma_err_set(err, PRAGMA_E_INPUT, "%s = '%s' is not an integer seed", from, v);
		c->seed = l;
		c->has_seed = 1;
	}
	c->stream = o->stream;
	if (c->stream < 0 && (v = setting("PRAGMA_LLM_STREAM", "stream", from, sizeof(from)))) {
		if (parse_bool(v, &b) < 0)
			return pragma_err_set(err, PRAGMA_E_INPUT, "%s = '%s' is not on/off", from, v);
		c->stream = b;
	}
	if (c->stream < 0)
		c->stream = 1;

	/* Robustness. */
	c->timeout_ms = o->timeout_ms;
	c->connect_timeout_ms = o->connect_timeout_ms;
	c->stall_timeout_ms = o->stall_timeout_ms;
	c->exec_timeout_ms = o->exec_timeout_ms;
	c->backoff_ms = o->backoff_ms;
	c->backoff_max_ms = o->backoff_max_ms;
	if (resolve_ms(&c->timeout_ms, "PRAGMA_LLM_TIMEOUT", "timeout", 1000, 600000, err) < 0 ||
	    resolve_ms(&c->connect_timeout_ms, "PRAGMA_LLM_CONNECT_TIMEOUT", "connect_timeout", 1000, 10000, err) < 0 ||
	    resolve_ms(&c->stall_timeout_ms, "PRAGMA_LLM_STALL_TIMEOUT", "stall_timeout", 1000, 120000, err) < 0 ||
	    resolve_ms(&c->exec_timeout_ms, "PRAGMA_LLM_EXEC_TIMEOUT", "exec_timeout", 1000, 1800000, err) < 0 ||
	    resolve_ms(&c->backoff_ms, "PRAGMA_LLM_BACKOFF_MS", "backoff_ms", 1, 1000, err) < 0 ||
	    resolve_ms(&c->backoff_max_ms, "PRAGMA_LLM_BACKOFF_MAX_MS", "backoff_max_ms", 1, 60000, err) < 0)
		return -1;
	c->retry_after_max_ms = o->retry_after_max_ms > 0 ? o->retry_after_max_ms : 300000;
	c->retries = o->retries;
	if (c->retries < 0 && (v = setting("PRAGMA_LLM_RETRIES", "retries", from, sizeof(from)))) {
		if (parse_ll(v, &l) < 0 || l < 0 || l > 100)
			return pragma_err_set(err, PRAGMA_E_INPUT, "%s = '%s' is not a retry count (0-100)", from, v);
		c->retries = (int)l;
	}
	if (c->retries < 0)
		c->retries = 5;
	c->cache = o->cache;
	if (c->cache < 0 && (v = setting("PRAGMA_LLM_CACHE", "cache", from, sizeof(from)))) {
		if (parse_bool(v, &b) < 0)
			return pragma_err_set(err, PRAGMA_E_INPUT, "%s = '%s' is not on/off", from, v);
		c->cache = b;
	}
	if (c->cache < 0)
		c->cache = 1;
	if (c->provider == PRAGMA_LLM_REPLAY)
		c->cache = 0; /* already local */
	c->max_text = o->max_response_bytes ? o->max_response_bytes : DEFAULT_MAX_TEXT;
	c->max_raw = o->max_response_bytes ? o->max_response_bytes * 4 + 4096 : DEFAULT_MAX_RAW;

	/* Budgets. */
	c->budget_calls = o->budget_calls;
	c->budget_tokens = o->budget_tokens;
	c->budget_cost = o->budget_cost;
	if (resolve_u64(&c->budget_calls, "PRAGMA_LLM_BUDGET_CALLS", "budget_calls", err) < 0 ||
	    resolve_u64(&c->budget_tokens, "PRAGMA_LLM_BUDGET_TOKENS", "budget_tokens", err) < 0)
		return -1;
	if (c->budget_cost <= 0 && (v = setting("PRAGMA_LLM_BUDGET_COST", "budget_cost", from, sizeof(from)))) {
		if (parse_double(v, &d) < 0 || d < 0)
			return pragma_err_set(err, PRAGMA_E_INPUT, "%s = '%s' is not an amount in USD", from, v);
		c->budget_cost = d;
	}

	/* Files. */
	struct pragma_buf path = PRAGMA_BUF_INIT;
	if (c->cache) {
		if (pragma_llm_cache_dir(o, &path, err) < 0) {
			pragma_buf_release(&path);
			return -1;
		}
		c->cache_dir = pragma_buf_detach(&path, NULL);
	}
	v = o->record_path ? o->record_path : setting("PRAGMA_LLM_RECORD", "record", from, sizeof(from));
	c->record_path = xstrdup(expand_home(v, &path));
	c->anthropic_version = xstrdup(o->anthropic_version ? o->anthropic_version : "2023-06-01");
	v = o->price_file ? o->price_file : setting("PRAGMA_LLM_PRICES", "price_file", from, sizeof(from));
	if (v && llm_prices_load(c, expand_home(v, &path), err) < 0) {
		pragma_buf_release(&path);
		return -1;
	}
	pragma_buf_release(&path);
	if (c->budget_cost > 0) {
		double in, out;
		if (!pragma_llm_price_of(c, c->model, &in, &out) && c->provider != PRAGMA_LLM_REPLAY)
			pragma_warn("no price known for model '%s': the cost budget cannot be enforced "
				    "(give one with --prices FILE)", c->model);
	}
	return 0;
}

int pragma_llm_cache_dir(const struct pragma_llm_options *opt, struct pragma_buf *out, struct pragma_err *err)
{
	struct pragma_buf tmp = PRAGMA_BUF_INIT;
	char from[96];
	const char *dir = opt && opt->cache_dir ? opt->cache_dir :
			  setting("PRAGMA_LLM_CACHE_DIR", "cache_dir", from, sizeof(from));

	pragma_buf_reset(out);
	if (dir) {
		pragma_buf_adds(out, expand_home(dir, &tmp));
		pragma_buf_release(&tmp);
	} else {
		if (pragma_cache_dir(out, err) < 0)
			return -1;
		pragma_buf_adds(out, "/llm");
	}
	return pragma_mkdir_p(out->data, 0755, err);
}

static void build_describe(struct pragma_llm *c)
{
	struct pragma_buf b = PRAGMA_BUF_INIT;

	switch (c->provider) {
	case PRAGMA_LLM_OPENAI:
	case PRAGMA_LLM_ANTHROPIC:
		pragma_buf_addf(&b, "%s:%s at %s", pragma_llm_provider_name(c->provider), c->model, c->url);
		if (c->api_key)
			pragma_buf_addf(&b, " (key from $%s)", c->api_key_env);
		else
			pragma_buf_adds(&b, " (no key)");
		break;
	case PRAGMA_LLM_EXEC:
		pragma_buf_addf(&b, "exec:%s (deadline %d s)", c->command, c->exec_timeout_ms / 1000);
		break;
	case PRAGMA_LLM_REPLAY:
		pragma_buf_addf(&b, "replay:%s (%zu recorded replies)", c->replay_path, c->n_replay);
		break;
	}
	c->describe = pragma_buf_detach(&b, NULL);
}

int pragma_llm_open(struct pragma_llm **out, const struct pragma_llm_options *opt, struct pragma_err *err)
{
	struct pragma_llm_options defaults = PRAGMA_LLM_OPTIONS_INIT;
	struct pragma_llm *c;

	*out = NULL;
	if (!opt)
		opt = &defaults;
	pthread_once(&curl_once, curl_init);
	if (curl_init_rc != CURLE_OK)
		return pragma_err_set(err, PRAGMA_E_ENV, "libcurl failed to initialize: %s",
				      curl_easy_strerror(curl_init_rc));
	c = calloc(1, sizeof(*c));
	if (!c)
		abort();
	pthread_mutex_init(&c->lock, NULL);
	llm_http_share_init(c);
	if (resolve(c, opt, err) < 0)
		goto fail;
	if (c->provider == PRAGMA_LLM_REPLAY && llm_replay_load(c, err) < 0)
		goto fail;
	build_describe(c);
	*out = c;
	return 0;
fail:
	pragma_llm_free(c);
	return -1;
}

void pragma_llm_free(struct pragma_llm *c)
{
	if (!c)
		return;
	llm_http_share_free(c);
	llm_replay_free(c);
	llm_prices_free(c);
	free(c->spec);
	free(c->model);
	free(c->base_url);
	free(c->url);
	if (c->api_key) {
		explicit_bzero(c->api_key, strlen(c->api_key));
		free(c->api_key);
	}
	free(c->api_key_env);
	free(c->describe);
	free(c->command);
	free(c->replay_path);
	free(c->cache_dir);
	free(c->record_path);
	free(c->anthropic_version);
	pthread_mutex_destroy(&c->lock);
	free(c);
}

enum pragma_llm_provider pragma_llm_provider_of(const struct pragma_llm *c)
{
	return c->provider;
}

const char *pragma_llm_model(const struct pragma_llm *c)
{
	return c->model;
}

const char *pragma_llm_describe(const struct pragma_llm *c)
{
	return c->describe;
}

char *pragma_llm_settings_json(const struct pragma_llm *c)
{
	json_t *o = json_object();
	char *s;

	json_object_set_new(o, "provider", json_string(pragma_llm_provider_name(c->provider)));
	json_object_set_new(o, "model", json_string(c->model));
	if (c->url)
		json_object_set_new(o, "url", json_string(c->url));
	if (c->api_key_env && (c->provider == PRAGMA_LLM_OPENAI || c->provider == PRAGMA_LLM_ANTHROPIC))
		json_object_set_new(o, "key_env", c->api_key ? json_string(c->api_key_env) : json_null());
	if (c->command)
		json_object_set_new(o, "command", json_string(c->command));
	if (c->replay_path)
		json_object_set_new(o, "replay", json_string(c->replay_path));
	json_object_set_new(o, "temperature", c->temperature >= 0 ? json_real(c->temperature) : json_null());
	json_object_set_new(o, "max_tokens", json_integer(c->max_tokens));
	json_object_set_new(o, "seed", c->has_seed ? json_integer(c->seed) : json_null());
	json_object_set_new(o, "stream", json_boolean(c->stream));
	json_object_set_new(o, "timeout_ms", json_integer(c->timeout_ms));
	json_object_set_new(o, "connect_timeout_ms", json_integer(c->connect_timeout_ms));
	json_object_set_new(o, "stall_timeout_ms", json_integer(c->stall_timeout_ms));
	json_object_set_new(o, "exec_timeout_ms", json_integer(c->exec_timeout_ms));
	json_object_set_new(o, "retries", json_integer(c->retries));
	json_object_set_new(o, "backoff_ms", json_integer(c->backoff_ms));
	json_object_set_new(o, "backoff_max_ms", json_integer(c->backoff_max_ms));
	json_object_set_new(o, "cache", json_boolean(c->cache));
	json_object_set_new(o, "budget_calls", json_integer((json_int_t)c->budget_calls));
	json_object_set_new(o, "budget_tokens", json_integer((json_int_t)c->budget_tokens));
	json_object_set_new(o, "budget_cost", json_real(c->budget_cost));
	s = json_dumps(o, JSON_COMPACT | JSON_PRESERVE_ORDER);
	json_decref(o);
	return s;
}

/* ---- requests --------------------------------------------------------- */

static int valid_role(const char *r)
{
	return r && (!strcmp(r, "system") || !strcmp(r, "user") || !strcmp(r, "assistant"));
}

static int check_request(const struct pragma_llm_request *req, struct pragma_err *err)
{
	if (!req || !req->msgs || !req->n_msgs)
		return pragma_err_set(err, PRAGMA_E_INPUT, "an LLM request needs at least one message");
	if (!req->agent || !*req->agent || strlen(req->agent) > 64)
		return pragma_err_set(err, PRAGMA_E_INPUT, "an LLM request needs an agent role (coder, conductor, ...)");
	for (const char *p = req->agent; *p; p++)
		if (!isalnum((unsigned char)*p) && !strchr("_-.", *p))
			return pragma_err_set(err, PRAGMA_E_INPUT, "bad agent role '%s' (letters, digits, _ - . only)",
					      req->agent);
	for (size_t i = 0; i < req->n_msgs; i++) {
		if (!valid_role(req->msgs[i].role))
			return pragma_err_set(err, PRAGMA_E_INPUT, "message %zu has role '%s' (system, user or assistant)",
					      i, req->msgs[i].role ? req->msgs[i].role : "(null)");
		if (!req->msgs[i].content)
			return pragma_err_set(err, PRAGMA_E_INPUT, "message %zu has no content", i);
		if (!utf8_valid(req->msgs[i].content, strlen(req->msgs[i].content)))
			return pragma_err_set(err, PRAGMA_E_INPUT, "message %zu is not valid UTF-8", i);
	}
	return 0;
}

static double req_temperature(struct pragma_llm *c, const struct pragma_llm_request *req)
{
	return req->temperature >= 0 ? req->temperature : c->temperature;
}

static int req_max_tokens(struct pragma_llm *c, const struct pragma_llm_request *req)
{
	return req->max_tokens > 0 ? req->max_tokens : c->max_tokens;
}

json_t *llm_request_json(struct pragma_llm *c, const struct pragma_llm_request *req)
{
	json_t *o = json_object(), *msgs = json_array();
	double t = req_temperature(c, req);

	json_object_set_new(o, "model", json_string(c->model));
	for (size_t i = 0; i < req->n_msgs; i++)
		json_array_append_new(msgs, json_pack("{s:s, s:s}", "role", req->msgs[i].role, "content",
						      req->msgs[i].content));
	json_object_set_new(o, "messages", msgs);
	if (t >= 0)
		json_object_set_new(o, "temperature", json_real(t));
	json_object_set_new(o, c->max_tokens_param_new ? "max_completion_tokens" : "max_tokens",
			    json_integer(req_max_tokens(c, req)));
	if (c->has_seed)
		json_object_set_new(o, "seed", json_integer(c->seed));
	return o;
}

int pragma_llm_request_hash(struct pragma_llm *c, const struct pragma_llm_request *req, char out[65],
			    struct pragma_err *err)
{
	struct pragma_sha256 s;
	char num[64];
	double t;

	if (check_request(req, err) < 0)
		return -1;
	pragma_sha256_init(&s);
#define FIELD(str) pragma_sha256_field(&s, (str), strlen(str))
	FIELD("pragma-llm-request-v1");
	FIELD(pragma_llm_provider_name(c->provider));
	FIELD(c->url ? c->url : c->command ? c->command : "");
	FIELD(c->model);
	FIELD(req->agent);
	snprintf(num, sizeof(num), "sample=%d", req->sample);
	FIELD(num);
	snprintf(num, sizeof(num), "n=%zu", req->n_msgs);
	FIELD(num);
	for (size_t i = 0; i < req->n_msgs; i++) {
		FIELD(req->msgs[i].role);
		FIELD(req->msgs[i].content);
	}
	t = req_temperature(c, req);
	if (t >= 0)
		snprintf(num, sizeof(num), "temperature=%.6g", t);
	else
		snprintf(num, sizeof(num), "temperature=default");
	FIELD(num);
	snprintf(num, sizeof(num), "max_tokens=%d", req_max_tokens(c, req));
	FIELD(num);
	if (c->has_seed)
		snprintf(num, sizeof(num), "seed=%lld", c->seed);
	else
		snprintf(num, sizeof(num), "seed=none");
	FIELD(num);
#undef FIELD
	pragma_sha256_hex(&s, out);
	return 0;
}

/* ---- send ------------------------------------------------------------- */

static uint64_t rng_next(uint64_t *s)
{
	uint64_t x = *s;

	x ^= x << 13;
	x ^= x >> 7;
	x ^= x << 17;
	return *s = x;
}

static void sleep_ms(double ms)
{
	struct timespec ts;

	if (ms <= 0)
		return;
	ts.tv_sec = (time_t)(ms / 1000);
	ts.tv_nsec = (long)((ms - ts.tv_sec * 1000.0) * 1e6);
	while (nanosleep(&ts, &ts) < 0 && errno == EINTR)
		;
}

/* base*2^n + jitter in [0, base), capped. */
static double backoff_ms(struct pragma_llm *c, int n, uint64_t *rng)
{
	double d = c->backoff_ms;

	for (int i = 0; i < n && d < c->backoff_max_ms; i++)
		d *= 2;
	d += (double)(rng_next(rng) % 1000) / 1000.0 * c->backoff_ms;
	return d > c->backoff_max_ms ? c->backoff_max_ms : d;
}

/* A leading <think>…</think> (R1-style models served without a reasoning
 * parser) is reasoning, not answer. */
static void split_think(struct pragma_llm_reply *rep)
{
	const char *s = rep->text.data;
	size_t lead = 0;

	while (lead < rep->text.len && isspace((unsigned char)s[lead]))
		lead++;
	if (strncmp(s + lead, "<think>", 7))
		return;
	const char *end = strstr(s + lead + 7, "</think>");
	if (!end)
		return;
	if (!rep->reasoning.len)
		pragma_buf_add(&rep->reasoning, s + lead + 7, (size_t)(end - (s + lead + 7)));
	end += 8;
	while (*end && isspace((unsigned char)*end))
		end++;
	size_t rest = rep->text.len - (size_t)(end - s);
	memmove(rep->text.data, end, rest);
	pragma_buf_setlen(&rep->text, rest);
}

static int is_blank(const struct pragma_buf *b)
{
	for (size_t i = 0; i < b->len; i++)
		if (!isspace((unsigned char)b->data[i]))
			return 0;
	return 1;
}

/* Checks common to every provider once a response parsed. */
static enum pragma_llm_fail finish_reply(struct pragma_llm *c, const struct pragma_llm_request *req,
					 struct pragma_llm_reply *rep, struct pragma_err *err)
{
	utf8_fix(&rep->text);
	utf8_fix(&rep->reasoning);
	split_think(rep);
	if (!strcmp(rep->finish_reason, "length"))
		rep->truncated = 1;
	if (is_blank(&rep->text)) {
		if (rep->truncated) {
			pragma_err_set(err, PRAGMA_E_ENV, "%s spent all %d tokens before answering (%zu characters of "
				       "reasoning, no answer)", c->model, req_max_tokens(c, req), rep->reasoning.len);
			pragma_err_hint(err, "raise --max-tokens");
			return PRAGMA_LLM_FAIL_LENGTH;
		}
		pragma_err_set(err, PRAGMA_E_ENV, "%s returned an empty reply (finish_reason '%s')", c->model,
			       rep->finish_reason[0] ? rep->finish_reason : "none");
		return PRAGMA_LLM_FAIL_EMPTY;
	}
	if (!rep->prompt_tokens && !rep->completion_tokens) {
		rep->prompt_tokens = (llm_request_chars(req) + 3) / 4;
		rep->completion_tokens = (rep->text.len + rep->reasoning.len + 3) / 4;
		rep->estimated = 1;
	}
	return PRAGMA_LLM_FAIL_NONE;
}

static double price_cost(struct pragma_llm *c, const struct pragma_llm_reply *rep, int *known)
{
	double in = 0, out = 0;

	*known = pragma_llm_price_of(c, c->model, &in, &out) || pragma_llm_price_of(c, rep->model, &in, &out);
	return (rep->prompt_tokens * in + rep->completion_tokens * out) / 1e6;
}

/* Under c->lock. */
static int budget_spent(struct pragma_llm *c, struct pragma_err *err)
{
	const struct pragma_llm_usage *u = &c->usage;

	if (c->budget_calls && u->calls + c->inflight >= c->budget_calls) {
		pragma_err_set(err, PRAGMA_E_NEGATIVE, "LLM call budget reached: %llu of %llu calls made",
			       (unsigned long long)u->calls, (unsigned long long)c->budget_calls);
		pragma_err_hint(err, "raise --budget-calls to go on");
		return 1;
	}
	if (c->budget_tokens && u->prompt_tokens + u->completion_tokens >= c->budget_tokens) {
		pragma_err_set(err, PRAGMA_E_NEGATIVE, "LLM token budget reached: %llu of %llu tokens used",
			       (unsigned long long)(u->prompt_tokens + u->completion_tokens),
			       (unsigned long long)c->budget_tokens);
		pragma_err_hint(err, "raise --budget-tokens to go on");
		return 1;
	}
	if (c->budget_cost > 0 && u->cost >= c->budget_cost) {
		pragma_err_set(err, PRAGMA_E_NEGATIVE, "LLM cost budget reached: $%.4f of $%.4f spent", u->cost,
			       c->budget_cost);
		pragma_err_hint(err, "raise --budget-cost to go on");
		return 1;
	}
	return 0;
}

/* Tokens the provider reported for one attempt are billed whether or not
 * the attempt succeeded; under c->lock. */
static void account_tokens(struct pragma_llm *c, const struct pragma_llm_reply *rep)
{
	int known;
	double cost = price_cost(c, rep, &known);

	c->usage.prompt_tokens += rep->prompt_tokens;
	c->usage.completion_tokens += rep->completion_tokens;
	c->usage.reasoning_tokens += rep->reasoning_tokens;
	c->usage.cost += cost;
	if (!known && (rep->prompt_tokens || rep->completion_tokens))
		c->usage.cost_unknown = 1;
}

static void reset_attempt(struct pragma_llm_reply *rep)
{
	pragma_buf_reset(&rep->text);
	pragma_buf_reset(&rep->reasoning);
	pragma_buf_reset(&rep->diag);
	rep->finish_reason[0] = '\0';
	rep->truncated = 0;
	rep->prompt_tokens = rep->completion_tokens = rep->reasoning_tokens = 0;
	rep->estimated = 0;
	rep->http_status = 0;
	rep->fail = PRAGMA_LLM_FAIL_NONE;
}

static enum pragma_llm_fail attempt(struct pragma_llm *c, const struct pragma_llm_request *req,
				    struct pragma_llm_reply *rep, double *retry_after, struct pragma_err *err)
{
	switch (c->provider) {
	case PRAGMA_LLM_OPENAI:
		return llm_openai_attempt(c, req, rep, retry_after, err);
	case PRAGMA_LLM_ANTHROPIC:
		return llm_anthropic_attempt(c, req, rep, retry_after, err);
	case PRAGMA_LLM_EXEC:
		return llm_exec_attempt(c, req, rep, retry_after, err);
	case PRAGMA_LLM_REPLAY:
		break;
	}
	pragma_err_set(err, PRAGMA_E_INTERNAL, "no attempt function for this provider");
	return PRAGMA_LLM_FAIL_CONFIG;
}

static void record(struct pragma_llm *c, const struct pragma_llm_request *req, const struct pragma_llm_reply *rep)
{
	struct pragma_err e = PRAGMA_ERR_INIT;

	if (!c->record_path)
		return;
	pthread_mutex_lock(&c->lock);
	if (pragma_llm_record_append(c->record_path, req->agent, req->attempt, rep, &e) < 0)
		pragma_warn("cannot record the LLM call: %s", e.msg);
	pthread_mutex_unlock(&c->lock);
}

int pragma_llm_send(struct pragma_llm *c, const struct pragma_llm_request *req, struct pragma_llm_reply *rep,
		    struct pragma_err *err)
{
	double t0 = llm_now_ms(), retry_after = -1;
	enum pragma_llm_fail f = PRAGMA_LLM_FAIL_NONE;
	uint64_t rng = (uint64_t)t0 * 2654435761u ^ (uint64_t)(uintptr_t)rep ^ (uint64_t)pthread_self();
	struct pragma_err local = PRAGMA_ERR_INIT;
	int rc;

	if (!err)
		err = &local;

	pragma_buf_release(&rep->text);
	pragma_buf_release(&rep->reasoning);
	pragma_buf_release(&rep->diag);
	pragma_llm_reply_init(rep);
	snprintf(rep->provider, sizeof(rep->provider), "%s", pragma_llm_provider_name(c->provider));
	snprintf(rep->model, sizeof(rep->model), "%s", c->model);
	if (pragma_llm_request_hash(c, req, rep->request_hash, err) < 0) {
		rep->fail = PRAGMA_LLM_FAIL_CONFIG;
		return -1;
	}
	if (!rng)
		rng = 88172645463325252ull;

	pthread_mutex_lock(&c->lock);
	c->usage.requests++;
	pthread_mutex_unlock(&c->lock);

	if (c->cache && llm_cache_get(c, rep->request_hash, rep) == 0) {
		pragma_info("%s request (attempt %d) answered from the cache", req->agent, req->attempt);
		rep->cached = 1;
		rep->cost = 0;
		rep->latency_ms = rep->elapsed_ms = llm_now_ms() - t0;
		pthread_mutex_lock(&c->lock);
		c->usage.cached++;
		pthread_mutex_unlock(&c->lock);
		record(c, req, rep);
		return 0;
	}

	pthread_mutex_lock(&c->lock);
	if (budget_spent(c, err)) {
		c->usage.stopped++;
		pthread_mutex_unlock(&c->lock);
		rep->fail = PRAGMA_LLM_FAIL_BUDGET;
		return PRAGMA_LLM_STOP;
	}
	if (c->provider == PRAGMA_LLM_REPLAY) {
		rc = llm_replay_next(c, req, rep, err);
		if (rc == 0) {
			c->usage.calls++;
			c->usage.prompt_tokens += rep->prompt_tokens;
			c->usage.completion_tokens += rep->completion_tokens;
			c->usage.reasoning_tokens += rep->reasoning_tokens;
			c->usage.cost += rep->cost;
			c->usage.estimated_calls += rep->estimated != 0;
		} else {
			c->usage.stopped++;
		}
		pthread_mutex_unlock(&c->lock);
		rep->latency_ms = rep->elapsed_ms = llm_now_ms() - t0;
		if (rc == 0)
			record(c, req, rep);
		return rc;
	}
	c->inflight++;
	pthread_mutex_unlock(&c->lock);

	pragma_info("%s request (attempt %d) to %s: %zu characters", req->agent, req->attempt, c->describe ? c->describe : c->model,
		    llm_request_chars(req));
	for (int n = 0;; n++) {
		double ta = llm_now_ms();

		reset_attempt(rep);
		retry_after = -1;
		pragma_err_clear(err);
		f = attempt(c, req, rep, &retry_after, err);
		if (f == PRAGMA_LLM_FAIL_NONE)
			f = finish_reply(c, req, rep, err);
		rep->latency_ms = llm_now_ms() - ta;
		rep->fail = f;
		pthread_mutex_lock(&c->lock);
		account_tokens(c, rep);
		pthread_mutex_unlock(&c->lock);
		if (f == PRAGMA_LLM_FAIL_NONE || !pragma_llm_fail_retryable(f) || n >= c->retries)
			break;
		double wait = backoff_ms(c, n, &rng);
		if (retry_after >= 0) {
			double ra = retry_after > c->retry_after_max_ms ? c->retry_after_max_ms : retry_after;
			if (ra > wait)
				wait = ra;
		}
		/* Said as it happens: a dead server must not look like a slow one. */
		pragma_warn("%s request to %s failed (%s): %s; retry %d of %d in %.1f s", req->agent, c->model,
			    pragma_llm_fail_name(f), err->msg, n + 1, c->retries, wait / 1000);
		sleep_ms(wait);
		rep->retries++;
	}
	rep->elapsed_ms = llm_now_ms() - t0;
	utf8_fix(&rep->diag);

	int known = 0;
	if (f == PRAGMA_LLM_FAIL_NONE) {
		rep->cost = price_cost(c, rep, &known);
		rep->cost_known = known;
	}
	pthread_mutex_lock(&c->lock);
	c->inflight--;
	c->usage.retries += (uint64_t)rep->retries;
	if (f == PRAGMA_LLM_FAIL_NONE) {
		c->usage.calls++;
		c->usage.latency_ms += rep->latency_ms;
		c->usage.estimated_calls += rep->estimated != 0;
	} else {
		c->usage.failed++;
	}
	pthread_mutex_unlock(&c->lock);
	if (f != PRAGMA_LLM_FAIL_NONE) {
		if (rep->retries)
			pragma_err_prefix(err, "after %d attempts over %.0f s", rep->retries + 1, rep->elapsed_ms / 1000);
		return -1;
	}
	pragma_info("%s request (attempt %d) answered in %.1f s: %llu prompt + %llu completion tokens%s", req->agent,
		    req->attempt, rep->elapsed_ms / 1000, (unsigned long long)rep->prompt_tokens,
		    (unsigned long long)rep->completion_tokens, rep->estimated ? " (estimated)" : "");
	if (c->cache)
		llm_cache_put(c, rep->request_hash, rep);
	record(c, req, rep);
	return 0;
}

struct many_ctx {
	struct pragma_llm *c;
	struct pragma_llm_job *jobs;
	size_t n, next;
	pthread_mutex_t lock;
};

static void *many_worker(void *arg)
{
	struct many_ctx *m = arg;

	for (;;) {
		size_t i;
		pthread_mutex_lock(&m->lock);
		i = m->next++;
		pthread_mutex_unlock(&m->lock);
		if (i >= m->n)
			break;
		struct pragma_llm_job *j = &m->jobs[i];
		pragma_llm_reply_init(&j->reply);
		pragma_err_clear(&j->err);
		j->rc = pragma_llm_send(m->c, j->req, &j->reply, &j->err);
	}
	return NULL;
}

size_t pragma_llm_send_many(struct pragma_llm *c, struct pragma_llm_job *jobs, size_t n, int parallel)
{
	struct many_ctx m = { .c = c, .jobs = jobs, .n = n };
	pthread_t *th;
	size_t ok = 0;
	int started = 0;

	pthread_mutex_init(&m.lock, NULL);
	if (parallel < 1)
		parallel = 1;
	if ((size_t)parallel > n)
		parallel = n ? (int)n : 1;
	th = calloc((size_t)parallel, sizeof(*th));
	if (!th)
		abort();
	for (int t = 1; t < parallel; t++)
		if (pthread_create(&th[started], NULL, many_worker, &m) == 0)
			started++;
	many_worker(&m); /* this thread works too */
	for (int t = 0; t < started; t++)
		pthread_join(th[t], NULL);
	free(th);
	pthread_mutex_destroy(&m.lock);
	for (size_t i = 0; i < n; i++)
		ok += jobs[i].rc == 0;
	return ok;
}

void pragma_llm_usage_get(struct pragma_llm *c, struct pragma_llm_usage *out)
{
	pthread_mutex_lock(&c->lock);
	*out = c->usage;
	pthread_mutex_unlock(&c->lock);
}

/* ---- command-line flags ----------------------------------------------- */

static const char *flag_value(int argc, char **argv, int *i, const char *name, struct pragma_err *err)
{
	const char *a = argv[*i];
	size_t k = strlen(name);

	if (a[k] == '=')
		return a + k + 1;
	if (*i + 1 >= argc) {
		pragma_err_set(err, PRAGMA_E_INPUT, "%s needs a value", name);
		return NULL;
	}
	return argv[++*i];
}

static int flag_is(const char *a, const char *name)
{
	size_t k = strlen(name);

	return !strncmp(a, name, k) && (a[k] == '\0' || a[k] == '=');
}

int pragma_llm_options_flag(struct pragma_llm_options *o, int argc, char **argv, int *i, struct pragma_err *err)
{
	static const char *const with_value[] = {
		"--llm", "--base-url", "--temperature", "--max-tokens", "--seed", "--timeout", "--stall-timeout",
		"--exec-timeout", "--retries", "--prices", "--record", "--budget-calls", "--budget-tokens",
		"--budget-cost", "--connect-timeout", "--backoff-ms", "--cache-dir",
	};
	const char *a = argv[*i], *v = NULL, *name = NULL;
	double d;
	long long l;

	if (!strcmp(a, "--no-cache")) {
		o->cache = 0;
		return 1;
	}
	if (!strcmp(a, "--cache")) {
		o->cache = 1;
		return 1;
	}
	if (!strcmp(a, "--stream")) {
		o->stream = 1;
		return 1;
	}
	if (!strcmp(a, "--no-stream")) {
		o->stream = 0;
		return 1;
	}
	for (size_t k = 0; k < sizeof(with_value) / sizeof(with_value[0]); k++)
		if (flag_is(a, with_value[k]))
			name = with_value[k];
	if (!name)
		return 0;
	if (!(v = flag_value(argc, argv, i, name, err)))
		return -1;
	if (!strcmp(name, "--llm"))
		o->spec = v;
	else if (!strcmp(name, "--base-url"))
		o->base_url = v;
	else if (!strcmp(name, "--prices"))
		o->price_file = v;
	else if (!strcmp(name, "--record"))
		o->record_path = v;
	else if (!strcmp(name, "--cache-dir"))
		o->cache_dir = v;
	else if (!strcmp(name, "--temperature")) {
		if (parse_double(v, &d) < 0 || d < 0 || d > 2)
			return pragma_err_set(err, PRAGMA_E_INPUT, "--temperature '%s': expected a number in [0, 2]", v);
		o->temperature = d;
	} else if (!strcmp(name, "--seed")) {
		if (parse_ll(v, &l) < 0)
			return pragma_err_set(err, PRAGMA_E_INPUT, "--seed '%s': expected an integer", v);
		o->seed = l;
		o->has_seed = 1;
	} else if (!strcmp(name, "--budget-cost")) {
		if (parse_double(v, &d) < 0 || d <= 0)
			return pragma_err_set(err, PRAGMA_E_INPUT, "--budget-cost '%s': expected an amount in USD", v);
		o->budget_cost = d;
	} else if (!strcmp(name, "--timeout") || !strcmp(name, "--stall-timeout") ||
		   !strcmp(name, "--exec-timeout") || !strcmp(name, "--connect-timeout")) {
		if (parse_double(v, &d) < 0 || d <= 0 || d > 2e6)
			return pragma_err_set(err, PRAGMA_E_INPUT, "%s '%s': expected seconds", name, v);
		int ms = (int)(d * 1000 + 0.5);
		if (ms < 1)
			ms = 1;
		if (!strcmp(name, "--timeout"))
			o->timeout_ms = ms;
		else if (!strcmp(name, "--stall-timeout"))
			o->stall_timeout_ms = ms;
		else if (!strcmp(name, "--connect-timeout"))
			o->connect_timeout_ms = ms;
		else
			o->exec_timeout_ms = ms;
	} else {
		if (parse_ll(v, &l) < 0 || l < 0 || l > 1000000000000LL)
			return pragma_err_set(err, PRAGMA_E_INPUT, "%s '%s': expected a non-negative integer", name, v);
		if (!strcmp(name, "--max-tokens")) {
			if (l == 0 || l > 10000000)
				return pragma_err_set(err, PRAGMA_E_INPUT, "--max-tokens '%s': expected 1..10000000", v);
			o->max_tokens = (int)l;
		} else if (!strcmp(name, "--retries")) {
			if (l > 100)
				return pragma_err_set(err, PRAGMA_E_INPUT, "--retries '%s': at most 100", v);
			o->retries = (int)l;
		} else if (!strcmp(name, "--backoff-ms")) {
			if (l == 0 || l > 600000)
				return pragma_err_set(err, PRAGMA_E_INPUT, "--backoff-ms '%s': expected 1..600000", v);
			o->backoff_ms = (int)l;
		} else if (l == 0) {
			/* 0 must not quietly mean "no budget". */
			return pragma_err_set(err, PRAGMA_E_INPUT, "%s '%s': expected at least 1 (leave the flag out for no "
					      "budget)", name, v);
		} else if (!strcmp(name, "--budget-calls")) {
			o->budget_calls = (uint64_t)l;
		} else {
			o->budget_tokens = (uint64_t)l;
		}
	}
	return 1;
}

const char *pragma_llm_options_help(void)
{
	return "LLM options (flags over environment over ~/.config/pragma/config [llm]):\n"
	       "  --llm SPEC            openai:MODEL, anthropic:MODEL, exec:COMMAND, replay:FILE ($PRAGMA_LLM)\n"
	       "  --base-url URL        OpenAI-compatible or Anthropic base URL ($PRAGMA_LLM_BASE_URL)\n"
	       "  --temperature T       sampling temperature (default: the provider's)\n"
	       "  --max-tokens N        reply token limit (default 8192; 32768 for reasoning models)\n"
	       "  --seed N              sampling seed where the provider supports one\n"
	       "  --timeout S           total time per HTTP attempt (default 600)\n"
	       "  --connect-timeout S   (default 10)\n"
	       "  --stall-timeout S     give up on a stream silent this long (default 120)\n"
	       "  --exec-timeout S      deadline of an exec: command (default 1800)\n"
	       "  --retries N           retries on 429, 5xx and transport errors (default 5)\n"
	       "  --backoff-ms MS       first retry wait, doubled each time (default 1000)\n"
	       "  --stream, --no-stream streaming responses (default on)\n"
	       "  --no-cache            always ask the model, never the response cache\n"
	       "  --cache-dir DIR       response cache (default <cache>/llm)\n"
	       "  --prices FILE         JSON price table overriding the built-in one\n"
	       "  --record FILE         append every answer to a replay recording\n"
	       "  --budget-calls N, --budget-tokens N, --budget-cost USD\n"
	       "                        stop cleanly when reached\n";
}

int pragma_llm_skip(struct pragma_llm *c, const char *agent, int n)
{
	/* Only a recording has a position; live models answer anew. */
	if (!c || c->provider != PRAGMA_LLM_REPLAY || n <= 0)
		return 0;
	return llm_replay_skip(c, agent, n);
}
