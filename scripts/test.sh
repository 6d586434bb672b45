#!/usr/bin/env bash
# Sets up and runs every test: installs the Debian packages pragma needs,
# builds twice (plain, and with AddressSanitizer + UBSan), and runs the whole
# ctest suite (unit, end-to-end, bridge) in the plain build and all but the
# long end-to-end tests (ctest label "long", tests/CMakeLists.txt) in the
# sanitizer build; PRAGMA_TEST_FULL=1 runs those there too (about 20 more
# minutes on a 2-core machine).
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

./scripts/install-deps.sh

run_suite() {
	local dir=$1 select=$2; shift 2
	cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
	cmake --build "$dir" -j "$jobs"
	# Each build gets its own cache so the two runs cannot share state.
	# A skipped test (exit 77) is listed with its reason either way.
	local rc=0
	(cd "$dir" && PRAGMA_CACHE_DIR="$PWD/test-cache" ctest --output-on-failure -j 1 --timeout 1500 $select \
		--output-junit "$PWD/junit.xml") || rc=$?
	/usr/bin/python3 scripts/skipped_tests.py "$dir/junit.xml" || true
	return $rc
}

echo "== plain build =="
run_suite build ""
if [ "${PRAGMA_TEST_FULL:-}" = 1 ]; then
	echo "== AddressSanitizer + UBSan build (every test) =="
	asan_select=""
else
	echo "== AddressSanitizer + UBSan build (the long end-to-end tests ran in the plain build only; PRAGMA_TEST_FULL=1 runs them here too) =="
	asan_select="-LE long"
fi
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	run_suite build-asan "$asan_select" -DPRAGMA_SANITIZE=ON
