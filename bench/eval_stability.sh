#!/usr/bin/env bash
# How stable are `pragma eval` numbers, and what does one verify+time cycle
# cost beyond the kernel's own time?
#
# For each kernel below, runs `pragma eval` RUNS times (default 5) with the
# default protocol and reports, over the runs:
#   - the speedup's mean, min, max, its coefficient of variation (CV) and
#     range ((max - min) / mean);
#   - the CV of the candidate's and the baseline's medians on their own
#     (machine drift, which interleaving cancels out of the speedup);
#   - the cost of one cycle with the object already compiled: `pragma verify`
#     wall time, and `pragma eval` wall time minus the time spent inside the
#     timed calls and waiting for a quiet machine (the harness, checks,
#     process start, reference loading).
#
# usage: bench/eval_stability.sh [RUNS] [KERNEL...]    (env: PRAGMA, EVAL_ARGS)
# KERNEL is a file under tests/kernels (its "// task:" line says the task);
# KernelBench tasks are skipped without torch.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
PRAGMA=${PRAGMA:-$here/build/pragma}
PY=/usr/bin/python3
RUNS=${1:-5}
shift || true
KERNELS=("$@")
[ ${#KERNELS[@]} -gt 0 ] || KERNELS=(stencil2d_self.c stencil2d_big.c transpose_big.c relu_big.c histogram_big.c)
export PRAGMA_CACHE_DIR=${PRAGMA_CACHE_DIR:-$HOME/.cache/pragma}
out=$(mktemp -d /tmp/pragma-bench-XXXXXX)
trap 'rm -rf "$out"' EXIT
have_torch=1
$PY -c "import torch" 2>/dev/null || have_torch=0

# Bench-sized variants of tests/kernels: the same sources, bigger problems.
spec() {
	case $1 in
	stencil2d_big.c) echo "stencil2d_avx2_omp.c stencil2d --set N=2048 --set M=2048" ;;
	transpose_big.c) echo "transpose_tiled.c transpose --set N=2500 --set M=1999" ;;
	relu_big.c) echo "relu_avx2_omp.c 13_relu --set BATCH=8 --set DIM=1048576" ;;
	softmax_big.c) echo "softmax_omp.c 18_softmax --set BATCH=8 --set DIM=262144" ;;
	histogram_big.c) echo "histogram_private.c histogram --set N=16777216" ;;
	# Control: the task's own baseline.c as the candidate; the truth is 1.0.
	stencil2d_self.c) echo "../../tasks/c/stencil2d/baseline.c stencil2d --set N=2048 --set M=2048" ;;
	*) local t; t=$(sed -n 's|^// task: *||p' "$here/tests/kernels/$1" | head -1); echo "$1 $t" ;;
	esac
}

uname -r | sed 's/^/kernel: /'
grep -m1 "model name" /proc/cpuinfo | sed 's/.*: /cpu: /'
echo "cores: $(nproc); load before: $(cut -d' ' -f1-3 /proc/loadavg)"
echo "runs per kernel: $RUNS; eval args: ${EVAL_ARGS:-(defaults)}"
echo

ready=()
for k in "${KERNELS[@]}"; do
	read -r -a s <<<"$(spec "$k")"
	src=$here/tests/kernels/${s[0]}
	task=${s[1]}
	case $task in [0-9]*_*) [ $have_torch = 1 ] || { echo "skip $k: no torch"; continue; } ;; esac
	# Warm everything that is not the cycle itself: reference data, the build,
	# the machine's peaks.
	$PRAGMA verify "$task" "$src" "${s[@]:2}" --json >"$out/warm.json" 2>/dev/null ||
		{ echo "skip $k: verify failed: $(head -c 300 "$out/warm.json")"; continue; }
	t0=$(date +%s.%N)
	$PRAGMA verify "$task" "$src" "${s[@]:2}" --json >/dev/null 2>&1
	t1=$(date +%s.%N)
	echo "$t1 - $t0" | bc >"$out/$k.verify_s"
	echo "$task" >"$out/$k.task"
	ready+=("$k")
