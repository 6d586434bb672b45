/* util: buffers, SHA-256 test vectors, child processes with deadlines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "pragma_test.h"
#include <errno.h>
#include <signal.h>
#include <sys/wait.h>
#include <string.h>
#include <unistd.h>

#include "pragma/buf.h"
#include "pragma/hash.h"
#include "pragma/proc.h"

static void buf_basics(void **state)
{
	struct pragma_buf b = PRAGMA_BUF_INIT;

	(void)state;
	assert_string_equal(b.data, "");
	for (int i = 0; i < 1000; i++)
		pragma_buf_addf(&b, "%d,", i);
	assert_int_equal(b.len, strlen(b.data));
	assert_true(strstr(b.data, "999,") != NULL);
	pragma_buf_adds(&b, "  \n");
	pragma_buf_rtrim(&b);
	assert_int_equal(b.data[b.len - 1], ',');
	pragma_buf_release(&b);
	assert_int_equal(b.len, 0);
	/* Every occurrence replaced, the rest kept byte for byte. */
	{
		struct pragma_buf r = PRAGMA_BUF_INIT;
		const char *t = "/j/x/a.c:3: error\n/j/x/a.c:4: note /j/x/\n";
		pragma_buf_add_replacing(&r, t, strlen(t), "/j/x/", "");
		assert_string_equal(r.data, "a.c:3: error\na.c:4: note \n");
		pragma_buf_reset(&r);
		pragma_buf_add_replacing(&r, t, 7, "/j/x/a.c", "kernel.cu");
		assert_string_equal(r.data, "/j/x/a.");  /* a match past LEN is not one */
		pragma_buf_reset(&r);
		pragma_buf_add_replacing(&r, "abc", 3, "", "zz");
		assert_string_equal(r.data, "abc");
		pragma_buf_release(&r);
	}
}

static void sha256_vectors(void **state)
{
	char hex[65];
	struct pragma_sha256 s;
	char million[1000];

	(void)state;
	pragma_sha256_str("", 0, hex);
	assert_string_equal(hex, "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855");
	pragma_sha256_str("abc", 3, hex);
	assert_string_equal(hex, "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad");
	pragma_sha256_str("abcdbcdecdefdefgefghfghighijhijkijkljklmklmnlmnomnopnopq", 56, hex);
	assert_string_equal(hex, "248d6a61d20638b8e5c026930c3e6039a33ce45964ff2167f6ecedd419db06c1");
	memset(million, 'a', sizeof(million));
	pragma_sha256_init(&s);
	for (int i = 0; i < 1000; i++)
		pragma_sha256_update(&s, million, sizeof(million));
	pragma_sha256_hex(&s, hex);
	assert_string_equal(hex, "cdc76e5c9914fb9281a1c7e284d73e67f1809a48a497200e046d39ccc7112cd0");
}

static void hash64_sensitivity(void **state)
{
	char a[100] = { 0 }, b[100] = { 0 };

	(void)state;
	assert_true(pragma_hash64(a, 100, 1) == pragma_hash64(b, 100, 1));
	for (int i = 0; i < 100; i++) {
		b[i] = 1;
		assert_true(pragma_hash64(a, 100, 1) != pragma_hash64(b, 100, 1));
		b[i] = 0;
	}
	assert_true(pragma_hash64(a, 99, 1) != pragma_hash64(a, 100, 1));
}

static void child_output_and_exit(void **state)
{
	const char *argv[] = { "sh", "-c", "echo out; echo err >&2; cat; exit 3", NULL };
	struct pragma_child c = PRAGMA_CHILD_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;

	(void)state;
	c.argv = argv;
	c.stdin_data = "fed\n";
	c.stdin_len = 4;
	c.timeout_ms = 10000;
	assert_int_equal(pragma_child_run(&c, &err), 0);
	assert_true(c.exited);
	assert_int_equal(c.exit_code, 3);
	assert_string_equal(c.out.data, "out\nfed\n");
	assert_string_equal(c.err.data, "err\n");
	pragma_child_release(&c);
}

static void child_deadline_kills_group(void **state)
{
	/* The grandchild would outlive a kill of the child alone. */
	const char *argv[] = { "sh", "-c", "sleep 30 & sleep 30; echo never", NULL };
	struct pragma_child c = PRAGMA_CHILD_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;

	(void)state;
	c.argv = argv;
	c.timeout_ms = 300;
	c.grace_ms = 100;
	assert_int_equal(pragma_child_run(&c, &err), 0);
	assert_true(c.timed_out);
	assert_true(c.wall_ms < 5000);
	assert_string_equal(c.out.data, "");
	pragma_child_release(&c);
}

static void child_output_cap(void **state)
{
	const char *argv[] = { "sh", "-c", "yes x | head -c 1000000", NULL };
	struct pragma_child c = PRAGMA_CHILD_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;

	(void)state;
	c.argv = argv;
	c.out_cap = 1000;
	c.timeout_ms = 10000;
	assert_int_equal(pragma_child_run(&c, &err), 0);
	assert_int_equal(c.out.len, 1000);
	assert_true(c.out_truncated);
	pragma_child_release(&c);
}

static void child_missing_program(void **state)
{
	const char *argv[] = { "pragma-no-such-program", NULL };
	struct pragma_child c = PRAGMA_CHILD_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;

	(void)state;
	c.argv = argv;
	assert_int_equal(pragma_child_run(&c, &err), -1);
	assert_int_equal(err.kind, PRAGMA_E_ENV);
	assert_non_null(strstr(err.msg, "not found"));
	pragma_child_release(&c);
}

