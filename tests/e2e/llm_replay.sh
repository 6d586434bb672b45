#!/bin/bash
# Record a session (--record) through exec, replay it by role and order, and
# stop cleanly past its end; parse replies as the agents do.
. "$PRAGMA_TEST_DATA/e2e/lib.bash"
unset PRAGMA_LLM
T=$(mktemp -d /tmp/pragma-e2e-replay-XXXXXX)
REC=$T/session.jsonl
model='exec:printf "%s reply %s" "$PRAGMA_AGENT" "$PRAGMA_ATTEMPT"'
expect_exit 0 "record coder 1" -- $PRAGMA llm ask --llm "$model" --no-cache --record "$REC" --agent coder --attempt 1 "v1 took 1.23 ms"
expect_exit 0 "record conductor 1" -- $PRAGMA llm ask --llm "$model" --no-cache --record "$REC" --agent conductor --attempt 1 "judge"
expect_exit 0 "record coder 2" -- $PRAGMA llm ask --llm "$model" --no-cache --record "$REC" --agent coder --attempt 2 "v2"
[ "$(wc -l <"$REC")" = 3 ] && ok "three calls recorded" || bad "recording has $(wc -l <"$REC") lines"

# Replay is per process: drive it with one ping --count per role... or ask
# once per process (each process starts at the top of the recording).
expect_exit 0 "replay coder" -- $PRAGMA llm ask --llm "replay:$REC" --agent coder "v1 took 9.99 ms"
[ "$(out)" = "coder reply 1" ] && ok "first coder reply, whatever the numbers" || bad "got '$(out)'"
expect_exit 0 "replay conductor" -- $PRAGMA llm ask --llm "replay:$REC" --agent conductor --json "judge again"
jcheck "the conductor's reply, provider replay" "j['text'] == 'conductor reply 1' and j['provider'] == 'replay'"
expect_exit 1 "a role the recording lacks (a clean stop)" -- $PRAGMA llm ask --llm "replay:$REC" --agent summarizer "sum"
grep_err "it stops with a clear message" "0 recorded replies for agent 'summarizer'"
# Two coder calls exist; ping --count 3 as coder asks for three.
expect_exit 1 "asking past the end stops the run" -- $PRAGMA llm ping --llm "replay:$REC" --agent coder --count 3 --parallel 1 --json
jcheck "two answered, one stopped" "j['answered'] == 2 and j['stopped'] == 1"
echo 'not json' >"$T/bad.jsonl"
expect_exit 2 "a broken recording" -- $PRAGMA llm ask --llm "replay:$T/bad.jsonl" hi
grep_err "names the line" "bad.jsonl:1"

# Reply parsing.
cat >"$T/coder.md" <<'MD'
Here is a faster version.

```c
// pragma:flags -funroll-loops
// pragma:tune BLOCK=32,64
#include "pragma/kernel.h"
int pk_forward(const struct pk_tensor *in, int n_in, struct pk_tensor *out, int n_out) { return 0; }
```
MD
expect_exit 0 "parse a coder reply" -- $PRAGMA llm parse --json "$T/coder.md"
jcheck "kernel, flags, tunables" "j['defines_forward'] and j['flags'] == ['-funroll-loops'] and j['tunables'] == {'BLOCK': ['32', '64']} and j['lang'] == 'c'"
printf 'Sure!\n```c\nint pk_forward(void) {\n  for (;;) {\n' >"$T/cut.md"
expect_exit 1 "a cut-off kernel" -- $PRAGMA llm parse "$T/cut.md"
grep_err "is reported as cut off" "cut off"
printf '**Verdict:** regression\n**Bottleneck:** bandwidth\n**Actions:** use streaming stores\nMetrics: cpu.ipc, roof.bandwidth_pct\n' >"$T/cond.md"
expect_exit 0 "parse a conductor reply" -- $PRAGMA llm parse --conductor --json "$T/cond.md"
jcheck "sections" "j['verdict'] == 'regression' and j['metrics'] == ['cpu.ipc', 'roof.bandwidth_pct'] and j['missing'] == ''"
rm -rf "$T"
finish
