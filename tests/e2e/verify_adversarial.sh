#!/usr/bin/env bash
# The adversarial corpus (tests/adversarial): every kernel is refused with
# its category, and pragma itself always answers (JSON on stdout, exit 1).
# Plus kernels made on the fly: a 50 MB source, non-UTF-8 bytes, `.incbin`
# of the reference outputs (the compiler jail must stop it).
. "$(dirname "$0")/lib.bash"
ADV=$PRAGMA_TEST_DATA/adversarial
SMALL=(--set N=61 --set M=37)
command -v gcc >/dev/null || { echo "SKIP: no gcc"; exit 77; }

# run_one FILE EXPECTED [extra args]: verify (or eval) and check the category.
run_one() {
	local f=$1 want=$2
	shift 2
	local cmd task
	cmd=$(sed -n 's|^// command: *||p' "$f" | head -1)
	task=$(sed -n 's|^// task: *||p' "$f" | head -1)
	task=${task//\$PRAGMA_TEST_DATA/$PRAGMA_TEST_DATA} # fixture tasks by path
	[ -n "$cmd" ] || cmd=verify
	local args=()
	if [ -n "$task" ]; then
		read -r -a args <<<"$task"
	else
		args=(transpose "${SMALL[@]}")
	fi
	local extra=()
	# Two timing sessions of 2 rounds x 10 calls: each process makes more
	# calls than the 15 of the verification run.
	[ "$cmd" = eval ] && extra=(--rounds 4 --sessions 2 --reps 10 --warmup 1 --max-wait 0 --attempts 1)
	local t0=$(date +%s.%N)
	$PRAGMA $cmd "${args[0]}" "$f" "${args[@]:1}" "${extra[@]}" --timeout 4 --json "$@" \
		>/tmp/e2e.out.$$ 2>/tmp/e2e.err.$$
	local rc=$? t1=$(date +%s.%N)
	local got
	got=$($PY -c "import json; j=json.load(open('/tmp/e2e.out.$$')); print(j['status'])" 2>/dev/null)
	local msg
	msg=$($PY -c "import json; j=json.load(open('/tmp/e2e.out.$$')); print(j['message'][:150])" 2>/dev/null)
	printf '%-26s %-18s %-18s %5.1fs  %s\n' "$(basename "$f")" "$want" "${got:-?}" \
		"$(echo "$t1 - $t0" | bc)" "$msg" >>"$TABLE"
	if [ "$rc" = 1 ] && [ "$got" = "$want" ]; then
		ok "$(basename "$f") -> $want"
	else
		bad "$(basename "$f"): wanted $want (exit 1), got ${got:-no JSON} (exit $rc)"
		head -c 600 /tmp/e2e.out.$$ | sed 's/^/    /'
		tail -5 /tmp/e2e.err.$$ | sed 's/^/    /'
	fi
}

TABLE=${PRAGMA_ADV_TABLE:-$PRAGMA_CACHE_DIR/table.txt}
: >"$TABLE"
n=0
for f in "$ADV"/*.c; do
	want=$(sed -n 's|^// expect: *||p' "$f" | head -1)
	[ -z "$want" ] && want=invalid_source # empty.c has no header
	run_one "$f" "$want"
	n=$((n + 1))
done

gen=$PRAGMA_CACHE_DIR/gen
mkdir -p "$gen"
# 50 MB of source.
$PY - "$gen/huge_50mb.c" <<'PYEOF'
import sys
with open(sys.argv[1], "w") as f:
    f.write("#include <pragma/kernel.h>\nint pk_forward(const struct pk_tensor *i, int a, struct pk_tensor *o, int b) { return 0; }\n")
    line = "// " + "x" * 1021 + "\n"
    for _ in range(50 * 1024):
        f.write(line)
PYEOF
run_one "$gen/huge_50mb.c" invalid_source
# Not UTF-8: binary garbage with a pk_forward in it.
printf 'int pk_forward;\n\x93\xfe\xff\x00\x01garbage\x80\x81\n' >"$gen/garbage.c"
head -c 4096 /dev/urandom >>"$gen/garbage.c"
run_one "$gen/garbage.c" invalid_source
printf '// caf\xe9: Latin-1, not UTF-8\nint pk_forward(void) { return 0; }\n' >"$gen/latin1.c"
run_one "$gen/latin1.c" invalid_source
# A response file smuggled through --flags.
cp "$PRAGMA_TEST_DATA/kernels/transpose_tiled.c" "$gen/flags_at.c"
run_one "$gen/flags_at.c" forbidden_flag --flags "-O2 @/tmp/flags.txt"

# .incbin of the real reference outputs: the compiler runs jailed.
$PRAGMA verify transpose "$PRAGMA_TEST_DATA/kernels/transpose_tiled.c" "${SMALL[@]}" --json >/dev/null 2>&1
ref=$(ls -d "$PRAGMA_CACHE_DIR"/ref/*/ | head -1)
if [ -n "$ref" ] && [ -f "$ref/out_000.npy" ]; then
	cat >"$gen/incbin_reference.c" <<EOF2
// Pulls pragma's expected outputs into the object at compile time.
#include <pragma/kernel.h>
#include <string.h>
__asm__(".section .rodata\n.global answer\nanswer:\n.incbin \"${ref}out_000.npy\"\n.previous\n");
extern const char answer[];
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no)
{
    memcpy(out[0].data, answer + 128, sizeof(float) * (size_t)(out[0].shape[0] * out[0].shape[1]));
    return 0;
}
EOF2
	run_one "$gen/incbin_reference.c" compile_error
	cat >"$gen/include_reference.c" <<EOF2
// #include of the expected outputs, as bytes.
#include <pragma/kernel.h>
static const unsigned char answer[] = {
#include "${ref}out_000.npy"
};
int pk_forward(const struct pk_tensor *in, int ni, struct pk_tensor *out, int no) { return answer[0]; }
EOF2
	run_one "$gen/include_reference.c" compile_error
else
	bad "no reference data to aim .incbin at"
fi

echo "--- kernel                   expected           got               time   message"
cat "$TABLE"
[ $n -ge 20 ] && ok "corpus has $n kernels (at least 20)" || bad "corpus has only $n kernels"
finish