static void child_signal_reported(void **state)
{
	const char *argv[] = { "sh", "-c", "kill -SEGV $$", NULL };
	struct pragma_child c = PRAGMA_CHILD_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	char st[64];

	(void)state;
	c.argv = argv;
	c.timeout_ms = 10000;
	assert_int_equal(pragma_child_run(&c, &err), 0);
	assert_true(c.signaled);
	assert_int_equal(c.term_sig, SIGSEGV);
	assert_string_equal(pragma_child_status_str(&c, st, sizeof(st)), "killed by SIGSEGV");
	pragma_child_release(&c);
}

/* Ticks come while a child runs, with the elapsed time; the registry
 * holds the child while it runs and forgets it once reaped. */
static void tick_count(struct pragma_child *c, double elapsed_ms, void *ctx)
{
	double *last = ctx;

	(void)c;
	assert_true(elapsed_ms >= last[1]);
	last[0]++;
	last[1] = elapsed_ms;
	assert_int_equal(pragma_proc_tracked(), 1);
}

static void child_ticks_and_registry(void **state)
{
	const char *argv[] = { "sleep", "0.4", NULL };
	struct pragma_child c = PRAGMA_CHILD_INIT;
	struct pragma_err err = PRAGMA_ERR_INIT;
	double seen[2] = { 0, 0 };

	(void)state;
	assert_int_equal(pragma_proc_tracked(), 0);
	c.argv = argv;
	c.tick = tick_count;
	c.tick_ctx = seen;
	c.tick_ms = 50;
	assert_int_equal(pragma_child_run(&c, &err), 0);
	assert_true(c.exited && c.exit_code == 0);
	assert_true(seen[0] >= 3);
	assert_true(seen[1] >= 150);
	assert_int_equal(pragma_proc_tracked(), 0);
	pragma_child_release(&c);
}

/* What the CLI does: a signal to pragma stops the children in their own
 * process groups (which a Ctrl-C on the terminal never reaches), then
 * pragma dies of that signal. */
static pid_t start_stand_in(int ignore_int, int *pipe_rd)
{
	int p[2];
	pid_t pid;

	assert_int_equal(pipe(p), 0);
	pid = fork();
	assert_true(pid >= 0);
	if (pid == 0) {
		const char *argv[] = { "sleep", "1000", NULL };
		struct pragma_child c = PRAGMA_CHILD_INIT;
		struct pragma_err err = PRAGMA_ERR_INIT;
		close(p[0]);
		if (ignore_int)
			signal(SIGINT, SIG_IGN);
		pragma_proc_install_signal_handlers();
		c.argv = argv;
		if (pragma_child_start(&c, NULL, NULL, &err) < 0)
			_exit(3);
		if (write(p[1], &c.pid, sizeof(c.pid)) != sizeof(c.pid))
			_exit(4);
		for (;;)
			pause();
	}
	close(p[1]);
	*pipe_rd = p[0];
	return pid;
}

static int gone_within(pid_t pid, int ms)
{
	for (int i = 0; i < ms / 10; i++) {
		if (kill(pid, 0) < 0 && errno == ESRCH)
			return 1;
		usleep(10000);
	}
	return 0;
}

static void signal_stops_children(void **state)
{
	int sigs[] = { SIGTERM, SIGINT, SIGHUP };

	(void)state;
	for (size_t k = 0; k < sizeof(sigs) / sizeof(sigs[0]); k++) {
		int rd, status;
		pid_t grandchild = 0;
		pid_t pid = start_stand_in(0, &rd);
		assert_int_equal(read(rd, &grandchild, sizeof(grandchild)), sizeof(grandchild));
		close(rd);
		assert_true(grandchild > 0);
		assert_int_equal(kill(grandchild, 0), 0);
		assert_int_equal(getpgid(grandchild), grandchild); /* its own group */
		assert_int_equal(kill(pid, sigs[k]), 0);
		assert_int_equal(waitpid(pid, &status, 0), pid);
		assert_true(WIFSIGNALED(status));
		assert_int_equal(WTERMSIG(status), sigs[k]); /* a shell sees 128+N */
		if (!gone_within(grandchild, 3000))
			fail_msg("signal %d: the child (pid %d) outlived pragma", sigs[k], (int)grandchild);
	}
}

/* A signal ignored when pragma started (nohup, `cmd &` in a script) stays
 * ignored. */
static void ignored_signal_stays_ignored(void **state)
{
	int rd, status;
	pid_t grandchild = 0, pid = start_stand_in(1, &rd);

	(void)state;
	assert_int_equal(read(rd, &grandchild, sizeof(grandchild)), sizeof(grandchild));
	close(rd);
	assert_int_equal(kill(pid, SIGINT), 0);
	usleep(300 * 1000);
	assert_int_equal(waitpid(pid, &status, WNOHANG), 0); /* still there */
	assert_int_equal(kill(grandchild, 0), 0);
	assert_int_equal(kill(pid, SIGTERM), 0);
	assert_int_equal(waitpid(pid, &status, 0), pid);
	assert_true(WIFSIGNALED(status) && WTERMSIG(status) == SIGTERM);
	assert_true(gone_within(grandchild, 3000));
}

int main(void)
{
	const struct CMUnitTest tests[] = {
		cmocka_unit_test(buf_basics),
		cmocka_unit_test(sha256_vectors),
		cmocka_unit_test(hash64_sensitivity),
		cmocka_unit_test(child_output_and_exit),
		cmocka_unit_test(child_deadline_kills_group),
		cmocka_unit_test(child_output_cap),
		cmocka_unit_test(child_missing_program),
		cmocka_unit_test(child_signal_reported),
		cmocka_unit_test(child_ticks_and_registry),
		cmocka_unit_test(signal_stops_children),
		cmocka_unit_test(ignored_signal_stays_ignored),
	};
	return pragma_run_tests(tests, NULL, NULL);
}
