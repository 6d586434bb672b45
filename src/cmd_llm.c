/* pragma llm: check and use the configured model (ping, ask), prices, the
 * response cache, the resolved settings, and the reply parsers. */
#include <errno.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>
#include <dirent.h>

#include "cli.h"
#include "opts.h"
#include "pragma/config.h"
#include "pragma/fs.h"
#include "pragma/llm.h"
#include "pragma/reply.h"

static double now_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

static void usage(FILE *f)
{
	fprintf(f, "usage: pragma llm <subcommand> [options]\n\n"
		   "  ping [--count N] [--parallel P] [--json]\n"
		   "                     send a tiny request; print model, latency and usage\n"
		   "                     (--count: N distinct requests at once, with totals)\n"
		   "  ask [--agent ROLE] [--attempt N] [--system TEXT] [--json] TEXT|-\n"
		   "                     send one message, print the reply\n"
		   "  config [--json]    the settings a run would use (no request is sent)\n"
		   "  prices [--json]    the price table (built-in plus --prices FILE)\n"
		   "  cache [info|clear] the response cache\n"
		   "  parse [--conductor] [--json] FILE|-\n"
		   "                     parse a Coder (or Conductor) reply as the agents do\n\n%s",
		pragma_llm_options_help());
}

/* Options common to the subcommands. */
struct llm_args {
	struct pragma_llm_options opt;
	int json, count, parallel, attempt, conductor;
	const char *agent, *system, *pos;
};

static int parse_args(int argc, char **argv, struct llm_args *a)
{
	struct pragma_err err = PRAGMA_ERR_INIT;

	for (int i = 1; i < argc; i++) {
		int r = pragma_llm_options_flag(&a->opt, argc, argv, &i, &err);
		if (r < 0)
			return cli_error(&err);
		if (r > 0)
			continue;
		const char *s = argv[i];
		if (!strcmp(s, "--json")) {
			a->json = 1;
		} else if (!strcmp(s, "--conductor")) {
			a->conductor = 1;
		} else if (!strcmp(s, "--count") || !strcmp(s, "--parallel") || !strcmp(s, "--attempt")) {
			int v, rr = cli_int_arg_range(argc, argv, i, !strcmp(s, "--attempt") ? 0 : 1,
						     !strcmp(s, "--parallel") ? 256 : 100000, &v);
			if (rr < 0)
				return 2;
			i++;
			if (!strcmp(s, "--count"))
				a->count = v;
			else if (!strcmp(s, "--parallel"))
				a->parallel = v;
			else
				a->attempt = v;
		} else if (!strcmp(s, "--agent") && i + 1 < argc) {
			a->agent = argv[++i];
		} else if (!strcmp(s, "--system") && i + 1 < argc) {
			a->system = argv[++i];
		} else if (s[0] == '-' && s[1]) {
			return cli_usage_error("llm: unknown option '%s' ('pragma llm --help' lists them)", s);
		} else if (!a->pos) {
			a->pos = s;
		} else {
			return cli_usage_error("llm: unexpected argument '%s'", s);
		}
	}
	return 0;
}

static json_t *reply_json(const struct pragma_llm_reply *r, int with_text)
{
	json_t *o = json_object();

	json_object_set_new(o, "provider", json_string(r->provider));
	json_object_set_new(o, "model", json_string(r->model));
	if (with_text) {
		json_object_set_new(o, "text", json_stringn(r->text.data, r->text.len));
		json_object_set_new(o, "reasoning", json_stringn(r->reasoning.data, r->reasoning.len));
	}
	json_object_set_new(o, "finish_reason", json_string(r->finish_reason));
	json_object_set_new(o, "truncated", json_boolean(r->truncated));
	json_object_set_new(o, "prompt_tokens", json_integer((json_int_t)r->prompt_tokens));
	json_object_set_new(o, "completion_tokens", json_integer((json_int_t)r->completion_tokens));
	json_object_set_new(o, "reasoning_tokens", json_integer((json_int_t)r->reasoning_tokens));
	json_object_set_new(o, "estimated", json_boolean(r->estimated));
	json_object_set_new(o, "cost", json_real(r->cost));
	json_object_set_new(o, "cost_known", json_boolean(r->cost_known));
	json_object_set_new(o, "cached", json_boolean(r->cached));
	json_object_set_new(o, "latency_ms", json_real(r->latency_ms));
	json_object_set_new(o, "elapsed_ms", json_real(r->elapsed_ms));
	json_object_set_new(o, "retries", json_integer(r->retries));
	json_object_set_new(o, "http_status", json_integer(r->http_status));
	json_object_set_new(o, "request_hash", json_string(r->request_hash));
	return o;
}

