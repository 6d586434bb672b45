#!/usr/bin/env bash
# What a new user hit (issue 14): bad settings that fell back in silence,
# numeric flags where 0 meant "not given", read-only commands that made a
# store, a hung bridge that said nothing and outlived pragma, killed runs
# "running" forever, --resume with a task, a dead model server retried in
# silence, a task too large for the machine.
. "$(dirname "$0")/lib.bash"
W=$(mktemp -d /tmp/pragma-hygiene-XXXXXX)
trap 'for f in "$W"/*.pid; do [ -e "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done; rm -rf "$PRAGMA_CACHE_DIR" "$XDG_CONFIG_HOME" "$W"' EXIT
unset PRAGMA_LLM PRAGMA_DB
NATIVE=$PRAGMA_HOME/tasks/c/prefix_sum
TASK=$PRAGMA_TEST_DATA/fixtures/kb/small_relu.py

# ---- settings: an error naming the setting, the value, what it accepts.
PRAGMA_CACHE_MAX=lots expect_exit 2 "PRAGMA_CACHE_MAX=lots is refused" -- $PRAGMA cache info
grep_err "it names the variable, the value and what it accepts" "PRAGMA_CACHE_MAX='lots' is not a size; it accepts .*8G"
grep_err "with a hint" "^Hint: fix or unset PRAGMA_CACHE_MAX"
PRAGMA_CACHE_MAX=-5 expect_exit 2 "PRAGMA_CACHE_MAX=-5 is refused" -- $PRAGMA runs --db "$W/none.db"
PRAGMA_LLM=bogus expect_exit 2 "PRAGMA_LLM=bogus is refused" -- $PRAGMA tasks list
grep_err "PRAGMA_LLM says what a spec is" "PRAGMA_LLM='bogus' is not PROVIDER:MODEL"
PRAGMA_BRIDGE_TIMEOUT=soon expect_exit 2 "PRAGMA_BRIDGE_TIMEOUT=soon is refused" -- $PRAGMA tasks show "$TASK"
PRAGMA_CACHE_MAX=lots expect_exit 0 "--help works whatever the settings" -- $PRAGMA cache --help
printf '[llm]\ntemprature = 0.2\n' >"$W/config"
PRAGMA_CONFIG=$W/config expect_exit 2 "a misspelled config key is refused" -- $PRAGMA tasks list
grep_err "with file, line and the known keys" "config:2: unknown setting 'llm.temprature'"
grep_err "the hint lists the section's keys" "^Hint: .*temperature"
PRAGMA_LLM=bogus PRAGMA_CACHE_MAX=lots PRAGMA_LLM_TEMPRATURE=1 expect_exit 3 "doctor fails on bad settings" -- $PRAGMA doctor
if grep -q "^fail  setting PRAGMA_LLM " /tmp/e2e.out.$$ && grep -q "^fail  setting PRAGMA_CACHE_MAX" /tmp/e2e.out.$$ &&
	grep -q "^fail  llm .*not PROVIDER:MODEL" /tmp/e2e.out.$$; then
	ok "doctor: a fail line per bad setting, and for the model"
else
	bad "doctor: fail lines missing"; grep -E 'setting|llm' /tmp/e2e.out.$$ | sed 's/^/    /'
fi
grep -q "^warn  setting PRAGMA_LLM_TEMPRATURE.*no such variable" /tmp/e2e.out.$$ &&
	ok "doctor names a PRAGMA_ variable pragma does not read" || bad "doctor: no warning for PRAGMA_LLM_TEMPRATURE"

# ---- numeric flags: 0 is not "not given", garbage is refused.
while IFS="|" read -r desc args; do
	# shellcheck disable=SC2086
	expect_exit 2 "$desc" -- $PRAGMA $args
