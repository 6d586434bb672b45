#!/usr/bin/env bash
# pragma profile and pragma knowledge through the CLI: options, errors, the
# JSON contract, and the compendium commands.
. "$(dirname "$0")/lib.bash"
K=$PRAGMA_TEST_DATA/profile_kernels
RELU="13_relu --set BATCH=2 --set DIM=8192"

expect_exit 0 "profile --help" -- $PRAGMA profile --help
expect_exit 2 "profile needs TASK and KERNEL" -- $PRAGMA profile 13_relu
expect_exit 2 "unknown metric" -- $PRAGMA profile $RELU $K/relu_avx2.c --metrics cpu.nonsense
grep_err "lists the metrics" "roof.pct_roof"
expect_exit 2 "unknown perf event" -- $PRAGMA profile $RELU $K/relu_avx2.c --metrics perf:bogus_event
grep_err "lists the events" "known events: .*cycles"
expect_exit 2 "unknown collector" -- $PRAGMA profile $RELU $K/relu_avx2.c --collectors perf,magic
grep_err "names it" "magic"
expect_exit 2 "missing kernel file" -- $PRAGMA profile $RELU $K/no_such_kernel.c
expect_exit 1 "a kernel that does not compile" -- $PRAGMA profile $RELU $K/bad_compile.c
grep_err "says it did not compile" "compile"
expect_exit 1 "a wrong kernel is not profiled" -- $PRAGMA profile $RELU $K/relu_wrong.c --json
jcheck "JSON error says wrong_output" "j['status']=='error' and 'wrong_output' in j['message']"

# The JSON contract: {status, metrics: {name: {value, unit, source}}, unavailable, diagnosis}
expect_exit 0 "profile --json" -- $PRAGMA profile $RELU $K/relu_scalar.c --json --metrics static.loads,perf:instructions
cp /tmp/e2e.out.$$ /tmp/e2e.best.$$
jcheck "status and sections" "j['status']=='ok' and isinstance(j['metrics'],dict) and isinstance(j['unavailable'],dict) and isinstance(j['diagnosis'],list)"
jcheck "every metric has value, unit, source" \
	"all(set(m)=={'value','unit','source'} and isinstance(m['value'],(int,float)) for m in j['metrics'].values())"
jcheck "every finding has bottleneck, evidence, confidence" \
	"all(set(f)=={'bottleneck','evidence','confidence'} and 0<f['confidence']<=1 for f in j['diagnosis'])"
jcheck "timing, roofline, static, par and sim ran (sim: unless this build has AVX-512 on an AVX-512 machine)" \
	"all(k in j['metrics'] for k in ['time.median_ms','roof.pct_roof','static.vector_bits','par.utilization']) and ('sim.instructions' in j['metrics'] or 'AVX-512' in j['unavailable'].get('sim',''))"
jcheck "extra metrics merged with the default set" "'static.loads' in j['metrics'] and 'static.xmm' not in j['metrics']"
jcheck "no PMU: perf says why and gives nothing, never zeros" \
	"('perf' in j['unavailable'] and not any(k.startswith(('cpu.','topdown.','perf:')) for k in j['metrics'])) or ('cpu.ipc' in j['metrics'] and 'perf:instructions' in j['metrics'])"
jcheck "an unavailable reason carries a hint" "all(len(r) > 20 for r in j['unavailable'].values())"
jcheck "simulated rates come with their thread count" "('sim.threads' in j['metrics'] and j['metrics']['sim.threads']['value']==1 and any('threads simulated: 1 of' in n for n in j['notes'])) or ('AVX-512' in j['unavailable'].get('sim','') and not any(k.startswith('sim.') for k in j['metrics']))"

