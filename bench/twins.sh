#!/usr/bin/env bash
# Two builds of one kernel (k4_fast.c, and the same code with a tag string
# in its object), timed against each other with the PyTorch baseline in
# SESSIONS sessions of 2 rounds, as the loop times an attempt against the
# best. Prints how far apart identical kernels read, per session and by
# which one was started first, and how often the loop's adaptive comparison
# would call one faster or slower when replayed on these sessions, with the
# power to tell a 10% and a 15% slowdown (bench/twins_replay.py).
#
# usage: bench/twins.sh [SESSIONS [RUNS]]     (defaults 100 2; ~4.5 min per
#        run of 100 on a quiet 2-core machine, and ~1.5 min to replay; needs
#        build/, torch, numpy). TWINS_KEEP=DIR keeps the recorded calls and
#        log there (bench/twins_replay.py DIR/calls DIR/log replays them).
set -euo pipefail
here=$(cd "$(dirname "$0")/.." && pwd)
SESSIONS=${1:-100} RUNS=${2:-2}
W=$(mktemp -d /tmp/pragma-twins-XXXXXX)
trap 'rm -rf "$W"' EXIT
gcc -O2 -fopenmp -I"$here/include" "$here/bench/twins_driver.c" "$here/build/libpragma.a" \
	"$here/build/libpragma_util.a" $(pkg-config --libs jansson sqlite3 libcurl libseccomp) -lm -lpthread -ldl \
	-o "$W/driver"
K=$here/tests/fixtures/session/k4_fast.c
cp "$K" "$W/a.c"
{ cat "$K"; echo '__attribute__((used)) static const char build_tag[] = "twin";'; } >"$W/b.c"
for r in $(seq "$RUNS"); do
	TWINS_DEBUG=1 "$W/driver" "$here/tests/fixtures/kb/small_relu.py" N=65536 "$W/a.c" "$W/b.c" "$SESSIONS" \
		>"$W/calls.$r" 2>"$W/log.$r"
	grep '^#' "$W/calls.$r" | sed "s/^# /run $r: /"
done
# Sessions are numbered per run: renumber them so runs do not merge.
awk 'FNR==1{run++} /^C /{$4 = $4 + 100000*run} {print}' "$W"/calls.* >"$W/calls"
awk 'FNR==1{run++} /sides started in the order/{for(i=1;i<=NF;i++) if($i=="session"){sub(":","",$(i+1)); $(i+1)=$(i+1)+100000*run}} {print}' \
	"$W"/log.* >"$W/log"
if [ -n "${TWINS_KEEP:-}" ]; then
	mkdir -p "$TWINS_KEEP"
	cp "$W/calls" "$W/log" "$TWINS_KEEP/"
fi
/usr/bin/python3 "$here/bench/twins_replay.py" "$W/calls" "$W/log"
