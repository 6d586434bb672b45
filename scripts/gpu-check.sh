#!/usr/bin/env bash
# The GPU path, exercised on a machine with an NVIDIA GPU in about six
# minutes, ending with a table (check | result | detail):
#
#   doctor            what pragma sees: nvcc, the CUDA harness, the device, ncu, a CUDA torch
#   eval relu         a correct relu against PyTorch eager on the GPU, and torch.compile
#   verify helper     a kernel with an ordinary __device__ helper (issue 12: was link_forbidden)
#   profile ncu       Nsight Compute inside the sandbox: gpu.* metrics (issue 12: chmod trapped)
#   optimize          3 attempts with scripted replies (slow, fast, wrong) from the fake LLM
#                     server: the fast kernel must win and the Conductor's requests must carry
#                     gpu.* metrics (checked in the requests the server recorded)
#   eval softmax      a row softmax;  eval matmul: a 32x32-tiled FP32 matmul
#   e2e cheats        tests/e2e/cuda_cheats.sh: every CUDA cheat gets its category
#   e2e verify/profile tests/e2e/cuda_verify.sh, cuda_profile.sh
#
# Needs only the repository and a build: build-gpu/ (scripts/gpu-bundle.sh,
# for machines without jansson/curl/sqlite/seccomp) or build/. State lives
# under /tmp; with $OUT set (a device run) the table (results.tsv) and the
# logs (logs.tgz, one archive: a device run brings back few files) are saved
# there as each step ends (a device command may be cut off at its limit);
# no step runs past GPU_CHECK_HARD_LIMIT seconds (560). Exit 0 when nothing
# failed.
#
#   scripts/gpu-check.sh [--budget SECONDS] [--only NAME,...] [--keep] [--suite]
#
# --suite also times every tasks/gpu-l1 problem's PyTorch eager baseline on
# the GPU at full size (one input set, made on the CPU) next to the estimate
# of tasks/gpu-l1/README.md: a few more minutes.
#
# Environment: PRAGMA (the binary), PRAGMA_PYTHON (default
# /opt/torch/.venv/bin/python3 when present), PRAGMA_NCU.
set -u

ROOT=$(cd "$(dirname "$0")/.." && pwd)
cd "$ROOT"
BUDGET=360
ONLY=
KEEP=0
FORCE=0
SUITE=0
NODEV=
while [ $# -gt 0 ]; do
	case $1 in
	--budget) BUDGET=$2; shift 2 ;;
	--only) ONLY=,$2,; shift 2 ;;
	--keep) KEEP=1; shift ;;
	--force) FORCE=1; shift ;; # run the steps without a device too (to test this script)
	--suite) SUITE=1; shift ;;
	-h|--help) sed -n '2,30p' "$0"; exit 0 ;;
	*) echo "gpu-check: unknown option $1" >&2; exit 2 ;;
	esac
done

if [ -z "${PRAGMA:-}" ]; then
	if [ -x "$ROOT/build-gpu/pragma" ]; then
		PRAGMA=$ROOT/build-gpu/pragma
		BIN=$ROOT/build-gpu/bin
	elif [ -x "$ROOT/build/pragma" ]; then
		PRAGMA=$ROOT/build/pragma
		BIN=$ROOT/build
	else
		echo "gpu-check: no build: run scripts/gpu-bundle.sh (or cmake --build build)" >&2
		exit 3
	fi
else
	BIN=$(dirname "$(readlink -f "$PRAGMA")")
	[ -x "$BIN/pragma-cuda-harness" ] || BIN=$(dirname "$PRAGMA")/bin
fi
export PRAGMA
STATE=$(mktemp -d /tmp/pragma-gpu-check-XXXXXX)
export PRAGMA_CACHE_DIR=$STATE/cache XDG_CONFIG_HOME=$STATE/config PRAGMA_DB=$STATE/runs.db
export PRAGMA_HOME=${PRAGMA_HOME:-$ROOT}
mkdir -p "$PRAGMA_CACHE_DIR" "$XDG_CONFIG_HOME"
if [ -z "${PRAGMA_PYTHON:-}" ] && [ -x /opt/torch/.venv/bin/python3 ]; then
	export PRAGMA_PYTHON=/opt/torch/.venv/bin/python3
fi
# A Python for this script's own JSON reading and the fake LLM server
# (standard library only).
PY=
for p in /usr/bin/python3 "$(command -v python3 2>/dev/null)" "${PRAGMA_PYTHON:-}"; do
	[ -n "$p" ] && [ -x "$p" ] && { PY=$p; break; }