static json_t *usage_json(const struct pragma_llm_usage *u)
{
	return json_pack("{s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:I, s:f, s:b, s:f}", "requests",
			 (json_int_t)u->requests, "calls", (json_int_t)u->calls, "cached", (json_int_t)u->cached,
			 "failed", (json_int_t)u->failed, "stopped", (json_int_t)u->stopped, "retries",
			 (json_int_t)u->retries, "prompt_tokens", (json_int_t)u->prompt_tokens, "completion_tokens",
			 (json_int_t)u->completion_tokens, "reasoning_tokens", (json_int_t)u->reasoning_tokens,
			 "estimated_calls", (json_int_t)u->estimated_calls, "cost", u->cost, "cost_unknown",
			 u->cost_unknown, "latency_ms", u->latency_ms);
}

static int open_client(struct llm_args *a, struct pragma_llm **llm)
{
	struct pragma_err err = PRAGMA_ERR_INIT;

	if (pragma_config_check(&err) < 0)
		return a->json ? cli_error_json(&err) : cli_error(&err);
	if (pragma_llm_open(llm, &a->opt, &err) < 0)
		return a->json ? cli_error_json(&err) : cli_error(&err);
	return 0;
}

static int send_error(const struct llm_args *a, int rc, const struct pragma_err *err,
		      const struct pragma_llm_reply *rep)
{
	if (a->json) {
		json_t *o = json_pack("{s:s, s:s, s:s, s:s}", "status", rc == PRAGMA_LLM_STOP ? "stopped" : "error",
				      "kind", pragma_err_kind_name(err->kind), "fail", pragma_llm_fail_name(rep->fail),
				      "message", err->msg);
		if (err->hint[0])
			json_object_set_new(o, "hint", json_string(err->hint));
		json_object_set_new(o, "retries", json_integer(rep->retries));
		cli_print_json(o);
	}
	return cli_error(err);
}

