/* util: buffers, SHA-256 test vectors, child processes with deadlines. */
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <cmocka.h>

#include "pragma_test.h"
#include <signal.h>
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
	};
	return pragma_run_tests(tests, NULL, NULL);
}
