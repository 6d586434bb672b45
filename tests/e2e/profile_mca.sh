#!/usr/bin/env bash
# Profiles of the kernel that runs (issue 13): llvm-mca on the hot loops of
# the verified build, sim only on that build, calls and spills located.
#  - an AVX2 FMA kernel: its hot loop modeled port-bound, in the table, the
#    JSON and the diagnosis;
#  - an AVX-512 FMA kernel: on a machine with AVX-512, sim says it cannot
#    run this build and gives nothing, mca models it; without AVX-512 the
#    kernel cannot run here (it fails verification cleanly) and that part
#    skips: the static and mca analysis of the same code is in
#    unit/test_profile_mca, which needs no AVX-512;
#  - calls at the top level and in an OpenMP region: not "in a loop";
#  - calls in innermost loops counted by sim: the rare one is no finding;
#  - a transpose through a stack tile: no spills.
. "$(dirname "$0")/lib.bash"
K=$PRAGMA_TEST_DATA/profile_kernels
ran=0
skipped=0
have_mca=0
for t in llvm-mca-19 llvm-mca-18 llvm-mca-17 llvm-mca llvm-mca-14; do command -v $t >/dev/null && have_mca=1; done

if [ $have_mca = 0 ]; then
	echo "skip - llvm-mca is not installed (scripts/install-deps.sh): no mca checks"
	skipped=$((skipped + 1))
elif ! grep -qw avx2 /proc/cpuinfo || ! grep -qw fma /proc/cpuinfo; then
	echo "skip - no AVX2/FMA on this machine: the AVX2 kernel cannot run"
	skipped=$((skipped + 1))
else
	ran=1
	echo "# an AVX2 FMA kernel (6x16 register tile): port-bound hot loop"
	expect_exit 0 "profile matmul_fma256" -- $PRAGMA profile 01_matmul_square --set N=96 $K/matmul_fma256.c --json --metrics all
	jcheck "mca ran: cycles per iteration of the hot loop" "j['metrics']['mca.cycles_per_iter']['source']=='mca' and 'mca' not in j['unavailable']"
	jcheck "the FMA pipes bind: busiest port >= 80% busy, little waiting on dependencies" \
		"j['metrics']['mca.port_pressure_pct']['value'] >= 80 and j['metrics']['mca.latency_pct']['value'] < 20"
	jcheck "at least 10 FP operations per cycle in the hot loop" "j['metrics']['mca.flops_per_cycle']['value'] >= 10"
	jcheck "a loop remark at the register tile's k loop, bound by a port" \
		"any(r['kind']=='loop' and 19 <= r['line'] <= 38 and 'bound by port' in r['text'] for r in j['remarks'])"
	jcheck "diagnosed port-bound, saying it is the model of this build" \
		"any(f['bottleneck']=='port-bound' and 'model of this build' in f['evidence'] for f in j['diagnosis'])"
	jcheck "the table shows the loop" "'loop (llvm-mca)' in j['table'] and 'mca.cycles_per_iter' in j['table']"
	jcheck "the note names the model" "any(n.startswith('mca: llvm-mca') and ' model of this build' in n for n in j['notes'])"
	jcheck "when sim ran on this build, the hot loop was picked by its counts" \
		"'sim' in j['unavailable'] or (j['metrics']['mca.hot_loop_pct']['value'] > 50 and any('picked by callgrind' in n for n in j['notes']))"
	jcheck "sim never simulates another build" "not any('without AVX-512' in n or 'no-avx512' in n for n in j['notes']) and ('sim' in j['unavailable'] or any('simulated the verified build itself' in n for n in j['notes']))"

	echo "# an AVX-512 FMA kernel"
	if grep -qw avx512f /proc/cpuinfo; then
		expect_exit 0 "profile matmul_fma512" -- $PRAGMA profile 01_matmul_square --set N=96 $K/matmul_fma512.c --json --metrics all
		jcheck "sim unavailable: valgrind cannot run this build's AVX-512" \
			"'AVX-512' in j['unavailable']['sim'] and 'valgrind' in j['unavailable']['sim']"
		jcheck "no sim.* metric at all" "not any(k.startswith('sim.') for k in j['metrics'])"
		jcheck "no finding rests on a simulation" "not any('simulated' in f['evidence'] for f in j['diagnosis'])"
		jcheck "no diagnosis says the 512-bit kernel is under-vectorized" "not any(f['bottleneck']=='under-vectorized' for f in j['diagnosis'])"
		jcheck "mca modeled this build's hot loop with an AVX-512 model" \
			"'mca.cycles_per_iter' in j['metrics'] and any(r['kind']=='loop' and 'FP operations per iteration' in r['text'] for r in j['remarks']) and any(('znver4' in n or 'icelake' in n or 'skylake' in n or 'sapphirerapids' in n) for n in j['notes'] if n.startswith('mca: llvm-mca'))"
		jcheck "static sees the 512-bit code" "j['metrics']['static.vector_bits']['value']==512 and j['metrics']['static.avx512']['value'] > 0"
	else
		echo "skip - no AVX-512 on this machine: the AVX-512 kernel cannot be verified and run here (its static and mca analysis: unit/test_profile_mca)"
		skipped=$((skipped + 1))
		expect_exit 1 "without AVX-512 the AVX-512 kernel fails cleanly, not profiled" -- $PRAGMA profile 01_matmul_square --set N=96 $K/matmul_fma512.c --json
		jcheck "it says why" "j['status']=='error' and len(j['message']) > 10"
	fi
