/* The logger: messages, and progress as a live line (a terminal) or as
 * plain lines (a log file), per level. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <cmocka.h>

#include "pragma_test.h"
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#include "pragma/log.h"

static char path[] = "/tmp/pragma-test-log-XXXXXX";
static int fd = -1;

/* Everything written since the last call. */
static const char *take(void)
{
	static char text[16384];
	off_t end = lseek(fd, 0, SEEK_CUR);
	ssize_t n = pread(fd, text, sizeof(text) - 1, 0);

	assert_true(n >= 0 && n == end);
	text[n] = '\0';
	assert_int_equal(ftruncate(fd, 0), 0);
	lseek(fd, 0, SEEK_SET);
	return text;
}

static int setup(void **state)
{
	(void)state;
	fd = mkstemp(path);
	if (fd < 0)
		return -1;
	pragma_log_set_fd(fd);
	return 0;
}

static int teardown(void **state)
{
	(void)state;
	pragma_log_set_fd(2);
	pragma_log_set_tty(-1);
	close(fd);
	unlink(path);
	return 0;
}

static void reset(enum pragma_log_level level, int tty)
{
	pragma_log_set_level(level);
	pragma_log_set_tty(tty);
	pragma_progress_set_heartbeat(30);
	take();
}

/* Not a terminal: a line when a step begins, updates only as a heartbeat. */
static void test_plain(void **state)
{
	int p, q;

	(void)state;
	reset(PRAGMA_LOG_WARN, 0);
	p = pragma_progress_begin("making reference data for %s", "13_relu");
	assert_true(p >= 0);
	assert_string_equal(take(), "pragma: making reference data for 13_relu\n");
	pragma_progress_update(p, "making reference data for 13_relu (set 2 of 5)");
	assert_string_equal(take(), ""); /* within the heartbeat: quiet */
	pragma_progress_set_heartbeat(0);
	pragma_progress_update(p, "making reference data for 13_relu (set 3 of 5)");
	assert_string_equal(take(), "pragma: making reference data for 13_relu (set 3 of 5)\n");
	q = pragma_progress_begin("waiting for the PyTorch bridge");
	pragma_progress_end(q);
	pragma_progress_end(p);
	assert_string_equal(take(), "pragma: waiting for the PyTorch bridge\n");
	pragma_info("hidden at the default level");
	pragma_warn("shown %d", 1);
	assert_string_equal(take(), "pragma: warning: shown 1\n");
	/* Bad ids are harmless. */
	pragma_progress_update(-1, "x");
	pragma_progress_end(-1);
	pragma_progress_end(999);
	assert_string_equal(take(), "");
}

/* -q: nothing but errors, no progress at all. */
static void test_quiet(void **state)
{
	int p;

	(void)state;
	reset(PRAGMA_LOG_ERROR, 1);
	p = pragma_progress_begin("step");
	pragma_progress_update(p, "step 2");
	pragma_warn("a warning");
	pragma_progress_end(p);
	assert_string_equal(take(), "");
	pragma_log(PRAGMA_LOG_ERROR, "an error");
	assert_string_equal(take(), "pragma: error: an error\n");
	reset(PRAGMA_LOG_ERROR, 0);
	p = pragma_progress_begin("step");
	pragma_progress_end(p);
	assert_string_equal(take(), "");
}

/* A terminal: one line rewritten in place, cleared before a message and
 * drawn again after it; nested steps show the innermost. */
static void test_live(void **state)
{
	int a, b;

	(void)state;
	reset(PRAGMA_LOG_WARN, 1);
	a = pragma_progress_begin("attempt 3/15: verifying");
	assert_string_equal(take(), "\r\033[Kattempt 3/15: verifying");
	b = pragma_progress_begin("making reference data");
	assert_string_equal(take(), "\r\033[Kmaking reference data");
	pragma_warn("something happened");
	assert_string_equal(take(), "\r\033[Kpragma: warning: something happened\n\r\033[Kmaking reference data");
	pragma_progress_end(b);
	assert_string_equal(take(), "\r\033[Kattempt 3/15: verifying");
	usleep(120 * 1000); /* past the redraw limit */
	pragma_progress_update(a, "attempt 3/15: timing");
	assert_string_equal(take(), "\r\033[Kattempt 3/15: timing");
	/* Redraws are limited to 10 a second. */
	pragma_progress_update(a, "attempt 3/15: timing (2)");
	assert_string_equal(take(), "");
	pragma_progress_clear();
	assert_string_equal(take(), "\r\033[K");
	pragma_warn("after a clear");
	assert_string_equal(take(), "pragma: warning: after a clear\n"); /* not drawn again until it changes */
	usleep(120 * 1000);
	pragma_progress_update(a, "attempt 4/15");
	assert_string_equal(take(), "\r\033[Kattempt 4/15");
	pragma_progress_clear_signal_safe();
	assert_string_equal(take(), "\r\033[K");
	pragma_progress_end(a);
	assert_string_equal(take(), "");
}

/* A line wider than the terminal would wrap and could not be rewritten:
 * it is cut (80 columns when the width is unknown), on a UTF-8 boundary. */
static void test_live_width(void **state)
{
	char text[300];
	int p;

	(void)state;
	reset(PRAGMA_LOG_WARN, 1);
	memset(text, 'x', 200);
	memcpy(text + 77, "\xe2\x80\xa6", 3); /* "…" at column 78 */
	text[200] = '\0';
	p = pragma_progress_begin("%s", text);
	const char *out = take();
	assert_int_equal(strlen(out), 4 + 77 + 3 + 1); /* clear, 77 x, the ellipsis, 1 x: 79 columns */
	pragma_progress_end(p);
	take();
}

/* -v on a terminal: each step also leaves a permanent info line. */
static void test_live_verbose(void **state)
{
	int p;

	(void)state;
	reset(PRAGMA_LOG_INFO, 1);
	p = pragma_progress_begin("making reference data");
	assert_string_equal(take(), "pragma: info: making reference data\n\r\033[Kmaking reference data");
	pragma_progress_end(p);
	assert_string_equal(take(), "\r\033[K");
	pragma_log_set_level(PRAGMA_LOG_WARN);
}

/* More steps than slots: -1, and nothing breaks. */
static void test_slots(void **state)
{
	int ids[20];

	(void)state;
	reset(PRAGMA_LOG_WARN, 0);
	for (int i = 0; i < 20; i++)
		ids[i] = pragma_progress_begin("step %d", i);
	assert_true(ids[15] >= 0);
	assert_int_equal(ids[16], -1);
	for (int i = 0; i < 20; i++)
		pragma_progress_end(ids[i]);
	take();
	ids[0] = pragma_progress_begin("again");
	assert_true(ids[0] >= 0);
	pragma_progress_end(ids[0]);
	take();
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(test_plain),    cmocka_unit_test(test_quiet), cmocka_unit_test(test_live),
		cmocka_unit_test(test_live_width), cmocka_unit_test(test_live_verbose), cmocka_unit_test(test_slots),
	};
	return pragma_run_tests(tests, setup, teardown);
}
