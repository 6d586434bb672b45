#!/usr/bin/env bash
# pragma bench on 9 tasks — 8 built-in KernelBench tasks shrunk with a
# suite-wide --set, 1 native C task — against the fake LLM server: interrupted and resumed as a whole, the paper's
# metrics checked against a hand count, the measurement lock shown to hold
# (no two measurements overlap although three tasks ran at once), the
# PyTorch and native groups kept apart, --compare and the report on it.
. "$(dirname "$0")/lib.bash"
B=$PRAGMA_TEST_DATA/fixtures/bench
W=$(mktemp -d /tmp/pragma-bench-XXXXXX)
$PY "$B/make_script.py" "$W/script.json"
start_fake_llm "$W/script.json" 1500
export PRAGMA_LOCK_LOG=$W/lock.log
DB=$W/p.db

# 1. Start, let some tasks finish, interrupt.
TASKS=13_relu,16_sigmoid,17_tanh,18_softmax,22_hardtanh,30_l2_norm,55_mse_loss,59_hinge_loss,$B/vadd
$PRAGMA bench "$TASKS" --set BATCH=4 --set DIM=4096 --llm openai:fake-model --mode n-pragma --attempts 2 --jobs 3 --db "$DB" \
	>"$W/first.out" 2>"$W/first.err" &
BENCH=$!
SUITE=
for _ in $(seq 600); do
	sleep 1
	SUITE=$($PY -c "import sqlite3; c=sqlite3.connect('$DB'); print(c.execute('select id from suites').fetchone()[0])" 2>/dev/null)
	done_runs=$($PY -c "import sqlite3; c=sqlite3.connect('$DB'); print(c.execute(\"select count(*) from runs where status='done'\").fetchone()[0])" 2>/dev/null)
	[ "${done_runs:-0}" -ge 3 ] && break
	kill -0 $BENCH 2>/dev/null || break
done
kill -INT $BENCH 2>/dev/null
wait $BENCH
rc=$?
if [ "$rc" = 130 ]; then ok "interrupted bench exits 130"; else bad "interrupted bench: exit $rc"; tail -20 "$W/first.err"; fi
if grep -q "resume with: pragma bench --resume $SUITE" "$W/first.err"; then ok "says how to resume"; else bad "no resume hint"; fi
$PY - "$DB" >"$W/kept" <<'PYEOF'
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
for rid, task in c.execute("select id, task_name from runs where status='done'"):
    print(rid, task)
PYEOF
n_kept=$(wc -l <"$W/kept")
[ "$n_kept" -ge 3 ] && ok "$n_kept tasks finished before the interrupt" || bad "only $n_kept tasks finished"

# 2. Resume: finished tasks kept, the rest done.
expect_exit 0 "bench --resume" -- $PRAGMA bench --resume "$SUITE" --jobs 3 --db "$DB" --json
cp /tmp/e2e.out.$$ "$W/result.json"
jcheck "9 outcomes, one per task" "len(j['tasks']) == 9 and len(set(t['task'] for t in j['tasks'])) == 9"
$PY - "$DB" "$W/kept" <<'PYEOF' && ok "finished runs were not redone; one run per task" || bad "resume redid or duplicated runs"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
rows = c.execute("select id, task_name, status from runs").fetchall()
assert len(rows) == 9, rows
assert all(s == "done" for _, _, s in rows), rows
ids = {r for r, _, _ in rows}
for line in open(sys.argv[2]):
    assert line.split()[0] in ids, line
PYEOF

# 3. The metrics, by hand: 8 PyTorch tasks, 6 verified (55_mse_loss never
# compiles, 22_hardtanh is always wrong); the native task apart.
jcheck "per-task verdicts" "{t['task']: t['correct'] for t in j['tasks']} == {'13_relu': True, '16_sigmoid': True, '17_tanh': True, '18_softmax': True, '22_hardtanh': False, '30_l2_norm': True, '55_mse_loss': False, '59_hinge_loss': True, 'bench_vadd': True}"
jcheck "failures by verdict" "[t['failed'] for t in j['tasks'] if t['task'] in ('16_sigmoid', '22_hardtanh', '55_mse_loss')] == [{'wrong_output': 1}, {'wrong_output': 2}, {'compile_error': 2}]"
jcheck "PyTorch group: 8 tasks, Success 6/8" "j['metrics']['pytorch']['all']['tasks'] == 8 and j['metrics']['pytorch']['all']['success'] == 0.75"
jcheck "native group apart: 1 task, Success 1" "j['metrics']['native']['all']['tasks'] == 1 and j['metrics']['native']['all']['success'] == 1"
jcheck "category others: 2 tasks, Success 1/2" \
	"j['metrics']['pytorch']['categories']['others']['tasks'] == 2 and j['metrics']['pytorch']['categories']['others']['success'] == 0.5"
jcheck "category activation: 5 tasks, Success 4/5" \
	"j['metrics']['pytorch']['categories']['activation']['tasks'] == 5 and j['metrics']['pytorch']['categories']['activation']['success'] == 0.8"
jcheck "the slow normalization kernel (the work done 200 times) is correct but not fast_1" \
	"j['metrics']['pytorch']['categories']['normalization']['success'] == 1 and j['metrics']['pytorch']['categories']['normalization']['fast']['1'] == 0"
