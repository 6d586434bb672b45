#!/usr/bin/env bash
# Baseline of every task in the built-in suites (or the tasks given), as a
# Markdown table: task, category, median ms, spread, FLOPs, minimal bytes.
#   bench/baseline_table.sh [--reps N] [TASK...]
# Uses ./build/pragma (or $PRAGMA). Reference data is cached; set
# PRAGMA_CACHE_MAX to bound the disk it takes (each task's 5 sets are made
# once, then evicted least-recently-used).
set -uo pipefail
cd "$(dirname "$0")/.."
PRAGMA=${PRAGMA:-./build/pragma}
reps=20
if [ "${1:-}" = "--reps" ]; then reps=$2; shift 2; fi
if [ $# -eq 0 ]; then
	mapfile -t tasks < <($PRAGMA tasks list --json | /usr/bin/python3 -c \
		'import json,sys; [print(t["path"]) for t in json.load(sys.stdin)["tasks"]]')
else
	tasks=("$@")
fi
echo "| task | kind | category | baseline | median ms | stdev % | min ms | FLOPs | min bytes |"
echo "|---|---|---|---|---:|---:|---:|---:|---:|"
for t in "${tasks[@]}"; do
	if ! json=$($PRAGMA baseline "$t" --reps "$reps" --json 2>/tmp/baseline_table.err); then
		echo "| $(basename "$t" .py) | | | FAILED: $(tail -1 /tmp/baseline_table.err | cut -c1-80) | | | | | |"
		continue
	fi
	printf '%s' "$json" | /usr/bin/python3 -c '
import json, sys
j = json.load(sys.stdin)
s = j["stats"]
fl = j.get("flops")
def h(x):
    if x is None: return "?"
    for u, d in (("G", 1e9), ("M", 1e6), ("K", 1e3)):
        if x >= d: return "%.2f%s" % (x / d, u)
    return "%.0f" % x
print("| %s | %s | %s | %s | %.3f | %.1f | %.3f | %s | %sB |" % (j["task"], j["task_kind"], j["category"], j["config"].get("source", "pytorch"),
      s["median"], 100 * s["stdev"] / s["mean"] if s["mean"] else 0, s["min"], h(fl), h(j["bytes"])))'
done