done <<EOF
optimize --attempts 0|optimize $TASK --attempts 0
optimize --attempts x|optimize $TASK --attempts x
optimize --attempts -1|optimize $TASK --attempts -1
optimize --attempts 2.5|optimize $TASK --attempts 2.5
optimize --candidates 0|optimize $TASK --candidates 0
optimize --target-speedup 0|optimize $TASK --target-speedup 0
optimize --target-roof 2|optimize $TASK --target-roof 2
bench --jobs -1|bench c --jobs -1
bench --jobs 0|bench c --jobs 0
bench --attempts 0|bench c --attempts 0
bench --repeat 0|bench c --repeat 0
bench --attempts x|bench c --attempts x
baseline --reps 0|baseline $NATIVE --reps 0
baseline --sets 0|baseline $NATIVE --sets 0
baseline --threads 0|baseline $NATIVE --threads 0
baseline --threads x|baseline $NATIVE --threads x
profile --reps 0|profile $NATIVE $NATIVE/reference.c --reps 0
profile --sets x|profile $NATIVE $NATIVE/reference.c --sets x
verify --sets 0|verify $NATIVE $NATIVE/reference.c --sets 0
llm ping --count 0|llm ping --count 0
llm ping --parallel 0|llm ping --count 2 --parallel 0
llm --budget-calls 0|llm ping --budget-calls 0
knowledge --limit 0|knowledge search cache --limit 0
cache prune --max lots|cache prune --max lots
runs --limit x|runs --limit x
EOF
grep_err "0 is explained" "0 does not mean|out of range|not a whole number|at least 1"

# ---- read-only commands create nothing.
expect_exit 0 "runs on a missing store" -- $PRAGMA runs --db "$W/a/b/pragma.db"
grep -q "no runs" /tmp/e2e.out.$$ && ok "says there are no runs" || bad "runs: no 'no runs'"
[ ! -e "$W/a" ] && ok "no store, no folders made" || bad "runs made $W/a"
expect_exit 0 "runs --json on a missing store" -- $PRAGMA runs --db "$W/a/b/pragma.db" --json
jcheck "an empty list" "j['runs'] == []"
expect_exit 2 "runs show on a missing store" -- $PRAGMA runs show r1 --db "$W/a/b/pragma.db"
[ ! -e "$W/a" ] && ok "still nothing made" || bad "runs show made $W/a"
for args in "bench --list" "bench --list --json" "bench --show s1" "bench --compare s1 s2" "report r1"; do
	# shellcheck disable=SC2086
	expect_exit 2 "$args on a missing store" -- $PRAGMA $args --db "$W/a/b/pragma.db"
	grep_err "$args: says there is no store, with a hint" "there is no run store at $W/a/b/pragma.db"
	grep_err "$args: the hint" "^Hint: .*--db"
	[ ! -e "$W/a" ] && ok "$args made nothing" || { bad "$args made $W/a"; rm -rf "$W/a"; }
done

# ---- llm config with no model: the settings, exit 0.
expect_exit 0 "llm config with no model" -- $PRAGMA llm config
grep -q "no model is configured" /tmp/e2e.out.$$ && grep -q "retries" /tmp/e2e.out.$$ &&
	ok "says none is configured and shows the settings" || bad "llm config output"
expect_exit 0 "llm config --json with no model" -- $PRAGMA llm config --json
jcheck "configured: false" "j['configured'] is False and j['model'] is None and j['retries'] == 5"

# ---- a dead model server: retries shown as they happen, then a clear error.
PRAGMA_LLM=openai:m PRAGMA_LLM_BASE_URL=http://127.0.0.1:9/v1 PRAGMA_LLM_RETRIES=2 PRAGMA_LLM_BACKOFF_MS=10 \
	expect_exit 3 "a dead model server" -- $PRAGMA llm ping
grep_err "each retry is shown" "warning: ping request to m failed \(unreachable\).*retry 1 of 2 in"
grep_err "the last retry too" "retry 2 of 2 in"
grep_err "the error says it is unreachable" "after 3 attempts over .*is unreachable: connection refused"
grep_err "with a hint" "^Hint: is the server running"
PRAGMA_LLM=openai:m PRAGMA_LLM_BASE_URL=http://127.0.0.1:9/v1 PRAGMA_LLM_RETRIES=0 expect_exit 3 "ping --json" -- \
	$PRAGMA llm ping --json
