#!/usr/bin/env bash
# A unit test that skips must show as skipped, with its reason, in ctest's
# summary and in CI's log, not as "Passed" (cmocka's own skip() exits 0).
. "$(dirname "$0")/lib.bash"
command -v gcc >/dev/null || { echo "skip: no gcc to build the demo test"; exit 77; }
command -v ctest >/dev/null || { echo "skip: no ctest"; exit 77; }
W=$(mktemp -d /tmp/pragma-skips-XXXXXX)
trap 'rm -rf "$PRAGMA_CACHE_DIR" "$XDG_CONFIG_HOME" "$W"' EXIT

cat >"$W/demo.c" <<'EOF'
#include <setjmp.h>
#include <stdarg.h>
#include <stddef.h>
#include <stdint.h>
#include <stdlib.h>
#include <cmocka.h>

#include "pragma_test.h"

static void passes(void **s) { (void)s; assert_true(1); }
static void may_skip(void **s) { (void)s; if (getenv("DEMO_SKIP")) skip_because("no widget on this machine"); }
static void may_fail(void **s) { (void)s; if (getenv("DEMO_FAIL")) fail_msg("broken"); }

int main(void)
{
	const struct CMUnitTest tests[] = { cmocka_unit_test(passes), cmocka_unit_test(may_skip),
					    cmocka_unit_test(may_fail) };
	return pragma_run_tests(tests, NULL, NULL);
}
EOF
if gcc -Wall -Wextra -Werror -I"$PRAGMA_TEST_DATA/unit" "$W/demo.c" -lcmocka -o "$W/demo" 2>"$W/cc.err"; then
	ok "a test program builds with tests/unit/pragma_test.h"
else
	bad "demo does not build"; sed 's/^/    /' "$W/cc.err"; finish; exit 1
fi
expect_exit 0 "nothing skipped: exit 0" -- "$W/demo"
DEMO_SKIP=1 expect_exit 77 "a skip: exit 77" -- "$W/demo"
grep -q "^SKIP: no widget on this machine (.*demo.c:[0-9]*)" /tmp/e2e.out.$$ && ok "the reason is printed" ||
	bad "no SKIP line"
DEMO_SKIP=1 DEMO_FAIL=1 expect_exit 1 "a failure wins over a skip" -- "$W/demo"

# ctest's summary shows it as skipped with the unit tests' property, and
# scripts/skipped_tests.py puts the reason in CI's log.
cat >"$W/CTestTestfile.cmake" <<EOF
add_test(demo_skips "$W/demo")
set_tests_properties(demo_skips PROPERTIES ENVIRONMENT "DEMO_SKIP=1" SKIP_RETURN_CODE 77)
add_test(demo_runs "$W/demo")
set_tests_properties(demo_runs PROPERTIES SKIP_RETURN_CODE 77)
EOF
(cd "$W" && ctest --output-junit "$W/junit.xml") >"$W/ctest.out" 2>&1
grep -q "demo_skips .*Skipped" "$W/ctest.out" && grep -q "demo_runs .*Passed" "$W/ctest.out" &&
	ok "ctest: Skipped and Passed apart" || { bad "ctest summary"; sed 's/^/    /' "$W/ctest.out"; }
expect_exit 0 "skipped_tests.py" -- /usr/bin/python3 "$PRAGMA_HOME/scripts/skipped_tests.py" "$W/junit.xml"
if grep -q "^  demo_skips$" /tmp/e2e.out.$$ && grep -q "no widget on this machine" /tmp/e2e.out.$$ &&
	! grep -q demo_runs /tmp/e2e.out.$$; then
	ok "CI's log lists the skipped test with its reason"
else
	bad "skipped_tests.py output"; sed 's/^/    /' /tmp/e2e.out.$$
fi

# The project's unit tests are registered that way, every one of them.
T=$PRAGMA_BUILD_DIR/tests/CTestTestfile.cmake
n_unit=$(grep -c '^add_test(\[=\[unit/' "$T")
n_skip=$(grep -c 'set_tests_properties(\[=\[unit/.*SKIP_RETURN_CODE "77"' "$T")
[ "$n_unit" -gt 0 ] && [ "$n_unit" = "$n_skip" ] && ok "all $n_unit unit tests have SKIP_RETURN_CODE 77" ||
	bad "unit tests with SKIP_RETURN_CODE 77: $n_skip of $n_unit"
finish