expect_exit 0 "collectors chosen" -- $PRAGMA profile $RELU $K/relu_scalar.c --json --collectors static
jcheck "only timing and static" "all(k.split('.')[0] in ('time','static') for k in j['metrics']) and 'static.fp_packed_pct' in j['metrics']"
expect_exit 0 "mca alone" -- $PRAGMA profile $RELU $K/relu_avx2.c --json --collectors mca
jcheck "only timing and mca, or mca says why not" "all(k.split('.')[0] in ('time','mca') for k in j['metrics']) and ('mca.cycles_per_iter' in j['metrics'] or 'mca' in j['unavailable'])"
expect_exit 0 "sim over budget is skipped with a reason" -- $PRAGMA profile $RELU $K/relu_scalar.c --json --collectors sim --sim-budget 0.001
jcheck "budget named" "'budget' in j['unavailable']['sim'] and not any(k.startswith('sim.') for k in j['metrics'])"
expect_exit 0 "compared with the best so far" -- $PRAGMA profile $RELU $K/relu_avx2.c --json --compare /tmp/e2e.best.$$
jcheck "the packed share rose" \
	"any(c['name'] in ('sim.fp_packed_pct','static.fp_packed_pct') and c['change']=='higher' and c['assessment']=='better' for c in j['comparison'])"
expect_exit 0 "human output with the compendium" -- $PRAGMA profile $RELU $K/relu_avx2.c --collectors static,roofline --explain
if out | grep -q "what these mean" && out | grep -q "roof.pct_roof (%)"; then ok "explains the metrics shown"; else bad "no explanation"; fi
if out | grep -q "^diagnosis"; then ok "has a diagnosis section"; else bad "no diagnosis section"; fi
rm -f /tmp/e2e.best.$$

# The compendium
expect_exit 0 "knowledge check" -- $PRAGMA knowledge check --json
jcheck "no problems" "j['problems']==0 and j['entries'] >= 90"
expect_exit 0 "knowledge list" -- $PRAGMA knowledge list --json
jcheck "metrics and playbooks" "sum(e['kind']=='metric' for e in j['entries'])>=80 and sum(e['kind']=='playbook' for e in j['entries'])>=10"
expect_exit 0 "knowledge show a metric" -- $PRAGMA knowledge show sim.d1_miss_rate --json
jcheck "entry with sources" "j['entry']['unit']=='%' and len(j['entry']['sources'])>=1 and 'valgrind' in ' '.join(j['entry']['sources']).lower()"
expect_exit 2 "knowledge show unknown" -- $PRAGMA knowledge show no.such.thing
grep_err "hint to search" "knowledge search"
expect_exit 0 "knowledge search" -- $PRAGMA knowledge search non-temporal stores --json
jcheck "finds the streaming-store entries" "any(h['name'] in ('static.nt_stores','memory-bound') for h in j['hits'][:5])"
expect_exit 0 "knowledge prompt" -- $PRAGMA knowledge prompt --metrics roof.pct_roof,par.utilization --bottlenecks low-parallelism
if out | grep -q "omp parallel for"; then ok "prompt carries the playbook's remedies"; else bad "no remedies in the prompt"; fi
expect_exit 2 "knowledge prompt with an unknown metric" -- $PRAGMA knowledge prompt --metrics bogus.metric

D=$(mktemp -d /tmp/pragma-e2e-kb-XXXXXX)
printf '# Events\n\ncycles counts core cycles.\n\n# More\n\nbranch-misses counts mispredicted branches, and cycles again.\n' > $D/perf-list.txt
expect_exit 0 "knowledge build with a stand-in summarizer" -- $PRAGMA knowledge build $D/perf-list.txt --tool perf \
	--out $D/reference/perf.json --chunk-bytes 60 --llm "exec:/usr/bin/python3 $K/fake_summarizer.py" --no-cache --json
jcheck "every chunk summarized, duplicates merged" "j['chunks']>=2 and j['summarized']==j['chunks'] and j['entries']==2 and j['merged_by_llm']==1"
$PY -c "import json; d=json.load(open('$D/reference/perf.json')); assert {e['name'] for e in d['entries']}=={'cycles','branch-misses'}" \
	&& ok "reference file written" || bad "reference file wrong"
expect_exit 3 "knowledge build without a model" -- env -u PRAGMA_LLM $PRAGMA knowledge build $D/perf-list.txt --out $D/x.json
rm -rf "$D"
finish
