#!/usr/bin/env bash
# pragma bench --executor slurm on a real Slurm: the one-node development
# cluster of scripts/slurm-dev.sh (started here when it is not running,
# stopped again if this test started it), against the fake LLM server.
#
#  - a 4-task suite as one job array: every job runs, the shards merge, and
#    Table I equals a local run's on the same scripted replies (speedups
#    aside; every attempt of a task gets the same reply and token count, so
#    where an interruption lands cannot change the outcome — issue 14);
#  - one job cancelled (scancel) mid-run: reported with its Slurm state and
#    log; --resume resubmits that element alone, which resumes its run from
#    its shard; the other runs are not touched;
#  - merging again changes nothing; the model key reaches the jobs but is
#    never written into the run directory (job script included);
#  - a job that exits non-zero: its Slurm state, exit code and log path;
#  - sbatch missing, the controller down: exit 3 with a hint; a CUDA suite
#    asks for a GPU (--gres) and a cluster without one says so (exit 2).
. "$(dirname "$0")/lib.bash"
F=$PRAGMA_TEST_DATA/fixtures/bench_slurm
DEV=${PRAGMA_HOME:-$PRAGMA_TEST_DATA/..}/scripts/slurm-dev.sh

skip() {
	echo "SKIP: $*"
	exit 77
}
[ "$(id -u)" -eq 0 ] || skip "the development Slurm cluster needs root (slurmd starts jobs as their owner)"
for p in sbatch squeue scancel slurmctld slurmd munged; do
	command -v "$p" >/dev/null 2>&1 || [ -x "/usr/sbin/$p" ] ||
		skip "$p is not installed (scripts/install-deps.sh installs Debian's slurm-wlm and munge)"
done
W=$(mktemp -d /tmp/pragma-bench-slurm-XXXXXX)
CACHE0=$PRAGMA_CACHE_DIR
STARTED=0
if ! "$DEV" status >/dev/null 2>&1; then
	"$DEV" start >"$W/slurm-dev.log" 2>&1 || skip "cannot start a Slurm cluster here: $(tail -3 "$W/slurm-dev.log" | tr '\n' ' ')"
	STARTED=1