done
# Runs of different kernels take turns, so each kernel's runs are spread over
# the whole session (and its changing background load), not bunched.
for r in $(seq "$RUNS"); do
	for k in "${ready[@]}"; do
		read -r -a s <<<"$(spec "$k")"
		t0=$(date +%s.%N)
		# shellcheck disable=SC2086
		$PRAGMA eval "${s[1]}" "$here/tests/kernels/${s[0]}" "${s[@]:2}" ${EVAL_ARGS:-} --json \
			>"$out/$k.$r.json" 2>"$out/$k.$r.err"
		t1=$(date +%s.%N)
		echo "$t1 - $t0" | bc >"$out/$k.$r.wall"
	done
done

$PY - "$out" "$RUNS" "${KERNELS[@]}" <<'PYEOF'
import json, os, statistics as st, sys
out, runs, kernels = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
def cv(x): return 100 * st.pstdev(x) / st.mean(x) if len(x) > 1 and st.mean(x) else 0.0
rows = []
for k in kernels:
    if not os.path.exists(os.path.join(out, k + ".task")):
        continue
    task = open(os.path.join(out, k + ".task")).read().strip()
    sp, cm, bm, over, waited, retried, statuses, clean = [], [], [], [], [], [], [], []
    for r in range(1, runs + 1):
        try:
            j = json.load(open(os.path.join(out, "%s.%d.json" % (k, r))))
        except Exception:
            statuses.append("no-json"); continue
        statuses.append(j["status"])
        if j["status"] != "ok":
            continue
        sp.append(j["speedup"]); cm.append(j["time_ms"]["median"]); bm.append(j["baseline_ms"]["median"])
        wall = float(open(os.path.join(out, "%s.%d.wall" % (k, r))).read()) * 1000
        inside = j["time_ms"]["mean"] * j["time_ms"]["count"] + j["baseline_ms"]["mean"] * j["baseline_ms"]["count"]
        w = j["interference"]["waited_for_quiet_ms"]
        waited.append(w / 1000); retried.append(j["interference"]["retried_rounds"])
        clean.append("%d/%d" % (j["interference"]["rounds_clean"], j["interference"]["rounds_made"]))
        over.append((wall - inside - w) / 1000)
    ver = float(open(os.path.join(out, k + ".verify_s")).read())
    rows.append((k, task, sp, cm, bm, over, waited, retried, statuses, ver, clean))

print("| kernel | task | runs ok | speedup mean | min | max | CV | range | cand median CV | base median CV | verify s | eval overhead s | waited s | retried rounds | clean rounds |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
for k, task, sp, cm, bm, over, waited, retried, statuses, ver, clean in rows:
    if not sp:
        print("| %s | %s | 0/%d (%s) |" % (k, task, runs, ",".join(statuses))); continue
    m = st.mean(sp)
    print("| %s | %s | %d/%d | %.3f | %.3f | %.3f | %.1f%% | %.1f%% | %.1f%% | %.1f%% | %.2f | %.1f | %.1f | %.1f | %s |" % (
        k, task, len(sp), runs, m, min(sp), max(sp), cv(sp), 100 * (max(sp) - min(sp)) / m, cv(cm), cv(bm),
        ver, st.mean(over), st.mean(waited), st.mean(retried), " ".join(clean)))
print()
for k, task, sp, cm, bm, over, waited, retried, statuses, ver, clean in rows:
    for r, stt in enumerate(statuses, 1):
        if stt != "ok":
            try:
                j = json.load(open(os.path.join(out, "%s.%d.json" % (k, r))))
                print("  %s run %d: %s: %s" % (k, r, stt, j.get("message", "")[:200]))
            except Exception:
                print("  %s run %d: %s: %s" % (k, r, stt, open(os.path.join(out, "%s.%d.err" % (k, r))).read()[-300:]))
print("speedups per run:")
for k, task, sp, *_ in rows:
    print("  %-18s %s" % (k, " ".join("%.3f" % x for x in sp)))
PYEOF
echo
echo "load after: $(cut -d' ' -f1-3 /proc/loadavg)"
