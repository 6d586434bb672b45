/*
 * The final comparison (DESIGN 3.5): baseline and candidate each in one warm
 * process — the PyTorch bridge in `time --serve` mode, or the native
 * reference in a harness server — asked for rounds of timed calls in turn
 * (B C, C B, B C, ... so neither always goes first). Same protocol on both
 * sides: warm-up, cold cache by default, the verified input sets in turn,
 * the same thread count. Speedup = baseline median / candidate median; its
 * spread is the range and quartiles of the per-round ratios.
 *
 * The candidate's outputs of its last timed call on each set come back and
 * are checked like any other (timed_mismatch), and a time below what the
 * task's minimal bytes need at the machine's peak bandwidth is
 * impossible_speed.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <math.h>
#include <poll.h>
#include <pthread.h>
#include <signal.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>
#include <unistd.h>

#include "pragma/bridge.h"
#include "pragma/cuda.h"
#include "pragma/fs.h"
#include "pragma/log.h"
#include "pragma/machine.h"
#include "verify/verify_priv.h"

/* Run-queue delay (share of a round's wall time) below which a round
 * counts as undisturbed. */
#define DISTURBANCE_OK 0.05
/* Share of all CPUs others may keep busy for the machine to count as quiet. */
#define QUIET_SHARE 0.15

static void pause_ms(int ms);

/* ------------------------------------------------------- the torch bridge */

struct bridge {
	struct pragma_child c;
	int to, from;
	struct pragma_buf in, script, dirs;
	char warm[16], thr[16], fl[32];
	const char *argv[160];
	json_t *config;
};

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
}

/* One JSON line from the bridge within timeout_ms, or NULL. */
static json_t *bridge_line(struct bridge *b, int timeout_ms)
{
	double deadline = mono_ms() + timeout_ms;

	for (;;) {
		char *nl = memchr(b->in.data, '\n', b->in.len);
		if (nl) {
			size_t n = (size_t)(nl - b->in.data);
			json_error_t jerr;
			json_t *o = json_loadb(b->in.data, n, 0, &jerr);
			memmove(b->in.data, nl + 1, b->in.len - n - 1);
			pragma_buf_setlen(&b->in, b->in.len - n - 1);
			if (o)
				return o;
			continue; /* not JSON: skip */
		}
		double left = deadline - mono_ms();
		if (left <= 0 || b->in.len > (16u << 20))
			return NULL;
		struct pollfd p = { .fd = b->from, .events = POLLIN };
		int r = poll(&p, 1, (int)left + 1);
		if (r < 0 && errno == EINTR)
			continue;
		if (r <= 0)
			continue;
		char chunk[65536];
		ssize_t n = read(b->from, chunk, sizeof(chunk));
		if (n < 0 && errno == EINTR)
			continue;
		if (n <= 0)
			return NULL;
		pragma_buf_add(&b->in, chunk, (size_t)n);
	}
}

static int bridge_send(struct bridge *b, const char *s)
{
	sigset_t pipe_set, old;
	ssize_t n;

	sigemptyset(&pipe_set);
	sigaddset(&pipe_set, SIGPIPE);
	pthread_sigmask(SIG_BLOCK, &pipe_set, &old);
	n = write(b->to, s, strlen(s));
	if (n < 0 && errno == EPIPE) {
		struct timespec zero = { 0, 0 };
		sigtimedwait(&pipe_set, NULL, &zero);
	}
	pthread_sigmask(SIG_SETMASK, &old, NULL);
	return n == (ssize_t)strlen(s) ? 0 : -1;
}

static void bridge_free(struct bridge *b)
{
	if (b->to >= 0)
		close(b->to);
	if (b->from >= 0)
		close(b->from);
	b->to = b->from = -1;
	if (b->c.pid > 0)
		pragma_child_wait(&b->c, 5000);
	pragma_child_release(&b->c);
	pragma_buf_release(&b->in);
	pragma_buf_release(&b->script);
	pragma_buf_release(&b->dirs);
	json_decref(b->config);
	b->config = NULL;
}

static int bridge_fail(struct bridge *b, json_t *ans, const char *what, struct pragma_err *err)
{
	const char *m = json_string_value(json_object_get(ans, "message"));

	pragma_err_set(err, PRAGMA_E_ENV, "the PyTorch baseline failed %s%s%s", what, m ? ": " : "", m ? m : "");
	pragma_err_hint(err, "try 'pragma baseline %s' to see the bridge's own error", "TASK");
	json_decref(ans);
	return -1;
}

