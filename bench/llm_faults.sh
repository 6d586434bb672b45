#!/bin/bash
# The LLM layer under injected faults: N requests (default 200) per format
# against the fake server on loopback, a share (default 10%) of them faulty
# (429 with Retry-After, 500, 503, stalled streams, truncated and reset
# streams, malformed JSON, empty replies, refusals). Every request must end
# answered or failed cleanly (with a category), and the client's usage
# totals must equal what the server reported, token for token.
#
#   bench/llm_faults.sh [N] [FAULT_RATE] [PARALLEL]
# PRAGMA names the binary (default build/pragma). Exit 0 when every row is exact.
set -u
here=$(cd "$(dirname "$0")/.." && pwd)
PRAGMA=${PRAGMA:-$here/build/pragma}
N=${1:-200}
RATE=${2:-0.1}
PAR=${3:-8}
PY=/usr/bin/python3
T=$(mktemp -d /tmp/pragma-llm-faults-XXXXXX)
trap 'kill $SPID 2>/dev/null; rm -rf "$T"' EXIT
export PRAGMA_CACHE_DIR=$T/cache PRAGMA_CONFIG_NO_DEFAULTS=1
unset PRAGMA_LLM PRAGMA_LLM_BASE_URL PRAGMA_LLM_API_KEY

cat >"$T/script.json" <<JSON
{"model": "fake-model", "fault_rate": $RATE, "fault_seed": 2026, "stall_seconds": 5, "retry_after_ms": 200,
 "cycle": true, "replies": {"*": ["pong", {"text": "pong", "reasoning": "The user wants one word."}]},
 "fault_kinds": ["429", "500", "503", "stall", "truncate", "reset", "malformed", "empty", "refusal"]}
JSON
$PY "$here/tests/fake_llm/fake_llm.py" --script "$T/script.json" --log "$T/requests.jsonl" \
	--port-file "$T/port" --max-seconds 600 >/dev/null 2>"$T/server.err" &
SPID=$!
for _ in $(seq 100); do [ -s "$T/port" ] && break; sleep 0.1; done
PORT=$(cat "$T/port")

status=0
printf '%-10s %8s %8s %14s %7s %7s  %-27s %-27s %-19s %s\n' format requests answered failed_cleanly retries faults \
	"prompt tok client/server" "completion client/server" "reasoning cl/srv" exact
for fmt in openai anthropic; do
	base=http://127.0.0.1:$PORT/v1
	[ $fmt = anthropic ] && base=http://127.0.0.1:$PORT
	: >"$T/requests.jsonl"
	start=$(date +%s.%N)
	$PRAGMA llm ping --llm $fmt:fake-model --base-url $base --count "$N" --parallel "$PAR" --json \
		--retries 5 --backoff-ms 20 --stall-timeout 1 --timeout 10 >"$T/$fmt.json" 2>"$T/$fmt.err"
	rc=$?
	wall=$($PY -c "import time; print('%.1f' % (time.time() - $start))")
	$PY - "$T/$fmt.json" "$T/requests.jsonl" "$fmt" "$N" "$rc" "$wall" <<'PYEOF' || status=1
import collections, json, sys
res = json.load(open(sys.argv[1]))
log = [json.loads(l) for l in open(sys.argv[2])]
fmt, n, rc, wall = sys.argv[3], int(sys.argv[4]), int(sys.argv[5]), sys.argv[6]
u = res["usage"]
srv = {k: sum((e["usage"] or {}).get(k, 0) for e in log) for k in ("prompt_tokens", "completion_tokens", "reasoning_tokens")}
faults = collections.Counter(e["fault"] for e in log if e["fault"])
failed = [r for r in res["replies"] if not r["ok"]]
clean = all(r["fail"] not in ("none", "unknown") for r in failed)
answered = res["answered"]
exact = all(u[k] == srv[k] for k in srv) and answered + len(failed) == n and clean and rc in (0, 3) \
    and u["calls"] == answered and u["failed"] == len(failed)
print("%-10s %8d %8d %14d %7d %7d  %-27s %-27s %-19s %s" % (
    fmt, n, answered, len(failed), u["retries"], sum(faults.values()),
    "%d / %d" % (u["prompt_tokens"], srv["prompt_tokens"]),
    "%d / %d" % (u["completion_tokens"], srv["completion_tokens"]),
    "%d / %d" % (u["reasoning_tokens"], srv["reasoning_tokens"]), "yes" if exact else "NO"))
print("           faults injected: %s; failures: %s; server requests %d; wall %s s; exit %d" % (
    ", ".join("%s=%d" % kv for kv in sorted(faults.items())),
    ", ".join("%s=%d" % kv for kv in sorted(collections.Counter(r["fail"] for r in failed).items())) or "none",
    len(log), wall, rc))
sys.exit(0 if exact else 1)
PYEOF
done
exit $status
