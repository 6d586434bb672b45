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
# The best comes first, named and with its numbers, before the current
# kernel's code (a player missed it after the code): attempt 4 replaced
# attempt 3; attempt 5 is measured against attempt 4.
assert "## 1. The best before this attempt (the historical best): attempt 3 — " in t4, "no best at attempt 4"
assert "over the baseline in this attempt's rounds\nUntil attempt 4, the kernel pragma kept as the best" in t4
assert t4.index("60 times over") < t4.index("## 2. Current kernel (attempt 4)"), "best code missing at attempt 4"
assert "## 1. The best so far (the historical best): attempt 4 — " in t5, "no best at attempt 5"
assert t5.index("omp parallel for") < t5.index("## 2. Current kernel (attempt 5)"), "best code missing at attempt 5"
assert "## 7. Profile of the best (attempt 4)" in t5, "no profile of the best"
assert "metric by metric" in t5, "no comparison"
# The history's last line agrees with the decision (attempt 4 became the
# best in this very request).
assert "Decision: attempt 4 is the new best" in t4 and "The best now: attempt 4." in t4, "best now contradicts"
# Attempt 3 (the first correct kernel, 60 times slower) becomes the best,
# and the request says plainly that it is slower than the baseline.
assert "Decision: attempt 3 is the new best, though still slower than the baseline" in text(cond[2]), "no 'slower'"
t1 = text(cond[0])
assert "compile_error" in t1 and "Likely causes" in t1, "no error causes"
coder = [r for r in reqs if r["headers"].get("x-pragma-agent") == "coder"]
assert "scripted action 1" in text(coder[1]), "the Coder did not get the Conductor's actions"
PYEOF

# The code shown is numbered as the file the compiler saw: the listing of
# each Conductor request is that attempt's kernel.c line for line, and every
# kernel.c:N the profile cites is a line of it (a remark quoting its line
# quotes the listing's line N).
$PY - "$FAKE_LOG" "$W/runs/$RUN" <<'PYEOF' && ok "code listings are the compiled files, numbered as the remarks cite them" || bad "code listings and the compiled files disagree"
import json, re, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
cond = [r for r in reqs if r["headers"].get("x-pragma-agent") == "conductor"]
def user(r):
    return r["body"]["messages"][1]["content"]
def listing(t, heading):
    sec = t[t.index(heading):]
    body = sec[sec.index("\n```\n") + 5:]
    body = body[:body.index("```\n")]
    lines = body.split("\n")[:-1]
    out = []
    for i, l in enumerate(lines, 1):
        m = re.match(r"^ *(\d+) \| ?(.*)$", l)
        assert m and int(m.group(1)) == i, "line %d of the listing: %r" % (i, l)
        out.append(m.group(2))
    return out
cited, split = 0, None
# every request's numbered sections read 1, 2, 3, ... (the first, with no
# best, began at "## 2.")
for r in cond:
    nums = [int(x) for x in re.findall(r"^## (\d+)\. ", user(r), re.M)]
    assert nums == list(range(1, len(nums) + 1)), nums
    assert not re.search(r"section \d", user(r)), "a section named by its number"
for k in (3, 4, 5):
    t = user(cond[k - 1])
    shown = listing(t, ". Current kernel (attempt %d)" % k)
    src = open("%s/attempt-%02d/kernel.c" % (sys.argv[2], k)).read().split("\n")
    if src and src[-1] == "":
        src.pop()
    assert shown == src, "attempt %d: the listing is not its kernel.c" % k
    assert "are not part of the file" in t, "no word on the numbers"
    prof = t[t.index(". Profile of the current kernel"):]
    prof = prof[:prof.find("\n## ", 4)]
    for n, quote in re.findall(r"kernel\.c:(\d+)(?: loop (?:not )?vectorized[^|\n]*\| ([^\n]*))?", prof):
        assert 1 <= int(n) <= len(src), "attempt %d cites kernel.c:%s of %d lines" % (k, n, len(src))
        if quote.strip():
            # the whole statement at line N (its lines joined, without
            # their // comments, from the statement's first line: gcc cites
            # a split loop at its condition), ended or cut with " …"
            q = " ".join(quote.split())
            q = q[:-2] if q.endswith(" …") else q
            assert any(" ".join(" ".join(l.split("//")[0].split()) for l in src[f - 1:f + 3]).startswith(q)
                       for f in range(max(1, int(n) - 3), int(n) + 1)), (quote, src[int(n) - 4:int(n) + 3])
            assert q[-1] in ";{}" or quote.endswith(" …") or q.startswith("#"), "attempt %d: a statement cut short: %r" % (k, quote)
            assert " ".join(src[int(n) - 1].split("//")[0].split()) in q, (quote, src[int(n) - 1])
            if k == 5 and n in ("13", "14"):
                split = quote
        cited += 1
assert cited, "no kernel.c:N cited in any profile"
# attempt 5's inner loop has its header and body split over lines: the
# remark at its line (gcc cites the condition's, 14) quotes them whole (it
# quoted "i < n; i++)")
if split is not None:
    assert " ".join(split.split()) == "for (int64_t i = 0; i < n; i++) y[i] = x[i] > 0 ? x[i] : 0.0f;", split
