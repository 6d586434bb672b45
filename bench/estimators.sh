#!/usr/bin/env bash
# Which time estimator can a shared, noisy machine not fool?
#
# Runs `pragma eval` RUNS times (default 8) on controls whose truth is known
# and recomputes, from the very same timed calls (--json keeps every call,
# round by round), the speedup by several estimators:
#   median-all   ratio of the medians of all calls kept (pragma's estimate,
#                include/pragma/timing.h, chosen by this script's results)
#   mean-all     ratio of the means
#   min-all      ratio of the fastest calls
#   p10-all      ratio of the 10th percentiles
#   med-rmin     ratio of the medians over rounds of each round's fastest
#                call (Chen & Revels' minimum, made robust to one lucky call)
#   paired       median over rounds of the per-round ratio of round medians
# and prints, per control and estimator: the mean ratio, the spread across
# runs (standard deviation of log ratio, in %), the worst deviation from the
# truth, and for pragma's own interval (eval's speedup_spread: 95%, a
# bootstrap over sessions, then rounds within them, of the ratio of medians)
# and the same two-level bootstrap of the med-rmin and min-all estimators
# how many runs' intervals contain the truth.
#
# Controls (truth known):
#   self     tasks/c/stencil2d's baseline.c against itself          truth 1.00
#   slower   the same with 25% more rows computed (bench/kernels)   truth < 1
#
# usage: bench/estimators.sh [RUNS]    (env: PRAGMA, EVAL_ARGS, e.g. "--rounds 15")
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
PRAGMA=${PRAGMA:-$here/build/pragma}
PY=/usr/bin/python3
RUNS=${1:-8}
export PRAGMA_CACHE_DIR=${PRAGMA_CACHE_DIR:-$HOME/.cache/pragma}
out=$(mktemp -d /tmp/pragma-est-XXXXXX)
trap 'rm -rf "$out"' EXIT
SIZE=(--set N=1536 --set M=1536)

declare -A SRC=([self]="$here/tasks/c/stencil2d/baseline.c" [slower]="$here/bench/kernels/stencil2d_slower.c")

uname -r | sed 's/^/kernel: /'
grep -m1 "model name" /proc/cpuinfo | sed 's/.*: /cpu: /'
echo "cores: $(nproc); load before: $(cut -d' ' -f1-3 /proc/loadavg); runs: $RUNS; eval args: ${EVAL_ARGS:-(defaults: 15 rounds of 5 calls, 4 sessions)}"
for c in self slower; do
	$PRAGMA verify stencil2d "${SRC[$c]}" "${SIZE[@]}" --json >"$out/warm.json" 2>&1 ||
		{ echo "verify of $c failed: $(head -c 300 "$out/warm.json")"; exit 1; }
done
# The controls take turns, so each one's runs see the same background load.
for r in $(seq "$RUNS"); do
	for c in self slower; do
		# shellcheck disable=SC2086
		$PRAGMA eval stencil2d "${SRC[$c]}" "${SIZE[@]}" ${EVAL_ARGS:-} --json >"$out/$c.$r.json" 2>"$out/$c.$r.err" ||
			echo "run $r of $c: exit $? $(head -c 200 "$out/$c.$r.err")"
	done
done
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"

$PY - "$out" "$RUNS" <<'EOF'
import glob, json, math, random, statistics, sys

out, runs = sys.argv[1], int(sys.argv[2])

def rounds_of(j, side):
    calls = j["samples_ms"][side]
    mins = j["round_minima_ms"][side]
    n = len(mins)
    per = len(calls) // n if n else 0
    return [calls[i * per:(i + 1) * per] for i in range(n)]

def pct(v, q):
    v = sorted(v)
    pos = q * (len(v) - 1)
    lo = int(pos)
    return v[lo] if lo + 1 >= len(v) else v[lo] + (pos - lo) * (v[lo + 1] - v[lo])

EST = {
    "median-all": lambda b, c: statistics.median(sum(b, [])) / statistics.median(sum(c, [])),
    "mean-all": lambda b, c: statistics.mean(sum(b, [])) / statistics.mean(sum(c, [])),
    "min-all": lambda b, c: min(sum(b, [])) / min(sum(c, [])),
    "p10-all": lambda b, c: pct(sum(b, []), .1) / pct(sum(c, []), .1),
    "med-rmin": lambda b, c: statistics.median(min(r) for r in b) / statistics.median(min(r) for r in c),
    "paired": lambda b, c: statistics.median(statistics.median(x) / statistics.median(y) for x, y in zip(b, c)),
}

def two_level(b, c, sess, rng, est="med-rmin", n=1000):
    """Resample sessions, then rounds within each: the placement of a
    session's processes is shared by its rounds."""
    groups = {}
    for i, s in enumerate(sess):
        groups.setdefault(s, []).append(i)
    keys = list(groups)
    vals = []
    for _ in range(n):
        idx = []
        for k in (rng.choice(keys) for _ in keys):
            g = groups[k]
            idx += [rng.choice(g) for _ in g]
        vals.append(EST[est]([b[i] for i in idx], [c[i] for i in idx]))
    vals.sort()
    return vals[int(.025 * (n - 1))], vals[int(.975 * (n - 1) + .5)]

rng = random.Random(7)
print()
print("| control | estimator | runs | mean ratio | spread (sd of log ratio) | worst |ratio-1| |")
print("|---|---|---:|---:|---:|---:|")
summary = {}
for c in ("self", "slower"):
    js = []
    for r in range(1, runs + 1):
        try:
            j = json.load(open(f"{out}/{c}.{r}.json"))
        except Exception:
            continue
        if j.get("status") == "ok":
            js.append(j)
    data = [(rounds_of(j, "baseline"), rounds_of(j, "candidate"), j.get("round_sessions", []), j) for j in js]
    for name, f in EST.items():
        rs = [f(b, cc) for b, cc, _, _ in data]
        if not rs:
            continue
        logs = [math.log(x) for x in rs]
        print(f"| {c} | {name} | {len(rs)} | {statistics.mean(rs):.3f} | "
              f"{100 * (statistics.stdev(logs) if len(logs) > 1 else 0):.1f}% | {max(abs(x - 1) for x in rs):.3f} |")
    cover = sum(1 for _, _, _, j in data if j["speedup_spread"]["lo"] <= 1 <= j["speedup_spread"]["hi"])
    widths = [j["speedup_spread"]["hi"] - j["speedup_spread"]["lo"] for _, _, _, j in data]
    row = [len(data), f"{cover}/{len(data)}", statistics.mean(widths) if widths else 0]
    for est in ("med-rmin", "min-all"):
        tl = [two_level(b, cc, s, rng, est) for b, cc, s, _ in data if s]
        row += [f"{sum(1 for lo, hi in tl if lo <= 1 <= hi)}/{len(tl)}",
                statistics.mean(hi - lo for lo, hi in tl) if tl else 0]
    summary[c] = row
print()
print("How often each interval contains 1.00 (for 'self' it should, nearly always; for 'slower' it should not):")
print("| control | runs | pragma's interval | mean width | two-level, med-rmin | mean width | two-level, min-all | mean width |")
print("|---|---:|---:|---:|---:|---:|---:|---:|")
for c, r in summary.items():
    print(f"| {c} | {r[0]} | {r[1]} | {r[2]:.3f} | {r[3]} | {r[4]:.3f} | {r[5]} | {r[6]:.3f} |")
EOF