static int ping_many(struct llm_args *a, struct pragma_llm *llm)
{
	int n = a->count, par = a->parallel ? a->parallel : 4;
	struct pragma_llm_msg *msgs = calloc((size_t)n * 2, sizeof(*msgs));
	struct pragma_llm_request *reqs = calloc((size_t)n, sizeof(*reqs));
	struct pragma_llm_job *jobs = calloc((size_t)n, sizeof(*jobs));
	char **texts = calloc((size_t)n, sizeof(*texts));
	uint64_t fails[32] = { 0 };
	uint64_t sp = 0, sc = 0, sr = 0;
	struct pragma_llm_usage u;
	size_t ok, stopped = 0;
	double t0 = now_ms(), wall;

	if (!msgs || !reqs || !jobs || !texts)
		abort();
	for (int i = 0; i < n; i++) {
		if (asprintf(&texts[i], "Connectivity check %d of %d: reply with the single word pong.", i + 1, n) < 0)
			abort();
		msgs[2 * i] = (struct pragma_llm_msg){ "system", "You are a connectivity check. Answer in one word." };
		msgs[2 * i + 1] = (struct pragma_llm_msg){ "user", texts[i] };
		reqs[i] = (struct pragma_llm_request)PRAGMA_LLM_REQUEST_INIT;
		reqs[i].agent = a->agent ? a->agent : "ping";
		reqs[i].attempt = i + 1;
		reqs[i].msgs = &msgs[2 * i];
		reqs[i].n_msgs = 2;
		jobs[i].req = &reqs[i];
	}
	ok = pragma_llm_send_many(llm, jobs, (size_t)n, par);
	wall = now_ms() - t0;
	pragma_llm_usage_get(llm, &u);
	for (int i = 0; i < n; i++) {
		if (jobs[i].rc == 0) {
			sp += jobs[i].reply.prompt_tokens;
			sc += jobs[i].reply.completion_tokens;
			sr += jobs[i].reply.reasoning_tokens;
		} else if (jobs[i].rc == PRAGMA_LLM_STOP) {
			stopped++;
		} else if ((unsigned)jobs[i].reply.fail < 32) {
			fails[jobs[i].reply.fail]++;
		}
	}
	if (a->json) {
		json_t *o = json_object(), *f = json_object(), *rs = json_array();
		json_object_set_new(o, "describe", json_string(pragma_llm_describe(llm)));
		json_object_set_new(o, "requests", json_integer(n));
		json_object_set_new(o, "answered", json_integer((json_int_t)ok));
		json_object_set_new(o, "failed", json_integer((json_int_t)(n - (int)ok - (int)stopped)));
		json_object_set_new(o, "stopped", json_integer((json_int_t)stopped));
		for (int k = 0; k < 32; k++)
			if (fails[k])
				json_object_set_new(f, pragma_llm_fail_name((enum pragma_llm_fail)k),
						    json_integer((json_int_t)fails[k]));
		json_object_set_new(o, "failures", f);
		json_object_set_new(o, "usage", usage_json(&u));
		json_object_set_new(o, "reply_sums", json_pack("{s:I, s:I, s:I}", "prompt_tokens", (json_int_t)sp,
							       "completion_tokens", (json_int_t)sc, "reasoning_tokens",
							       (json_int_t)sr));
		json_object_set_new(o, "wall_ms", json_real(wall));
		for (int i = 0; i < n; i++) {
			json_t *r = reply_json(&jobs[i].reply, 0);
			json_object_set_new(r, "ok", json_boolean(jobs[i].rc == 0));
			json_object_set_new(r, "fail", json_string(pragma_llm_fail_name(jobs[i].reply.fail)));
			if (jobs[i].rc)
				json_object_set_new(r, "error", json_string(jobs[i].err.msg));
			json_array_append_new(rs, r);
		}
		json_object_set_new(o, "replies", rs);
		cli_print_json(o);
	} else {
		printf("%s\n", pragma_llm_describe(llm));
		printf("requests  %d (%d at once), %.0f ms\n", n, par, wall);
		printf("answered  %zu (%llu from the cache)\n", ok, (unsigned long long)u.cached);
		printf("failed    %d", n - (int)ok - (int)stopped);
		for (int k = 0; k < 32; k++)
			if (fails[k])
				printf(" %s=%llu", pragma_llm_fail_name((enum pragma_llm_fail)k), (unsigned long long)fails[k]);
		printf("\nstopped   %zu\nretries   %llu\n", stopped, (unsigned long long)u.retries);
		printf("tokens    %llu prompt + %llu completion (%llu reasoning)%s\n", (unsigned long long)u.prompt_tokens,
		       (unsigned long long)u.completion_tokens, (unsigned long long)u.reasoning_tokens,
		       u.estimated_calls ? ", partly estimated" : "");
		printf("cost      $%.6f%s\n", u.cost, u.cost_unknown ? " (some models have no price)" : "");
	}
	for (int i = 0; i < n; i++) {
		pragma_llm_reply_release(&jobs[i].reply);
		free(texts[i]);
	}
	free(texts);
	free(jobs);
	free(reqs);
	free(msgs);
	return (size_t)n == ok ? 0 : stopped ? 1 : 3;
}