static int bridge_start(struct bridge *b, struct vctx *c, int warmup, struct pragma_err *err)
{
	const struct pragma_task *t = c->t;
	json_t *ready;
	int n = 0;

	memset(b, 0, sizeof(*b));
	b->c = (struct pragma_child)PRAGMA_CHILD_INIT;
	b->to = b->from = -1;
	pragma_buf_init(&b->in);
	pragma_buf_init(&b->script);
	pragma_buf_init(&b->dirs);
	if (pragma_data_path("bridge/pragma_bridge.py", &b->script, err) < 0)
		return -1;
	/* CUDA backend (issue 8): PyTorch on the same GPU when the bridge's
	 * Python has a CUDA torch (same command line, CUDA events inside). */
	if (c->harness) {
		char why[512];
		if (pragma_cuda_torch_available(why, sizeof(why))) {
			pragma_buf_reset(&b->script);
			if (pragma_cuda_torch_script(&b->script, err) < 0)
				return -1;
		} else {
			vwarn(c->v, "the PyTorch baseline ran on the CPU: %.300s", why);
		}
	}
	for (int s = 0; s < c->n_sets; s++)
		pragma_buf_addf(&b->dirs, "%s%s", s ? "," : "", c->sets[s].dir);
	snprintf(b->warm, sizeof(b->warm), "%d", warmup);
	snprintf(b->thr, sizeof(b->thr), "%d", c->threads);
	snprintf(b->fl, sizeof(b->fl), "%" PRIu64, pragma_flush_bytes());
	b->argv[n++] = pragma_bridge_python();
	b->argv[n++] = b->script.data;
	b->argv[n++] = "time";
	b->argv[n++] = t->path;
	b->argv[n++] = "--data";
	b->argv[n++] = b->dirs.data;
	b->argv[n++] = "--warmup";
	b->argv[n++] = b->warm;
	b->argv[n++] = "--reps";
	b->argv[n++] = "1";
	b->argv[n++] = "--threads";
	b->argv[n++] = b->thr;
	b->argv[n++] = c->o->cold ? "--cold" : "--warm";
	b->argv[n++] = "--flush-bytes";
	b->argv[n++] = b->fl;
	for (int k = 0; k < t->n_overrides && n < 150; k++) {
		b->argv[n++] = "--set";
		b->argv[n++] = t->overrides[k];
	}
	b->argv[n++] = "--serve";
	b->argv[n] = NULL;
	b->c.argv = b->argv;
	b->c.env = pragma_bridge_env(c->threads);
	b->c.inherit_err = 0;
	if (pragma_child_start(&b->c, &b->to, &b->from, err) < 0) {
		pragma_err_hint(err, "install python3-torch (scripts/install-deps.sh) or set PRAGMA_PYTHON");
		return -1;
	}
	ready = bridge_line(b, 600000);
	if (!ready || !json_is_true(json_object_get(ready, "ok")))
		return bridge_fail(b, ready, "to start", err);
	b->config = json_incref(json_object_get(ready, "config"));
	json_decref(ready);
	return 0;
}

/* Append one round's times to tm. */
static int bridge_round(struct bridge *b, int reps, int timeout_ms, struct pragma_vtiming *tm, struct pragma_err *err)
{
	char cmd[32];
	json_t *ans, *times, *x;
	size_t i;

	snprintf(cmd, sizeof(cmd), "time %d\n", reps);
	if (bridge_send(b, cmd) < 0)
		return bridge_fail(b, NULL, "(it exited)", err);
	ans = bridge_line(b, timeout_ms);
	if (!ans || !json_is_true(json_object_get(ans, "ok")))
		return bridge_fail(b, ans, "during a round", err);
	times = json_object_get(ans, "times_ms");
	tm->times_ms = realloc(tm->times_ms, sizeof(double) * (size_t)(tm->n_times + (int)json_array_size(times) + 1));
	json_array_foreach(times, i, x)
		tm->times_ms[tm->n_times++] = json_number_value(x);
	json_decref(ans);
	return 0;
}

/* ------------------------------------------------------- interference */

/* Nanoseconds the process's threads have spent runnable but not running
 * (field 2 of /proc/<pid>/task/<tid>/schedstat): time other processes took
 * from it. 0 when unknown. */
