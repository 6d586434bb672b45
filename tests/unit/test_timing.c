/*
 * The timing layer's pure parts: the estimator, the comparison and its
 * interval (lib/timing/estimate.c), and the per-host measurement lock
 * (lib/timing/lock.c).
 */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>
#include "pragma_test.h"

#include <fcntl.h>
#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <dirent.h>
#include <poll.h>
#include <signal.h>
#include <sys/prctl.h>
#include <sys/file.h>
#include <sys/wait.h>
#include <unistd.h>

#include "pragma/timing.h"

static char dir[256];

/* Side times of one call per round. */
static int ones[64] = { [0 ... 63] = 1 };

static void sides(struct pragma_side_times *t, const double *calls, const int *sess, int n)
{
	memset(t, 0, sizeof(*t));
	t->times_ms = (double *)calls;
	t->round_median = (double *)calls;
	t->round_count = ones;
	t->round_session = (int *)sess;
	t->n_times = n;
	t->n_rounds = n;
}

static void test_estimate(void **state)
{
	/* The median: one disturbed call does not move it. */
	double a[] = { 10.0, 10.1, 30.0, 10.05, 10.2 };
	double b[] = { 4, 1, 3, 2 };
	struct pragma_side_times t;

	(void)state;
	sides(&t, a, NULL, 5);
	assert_true(fabs(pragma_estimate(&t) - 10.1) < 1e-12);
	assert_true(fabs(pragma_median(b, 4) - 2.5) < 1e-12);
	sides(&t, a, NULL, 0);
	assert_true(pragma_estimate(&t) == 0);
}

static void test_same_kernel(void **state)
{
	/* The same kernel on both sides, with noise and a disturbed round on
	 * each: the same, never faster or slower, and 1.00 inside. */
	double a[] = { 10.0, 10.3, 10.1, 14.0, 10.2, 10.05, 10.4, 10.1, 12.0 };
	double b[] = { 10.1, 10.0, 10.2, 10.1, 13.5, 10.3, 10.0, 10.2, 10.1 };
	struct pragma_side_times ta, tb;
	struct pragma_ratio r, r2;
	char buf[128];

	(void)state;
	sides(&ta, a, NULL, 9);
	sides(&tb, b, NULL, 9);
	pragma_ratio_compute(&ta, &tb, 0, &r);
	assert_int_equal(r.cmp, PRAGMA_CMP_SAME);
	assert_true(r.lo <= 1.0 && 1.0 <= r.hi);
	assert_true(r.lo <= r.ratio && r.ratio <= r.hi);
	assert_int_equal(r.rounds, 9);
	assert_true(fabs(r.ratio - pragma_estimate(&tb) / pragma_estimate(&ta)) < 1e-12);
	/* The same numbers give the same interval. */
	pragma_ratio_compute(&ta, &tb, 0, &r2);
	assert_true(r2.lo == r.lo && r2.hi == r.hi);
	assert_true(fabs(r.ratio - 1) < 0.01);
	assert_non_null(strstr(pragma_ratio_str(&r, buf, sizeof(buf)), "x ["));
}

static void test_faster_and_slower(void **state)
{
	double a[] = { 10.0, 10.3, 10.1, 10.2, 10.2, 10.05, 10.4, 10.1, 10.0 };
	double b[9], c[9];
	struct pragma_side_times ta, tb, tc;
	struct pragma_ratio r;
	char buf[128];

	(void)state;
	for (int i = 0; i < 9; i++) {
		b[i] = a[i] * 1.20; /* a is 20% faster than b */
		c[i] = a[i] * 1.01; /* 1%: inside the margin */
	}
	sides(&ta, a, NULL, 9);
	sides(&tb, b, NULL, 9);
	sides(&tc, c, NULL, 9);
	pragma_ratio_compute(&ta, &tb, 0, &r);
	assert_int_equal(r.cmp, PRAGMA_CMP_FASTER);
	assert_true(r.lo > 1 && fabs(r.ratio - 1.2) < 0.02);
	assert_non_null(strstr(pragma_ratio_str(&r, buf, sizeof(buf)), "faster"));
	pragma_ratio_compute(&tb, &ta, 0, &r);
	assert_int_equal(r.cmp, PRAGMA_CMP_SLOWER);
	assert_true(r.hi < 1);
	/* Consistently 1% faster: real, but below the margin: the same. */
	pragma_ratio_compute(&ta, &tc, 0, &r);
	assert_int_equal(r.cmp, PRAGMA_CMP_SAME);
	assert_non_null(strstr(pragma_ratio_str(&r, buf, sizeof(buf)), "the same within the noise"));
}