jcheck "the failure kind for callers" "j['fail'] == 'unreachable' and j['kind'] == 'environment_error'"

# ---- a task too large for this machine: the bytes, and which size to lower.
expect_exit 2 "a native task with a size of 1e11" -- $PRAGMA baseline "$NATIVE" --set N=100000000000
grep_err "how many bytes" "prefix_sum needs 7.*TiB for 5 input sets"
grep_err "which --set to lower" "^Hint: lower a size with --set NAME=VALUE \(this task's sizes now: N=100000000000\)"

# ---- -v and -q anywhere, for every command.
expect_exit 0 "-v after the command" -- $PRAGMA tasks show "$NATIVE" -v
expect_exit 0 "-q before" -- $PRAGMA -q runs --db "$W/none.db"
PRAGMA_LLM=exec:cat expect_exit 0 "-v says what the model is asked" -- $PRAGMA llm ask hello -v --no-cache
grep_err "-v logs the request" "info: ask request \(attempt 0\) to exec:cat"

# ---- a forward() that hangs: said while waiting; the deadline is a setting.
mkdir -p "$W/sleepy"
cat >"$W/sleepy/99_sleepy.py" <<'PYEOF'
import time
import torch
import torch.nn as nn

class Model(nn.Module):
    """A forward that sleeps."""
    def forward(self, x):
        time.sleep(1000)
        return torch.relu(x)

def get_inputs():
    return [torch.randn(16)]

def get_init_inputs():
    return []
PYEOF
t0=$(date +%s)
PRAGMA_BRIDGE_TIMEOUT=15 expect_exit 3 "a hung forward() stops at PRAGMA_BRIDGE_TIMEOUT" -- \
	$PRAGMA tasks show "$W/sleepy/99_sleepy.py"
t1=$(date +%s)
[ $((t1 - t0)) -lt 60 ] && ok "within the deadline ($((t1 - t0)) s)" || bad "took $((t1 - t0)) s"
grep_err "a long wait says what it waits for" "waiting for the PyTorch bridge to load 99_sleepy \(.*s\)"
grep_err "the deadline is named" "did not load 99_sleepy within 15 s"
grep_err "the setting is in the hint" "PRAGMA_BRIDGE_TIMEOUT"

# Signals: pragma dies, and takes the bridge's Python (its own process
# group) with it. A background job of a script ignores SIGINT; env gives
# it back its default, so pragma catches it.
for sig in TERM INT HUP; do
	env --default-signal=SIGINT $PRAGMA tasks show "$W/sleepy/99_sleepy.py" >/dev/null 2>"$W/sig.err" &
	pid=$!
	py=""
	for _ in $(seq 300); do
		py=$(pgrep -f "pragma_bridge.py info $W/sleepy/99_sleepy.py" | head -1)
		[ -n "$py" ] && break
		sleep 0.1
	done
	[ -n "$py" ] || { bad "SIG$sig: the bridge never started"; kill -9 $pid; continue; }
	echo "$py" >"$W/py.pid"
	sleep 0.5
	kill -$sig $pid
	wait $pid
	rc=$?
	want=$((128 + $(kill -l $sig)))
	[ $rc = $want ] && ok "SIG$sig: pragma exits $rc" || bad "SIG$sig: exit $rc, wanted $want"
	gone=0
	for _ in $(seq 50); do kill -0 "$py" 2>/dev/null || { gone=1; break; }; sleep 0.1; done
	[ $gone = 1 ] && ok "SIG$sig: the bridge's Python died with it" || bad "SIG$sig: python $py outlived pragma"
done

