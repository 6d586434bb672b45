#!/usr/bin/env bash
# A replayed run killed mid-attempt resumes where the recording stopped:
# the attempt in flight keeps the Coder reply it already had (stored with
# the attempt), and the next attempt gets the next recorded reply — not the
# recording from the start again (issue 14: after kill -9 and --resume,
# attempt 2's kernel was byte-identical to attempt 1's and the Conductor
# trace repeated).
. "$(dirname "$0")/lib.bash"
S=$PRAGMA_TEST_DATA/fixtures/session
TASK=$PRAGMA_TEST_DATA/fixtures/kb/small_relu.py
W=$(mktemp -d /tmp/pragma-replay-XXXXXX)
# A recording of three attempts (a test fixture made here, not a model's work).
$PY - "$S" "$W/rec.jsonl" <<'EOF'
import json, sys
d, out = sys.argv[1], sys.argv[2]
with open(out, "w") as f:
    for n, k in enumerate(["k3_slow.c", "k4_fast.c", "k5_regression.c"], 1):
        for agent, text in (("coder", "Kernel %d.\n\n```c\n%s```\n" % (n, open(f"{d}/{k}").read())),
                            ("conductor", "Verdict: improvement\nBottleneck: scripted %d\nActions:\n1. scripted action %d\n" % (n, n))):
            f.write(json.dumps({"v": 1, "agent": agent, "attempt": n, "text": text, "finish_reason": "stop",
                                "usage": {"prompt_tokens": 10, "completion_tokens": 10, "reasoning_tokens": 0,
                                          "estimated": True}}) + "\n")
EOF
$PRAGMA optimize "$TASK" --set N=65536 --llm "replay:$W/rec.jsonl" --mode n-pragma --attempts 3 --db "$W/p.db" \
	--json >"$W/first.json" 2>"$W/first.err" &
PID=$!
# Kill it once attempt 2 has its Coder reply and is being evaluated.
for _ in $(seq 900); do
	st=$($PY - "$W/p.db" <<'EOF' 2>/dev/null
import sqlite3, sys
try:
    r = sqlite3.connect(sys.argv[1]).execute("select stage from attempts where n=2 and candidate=0").fetchone()
    print(r[0] if r else "")
except Exception:
    print("")
EOF
)
	case "$st" in verifying|timing|profiling|conducting) break ;; esac
	sleep 0.2
done
kill -9 $PID 2>/dev/null
wait $PID 2>/dev/null
[ -n "$st" ] && ok "killed during attempt 2 ($st)" || bad "attempt 2 never started"
RUN=$($PRAGMA runs --db "$W/p.db" --json | $PY -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["id"])')
expect_exit 0 "resume the replayed run" -- $PRAGMA optimize --resume "$RUN" --db "$W/p.db" --json
jcheck "all 3 attempts, each once" "[a['n'] for a in j['attempts']] == [1, 2, 3]"
expect_exit 0 "the stored run" -- $PRAGMA runs show "$RUN" --db "$W/p.db" --json
jcheck "attempt 1 is the slow kernel, 2 the fast one, 3 the regression: the recording went on" \
	"'60 times over' in j['attempts'][0]['code'] and 'omp parallel for' in j['attempts'][1]['code'] and '20 times' in j['attempts'][2]['code']"
jcheck "three Conductor answers, in order" \
	"[a['conductor']['bottleneck'] for a in j['attempts']] == ['scripted 1', 'scripted 2', 'scripted 3']"
rm -rf "$W"
finish
