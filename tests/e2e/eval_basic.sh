#!/usr/bin/env bash
# pragma eval: verify, then interleaved timing against the baseline.
. "$(dirname "$0")/lib.bash"
command -v gcc >/dev/null || { echo "SKIP: no gcc"; exit 77; }

expect_exit 0 "eval a native kernel" -- $PRAGMA eval stencil2d "$PRAGMA_TEST_DATA/kernels/stencil2d_avx2_omp.c" \
	--set N=600 --set M=600 --rounds 3 --reps 5 --max-wait 2 --json
jcheck "time_ms and baseline_ms with median/mean/stdev/min/count" \
	"all(k in j['time_ms'] and k in j['baseline_ms'] for k in ('median','mean','stdev','min','count'))"
jcheck "5 timed calls per round and side, at least 3 rounds (more on a busy machine)" \
	"j['time_ms']['count']==j['baseline_ms']['count']==5*len(j['speedup_spread']['rounds']) and len(j['speedup_spread']['rounds'])>=3"
jcheck "interference reported" "set(j['interference']) >= {'retried_rounds','worst_run_delay_share','waited_for_quiet_ms','rounds_made','rounds_clean','rounds_used'}"
jcheck "each time is the median of its calls" \
	"all(abs(j[k]['estimate'] - statistics.median(j['samples_ms'][s])) < 1e-9 and j[k]['estimate'] == j[k]['median'] for k, s in (('time_ms','candidate'),('baseline_ms','baseline')))"
jcheck "speedup is the ratio of the two times shown" \
	"abs(j['speedup'] - j['baseline_ms']['estimate']/j['time_ms']['estimate']) < 1e-6*j['speedup']"
jcheck "its interval brackets it" \
	"j['speedup_spread']['lo'] <= j['speedup'] <= j['speedup_spread']['hi'] and '95%' in j['speedup_spread']['method']"
jcheck "baseline config: C baseline, same threads, interleaved protocol in sessions" \
	"j['baseline']['kind'] in ('c-baseline','c-reference') and j['baseline']['config']['protocol']['rounds_target']==3 and j['baseline']['config']['protocol']['sessions']>=3"
jcheck "rates" "j['gbs'] > 0"

expect_exit 0 "human eval output" -- $PRAGMA eval transpose "$PRAGMA_TEST_DATA/kernels/transpose_tiled.c" \
	--set N=500 --set M=333 --rounds 2 --reps 4 --max-wait 0
grep -q "^speedup: " /tmp/e2e.out.$$ && ok "prints the speedup" || { bad "no speedup line"; out; }
# The words say what the numbers are: the time is the median of every call
# kept (4 per round here), the interval a two-level bootstrap.
tl=$(grep "^time: " /tmp/e2e.out.$$)
if [[ $tl =~ \(median\ of\ the\ ([0-9]+)\ calls\ kept,\ ([0-9]+)\ rounds\; ]] &&
	((BASH_REMATCH[1] == 4 * BASH_REMATCH[2])); then
	ok "the time line names the median of the calls kept"
else
	bad "time line: $tl"
	out
fi
grep -q "^speedup: .*95% interval: a bootstrap over the sessions, then the rounds within them" /tmp/e2e.out.$$ &&
	ok "the speedup line names its interval" || { bad "speedup line does not name its interval"; out; }

if /usr/bin/python3 -c "import torch" 2>/dev/null; then
	expect_exit 0 "eval against PyTorch" -- $PRAGMA eval 13_relu "$PRAGMA_TEST_DATA/kernels/relu_avx2_omp.c" \
		--set BATCH=4 --set DIM=65536 --rounds 2 --reps 5 --max-wait 2 --json
	jcheck "pytorch baseline with its configuration" \
		"j['status']=='ok' and j['baseline']['kind']=='pytorch' and 'torch' in json.dumps(j['baseline']['config'])"
else
	echo "ok - eval against PyTorch # SKIP no torch"
fi
finish