else:
    print("note: no remark at attempt 5's split loop (no compiler remarks here)")
print("split loop's remark: %r" % split)
# the best's listing is its own attempt's kernel.c
best4 = open("%s/attempt-04/kernel.c" % sys.argv[2]).read().split("\n")
assert listing(user(cond[4]), "## 1. The best so far") == best4[:-1 if best4[-1] == "" else None], "the best's listing"
# attempt 1 did not compile: the compiler's own excerpts ("  3 | code")
# are the listing's lines
t = user(cond[0])
shown = listing(t, "## 1. Current kernel (attempt 1)")
log = t[t.index("Compiler output"):]
quoted = re.findall(r"^ *(\d+) \| (.*)$", log, re.M)
assert quoted, "the compiler quotes no line"
for n, code in quoted:
    assert " ".join(shown[int(n) - 1].split()) == " ".join(code.split()), (n, code, shown[int(n) - 1])
coder = [r for r in reqs if r["headers"].get("x-pragma-agent") == "coder"]
assert "without the line numbers" in user(coder[1]), "the Coder is not told to leave the numbers out"
PYEOF

expect_exit 0 "runs show" -- $PRAGMA runs show "$RUN" --db "$W/p.db" --json
jcheck "store holds 5 attempts, best flagged, calls recorded" \
	"len(j['attempts']) == 5 and [a['n'] for a in j['attempts'] if a['is_best']] == [4] and j['llm_calls']['count'] == 10"

# n-pragma: the same session, no profile in any Conductor request.
kill $FAKE_PID 2>/dev/null
start_fake_llm "$W/script.json"
# (as text: the summary a user reads)
expect_exit 0 "optimize, n-pragma mode" -- \
	$PRAGMA optimize "$TASK" --set N=65536 --llm openai:fake-model --mode n-pragma --attempts 5 --db "$W/p.db" --no-cache
out >"$W/n.txt"
RUN2=$(sed -n 's/^run: *\([^ ]*\) .*/\1/p' "$W/n.txt")
$PY - "$W/n.txt" <<'PYEOF' && ok "text summary: one time per attempt, 95% intervals, the measurement's decisions" || { bad "text summary"; sed 's/^/    /' "$W/n.txt" | head -60; }
import re, sys
t = open(sys.argv[1]).read()
assert "middle half" not in t and "IQR" not in t and "interquartile" not in t, "old interval wording"
m = re.search(r"^best: +attempt 4: ([0-9.]+) ms, ([0-9.]+)x \[([0-9.]+)–([0-9.]+)\] in its attempt's session$", t, re.M)
assert m, "best line"
assert re.search(r"^final: +[0-9.]+ ms against the baseline's [0-9.]+ ms in the same rounds: [0-9.]+x \[[0-9.]+–[0-9.]+, 95% interval\]$", t, re.M), "final line"
assert re.search(r"rounds undisturbed", t), "the final comparison's conditions"
a4 = re.search(r"^-- attempt 4: ok, ([0-9.]+) ms, ([0-9.]+)x \[[0-9.]+–[0-9.]+, 95% interval\]; vs best: .*; decision: new best$", t, re.M)
assert a4, "attempt 4's line"
assert a4.group(1) == m.group(1), "attempt 4 shows two times: %s and %s" % (a4.group(1), m.group(1))
assert a4.group(2) == m.group(2), "attempt 4 shows two speedups"
assert re.search(r"^-- attempt 1: compile_error; decision: compile_error$", t, re.M), "a failure's decision"
assert re.search(r"^-- attempt 3: ok, [0-9.]+ ms, [0-9.]+x \[.*\]; decision: new best$", t, re.M), "the first correct kernel"
assert re.search(r"^-- attempt 5: ok, .*; decision: best kept$", t, re.M), "the slower attempt 5 keeps the best"
assert t.count("the Conductor's verdict: ") == 5, "the Conductor's own word, beside the decision"
PYEOF
expect_exit 0 "runs show, n-pragma" -- $PRAGMA runs show "$RUN2" --db "$W/p.db" --json
jcheck "n-pragma best is attempt 4" "j['best_attempt'] == 4 and j['mode'] == 'n-pragma'"
$PY - "$FAKE_LOG" <<'PYEOF' && ok "n-pragma conductor sees no profile" || bad "n-pragma conductor saw a profile"
import json, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
cond = [r for r in reqs if r["headers"].get("x-pragma-agent") == "conductor"]
assert len(cond) == 5
for r in cond:
    t = "\n".join(m["content"] for m in r["body"]["messages"][1:])
    assert "Profile of the current kernel" not in t and "Diagnosis" not in t and "What these metrics mean" not in t
# Nothing in any request of the run speaks of a profile it never shows.
for r in reqs:
    t = "\n".join(m["content"] for m in r["body"]["messages"])
    assert "the profile cite" not in t and "FMA count 0" not in t, t
assert any("the line the compiler's messages cite as kernel.c:N" in m["content"]
           for r in cond for m in r["body"]["messages"])
PYEOF

rm -rf "$W"
finish
