#!/usr/bin/env bash
# pragma verify/eval as a user meets them: help, usage errors, exit codes,
# the JSON contract of a rejection.
. "$(dirname "$0")/lib.bash"
K=$PRAGMA_TEST_DATA/kernels/transpose_tiled.c

expect_exit 0 "verify --help" -- $PRAGMA verify --help
grep -q "pragma verify TASK KERNEL.c" /tmp/e2e.out.$$ && ok "help text" || bad "help text"
expect_exit 0 "eval --help" -- $PRAGMA eval --help
expect_exit 2 "verify without a kernel" -- $PRAGMA verify transpose
expect_exit 2 "unknown option" -- $PRAGMA verify transpose "$K" --frobnicate
expect_exit 2 "bad --sets" -- $PRAGMA verify transpose "$K" --sets 0
expect_exit 2 "eval-only option on verify" -- $PRAGMA verify transpose "$K" --rounds 3
expect_exit 2 "missing kernel file" -- $PRAGMA verify transpose /nonexistent/kernel.c --json
jcheck "error object" "j['status']=='error'"
expect_exit 2 "unknown task" -- $PRAGMA verify no_such_task "$K"

command -v gcc >/dev/null || { finish; exit $?; }
# A rejection: exit 1, status = category, one-line message, hint, sandbox facts.
expect_exit 1 "rejected kernel" -- $PRAGMA verify transpose "$PRAGMA_TEST_DATA/adversarial/off_by_one.c" \
	--set N=61 --set M=37 --json
jcheck "category, message, hint" \
	"j['status']=='wrong_output' and '\n' not in j['message'] and 'expected' in j['message'] and len(j['hint'])>10"
jcheck "sandbox facts in every verdict" \
	"j['sandbox']['enabled'] and j['sandbox']['seccomp'] and (j['sandbox']['landlock'].startswith('abi') or j['sandbox']['landlock'].startswith('unavailable'))"
expect_exit 1 "rejected before running: still says the sandbox" -- $PRAGMA verify transpose \
	"$PRAGMA_TEST_DATA/adversarial/system.c" --set N=61 --set M=37 --json
jcheck "link_forbidden with landlock state" "j['status']=='link_forbidden' and j['sandbox']['landlock']!=''"
expect_exit 1 "human rejection on stderr" -- $PRAGMA verify transpose "$PRAGMA_TEST_DATA/adversarial/no_write.c" \
	--set N=61 --set M=37
grep_err "category and hint" "rejected: unwritten_output: .*Hint: |Hint: "
printf '#include <pragma/kernel.h>\nint pk_forward(const struct pk_tensor *i, int a, struct pk_tensor *o, int b)\n{ return undeclared_thing; }\n' \
	>"$PRAGMA_CACHE_DIR/broken.c"
expect_exit 1 "compile error shows the compiler" -- $PRAGMA verify transpose "$PRAGMA_CACHE_DIR/broken.c" \
	--set N=61 --set M=37
grep_err "first error line and the log" "compile_error: .*undeclared_thing"
expect_exit 1 "compile error as JSON carries the log" -- $PRAGMA verify transpose "$PRAGMA_CACHE_DIR/broken.c" \
	--set N=61 --set M=37 --json
jcheck "status and log" "j['status']=='compile_error' and 'undeclared_thing' in j['compile']['log'] and 'broken.c:3' in j['message']"

# Two trajectories of a bench make the same reference data at once: one
# makes it, the others wait for it (they once failed "cannot store ...:
# Directory not empty", or removed a set the other was reading).
pids=()
for i in 1 2 3; do
	$PRAGMA verify transpose "$K" --set N=900 --set M=700 >/tmp/e2e.par$i.$$ 2>&1 &
	pids+=($!)
done
npar=0
for i in 1 2 3; do wait "${pids[$((i - 1))]}" && npar=$((npar + 1)); done
[ "$npar" = 3 ] && ok "three verifies making the same reference data at once all pass" ||
	{ bad "only $npar of 3 concurrent verifies passed"; cat /tmp/e2e.par*.$$; }
rm -f /tmp/e2e.par*.$$
finish
