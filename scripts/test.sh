#!/usr/bin/env bash
# Sets up and runs every test: installs the Debian packages pragma needs,
# builds twice (plain, and with AddressSanitizer + UBSan), and runs the whole
# ctest suite (unit, end-to-end, bridge) in both builds.
set -euo pipefail
cd "$(dirname "$0")/.."
jobs=$(nproc)

./scripts/install-deps.sh

run_suite() {
	local dir=$1; shift
	cmake -S . -B "$dir" -DCMAKE_BUILD_TYPE=RelWithDebInfo "$@" >/dev/null
	cmake --build "$dir" -j "$jobs"
	# Each build gets its own cache so the two runs cannot share state.
	# A skipped test (exit 77) is listed with its reason either way.
	local rc=0
	(cd "$dir" && PRAGMA_CACHE_DIR="$PWD/test-cache" ctest --output-on-failure -j 1 --timeout 1500 \
		--output-junit "$PWD/junit.xml") || rc=$?
	/usr/bin/python3 scripts/skipped_tests.py "$dir/junit.xml" || true
	return $rc
}

echo "== plain build =="
run_suite build
echo "== AddressSanitizer + UBSan build =="
ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1 \
	run_suite build-asan -DPRAGMA_SANITIZE=ON
