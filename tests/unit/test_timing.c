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
		cmocka_unit_test(test_sessions),
		cmocka_unit_test(test_lock),
	};
	return pragma_run_tests(tests, setup, teardown);
}
