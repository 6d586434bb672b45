#!/usr/bin/env bash
# A tunable variant rejected for a forbidden system call: the request after
# it says which call, and where in the kernel's source it was made. (The
# table of variants showed the bare category, "forbidden_syscall", and a
# Conductor guessed at the cause: "an mprotect/brk-type call".)
. "$(dirname "$0")/lib.bash"
S=$PRAGMA_TEST_DATA/fixtures/session
TASK=$PRAGMA_TEST_DATA/fixtures/kb/small_relu.py
W=$(mktemp -d /tmp/pragma-tunesys-XXXXXX)
$PY - "$S" "$W/script.json" <<'PYEOF'
import json, os, sys
here, out = sys.argv[1], sys.argv[2]
def src(f):
    return open(os.path.join(here, f)).read()
coder = ["Attempt %d.\n\n```c\n%s```\n" % (i + 1, src(f)) for i, f in enumerate(["k_tuned_syscall.c", "k4_fast.c"])]
conductor = ["**Verdict:** improvement\n\n**Bottleneck:** memory.\n\n**Actions:**\n1. keep it.\n"] * 2
json.dump({"model": "fake-model", "replies": {"coder": coder, "conductor": conductor}}, open(out, "w"))
PYEOF
start_fake_llm "$W/script.json"

expect_exit 0 "optimize: attempt 1 tunes CORES=0,1" -- \
	$PRAGMA optimize "$TASK" --set N=65536 --llm openai:fake-model --mode n-pragma --attempts 2 --db "$W/p.db" --json
jcheck "attempt 1 is ok (its CORES=0 variant)" "j['attempts'][0]['status'] == 'ok'"
RUN=$($PY -c "import json; print(json.load(open('/tmp/e2e.out.$$'))['run'])")
$PY - "$W/p.db" "$RUN" <<'PYEOF' && ok "the stored variant names the call and the kernel's line" || bad "the stored variant lacks them"
import json, sqlite3, sys
c = sqlite3.connect(sys.argv[1])
(tu,) = c.execute("select tunables from attempts where run_id = ? and n = 1 and candidate = 0", (sys.argv[2],)).fetchone()
rows = [r for r in json.loads(tu)["table"] if r["defines"] == {"CORES": "1"}]
assert rows and rows[0]["status"] == "forbidden_syscall", tu
m = rows[0]["message"]
print(m)
assert "openat (syscall 257), through a library function called in pk_forward at" in m and ".c:16" in m, m
PYEOF
$PY - "$FAKE_LOG" <<'PYEOF' && ok "the Conductor's and the Coder's next requests name the call and the line" || bad "the requests lack the call"
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
def text(r):
    return "\n".join(m["content"] for m in r["body"]["messages"])
cond = [text(r) for r in reqs if r["headers"].get("x-pragma-agent") == "conductor"]
coder = [text(r) for r in reqs if r["headers"].get("x-pragma-agent") == "coder"]
for who, t in (("conductor", cond[0]), ("coder 2", coder[1])):
    i = t.find('{"CORES":"1"} → ')
    assert i >= 0, (who, t[t.find("Tunable variants"):][:600])
    line = t[i:t.find("\n", i)]
    assert "forbidden_syscall: the kernel called openat (syscall 257)" in line and "in pk_forward at" in line, (who, line)
PYEOF
kill $FAKE_PID 2>/dev/null
rm -rf "$W"
finish
