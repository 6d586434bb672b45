/*
 * Timing sessions (include/pragma/timing.h): the one interleaved-rounds
 * routine. Sides are started fresh each session, in a random order
 * mirrored in the next session (where a process's memory lands depends on
 * what started before it; pragma_start_order() says how much), then asked for
 * rounds of timed calls in turn, the order rotating every round (and
 * reversed every n rounds) so no side always goes first or always follows
 * the same side. Same protocol on every side: warm-up, cold cache by
 * default, the verified input sets in turn, the same thread count.
 */
#include <dirent.h>
#include <errno.h>
#include <inttypes.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <sys/random.h>
#include <time.h>
#include <unistd.h>

#include "pragma/bridge.h"
#include "pragma/build.h"
#include "pragma/fs.h"
#include "pragma/log.h"
#include "pragma/timing.h"

/* Share of all CPUs others may keep busy for the machine to count as quiet. */
#define QUIET_SHARE 0.15
#define MAX_SIDES 32

struct proc {
	struct pragma_bridge_server *br;   /* the PyTorch baseline */
	struct pragma_run_server *h;       /* a kernel, or the native baseline */
	char dir[4096];
	/* A kernel's libraries to load before the sandbox, when the caller
	 * gave none: from its imports, by its backend's rule. */
	struct pragma_symbols syms;
	const char *preload[16];
	int have_preload;
};

struct ctx {
	struct pragma_side *sides;
	int n;
	const struct pragma_session_opts *o;
	struct pragma_session *s;
	struct proc p[MAX_SIDES];
	int threads, warmup, reps, round_to, base_to, max_attempts;
	int warm_now;                /* this session's warm-up calls per process */
	int first_warm;              /* and the first session's */
	double quiet_budget;
	char work[4096];
	/* The native baseline's object, built once. */
	struct pragma_buf base_so;
	struct pragma_symbols base_syms;
	const char *base_preload[16];
	int round;                   /* rounds made, all sessions: rotates the order */
	int looks;                   /* the adaptive comparison's checks, at most */
	uint64_t rng;                /* start orders (start_order) */
	int last_order[MAX_SIDES];
};

/* xorshift64*, seeded from the kernel's entropy for every call. */
static uint64_t rand_next(uint64_t *s)
{
	*s ^= *s >> 12;
	*s ^= *s << 25;
	*s ^= *s >> 27;
	return *s * 0x2545f4914f6cdd1dull;
}

static uint64_t rand_seed(void)
{
	uint64_t v = 0;

	if (getrandom(&v, sizeof(v), 0) != (ssize_t)sizeof(v) || !v)
		v = ((uint64_t)getpid() << 32) ^ (uint64_t)time(NULL) ^ 0x9e3779b97f4a7c15ull;
	return v;
}

static void pause_ms(int ms)
{
	struct timespec ts = { ms / 1000, (ms % 1000) * 1000000L };

	nanosleep(&ts, NULL);
}

