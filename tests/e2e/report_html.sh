#!/usr/bin/env bash
# pragma report end to end: two scripted fake-LLM optimize runs of a small
# ReLU (pragma and n-pragma; a compile error, a slow kernel, a fast one whose
# source holds a <script> tag), one of them filed under a suite row; the
# Markdown report, --json, id prefixes and bad ids; then the HTML report
# rendered in headless Chromium: the plots must be in the rendered DOM, the
# screenshot must show them (the series colours, many colours, not blank),
# and the kernel's <script> must stay text.
. "$(dirname "$0")/lib.bash"
S=$PRAGMA_TEST_DATA/fixtures/session
TASK=$PRAGMA_TEST_DATA/fixtures/kb/small_relu.py
W=$(mktemp -d /tmp/pragma-report-XXXXXX)
{ echo '// </code></pre><script>document.title="pwned"</script>'; cat "$S/k4_fast.c"; } >"$W/k_fast_script.c"
$PY "$S/make_script.py" "$W/script.json" k1_compile_error.c k3_slow.c "$W/k_fast_script.c"
export PRAGMA_PROFILE_SIM_BUDGET=60

start_fake_llm "$W/script.json"
expect_exit 0 "optimize, pragma mode, 3 attempts" -- \
	$PRAGMA optimize "$TASK" --set N=65536 --llm openai:fake-model --attempts 3 --db "$W/p.db" --json
RUN1=$($PY -c "import json; print(json.load(open('/tmp/e2e.out.$$'))['run'])")
kill $FAKE_PID 2>/dev/null
start_fake_llm "$W/script.json"
expect_exit 0 "optimize, n-pragma mode, 3 attempts" -- \
	$PRAGMA optimize "$TASK" --set N=65536 --llm openai:fake-model --mode n-pragma --attempts 3 --db "$W/p.db" \
	--json --no-cache
RUN2=$($PY -c "import json; print(json.load(open('/tmp/e2e.out.$$'))['run'])")

# --- Markdown ---
expect_exit 0 "report, markdown, two runs" -- $PRAGMA report "$RUN1" "$RUN2" --db "$W/p.db"
out >"$W/r.md"
$PY - "$W/r.md" "$RUN1" "$RUN2" <<'PYEOF' && ok "markdown: Table I, attempts, trace, profile, source" || bad "markdown content"
import re, sys
md = open(sys.argv[1]).read()
sq = re.sub(r" +", " ", md)
assert "## Summary (Table I)" in md and "### PyTorch-baselined tasks" in md
assert "Native C tasks" not in md, "no native task here"
assert "| Success (correct kernel) | 100.0% | 100.0% |" in sq, "success row"
assert "| tasks × trajectories | 1 × 1 | 1 × 1 |" in sq
assert sys.argv[2] in md and sys.argv[3] in md
assert sq.count("| 1 | compile_error |") == 2, "both runs' compile error"
assert "Historical best (attempt 2):" in md, "the trace shows the historical best"
assert "scripted bottleneck 3." in md, "the Conductor's analysis"
assert "profile of the best kernel vs the first correct one" in md
assert "```c\n// </code></pre><script>document.title" in md, "best source in a fence"
assert md.count("#### ") >= 6
PYEOF
expect_exit 0 "report --json" -- $PRAGMA report "$RUN1" "$RUN2" --db "$W/p.db" --json
jcheck "json: two series with Table I metrics and outcomes" \
	"len(j['series']) == 2 and j['series'][0]['metrics']['pytorch']['all']['success'] == 1 and j['series'][0]['outcomes'][0]['correct'] and j['series'][0]['outcomes'][0]['best_attempt'] == 3"
expect_exit 0 "a unique id prefix works" -- $PRAGMA report "${RUN1%???}" --db "$W/p.db" --json
jcheck "prefix resolved to the pragma run" "j['series'][0]['id'] == '$RUN1'"
expect_exit 2 "an unknown id is an input error" -- $PRAGMA report r19990101 --db "$W/p.db"
grep_err "the error names the id and hints" "no run 'r19990101'.*|Hint: 'pragma runs'"
expect_exit 2 "a bad --format" -- $PRAGMA report "$RUN1" --db "$W/p.db" --format pdf
expect_exit 2 "no RUN" -- $PRAGMA report --db "$W/p.db"

# A suite row holding the pragma run (as `pragma bench` files its runs).
SUITE=s20990101-000000-abcd
$PY - "$W/p.db" "$RUN1" "$SUITE" "$TASK" <<'PYEOF' && ok "suite row made" || bad "suite row"
import json, sqlite3, sys
db = sqlite3.connect(sys.argv[1])
cfg = {"repeat": 1, "tasks": [{"name": "small_relu", "path": sys.argv[4], "category": "activation", "kind": "kernelbench"}]}
db.execute("INSERT INTO suites(id, created, mode, llm, status, suite_path, config) VALUES (?, 0, 'pragma', 'openai:fake-model', 'done', 'tests/fixtures/kb', ?)",
           (sys.argv[3], json.dumps(cfg)))
db.execute("UPDATE runs SET suite_id = ? WHERE id = ?", (sys.argv[3], sys.argv[2]))
db.commit()
PYEOF
expect_exit 0 "report on a suite (by prefix) next to a run" -- $PRAGMA report s2099 "$RUN2" --db "$W/p.db" --json
jcheck "the suite is a series of kind suite" "j['series'][0]['kind'] == 'suite' and j['series'][0]['id'] == '$SUITE' and j['series'][1]['kind'] == 'run'"

