#!/usr/bin/env bash
# CUDA cheats (tests/cuda/cheats) and the import refusals of
# tests/cuda/kernels: each must get its category. Without a GPU the import
# refusals still do (exit 1) and the rest stop at no_device (exit 3) after
# building and passing the static checks; on a GPU machine every one runs
# and must be refused with its category (exit 1). Ordinary CUDA (a
# __device__ helper, CUB, templates, constant memory) must pass the static
# checks: no_device here, ok on a GPU.
. "$(dirname "$0")/lib.bash"
T=$PRAGMA_TEST_DATA/cuda/tasks/vadd
C=$PRAGMA_TEST_DATA/cuda/cheats
K=$PRAGMA_TEST_DATA/cuda/kernels

if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ] && [ -z "${PRAGMA_NVCC:-}" ]; then
	echo "skip: nvcc not found (the CUDA backend cannot build candidates here)"
	exit 77
fi
HARNESS=${PRAGMA_CUDA_HARNESS:-$PRAGMA_BUILD_DIR/pragma-cuda-harness}
if [ ! -x "$HARNESS" ]; then
	echo "skip: pragma-cuda-harness was not built"
	exit 77
fi
"$HARNESS" probe >/dev/null 2>&1
DEVICE=$?
[ $DEVICE = 0 ] && echo "# CUDA device present: the cheats run" || echo "# no CUDA device: static checks only"

TABLE=${PRAGMA_CHEATS_TABLE:-$PRAGMA_CACHE_DIR/cheats.txt}
: >"$TABLE"

# one FILE WANT: verify (or eval, per the header) and check the category;
# WANT applies on a GPU, or anywhere for import refusals (link_forbidden).
one() {
	local f=$1 want=$2 cmd
	cmd=$(sed -n 's|^// command: *||p' "$f" | head -1)
	[ -n "$cmd" ] || cmd=verify
	local extra=()
	[ "$cmd" = eval ] && extra=(--rounds 4 --sessions 2 --reps 10 --warmup 1 --max-wait 0 --attempts 1)
	$PRAGMA $cmd "$T" "$f" "${extra[@]}" --timeout 20 --json >/tmp/e2e.out.$$ 2>/tmp/e2e.err.$$
	local rc=$? got
	got=$($PY -c "import json; print(json.load(open('/tmp/e2e.out.$$'))['status'])" 2>/dev/null)
	local expect=$want expect_rc=1
	if [ $DEVICE != 0 ] && [ "$want" != link_forbidden ]; then
		expect=no_device
		expect_rc=3
	fi
	[ "$want" = ok ] && [ $DEVICE = 0 ] && expect_rc=0
	printf '%-26s %-18s %-18s exit %s\n' "$(basename "$f")" "$expect" "${got:-?}" "$rc" >>"$TABLE"
	if [ "$rc" = "$expect_rc" ] && [ "$got" = "$expect" ]; then
		ok "$(basename "$f") -> $expect"
	else
		bad "$(basename "$f"): wanted $expect (exit $expect_rc), got ${got:-no JSON} (exit $rc)"
		head -c 600 /tmp/e2e.out.$$ | sed 's/^/    /'
		tail -5 /tmp/e2e.err.$$ | sed 's/^/    /'
	fi
}

for f in "$C"/*.cu; do
	one "$f" "$(sed -n 's|^// expect: *||p' "$f" | head -1)"
done
for k in cublas device_reset dlopen system fopen host_exit thrust_vadd; do
	one "$K/$k.cu" link_forbidden
done
for k in ordinary cub_vadd; do
	one "$K/$k.cu" ok
done
# The issue's own case: a __device__ helper taking a reference, on KernelBench's relu.
$PRAGMA verify 13_relu "$K/helper_relu.cu" --set BATCH=4 --set DIM=4099 --json >/tmp/e2e.out.$$ 2>/tmp/e2e.err.$$
rc=$?
if [ $DEVICE = 0 ]; then want=ok; want_rc=0; else want=no_device; want_rc=3; fi
got=$($PY -c "import json; print(json.load(open('/tmp/e2e.out.$$'))['status'])" 2>/dev/null)
printf '%-26s %-18s %-18s exit %s\n' "helper_relu.cu" "$want" "${got:-?}" "$rc" >>"$TABLE"
if [ "$rc" = $want_rc ] && [ "$got" = $want ]; then ok "a __device__ helper passes ($want)"; else
	bad "helper_relu.cu: wanted $want, got ${got:-no JSON} (exit $rc)"; head -c 600 /tmp/e2e.out.$$; fi
echo "# kernel                     expected           got"
cat "$TABLE"
finish