static uint64_t run_delay_ns(int pid)
{
	char path[64];
	DIR *d;
	struct dirent *de;
	uint64_t total = 0;

	if (pid <= 0)
		return 0;
	snprintf(path, sizeof(path), "/proc/%d/task", pid);
	d = opendir(path);
	if (!d)
		return 0;
	while ((de = readdir(d))) {
		char p[320];
		unsigned long long run, wait;
		FILE *f;
		if (de->d_name[0] == '.')
			continue;
		snprintf(p, sizeof(p), "/proc/%d/task/%s/schedstat", pid, de->d_name);
		f = fopen(p, "r");
		if (!f)
			continue;
		if (fscanf(f, "%llu %llu", &run, &wait) == 2)
			total += wait;
		fclose(f);
	}
	closedir(d);
	return total;
}

/* CPU ticks busy and total since boot, all CPUs, from /proc/stat. */
static int cpu_ticks(unsigned long long *busy, unsigned long long *total)
{
	unsigned long long v[10] = { 0 };
	FILE *f = fopen("/proc/stat", "r");
	int n;

	if (!f)
		return -1;
	n = fscanf(f, "cpu %llu %llu %llu %llu %llu %llu %llu %llu", &v[0], &v[1], &v[2], &v[3], &v[4], &v[5], &v[6],
		   &v[7]);
	fclose(f);
	if (n < 4)
		return -1;
	*total = 0;
	for (int i = 0; i < 8; i++)
		*total += v[i];
	*busy = *total - v[3] - v[4]; /* all but idle and iowait; steal counts as busy */
	return 0;
}

/* Before a round, wait (within *budget_ms) until the machine has been
 * quiet for a 60 ms window: both sides are idle then, so what keeps the
 * CPUs busy is someone else, and a round run now would be disturbed.
 * Returns the share of the CPUs others used in the last window. */
static double wait_quiet(double *budget_ms)
{
	double share = 0;

	for (;;) {
		unsigned long long b0, t0, b1, t1;
		if (cpu_ticks(&b0, &t0) < 0)
			return 0;
		pause_ms(60);
		if (cpu_ticks(&b1, &t1) < 0 || t1 <= t0)
			return 0;
		share = (double)(b1 - b0) / (double)(t1 - t0);
		if (share <= QUIET_SHARE || *budget_ms <= 0)
			return share;
		pause_ms(140);
		*budget_ms -= 200;
	}
}

/* -------------------------------------------------------------- sides */

struct side {
	int is_bridge, is_baseline;
	struct bridge br;
	struct pragma_run_server *h;
	struct pragma_run_opts ro;
	struct pragma_run_result rr;
	struct pragma_buf so;        /* native baseline's object */
	const char *preload[16];
	struct pragma_symbols syms;
	struct pragma_vtiming *tm;
};

static void round_median(struct pragma_vtiming *tm, int from, double delay)
{
	struct pragma_stats st;

	pragma_stats_compute(tm->times_ms + from, tm->n_times - from, &st);
	tm->round_median = realloc(tm->round_median, sizeof(double) * (size_t)(tm->n_rounds + 1));
	tm->round_delay = realloc(tm->round_delay, sizeof(double) * (size_t)(tm->n_rounds + 1));
	tm->round_count = realloc(tm->round_count, sizeof(int) * (size_t)(tm->n_rounds + 1));
	tm->round_median[tm->n_rounds] = st.median;
	tm->round_delay[tm->n_rounds] = delay;
	tm->round_count[tm->n_rounds++] = tm->n_times - from;
}

/* Keep only round pairs (round r of both sides, measured back to back) in
 * which neither side lost more than DISTURBANCE_OK of its time to other
 * processes, when at least a third of them (and 3) qualify: calls known to
 * be disturbed say nothing about the kernels. Dropping whole pairs keeps the
 * selection symmetric. Returns how many rounds are kept. */
static int keep_undisturbed(struct pragma_vtiming *a, struct pragma_vtiming *b, int *clean)
{
	int n = a->n_rounds < b->n_rounds ? a->n_rounds : b->n_rounds, keep = 0;
	struct pragma_vtiming *side[2] = { a, b };

	for (int r = 0; r < n; r++)
		keep += a->round_delay[r] <= DISTURBANCE_OK && b->round_delay[r] <= DISTURBANCE_OK;
	*clean = keep;
	if (keep == n || keep < 3 || 3 * keep < n)
		return n;
	for (int k = 0; k < 2; k++) {
		struct pragma_vtiming *t = side[k];
		int from = 0, to = 0, rr = 0;
		for (int r = 0; r < n; r++) {
			int cnt = t->round_count[r];
			if (a->round_delay[r] <= DISTURBANCE_OK && b->round_delay[r] <= DISTURBANCE_OK) {
				memmove(t->times_ms + to, t->times_ms + from, sizeof(double) * (size_t)cnt);
				t->round_median[rr] = t->round_median[r];
				t->round_delay[rr] = t->round_delay[r];
				t->round_count[rr++] = cnt;
				to += cnt;
			}
			from += cnt;
		}
		t->n_times = to;
		t->n_rounds = rr;
	}
	return keep;
}