static int cmd_ping(struct llm_args *a)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_llm_reply rep = PRAGMA_LLM_REPLY_INIT;
	struct pragma_llm *llm = NULL;
	struct pragma_llm_msg msgs[] = {
		{ "system", "You are a connectivity check. Answer in one word." },
		{ "user", "Reply with the single word: pong" },
	};
	struct pragma_llm_request req = PRAGMA_LLM_REQUEST_INIT;
	int rc;

	if (a->opt.cache < 0)
		a->opt.cache = 0; /* a ping must reach the model */
	if ((rc = open_client(a, &llm)))
		return rc;
	if (a->count > 0) {
		rc = ping_many(a, llm);
		pragma_llm_free(llm);
		return rc;
	}
	req.agent = a->agent ? a->agent : "ping";
	req.msgs = msgs;
	req.n_msgs = 2;
	rc = pragma_llm_send(llm, &req, &rep, &err);
	if (rc) {
		if (!a->json)
			fprintf(stderr, "pragma: ping %s\n", pragma_llm_describe(llm));
		rc = send_error(a, rc, &err, &rep);
		goto out;
	}
	if (a->json) {
		json_t *o = reply_json(&rep, 1);
		json_object_set_new(o, "status", json_string("ok"));
		json_object_set_new(o, "describe", json_string(pragma_llm_describe(llm)));
		cli_print_json(o);
	} else {
		printf("%s\n", pragma_llm_describe(llm));
		printf("model     %s\n", rep.model);
		printf("reply     %.200s%s\n", rep.text.data, rep.text.len > 200 ? "..." : "");
		printf("latency   %.0f ms (%d retr%s)%s\n", rep.latency_ms, rep.retries, rep.retries == 1 ? "y" : "ies",
		       rep.cached ? ", from the cache" : "");
		printf("usage     %llu prompt + %llu completion tokens (%llu reasoning)%s, ",
		       (unsigned long long)rep.prompt_tokens, (unsigned long long)rep.completion_tokens,
		       (unsigned long long)rep.reasoning_tokens, rep.estimated ? " estimated" : "");
		if (rep.cost_known)
			printf("$%.6f\n", rep.cost);
		else
			printf("cost unknown (no price for %s)\n", rep.model);
	}
out:
	pragma_llm_reply_release(&rep);
	pragma_llm_free(llm);
	return rc;
}

static int cmd_ask(struct llm_args *a)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_llm_reply rep = PRAGMA_LLM_REPLY_INIT;
	struct pragma_buf text = PRAGMA_BUF_INIT;
	struct pragma_llm *llm = NULL;
	struct pragma_llm_msg msgs[2];
	struct pragma_llm_request req = PRAGMA_LLM_REQUEST_INIT;
	size_t n = 0;
	int rc;

	if (!a->pos)
		return cli_usage_error("llm ask: what should be asked? (TEXT, or - for stdin)");
	if (!strcmp(a->pos, "-")) {
		char chunk[65536];
		size_t k;
		while ((k = fread(chunk, 1, sizeof(chunk), stdin)) > 0) {
			if (text.len + k > ((size_t)16 << 20)) {
				pragma_buf_release(&text);
				return cli_usage_error("llm ask: the message on stdin is larger than 16 MiB");
			}
			pragma_buf_add(&text, chunk, k);
		}
	} else {
		pragma_buf_adds(&text, a->pos);
	}
	if ((rc = open_client(a, &llm))) {
		pragma_buf_release(&text);
		return rc;
	}
	if (a->system)
		msgs[n++] = (struct pragma_llm_msg){ "system", a->system };
	msgs[n++] = (struct pragma_llm_msg){ "user", text.data };
	req.agent = a->agent ? a->agent : "ask";
	req.attempt = a->attempt;
	req.msgs = msgs;
	req.n_msgs = n;
	rc = pragma_llm_send(llm, &req, &rep, &err);
	if (rc) {
		rc = send_error(a, rc, &err, &rep);
	} else if (a->json) {
		json_t *o = reply_json(&rep, 1);
		json_object_set_new(o, "status", json_string("ok"));
		cli_print_json(o);
	} else {
		fwrite(rep.text.data, 1, rep.text.len, stdout);
		if (!rep.text.len || rep.text.data[rep.text.len - 1] != '\n')
			fputc('\n', stdout);
	}
	pragma_llm_reply_release(&rep);
	pragma_llm_free(llm);
	pragma_buf_release(&text);
	return rc;
}

