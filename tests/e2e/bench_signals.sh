#!/usr/bin/env bash
# A killed `pragma bench` leaves no orphans: each element's `pragma optimize`
# (lib/suite/local.c) dies with it, and takes the model it was waiting for
# along. SIGHUP goes through the CLI's handler (pragma/proc.h's registry of
# children), SIGTERM through bench's own interrupt path, SIGKILL (no handler
# runs) through the kernel: the element's parent-death signal.
. "$(dirname "$0")/lib.bash"
command -v gcc >/dev/null || { echo "SKIP: no gcc"; exit 77; }
W=$(mktemp -d /tmp/pragma-bench-sig-XXXXXX)
trap 'for f in "$W"/*.pid; do [ -e "$f" ] && kill -9 "$(cat "$f")" 2>/dev/null; done; rm -rf "$PRAGMA_CACHE_DIR" "$XDG_CONFIG_HOME" "$W"' EXIT
unset PRAGMA_LLM PRAGMA_DB
VADD=$PRAGMA_TEST_DATA/fixtures/bench/vadd

# The model: answers nothing, waits (a child of its own) until killed.
cat >"$W/model.sh" <<EOF
#!/bin/sh
cat >/dev/null
echo \$\$ >"$W/model.pid"
sleep 300 &
echo \$! >"$W/sleep.pid"
wait
EOF
chmod +x "$W/model.sh"

gone() { # PID...: all gone within 5 s
	for _ in $(seq 50); do
		local alive=0
		for p in "$@"; do kill -0 "$p" 2>/dev/null && alive=1; done
		[ $alive = 0 ] && return 0
		sleep 0.1
	done
	return 1
}

for sig in HUP TERM KILL; do
	rm -f "$W"/*.pid
	# A background job of a script ignores SIGINT; env gives it back.
	env --default-signal=SIGINT $PRAGMA bench "$VADD" --llm "exec:$W/model.sh" --mode single --attempts 1 \
		--db "$W/$sig.db" >"$W/$sig.out" 2>"$W/$sig.err" &
	pid=$!
	echo $pid >"$W/bench.pid"
	for _ in $(seq 1500); do [ -s "$W/sleep.pid" ] && break; kill -0 $pid 2>/dev/null || break; sleep 0.2; done
	if [ ! -s "$W/sleep.pid" ]; then
		bad "SIG$sig: the model was never asked"
		sed 's/^/    /' "$W/$sig.err" | tail -5
		kill -9 $pid 2>/dev/null
		continue
	fi
	opt=$(pgrep -P $pid -f "optimize" | head -1)
	[ -n "$opt" ] && ok "SIG$sig: bench runs the element as a child (pid $opt)" || bad "SIG$sig: no optimize child of bench"
	echo "$opt" >"$W/opt.pid"
	kill -$sig $pid
	wait $pid
	rc=$?
	[ $rc != 0 ] && ok "SIG$sig: bench stops (exit $rc)" || bad "SIG$sig: bench exit 0"
	if gone ${opt:-} "$(cat "$W/model.pid")" "$(cat "$W/sleep.pid")"; then
		ok "SIG$sig: the element's pragma optimize and its model died with bench"
	else
		bad "SIG$sig: left behind:"
		for p in ${opt:-} "$(cat "$W/model.pid")" "$(cat "$W/sleep.pid")"; do
			kill -0 "$p" 2>/dev/null && ps -o pid=,args= -p "$p" | sed 's/^/    /'
		done
		kill -9 ${opt:-} "$(cat "$W/model.pid")" "$(cat "$W/sleep.pid")" 2>/dev/null
	fi
done
finish