static void harness_opts(struct vctx *c, struct pragma_run_opts *ro, const char *so, const char *sub,
			 const char *const *preload, struct pragma_buf *dir)
{
	memset(ro, 0, sizeof(*ro));
	pragma_buf_reset(dir);
	pragma_buf_addf(dir, "%s/%s", c->work, sub);
	ro->kernel_so = so;
	ro->task = c->t;
	ro->sets = c->sets;
	ro->n_sets = c->n_sets;
	ro->work_dir = dir->data;
	ro->time_mode = 1;
	ro->warmup = c->o->warmup >= 0 ? c->o->warmup : 3;
	ro->cold = c->o->cold;
	ro->threads = c->threads;
	ro->timeout_ms = c->o->round_timeout_ms > 0 ? c->o->round_timeout_ms : 120000;
	ro->sandbox = !c->o->no_sandbox;
	ro->preload = preload;
}

static int cmp_double(const void *a, const void *b)
{
	double x = *(const double *)a, y = *(const double *)b;

	return x < y ? -1 : x > y;
}

static double quantile(const double *sorted, int n, double q)
{
	double pos = q * (n - 1);
	int lo = (int)pos;

	if (n <= 0)
		return 0;
	if (lo + 1 >= n)
		return sorted[n - 1];
	return sorted[lo] + (pos - lo) * (sorted[lo + 1] - sorted[lo]);
}

/* The outputs of the timed calls, checked like the verified ones. */
static int check_timed(struct vctx *c, const char *dir, json_t *timed_calls, struct pragma_err *err)
{
	struct vctx tc = *c;

	snprintf(tc.work, sizeof(tc.work), "%s", dir);
	for (int s = 0; s < c->n_sets; s++) {
		if (json_integer_value(json_array_get(timed_calls, (size_t)s)) <= 0)
			continue;
		for (int k = 0; k < c->t->n_outputs; k++) {
			struct pragma_tensor ref = PRAGMA_TENSOR_INIT, got = PRAGMA_TENSOR_INIT;
			struct pragma_cmp m;
			int rc = vload_ref(c, s, k, &ref, err) < 0 || vload_cand(&tc, s, "timed", k, &got, err) < 0 ? -1 : 0;

			if (rc == 0 && vcompare(c, k, &got, &ref, &m) == 1) {
				char d[768];
				vdescribe(d, sizeof(d), k, s, &ref, &m, " in a timed call");
				vreject(c->v, PRAGMA_V_TIMED_MISMATCH,
					"%s, though the verified calls were right: the kernel behaves differently on "
					"later calls",
					d);
			}
			pragma_tensor_release(&ref);
			pragma_tensor_release(&got);
			if (rc < 0)
				return -1;
			if (c->v->status)
				return 0;
		}
	}
	return 0;
}

static void pause_ms(int ms)
{
	struct timespec ts = { 0, ms * 1000000L };

	nanosleep(&ts, NULL);
}


static int side_pid(struct side *sd)
{
	return sd->is_bridge ? (int)sd->br.c.pid : pragma_run_server_pid(sd->h);
}

/* One round of reps timed calls on one side into tm. 0 ok; 1 the candidate
 * failed (verdict set); -1 error. */
static int side_round(struct side *sd, struct vctx *c, int reps, int round_to, struct pragma_vtiming *tm,
		      struct pragma_err *err)
{
	struct pragma_run_result *rr = &sd->rr;

	if (sd->is_bridge)
		return bridge_round(&sd->br, reps, round_to, tm, err) < 0 ? -1 : 0;
	free(rr->times_ms);
	rr->times_ms = NULL;
	rr->n_times = 0;
	if (pragma_run_serve_time(sd->h, reps, round_to, rr, err) < 0)
		return -1;
	if (!rr->ok) {
		if (sd->is_baseline) {
			pragma_err_set(err, PRAGMA_E_INPUT, "the task's baseline failed (%s): %s", rr->status,
				       rr->message);
			return -1;
		}
		vfrom_run(c->v, rr, " while timed");
		return 1;
	}
	tm->times_ms = realloc(tm->times_ms, sizeof(double) * (size_t)(tm->n_times + rr->n_times + 1));
	memcpy(tm->times_ms + tm->n_times, rr->times_ms, sizeof(double) * (size_t)rr->n_times);
	tm->n_times += rr->n_times;
	return 0;
}