done
[ -n "$PY" ] || { echo "gpu-check: no python3 found" >&2; exit 3; }
export PRAGMA_TEST_PY=$PY

START=$SECONDS
RESULTS=$STATE/results.tsv
: >"$RESULTS"
FAILS=0

# A device run (limit_s <= 600) may be cut off: results and logs go to $OUT
# as they come, not only at the end.
OUTDIR=
if [ -n "${OUT:-}" ] && [ -d "${OUT:-}" ]; then
	OUTDIR=$OUT/gpu-check
	mkdir -p "$OUTDIR"
fi
HARD=${GPU_CHECK_HARD_LIMIT:-560} # no step runs past this many seconds

# save: the results and every step's output, as two files in $OUTDIR (a
# device run brings back only a few files: one archive holds them all)
save() {
	[ -n "$OUTDIR" ] || return 0
	cp "$RESULTS" "$OUTDIR/results.tsv" 2>/dev/null
	(cd "$STATE" && tar czf "$OUTDIR/logs.tgz.tmp" --ignore-failed-read $(ls *.out *.err *.txt *.tsv \
		optimize/requests.jsonl 2>/dev/null)) 2>/dev/null && mv "$OUTDIR/logs.tgz.tmp" "$OUTDIR/logs.tgz"
}

record() { # CHECK RESULT DETAIL
	printf '%s\t%s\t%s\n' "$1" "$2" "$(echo "$3" | tr '\t\n' '  ' | cut -c1-300)" >>"$RESULTS"
	save
	[ "$2" = FAIL ] && FAILS=$((FAILS + 1))
	printf '[%4ds] %-18s %-5s %s\n' $((SECONDS - START)) "$1" "$2" "$(echo "$3" | tr '\n' ' ' | cut -c1-200)"
}

# want NAME: run this step? (--only, and the time budget)
want() {
	if [ -n "$ONLY" ] && [[ $ONLY != *",$1,"* ]]; then return 1; fi
	if [ -n "$NODEV" ]; then
		record "$1" SKIP "$NODEV"
		return 1
	fi
	if [ $((SECONDS - START)) -ge "$BUDGET" ]; then
		record "$1" SKIP "the ${BUDGET} s budget is spent"
		return 1
	fi
	return 0
}

# run NAME TIMEOUT cmd...: output in $STATE/NAME.out / .err, exit code in RC
run() {
	local name=$1 t=$2 left
	shift 2
	left=$((HARD - (SECONDS - START)))
	[ "$left" -lt "$t" ] && t=$left
	if [ "$t" -lt 5 ]; then
		echo "gpu-check: no time left (hard limit ${HARD} s)" >"$STATE/$name.err"
		: >"$STATE/$name.out"
		RC=124
		return
	fi
	timeout --kill-after=10 "$t" "$@" >"$STATE/$name.out" 2>"$STATE/$name.err"
	RC=$?
	[ $RC = 124 ] && echo "gpu-check: timed out after $t s" >>"$STATE/$name.err"
	save
}

# jq-less JSON: j NAME EXPR evaluates EXPR with j = the JSON in NAME.out
j() {
	"$PY" -c "import json,sys
try:
    j = json.load(open('$STATE/$1.out'))
except Exception as e:
    print('(no JSON: %s)' % e); sys.exit(0)
try:
    v = ($2)
except Exception as e:
    v = '(%s: %s)' % (type(e).__name__, e)
print(v)" 2>/dev/null
}

errtail() { tail -c 400 "$STATE/$1.err" | tr '\n' ' '; }

# Small sizes: reference data is made on the CPU, and all of this fits six minutes.
RELU=(tasks/gpu-l1/05_relu.py --set BATCH=2048 --set DIM=8192)
SOFTMAX=(tasks/gpu-l1/07_softmax.py --set BATCH=1024 --set DIM=16384)
MATMUL=(tasks/gpu-l1/01_matmul_square.py --set N=2048)
EVAL_OPTS=(--rounds 5 --sessions 1 --reps 5 --max-wait 0)

echo "gpu-check: $PRAGMA (state in $STATE)"
# A bundle built from other sources than these gives confusing failures.
if [ -f "$(dirname "$BIN")/SOURCE_HASH" ]; then
	now=$(find lib src runtime include bridge knowledge prompts CMakeLists.txt -type f -print0 | sort -z |
		xargs -0 sha256sum | sha256sum | cut -d' ' -f1)
	if [ "$now" = "$(cat "$(dirname "$BIN")/SOURCE_HASH")" ]; then
		record bundle PASS "$(dirname "$BIN") matches the sources"
	else
		record bundle WARN "$(dirname "$BIN") was built from other sources: run scripts/gpu-bundle.sh again"
	fi