static double mono_ms(void)
{
	struct timespec ts;

	clock_gettime(CLOCK_MONOTONIC, &ts);
	return ts.tv_sec * 1e3 + ts.tv_nsec / 1e6;
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
 * quiet for a 60 ms window: every side is idle then, so what keeps the
 * CPUs busy is someone else, and a round run now would be disturbed. */
static void wait_quiet(double *budget_ms)
{
	for (;;) {
		unsigned long long b0, t0, b1, t1;
		if (cpu_ticks(&b0, &t0) < 0)
			return;
		pause_ms(60);
		if (cpu_ticks(&b1, &t1) < 0 || t1 <= t0)
			return;
		if ((double)(b1 - b0) / (double)(t1 - t0) <= QUIET_SHARE || *budget_ms <= 0)
			return;
		pause_ms(140);
		*budget_ms -= 200;
	}
}

/* --------------------------------------------------------------- sides */

static void times_append(struct pragma_side_times *t, const double *v, int n, double delay, int session)
{
	double *c = malloc(sizeof(double) * (size_t)(n + 1)), mn;

	t->times_ms = realloc(t->times_ms, sizeof(double) * (size_t)(t->n_times + n + 1));
	memcpy(t->times_ms + t->n_times, v, sizeof(double) * (size_t)n);
	t->n_times += n;
	memcpy(c, v, sizeof(double) * (size_t)n);
	mn = pragma_median(c, n);
	free(c);
	t->round_median = realloc(t->round_median, sizeof(double) * (size_t)(t->n_rounds + 1));
	t->round_delay = realloc(t->round_delay, sizeof(double) * (size_t)(t->n_rounds + 1));
	t->round_count = realloc(t->round_count, sizeof(int) * (size_t)(t->n_rounds + 1));
	t->round_session = realloc(t->round_session, sizeof(int) * (size_t)(t->n_rounds + 1));
	t->round_session[t->n_rounds] = session;
	t->round_median[t->n_rounds] = mn;
	t->round_delay[t->n_rounds] = delay;
	t->round_count[t->n_rounds++] = n;
}

static void harness_opts(struct ctx *x, struct pragma_run_opts *ro, const struct pragma_backend *b, const char *so,
			 const char *const *preload, const char *dir)
{
	memset(ro, 0, sizeof(*ro));
	ro->kernel_so = so;
	ro->task = x->o->task;
	ro->sets = x->o->sets;
	ro->n_sets = x->o->n_sets;
	ro->work_dir = dir;
	ro->time_mode = 1;
	ro->warmup = x->warm_now;
	ro->cold = x->o->cold;
	ro->threads = x->threads;
	ro->sandbox = x->o->sandbox;
	ro->preload = preload;
	ro->backend = b;
}

/* The native baseline (baseline.c or reference.c), built by the CPU
 * backend as the task wrote it: -O3 -march=native -fopenmp, unconfined
 * (it is the task's own code). */
static int native_baseline(struct ctx *x, struct pragma_side *sd, struct pragma_err *err)
{
	const struct pragma_task *t = x->o->task;
	const char *file = t->has_baseline_c ? "baseline.c" : "reference.c";
	struct pragma_buf src = PRAGMA_BUF_INIT;
	struct pragma_backend_build bb = { 0 };
	int ret = -1;

	if (x->base_so.len)
		return 0;
	pragma_buf_addf(&src, "%s/%s", t->path, file);
	if (pragma_backend_cpu.build(src.data, &bb, &x->base_so, NULL, err) < 0 ||
	    pragma_symbols_read(x->base_so.data, &x->base_syms, err) < 0) {
		/* The task's own code does not build: a malformed task. */
		if (err->kind == PRAGMA_E_NEGATIVE)
			err->kind = PRAGMA_E_INPUT;
		pragma_err_prefix(err, "building the task's %s", file);
		pragma_buf_reset(&x->base_so);
		goto out;
	}
	pragma_symbols_preload(&x->base_syms, x->base_preload, 16);
	if (!sd->config)
		sd->config = json_pack("{s:s, s:s, s:s, s:s, s:i}", "kind", t->has_baseline_c ? "c-baseline" : "c-reference",
				       "source", file, "compiler", pragma_backend_cpu.compiler_version(NULL), "flags",
				       "-O3 -march=native -fopenmp", "threads", x->threads);
	ret = 0;
out:
	pragma_buf_release(&src);
	return ret;
}

/* Start side i for session sess. 0 ok; 1 a kernel failed in warm-up
 * (sd->failed); -1 error. */
static int start_side(struct ctx *x, int i, int sess, struct pragma_err *err)
{
	struct pragma_side *sd = &x->sides[i];
	struct proc *p = &x->p[i];
	const struct pragma_backend *b = pragma_backend_or_default(sd->backend);
	struct pragma_run_opts ro;
	struct pragma_run_result rr = { 0 };

	snprintf(p->dir, sizeof(p->dir), "%.4000s/side%d-%d", x->work, i + 1, sess + 1);
	if (!sd->so && x->o->task->kind == PRAGMA_TASK_KERNELBENCH) {
		struct pragma_buf script = PRAGMA_BUF_INIT;
		struct pragma_bridge_args a;
		json_t *config = NULL;
		int r;
		if (b->torch_script(&script, sd->note, sizeof(sd->note), err) < 0) {
			pragma_buf_release(&script);
			return -1;
		}
		pragma_bridge_time_args(&a, x->o->task, x->o->sets, x->o->n_sets, x->warm_now, 1, x->threads,
					x->o->cold, pragma_flush_bytes(), 1);
		r = pragma_bridge_serve_start(script.data, &a, x->threads, x->base_to, &p->br, &config, err);
		pragma_bridge_args_release(&a);
		pragma_buf_release(&script);
		if (r < 0)
			return -1;
		if (!sd->config) {
			sd->config = config ? config : json_object();
			json_object_set_new(sd->config, "kind", json_string("pytorch"));
		} else {
			json_decref(config);
		}
		return 0;
	}
	if (!sd->so) {
		if (native_baseline(x, sd, err) < 0)
			return -1;
		harness_opts(x, &ro, &pragma_backend_cpu, x->base_so.data, x->base_preload, p->dir);
		ro.timeout_ms = x->base_to;
	} else {
		const char *const *pre = sd->preload;
		if (!pre) {
			if (!p->have_preload) {
				if (pragma_symbols_read(sd->so, &p->syms, err) < 0)
					return -1;
				b->preload(&p->syms, p->preload, 16);
				p->have_preload = 1;
			}
			pre = p->preload;
		}
		harness_opts(x, &ro, b, sd->so, pre, p->dir);
		ro.timeout_ms = x->round_to;
		ro.save_timed = 1;
		ro.final_settle_ms = 20;
	}
	if (pragma_run_serve_start(&ro, &p->h, &rr, err) < 0)
		return -1;
	if (!p->h) {
		if (!sd->so) {
			pragma_err_set(err, PRAGMA_E_INPUT, "the task's %s failed in the harness (%s): %s",
				       x->o->task->has_baseline_c ? "baseline.c" : "reference.c", rr.status, rr.message);
			pragma_run_result_release(&rr);
			return -1;
		}
		sd->failed = 1;
		pragma_run_result_release(&sd->fail);
		sd->fail = rr;
		return 1;
	}
	pragma_run_result_release(&rr);
	return 0;
}

static int side_pid(struct ctx *x, int i)
{
	return x->p[i].br ? pragma_bridge_serve_pid(x->p[i].br) : pragma_run_server_pid(x->p[i].h);
}

/* One round of reps calls on side i into *times and *n. 0 ok; 1 the kernel
 * failed (sd->failed); -1 error. */
static int side_round(struct ctx *x, int i, double **times, int *n, struct pragma_err *err)
{
	struct pragma_side *sd = &x->sides[i];
	struct proc *p = &x->p[i];
	struct pragma_run_result rr = { 0 };

	if (p->br)
		return pragma_bridge_serve_time(p->br, x->reps, x->base_to, times, n, err);
	if (pragma_run_serve_time(p->h, x->reps, sd->so ? x->round_to : x->base_to, &rr, err) < 0)
		return -1;
	if (!rr.ok) {
		if (!sd->so) {
			pragma_err_set(err, PRAGMA_E_INPUT, "the task's baseline failed (%s): %s", rr.status, rr.message);
			pragma_run_result_release(&rr);
			return -1;
		}
		sd->failed = 1;
		pragma_run_result_release(&sd->fail);
		sd->fail = rr;
		return 1;
	}
	*times = realloc(*times, sizeof(double) * (size_t)(*n + rr.n_times + 1));
	memcpy(*times + *n, rr.times_ms, sizeof(double) * (size_t)rr.n_times);
	*n += rr.n_times;
	pragma_run_result_release(&rr);
	return 0;
}

/* End side i's session: a kernel writes the outputs of its timed calls,
 * which are checked. 0 ok; 1 failed (sd->failed); -1 error. */
static int finish_side(struct ctx *x, int i, struct pragma_err *err)
{
	struct pragma_side *sd = &x->sides[i];
	struct proc *p = &x->p[i];
	struct pragma_run_result fin = { 0 };
	int ret = 0;

	if (p->br) {
		pragma_bridge_serve_stop(p->br);
		p->br = NULL;
		return 0;
	}
	if (!p->h)
		return 0;
	if (pragma_run_serve_finish(p->h, &fin, err) < 0) {
		ret = -1;
	} else if (!fin.ok && sd->so) {
		sd->failed = 1;
		pragma_run_result_release(&sd->fail);
		sd->fail = fin;
		memset(&fin, 0, sizeof(fin));
		ret = 1;
	} else if (sd->so && x->o->check) {
		char why[2048] = "";
		int c = x->o->check(x->o->check_ctx, sd, p->dir, json_object_get(fin.raw, "timed_calls"), why,
				    sizeof(why), err);
		if (c < 0) {
			ret = -1;
		} else if (c > 0) {
			sd->failed = 1;
			pragma_run_result_release(&sd->fail);
			snprintf(sd->fail.status, sizeof(sd->fail.status), "timed_mismatch");
			snprintf(sd->fail.message, sizeof(sd->fail.message), "%s", why);
			ret = 1;
		}
	}
	snprintf(sd->work_dir, sizeof(sd->work_dir), "%s", p->dir);
	pragma_run_result_release(&fin);
	pragma_run_server_free(p->h);
	p->h = NULL;
	return ret;
}

static void stop_side(struct ctx *x, int i)
{
	if (x->p[i].br)
		pragma_bridge_serve_stop(x->p[i].br);
	x->p[i].br = NULL;
	pragma_run_server_free(x->p[i].h);
	x->p[i].h = NULL;
}

/* ---------------------------------------------------------------- rounds */

/* Rounds every side finished (a kernel that failed mid-round leaves the
 * sides before it one round ahead). */
static int common_rounds(struct ctx *x)
{
	int n = x->sides[0].t.n_rounds;

	for (int i = 1; i < x->n; i++)
		if (x->sides[i].t.n_rounds < n)
			n = x->sides[i].t.n_rounds;
	return n;
}

static int round_clean(struct ctx *x, int r)
{
	for (int i = 0; i < x->n; i++)
		if (x->sides[i].t.round_delay[r] > PRAGMA_DISTURBANCE_OK)
			return 0;
	return 1;
}

/* One round on every side, the order rotating, and reversed every n
 * rounds: with rotation alone each side always follows the same other
 * side (0 1 2, 1 2 0, 2 0 1: 2 always after 1), and whatever a side
 * leaves behind (its threads still spinning, the memory it dirtied) would
 * fall on one side only. Over 2n rounds every side goes first, last, and
 * after every other side equally often. 0 ok; 1 a kernel failed; -1
 * error. */
static int one_round(struct ctx *x, int first_of_session, struct pragma_err *err)
{
	int base = x->round % x->n, reversed = (x->round / x->n) % 2;

	for (int k = 0; k < x->n; k++) {
		int i = reversed ? (base - k + x->n) % x->n : (base + k) % x->n;
		struct pragma_side *sd = &x->sides[i];
		double *best = NULL, best_frac = -1;
		int best_n = 0, attempts = 0;

		/* A round during which other processes took the CPU from this
		 * side (its threads' run-queue delay) is measured again, up to
		 * max_attempts times; the least disturbed attempt counts. Every
		 * side alike, so it stays fair. */
		for (;;) {
			double *v = NULL, t0, t1, frac;
			uint64_t d0, d1;
			int nv = 0, rc;

			/* Let the previous side's spinning OpenMP threads go idle
			 * (libgomp spins ~4 ms after a parallel region); before a
			 * session's first round and before a retry, let others'
			 * work pass. */
			pause_ms(8);
			if ((first_of_session && k == 0) || attempts)
				wait_quiet(&x->quiet_budget);
			d0 = run_delay_ns(side_pid(x, i));
			t0 = mono_ms();
			rc = side_round(x, i, &v, &nv, err);
			t1 = mono_ms();
			d1 = run_delay_ns(side_pid(x, i));
			if (rc != 0) {
				free(v);
				free(best);
				return rc;
			}
			attempts++;
			frac = t1 > t0 && d1 >= d0 ? (double)(d1 - d0) / ((t1 - t0) * 1e6) : 0;
			if (best_frac < 0 || frac < best_frac) {
				free(best);
				best = v;
				best_n = nv;
				best_frac = frac;
			} else {
				free(v);
			}
			if (frac <= PRAGMA_DISTURBANCE_OK || attempts >= x->max_attempts)
				break;
		}
		if (attempts > 1)
			x->s->retried_rounds++;
		if (best_frac > x->s->worst_disturbance)
			x->s->worst_disturbance = best_frac;
		times_append(&sd->t, best, best_n, best_frac, x->s->sessions);
		free(best);
	}
	x->round++;
	x->s->rounds_made++;
	x->s->rounds_clean += round_clean(x, x->sides[0].t.n_rounds - 1);
	return 0;
}

/* Keep only the rounds in which no side lost more than PRAGMA_DISTURBANCE_OK of
 * its time to other processes, when at least a third of them (and 3)
 * qualify: calls known to be disturbed say little about the kernels. On a
 * machine too busy for that, every round is kept (the session is marked
 * busy): a few least-disturbed rounds would make the bootstrap's interval
 * narrower than the data supports (a bootstrap over 3 rounds understates
 * the spread). Whole rounds go, on every side, so the selection stays symmetric. *out
 * receives a view per side (owning its arrays). Returns the rounds kept. */
static int select_rounds(struct ctx *x, struct pragma_side_times *out)
{
	int n = common_rounds(x), clean = 0;
	char *keep = calloc((size_t)n + 1, 1);

	for (int r = 0; r < n; r++)
		clean += keep[r] = (char)round_clean(x, r);
	if (clean < 3 || 3 * clean < n)
		memset(keep, 1, (size_t)n); /* too busy: all of them, marked busy */
	for (int i = 0; i < x->n; i++) {
		struct pragma_side_times *t = &x->sides[i].t, *o = &out[i];
		int from = 0;
		memset(o, 0, sizeof(*o));
		o->times_ms = malloc(sizeof(double) * (size_t)(t->n_times + 1));
		o->round_median = malloc(sizeof(double) * (size_t)(n + 1));
		o->round_delay = malloc(sizeof(double) * (size_t)(n + 1));
		o->round_count = malloc(sizeof(int) * (size_t)(n + 1));
		o->round_session = malloc(sizeof(int) * (size_t)(n + 1));
		for (int r = 0; r < n; r++) {
			int cnt = t->round_count[r];
			if (keep[r]) {
				memcpy(o->times_ms + o->n_times, t->times_ms + from, sizeof(double) * (size_t)cnt);
				o->n_times += cnt;
				o->round_median[o->n_rounds] = t->round_median[r];
				o->round_delay[o->n_rounds] = t->round_delay[r];
				o->round_session[o->n_rounds] = t->round_session[r];
				o->round_count[o->n_rounds++] = cnt;
			}
			from += cnt;
		}
	}
	free(keep);
	return out[0].n_rounds;
}

void pragma_side_times_release(struct pragma_side_times *t)
{
	free(t->times_ms);
	free(t->round_median);
	free(t->round_delay);
	free(t->round_count);
	free(t->round_session);
	memset(t, 0, sizeof(*t));
}

/* Is the comparison the caller wants to decide decided? */
static int decided(struct ctx *x)
{
	const struct pragma_session_opts *o = x->o;
	struct pragma_side_times sel[MAX_SIDES];
	struct pragma_ratio r;
	double m = o->margin > 0 ? o->margin : PRAGMA_SAME_MARGIN;

	if (o->decide_a == o->decide_b)
		return 1;
	select_rounds(x, sel);
	sel[o->decide_a].looks = sel[o->decide_b].looks = x->looks;
	pragma_ratio_compute(&sel[o->decide_a], &sel[o->decide_b], m, &r);
	for (int i = 0; i < x->n; i++)
		pragma_side_times_release(&sel[i]);
	return r.cmp != PRAGMA_CMP_SAME || (r.lo >= 1 / (1 + m) && r.hi <= 1 + m);
}

/* The order a session starts its sides in: a random permutation for every
 * other session, and its mirror image for the session after it. Where a
 * process's memory lands depends on what started before it, and not in a
 * way a fixed scheme can balance: on small_relu (two builds of one kernel
 * and the PyTorch baseline, 100 sessions of 2 rounds per run) a kernel
 * started before the baseline and its twin after it ran 6-9% slower in
 * three runs of a rotating order; with the kernels started back to back,
 * the one started second ran up to ~6% faster in some orders and not in
 * others; a kernel's speedup read 6-10% higher in sessions that started
 * the baseline first. A fixed order repeats its bias in every comparison.
 * Random, it becomes session-to-session noise, which the interval rests
 * on (sessions are its units, lib/timing/estimate.c) and which averages
 * out; mirrored in pairs, every side is started before every other as
 * often as after (the plainest effect, the later process faster, cancels
 * exactly; with two sides the order simply alternates). */
void pragma_start_order(int n, int sess, uint64_t *rng, int *last, int *order)
{
	if (sess % 2) {
		for (int i = 0; i < n; i++)
			order[i] = last[n - 1 - i];
		return;
	}
	for (int i = 0; i < n; i++)
		order[i] = i;
	for (int i = n - 1; i > 0; i--) {
		int j = (int)(rand_next(rng) % (uint64_t)(i + 1)), t = order[i];
		order[i] = order[j];
		order[j] = t;
	}
	memcpy(last, order, sizeof(int) * (size_t)n);
}

/* Warm-up calls per process in session sess of want rounds. The first
 * session's processes make more calls than the verification run (3
 * passes over the input sets), warm-up included: a kernel that turns lazy
 * after the verification's calls does so while timed, and its timed
 * outputs are wrong (timed_mismatch). Sessions of 2 rounds alone make
 * 3 + 10 calls, fewer than 15. */
static int session_warmup(const struct ctx *x, int sess, int want)
{
	int past_verify = 3 * x->o->n_sets + 1 - want * x->reps;

	return sess == 0 && past_verify > x->warmup ? past_verify : x->warmup;
}

/* One session: every side started fresh, want rounds undisturbed on every
 * side (or three times as many made, or fewer when the first want show a
 * saturated machine: more would not help), then every side finished. */
static int session(struct ctx *x, int sess, int want, struct pragma_err *err)
{
	int rc = 0, made = 0, clean = 0, order[MAX_SIDES];

	x->warm_now = session_warmup(x, sess, want);
	if (sess == 0)
		x->first_warm = x->warm_now;
	pragma_start_order(x->n, sess, &x->rng, x->last_order, order);
	if (pragma_log_get_level() >= PRAGMA_LOG_DEBUG) {
		char line[MAX_SIDES * 12] = "";
		for (int k = 0; k < x->n; k++)
			snprintf(line + strlen(line), sizeof(line) - strlen(line), " %d", order[k]);
		pragma_debug("timing session %d: sides started in the order%s", sess + 1, line);
	}
	for (int k = 0; k < x->n && rc == 0; k++)
		rc = start_side(x, order[k], sess, err);
	while (rc == 0 && clean < want && made < 3 * want && !(made >= want && 4 * clean < want)) {
		rc = one_round(x, made == 0, err);
		if (rc == 0) {
			made++;
			clean += round_clean(x, x->sides[0].t.n_rounds - 1);
		}
	}
	for (int i = 0; i < x->n; i++) {
		if (rc == 0)
			rc = finish_side(x, i, err);
		stop_side(x, i);
	}
	x->s->sessions++;
	return rc;
}

int pragma_session_run(struct pragma_side *sides, int n, const struct pragma_session_opts *o, struct pragma_session *s,
		       struct pragma_err *err)
{
	struct ctx x;
	struct pragma_buf cache = PRAGMA_BUF_INIT, tmp = PRAGMA_BUF_INIT;
	int rounds = o->rounds > 0 ? o->rounds : 15;
	int max_rounds = o->max_rounds > rounds ? o->max_rounds : rounds;
	/* One session per 2 rounds, at least 4, an even number (and at most
	 * one per round): the interval rests on the sessions
	 * (lib/timing/estimate.c). */
	int sessions = o->sessions > 0 ? o->sessions : (rounds + 1) / 2 > 4 ? (rounds + 1) / 2 : 4;
	double wait = o->max_wait_ms > 0 ? o->max_wait_ms : o->max_wait_ms < 0 ? 0 : 20000;
	int ret = -1, rc = 0, lk;

	memset(s, 0, sizeof(*s));
	if (n < 1 || n > MAX_SIDES)
		return pragma_err_set(err, PRAGMA_E_INTERNAL, "a timing session needs 1 to %d sides", MAX_SIDES);
	memset(&x, 0, sizeof(x));
	x.sides = sides;
	x.n = n;
	x.o = o;
	x.s = s;
	x.threads = o->threads > 0 ? o->threads : pragma_usable_cores();
	x.warmup = o->warmup > 0 ? o->warmup : 3;
	x.reps = o->reps > 0 ? o->reps : 5;
	x.round_to = o->round_timeout_ms > 0 ? o->round_timeout_ms : 120000;
	x.base_to = o->base_timeout_ms > 0 ? o->base_timeout_ms : 600000;
	x.max_attempts = o->max_attempts > 0 ? o->max_attempts : 3;
	x.quiet_budget = wait;
	x.rng = rand_seed();
	pragma_buf_init(&x.base_so);
	for (int i = 0; i < n; i++) {
		memset(&sides[i].t, 0, sizeof(sides[i].t));
		sides[i].failed = 0;
		sides[i].estimate_ms = 0;
	}
	if (o->work_dir) {
		if (pragma_mkdir_p(o->work_dir, 0755, err) < 0)
			return -1;
		snprintf(x.work, sizeof(x.work), "%s", o->work_dir);
	} else {
		if (pragma_cache_dir(&cache, err) < 0 || pragma_mkdtemp(cache.data, "timing-", &tmp, err) < 0)
			goto out;
		snprintf(x.work, sizeof(x.work), "%s", tmp.data);
	}
	/* An even number by default: start orders come in mirrored pairs. */
	if (o->sessions <= 0 && sessions % 2)
		sessions++;
	if (sessions > rounds)
		sessions = rounds;
	/* An adaptive comparison is checked after the planned rounds and
	 * after each added pair of sessions of 2 rounds: its interval is
	 * widened for that many looks (lib/timing/estimate.c), at every look
	 * and in the end. */
	if (o->decide_a != o->decide_b)
		x.looks = 1 + (max_rounds - rounds + 3) / 4;

	lk = pragma_measure_lock(PRAGMA_LOCK_EXCLUSIVE, o->what ? o->what : "time kernels");
	for (int sess = 0; rc == 0; sess++) {
		int want;
		if (sess < sessions) {
			want = rounds / sessions + (sess < rounds % sessions);
		} else {
			/* The planned rounds did not decide the comparison the
			 * caller needs: more sessions, up to max_rounds. */
			/* max_rounds caps the rounds made in all: a saturated
			 * machine (rounds disturbed whatever we do) stops here too. */
			if (s->rounds_made >= max_rounds || ((sess - sessions) % 2 == 0 && decided(&x)))
				break;
			/* Short sessions: the interval rests on the
			 * number of sessions (lib/timing/estimate.c). */
			want = 2;
			if (want > max_rounds - s->rounds_made)
				want = max_rounds - s->rounds_made;
		}
		if (want > 0)
			rc = session(&x, sess, want, err);
	}
	pragma_measure_unlock(lk);
	if (rc < 0)
		goto out;

	s->waited_ms = wait - x.quiet_budget;
	s->busy = s->rounds_clean < 3 || 3 * s->rounds_clean < s->rounds_made;
	{
		struct pragma_side_times sel[MAX_SIDES];
		s->rounds_used = select_rounds(&x, sel);
		/* How disturbed what the estimates rest on was. */
		s->worst_disturbance = 0;
		for (int i = 0; i < n; i++)
			for (int r = 0; r < sel[i].n_rounds; r++)
				if (sel[i].round_delay[r] > s->worst_disturbance)
					s->worst_disturbance = sel[i].round_delay[r];
		for (int i = 0; i < n; i++) {
			pragma_side_times_release(&sides[i].t);
			sides[i].t = sel[i];
			if (x.looks > 1 && (i == o->decide_a || i == o->decide_b))
				sides[i].t.looks = x.looks;
			sides[i].estimate_ms = pragma_estimate(&sides[i].t);
		}
	}
	s->protocol = json_pack("{s:i, s:i, s:i, s:i, s:i, s:b, s:I, s:i, s:i, s:s, s:s, s:{s:f, s:i, s:f, s:f}}",
				"warmup", x.warmup, "rounds", s->rounds_used, "rounds_target", rounds, "rounds_made",
				s->rounds_made, "reps_per_round", x.reps,
				"cold", o->cold, "flush_bytes", (json_int_t)pragma_flush_bytes(), "threads", x.threads,
				"input_sets", o->n_sets, "order",
				"interleaved, the order rotating every round and reversed every n rounds; sessions of "
				"fresh processes started in a random order, mirrored in the next session",
				"estimator", "median of every call kept", "disturbed_round_retries",
				"run_delay_threshold", PRAGMA_DISTURBANCE_OK, "max_attempts", x.max_attempts, "quiet_cpu_share",
				QUIET_SHARE, "max_wait_ms", wait);
	json_object_set_new(s->protocol, "sessions", json_integer(s->sessions));
	json_object_set_new(s->protocol, "first_session_warmup", json_integer(x.first_warm));
	for (int i = 0; i < n; i++)
		if (!sides[i].so && sides[i].config)
			json_object_set(sides[i].config, "protocol", s->protocol);
	ret = 0;
out:
	for (int i = 0; i < n; i++) {
		stop_side(&x, i);
		pragma_symbols_release(&x.p[i].syms);
	}
	if (tmp.len)
		pragma_rm_rf(tmp.data, NULL);
	pragma_symbols_release(&x.base_syms);
	pragma_buf_release(&x.base_so);
	pragma_buf_release(&cache);
	pragma_buf_release(&tmp);
	return ret;
}

void pragma_session_release(struct pragma_session *s)
{
	json_decref(s->protocol);
	memset(s, 0, sizeof(*s));
}

void pragma_side_release(struct pragma_side *sd)
{
	pragma_side_times_release(&sd->t);
	json_decref(sd->config);
	sd->config = NULL;
	pragma_run_result_release(&sd->fail);
}