/* Start the baseline's process for session `sess` (0, 1). */
static int start_baseline(struct vctx *c, struct side *base, int warmup, struct pragma_buf *dir, int sess,
			  struct pragma_err *err)
{
	struct pragma_verdict *v = c->v;

	base->is_baseline = 1;
	base->tm = &v->base;
	if (c->t->kind == PRAGMA_TASK_KERNELBENCH) {
		base->is_bridge = 1;
		if (bridge_start(&base->br, c, warmup, err) < 0)
			return -1;
		if (!v->baseline_config) {
			snprintf(v->baseline_kind, sizeof(v->baseline_kind), "pytorch");
			v->baseline_config = json_incref(base->br.config);
		}
		return 0;
	}
	if (!base->so.len) {
		struct pragma_buf src = PRAGMA_BUF_INIT;
		pragma_buf_addf(&src, "%s/%s", c->t->path, c->t->has_baseline_c ? "baseline.c" : "reference.c");
		if (pragma_build_cached(src.data, NULL, &base->so, err) < 0 ||
		    pragma_symbols_read(base->so.data, &base->syms, err) < 0) {
			pragma_err_prefix(err, "building the baseline %s", src.data);
			pragma_buf_release(&src);
			return -1;
		}
		pragma_buf_release(&src);
		pragma_symbols_preload(&base->syms, base->preload, 16);
	}
	{
		char sub[64];
		snprintf(sub, sizeof(sub), "timing-baseline-%d", sess + 1);
		harness_opts(c, &base->ro, base->so.data, sub, base->preload, dir);
	}
	if (pragma_run_serve_start(&base->ro, &base->h, &base->rr, err) < 0)
		return -1;
	if (!base->h)
		return pragma_err_set(err, PRAGMA_E_INPUT, "the task's %s failed in the harness (%s): %s",
				      c->t->has_baseline_c ? "baseline.c" : "reference.c", base->rr.status,
				      base->rr.message);
	if (!v->baseline_config) {
		snprintf(v->baseline_kind, sizeof(v->baseline_kind), "%s",
			 c->t->has_baseline_c ? "c-baseline" : "c-reference");
		v->baseline_config = json_pack("{s:s, s:s, s:s, s:i}", "source",
					       c->t->has_baseline_c ? "baseline.c" : "reference.c", "compiler",
					       pragma_compiler_version(getenv("PRAGMA_CC") && *getenv("PRAGMA_CC") ?
								       getenv("PRAGMA_CC") : "gcc"),
					       "flags", "-O3 -march=native -fopenmp", "threads", c->threads);
	}
	return 0;
}

/* Start the candidate's process; 1 when it failed in warm-up (verdict set). */
static int start_candidate(struct vctx *c, struct side *cand, const char *cand_so, struct pragma_buf *dir, int sess,
			   struct pragma_err *err)
{
	cand->tm = &c->v->cand;
	pragma_run_result_release(&cand->rr);
	{
		char sub[64];
		snprintf(sub, sizeof(sub), "timing-%d", sess + 1);
		harness_opts(c, &cand->ro, cand_so, sub, c->preload, dir);
	}
	if (c->harness) {
		/* CUDA backend: the CUDA harness, no address-space or CPU-time cap. */
		cand->ro.harness = c->harness;
		c->cuda_limits.cpu_seconds = 0;
		cand->ro.limits = cand->ro.sandbox ? &c->cuda_limits : NULL;
	}
	cand->ro.save_timed = 1;
	cand->ro.final_settle_ms = 20;
	if (pragma_run_serve_start(&cand->ro, &cand->h, &cand->rr, err) < 0)
		return -1;
	if (!cand->h) {
		vfrom_run(c->v, &cand->rr, " while timed");
		return 1;
	}
	return 0;
}

/* The candidate writes the outputs of its timed calls and reports; they
 * are checked. 0 ok; 1 verdict set; -1 error. */
static int finish_candidate(struct vctx *c, struct side *cand, const char *dir, struct pragma_err *err)
{
	struct pragma_run_result fin = { 0 };
	int ret = 0;

	if (pragma_run_serve_finish(cand->h, &fin, err) < 0)
		ret = -1;
	else if (!fin.ok) {
		vfrom_run(c->v, &fin, " while timed");
		ret = 1;
	} else if (check_timed(c, dir, json_object_get(fin.raw, "timed_calls"), err) < 0) {
		ret = -1;
	} else if (c->v->status) {
		ret = 1;
	}
	pragma_run_result_release(&fin);
	pragma_run_server_free(cand->h);
	cand->h = NULL;
	return ret;
}