/* An interval that excludes 1 never reads as touching it: a bound that two
 * decimals would show as 1.00 gets a third. */
static void test_interval_digits(void **state)
{
	char buf[72];
	struct pragma_ratio r = { .ratio = 1.03, .lo = 1.004, .hi = 1.062, .cmp = PRAGMA_CMP_FASTER, .margin = 0.03 };

	(void)state;
	assert_string_equal(pragma_interval_str(1.004, 1.062, buf, sizeof(buf)), "1.004–1.06");
	assert_string_equal(pragma_interval_str(0.9962, 1.0, buf, sizeof(buf)), "0.996–1.00");
	assert_string_equal(pragma_interval_str(0.97, 1.0004, buf, sizeof(buf)), "0.97–1.00");
	assert_string_equal(pragma_interval_str(1.5, 2.25, buf, sizeof(buf)), "1.50–2.25");
	assert_string_equal(pragma_ratio_str(&r, buf, sizeof(buf)), "1.03x [1.004–1.06], faster");
}

static void test_sessions(void **state)
{
	/* Two sessions that disagree (placement): the two-level interval is
	 * wider than one that ignores them, and it covers both. */
	double a[] = { 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0, 10.0 };
	double b[] = { 10.0, 10.1, 10.0, 10.1, 11.0, 11.1, 11.0, 11.1 };
	int sess[] = { 0, 0, 0, 0, 1, 1, 1, 1 };
	/* Unequal sessions: a resample may draw the big one twice. */
	double c[] = { 10.0, 10.1, 10.2, 10.1, 10.0, 10.1, 10.2, 10.1 };
	int uneven[] = { 0, 1, 1, 1, 1, 1, 1, 1 };
	struct pragma_side_times ta, tb, tc;
	struct pragma_ratio flat, two, u;

	(void)state;
	sides(&ta, a, NULL, 8);
	sides(&tb, b, NULL, 8);
	pragma_ratio_compute(&ta, &tb, 0, &flat);
	sides(&ta, a, sess, 8);
	sides(&tb, b, sess, 8);
	pragma_ratio_compute(&ta, &tb, 0, &two);
	assert_true(two.hi - two.lo >= flat.hi - flat.lo);
	assert_true(two.lo <= 1.011 && two.hi >= 1.10);
	sides(&ta, a, uneven, 8);
	sides(&tc, c, uneven, 8);
	pragma_ratio_compute(&ta, &tc, 0, &u);
	assert_true(u.lo <= u.ratio && u.ratio <= u.hi);
}

static void test_few_sessions(void **state)
{
	/* The same kernel, but each session's processes landed differently
	 * (the candidate's memory placement favored it by 2%, 10% and 16%):
	 * three sessions cannot tell that from a real gain, and a bootstrap
	 * over them alone called it faster (CI's same-kernel test saw it).
	 * Stretched for 3 sessions: not distinguishable. The same rounds, each
	 * in a session of its own, rest on 9 sessions: a narrower interval. */
	double a[] = { 10, 10, 10, 10, 10, 10, 10, 10, 10 };
	double b[] = { 10.2, 10.3, 10.2, 11.0, 11.1, 11.0, 11.6, 11.5, 11.6 };
	int three[] = { 0, 0, 0, 1, 1, 1, 2, 2, 2 };
	int nine[] = { 0, 1, 2, 3, 4, 5, 6, 7, 8 };
	struct pragma_side_times ta, tb;
	struct pragma_ratio r3, r9;

	(void)state;
	assert_true(pragma_interval_stretch(1) == 1);
	assert_true(fabs(pragma_interval_stretch(3) - 2.689) < 0.01);
	assert_true(fabs(pragma_interval_stretch(8) - 1.290) < 0.01);
	assert_true(pragma_interval_stretch(200) < 1.01);
	sides(&ta, a, three, 9);
	sides(&tb, b, three, 9);
	pragma_ratio_compute(&ta, &tb, 0, &r3);
	assert_int_equal(r3.sessions, 3);
	assert_int_equal(r3.cmp, PRAGMA_CMP_SAME);
	assert_true(r3.lo < 1 && r3.lo <= r3.ratio && r3.ratio <= r3.hi);
	sides(&ta, a, nine, 9);
	sides(&tb, b, nine, 9);
	pragma_ratio_compute(&ta, &tb, 0, &r9);
	assert_int_equal(r9.sessions, 9);
	assert_true(r9.hi / r9.lo < r3.hi / r3.lo);
}

