/*
 * The PyTorch bridge's `time` command line and its serve mode: one warm
 * process that times forward() in rounds on request ("time N\n" → one JSON
 * line with N times; "quit\n"). The timing layer's baseline side
 * (lib/timing/session.c) talks to it; the GPU timing script
 * (runtime/cuda/torch_cuda_time.py) takes the same command line.
 */
#include <errno.h>
#include <inttypes.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pragma/bridge.h"
#include "pragma/proc.h"
#include "pragma/refdata.h"
#include "pragma/task.h"

void pragma_bridge_time_args(struct pragma_bridge_args *a, const struct pragma_task *t,
			     const struct pragma_refset *sets, int n_sets, int warmup, int reps, int threads, int cold,
			     uint64_t flush_bytes, int serve)
{
	memset(a->argv, 0, sizeof(a->argv));
	a->n = 0;
	pragma_buf_init(&a->dirs);
	for (int s = 0; s < n_sets; s++)
		pragma_buf_addf(&a->dirs, "%s%s", s ? "," : "", sets[s].dir);
	snprintf(a->warm, sizeof(a->warm), "%d", warmup);
	snprintf(a->reps, sizeof(a->reps), "%d", reps);
	snprintf(a->threads, sizeof(a->threads), "%d", threads);
	snprintf(a->flush, sizeof(a->flush), "%" PRIu64, flush_bytes);
	a->argv[a->n++] = "time";
	a->argv[a->n++] = t->path;
	a->argv[a->n++] = "--data";
	a->argv[a->n++] = a->dirs.data;
	a->argv[a->n++] = "--warmup";
	a->argv[a->n++] = a->warm;
	a->argv[a->n++] = "--reps";
	a->argv[a->n++] = a->reps;
	a->argv[a->n++] = "--threads";
	a->argv[a->n++] = a->threads;
	a->argv[a->n++] = cold ? "--cold" : "--warm";
	a->argv[a->n++] = "--flush-bytes";
	a->argv[a->n++] = a->flush;
	for (int k = 0; k < t->n_overrides && a->n < 150; k++) {
		a->argv[a->n++] = "--set";
		a->argv[a->n++] = t->overrides[k];
	}
	if (serve)
		a->argv[a->n++] = "--serve";
	a->argv[a->n] = NULL;
}

void pragma_bridge_args_release(struct pragma_bridge_args *a)
{
	pragma_buf_release(&a->dirs);
}

struct pragma_bridge_server {
	struct pragma_child c;
	int to, from;
	struct pragma_buf in;
	const char *argv[200];
};

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* One JSON line within timeout_ms, or NULL (lines that are not JSON, a
 * library's chatter, are skipped). */
static json_t *line(struct pragma_bridge_server *s, int timeout_ms)
{
	double deadline = mono_ms() + timeout_ms;

	for (;;) {
		char *nl = memchr(s->in.data, '\n', s->in.len);
		if (nl) {
			size_t n = (size_t)(nl - s->in.data);
			json_error_t jerr;
			json_t *o = json_loadb(s->in.data, n, 0, &jerr);
			memmove(s->in.data, nl + 1, s->in.len - n - 1);
			pragma_buf_setlen(&s->in, s->in.len - n - 1);
			if (o)
				return o;
			continue;
		}
		double left = deadline - mono_ms();
		if (left <= 0 || s->in.len > (16u << 20))
			return NULL;
		struct pollfd p = { .fd = s->from, .events = POLLIN };
		int r = poll(&p, 1, (int)left + 1);
		if (r <= 0)
			continue;
		char chunk[65536];
		ssize_t n = read(s->from, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return NULL;
		pragma_buf_add(&s->in, chunk, (size_t)n);
	}
}

static int send_cmd(struct pragma_bridge_server *s, const char *cmd)
{
	sigset_t pipe_set, old;
	ssize_t n;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	n = write(s->to, cmd, strlen(cmd));
	if (n < 0 && errno == EPIPE) {
		struct timespec zero = { 0, 0 };
		sigtimedwait(&pipe_set, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return n == (ssize_t)strlen(cmd) ? 0 : -1;
}

static int failed(json_t *ans, const char *what, struct pragma_err *err)
{
	const char *m = json_string_value(json_object_get(ans, "message"));

	pragma_err_set(err, PRAGMA_E_ENV, "the PyTorch baseline failed %s%s%s", what, m ? ": " : "", m ? m : "");
	pragma_err_hint(err, "try 'pragma baseline TASK' to see the bridge's own error");
	json_decref(ans);
	return -1;
}

int pragma_bridge_serve_start(const char *script, const struct pragma_bridge_args *a, int threads, int timeout_ms,
			      struct pragma_bridge_server **out, json_t **config, struct pragma_err *err)
{
	struct pragma_bridge_server *s = calloc(1, sizeof(*s));
	json_t *ready;
	int n = 0;

	*out = NULL;
	s->c = (struct pragma_child)PRAGMA_CHILD_INIT;
	s->to = s->from = -1;
	pragma_buf_init(&s->in);
	s->argv[n++] = pragma_bridge_python();
	s->argv[n++] = script;
	for (int i = 0; i < a->n && n < 198; i++)
		s->argv[n++] = a->argv[i];
	s->argv[n] = NULL;
	s->c.argv = s->argv;
	s->c.env = pragma_bridge_env(threads > 0 ? threads : 1);
	s->c.inherit_err = 0;
	if (pragma_child_start(&s->c, &s->to, &s->from, err) < 0) {
		pragma_err_hint(err, "install python3-torch (scripts/install-deps.sh) or set PRAGMA_PYTHON");
		pragma_bridge_serve_stop(s);
		return -1;
	}
	ready = line(s, timeout_ms > 0 ? timeout_ms : 600000);
	if (!ready || !json_is_true(json_object_get(ready, "ok"))) {
		failed(ready, "to start", err);
		pragma_bridge_serve_stop(s);
		return -1;
	}
	if (config)
		*config = json_incref(json_object_get(ready, "config"));
	json_decref(ready);
	*out = s;
	return 0;
}

int pragma_bridge_serve_time(struct pragma_bridge_server *s, int reps, int timeout_ms, double **times, int *n,
			     struct pragma_err *err)
{
	char cmd[32];
	json_t *ans, *t, *x;
	size_t i;

	snprintf(cmd, sizeof(cmd), "time %d\n", reps);
	if (send_cmd(s, cmd) < 0)
		return failed(NULL, "(it exited)", err);
	ans = line(s, timeout_ms > 0 ? timeout_ms : 600000);
	if (!ans || !json_is_true(json_object_get(ans, "ok")))
		return failed(ans, "during a round", err);
	t = json_object_get(ans, "times_ms");
	*times = realloc(*times, sizeof(double) * (size_t)(*n + (int)json_array_size(t) + 1));
	json_array_foreach(t, i, x)
		(*times)[(*n)++] = json_number_value(x);
	json_decref(ans);
	return 0;
}

int pragma_bridge_serve_pid(const struct pragma_bridge_server *s)
{
	return s && s->c.pid > 0 ? (int)s->c.pid : 0;
}

void pragma_bridge_serve_stop(struct pragma_bridge_server *s)
{
	if (!s)
		return;
	if (s->to >= 0) {
		send_cmd(s, "quit\n");
		close(s->to);
	}
	if (s->from >= 0)
		close(s->from);
	if (s->c.pid > 0)
		pragma_child_wait(&s->c, 5000);
	pragma_child_release(&s->c);
	pragma_buf_release(&s->in);
	free(s);
}