fi
eval "$("$DEV" env)"
FAKE_PIDS=()
cleanup() {
	# This test's jobs, wherever it stopped: its suite runs' arrays by name.
	for db in "$W"/*.db; do
		for s in $($PY -c "import sqlite3; [print(r[0]) for r in sqlite3.connect('$db').execute('select id from suites')]" 2>/dev/null); do
			scancel --name="pragma-$s" 2>/dev/null
		done
	done
	for p in "${FAKE_PIDS[@]}"; do kill "$p" 2>/dev/null; done
	[ "$STARTED" = 1 ] && "$DEV" stop >/dev/null 2>&1
	if [ "$fails" = 0 ]; then rm -rf "$W"; else echo "kept for a look: $W"; fi
	rm -rf "$CACHE0" "$XDG_CONFIG_HOME"
}
trap cleanup EXIT

# fake SCRIPT NAME: a fake LLM server; its URL in URL_<NAME>, its log in $W/NAME.jsonl
fake() {
	$PY "$PRAGMA_TEST_DATA/fake_llm/fake_llm.py" --script "$1" --log "$W/$2.jsonl" --port-file "$W/$2.port" \
		--max-seconds 1500 >/dev/null 2>"$W/$2.err" &
	FAKE_PIDS+=($!)
	for _ in $(seq 100); do [ -s "$W/$2.port" ] && break; sleep 0.1; done
	eval "URL_$2=http://127.0.0.1:$(cat "$W/$2.port")/v1"
}
KEY="sk-pragma-e2e-$RANDOM$RANDOM"
export PRAGMA_LLM_API_KEY=$KEY PRAGMA_LLM_BACKOFF_MS=10 PRAGMA_SLURM_POLL_MS=1000
$PY "$F/make_script.py" "$W/local.json"
$PY "$F/make_script.py" "$W/slurm.json" --delay-first sl_relu 45 --delay-first sl_double 150 --require-key "$KEY"
fake "$W/local.json" local
fake "$W/slurm.json" slurm
COMMON=(--llm openai:fake-model --mode n-pragma --attempts 1)
sq() { squeue -h -r -t all --name="pragma-$1" -O 'JobArrayID:|,State:|,exit_code:|,NodeList:|,Reason:'; }

# Each run with a cache of its own, as the nodes of a cluster would have: no
# model reply of the local run answers a job from pragma's LLM cache.
export PRAGMA_CACHE_DIR=$W/cache-slurm

# 1. The local run: what Table I must read.
PRAGMA_CACHE_DIR=$W/cache-local PRAGMA_LLM_BASE_URL=$URL_local expect_exit 0 "local run of the 4-task suite" -- \
	$PRAGMA bench "$F/suite" "${COMMON[@]}" --jobs 2 --db "$W/local.db" --json
cp /tmp/e2e.out.$$ "$W/local.out.json"

# 2. The same suite as one Slurm job array. sl_double's job hits its time
# limit mid-run (lowered to a minute while it waits for the model): bench
# resubmits it, and it resumes its run from its shard. sl_relu's job is
# cancelled mid-run.
# (The jobs get the model's URL and key from the environment of the bench
# that submits them: the resume below needs them too.)
export PRAGMA_LLM_BASE_URL=$URL_slurm
$PRAGMA bench "$F/suite" "${COMMON[@]}" --executor slurm --max-jobs 2 \
	--db "$W/slurm.db" --shared-dir "$W/shared" --json >"$W/slurm1.json" 2>"$W/slurm1.err" &
BENCH=$!
SUITE=
RUN_DIR=
# has_run TASK: its shard holds its run (it is past its baseline, waiting for the model)
has_run() {
	[ -s "$RUN_DIR/shards/$1-t1.db" ] &&
		$PY -c "import sqlite3,sys; c=sqlite3.connect('file:$RUN_DIR/shards/$1-t1.db?mode=ro', uri=True); sys.exit(0 if c.execute('select count(*) from runs').fetchone()[0] else 1)" 2>/dev/null
}
for _ in $(seq 1800); do
	sleep 0.5
	SUITE=$($PY -c "import sqlite3; print(sqlite3.connect('$W/slurm.db').execute('select id from suites').fetchone()[0])" 2>/dev/null)
	[ -n "$SUITE" ] && RUN_DIR=$W/shared/suites/$SUITE && has_run sl_double && break
	kill -0 $BENCH 2>/dev/null || break
done
TJOB=$(sq "$SUITE" | awk -F'|' '$1 ~ "_0$" && $2 == "RUNNING" {print $1}' | tail -1)
[ -n "$TJOB" ] && scontrol update JobId="$TJOB" TimeLimit=1 >/dev/null && ok "sl_double ($TJOB) given a time limit of one minute" ||
	bad "cannot lower $TJOB's time limit"
for _ in $(seq 1800); do
	sleep 0.5
	SUITE=$($PY -c "import sqlite3; print(sqlite3.connect('$W/slurm.db').execute('select id from suites').fetchone()[0])" 2>/dev/null)
	[ -n "$SUITE" ] && RUN_DIR=$W/shared/suites/$SUITE
	# Its run is in its shard: it is past its baseline, waiting for the model.
	[ -n "$SUITE" ] && [ -s "$RUN_DIR/shards/sl_relu-t1.db" ] &&
		$PY -c "import sqlite3,sys; c=sqlite3.connect('file:$RUN_DIR/shards/sl_relu-t1.db?mode=ro', uri=True); sys.exit(0 if c.execute('select count(*) from runs').fetchone()[0] else 1)" 2>/dev/null &&
		break
	kill -0 $BENCH 2>/dev/null || break
done
IDX=$($PY -c "import json; print([e['index'] for e in json.load(open('$RUN_DIR/suite.json'))['elements'] if e['task']['name'] == 'sl_relu'][0])" 2>/dev/null)
JOB=$(sq "$SUITE" | awk -F'|' -v i="$IDX" '$1 ~ "_"i"$" && $2 == "RUNNING" {print $1}' | tail -1)
if [ -n "$JOB" ]; then ok "sl_relu runs as array element $JOB"; else bad "sl_relu's job not found running"; sq "$SUITE"; fi
scancel "$JOB"
wait $BENCH
rc=$?
[ "$rc" = 1 ] && ok "bench with a cancelled job exits 1" || { bad "bench with a cancelled job: exit $rc"; tail -20 "$W/slurm1.err"; }
if grep -qE "pending \(job [0-9]+_[0-9]\)" "$W/slurm1.err" && grep -qE "running on localhost \(job [0-9]+_[0-9]\)" "$W/slurm1.err"; then
	ok "progress shows jobs pending, then running on their node"
else bad "no pending/running progress"; head -20 "$W/slurm1.err"; fi
if grep -qE "sl_double \(trajectory 1\): pending again \(job [0-9]+_0\): resubmitted after Slurm state TIMEOUT" "$W/slurm1.err" &&
	grep -qE "sl_double \(trajectory 1\): running, resuming run r" "$W/slurm1.err" &&
	grep -qE "sl_double \(trajectory 1\): [0-9.]+x \(best: attempt 1\)" "$W/slurm1.err" &&
	grep -q "DUE TO TIME LIMIT" "$RUN_DIR/logs/$TJOB.log"; then
	ok "the timed-out job was resubmitted and resumed its run from its shard"
else bad "the timed-out job"; grep sl_double "$W/slurm1.err"; fi
if grep -qF "sl_relu (trajectory 1): FAILED: Slurm state CANCELLED" "$W/slurm1.err" &&
	grep -qF "log: $RUN_DIR/logs/$JOB.log" "$W/slurm1.err" && [ -s "$RUN_DIR/logs/$JOB.log" ]; then
	ok "the cancelled job is reported with its Slurm state and its log"
else bad "the cancelled job's report"; grep sl_relu "$W/slurm1.err"; fi
grep -q "resume" "$W/slurm1.err" && ok "says how to run it again" || bad "no resume hint"
$PY - "$W/slurm.db" >"$W/before-resume" <<'PYEOF' || bad "the other three runs are not done"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
rows = c.execute("select id, task_name, status, updated from runs where task_name != 'sl_relu' order by id").fetchall()
assert len(rows) == 3 and all(r[2] == "done" for r in rows), rows
for r in rows:
    print(*r)
PYEOF
arrays_before=$(sq "$SUITE" | cut -d_ -f1 | sort -u | tr '\n' ' ')
t_resume=$($PY -c 'import time; print(time.time())')

# 3. --resume: only the cancelled element goes back to Slurm, and it resumes
# the run its shard holds. From a shell without the model's URL it refuses:
# the jobs would call the wrong endpoint.
expect_exit 3 "--resume without PRAGMA_LLM_BASE_URL, which the jobs were submitted with" -- \
	env -u PRAGMA_LLM_BASE_URL $PRAGMA bench --resume "$SUITE" --db "$W/slurm.db"
grep_err "says the model's URL is missing now" "submitted with PRAGMA_LLM_BASE_URL set, and it is not set now"
grep_err "with a hint" "^Hint: export PRAGMA_LLM_BASE_URL"
expect_exit 0 "bench --resume after the cancelled job" -- $PRAGMA bench --resume "$SUITE" --db "$W/slurm.db" --json
cp /tmp/e2e.out.$$ "$W/slurm.out.json"
cp /tmp/e2e.err.$$ "$W/resume.err"
grep -q "1 to run, 3 done before" "$W/resume.err" && ok "resume: 1 to run, 3 done before" || { bad "resume plan"; head "$W/resume.err"; }
grep -q "resuming run r" "$W/resume.err" && grep -q "resuming its run" "$RUN_DIR"/logs/*_"$IDX".log &&
	ok "the element resumed its run from its shard" || bad "the element did not resume its run"
new_arrays=$(sq "$SUITE" | cut -d_ -f1 | sort -u | grep -vxF -f <(echo "$arrays_before" | tr ' ' '\n' | grep .))
n_new=$(echo "$new_arrays" | grep -c .)
if [ "$n_new" = 1 ] && [ "$(sq "$SUITE" | grep -c "^${new_arrays}_")" = 1 ] &&
	sq "$SUITE" | grep -q "^${new_arrays}_${IDX}|COMPLETED"; then
	ok "one array of one element submitted (${new_arrays}_$IDX), completed"
else bad "resubmission: new arrays '$new_arrays'"; sq "$SUITE"; fi
$PY - "$W/slurm.db" "$W/before-resume" <<'PYEOF' && ok "the other runs were not touched" || bad "resume touched finished runs"
import sqlite3, sys
c = sqlite3.connect(sys.argv[1])
rows = c.execute("select id, task_name, status, updated from runs where task_name != 'sl_relu' order by id").fetchall()
assert [" ".join(map(str, r)) for r in rows] == [l.strip() for l in open(sys.argv[2])], rows
PYEOF
$PY - "$W/slurm.jsonl" "$t_resume" <<'PYEOF' && ok "after the resume the model was asked about sl_relu only" || bad "resume redid other tasks"
import json, sys
# By arrival: a request of a killed job is logged when its delayed reply is done.
new = [r for r in map(json.loads, open(sys.argv[1])) if r["time"] > float(sys.argv[2])]
assert new, "no request after the resume"
for r in new:
    assert "sl_relu" in json.dumps(r["body"]), r["body"]
PYEOF
$PY - "$W/slurm.jsonl" <<'PYEOF' && ok "the model key reached the jobs (the server requires it)" || bad "requests without the key"
import json, sys
rs = [json.loads(l) for l in open(sys.argv[1])]
assert rs and all(r["status"] == 200 for r in rs), [r["status"] for r in rs]
for t in ("sl_relu", "sl_neg", "sl_double", "sl_square"):
    assert any(r["agent"] == "coder" and t in json.dumps(r["body"]) for r in rs), t
PYEOF

# 4. Table I: the same as the local run's, speedups aside.
$PY - "$W/local.out.json" "$W/slurm.out.json" <<'PYEOF' && ok "Table I equals the local run's (Success, fast_0, tokens, cost; per task verdicts)" || bad "Table I differs from the local run's"
import json, sys
a, b = (json.load(open(p)) for p in sys.argv[1:3])
ta = {t["task"]: (t["correct"], t["failed"], t["tokens"], t["status"]) for t in a["tasks"]}
tb = {t["task"]: (t["correct"], t["failed"], t["tokens"], t["status"]) for t in b["tasks"]}
assert ta == tb, (ta, tb)
assert sum(1 for v in ta.values() if v[0]) == 2, ta
def rows(m):
    out = {}
    for g, grp in m.items():
        for scope, x in [("all", grp["all"])] + list(grp.get("categories", {}).items()):
            out[(g, scope)] = (x["tasks"], x["success"], x["fast"]["0"], x["tokens_per_task"], x["cost_per_task"])
    return out
ra, rb = rows(a["metrics"]), rows(b["metrics"])
assert ra == rb, (ra, rb)
assert ra[("native", "all")][:2] == (4, 0.5), ra
PYEOF
jcheck "the Slurm suite run is done, with its executor recorded" "j['status'] == 'done' and j['config']['executor']['name'] == 'slurm'"

# 5. Merging again changes nothing; no key on disk.
dump() { $PY -c "import sqlite3; c=sqlite3.connect('$W/slurm.db'); [print(r) for t in ('runs', 'attempts', 'llm_calls') for r in c.execute('select * from %s order by 1, 2' % t)]"; }
dump >"$W/dump1"
expect_exit 0 "bench --resume of a finished suite" -- $PRAGMA bench --resume "$SUITE" --db "$W/slurm.db"
grep -q "0 to run, 4 done before" /tmp/e2e.err.$$ && ok "nothing left to run" || bad "a finished suite ran again"
dump >"$W/dump2"
cmp -s "$W/dump1" "$W/dump2" && [ -s "$W/dump1" ] && ok "merging the shards again changed nothing" || bad "a second merge changed the store"
if ! grep -rqF "$KEY" "$RUN_DIR" && grep -q "^#SBATCH --export=.*PRAGMA_LLM_API_KEY" "$RUN_DIR/job.sh"; then
	ok "the job script exports the key by name; no file of the run holds its value"
else bad "the key's value is on disk, or not exported"; fi
if $PY -c "import sqlite3,glob,sys; sys.exit(0 if all(sqlite3.connect(p).execute('pragma journal_mode').fetchone()[0] == 'delete' for p in glob.glob('$RUN_DIR/shards/*.db')) else 1)" &&
	[ "$(ls "$RUN_DIR"/shards/*.db | wc -l)" = 4 ] && ! ls "$RUN_DIR"/shards/*-wal >/dev/null 2>&1; then
	ok "4 shards, rollback journal, no WAL"
else bad "shards: WAL or missing"; ls -la "$RUN_DIR/shards"; fi

# 6. A job that exits non-zero (its task's reference does not compile).
expect_exit 1 "a suite whose job fails" -- $PRAGMA bench "$F/broken" "${COMMON[@]}" --executor slurm --db "$W/broken.db" \
	--shared-dir "$W/shared"
LOG=$(grep -oE "log: [^ ]+\.log" /tmp/e2e.err.$$ | head -1 | cut -c6-)
if grep -qE "sl_broken \(trajectory 1\): FAILED: Slurm state FAILED, exit [1-9][0-9]* on localhost; log: /" /tmp/e2e.err.$$ &&
	[ -s "$LOG" ] && grep -q "pragma:" "$LOG"; then
	ok "the failed job: Slurm state FAILED, its exit code and its log ($LOG)"
else bad "the failed job's report"; err | tail -5; fi

# 7. Ctrl-C: the array is cancelled, and bench says how to resume.
$PY "$F/make_script.py" "$W/slow.json" --delay-first sl_double 120
fake "$W/slow.json" slow
PRAGMA_LLM_BASE_URL=$URL_slow $PRAGMA bench "$F/suite/sl_double" "${COMMON[@]}" --executor slurm --db "$W/int.db" \
	--shared-dir "$W/shared" >"$W/int.out" 2>"$W/int.err" &
BENCH=$!
for _ in $(seq 600); do
	sleep 0.5
	grep -q "sl_double (trajectory 1): running on" "$W/int.err" && break
	kill -0 $BENCH 2>/dev/null || break
done
ISUITE=$($PY -c "import sqlite3; print(sqlite3.connect('$W/int.db').execute('select id from suites').fetchone()[0])" 2>/dev/null)
kill -INT $BENCH
wait $BENCH
rc=$?
[ "$rc" = 130 ] && ok "Ctrl-C: bench exits 130" || bad "Ctrl-C: exit $rc"
grep -q "resume with: pragma bench --resume $ISUITE" "$W/int.err" && ok "Ctrl-C: says how to resume" || bad "Ctrl-C: no resume hint"
for _ in $(seq 40); do sq "$ISUITE" | grep -q "|CANCELLED|" && break; sleep 0.5; done
if sq "$ISUITE" | grep -q "|CANCELLED|" && ! sq "$ISUITE" | grep -qE "\|(PENDING|RUNNING)\|"; then
	ok "Ctrl-C: the job array was cancelled (scancel)"
else bad "Ctrl-C left jobs behind"; sq "$ISUITE"; fi

# 8. Slurm not there, or not answering: exit 3 with a hint, nothing created.
expect_exit 3 "sbatch not on PATH" -- env PATH=/nonexistent $PRAGMA bench "$F/suite" "${COMMON[@]}" --executor slurm --db "$W/none.db"
grep_err "says sbatch is missing, with a hint" "sbatch is not on PATH.*|Hint: .*--executor local"
grep -q "Hint:" /tmp/e2e.err.$$ || bad "no Hint: line"
sed "s/^SlurmctldPort=.*/SlurmctldPort=1/" "$SLURM_CONF" >"$W/down.conf"
SLURM_CONF=$W/down.conf expect_exit 3 "the controller down" -- timeout 120 $PRAGMA bench "$F/suite" "${COMMON[@]}" --executor slurm --db "$W/none.db"
grep_err "says the controller does not answer" "controller does not answer"
grep_err "with a hint" "^Hint: .*scontrol ping"
# Nothing left behind: no store at all, or (had a store been made before
# Slurm was asked) one with no suite run in it. bench --list refuses a
# missing store (exit 2) rather than make one.
if [ ! -e "$W/none.db" ]; then
	ok "no suite run was left behind: no store was made"
	expect_exit 2 "bench --list refuses the missing store" -- $PRAGMA bench --list --db "$W/none.db" --json
	[ ! -e "$W/none.db" ] && ok "and makes none" || bad "bench --list made a store"
else
	expect_exit 0 "no suite run was left behind" -- $PRAGMA bench --list --db "$W/none.db" --json
	jcheck "the store is empty" "j == []"
fi

# 9. CUDA tasks ask for a GPU; this cluster has none: a usage error with a hint.
expect_exit 2 "a CUDA suite on a cluster without GPUs" -- $PRAGMA bench "$F/suite" "${COMMON[@]}" --backend cuda --executor slurm \
	--db "$W/cuda.db" --shared-dir "$W/shared"
grep_err "sbatch's refusal, with a hint about GRES" "generic resource|gres"
grep -q "^#SBATCH --gres=gpu:1" "$W"/shared/suites/s*/job.sh && ok "the CUDA job script asks for --gres=gpu:1" ||
	bad "no --gres=gpu:1 in the CUDA job script"
expect_exit 2 "--partition without --executor slurm" -- $PRAGMA bench "$F/suite" --partition debug --db "$W/none.db"
expect_exit 2 "an unknown executor" -- $PRAGMA bench "$F/suite" --executor pbs --db "$W/none.db"

finish