static void stop_baseline(struct side *base)
{
	struct pragma_err e = PRAGMA_ERR_INIT;

	if (base->is_bridge) {
		if (base->br.to >= 0)
			bridge_send(&base->br, "quit\n");
		bridge_free(&base->br);
	} else {
		if (base->h)
			pragma_run_serve_finish(base->h, &base->rr, &e);
		pragma_run_server_free(base->h);
		base->h = NULL;
	}
	pragma_run_result_release(&base->rr);
}

struct rounds_state {
	int round;                   /* rounds made so far, both sessions */
	int clean;                   /* of them undisturbed on both sides */
	double quiet_budget;
	int max_attempts, reps, round_to, base_round_to;
};

/* Rounds until `want` more ran undisturbed on both sides, or three times as
 * many were made — unless the first `want` show a saturated machine (under
 * a quarter clean), where more would not help. 0 ok; 1 verdict; -1 error. */
static int run_rounds(struct vctx *c, struct side *base, struct side *cand, int want, struct rounds_state *st,
		      struct pragma_err *err)
{
	struct pragma_verdict *v = c->v;
	int made = 0, clean = 0;

	while (clean < want && made < 3 * want && !(made >= want && 4 * clean < want)) {
		struct side *order[2] = { base, cand };
		if (st->round % 2) {
			order[0] = cand;
			order[1] = base;
		}
		for (int i = 0; i < 2; i++) {
			struct side *sd = order[i];
			struct pragma_vtiming best = { 0 };
			double best_frac = -1;
			int attempts = 0;

			/* A round during which other processes took the CPU from
			 * this side (run-queue delay of its threads) is measured
			 * again, up to max_attempts times; the least disturbed
			 * attempt counts. Both sides alike, so it stays fair. */
			for (;;) {
				struct pragma_vtiming try = { 0 };
				uint64_t d0, d1;
				double t0, t1, frac;
				int rc;

				/* Let the other side's spinning OpenMP threads go
				 * idle (libgomp spins ~4 ms after a parallel region);
				 * before a session's first round and before a retry,
				 * let others' work pass. */
				pause_ms(8);
				if ((made == 0 && i == 0) || attempts)
					wait_quiet(&st->quiet_budget);
				d0 = run_delay_ns(side_pid(sd));
				t0 = mono_ms();
				rc = side_round(sd, c, st->reps, sd->is_baseline ? st->base_round_to : st->round_to, &try,
						err);
				t1 = mono_ms();
				d1 = run_delay_ns(side_pid(sd));
				if (rc != 0) {
					free(try.times_ms);
					free(best.times_ms);
					return rc;
				}
				attempts++;
				frac = t1 > t0 && d1 >= d0 ? (double)(d1 - d0) / ((t1 - t0) * 1e6) : 0;
				if (best_frac < 0 || frac < best_frac) {
					free(best.times_ms);
					best = try;
					best_frac = frac;
				} else {
					free(try.times_ms);
				}
				if (frac <= DISTURBANCE_OK || attempts >= st->max_attempts)
					break;
			}
			if (attempts > 1)
				v->retried_rounds++;
			if (best_frac > v->worst_disturbance)
				v->worst_disturbance = best_frac;
			{
				int from = sd->tm->n_times;
				sd->tm->times_ms = realloc(sd->tm->times_ms,
							   sizeof(double) * (size_t)(sd->tm->n_times + best.n_times + 1));
				memcpy(sd->tm->times_ms + from, best.times_ms, sizeof(double) * (size_t)best.n_times);
				sd->tm->n_times += best.n_times;
				round_median(sd->tm, from, best_frac);
			}
			free(best.times_ms);
		}
		int ok = v->cand.round_delay[v->cand.n_rounds - 1] <= DISTURBANCE_OK &&
			 v->base.round_delay[v->base.n_rounds - 1] <= DISTURBANCE_OK;
		clean += ok;
		st->clean += ok;
		st->round++;
		made++;
	}
	return 0;
}