fi

echo "# calls at the top level of pk_forward and in an OpenMP region, outside loops"
ran=1
expect_exit 0 "profile calls_toplevel" -- $PRAGMA profile 13_relu --set BATCH=2 --set DIM=8192 $K/calls_toplevel.c --collectors static --json
jcheck "no call is said to be inside an innermost loop" \
	"not any(r['kind']=='call' and 'innermost' in r['text'] for r in j['remarks'])"
jcheck "malloc, memcpy, free: at the top level of pk_forward" \
	"sum(r['kind']=='call' and 'not in a loop: top level of pk_forward' in r['text'] for r in j['remarks']) >= 3"
jcheck "posix_memalign: in the OpenMP parallel region, with its line" \
	"any(r['kind']=='call' and r['text'].startswith('posix_memalign (not in a loop: OpenMP parallel region') and r.get('line',0) > 0 for r in j['remarks'])"
jcheck "no calls-in-loop finding" "not any(f['bottleneck']=='calls-in-loop' for f in j['diagnosis'])"

echo "# two calls in innermost loops: one per element, one per row"
expect_exit 0 "profile calls_counted" -- $PRAGMA profile 13_relu --set BATCH=2 --set DIM=8192 $K/calls_counted.c --collectors static,sim --json
if $PY -c "import json,sys; sys.exit('sim' in json.load(open('/tmp/e2e.out.$$'))['unavailable'])"; then
	jcheck "both calls are in innermost loops, statically" \
		"sum(r['kind']=='call' and r['text'].split(' ')[0] in ('relu_rare','relu_hot') and 'innermost' in r['text'] for r in j['remarks']) == 2"
	jcheck "sim counted their runs: 2 and 16382 per call" \
		"sorted(round(r['runs']) for r in j['remarks'] if r['kind']=='call' and r['text'].split(' ')[0] in ('relu_rare','relu_hot')) == [2, 16382]"
	jcheck "calls-in-loop names the hot call, with its runs, not the rare one" \
		"[f['evidence'].split(' ')[1] for f in j['diagnosis'] if f['bottleneck']=='calls-in-loop'] == ['relu_hot'] and 'it ran ' in [f for f in j['diagnosis'] if f['bottleneck']=='calls-in-loop'][0]['evidence']"
else
	echo "skip - sim cannot run this build here: no call counts to check"
	skipped=$((skipped + 1))
fi

echo "# a transpose through a stack tile"
expect_exit 0 "profile transpose_stack_tile" -- $PRAGMA profile transpose --set N=80 --set M=48 $K/transpose_stack_tile.c --collectors static --json --metrics all
jcheck "stores into the stack tile are not spills" "j['metrics']['static.stack_spills']['value'] == 0"
jcheck "no register-spills finding" "not any(f['bottleneck']=='register-spills' for f in j['diagnosis'])"

echo "# $skipped part(s) skipped"
if [ $ran = 0 ]; then
	finish
	exit 77
fi
finish
