#!/usr/bin/env bash
# Tasks and baselines through the CLI, as a user runs them.
. "$(dirname "$0")/lib.bash"
F=$PRAGMA_TEST_DATA/fixtures

expect_exit 0 "tasks list --json" -- $PRAGMA tasks list --json
jcheck "at least 44 KernelBench and 4 native tasks" \
	"sum(t['kind']=='kernelbench' for t in j['tasks']) >= 44 and sum(t['kind']=='native' for t in j['tasks']) >= 4"
jcheck "all six categories present" \
	"{t['category'] for t in j['tasks']} >= {'matmul','activation','normalization','pooling_reduction','conv','others'}"

expect_exit 0 "tasks show a KernelBench fixture" -- $PRAGMA tasks show $F/kb/small_relu.py --json
jcheck "inputs, outputs, FLOPs and bytes" \
	"j['inputs'][0]['shape']==[8,4096] and j['outputs'][0]['dtype']=='float32' and j['flops']==8*4096 and j['bytes']==2*8*4096*4 and j['category']=='activation'"
expect_exit 0 "tasks show --set overrides a constant" -- $PRAGMA tasks show $F/kb/small_relu.py --set N=1024 --json
jcheck "override changes the shape" "j['inputs'][0]['shape']==[8,1024] and j['overrides']==['N=1024']"
expect_exit 0 "tasks show a built-in conv task" -- $PRAGMA tasks show 47_conv2d_pointwise --json
jcheck "conv has its weight as an input and a FLOP count" \
	"any(i['role']=='param' for i in j['inputs']) and j['flops'] > 0 and j['category']=='conv'"
jcheck "its check audited on input set 0: discriminating" \
	"j['check']['input_set']==0 and j['check']['outputs'][0]['discriminating'] and j['check']['outputs'][0]['atol_effective'] > 0"
# Settings that are no tensor (issue 13): pooling's kernel/stride/padding by
# their names in Model.__init__, the submodule's settings, module constants.
expect_exit 0 "tasks show a pooling task's settings" -- $PRAGMA tasks show 33_max_pool2d --set BATCH=1 --set CHANNELS=2 --json
jcheck "constructor arguments and the submodule's settings" \
	"[(f['name'], f['value']) for f in j['facts'] if f['kind']=='init_arg'] == [('kernel_size','3'),('stride','2'),('padding','1')] and any(f['kind']=='module' and 'padding=1' in f['value'] for f in j['facts'])"
expect_exit 0 "tasks show prints them" -- $PRAGMA tasks show 25_layer_norm --set BATCH=1 --set FEATURES=2 --set DIM1=4 --set DIM2=4
if out | grep -q "Model(normalized_shape=(2, 4, 4))" && out | grep -q "eps=1e-05"; then ok "layer norm's shape and eps shown"; else bad "no settings in tasks show"; fi
expect_exit 0 "a native task's sizes" -- $PRAGMA tasks show prefix_sum --set N=1000 --json
jcheck "sizes after --set" "{'kind':'size','name':'N','value':'1000'} in j['facts']"

expect_exit 2 "syntax error in a problem" -- $PRAGMA tasks show $F/kb/syntax_error.py
grep_err "says file and line" "syntax_error.py:4"
expect_exit 2 "problem without get_inputs" -- $PRAGMA tasks show $F/kb/no_get_inputs.py
grep_err "names the missing function" "get_inputs"
expect_exit 2 "random forward (dropout) refused" -- $PRAGMA tasks show $F/kb/dropout.py
grep_err "says why" "random|[Dd]ropout"
expect_exit 2 "malformed task.json" -- $PRAGMA tasks show $F/tasks/bad_json --json
jcheck "JSON error object" "j['status']=='error' and 'task.json:4' in j['message']"
expect_exit 2 "unknown task" -- $PRAGMA tasks show no_such_task_anywhere
grep_err "hint to list tasks" "pragma tasks list"
expect_exit 2 "bad --set" -- $PRAGMA baseline $F/tasks/good_native --set Q=3
expect_exit 2 "unknown flag" -- $PRAGMA baseline $F/tasks/good_native --frobnicate

expect_exit 0 "baseline of a KernelBench problem" -- $PRAGMA baseline $F/kb/small_relu.py --reps 5 --warmup 1 --json
jcheck "median and protocol recorded" \
	"j['status']=='ok' and j['kind']=='pytorch' and j['stats']['median']>0 and j['stats']['count']==5 and j['config']['protocol']['cold'] and j['config']['protocol']['input_sets']==5"
NPROC=$(nproc)
jcheck "threads = cores, OpenBLAS, tcmalloc" \
	"j['config']['threads']==$NPROC and 'openblas' in j['config']['blas'] and j['config']['allocator']=='tcmalloc'"

# The baseline's 5 sets (its first is the one the first `tasks show` checked
# its tolerance on), plus input set 0 of every other task `tasks show` checked
# (small_relu N=1024, the conv, max_pool2d, layer_norm, prefix_sum).
expect_exit 0 "cache holds 10 reference sets" -- $PRAGMA cache --json
jcheck "10 entries" "j['reference_entries']==10 and j['reference_bytes']>0"

expect_exit 0 "baseline of a native task" -- $PRAGMA baseline $F/tasks/good_native --reps 5 --json
jcheck "native baseline is the C reference" \
	"j['kind']=='c-reference' and j['stats']['median']>0 and j['config']['source']=='reference.c'"
expect_exit 0 "human output" -- $PRAGMA baseline $F/tasks/good_native --reps 3 --sets 2
if out | grep -q "median"; then ok "human output has a median"; else bad "no median in human output"; fi

expect_exit 0 "cache prune to zero" -- $PRAGMA cache prune --max 0 --json
jcheck "everything evicted" "j['entries_left']==0 and j['freed_bytes']>0"
expect_exit 0 "cache clear" -- $PRAGMA cache clear --json

finish
