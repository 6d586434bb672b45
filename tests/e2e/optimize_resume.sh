#!/usr/bin/env bash
# A killed run resumes losing at most the attempt in flight; a budget stop is
# clean; tunables pick the fastest variant. The model is a script behind the
# exec provider, answering by PRAGMA_AGENT and PRAGMA_ATTEMPT.
. "$(dirname "$0")/lib.bash"
S=$PRAGMA_TEST_DATA/fixtures/session
TASK=$PRAGMA_TEST_DATA/fixtures/kb/small_relu.py
W=$(mktemp -d /tmp/pragma-resume-XXXXXX)
export REPLIES=$W/replies SLOW_FLAG=$W/slow SLOW_ATTEMPT=3
$PY "$S/make_replies.py" "$REPLIES" k3_slow.c k4_fast.c k5_regression.c k4_fast.c
MODEL="exec:$S/exec_model.sh"

# Kill pragma while the Coder of attempt 3 is thinking, then resume.
touch "$SLOW_FLAG"
ENV_LOG=$W/env.log $PRAGMA optimize "$TASK" --set N=65536 --llm "$MODEL" --mode n-pragma --attempts 4 --db "$W/p.db" \
	--suite-run s-resume-test --trajectory 2 --json >"$W/first.json" 2>"$W/first.err" &
PID=$!
for _ in $(seq 600); do
	n=$($PRAGMA runs --db "$W/p.db" --json 2>/dev/null | $PY -c \
		'import json,sys; r=json.load(sys.stdin)["runs"]; print(r[0]["attempts"] if r else 0)' 2>/dev/null)
	[ "${n:-0}" -ge 3 ] && break
	sleep 0.5
done
kill -9 $PID 2>/dev/null
wait $PID 2>/dev/null
pkill -f "sleep 120" 2>/dev/null
rm -f "$SLOW_FLAG"
RUN=$($PRAGMA runs --db "$W/p.db" --json | $PY -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["id"])')
expect_exit 0 "the killed run is in the store" -- $PRAGMA runs show "$RUN" --db "$W/p.db" --json
jcheck "attempts 1 and 2 finished before the kill; the run reads as interrupted (its process is gone)" \
	"[a['stage'] for a in j['attempts'] if a['n'] <= 2] == ['done', 'done'] and j['status'] == 'interrupted'"
: >"$W/env.log"
ENV_LOG=$W/env.log expect_exit 0 "resume" -- $PRAGMA optimize --resume "$RUN" --db "$W/p.db" --json
# The model of a suite's trajectory 2 is told so after the resume too.
if grep -q . "$W/env.log" && ! grep -qv 'trajectory=2$' "$W/env.log"; then
	ok "the resumed run's model calls carry PRAGMA_TRAJECTORY=2"
else
	bad "the resumed run's model calls carry PRAGMA_TRAJECTORY=2: $(tr '\n' ';' <"$W/env.log")"
fi
jcheck "all 4 attempts, each once" "[a['n'] for a in j['attempts']] == [1, 2, 3, 4]"
jcheck "best is the fast kernel" "j['best']['attempt'] in (2, 4)"
expect_exit 0 "store after resume" -- $PRAGMA runs show "$RUN" --db "$W/p.db" --json
jcheck "run done, 4 attempts stored" "j['status'] == 'done' and len(j['attempts']) == 4"

# A budget of 3 calls stops the run cleanly, with what it has.
PRAGMA_LLM_BUDGET_CALLS=3 expect_exit 0 "budget stop" -- \
	$PRAGMA optimize "$TASK" --set N=65536 --llm "$MODEL" --mode n-pragma --attempts 4 --db "$W/p.db" --json --no-cache
jcheck "stopped, with a reason" "j['status'] == 'stopped' and 'budget' in j['stop_reason']"
jcheck "what ran before the stop counts: attempt 2 (coder 2 was the 3rd call) is the best" "len(j['attempts']) == 2 and j['best']['attempt'] == 2"

# Tunables: one attempt whose kernel declares REPEAT=1,8,30 (and a second
# attempt, whose request shows the variants).
$PY "$S/make_replies.py" "$W/tuned" k_tuned.c k4_fast.c
mkdir -p "$W/req"
REQ_DIR=$W/req REPLIES=$W/tuned expect_exit 0 "tunables" -- \
	$PRAGMA optimize "$TASK" --set N=65536 --llm "$MODEL" --mode single --attempts 2 --db "$W/p.db" --json
# single mode profiles nothing: its variant table says nothing of a profile
# (players of n-pragma and single looked for one).
if $PY -c "import json,sys; t=json.load(open(sys.argv[1]))['messages'][-1]['content']; sys.exit(0 if 'Tunable variants' in t and 'profiled' not in t else 1)" "$W/req/coder-2.json"; then
	ok "single mode's variant table does not say 'profiled'"
else
	bad "single mode's variant table does not say 'profiled'"
fi
RUN=$($PY -c "import json; print(json.load(open('/tmp/e2e.out.$$'))['run'])")
expect_exit 0 "tuned run in the store" -- $PRAGMA runs show "$RUN" --db "$W/p.db" --json
jcheck "REPEAT=1 chosen, 3 variants timed" \
	"j['attempts'][0]['tunables']['chosen'] == {'REPEAT': '1'} and len(j['attempts'][0]['tunables']['table']) == 3"
# The fastest of three, measured in the rounds that chose it, is favored by
# their noise: it is timed again with the baseline, and the attempt's
# numbers are that session's; each variant's row keeps its own interval.
jcheck "the chosen variant was timed again, alone with the baseline" \
	"j['attempts'][0]['tunables']['timed_again'] and [s['label'] for s in j['attempts'][0]['timing']['sides']] == ['baseline', 'candidate']"
jcheck "each variant's speedup lies inside its own interval" \
	"all(r['lo'] <= r['speedup'] <= r['hi'] for r in j['attempts'][0]['tunables']['table'])"

rm -rf "$W"
finish
