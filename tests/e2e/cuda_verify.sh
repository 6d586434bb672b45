#!/usr/bin/env bash
# The CUDA backend through the CLI: CUDA candidates build with nvcc, their
# imports and flags are checked, ptxas reports their resources, and on a
# machine without a GPU every run stops at "no CUDA device" (exit 3). On a
# machine with one, the same kernels verify and time for real.
. "$(dirname "$0")/lib.bash"
T=$PRAGMA_TEST_DATA/cuda/tasks/vadd
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

# Is there a device? The harness's own probe answers (exit 3: none).
"$HARNESS" probe >/tmp/e2e.probe.$$ 2>/dev/null
DEVICE=$?
if [ $DEVICE = 0 ]; then echo "# CUDA device: $(cat /tmp/e2e.probe.$$)"; else echo "# no CUDA device: $(cat /tmp/e2e.probe.$$)"; fi
rm -f /tmp/e2e.probe.$$

expect_exit 0 "doctor says what the GPU path needs" -- $PRAGMA doctor --json
jcheck "nvcc, harness, device, ncu and torch checks" \
	"{c['name'] for c in j['checks']} >= {'cuda nvcc','cuda harness','cuda runtime','cuda device','cuda ncu','cuda torch'}"
jcheck "the GPU path is optional" "all(not c['required'] for c in j['checks'] if c['name'].startswith('cuda'))"

if [ $DEVICE != 0 ]; then
	jcheck "doctor: no CUDA device, with a hint" \
		"any(c['name']=='cuda device' and c['status']=='warn' and 'no CUDA device' in c['detail'] and c.get('hint') for c in j['checks'])"

	expect_exit 3 "a correct CUDA kernel stops at no_device" -- $PRAGMA verify $T $K/vadd.cu
	grep_err "says no CUDA device" "stopped: no_device: no CUDA device"
	grep_err "with a hint" "Hint: .*NVIDIA GPU"
	if grep -q "ptxas: .*vadd_kernel.*registers" /tmp/e2e.out.$$; then ok "ptxas resources shown"; else bad "ptxas line missing"; out | head; fi

	expect_exit 3 "--json: the no_device verdict with the static analysis" -- $PRAGMA verify $T $K/vadd.cu --json
	jcheck "status, backend, compiler, resources" \
		"j['status']=='no_device' and j['backend']=='cuda' and j['compile']['compiler'].startswith('nvcc') and j['resources']['kernels'][0]['registers']>0 and j['resources']['kernels'][0]['arch']=='sm_80'"

	expect_exit 3 "eval stops there too" -- $PRAGMA eval $T $K/vadd.cu --json
	jcheck "eval: no_device" "j['status']=='no_device'"

	expect_exit 3 "spilling kernel: resources say so" -- $PRAGMA verify $T $K/spills.cu --json
	jcheck "spill bytes and the capped registers" \
		"j['resources']['kernels'][0]['spill_stores']>0 and j['resources']['kernels'][0]['registers']<=24 and j['compile']['flags']==['-maxrregcount=24']"

	expect_exit 3 "--backend cuda given explicitly" -- $PRAGMA verify --backend cuda $T $K/vadd_streams.cu
	MARK=$PRAGMA_CACHE_DIR/llm-called
	expect_exit 3 "optimize --backend cuda stops before asking the model" -- \
		$PRAGMA optimize --backend cuda $T --llm "exec:touch $MARK" --db $PRAGMA_CACHE_DIR/runs.db
	grep_err "says no CUDA device" "no CUDA device"
	if [ -e "$MARK" ]; then bad "the model was asked"; else ok "no LLM call"; fi
	expect_exit 3 "a KernelBench problem with a CUDA kernel" -- $PRAGMA verify 13_relu $K/relu.cu --set DIM=4099 --json
	jcheck "two kernels reported" "j['status']=='no_device' and j['kind']=='kernelbench' and len(j['resources']['kernels'])==2"
fi

# Rejections before anything runs: the same with or without a GPU.
expect_exit 1 "cuBLAS is refused" -- $PRAGMA verify $T $K/cublas.cu --json
jcheck "link_forbidden naming cuBLAS" "j['status']=='link_forbidden' and 'cuBLAS' in j['message']"
expect_exit 1 "host code opening files is refused" -- $PRAGMA verify $T $K/fopen.cu --json
jcheck "link_forbidden naming file I/O" "j['status']=='link_forbidden' and ('fopen' in j['message'] or 'fclose' in j['message'])"
expect_exit 1 "a compile error" -- $PRAGMA verify $T $K/compile_error.cu --json
jcheck "compile_error with the line" "j['status']=='compile_error' and 'undefined_variable' in j['message']"
expect_exit 1 "fast math on a tight tolerance" -- $PRAGMA verify $T $K/fast_math.cu --json
jcheck "forbidden_flag naming the tolerance" "j['status']=='forbidden_flag' and 'tolerance' in j['message']"
expect_exit 1 "a forbidden nvcc flag" -- $PRAGMA verify $T $K/vadd.cu --flags "-lcublas" --json
jcheck "forbidden_flag" "j['status']=='forbidden_flag' and '-lcublas' in j['message']"
expect_exit 2 "an unknown backend" -- $PRAGMA verify --backend rocm $T $K/vadd.cu
grep_err "names the backends" "cpu .*cuda"

if [ $DEVICE = 0 ]; then
	# A GPU machine: the kernels run.
	expect_exit 0 "vadd verifies on the GPU" -- $PRAGMA verify $T $K/vadd.cu --json
	jcheck "ok, sandboxed" "j['status']=='ok' and j['backend']=='cuda'"
	expect_exit 0 "work on another stream counts (device synchronized)" -- $PRAGMA verify $T $K/vadd_streams.cu
	expect_exit 0 "spilling kernel is still correct" -- $PRAGMA verify $T $K/spills.cu
	expect_exit 0 "a KernelBench problem (vector loads and a tail)" -- $PRAGMA verify 13_relu $K/relu.cu --set DIM=4099
	expect_exit 0 "eval against the C reference" -- $PRAGMA eval $T $K/vadd.cu --rounds 3 --reps 3 --json
	jcheck "timed with a speedup" "j['status']=='ok' and j['speedup']>0"
fi
finish
