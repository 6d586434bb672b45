/*
 * One HTTP attempt over libcurl: connect and total timeouts, a stall
 * detector (no byte for stall_timeout_ms while streaming), capped bodies,
 * an incremental SSE splitter, and Retry-After.
 */
#include <ctype.h>
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <strings.h>
#include <time.h>

#include "llm_int.h"
#include "pragma/log.h"

#define SSE_LINE_CAP ((size_t)4 << 20)

static void sse_line(struct llm_http *h, char *s, size_t n)
{
	if (n && s[n - 1] == '\r')
		s[--n] = '\0';
	if (n < 5 || strncmp(s, "data:", 5))
		return; /* event:, id:, retry:, comments and blank lines */
	s += 5;
	n -= 5;
	if (n && *s == ' ') {
		s++;
		n--;
	}
	if (n == 6 && !memcmp(s, "[DONE]", 6)) {
		h->done = 1;
		return;
	}
	h->n_events++;
	if (h->on_event && !h->malformed &&
	    h->on_event(h->ctx, s, n, h->malformed_msg, sizeof(h->malformed_msg)) < 0)
		h->malformed = 1;
}

static size_t on_write(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct llm_http *h = ud;
	size_t n = size * nmemb;

	h->started = 1;
	if (h->sse) {
		/* Split into lines; the caller's handler sees each data payload. */
		size_t i = 0;
		while (i < n) {
			char *nl = memchr(ptr + i, '\n', n - i);
			size_t take = nl ? (size_t)(nl - (ptr + i)) : n - i;
			if (h->line.len + take > SSE_LINE_CAP) {
				h->too_large = 1;
				return 0;
			}
			pragma_buf_add(&h->line, ptr + i, take);
			i += take;
			if (nl) {
				i++;
				sse_line(h, h->line.data, h->line.len);
				pragma_buf_reset(&h->line);
				if (h->malformed)
					return 0;
			}
		}
		return n;
	}
	if (h->raw.len + n > h->c->max_raw) {
		h->too_large = 1;
		return 0;
	}
	pragma_buf_add(&h->raw, ptr, n);
	return n;
}

static int header_is(const char *line, size_t n, const char *name, const char **value, size_t *vlen)
{
	size_t k = strlen(name);

	if (n <= k || strncasecmp(line, name, k) || line[k] != ':')
		return 0;
	line += k + 1;
	n -= k + 1;
	while (n && isspace((unsigned char)*line)) {
		line++;
		n--;
	}
	while (n && isspace((unsigned char)line[n - 1]))
		n--;
	*value = line;
	*vlen = n;
	return 1;
}

static size_t on_header(char *ptr, size_t size, size_t nmemb, void *ud)
{
	struct llm_http *h = ud;
	size_t n = size * nmemb;
	const char *v;
	size_t vn;
	char tmp[128];

	if (n >= 5 && !strncmp(ptr, "HTTP/", 5)) {
		/* A new response (after a 100 Continue or a redirect): start over. */
		h->retry_after_ms = -1;
		h->content_type[0] = '\0';
		return n;
	}
	if (header_is(ptr, n, "retry-after-ms", &v, &vn) && vn < sizeof(tmp)) {
		memcpy(tmp, v, vn);
		tmp[vn] = '\0';
		double ms = strtod(tmp, NULL);
		if (ms > 0)
			h->retry_after_ms = ms;
	} else if (header_is(ptr, n, "retry-after", &v, &vn) && vn < sizeof(tmp)) {
		char *end;
		memcpy(tmp, v, vn);
		tmp[vn] = '\0';
		double s = strtod(tmp, &end);
		if (end != tmp && !*end && s >= 0) {
			if (h->retry_after_ms < 0)
				h->retry_after_ms = s * 1000.0;
		} else {
			time_t when = curl_getdate(tmp, NULL);
			if (when > 0 && h->retry_after_ms < 0) {
				double d = difftime(when, time(NULL));
				h->retry_after_ms = d > 0 ? d * 1000.0 : 0;
			}
		}
	} else if (header_is(ptr, n, "content-type", &v, &vn)) {
		if (vn >= sizeof(h->content_type))
			vn = sizeof(h->content_type) - 1;
		memcpy(h->content_type, v, vn);
		h->content_type[vn] = '\0';
	} else if (n <= 2) {
		/* End of the headers: decide how to read the body. */
		h->sse = h->stream && strcasestr(h->content_type, "event-stream") != NULL;
	}
	return n;
}