static void test_start_order(void **state)
{
	/* Where a process's memory lands depends on what started before it
	 * (lib/timing/session.c): a rotating order of three sides always
	 * started side 1 before side 2 in two sessions of three, and twins
	 * read 6-9% apart. Every pair of sessions must start each side
	 * before each other as often as after, and the orders must vary. */
	uint64_t rng = 12345;
	int last[3], order[3], prev[3], perm[9] = { 0 }, firsts[3] = { 0 };

	(void)state;
	for (int sess = 0; sess < 1200; sess++) {
		int pos[3];
		pragma_start_order(3, sess, &rng, last, order);
		for (int k = 0; k < 3; k++)
			pos[order[k]] = k;
		assert_int_equal(pos[0] + pos[1] + pos[2], 3); /* a permutation */
		if (sess % 2) {
			/* the mirror of the session before */
			for (int k = 0; k < 3; k++)
				assert_int_equal(order[k], prev[2 - k]);
		} else {
			perm[order[0] * 3 + order[1]]++; /* the first two name the order */
			firsts[order[0]]++;
		}
		memcpy(prev, order, sizeof(prev));
	}
	/* 600 random draws: each of the 6 orders about 100 times, each side
	 * first about 200 (4 standard deviations either way). */
	for (int k = 0; k < 9; k++)
		if (k % 4) /* 0 1, 0 2, 1 0, 1 2, 2 0, 2 1 */
			assert_true(perm[k] > 60 && perm[k] < 140);
		else
			assert_int_equal(perm[k], 0);
	for (int k = 0; k < 3; k++)
		assert_true(firsts[k] > 145 && firsts[k] < 255);
	/* Two sides: they simply alternate. */
	for (int sess = 0, l2[2], two[2], prev2[2]; sess < 8; sess++) {
		pragma_start_order(2, sess, &rng, l2, two);
		assert_int_equal(two[0] + two[1], 1);
		if (sess % 2)
			assert_int_equal(two[0], prev2[1]);
		memcpy(prev2, two, sizeof(two));
	}
}

static void test_looks(void **state)
{
	/* An adaptive comparison looked at up to 10 times gets 10 chances to
	 * call noise a difference: its interval is widened by Pocock's
	 * constant (2.555 / 1.96). A candidate 6% faster in every one of 8
	 * sessions, with some noise, is faster at a single look and not
	 * distinguishable at ten: the wider interval reaches below 1. */
	double a[16], b[16];
	int sess[16];
	struct pragma_side_times ta, tb;
	struct pragma_ratio one, ten;

	(void)state;
	assert_true(pragma_looks_stretch(1) == 1);
	assert_true(pragma_looks_stretch(0) == 1);
	assert_true(fabs(pragma_looks_stretch(10) - 2.555 / 1.96) < 1e-9);
	assert_true(pragma_looks_stretch(4) < pragma_looks_stretch(10));
	for (int i = 0; i < 16; i++) {
		a[i] = 10.0 * (1 + 0.05 * ((i * 7) % 5 - 2) / 2.0);
		b[i] = a[i] * 0.94 * (1 + 0.05 * ((i * 3) % 4 - 1.5) / 1.5);
		sess[i] = i / 2;
	}
	sides(&ta, a, sess, 16);
	sides(&tb, b, sess, 16);
	pragma_ratio_compute(&tb, &ta, 0, &one);
	ta.looks = tb.looks = 10;
	pragma_ratio_compute(&tb, &ta, 0, &ten);
	assert_int_equal(one.looks, 1);
	assert_int_equal(ten.looks, 10);
	assert_true(fabs(one.ratio - ten.ratio) < 1e-12);
	assert_true(fabs(log(ten.hi / ten.ratio) / log(one.hi / one.ratio) - 2.555 / 1.96) < 1e-6);
	assert_int_equal(one.cmp, PRAGMA_CMP_FASTER);
	assert_int_equal(ten.cmp, PRAGMA_CMP_SAME);
	/* Only a ratio of two sides of that comparison is widened. */
	ta.looks = 0;
	pragma_ratio_compute(&tb, &ta, 0, &one);
	assert_int_equal(one.looks, 1);
}

