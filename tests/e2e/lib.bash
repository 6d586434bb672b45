# Shared helpers for end-to-end tests (sourced).
set -u
: "${PRAGMA:?PRAGMA must point at the pragma binary}"
: "${PRAGMA_TEST_DATA:?}"
export PRAGMA_CACHE_DIR=$(mktemp -d /tmp/pragma-e2e-XXXXXX)
export XDG_CONFIG_HOME=$(mktemp -d /tmp/pragma-e2e-cfg-XXXXXX)
trap 'rm -rf "$PRAGMA_CACHE_DIR" "$XDG_CONFIG_HOME"' EXIT
PY=${PRAGMA_TEST_PY:-/usr/bin/python3}
fails=0
passes=0

ok() { passes=$((passes + 1)); echo "ok - $*"; }
bad() { fails=$((fails + 1)); echo "not ok - $*"; }

# expect_exit CODE DESC -- command...
expect_exit() {
	local want=$1 desc=$2
	shift 3
	"$@" >/tmp/e2e.out.$$ 2>/tmp/e2e.err.$$
	local got=$?
	if [ "$got" = "$want" ]; then ok "$desc (exit $got)"; else
		bad "$desc: exit $got, wanted $want"; sed 's/^/    /' /tmp/e2e.err.$$ | head -20; fi
}
out() { cat /tmp/e2e.out.$$; }
err() { cat /tmp/e2e.err.$$; }

# jcheck DESC PYTHON-EXPR: evaluates EXPR with j = the JSON on stdout of the last command
jcheck() {
	local desc=$1 expr=$2
	if $PY -c "import json,sys,statistics; j=json.load(open('/tmp/e2e.out.$$')); sys.exit(0 if ($expr) else 1)" 2>/tmp/e2e.py.$$; then
		ok "$desc"
	else
		bad "$desc: ($expr) is false"; head -c 1500 /tmp/e2e.out.$$ | sed 's/^/    /'; cat /tmp/e2e.py.$$
	fi
}

# grep_err DESC PATTERN: stderr of the last command matches
grep_err() {
	if grep -qE "$2" /tmp/e2e.err.$$; then ok "$1"; else bad "$1: stderr lacks /$2/"; sed 's/^/    /' /tmp/e2e.err.$$ | head; fi
}

finish() {
	rm -f /tmp/e2e.out.$$ /tmp/e2e.err.$$ /tmp/e2e.py.$$
	echo "$passes passed, $fails failed"
	[ "$fails" = 0 ]
}

# start_fake_llm SCRIPT.json: starts tests/fake_llm/fake_llm.py on loopback;
# sets FAKE_PORT, FAKE_LOG and points the openai provider at it.
start_fake_llm() {
	FAKE_DIR=$(mktemp -d /tmp/pragma-fake-XXXXXX)
	FAKE_LOG=$FAKE_DIR/requests.jsonl
	$PY "$PRAGMA_TEST_DATA/fake_llm/fake_llm.py" --script "$1" --log "$FAKE_LOG" \
		--port-file "$FAKE_DIR/port" --max-seconds "${2:-900}" >/dev/null 2>"$FAKE_DIR/server.err" &
	FAKE_PID=$!
	for _ in $(seq 100); do [ -s "$FAKE_DIR/port" ] && break; sleep 0.1; done
	FAKE_PORT=$(cat "$FAKE_DIR/port")
	export PRAGMA_LLM_BASE_URL=http://127.0.0.1:$FAKE_PORT/v1
	export PRAGMA_LLM_API_KEY=test-key
	export PRAGMA_LLM_BACKOFF_MS=10
	trap 'kill $FAKE_PID 2>/dev/null; rm -rf "$PRAGMA_CACHE_DIR" "$XDG_CONFIG_HOME" "$FAKE_DIR"' EXIT
}