int verify_time(struct vctx *c, const char *cand_so, struct pragma_err *err)
{
	struct pragma_verdict *v = c->v;
	const struct pragma_verify_opts *o = c->o;
	struct side base = { 0 }, cand = { 0 };
	struct pragma_buf bdir = PRAGMA_BUF_INIT, cdir = PRAGMA_BUF_INIT;
	int rounds = o->rounds > 0 ? o->rounds : 15;
	int warmup = o->warmup >= 0 ? o->warmup : 3;
	struct rounds_state st = { 0 };
	int ret = -1, rc;
	struct pragma_machine m;
	struct pragma_err merr = PRAGMA_ERR_INIT;
	double t_start = mono_ms();

	st.reps = o->reps > 0 ? o->reps : 5;
	st.max_attempts = o->max_attempts > 0 ? o->max_attempts : 3;
	st.quiet_budget = o->max_wait_ms > 0 ? o->max_wait_ms : o->max_wait_ms < 0 ? 0 : 20000;
	/* A round is a few calls; the verification run made 3 per set with
	 * checks. Ten times that, within [30 s, 10 min], before calling a
	 * round hung — the baseline (maybe far slower) gets the maximum. */
	st.round_to = o->round_timeout_ms > 0 ? o->round_timeout_ms :
		      c->verify_wall_ms * 10 < 30000 ? 30000 : c->verify_wall_ms * 10 > 600000 ? 600000 :
											(int)(c->verify_wall_ms * 10);
	st.base_round_to = o->round_timeout_ms > 0 ? o->round_timeout_ms : 600000;
	v->timed = 1;
	pragma_buf_init(&base.so);
	pragma_buf_init(&cand.so);

	/* Sessions (default 4), each a fresh pair of processes, started
	 * baseline-first and candidate-first in turn. Which process starts
	 * second (and gets the memory the other did not) measurably favors it,
	 * by a few percent on memory-bound kernels; alternating cancels that,
	 * and several pairs of processes average over where each process's
	 * buffers happened to land, fixed for a process's life. */
	int sessions = o->sessions > 0 ? o->sessions : 4;
	if (sessions > rounds)
		sessions = rounds;
	for (int sess = 0; sess < sessions; sess++) {
		int want = rounds / sessions + (sess < rounds % sessions);
		if (!want)
			continue;
		pragma_buf_reset(&bdir);
		pragma_buf_reset(&cdir);
		if (sess % 2 == 0) {
			if (start_baseline(c, &base, warmup, &bdir, sess, err) < 0)
				goto out;
			pragma_debug("eval: baseline process ready after %.0f ms", mono_ms() - t_start);
			rc = start_candidate(c, &cand, cand_so, &cdir, sess, err);
		} else {
			rc = start_candidate(c, &cand, cand_so, &cdir, sess, err);
			if (rc == 0 && start_baseline(c, &base, warmup, &bdir, sess, err) < 0)
				goto out;
		}
		if (rc) {
			ret = rc > 0 ? 0 : -1;
			goto out;
		}
		pragma_debug("eval: session %d ready after %.0f ms", sess + 1, mono_ms() - t_start);
		rc = run_rounds(c, &base, &cand, want, &st, err);
		if (rc == 0)
			rc = finish_candidate(c, &cand, cdir.data, err);
		stop_baseline(&base);
		if (rc) {
			ret = rc > 0 ? 0 : -1;
			goto out;
		}
	}
	pragma_debug("eval: rounds done after %.0f ms", mono_ms() - t_start);
	v->waited_ms = (o->max_wait_ms > 0 ? o->max_wait_ms : o->max_wait_ms < 0 ? 0 : 20000) - st.quiet_budget;
	json_object_set_new(v->baseline_config, "protocol",
			    json_pack("{s:i, s:i, s:i, s:b, s:I, s:i, s:i, s:s}", "warmup", warmup, "rounds", rounds,
				      "reps_per_round", st.reps, "cold", o->cold, "flush_bytes",
				      (json_int_t)pragma_flush_bytes(), "threads", c->threads, "input_sets", c->n_sets,
				      "order", "interleaved, alternating which side goes first; sessions of fresh "
					       "processes started baseline-first and candidate-first in turn"));
	json_object_set_new(json_object_get(v->baseline_config, "protocol"), "sessions", json_integer(sessions));
	json_object_set_new(json_object_get(v->baseline_config, "protocol"), "disturbed_round_retries",
			    json_pack("{s:f, s:i, s:f, s:i}", "run_delay_threshold", DISTURBANCE_OK, "max_attempts",
				      st.max_attempts, "quiet_cpu_share", QUIET_SHARE, "max_wait_ms",
				      o->max_wait_ms > 0 ? o->max_wait_ms : o->max_wait_ms < 0 ? 0 : 20000));

	{
		int clean;
		v->rounds_made = v->cand.n_rounds;
		v->rounds_used = keep_undisturbed(&v->cand, &v->base, &clean);
		v->rounds_clean = clean;
		if (clean < 3 || 3 * clean < rounds)
			vwarn(v,
			      "the machine was busy: only %d of %d rounds ran undisturbed on both sides (the worst lost "
			      "%.0f%% of its time to other processes); these timings are unreliable, measure again when "
			      "the machine is quieter",
			      clean, v->rounds_made, 100 * v->worst_disturbance);
	}
	pragma_stats_compute(v->cand.times_ms, v->cand.n_times, &v->cand.stats);
	pragma_stats_compute(v->base.times_ms, v->base.n_times, &v->base.stats);
	if (v->cand.stats.median > 0)
		v->speedup = v->base.stats.median / v->cand.stats.median;
	{
		int n = v->cand.n_rounds < v->base.n_rounds ? v->cand.n_rounds : v->base.n_rounds;
		double *ratio = calloc((size_t)n + 1, sizeof(double));
		for (int r = 0; r < n; r++)
			ratio[r] = v->cand.round_median[r] > 0 ? v->base.round_median[r] / v->cand.round_median[r] : 0;
		qsort(ratio, (size_t)n, sizeof(double), cmp_double);
		v->speedup_min = n ? ratio[0] : 0;
		v->speedup_max = n ? ratio[n - 1] : 0;
		v->speedup_q1 = quantile(ratio, n, 0.25);
		v->speedup_q3 = quantile(ratio, n, 0.75);
		free(ratio);
	}

	/* Rates and the physical limits. */
	if (v->cand.stats.median > 0) {
		if (c->t->bytes > 0)
			v->gbs = c->t->bytes / v->cand.stats.median / 1e6;
		if (c->t->flops > 0)
			v->gflops = c->t->flops / v->cand.stats.median / 1e6;
	}
	pragma_debug("eval: timed outputs checked after %.0f ms", mono_ms() - t_start);
	int gpu_peaks = 0;
	if (c->harness) {
		/* CUDA backend: the GPU's peaks (datasheet or clocks), its L2 as the cache. */
		struct pragma_gpu_model gm;
		if (pragma_gpu_model_load(0, &gm, &merr) == 0 && gm.peak_gbs > 0) {
			memset(&m, 0, sizeof(m));
			m.peak_gbs = gm.peak_gbs;
			m.peak_gflops = gm.peak_fp32_gflops;
			m.llc_bytes = (uint64_t)gm.dev.l2_bytes;
			gpu_peaks = 1;
		}
	}
	if (!gpu_peaks && pragma_machine_load(&m, 0, &merr) < 0) {
		vwarn(v, "no machine peaks (%s): impossible_speed not checked", merr.msg);
	} else {
		double margin = o->speed_margin > 0 ? o->speed_margin : 1.5;
		v->peak_gbs = m.peak_gbs;
		v->peak_gflops = m.peak_gflops;
		/* Warm-cache timing of data that fits in cache may beat DRAM
		 * honestly; cold runs flush more than the LLC before each call. */
		int cache_resident = !o->cold && m.llc_bytes && c->t->bytes < 2.0 * (double)m.llc_bytes;
		if (m.peak_gbs > 0 && v->gbs > margin * m.peak_gbs && !cache_resident)
			vreject(v, PRAGMA_V_IMPOSSIBLE_SPEED,
				"median %.4g ms for %.1f MB of minimal traffic is %.1f GB/s, above %.1fx the measured "
				"peak of %.1f GB/s: the timed call cannot have done the work",
				v->cand.stats.median, c->t->bytes / 1e6, v->gbs, margin, m.peak_gbs);
		else if (m.peak_gflops > 0 && v->gflops > m.peak_gflops)
			vwarn(v,
			      "%.1f GFLOP/s is above the measured FP32 peak of %.1f GFLOP/s: fine for algorithms that do "
			      "fewer FLOPs than the task's count (Winograd, Strassen), suspicious otherwise",
			      v->gflops, m.peak_gflops);
	}
	if (v->status)
		v->speedup = 0;
	pragma_debug("eval: machine peaks and checks after %.0f ms", mono_ms() - t_start);
	ret = 0;
out:
	stop_baseline(&base);
	pragma_run_server_free(cand.h);
	pragma_run_result_release(&cand.rr);
	pragma_symbols_release(&base.syms);
	pragma_buf_release(&base.so);
	pragma_buf_release(&cand.so);
	pragma_buf_release(&bdir);
	pragma_buf_release(&cdir);
	return ret;
}