fi
echo "gpu-check: $(nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader 2>/dev/null | head -1 || echo 'nvidia-smi: none')"

# ---------------------------------------------------------------- doctor
if want doctor; then
	run doctor 180 "$PRAGMA" doctor --json
	dev=$(j doctor "next((c['status']+': '+c['detail'] for c in j['checks'] if c['name']=='cuda device'), '?')")
	ncu=$(j doctor "next((c['status']+': '+c['detail'] for c in j['checks'] if c['name']=='cuda ncu'), '?')")
	tor=$(j doctor "next((c['status']+': '+c['detail'] for c in j['checks'] if c['name']=='cuda torch'), '?')")
	if [[ $dev == ok:* ]]; then record doctor PASS "device ${dev#ok: }; ncu ${ncu}; torch ${tor}"; else
		record doctor FAIL "device $dev; ncu $ncu; torch $tor"; fi
fi
# Nothing below means anything without a device.
if ! "$BIN/pragma-cuda-harness" probe >"$STATE/probe.out" 2>&1; then
	record probe FAIL "pragma-cuda-harness probe: $(head -c 300 "$STATE/probe.out")"
	[ $FORCE = 1 ] || NODEV="no CUDA device (see probe)"
fi

# ------------------------------------------------------------- eval relu
if want eval-relu; then
	run eval-relu 240 "$PRAGMA" eval "${RELU[@]}" tests/cuda/kernels/relu.cu "${EVAL_OPTS[@]}" --json
	st=$(j eval-relu "j['status']")
	if [ "$st" = ok ]; then
		record eval-relu PASS "$(j eval-relu "'%.2fx vs PyTorch eager (%s, torch %s, %s)' % (j['speedup'], j['baseline']['kind'], j['baseline']['config'].get('torch'), j['baseline']['config'].get('device'))")"
	else
		record eval-relu FAIL "status $st: $(j eval-relu "j.get('message')") $(errtail eval-relu)"
	fi
	sb=$(j eval-relu "(j.get('second_baselines') or [{}])[0]")
	if [[ $sb == *median_ms* ]]; then
		record torch.compile PASS "$(j eval-relu "'vs torch.compile %.2fx: median %.4g ms, %s' % (j['second_baselines'][0]['speedup'], j['second_baselines'][0]['median_ms'], j['second_baselines'][0]['config'].get('compile'))")"
	elif [[ $sb == *unavailable* ]]; then
		record torch.compile WARN "$(j eval-relu "j['second_baselines'][0]['unavailable']")"
	else
		record torch.compile FAIL "no second baseline in eval's output: $sb"
	fi
fi

# ------------------------------------------------- a __device__ helper
if want verify-helper; then
	run verify-helper 180 "$PRAGMA" verify "${RELU[@]}" tests/cuda/kernels/helper_relu.cu --json
	st=$(j verify-helper "j['status']")
	if [ "$st" = ok ]; then record verify-helper PASS "__device__ void f(float &x, ...) verified on the GPU"; else
		record verify-helper FAIL "status $st: $(j verify-helper "j.get('message')")"; fi
fi

# --------------------------------------------------------- ncu profile
if want profile-ncu; then
	run profile-ncu 300 "$PRAGMA" profile "${RELU[@]}" tests/cuda/kernels/relu.cu --json
	have=$(j profile-ncu "sorted(k for k in j['metrics'] if k.startswith('gpu.'))")
	if [[ $have == *gpu.duration_us* ]]; then
		record profile-ncu PASS "$(j profile-ncu "', '.join('%s=%.4g' % (k, j['metrics'][k]['value']) for k in ('gpu.duration_us','gpu.dram_throughput_pct','gpu.achieved_occupancy','gpu.sectors_per_request') if k in j['metrics'])") ($(j profile-ncu "len([k for k in j['metrics'] if k.startswith('gpu.')])") gpu.* metrics)"
	else
		why=$(j profile-ncu "j.get('unavailable', {}).get('ncu', j.get('message'))")
		record profile-ncu FAIL "no gpu.* metrics: $why $(errtail profile-ncu)"
		if [ -z "$NODEV" ]; then
			# One more run that lets the injection's calls through and names
			# them, and names the files Landlock refused it.
			run profile-learn 300 env PRAGMA_CUDA_PROFILER_LEARN=1 "$PRAGMA" -v profile "${RELU[@]}" tests/cuda/kernels/relu.cu --json
			record profile-learn WARN "$(j profile-learn "[n for n in j.get('notes', []) if 'PRAGMA_CUDA_PROFILER_LEARN' in n] or j.get('unavailable', {}).get('ncu')") gpu.*: $(j profile-learn "len([k for k in j['metrics'] if k.startswith('gpu.')])")"
		fi
	fi
