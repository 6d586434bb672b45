/*
 * exec:COMMAND — `sh -c COMMAND` with the request (OpenAI chat JSON) on
 * stdin; the reply is whatever it prints. A person, a CLI tool or a helper
 * agent may be answering, hence the long default deadline (DESIGN 3.7).
 * Token counts are estimated from characters (about 4 per token) and marked
 * so. Exit status 75 (EX_TEMPFAIL) means "try again" and is retried.
 */
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#include "llm_int.h"
#include "pragma/proc.h"

#define EXEC_ERR_CAP ((size_t)64 << 10)

/* The last lines of the command's stderr, for a message. */
static void tail(const struct pragma_buf *b, char *out, size_t outlen)
{
	size_t n = b->len, start;

	while (n && (b->data[n - 1] == '\n' || b->data[n - 1] == ' '))
		n--;
	start = n > 300 ? n - 300 : 0;
	snprintf(out, outlen, "%s%.*s", start ? "..." : "", (int)(n - start), b->data + start);
}

enum pragma_llm_fail llm_exec_attempt(struct pragma_llm *c, const struct pragma_llm_request *req,
				      struct pragma_llm_reply *rep, double *retry_after_ms, struct pragma_err *err)
{
	struct pragma_child ch = PRAGMA_CHILD_INIT;
	const char *argv[] = { "/bin/sh", "-c", c->command, NULL };
	char agent_env[96], attempt_env[48], model_env[160], status[128], t[400];
	const char *env[] = { agent_env, attempt_env, model_env, NULL };
	json_t *o = llm_request_json(c, req);
	char *body = json_dumps(o, JSON_COMPACT);
	enum pragma_llm_fail f = PRAGMA_LLM_FAIL_EXEC;

	*retry_after_ms = -1;
	json_decref(o);
	snprintf(agent_env, sizeof(agent_env), "PRAGMA_AGENT=%s", req->agent);
	snprintf(attempt_env, sizeof(attempt_env), "PRAGMA_ATTEMPT=%d", req->attempt);
	snprintf(model_env, sizeof(model_env), "PRAGMA_LLM_MODEL=%s", c->model);
	ch.argv = argv;
	ch.env = env;
	ch.stdin_data = body;
	ch.stdin_len = strlen(body);
	ch.out_cap = c->max_text;
	ch.err_cap = EXEC_ERR_CAP;
	ch.timeout_ms = c->exec_timeout_ms;
	sigset_t oldmask;
	int run_rc;

	llm_sigpipe_block(&oldmask);
	run_rc = pragma_child_run(&ch, err);
	llm_sigpipe_restore(&oldmask);
	if (run_rc < 0) {
		pragma_err_prefix(err, "exec:%s", c->command);
		goto out;
	}
	pragma_buf_add(&rep->diag, ch.err.data, ch.err.len);
	tail(&ch.err, t, sizeof(t));
	pragma_child_status_str(&ch, status, sizeof(status));
	if (ch.timed_out) {
		pragma_err_set(err, PRAGMA_E_ENV, "exec:%s gave no answer within %d s", c->command,
			       c->exec_timeout_ms / 1000);
		pragma_err_hint(err, "raise --exec-timeout (or PRAGMA_LLM_EXEC_TIMEOUT)");
		goto out;
	}
	if (ch.out_truncated) {
		pragma_err_set(err, PRAGMA_E_ENV, "exec:%s printed more than %zu bytes", c->command, c->max_text);
		f = PRAGMA_LLM_FAIL_TOO_LARGE;
		goto out;
	}
	if (!ch.exited || ch.exit_code != 0) {
		pragma_err_set(err, PRAGMA_E_ENV, "exec:%s %s%s%s", c->command, status, t[0] ? ": " : "", t);
		if (ch.exited && ch.exit_code == 75)
			f = PRAGMA_LLM_FAIL_SERVER; /* EX_TEMPFAIL: retried */
		else
			pragma_err_hint(err, "the command gets the request JSON on stdin and must print the reply "
					"on stdout and exit 0 (exit 75 to be retried)");
		goto out;
	}
	pragma_buf_add(&rep->text, ch.out.data, ch.out.len);
	pragma_buf_rtrim(&rep->text);
	snprintf(rep->finish_reason, sizeof(rep->finish_reason), "stop");
	rep->prompt_tokens = (llm_request_chars(req) + 3) / 4;
	rep->completion_tokens = (rep->text.len + 3) / 4;
	rep->estimated = 1;
	if (!rep->text.len) {
		/* Not retried: a command that prints nothing will likely do so again. */
		pragma_err_set(err, PRAGMA_E_ENV, "exec:%s printed nothing%s%s", c->command, t[0] ? "; stderr: " : "", t);
		rep->prompt_tokens = rep->completion_tokens = 0;
		goto out;
	}
	f = PRAGMA_LLM_FAIL_NONE;
out:
	pragma_child_release(&ch);
	free(body);
	return f;
}
