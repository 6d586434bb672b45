#!/usr/bin/env bash
# The optimization loop against the fake LLM server, through the real
# libcurl path: a scripted session (compile error -> fixed but wrong ->
# correct and slow -> faster -> regression) must end with the fastest correct
# kernel as best; the Conductor must see the profile, the diagnosis and the
# historical best in pragma mode, and no profile in n-pragma mode.
. "$(dirname "$0")/lib.bash"
S=$PRAGMA_TEST_DATA/fixtures/session
TASK=$PRAGMA_TEST_DATA/fixtures/kb/small_relu.py
W=$(mktemp -d /tmp/pragma-opt-XXXXXX)
$PY "$S/make_script.py" "$W/script.json"
start_fake_llm "$W/script.json"
export PRAGMA_PROFILE_SIM_BUDGET=60

expect_exit 0 "optimize, pragma mode, scripted session" -- \
	$PRAGMA optimize "$TASK" --set N=65536 --llm openai:fake-model --attempts 5 --db "$W/p.db" --json
jcheck "statuses: compile error, wrong, ok, ok, ok" \
	"[a['status'] for a in j['attempts']] == ['compile_error','wrong_output','ok','ok','ok']"
jcheck "the fast kernel (attempt 4) is the best" "j['best']['attempt'] == 4"
jcheck "attempt 4 is faster than 3 and 5" \
	"j['attempts'][3]['speedup'] > j['attempts'][2]['speedup'] and j['attempts'][3]['speedup'] > j['attempts'][4]['speedup']"
jcheck "final speedup with its spread" "j['best']['speedup'] > 0 and j['best']['speedup_spread']['lo'] <= j['best']['speedup_spread']['hi']"
jcheck "usage counted" "j['usage']['calls'] == 10 and j['usage']['tokens'] > 0"
BEST=$($PY -c "import json; print(json.load(open('/tmp/e2e.out.$$'))['best']['path'])")
if grep -q "omp parallel for" "$BEST"; then ok "best.c is the fast kernel"; else bad "best.c is not the fast kernel"; fi
RUN=$($PY -c "import json; print(json.load(open('/tmp/e2e.out.$$'))['run'])")

# What the Conductor was shown (the fake server logged every request).
$PY - "$FAKE_LOG" <<'PYEOF' && ok "conductor requests carry profile, diagnosis, best code" || bad "conductor requests lack evidence"
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
cond = [r for r in reqs if r["headers"].get("x-pragma-agent") == "conductor"]
assert len(cond) == 5, len(cond)
def text(r):
    return "\n".join(m["content"] for m in r["body"]["messages"])
t4, t5 = text(cond[3]), text(cond[4])
assert "Profile of the current kernel" in t4, "no profile"
assert "Historical best (attempt 3)" in t4, "no best at attempt 4"
assert "60 times over" in t4, "best code missing at attempt 4"
assert "Historical best (attempt 4)" in t5 and "omp parallel for" in t5, "best code missing at attempt 5"
assert "metric by metric" in t5, "no comparison"
# Attempt 3 (the first correct kernel, 60 times slower) becomes the best,
# and the request says plainly that it is slower than the baseline.
assert "Decision: attempt 3 is the new best, though still slower than the baseline" in text(cond[2]), "no 'slower'"
t1 = text(cond[0])
assert "compile_error" in t1 and "Likely causes" in t1, "no error causes"
coder = [r for r in reqs if r["headers"].get("x-pragma-agent") == "coder"]
assert "scripted action 1" in text(coder[1]), "the Coder did not get the Conductor's actions"
PYEOF

expect_exit 0 "runs show" -- $PRAGMA runs show "$RUN" --db "$W/p.db" --json
jcheck "store holds 5 attempts, best flagged, calls recorded" \
	"len(j['attempts']) == 5 and [a['n'] for a in j['attempts'] if a['is_best']] == [4] and j['llm_calls']['count'] == 10"

# n-pragma: the same session, no profile in any Conductor request.
kill $FAKE_PID 2>/dev/null
start_fake_llm "$W/script.json"
expect_exit 0 "optimize, n-pragma mode" -- \
	$PRAGMA optimize "$TASK" --set N=65536 --llm openai:fake-model --mode n-pragma --attempts 5 --db "$W/p.db" --json --no-cache
jcheck "n-pragma best is attempt 4" "j['best']['attempt'] == 4 and j['mode'] == 'n-pragma'"
$PY - "$FAKE_LOG" <<'PYEOF' && ok "n-pragma conductor sees no profile" || bad "n-pragma conductor saw a profile"
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
cond = [r for r in reqs if r["headers"].get("x-pragma-agent") == "conductor"]
assert len(cond) == 5
for r in cond:
    t = "\n".join(m["content"] for m in r["body"]["messages"][1:])
    assert "Profile of the current kernel" not in t and "Diagnosis" not in t and "What these metrics mean" not in t
PYEOF

rm -rf "$W"
finish
