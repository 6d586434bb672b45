#!/usr/bin/env bash
# Is the measurement lock fair? Many pragma processes wanting it at once (a
# `bench --jobs 8`, its compiles beside its measurements) is where plain
# flock(2) starved one waiter for an hour while the others went round.
#
# Runs EX processes that each take the lock exclusively COUNT times for
# HOLD ms (measurements) beside SH processes that take it shared for twice
# as long, twice as often (compiles), all coming straight back after each
# hold, once with the queue (lib/timing/lock.c) and once with plain flock
# (PRAGMA_LOCK_QUEUE=0), on a private lock. Prints, per mode and kind, the
# waits' median, 95th percentile and maximum, and the wall time.
#
# usage: bench/lock_fairness.sh [EX [SH [COUNT [HOLD]]]]   (defaults 8 3 12 20)
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
EX=${1:-8} SH=${2:-3} COUNT=${3:-12} HOLD=${4:-20}
W=$(mktemp -d /tmp/pragma-lockbench-XXXXXX)
trap 'rm -rf "$W"' EXIT
gcc -O2 -I"$here/include" "$here/bench/lock_driver.c" "$here/build/libpragma.a" "$here/build/libpragma_util.a" \
	-ljansson -lm -o "$W/driver"

run() { # MODE QUEUE
	mkdir -p "$W/$1"
	local t0=$(date +%s.%N) pids=()
	for i in $(seq "$EX"); do
		PRAGMA_LOCK_DIR="$W/$1" PRAGMA_LOCK_QUEUE=$2 "$W/driver" ex "$HOLD" "$COUNT" >"$W/$1/ex.$i" &
		pids+=($!)
	done
	for i in $(seq "$SH"); do
		PRAGMA_LOCK_DIR="$W/$1" PRAGMA_LOCK_QUEUE=$2 "$W/driver" sh $((HOLD * 2)) $((COUNT * 2)) >"$W/$1/sh.$i" &
		pids+=($!)
	done
	wait "${pids[@]}"
	echo "$(date +%s.%N) - $t0" | bc >"$W/$1/wall"
}
run queue 1
run flock 0

/usr/bin/python3 - "$W" <<'PY'
import glob, os, statistics, sys
w = sys.argv[1]
print(f"{'mode':<7} {'kind':<4} {'takes':>6} {'median ms':>10} {'p95 ms':>8} {'max ms':>8} {'worst process total s':>22} {'wall s':>7}")
for mode in ("queue", "flock"):
    wall = float(open(os.path.join(w, mode, "wall")).read())
    for kind in ("ex", "sh"):
        per = [[float(x) for x in open(f)] for f in sorted(glob.glob(os.path.join(w, mode, kind + ".*")))]
        v = sorted(x for p in per for x in p)
        if not v:
            continue
        p95 = v[min(len(v) - 1, int(0.95 * len(v)))]
        worst = max(sum(p) for p in per) / 1e3
        print(f"{mode:<7} {kind:<4} {len(v):>6} {statistics.median(v):>10.1f} {p95:>8.1f} {v[-1]:>8.1f} {worst:>22.2f} {wall:>7.1f}")
PY