static int on_progress(void *ud, curl_off_t dltotal, curl_off_t dlnow, curl_off_t ultotal, curl_off_t ulnow)
{
	struct llm_http *h = ud;
	double now = llm_now_ms();

	(void)dltotal;
	(void)ultotal;
	if (dlnow != h->last_dl || ulnow != h->last_ul) {
		h->last_dl = dlnow;
		h->last_ul = ulnow;
		h->t_last = now;
		return 0;
	}
	if (h->stream && h->c->stall_timeout_ms > 0 && now - h->t_last > h->c->stall_timeout_ms) {
		h->stalled = 1;
		return 1;
	}
	return 0;
}

void llm_http_release(struct llm_http *h)
{
	pragma_buf_release(&h->raw);
	pragma_buf_release(&h->line);
}

void llm_error_message(const char *body, size_t len, char *out, size_t outlen)
{
	json_error_t jerr;
	json_t *root = json_loadb(body, len, 0, &jerr);
	const char *msg = NULL;

	out[0] = '\0';
	if (root) {
		json_t *e = json_object_get(root, "error");
		if (json_is_object(e))
			msg = json_string_value(json_object_get(e, "message"));
		else if (json_is_string(e))
			msg = json_string_value(e);
		if (!msg)
			msg = json_string_value(json_object_get(root, "message"));
		if (!msg)
			msg = json_string_value(json_object_get(root, "detail"));
		if (msg)
			snprintf(out, outlen, "%s", msg);
		json_decref(root);
		if (msg)
			return;
	}
	/* Not JSON: the first line, printable characters only. */
	size_t k = 0;
	for (size_t i = 0; i < len && k + 1 < outlen && k < 200; i++) {
		char ch = body[i];
		if (ch == '\n' || ch == '\r') {
			if (k)
				break;
			continue;
		}
		out[k++] = isprint((unsigned char)ch) ? ch : '?';
	}
	out[k] = '\0';
}

static enum pragma_llm_fail classify_status(struct pragma_llm *c, struct llm_http *h, struct pragma_err *err)
{
	char msg[512];
	long s = h->status;

	if (s >= 200 && s < 300)
		return PRAGMA_LLM_FAIL_NONE;
	llm_error_message(h->raw.data, h->raw.len, msg, sizeof(msg));
	if (s == 401 || s == 403) {
		pragma_err_set(err, PRAGMA_E_ENV, "HTTP %ld from %s: %s", s, c->url, msg[0] ? msg : "unauthorized");
		if (c->api_key)
			pragma_err_hint(err, "the key comes from $%s and was rejected by %s; check it belongs to this "
					"server (PRAGMA_LLM_BASE_URL) and account",
					c->api_key_env, c->base_url);
		else
			pragma_err_hint(err, "no API key was sent: set %s (or PRAGMA_LLM_API_KEY) for %s",
					c->api_key_env, c->base_url);
		return PRAGMA_LLM_FAIL_AUTH;
	}
	if (s == 429) {
		pragma_err_set(err, PRAGMA_E_ENV, "HTTP 429 (rate limited) from %s: %s", c->url, msg);
		pragma_err_hint(err, "wait, lower the parallelism, or raise the account's rate limit");
		return PRAGMA_LLM_FAIL_RATE_LIMIT;
	}
	if (s >= 500 || s == 408) {
		pragma_err_set(err, PRAGMA_E_ENV, "HTTP %ld from %s: %s", s, c->url, msg);
		return s == 408 ? PRAGMA_LLM_FAIL_TIMEOUT : PRAGMA_LLM_FAIL_SERVER;
	}
	pragma_err_set(err, PRAGMA_E_ENV, "HTTP %ld from %s: %s", s, c->url, msg[0] ? msg : "request rejected");
	if (s == 404)
		pragma_err_hint(err, "check the model name '%s' and the base URL %s (an OpenAI-compatible server "
				"serves {base}/chat/completions, usually under /v1)", c->model, c->base_url);
	else if (s == 413)
		pragma_err_hint(err, "the prompt is too large for this server");
	else
		pragma_err_hint(err, "the server rejected the request; is '%s' a model it serves, and are "
				"temperature/max_tokens/seed within its limits?", c->model);
	return PRAGMA_LLM_FAIL_REQUEST;
}

static void share_lock(CURL *handle, curl_lock_data data, curl_lock_access access, void *ud)
{
	struct pragma_llm *c = ud;

	(void)handle;
	(void)access;
	pthread_mutex_lock(&c->share_lock[data]);
}

static void share_unlock(CURL *handle, curl_lock_data data, void *ud)
{
	struct pragma_llm *c = ud;

	(void)handle;
	pthread_mutex_unlock(&c->share_lock[data]);
}

void llm_http_share_init(struct pragma_llm *c)
{
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_init(&c->share_lock[i], NULL);
	c->share = curl_share_init();
	if (!c->share)
		return;
	curl_share_setopt(c->share, CURLSHOPT_LOCKFUNC, share_lock);
	curl_share_setopt(c->share, CURLSHOPT_UNLOCKFUNC, share_unlock);
	curl_share_setopt(c->share, CURLSHOPT_USERDATA, c);
	curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_DNS);
	curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_SSL_SESSION);
	curl_share_setopt(c->share, CURLSHOPT_SHARE, CURL_LOCK_DATA_CONNECT);
}