# --- HTML ---
expect_exit 0 "report, html" -- $PRAGMA report s2099 "$RUN2" --db "$W/p.db" -o "$W/report.html"
if grep -qi '<script' "$W/report.html"; then bad "the HTML holds a <script> element"; else ok "no <script> in the HTML"; fi
if grep -q '&lt;script&gt;document.title' "$W/report.html"; then ok "the kernel's <script> is escaped text"; else bad "escaped source missing"; fi
if grep -Eq '(src=|href="https?:|@import|url\()' "$W/report.html"; then bad "the HTML refers to outside resources"; else ok "self-contained"; fi

CHROME=$(command -v chromium || command -v chromium-browser || true)
if [ -z "$CHROME" ]; then
	rm -rf "$W"
	if [ "$fails" != 0 ]; then finish; exit 1; fi
	echo "skip: chromium is not installed (scripts/install-deps.sh installs Debian's chromium); the rendering checks did not run"
	exit 77
fi
chrome() {
	timeout 180 "$CHROME" --headless --no-sandbox --disable-gpu --disable-dev-shm-usage --disable-background-networking \
		--no-first-run --user-data-dir="$(mktemp -d "$W/chrome-XXXXXX")" "$@" 2>>"$W/chrome.err"
}
chrome --dump-dom "file://$W/report.html" >"$W/dom.html"
$PY - "$W/dom.html" <<'PYEOF' && ok "rendered DOM: plots, points, failures, best line, title intact" || { bad "rendered DOM"; tail -5 "$W/chrome.err"; }
import re, sys
dom = open(sys.argv[1]).read()
assert dom.count("<svg") == 2, "one Fig. 3 and one Fig. 4: %d svg" % dom.count("<svg")
assert 'class="plot fig4"' in dom and 'class="plot fig3"' in dom
fig4 = re.search(r'<svg[^>]*class="plot fig4".*?</svg>', dom, re.S).group(0)
assert len(re.findall(r'class="pt( bestpt)?"', fig4)) == 4, "2 correct attempts per run"
assert len(re.findall(r'class="fail"', fig4)) == 2, "one compile error per run"
assert len(re.findall(r'<polyline class="best"', fig4)) == 2, "a best-so-far line per run"
assert len(re.findall(r'class="final"', fig4)) == 2
assert "<title>pragma report: pragma vs n-pragma</title>" in dom, "the page title (no script changed it)"
assert "pwned" not in re.search(r"<title>.*?</title>", dom, re.S).group(0)
assert 'href="#task-small_relu"' in dom
PYEOF
chrome --screenshot="$W/shot.png" --window-size=1200,4000 "file://$W/report.html" >/dev/null
$PY - "$W/shot.png" <<'PYEOF' && ok "screenshot: not blank, the plots' series colours drawn" || bad "screenshot"
import struct, sys, zlib
d = open(sys.argv[1], "rb").read()
assert d[:8] == b"\x89PNG\r\n\x1a\n", "not a PNG"
pos, idat = 8, b""
while pos < len(d):
    n, t = struct.unpack(">I4s", d[pos:pos + 8]); body = d[pos + 8:pos + 8 + n]; pos += 12 + n
    if t == b"IHDR": w, h, bd, ct = struct.unpack(">IIBB", body[:10])
    elif t == b"IDAT": idat += body
assert bd == 8 and ct in (2, 6), (bd, ct)
bpp = 3 if ct == 2 else 4; stride = w * bpp; raw = zlib.decompress(idat)
prev = bytearray(stride); i = 0; colours = {}; nonwhite = 0
for y in range(h):
    f = raw[i]; line = bytearray(raw[i + 1:i + 1 + stride]); i += 1 + stride
    for x in range(stride):
        a = line[x - bpp] if x >= bpp else 0; b = prev[x]; c = prev[x - bpp] if x >= bpp else 0
        if f == 1: line[x] = (line[x] + a) & 255
        elif f == 2: line[x] = (line[x] + b) & 255
        elif f == 3: line[x] = (line[x] + (a + b) // 2) & 255
        elif f == 4:
            p = a + b - c; pa, pb, pc = abs(p - a), abs(p - b), abs(p - c)
            line[x] = (line[x] + (a if pa <= pb and pa <= pc else b if pb <= pc else c)) & 255
    for x in range(0, stride, bpp):
        px = bytes(line[x:x + 3]); colours[px] = colours.get(px, 0) + 1
        nonwhite += px != b"\xff\xff\xff"
    prev = line
def near(rgb, tol=30):
    return sum(n for px, n in colours.items() if all(abs(px[k] - rgb[k]) <= tol for k in range(3)))
print("    %dx%d, %d colours, %.1f%% not white, blue %d px, vermillion %d px" % (w, h, len(colours), 100.0 * nonwhite / (w * h), near((0, 114, 178)), near((213, 94, 0))))
assert len(colours) > 200, "too few colours: blank or unstyled"
assert nonwhite > 0.03 * w * h, "mostly white"
assert near((0, 114, 178)) > 150, "the first series' blue is not drawn"
assert near((213, 94, 0)) > 150, "the second series' vermillion is not drawn"
PYEOF

rm -rf "$W"
finish