/* The settings a run would use. With no model configured they are still
 * shown (exit 0), and say so: this is where one looks to find out why. */
static int cmd_config(struct llm_args *a)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_llm_options o = a->opt;
	struct pragma_llm *llm = NULL;
	const char *from = NULL;
	int configured, rc;
	char *s;

	if (pragma_config_check(&err) < 0)
		return a->json ? cli_error_json(&err) : cli_error(&err);
	configured = pragma_llm_spec_source(&a->opt, &from) != NULL;
	if (!configured) {
		/* Every other setting resolves the same with any model; an exec
		 * model needs no key or network. */
		o.spec = "exec:true";
		o.cache = a->opt.cache;
	}
	if ((rc = pragma_llm_open(&llm, &o, &err)) < 0)
		return a->json ? cli_error_json(&err) : cli_error(&err);
	s = pragma_llm_settings_json(llm);
	json_t *j = json_loads(s, 0, NULL), *v;
	const char *k;
	json_object_set_new(j, "configured", json_boolean(configured));
	if (!configured) {
		json_object_set_new(j, "provider", json_null());
		json_object_set_new(j, "model", json_null());
		json_object_del(j, "command");
	} else {
		json_object_set_new(j, "from", json_string(from));
	}
	if (a->json) {
		cli_print_json(j);
	} else {
		if (configured)
			printf("%s (from %s)\n", pragma_llm_describe(llm), from);
		else
			printf("no model is configured: pass --llm PROVIDER:MODEL (e.g. openai:gpt-4o), set PRAGMA_LLM, or\n"
			       "put 'llm = ...' in ~/.config/pragma/config (docs/llm.md). The other settings:\n");
		json_object_foreach(j, k, v) {
			if (!configured && (!strcmp(k, "provider") || !strcmp(k, "model") || !strcmp(k, "configured")))
				continue;
			char *d = json_dumps(v, JSON_ENCODE_ANY);
			printf("  %-20s %s\n", k, d ? d : "?");
			free(d);
		}
		json_decref(j);
	}
	free(s);
	pragma_llm_free(llm);
	return 0;
}

static int cmd_prices(struct llm_args *a)
{
	const struct pragma_llm_price *p = pragma_llm_builtin_prices();
	json_t *arr = json_array();

	if (a->opt.price_file) {
		/* Overrides need a client; "replay" needs no network or key. */
		struct pragma_llm_options o = a->opt;
		struct pragma_err err = PRAGMA_ERR_INIT;
		struct pragma_llm *llm;
		struct pragma_buf tmp = PRAGMA_BUF_INIT, text = PRAGMA_BUF_INIT;
		json_t *root;
		const char *k;
		json_t *v;
		/* Validate through the client's loader, then list the file. */
		pragma_buf_addf(&tmp, "exec:true");
		o.spec = tmp.data;
		o.cache = 0;
		if (pragma_llm_open(&llm, &o, &err) < 0) {
			pragma_buf_release(&tmp);
			json_decref(arr);
			return cli_error(&err);
		}
		if (pragma_read_file(a->opt.price_file, &text, 0, &err) == 0 &&
		    (root = json_loads(text.data, 0, NULL))) {
			json_object_foreach(root, k, v) {
				double in = 0, out = 0;
				pragma_llm_price_of(llm, k, &in, &out);
				json_array_append_new(arr, json_pack("{s:s, s:f, s:f, s:s}", "model", k, "input_per_mtok", in,
								     "output_per_mtok", out, "source", a->opt.price_file));
			}
			json_decref(root);
		}
		pragma_llm_free(llm);
		pragma_buf_release(&tmp);
		pragma_buf_release(&text);
	}
	for (; p->model; p++)
		json_array_append_new(arr, json_pack("{s:s, s:f, s:f, s:s}", "model", p->model, "input_per_mtok",
						     p->input_per_mtok, "output_per_mtok", p->output_per_mtok, "source",
						     "built-in"));
	if (a->json) {
		cli_print_json(arr);
		return 0;
	}
	printf("%-24s %10s %10s  %s\n", "model", "in $/Mtok", "out $/Mtok", "source");
	size_t i;
	json_t *e;
	json_array_foreach(arr, i, e)
		printf("%-24s %10.2f %10.2f  %s\n", json_string_value(json_object_get(e, "model")),
		       json_real_value(json_object_get(e, "input_per_mtok")),
		       json_real_value(json_object_get(e, "output_per_mtok")),
		       json_string_value(json_object_get(e, "source")));
	printf("USD per million tokens; list prices go stale: override with --prices FILE.\n");
	json_decref(arr);
	return 0;
}

