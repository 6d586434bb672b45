#!/usr/bin/env bash
# Correct kernels (tests/kernels) pass verification on their tasks: native C
# tasks always, KernelBench ones when the PyTorch bridge works (else skipped).
. "$(dirname "$0")/lib.bash"
command -v gcc >/dev/null || { echo "SKIP: no gcc"; exit 77; }
have_torch=1
/usr/bin/python3 -c "import torch" 2>/dev/null || have_torch=0

for f in "$PRAGMA_TEST_DATA"/kernels/*.c; do
	spec_line=$(sed -n 's|^// task: *||p' "$f" | head -1)
	read -r -a spec <<<"${spec_line//\$PRAGMA_TEST_DATA/$PRAGMA_TEST_DATA}"
	task=${spec[0]}
	case $task in
	[0-9]*_* | *.py) if [ $have_torch = 0 ]; then echo "ok - $(basename "$f") # SKIP no torch"; continue; fi ;;
	esac
	expect_exit 0 "$(basename "$f") verifies on $task" -- $PRAGMA verify "$task" "$f" "${spec[@]:1}" --json
	jcheck "$(basename "$f"): ok, sandboxed, 5 sets" \
		"j['status']=='ok' and j['sandbox']['enabled'] and j['sandbox']['seccomp'] and j['input_sets']==5"
done

# One of them with clang as well (OpenMP + AVX2 intrinsics).
if command -v clang >/dev/null; then
	expect_exit 0 "stencil2d AVX2+OpenMP kernel with clang" -- \
		$PRAGMA verify stencil2d "$PRAGMA_TEST_DATA/kernels/stencil2d_avx2_omp.c" --set N=300 --set M=257 --cc clang --json
	jcheck "compiled by clang" "j['status']=='ok' and j['compile']['compiler'].startswith('clang')"
fi

# Flags from --flags are filtered like the kernel's own and recorded.
expect_exit 0 "--flags accepted" -- $PRAGMA verify transpose "$PRAGMA_TEST_DATA/kernels/transpose_tiled.c" \
	--set N=100 --set M=77 --flags "-funroll-loops -DTILE_HINT=16" --json
jcheck "flags recorded" "j['compile']['flags']==['-funroll-loops','-DTILE_HINT=16']"

# Human output and --keep.
expect_exit 0 "human output" -- $PRAGMA verify transpose "$PRAGMA_TEST_DATA/kernels/transpose_tiled.c" \
	--set N=100 --set M=77 --keep
if grep -q "verified:  ok on 5 input sets" /tmp/e2e.out.$$ && grep -q "landlock" /tmp/e2e.out.$$; then
	ok "human output says verified and the sandbox"; else bad "human output"; out; fi
finish
