/*
 * Included by every unit test program, after <cmocka.h>: skips that ctest
 * and CI can see.
 *
 * cmocka's skip() marks a test skipped but the program still exits 0, so
 * ctest would report "Passed" for a test that never ran. Here:
 *   skip_because("nvcc not found")   skips with a reason, printed as
 *                                    "SKIP: <reason> (file:line)";
 *   skip()                           the same without a reason (avoid);
 *   return pragma_run_tests(tests, setup, teardown);
 *                                    runs the group like
 *                                    cmocka_run_group_tests and exits 77
 *                                    (SKIP_RETURN_CODE, tests/CMakeLists.txt)
 *                                    when a test skipped and none failed.
 * scripts/test.sh prints the SKIP lines of every skipped program.
 */
#ifndef PRAGMA_TEST_H
#define PRAGMA_TEST_H

#include <stdio.h>

#define PRAGMA_TEST_SKIPPED 77

static int pragma_test_skips;

__attribute__((unused)) static void pragma_test_skip_(const char *why, const char *file, int line)
{
	pragma_test_skips++;
	fprintf(stdout, "SKIP: %s (%s:%d)\n", why && *why ? why : "no reason given", file, line);
	fflush(stdout);
	_skip(file, line);
}

#undef skip
#define skip() pragma_test_skip_(NULL, __FILE__, __LINE__)
#define skip_because(why) pragma_test_skip_((why), __FILE__, __LINE__)

static int pragma_test_finish_(int failed)
{
	if (failed)
		return failed;
	if (pragma_test_skips) {
		fprintf(stdout, "%d test%s skipped (see the SKIP lines): exit %d so ctest shows it\n", pragma_test_skips,
			pragma_test_skips == 1 ? "" : "s", PRAGMA_TEST_SKIPPED);
		return PRAGMA_TEST_SKIPPED;
	}
	return 0;
}

#define pragma_run_tests(tests, setup, teardown) pragma_test_finish_(cmocka_run_group_tests(tests, setup, teardown))

#endif
