#!/usr/bin/env bash
# A model that returns the same kernel every attempt must never produce a
# new best (issue 13/14: the same kernel submitted twice was once declared a
# new best at 1.50x over a 1.71x best, with an estimate outside its own
# bracket). Attempt 2 is byte-identical to attempt 1 (the same build);
# attempts 3 and 4 carry a different tag string in their objects (other
# builds of the same code), so they are measured against the best like any
# candidate, and must never be called faster or slower.
. "$(dirname "$0")/lib.bash"
/usr/bin/python3 -c "import torch" 2>/dev/null || { echo "SKIP: no torch for the PyTorch baseline"; exit 77; }
S=$PRAGMA_TEST_DATA/fixtures/session
W=$(mktemp -d /tmp/pragma-same-XXXXXX)
export REPLIES=$W/replies
mkdir -p "$REPLIES"
K=$(cat "$S/k4_fast.c")
for n in 1 2 3 4; do
	tag=""
	[ $n -ge 3 ] && tag="__attribute__((used)) static const char build_tag[] = \"attempt $n\";"
	printf 'Here is the kernel.\n\n```c\n%s\n%s\n```\n' "$K" "$tag" >"$REPLIES/coder-$n.md"
	printf 'Verdict: no measurable change\nBottleneck: memory\nActions:\n1. keep it\n' >"$REPLIES/conductor-$n.md"
done

expect_exit 0 "optimize with a model that repeats itself" -- \
	$PRAGMA optimize "$PRAGMA_TEST_DATA/fixtures/kb/small_relu.py" --set N=65536 --llm "exec:$S/exec_model.sh" \
	--mode n-pragma --attempts 4 --db "$W/p.db" --json
jcheck "all four correct" "[a['status'] for a in j['attempts']] == ['ok']*4"
jcheck "attempt 1 stays the best" "j['best']['attempt'] == 1"
jcheck "no later attempt became the best" "not any(a['became_best'] for a in j['attempts'][1:])"
jcheck "attempt 2 is the same build as the best" \
	"j['attempts'][1]['vs_best']['same_build'] and j['attempts'][1]['vs_best']['verdict'] == 'the same build'"
jcheck "attempts 3 and 4: measured, never faster or slower" \
	"all(a['vs_best']['verdict'] in ('not distinguishable', 'the same within the noise') for a in j['attempts'][2:])"
# Whether each interval contains 1.00 is not asserted: a 95% interval
# misses the truth one time in twenty by construction, three comparisons
# miss together far more often, and a bootstrap over one session's rounds
# is narrower than the truth when the machine's load drifts within it (CI
# failed twice on exactly this, each time with the right verdict). What
# must hold on any machine is the verdict above, and that one interleaved
# session never puts the same code grossly apart: a ratio outside 0.85-1.18
# means the two were not timed alike (the wrong kernel, no interleaving).
jcheck "the same code reads within 0.85-1.18x of the best in one session" \
	"all(0.85 <= a['vs_best']['ratio'] <= 1.18 for a in j['attempts'][2:])"
jcheck "each ratio to the best lies inside its own interval" \
	"all(a['vs_best']['lo'] <= a['vs_best']['ratio'] <= a['vs_best']['hi'] for a in j['attempts'][2:])"
jcheck "every speedup shown lies inside its own interval" \
	"all(a['speedup_spread']['lo'] <= a['speedup'] <= a['speedup_spread']['hi'] for a in j['attempts'])"
RUN=$($PY -c "import json; print(json.load(open('/tmp/e2e.out.$$'))['run'])")
# What the model was told: the rule, and the decision, every time.
$PY - "$W/p.db" "$RUN" <<'EOF' && ok "each request states the rule and the decision" || bad "the rule or a decision is missing"
import sqlite3, sys
db = sqlite3.connect(sys.argv[1])
rows = db.execute("select attempt, role, prompt from llm_calls where run_id=? order by id", (sys.argv[2],)).fetchall()
cond = [p for a, r, p in rows if r == "conductor"]
assert len(cond) == 4, len(cond)
for i, p in enumerate(cond, 1):
    assert "How the best is kept" in p, i
    assert ("Decision: the best stays attempt 1" in p or "Decision: the same build as the best (attempt 1)" in p
            or (i == 1 and "is the new best" in p)), i
assert "the same build as the best (attempt 1)" in cond[1]
# An undecided comparison says what its rounds could resolve.
for p in cond:
    if "], not distinguishable" in p:
        assert "(at this noise the interval spans about ±" in p, p
assert "This was the last attempt" in cond[3]
# The Coder after attempt 3 (timed beside the best) reads the best by that
# session's numbers, the ones its result shows, not attempt 1's own.
coder = [p for a, r, p in rows if r == "coder"]
assert len(coder) == 4, len(coder)
assert "(the historical best): attempt 1 — " in coder[3], coder[3][-3000:]
assert "over the baseline in the rounds of your last kernel (attempt 3)" in coder[3], coder[3][-3000:]
EOF
rm -rf "$W"
finish
