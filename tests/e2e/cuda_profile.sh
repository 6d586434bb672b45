#!/usr/bin/env bash
# `pragma profile` on CUDA kernels: the ptxas resource report and the GPU
# diagnosis always; timing, the GPU roofline and Nsight Compute on a GPU
# machine (here: "no CUDA device", exit 3, after the static part). The GPU
# compendium answers for what is shown.
. "$(dirname "$0")/lib.bash"
T=$PRAGMA_TEST_DATA/cuda/tasks/vadd
K=$PRAGMA_TEST_DATA/cuda/kernels

if ! command -v nvcc >/dev/null && [ ! -x /usr/local/cuda/bin/nvcc ] && [ -z "${PRAGMA_NVCC:-}" ]; then
	echo "skip: nvcc not found"
	exit 77
fi
HARNESS=${PRAGMA_CUDA_HARNESS:-$PRAGMA_BUILD_DIR/pragma-cuda-harness}
"$HARNESS" probe >/dev/null 2>&1
DEVICE=$?

if [ $DEVICE != 0 ]; then
	expect_exit 3 "profile of a spilling kernel without a GPU" -- $PRAGMA profile $T $K/spills.cu
	if grep -q "static.gpu_spill_bytes" /tmp/e2e.out.$$; then ok "the static part is printed"; else bad "no static part"; out | head; fi
	if grep -q "local-memory-spills" /tmp/e2e.out.$$; then ok "diagnosed: local-memory-spills"; else bad "no diagnosis"; out | tail; fi
	grep_err "ends with the reason" "no CUDA device"

	expect_exit 3 "--json --explain" -- $PRAGMA profile $T $K/spills.cu --json --explain --metrics gpu.stall_barrier_pct,ncu:sm__inst_executed.sum
	jcheck "status no_device, static metrics, reasons for the rest" \
		"j['status']=='no_device' and j['backend']=='cuda' and j['metrics']['static.gpu_spill_bytes']['value']>0 and 'no CUDA device' in j['unavailable']['ncu'] and 'no CUDA device' in j['unavailable']['timing']"
	jcheck "diagnosis and the playbook" \
		"j['diagnosis'][0]['bottleneck']=='local-memory-spills' and '__launch_bounds__' in j['explanation']"

	expect_exit 3 "a clean kernel: nothing to diagnose statically" -- $PRAGMA profile $T $K/vadd.cu --json
	jcheck "no spills, one kernel, no findings" \
		"j['metrics']['static.gpu_spill_bytes']['value']==0 and j['metrics']['static.gpu_kernels']['value']==1 and j['diagnosis']==[]"
else
	expect_exit 0 "profile on the GPU" -- $PRAGMA profile $T $K/vadd.cu --json
	jcheck "timing, roofline and static; ncu or its reason" \
		"j['status']=='ok' and j['metrics']['time.median_ms']['value']>0 and 'roof.pct_peak_bw' in j['metrics'] and ('gpu.duration_us' in j['metrics'] or 'ncu' in j['unavailable'])"
fi

expect_exit 2 "an unknown metric is refused before anything runs" -- $PRAGMA profile $T $K/vadd.cu --metrics gpu.no_such_thing
expect_exit 0 "the GPU playbooks are in the compendium" -- $PRAGMA knowledge show uncoalesced-access
if grep -q "threadIdx.x" /tmp/e2e.out.$$; then ok "playbook text"; else bad "playbook text missing"; out | head; fi
expect_exit 0 "and pass the compendium check" -- $PRAGMA knowledge check
finish