fi

# ------------------------------------------------------------- optimize
if want optimize; then
	W=$STATE/optimize
	mkdir -p "$W"
	"$PY" tests/fixtures/cuda_session/make_script.py "$W/script.json"
	"$PY" tests/fake_llm/fake_llm.py --script "$W/script.json" --log "$W/requests.jsonl" --port-file "$W/port" \
		--max-seconds 900 >/dev/null 2>"$W/server.err" &
	FAKE_PID=$!
	for _ in $(seq 100); do [ -s "$W/port" ] && break; sleep 0.1; done
	run optimize 300 env PRAGMA_LLM_BASE_URL=http://127.0.0.1:$(cat "$W/port")/v1 PRAGMA_LLM_API_KEY=test-key \
		PRAGMA_LLM_BACKOFF_MS=10 "$PRAGMA" optimize --backend cuda tasks/gpu-l1/05_relu.py --set BATCH=1024 --set DIM=8192 \
		--llm openai:fake-model --attempts 3 --db "$W/runs.db" --json
	kill $FAKE_PID 2>/dev/null
	statuses=$(j optimize "[a['status'] for a in j['attempts']]")
	best=$(j optimize "j['best']['attempt']")
	speeds=$(j optimize "['%.3g' % (a.get('speedup') or 0) for a in j['attempts']]")
	if [ $RC = 0 ] && [ "$statuses" = "['ok', 'ok', 'wrong_output']" ] && [ "$best" = 2 ]; then
		record optimize PASS "attempts $statuses, speedups $speeds, best #2 (the fast kernel), final $(j optimize "'%.2fx' % j['best']['speedup']")"
	else
		record optimize FAIL "exit $RC; attempts $statuses, speedups $speeds, best $best; $(j optimize "j.get('message', '')") $(errtail optimize)"
	fi
	# What the Conductor saw: the profile section of its requests.
	"$PY" - "$W/requests.jsonl" >"$STATE/conductor.out" 2>&1 <<'PYEOF'
import json, re, sys
reqs = [json.loads(l) for l in open(sys.argv[1])]
cond = [r for r in reqs if r["headers"].get("x-pragma-agent") == "conductor"]
def text(r):
    return "\n".join(m["content"] for m in r["body"]["messages"] if isinstance(m.get("content"), str))
found = []
for i, r in enumerate(cond):
    t = text(r)
    sec = t.split("Profile of the current kernel", 1)
    prof = sec[1].split("\n## ", 1)[0] if len(sec) > 1 else ""
    names = sorted(set(re.findall(r"\bgpu\.[a-z_0-9]+", prof)))
    found.append((i + 1, names, "sm__inst_executed.sum" in prof))
ok = any(n for _, n, _ in found[:2])
asked = any(a for _, _, a in found[1:2])
print(json.dumps({"requests": len(cond), "ok": ok, "asked_metric_in_attempt2": asked,
                  "per_attempt": [{"attempt": a, "gpu_metrics": n} for a, n, _ in found]}))
PYEOF
	if [ "$(j conductor "j['ok']")" = True ]; then
		record conductor-gpu PASS "$(j conductor "'%d Conductor requests; gpu.* in the profile: ' % j['requests'] + '; '.join('#%d: %d (%s)' % (p['attempt'], len(p['gpu_metrics']), ', '.join(p['gpu_metrics'][:4])) for p in j['per_attempt'])"); the Conductor's ncu:sm__inst_executed.sum in #2: $(j conductor "j['asked_metric_in_attempt2']")"
	else
		record conductor-gpu FAIL "$(head -c 300 "$STATE/conductor.out")"
	fi
fi

# ------------------------------------------------ softmax and matmul
if want eval-softmax; then
	run eval-softmax 240 env PRAGMA_TORCH_COMPILE=0 "$PRAGMA" eval "${SOFTMAX[@]}" tests/cuda/kernels/softmax_rows.cu "${EVAL_OPTS[@]}" --json
	st=$(j eval-softmax "j['status']")
	if [ "$st" = ok ]; then record eval-softmax PASS "$(j eval-softmax "'%.2fx vs PyTorch eager; max rel error %.2g' % (j['speedup'], j['error']['max_rel'])")"; else
		record eval-softmax FAIL "status $st: $(j eval-softmax "j.get('message')") $(errtail eval-softmax)"; fi