# ---- a killed run is interrupted, not running forever; resume with the task.
mkdir -p "$W/replies"
$PY "$PRAGMA_TEST_DATA/fixtures/session/make_replies.py" "$W/replies" k4_fast.c
cat >"$W/model.sh" <<EOF
#!/bin/sh
cat >/dev/null
if [ -e "$W/hang" ]; then
	echo \$\$ >"$W/model.pid"
	sleep 300 &
	echo \$! >"$W/sleep.pid"
	wait
fi
cat "$W/replies/\$PRAGMA_AGENT-\$PRAGMA_ATTEMPT.md"
EOF
chmod +x "$W/model.sh"
touch "$W/hang"
$PRAGMA optimize "$TASK" --set N=65536 --llm "exec:$W/model.sh" --mode single --attempts 1 --db "$W/p.db" \
	>"$W/opt.out" 2>"$W/opt.err" &
pid=$!
for _ in $(seq 1200); do [ -s "$W/sleep.pid" ] && break; sleep 0.2; done
if [ -s "$W/sleep.pid" ]; then
	kill -TERM $pid
	wait $pid
	rc=$?
	[ $rc = 143 ] && ok "optimize killed by SIGTERM exits 143" || bad "optimize: exit $rc"
	gone=1
	for _ in $(seq 50); do
		gone=1
		for f in model sleep; do kill -0 "$(cat "$W/$f.pid")" 2>/dev/null && gone=0; done
		[ $gone = 1 ] && break
		sleep 0.1
	done
	[ $gone = 1 ] && ok "the exec model and its child died with pragma" || bad "the exec model outlived pragma"
else
	bad "the model was never asked"; sed 's/^/    /' "$W/opt.err" | tail -5; kill -9 $pid
fi
expect_exit 0 "runs after the kill" -- $PRAGMA runs --db "$W/p.db"
grep -qE "^r[0-9a-f-]+ .* interrupted " /tmp/e2e.out.$$ && ok "the killed run shows as interrupted" ||
	{ bad "runs: not interrupted"; sed 's/^/    /' /tmp/e2e.out.$$; }
grep -q "resume one with: pragma optimize --resume r" /tmp/e2e.out.$$ && ok "with the resume command" ||
	bad "runs: no resume hint"
RUN=$($PRAGMA runs --db "$W/p.db" --json | $PY -c 'import json,sys; print(json.load(sys.stdin)["runs"][0]["id"])')
expect_exit 0 "runs show" -- $PRAGMA runs show "$RUN" --db "$W/p.db"
grep -q "resume it: pragma optimize --resume $RUN" /tmp/e2e.out.$$ && ok "show says how to resume" ||
	bad "runs show: no resume line"
expect_exit 0 "runs show --json" -- $PRAGMA runs show "$RUN" --db "$W/p.db" --json
jcheck "stored as interrupted, with why" "j['status'] == 'interrupted' and 'gone' in j['interrupted_because']['reason']"

expect_exit 2 "resume with another task" -- $PRAGMA optimize "$NATIVE" --resume "$RUN" --db "$W/p.db"
grep_err "says whose run it is" "is of task .*small_relu.py, not "
rm -f "$W/hang"
expect_exit 0 "resume with the task given too: the stored model is used" -- \
	$PRAGMA optimize "$TASK" --resume "$RUN" --db "$W/p.db" --json
jcheck "resumed and done" "j['run'] == '$RUN' and j['status'] == 'done' and len(j['attempts']) == 1"

# A second run: an id prefix that begins both lists them.
expect_exit 0 "a second run" -- $PRAGMA optimize "$TASK" --set N=65536 --llm "exec:$W/model.sh" --mode single \
	--attempts 1 --db "$W/p.db" --json
RUN2=$($PY -c "import json; print(json.load(open('/tmp/e2e.out.$$'))['run'])")
expect_exit 2 "an ambiguous prefix" -- $PRAGMA runs show r --db "$W/p.db"
grep_err "lists the runs it begins" "is ambiguous in .*: it begins 2 ids: .*($RUN.*$RUN2|$RUN2.*$RUN)"

finish
