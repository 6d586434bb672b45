#!/usr/bin/env bash
# --candidates K: the Coder writes K versions per round; each is verified
# and timed, the fastest correct one goes forward (timed again alone when
# there were several: its numbers must not come from the rounds that chose
# it), the Conductor sees the whole round, and every version is in the store.
. "$(dirname "$0")/lib.bash"
S=$PRAGMA_TEST_DATA/fixtures/session
TASK=$PRAGMA_TEST_DATA/fixtures/kb/small_relu.py
W=$(mktemp -d /tmp/pragma-cand-XXXXXX)
$PY - "$S" "$W/script.json" <<'PYEOF'
import json, os, sys
here, out = sys.argv[1], sys.argv[2]
def src(f):
    return open(os.path.join(here, f)).read()
def round_(items):
    # Version 2 as a bold Markdown label, as models write it.
    return "".join(("**Version %d:** %s\n\n" if i == 1 else "Version %d: %s\n\n") % (i + 1, idea) +
                   "```c\n%s```\n\n" % src(f) for i, (idea, f) in enumerate(items))
coder = [round_([("a transposed walk (wrong)", "k2_wrong.c"), ("the plain loop, 60*1 times over", "k3_slow.c"),
                 ("an OpenMP loop", "k4_fast.c")]),
         round_([("the slow loop again", "k3_slow.c"), ("broken C", "k1_compile_error.c"), ("a wrong one", "k2_wrong.c")]),
         round_([("lazy after its verification", "k6_lazy.c"), ("the slow loop", "k3_slow.c")])]
conductor = ["**Verdict:** improvement\n\n**Bottleneck:** memory.\n\n**Actions:**\n1. keep the OpenMP loop.\n"] * 3
json.dump({"model": "fake-model", "replies": {"coder": coder, "conductor": conductor}}, open(out, "w"))
PYEOF
start_fake_llm "$W/script.json"

expect_exit 0 "optimize --candidates 3" -- \
	$PRAGMA optimize "$TASK" --set N=65536 --llm openai:fake-model --mode n-pragma --attempts 3 --candidates 3 \
	--db "$W/p.db" --json
jcheck "three attempts, all ok (a correct version in each round)" "[a['status'] for a in j['attempts']] == ['ok', 'ok', 'ok']"
jcheck "the best is attempt 1 (its fastest version)" "j['best']['attempt'] == 1"
BEST=$($PY -c "import json; print(json.load(open('/tmp/e2e.out.$$'))['best']['path'])")
if grep -q "omp parallel for" "$BEST"; then ok "best.c is the OpenMP version"; else bad "best.c is not the fast version"; fi
RUN=$($PY -c "import json; print(json.load(open('/tmp/e2e.out.$$'))['run'])")

$PY - "$W/p.db" "$RUN" <<'PYEOF' && ok "every version stored; the round's table on the attempt" || bad "versions not stored as expected"
import json, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
rows = {(n, k): (st, msg, rnd) for n, k, st, msg, rnd in
        c.execute("select n, candidate, status, message, round from attempts where run_id = ?", (sys.argv[2],))}
speed = {n: sp for n, sp in c.execute("select n, speedup from attempts where run_id = ? and candidate = 0", (sys.argv[2],))}
assert [rows[(1, k)][0] for k in (1, 2, 3)] == ["wrong_output", "ok", "ok"], rows
assert [rows[(2, k)][0] for k in (1, 2, 3)] == ["ok", "compile_error", "wrong_output"], rows
# A version right for the verification's 15 calls and lazy after them: the
# first timing session's processes make more calls than that, so it fails
# while timed, and the other version is the attempt. (Sessions of 2 rounds
# make 3 + 10 calls: without the longer first warm-up it passed as ok.)
assert [rows[(3, k)][0] for k in (1, 2)] == ["timed_mismatch", "ok"], rows
assert "timed call" in rows[(3, 1)][1] and "later calls" in rows[(3, 1)][1], rows[(3, 1)]
assert "version 2 of 2" in rows[(3, 0)][1], rows[(3, 0)]
assert "version 3 of 3" in rows[(1, 0)][1], rows[(1, 0)]
rnd = json.loads(rows[(1, 0)][2])
assert [v["chosen"] for v in rnd] == [False, False, True], rnd
assert rnd[2]["idea"].startswith("Version 3: an OpenMP loop"), rnd
assert rnd[1]["idea"] == "Version 2: the plain loop, 60*1 times over", rnd[1]["idea"]
assert rnd[2]["speedup"] > rnd[1]["speedup"], rnd
# Two correct versions: the chosen one is timed again alone, and the
# attempt's number is that session's, not the one that chose it.
again = rnd[2]["timed_again"]
assert again["lo"] <= again["speedup"] <= again["hi"], again
assert abs(speed[1] - again["speedup"]) < 1e-9, (speed[1], again)
assert "timed again alone" in rows[(1, 0)][1], rows[(1, 0)][1]
assert all("timed_again" not in v for v in rnd[:2]), rnd
# One correct version: nothing to choose, nothing timed again.
rnd2 = json.loads(rows[(2, 0)][2])
assert all("timed_again" not in v for v in rnd2), rnd2
assert abs(speed[2] - rnd2[0]["speedup"]) < 1e-9, (speed[2], rnd2[0])
PYEOF

$PY - "$FAKE_LOG" <<'PYEOF' && ok "the Coder is asked for 3 versions; the Conductor sees the whole round" || bad "prompts lack the round"
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
def text(r):
    return "\n".join(m["content"] for m in r["body"]["messages"])
coder = [text(r) for r in reqs if r["headers"].get("x-pragma-agent") == "coder"]
cond = [text(r) for r in reqs if r["headers"].get("x-pragma-agent") == "conductor"]
assert all("Write 3 versions" in t for t in coder), "no K-versions request"
assert "different approaches" in coder[0], "the first round should ask for different algorithms"
t = cond[0]
assert "This round's 3 versions" in t, "no round table"
assert "version 1 (Version 1: a transposed walk (wrong)): wrong_output" in t, t[t.find("This round"):][:600]
assert "← chosen; timed again alone" in t, t[t.find("This round"):][:900]
PYEOF
kill $FAKE_PID 2>/dev/null
rm -rf "$W"
finish
