#!/usr/bin/env bash
# A mailbox that lets a person (or a helper agent) answer as the model, via
# the exec provider:
#
#   pragma optimize TASK --llm "exec:scripts/llm_mailbox.sh ask"   (PRAGMA_MAILBOX=DIR)
#
# The provider runs `ask` with the request JSON on stdin; it files the request
# in $PRAGMA_MAILBOX and waits for the answer. Whoever plays the model runs
#
#   scripts/llm_mailbox.sh next DIR...   # waits for a request in any DIR; prints its id and file
#   scripts/llm_mailbox.sh reply DIR ID FILE   # answers it with FILE's contents
#
# `next` prints "DONE" once DIR/DONE exists (whoever ran pragma writes it at
# the end, with how the run ended: pragma itself does not), then per mailbox
# the requests answered and what DONE says.
#
# With PRAGMA_MAILBOX_BY_TASK=1 each task gets its own mailbox,
# $PRAGMA_MAILBOX/<task>-<mode> (pragma exports PRAGMA_TASK and PRAGMA_MODE),
# so one `pragma bench` can be served by one model player per task; with
# PRAGMA_MAILBOX_BY_TASK=trajectory, $PRAGMA_MAILBOX/<task>-<mode>-t<N>
# (PRAGMA_TRAJECTORY, 0-based), so `--repeat` trajectories can have players
# who never saw each other's runs.
set -euo pipefail

cmd=${1:-}
case "$cmd" in
ask)
	box=${PRAGMA_MAILBOX:?set PRAGMA_MAILBOX to the mailbox directory}
	if [ "${PRAGMA_MAILBOX_BY_TASK:-}" = 1 ]; then
		box=$box/${PRAGMA_TASK:?PRAGMA_TASK unset}-${PRAGMA_MODE:-pragma}
	elif [ "${PRAGMA_MAILBOX_BY_TASK:-}" = trajectory ]; then
		box=$box/${PRAGMA_TASK:?PRAGMA_TASK unset}-${PRAGMA_MODE:-pragma}-t${PRAGMA_TRAJECTORY:-0}
	fi
	mkdir -p "$box"
	id=$(date +%s%N)-${PRAGMA_AGENT:-model}-${PRAGMA_ATTEMPT:-0}
	cat >"$box/$id.request.json.tmp"
	/usr/bin/python3 - "$box/$id.request.json.tmp" "$box/$id.request.md.tmp" <<'PY'
import json, sys
req = json.load(open(sys.argv[1]))
with open(sys.argv[2], "w") as f:
    for m in req.get("messages", []):
        f.write("===== %s =====\n%s\n\n" % (m["role"].upper(), m["content"]))
PY
	mv "$box/$id.request.md.tmp" "$box/$id.request.md"
	mv "$box/$id.request.json.tmp" "$box/$id.request.json"
	while [ ! -e "$box/$id.reply.md" ]; do sleep 1; done
	cat "$box/$id.reply.md"
	;;
next)
	# next DIR [DIR...]: the oldest unanswered request in any of the DIRs.
	shift
	[ $# -ge 1 ] || { echo "usage: next DIR [DIR...]" >&2; exit 2; }
	while :; do
		best= bestdir=
		for box in "$@"; do
			for r in $(ls "$box"/*.request.json 2>/dev/null | sort); do
				id=$(basename "$r" .request.json)
				[ -e "$box/$id.reply.md" ] && continue
				if [ -z "$best" ] || [[ "$id" < "$best" ]]; then best=$id bestdir=$box; fi
				break
			done
		done
		if [ -n "$best" ]; then
			echo "REQUEST $best"
			echo "mailbox: $bestdir"
			echo "read it: $bestdir/$best.request.md ($(wc -c <"$bestdir/$best.request.md") bytes)"
			echo "answer:  $0 reply $bestdir $best FILE"
			exit 0
		fi
		all_done=1
		for box in "$@"; do [ -e "$box/DONE" ] || all_done=0; done
		if [ "$all_done" = 1 ]; then
			# Whoever ended the runs may say how (an exit status, a reason).
			echo DONE
			for box in "$@"; do
				n=$(find "$box" -maxdepth 1 -name '*.reply.md' | wc -l)
				echo "$box: $n request(s) answered; $(head -c 300 "$box/DONE" | tr '\n' ' ')"
			done
			exit 0
		fi
		sleep 2
	done
	;;
reply)
	box=${2:?usage: reply DIR ID FILE}; id=${3:?}; file=${4:?}
	[ -e "$box/$id.request.json" ] || { echo "no request $id in $box" >&2; exit 2; }
	# pragma reads the first reply as soon as it lands: a second one would
	# be ignored in silence (a player once sent the wrong file, then the
	# right one, and the wrong kernel was run).
	[ ! -e "$box/$id.reply.md" ] || { echo "request $id in $box was already answered; pragma has read that reply" >&2; exit 2; }
	cp "$file" "$box/$id.reply.md.tmp" && mv "$box/$id.reply.md.tmp" "$box/$id.reply.md"
	echo "answered $id"
	;;
*)
	echo "usage: llm_mailbox.sh ask | next DIR... | reply DIR ID FILE" >&2
	exit 2
	;;
esac