/* The lock: re-entrant in a process, exclusive between processes, shared
 * holds together, every hold logged. */
static void test_lock(void **state)
{
	char log[512], path[600];
	int t1, t2, t3, fd, status;
	pid_t pid;
	FILE *f;

	(void)state;
	snprintf(log, sizeof(log), "%s/lock.log", dir);
	setenv("PRAGMA_LOCK_DIR", dir, 1);
	setenv("PRAGMA_LOCK_LOG", log, 1);
	snprintf(path, sizeof(path), "%s/pragma-measure.lock", dir);
	assert_string_equal(pragma_measure_lock_path(), path);

	t1 = pragma_measure_lock(PRAGMA_LOCK_SHARED, "build");
	t2 = pragma_measure_lock(PRAGMA_LOCK_EXCLUSIVE, "test the lock");
	t3 = pragma_measure_lock(PRAGMA_LOCK_EXCLUSIVE, "nested");
	/* Another process cannot take it now, not even shared. */
	pid = fork();
	if (pid == 0) {
		int o = open(path, O_RDWR);
		_exit(o >= 0 && flock(o, LOCK_SH | LOCK_NB) < 0 ? 0 : 1);
	}
	assert_true(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* The holder is written for waiters. */
	{
		char who[256] = "";
		fd = open(path, O_RDONLY);
		assert_true(read(fd, who, sizeof(who) - 1) > 0);
		close(fd);
		assert_non_null(strstr(who, "test the lock"));
	}
	pragma_measure_unlock(t3);
	pragma_measure_unlock(t2);
	/* Back to shared: another shared hold goes in, an exclusive does not. */
	pid = fork();
	if (pid == 0) {
		int o = open(path, O_RDWR);
		int sh = flock(o, LOCK_SH | LOCK_NB) == 0;
		flock(o, LOCK_UN);
		int ex = flock(o, LOCK_EX | LOCK_NB) == 0;
		_exit(sh && !ex ? 0 : 1);
	}
	assert_true(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	pragma_measure_unlock(t1);
	pid = fork();
	if (pid == 0) {
		int o = open(path, O_RDWR);
		_exit(flock(o, LOCK_EX | LOCK_NB) == 0 ? 0 : 1);
	}
	assert_true(waitpid(pid, &status, 0) == pid && WIFEXITED(status) && WEXITSTATUS(status) == 0);
	/* One EX line (the outermost hold), one SH line. */
	f = fopen(log, "r");
	assert_non_null(f);
	{
		char line[256];
		int ex = 0, sh = 0;
		while (fgets(line, sizeof(line), f)) {
			ex += strstr(line, " EX") != NULL;
			sh += strstr(line, " SH") != NULL;
		}
		assert_int_equal(ex, 1);
		assert_int_equal(sh, 1);
	}
	fclose(f);
	assert_true(pragma_measure_lock_waited() >= 0);
}

/* ---- the queue: fair order among waiters (lib/timing/lock.c) ---- */

/* Tickets of KIND ('X', 'S', or 0 for both) in the lock's queue. */
static int queued(char kind)
{
	char q[700];
	struct dirent *e;
	DIR *d;
	int n = 0;

	snprintf(q, sizeof(q), "%s.queue", pragma_measure_lock_path());
	d = opendir(q);
	if (!d)
		return 0;
	while ((e = readdir(d))) {
		size_t len = strlen(e->d_name);
		if (len > 22 && e->d_name[20] == '.' && e->d_name[len - 2] == '.' &&
		    (!kind || e->d_name[len - 1] == kind))
			n++;
	}
	closedir(d);
	return n;
}

/* Wait up to 5 s until N tickets of KIND are queued. */
static int await_queued(char kind, int n)
{
	for (int i = 0; i < 500; i++) {
		if (queued(kind) >= n)
			return 1;
		usleep(10000);
	}
	return 0;
}

/* A child that takes the lock as a process of its own, says TAG on FD
 * once it has it, holds it HOLD_MS, and exits. */
static pid_t locker(enum pragma_lock_kind kind, char tag, int fd, int hold_ms)
{
	pid_t pid = fork();

	if (pid == 0) {
		prctl(PR_SET_PDEATHSIG, SIGKILL); /* a failed test leaves no waiter behind */
		pragma_measure_lock_forget();
		int t = pragma_measure_lock(kind, "a queue test");
		(void)!write(fd, &tag, 1);
		usleep(hold_ms * 1000);
		pragma_measure_unlock(t);
		_exit(0);
	}
	return pid;
}

/* Up to N bytes from FD, waiting at most MS for each. */
static int read_tags(int fd, char *out, int n, int ms)
{
	int got = 0;

	while (got < n) {
		struct pollfd p = { .fd = fd, .events = POLLIN };
		if (poll(&p, 1, ms) <= 0 || read(fd, out + got, 1) != 1)
			break;
		got++;
	}
	out[got] = '\0';
	return got;
}

static void reap(pid_t *pids, int n)
{
	for (int i = 0; i < n; i++)
		if (pids[i] > 0)
			waitpid(pids[i], NULL, 0);
}

/* Five exclusive waiters get the lock in the order they came (plain flock
 * hands it to whichever polls first). */
static void test_lock_fifo(void **state)
{
	int pfd[2], t;
	pid_t pids[5];
	char got[8];

	(void)state;
	setenv("PRAGMA_LOCK_DIR", dir, 1);
	unsetenv("PRAGMA_LOCK_LOG");
	assert_int_equal(pipe(pfd), 0);
	t = pragma_measure_lock(PRAGMA_LOCK_EXCLUSIVE, "holding for the queue test");
	for (int i = 0; i < 5; i++) {
		pids[i] = locker(PRAGMA_LOCK_EXCLUSIVE, (char)('0' + i), pfd[1], 5);
		assert_true(await_queued('X', i + 1));
	}
	pragma_measure_unlock(t);
	assert_int_equal(read_tags(pfd[0], got, 5, 10000), 5);
	assert_string_equal(got, "01234");
	reap(pids, 5);
	assert_int_equal(queued(0), 0);
	close(pfd[0]);
	close(pfd[1]);
}

/* An exclusive waiter keeps a later shared one out: a stream of compiles
 * must not hold off a measurement for ever. */
static void test_lock_writer_first(void **state)
{
	int pfd[2], t;
	pid_t pids[2];
	char got[4];

	(void)state;
	setenv("PRAGMA_LOCK_DIR", dir, 1);
	assert_int_equal(pipe(pfd), 0);
	t = pragma_measure_lock(PRAGMA_LOCK_SHARED, "compiling for the queue test");
	pids[0] = locker(PRAGMA_LOCK_EXCLUSIVE, 'X', pfd[1], 20);
	assert_true(await_queued('X', 1));
	pids[1] = locker(PRAGMA_LOCK_SHARED, 'S', pfd[1], 5);
	assert_true(await_queued('S', 1));
	/* The shared waiter could share our hold, but waits its turn. */
	assert_int_equal(read_tags(pfd[0], got, 1, 300), 0);
	pragma_measure_unlock(t);
	assert_int_equal(read_tags(pfd[0], got, 2, 10000), 2);
	assert_string_equal(got, "XS");
	reap(pids, 2);
	close(pfd[0]);
	close(pfd[1]);
}

/* A waiter killed in the queue does not block those behind it. */
static void test_lock_dead_waiter(void **state)
{
	int pfd[2], t;
	pid_t pids[2];
	char got[4];

	(void)state;
	setenv("PRAGMA_LOCK_DIR", dir, 1);
	assert_int_equal(pipe(pfd), 0);
	t = pragma_measure_lock(PRAGMA_LOCK_EXCLUSIVE, "holding for the queue test");
	pids[0] = locker(PRAGMA_LOCK_EXCLUSIVE, 'K', pfd[1], 5);
	assert_true(await_queued('X', 1));
	pids[1] = locker(PRAGMA_LOCK_EXCLUSIVE, 'L', pfd[1], 5);
	assert_true(await_queued('X', 2));
	kill(pids[0], SIGKILL);
	reap(pids, 1);
	pragma_measure_unlock(t);
	assert_int_equal(read_tags(pfd[0], got, 1, 5000), 1);
	assert_string_equal(got, "L");
	reap(pids + 1, 1);
	assert_int_equal(queued(0), 0); /* the dead one's ticket is gone too */
	close(pfd[0]);
	close(pfd[1]);
}

/* Two processes that each hold it shared and then want it exclusively
 * both get it: neither waits in the queue while holding the lock. */
static void test_lock_upgrade(void **state)
{
	int up[2], go[2];
	pid_t pids[2];
	char got[8];

	(void)state;
	setenv("PRAGMA_LOCK_DIR", dir, 1);
	assert_int_equal(pipe(up), 0);
	assert_int_equal(pipe(go), 0);
	for (int i = 0; i < 2; i++) {
		pids[i] = fork();
		if (pids[i] == 0) {
			char c;
			prctl(PR_SET_PDEATHSIG, SIGKILL);
			pragma_measure_lock_forget();
			int s = pragma_measure_lock(PRAGMA_LOCK_SHARED, "compiling");
			(void)!write(up[1], "s", 1);
			if (read(go[0], &c, 1) != 1)
				_exit(1);
			int x = pragma_measure_lock(PRAGMA_LOCK_EXCLUSIVE, "measuring");
			(void)!write(up[1], "x", 1);
			usleep(5000);
			pragma_measure_unlock(x);
			pragma_measure_unlock(s);
			_exit(0);
		}
	}
	assert_int_equal(read_tags(up[0], got, 2, 10000), 2);
	assert_string_equal(got, "ss");
	assert_int_equal(write(go[1], "gg", 2), 2);
	assert_int_equal(read_tags(up[0], got, 2, 10000), 2);
	assert_string_equal(got, "xx");
	reap(pids, 2);
	for (int i = 0; i < 2; i++)
		close(up[i]), close(go[i]);
}

static int setup(void **state)
{
	(void)state;
	snprintf(dir, sizeof(dir), "/tmp/pragma-test-timing-XXXXXX");
	return mkdtemp(dir) ? 0 : -1;
}

static int teardown(void **state)
{
	char cmd[300];

	(void)state;
	snprintf(cmd, sizeof(cmd), "rm -rf %s", dir);
	return system(cmd) == 0 ? 0 : -1;
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_estimate),
		cmocka_unit_test(test_same_kernel),
		cmocka_unit_test(test_faster_and_slower),
		cmocka_unit_test(test_interval_digits),
		cmocka_unit_test(test_sessions),
		cmocka_unit_test(test_few_sessions),
		cmocka_unit_test(test_start_order),
		cmocka_unit_test(test_looks),
		cmocka_unit_test(test_lock),
		cmocka_unit_test(test_lock_fifo),
		cmocka_unit_test(test_lock_writer_first),
		cmocka_unit_test(test_lock_dead_waiter),
		cmocka_unit_test(test_lock_upgrade),
	};
	return pragma_run_tests(tests, setup, teardown);
}