$PY - "$W/result.json" <<'PYEOF' && ok "fast_p, means and category metrics equal a recount from the per-task speedups" || bad "metrics differ from the recount"
import json, math, sys
j = json.load(open(sys.argv[1]))
def count(ts):
    n = len(ts)
    ok = [t["speedup"] for t in ts if t["correct"]]
    r = {"success": len(ok) / n, "fast": {p: sum(1 for s in ok if s > float(p)) / n for p in ("0", "1", "1.5", "2")}}
    r["mean"] = sum(ok) / len(ok) if ok else None
    r["geomean"] = math.exp(sum(math.log(s) for s in ok) / len(ok)) if ok else None
    return r
def same(a, b):
    # --json prints 10 significant digits
    return (a is None and b is None) or abs(a - b) <= 1e-8 * max(1.0, abs(a), abs(b))
for group, kind in (("pytorch", "kernelbench"), ("native", "native")):
    ts = [t for t in j["tasks"] if t["kind"] == kind]
    scopes = {"all": ts}
    for t in ts:
        scopes.setdefault(t["category"], []).append(t)
    for scope, sub in scopes.items():
        m = j["metrics"][group]["all"] if scope == "all" else j["metrics"][group]["categories"][scope]
        want = count(sub)
        assert m["tasks"] == len(sub), (group, scope)
        assert same(m["success"], want["success"]), (group, scope, "success")
        for p in want["fast"]:
            assert same(m["fast"][p], want["fast"][p]), (group, scope, p, m["fast"][p], want["fast"][p])
        assert same(m["mean"], want["mean"]) and same(m["geomean"], want["geomean"]), (group, scope)
PYEOF
jcheck "time spent per stage is reported" "j['time']['llm'] > 0 and j['time']['compile'] > 0 and j['time']['verify'] > 0 and j['time']['timing'] > 0 and j['timing']['wall'] > 0"
jcheck "the baseline configuration held" "j['baseline_config_changed'] == []"

# 4. The lock held: no measurement (an exclusive hold: verification,
# timing, profile) overlapped any other hold, though tasks ran at once;
# builds (shared holds) may overlap one another only.
$PY - "$PRAGMA_LOCK_LOG" <<'PYEOF' && ok "no two measurements overlapped, nor a build and a measurement; tasks were in flight together" || bad "the measurement lock did not hold"
import sys
holds = sorted((float(a), float(b), int(p), k) for p, a, b, k in (l.split() for l in open(sys.argv[1])))
ex = [h for h in holds if h[3] == "EX"]
sh = [h for h in holds if h[3] == "SH"]
assert len(ex) >= 18 and len(sh) >= 9, (len(ex), len(sh))
for e in ex:
    for h in holds:
        if h is e:
            continue
        assert h[1] <= e[0] or h[0] >= e[1], "overlap: %r and %r" % (e, h)
pids = [p for _, _, p, _ in ex]
assert len(set(pids)) >= 9, "expected every task's process to measure"
# Concurrency: some process measured, then another, then the first again.
seen_back = any(pids[i] != pids[i + 1] and pids[i] in pids[i + 2:] for i in range(len(pids) - 1))
assert seen_back, "tasks never interleaved"
PYEOF

# 5. Text output, --show, --list, --compare, the report.
expect_exit 0 "bench --show" -- $PRAGMA bench --show "$SUITE" --db "$DB"
if grep -q "KernelBench tasks (baseline: PyTorch)" /tmp/e2e.out.$$ && grep -q "native C tasks" /tmp/e2e.out.$$ &&
	grep -q "waiting for the model" /tmp/e2e.out.$$; then ok "text: both groups and the time breakdown"; else
	bad "text output incomplete"; out | head -40; fi
expect_exit 0 "bench --list" -- $PRAGMA bench --list --db "$DB" --json
jcheck "the suite run listed as done" "j[0]['status'] == 'done' and j[0]['runs'] == 9"
expect_exit 0 "bench --compare" -- $PRAGMA bench --compare "$SUITE" "$SUITE" --db "$DB" --json
jcheck "compare: one trajectory each is no evidence" \
	"all(x['verdict'].startswith('one trajectory') for x in j['judgement'] if x['a_value'] is not None) and len(j['runs']) == 2"
expect_exit 0 "report on the suite run" -- $PRAGMA report "$SUITE" --db "$DB" --format md
if grep -q "18_softmax" /tmp/e2e.out.$$; then ok "the report covers the suite's tasks"; else bad "report lacks tasks"; fi
expect_exit 0 "HTML report on the suite run" -- $PRAGMA report "$SUITE" --db "$DB" --format html -o "$W/report.html"
n_svg=$(grep -o '<svg' "$W/report.html" | wc -l)
if [ "$n_svg" -ge 10 ] && ! grep -qE '(src|href)="https?:' "$W/report.html"; then
	ok "self-contained HTML with $n_svg SVG plots (Fig. 3 and one Fig. 4 per task)"
else bad "HTML report: $n_svg SVG plots, or external references"; fi
expect_exit 2 "bench with an unknown task" -- $PRAGMA bench no_such_task_xyz --db "$DB"
expect_exit 2 "resume of an unknown suite run" -- $PRAGMA bench --resume s1999 --db "$DB"
expect_exit 2 "a --set no task defines" -- $PRAGMA bench 13_relu --set NOPE=3 --db "$DB"

kill $FAKE_PID 2>/dev/null
rm -rf "$W"
finish