void llm_http_share_free(struct pragma_llm *c)
{
	if (c->share)
		curl_share_cleanup(c->share);
	c->share = NULL;
	for (int i = 0; i < CURL_LOCK_DATA_LAST; i++)
		pthread_mutex_destroy(&c->share_lock[i]);
}

static int is_tls(CURLcode rc)
{
	switch (rc) {
	case CURLE_SSL_CONNECT_ERROR:
	case CURLE_PEER_FAILED_VERIFICATION:
	case CURLE_SSL_CERTPROBLEM:
	case CURLE_SSL_CIPHER:
	case CURLE_SSL_CACERT_BADFILE:
	case CURLE_SSL_ISSUER_ERROR:
	case CURLE_SSL_CRL_BADFILE:
	case CURLE_SSL_PINNEDPUBKEYNOTMATCH:
	case CURLE_SSL_INVALIDCERTSTATUS:
	case CURLE_SSL_ENGINE_INITFAILED:
	case CURLE_USE_SSL_FAILED:
		return 1;
	default:
		return 0;
	}
}

/* A failure before any byte of a response: DNS, connect (refused, no
 * route, timed out) or the TLS handshake. */
static int unreachable(CURLcode rc, const struct llm_http *h)
{
	if (h->started)
		return 0;
	return rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_COULDNT_RESOLVE_PROXY ||
	       is_tls(rc);
}

static const char *unreachable_why(CURLcode rc, long os_errno, const char *what)
{
	if (rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_COULDNT_RESOLVE_PROXY)
		return "its host name does not resolve (DNS)";
	if (is_tls(rc))
		return "the TLS handshake failed";
	if (os_errno == ECONNREFUSED)
		return "connection refused";
	if (os_errno == ETIMEDOUT)
		return "no answer to the connection attempt";
	if (os_errno == EHOSTUNREACH || os_errno == ENETUNREACH)
		return "no route to the host";
	if (strstr(what, "refused"))
		return "connection refused";
	if (strstr(what, "timed out") || strstr(what, "Timeout"))
		return "no answer to the connection attempt";
	if (strstr(what, "No route") || strstr(what, "unreachable"))
		return "no route to the host";
	return "cannot connect";
}

enum pragma_llm_fail llm_http_perform(struct pragma_llm *c, struct llm_http *h, struct pragma_err *err)
{
	char errbuf[CURL_ERROR_SIZE] = "";
	enum pragma_llm_fail f = PRAGMA_LLM_FAIL_NONE;
	CURL *e = curl_easy_init();
	CURLcode rc;

	h->c = c;
	h->retry_after_ms = -1;
	h->status = 0;
	if (!e) {
		pragma_err_set(err, PRAGMA_E_INTERNAL, "cannot create a curl handle");
		return PRAGMA_LLM_FAIL_NETWORK;
	}
	curl_easy_setopt(e, CURLOPT_URL, h->url);
	curl_easy_setopt(e, CURLOPT_NOSIGNAL, 1L);
	curl_easy_setopt(e, CURLOPT_POST, 1L);
	curl_easy_setopt(e, CURLOPT_POSTFIELDS, h->body);
	curl_easy_setopt(e, CURLOPT_POSTFIELDSIZE_LARGE, (curl_off_t)h->body_len);
	curl_easy_setopt(e, CURLOPT_HTTPHEADER, h->headers);
	curl_easy_setopt(e, CURLOPT_WRITEFUNCTION, on_write);
	curl_easy_setopt(e, CURLOPT_WRITEDATA, h);
	curl_easy_setopt(e, CURLOPT_HEADERFUNCTION, on_header);
	curl_easy_setopt(e, CURLOPT_HEADERDATA, h);
	curl_easy_setopt(e, CURLOPT_XFERINFOFUNCTION, on_progress);
	curl_easy_setopt(e, CURLOPT_XFERINFODATA, h);
	curl_easy_setopt(e, CURLOPT_NOPROGRESS, 0L);
	curl_easy_setopt(e, CURLOPT_CONNECTTIMEOUT_MS, (long)c->connect_timeout_ms);
	curl_easy_setopt(e, CURLOPT_TIMEOUT_MS, (long)c->timeout_ms);
	curl_easy_setopt(e, CURLOPT_ERRORBUFFER, errbuf);
	curl_easy_setopt(e, CURLOPT_ACCEPT_ENCODING, ""); /* gzip where the server offers it */
	curl_easy_setopt(e, CURLOPT_USERAGENT, "pragma/" PRAGMA_VERSION);
	curl_easy_setopt(e, CURLOPT_TCP_KEEPALIVE, 1L);
	if (c->share)
		curl_easy_setopt(e, CURLOPT_SHARE, c->share);