static int cmd_cache_llm(struct llm_args *a)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_buf dir = PRAGMA_BUF_INIT;
	const char *what = a->pos ? a->pos : "info";
	int rc = 0;

	if (strcmp(what, "info") && strcmp(what, "clear"))
		return cli_usage_error("llm cache: expected info or clear, not '%s'", what);
	if (pragma_llm_cache_dir(&a->opt, &dir, &err) < 0) {
		rc = cli_error(&err);
		goto out;
	}
	size_t entries = 0;
	DIR *d = opendir(dir.data);
	struct dirent *de;
	while (d && (de = readdir(d)))
		if (strlen(de->d_name) == 69 && !strcmp(de->d_name + 64, ".json"))
			entries++;
	if (d)
		closedir(d);
	uint64_t bytes = pragma_du(dir.data);
	if (!strcmp(what, "clear")) {
		if (pragma_rm_rf(dir.data, &err) < 0) {
			rc = cli_error(&err);
			goto out;
		}
	}
	if (a->json) {
		cli_print_json(json_pack("{s:s, s:I, s:I, s:b}", "dir", dir.data, "entries", (json_int_t)entries, "bytes",
					 (json_int_t)bytes, "cleared", !strcmp(what, "clear")));
	} else if (!strcmp(what, "clear")) {
		printf("removed %zu cached LLM replies (%.1f KiB) from %s\n", entries, bytes / 1024.0, dir.data);
	} else {
		printf("%s: %zu cached LLM replies, %.1f KiB\n", dir.data, entries, bytes / 1024.0);
	}
out:
	pragma_buf_release(&dir);
	return rc;
}