fi
if want eval-matmul; then
	run eval-matmul 240 env PRAGMA_TORCH_COMPILE=0 "$PRAGMA" eval "${MATMUL[@]}" tests/cuda/kernels/matmul_tiled.cu "${EVAL_OPTS[@]}" --json
	st=$(j eval-matmul "j['status']")
	if [ "$st" = ok ]; then record eval-matmul PASS "$(j eval-matmul "'%.2fx vs PyTorch eager (cuBLAS, TF32 matmul %s); %.0f GFLOP/s' % (j['speedup'], j['baseline']['config'].get('allow_tf32_matmul'), j.get('gflops') or 0)")"; else
		record eval-matmul FAIL "status $st: $(j eval-matmul "j.get('message')") $(errtail eval-matmul)"; fi
fi

# ------------------------------------------------------------ e2e tests
e2e() { # NAME SCRIPT TIMEOUT
	local name=$1
	if want "$name"; then
		run "$name" "$3" env PRAGMA_TEST_DATA="$ROOT/tests" PRAGMA_BUILD_DIR="$BIN" \
			PRAGMA_CUDA_HARNESS="$BIN/pragma-cuda-harness" PRAGMA_CHEATS_TABLE="$STATE/cheats-table.txt" \
			bash "tests/e2e/$2"
		local line
		line=$(grep -E '^[0-9]+ passed, [0-9]+ failed' "$STATE/$name.out" | tail -1)
		if [ $RC = 0 ]; then record "$name" PASS "$line"; elif [ $RC = 77 ]; then
			record "$name" SKIP "$(tail -1 "$STATE/$name.out")"; else
			record "$name" FAIL "exit $RC; $line; $(grep '^not ok' "$STATE/$name.out" | head -3 | tr '\n' ';')"; fi
	fi
}
e2e e2e-cheats cuda_cheats.sh 300
e2e e2e-verify cuda_verify.sh 240
e2e e2e-profile cuda_profile.sh 240

# ------------------------------------------ the suite's eager baselines
if [ $SUITE = 1 ] && want suite; then
	: >"$STATE/suite.txt"
	n_ok=0
	n=0
	for f in tasks/gpu-l1/*.py; do
		t=$(basename "$f" .py)
		n=$((n + 1))
		[ $((SECONDS - START)) -ge $((BUDGET + 300)) ] && { echo "$t: skipped (time)" >>"$STATE/suite.txt"; continue; }
		run "suite-$t" 300 env PRAGMA_TORCH_COMPILE=0 "$PRAGMA" baseline "$f" --backend cuda --sets 1 --reps 10 --json
		line=$(j "suite-$t" "'%-24s %9.4f ms  estimate %7.2f ms  (%s, %s)' % ('$t', j['stats']['median'], max(j['flops'] / 50e12, j['bytes'] / 3.0e12) * 1e3 if 'conv' not in '$t' or 'depthwise' in '$t' else max(j['flops'] / 400e12, j['bytes'] / 3.0e12) * 1e3, j['config'].get('device_name', j['config'].get('device')), j['config'].get('torch'))")
		echo "$line" >>"$STATE/suite.txt"
		[[ $line == *" ms  estimate"* ]] && n_ok=$((n_ok + 1))
	done
	if [ $n_ok = $n ]; then record suite PASS "$n_ok of $n eager baselines timed on the GPU (suite.txt)"; else
		record suite FAIL "$n_ok of $n eager baselines timed (suite.txt)"; fi
fi

# --------------------------------------------------------------- summary
{
	echo
	gpu=$(nvidia-smi --query-gpu=name --format=csv,noheader 2>/dev/null | head -1)
	echo "gpu-check: $((SECONDS - START)) s on ${gpu:-no GPU}, $(basename "$(dirname "$PRAGMA")")/$(basename "$PRAGMA")"
	printf '%-16s | %-6s | %s\n' check result detail
	printf '%-16s-+-%-6s-+-%s\n' ---------------- ------ ------
	while IFS=$'\t' read -r c r d; do printf '%-16s | %-6s | %s\n' "$c" "$r" "$d"; done <"$RESULTS"
	[ -s "$STATE/cheats-table.txt" ] && { echo; echo "cheats (expected / got):"; cat "$STATE/cheats-table.txt"; }
	[ -s "$STATE/suite.txt" ] && { echo; echo "tasks/gpu-l1, PyTorch eager on the GPU (median of 10) vs the README's estimate:"; cat "$STATE/suite.txt"; }
} | tee "$STATE/summary.txt"

save
[ $KEEP = 1 ] || [ $FAILS != 0 ] && echo "gpu-check: logs in $STATE"
[ $KEEP = 1 ] || [ $FAILS != 0 ] || rm -rf "$STATE"
[ $FAILS = 0 ]