	sigset_t oldmask;

	h->t_start = h->t_last = llm_now_ms();
	llm_sigpipe_block(&oldmask); /* CURLOPT_NOSIGNAL leaves SIGPIPE to us */
	rc = curl_easy_perform(e);
	llm_sigpipe_restore(&oldmask);
	h->ms = llm_now_ms() - h->t_start;
	curl_easy_getinfo(e, CURLINFO_RESPONSE_CODE, &h->status);
	/* A final SSE line without a newline still counts, on a clean end only
	 * (after a reset it is a fragment). */
	if (rc == CURLE_OK && h->sse && h->line.len && !h->malformed) {
		sse_line(h, h->line.data, h->line.len);
		pragma_buf_reset(&h->line);
	}

	if (h->stalled) {
		pragma_err_set(err, PRAGMA_E_ENV, "%s stalled: no data for %d ms", c->url, c->stall_timeout_ms);
		pragma_err_hint(err, "the server stopped sending; raise --stall-timeout if the model is slow to start");
		f = PRAGMA_LLM_FAIL_STALL;
	} else if (h->too_large) {
		pragma_err_set(err, PRAGMA_E_ENV, "the response from %s passed the size cap (%zu bytes)", c->url,
			       c->max_raw);
		f = PRAGMA_LLM_FAIL_TOO_LARGE;
	} else if (h->malformed) {
		pragma_err_set(err, PRAGMA_E_ENV, "malformed stream from %s: %s", c->url, h->malformed_msg);
		f = PRAGMA_LLM_FAIL_MALFORMED;
	} else if (rc != CURLE_OK && unreachable(rc, h)) {
		/* Nothing was ever received: the server is not there (or not
		 * reachable from here), as opposed to a reply cut off. */
		const char *what = errbuf[0] ? errbuf : curl_easy_strerror(rc);
		const char *from = getenv("PRAGMA_LLM_BASE_URL") && *getenv("PRAGMA_LLM_BASE_URL") ?
					   "$PRAGMA_LLM_BASE_URL" : "the default, the config file or --base-url";
		long os_errno = 0;
		curl_easy_getinfo(e, CURLINFO_OS_ERRNO, &os_errno);
		pragma_err_set(err, PRAGMA_E_ENV, "the model server at %s is unreachable: %s (%s)", c->base_url,
			       unreachable_why(rc, os_errno, what), what);
		if (rc == CURLE_COULDNT_RESOLVE_HOST || rc == CURLE_COULDNT_RESOLVE_PROXY)
			pragma_err_hint(err, "check the host name in the base URL (it comes from %s) and this machine's DNS",
					from);
		else if (is_tls(rc))
			pragma_err_hint(err, "the TLS handshake failed: check the server's certificate (or SSL_CERT_FILE for a "
					"private CA), or use http:// for a server on this machine");
		else
			pragma_err_hint(err, "is the server running and listening at %s? The base URL comes from %s", c->base_url,
					from);
		f = PRAGMA_LLM_FAIL_UNREACHABLE;
	} else if (rc != CURLE_OK) {
		const char *what = errbuf[0] ? errbuf : curl_easy_strerror(rc);
		if (rc == CURLE_OPERATION_TIMEDOUT) {
			pragma_err_set(err, PRAGMA_E_ENV, "%s timed out after %.0f ms: %s", c->url, h->ms, what);
			pragma_err_hint(err, "raise --timeout (now %d s) or check the server", c->timeout_ms / 1000);
			f = PRAGMA_LLM_FAIL_TIMEOUT;
		} else if (h->status >= 200 && h->status < 300 &&
			   (rc == CURLE_PARTIAL_FILE || rc == CURLE_RECV_ERROR || rc == CURLE_GOT_NOTHING)) {
			pragma_err_set(err, PRAGMA_E_ENV, "the response from %s was cut off: %s", c->url, what);
			f = PRAGMA_LLM_FAIL_TRUNCATED;
		} else {
			pragma_err_set(err, PRAGMA_E_ENV, "cannot reach %s: %s", c->url, what);
			if (rc == CURLE_COULDNT_CONNECT || rc == CURLE_COULDNT_RESOLVE_HOST)
				pragma_err_hint(err, "is the server running? The base URL comes from %s",
						getenv("PRAGMA_LLM_BASE_URL") ? "PRAGMA_LLM_BASE_URL" :
						"the default, the config file or --base-url");
			f = PRAGMA_LLM_FAIL_NETWORK;
		}
	} else {
		f = classify_status(c, h, err);
	}
	curl_easy_cleanup(e);
	return f;
}