static int cmd_parse(struct llm_args *a)
{
	struct pragma_err err = PRAGMA_ERR_INIT;
	struct pragma_buf text = PRAGMA_BUF_INIT;
	int rc = 0;

	if (!a->pos)
		return cli_usage_error("llm parse: which reply? (FILE, or - for stdin)");
	if (!strcmp(a->pos, "-")) {
		char chunk[65536];
		size_t k;
		while ((k = fread(chunk, 1, sizeof(chunk), stdin)) > 0 && text.len < ((size_t)16 << 20))
			pragma_buf_add(&text, chunk, k);
	} else if (pragma_read_file(a->pos, &text, (size_t)16 << 20, &err) < 0) {
		return cli_error(&err);
	}
	if (a->conductor) {
		struct pragma_conductor_reply r = PRAGMA_CONDUCTOR_REPLY_INIT;
		int prc = pragma_reply_parse_conductor(text.data, text.len, &r, &err);
		if (a->json) {
			json_t *o = json_object(), *m = json_array();
			json_object_set_new(o, "ok", json_boolean(prc == 0));
			json_object_set_new(o, "verdict", json_string(pragma_verdict_name(r.verdict)));
			json_object_set_new(o, "verdict_text", json_string(r.verdict_text.data));
			json_object_set_new(o, "bottleneck", json_string(r.bottleneck.data));
			json_object_set_new(o, "actions", json_string(r.actions.data));
			json_object_set_new(o, "algorithm", json_string(r.algorithm.data));
			for (int i = 0; i < r.n_metrics; i++)
				json_array_append_new(m, json_string(r.metrics[i]));
			json_object_set_new(o, "metrics", m);
			json_object_set_new(o, "missing", json_string(r.missing.data));
			if (prc)
				json_object_set_new(o, "error", json_string(err.msg));
			cli_print_json(o);
		} else if (prc == 0) {
			printf("verdict     %s\nbottleneck  %s\nactions     %s\n", pragma_verdict_name(r.verdict),
			       r.bottleneck.data, r.actions.data);
			if (r.algorithm.len)
				printf("algorithm   %s\n", r.algorithm.data);
			for (int i = 0; i < r.n_metrics; i++)
				printf("metric      %s\n", r.metrics[i]);
			if (r.missing.len)
				printf("missing     %s\n", r.missing.data);
		}
		if (prc)
			rc = a->json ? pragma_err_exit_code(&err) : cli_error(&err);
		pragma_conductor_reply_release(&r);
	} else {
		struct pragma_code_reply r = PRAGMA_CODE_REPLY_INIT;
		int prc = pragma_reply_parse_code(text.data, text.len, 0, &r, &err);
		if (a->json) {
			json_t *o = json_object(), *fl = json_array(), *tu = json_object();
			json_object_set_new(o, "ok", json_boolean(prc == 0));
			json_object_set_new(o, "lang", json_string(r.lang));
			json_object_set_new(o, "blocks", json_integer(r.n_blocks));
			json_object_set_new(o, "chosen", json_integer(r.chosen));
			json_object_set_new(o, "defines_forward", json_boolean(r.defines_forward));
			json_object_set_new(o, "truncated", json_boolean(r.truncated));
			for (int i = 0; i < r.n_flags; i++)
				json_array_append_new(fl, json_string(r.flags[i]));
			json_object_set_new(o, "flags", fl);
			for (int i = 0; i < r.n_tunables; i++) {
				json_t *vals = json_array();
				for (int k = 0; k < r.tunables[i].n_values; k++)
					json_array_append_new(vals, json_string(r.tunables[i].values[k]));
				json_object_set_new(tu, r.tunables[i].name, vals);
			}
			json_object_set_new(o, "tunables", tu);
			json_object_set_new(o, "notes", json_string(r.notes.data));
			json_object_set_new(o, "code", json_stringn(r.code.data, r.code.len));
			if (prc)
				json_object_set_new(o, "error", json_string(err.msg));
			cli_print_json(o);
		} else if (prc == 0) {
			fwrite(r.code.data, 1, r.code.len, stdout);
			if (r.notes.len)
				fprintf(stderr, "%s", r.notes.data);
		}
		if (prc)
			rc = a->json ? pragma_err_exit_code(&err) : cli_error(&err);
		pragma_code_reply_release(&r);
	}
	pragma_buf_release(&text);
	return rc;
}

int cmd_llm(int argc, char **argv)
{
	struct llm_args a = { .opt = PRAGMA_LLM_OPTIONS_INIT };
	const char *sub;
	int rc;

	if (argc < 2 || !strcmp(argv[1], "--help") || !strcmp(argv[1], "-h")) {
		usage(argc < 2 ? stderr : stdout);
		return argc < 2 ? 2 : 0;
	}
	sub = argv[1];
	if (cli_wants_help(argc - 1, argv + 1)) {
		usage(stdout);
		return 0;
	}
	if ((rc = parse_args(argc - 1, argv + 1, &a)))
		return rc;
	if (!strcmp(sub, "ping"))
		return cmd_ping(&a);
	if (!strcmp(sub, "ask"))
		return cmd_ask(&a);
	if (!strcmp(sub, "config"))
		return cmd_config(&a);
	if (!strcmp(sub, "prices"))
		return cmd_prices(&a);
	if (!strcmp(sub, "cache"))
		return cmd_cache_llm(&a);
	if (!strcmp(sub, "parse"))
		return cmd_parse(&a);
	fprintf(stderr, "pragma: 'llm %s' is not a subcommand\n", sub);
	usage(stderr);
	return 2;
}
