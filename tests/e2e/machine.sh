#!/bin/bash
# pragma machine: real measurement, the cache file, --measure, bad input.
# Needs PRAGMA (the binary) and /usr/bin/python3 for the JSON checks.
set -u

fail() { echo "FAIL: $*" >&2; exit 1; }

if [ -z "${PRAGMA:-}" ] || [ ! -x "$PRAGMA" ]; then
	fail "PRAGMA is not set to the pragma binary"
fi
PY=/usr/bin/python3
[ -x "$PY" ] || { echo "SKIP: no /usr/bin/python3 to check the JSON"; exit 77; }

tmp=$(mktemp -d "${TMPDIR:-/tmp}/pragma-e2e-machine.XXXXXX") || fail "mktemp"
trap 'rm -rf "$tmp"' EXIT
export PRAGMA_CACHE_DIR="$tmp/cache"
cache="$PRAGMA_CACHE_DIR/machine.json"

now() { date +%s.%N; }

# Plausibility, not performance: the machine is shared and noisy.
check_json() {
	"$PY" - "$1" <<'EOF'
import json, sys
m = json.load(open(sys.argv[1]))
def need(cond, what):
    if not cond:
        sys.exit("implausible machine record: %s\n%s" % (what, json.dumps(m, indent=1)))
for k in ("vendor", "cpu_model", "isa", "kernel", "measured_at", "peak_isa"):
    need(isinstance(m.get(k), str), k + " is a string")
need(m["measured"] is True, "measured")
need(m["cores"] >= 1 and m["online_cpus"] >= 1, "cores")
need(0 < m["peak_gflops_1core"] <= m["peak_gflops"] * 1.001, "1-core peak <= all-core peak")
need(1 < m["peak_gflops"] < 1e6, "peak_gflops %r" % m["peak_gflops"])
need(1 < m["peak_gbs"] < 2000, "peak_gbs %r" % m["peak_gbs"])
# peak_gbs: the highest ever measured (microbenchmarks, protocol roofs, an
# earlier record of this machine), never below any of them.
need(m["peak_gbs"] >= max(m["bw_read_gbs"], m["bw_triad_gbs"], m["bw_ntcopy_gbs"]), "peak_gbs is at least the max")
need(all(m[k] > 0 for k in ("bw_read_gbs", "bw_triad_gbs", "bw_ntcopy_gbs")), "every method ran")
need(isinstance(m["peak_gbs_how"], str) and m["peak_gbs_how"], "peak_gbs_how")
# The roof under the timing protocol: five streaming kernels timed in
# pragma-harness; the roof is the best of them, and never above peak_gbs.
need(m["roof_why"] == "", "roof measured (roof_why %r)" % m["roof_why"])
names = [r["name"] for r in m["roofs"]]
need(names == ["read", "copy", "ntcopy", "triad", "scale"], "roof methods %r" % names)
for r in m["roofs"]:
    need(r["gbs"] > 0 and r["median_ms"] > 0 and r["min_ms"] <= r["median_ms"] and r["calls"] >= 1, "roof %r" % r)
    need(abs(r["gbs"] - r["bytes"] / (r["median_ms"] * 1e6)) < 1e-6 * r["gbs"], "roof GB/s = bytes / median %r" % r)
need(m["roof_gbs"] == max(r["gbs"] for r in m["roofs"]), "roof_gbs is the best method")
need(m["roof_method"] == max(m["roofs"], key=lambda r: r["gbs"])["name"], "roof_method")
need(m["roof_gbs"] <= m["peak_gbs"], "roof_gbs <= peak_gbs")
need("cold cache" in m["roof_protocol"] and "pragma-harness" in m["roof_protocol"], "roof_protocol %r" % m["roof_protocol"])
need("uarch" in m, "uarch key (an object, or null for a CPU pragma does not know)")
need(m["peak_isa"] in ("avx512", "avx2", "sse"), "peak_isa")
need(isinstance(m["caches"], list), "caches")
for c in m["caches"]:
    need(c["size"] > 0 and c["line"] > 0 and c["shared_cpus"] >= 1, "cache level %r" % c)
need(m["cache_file"].endswith("/machine.json"), "cache_file")
EOF
}

field() { "$PY" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

# 1. First run measures and writes the cache.
t0=$(now)
"$PRAGMA" machine --json >"$tmp/1.json" 2>"$tmp/1.err" || { cat "$tmp/1.err"; fail "pragma machine --json exited $?"; }
t1=$(now)
check_json "$tmp/1.json" || fail "first run"
[ -s "$cache" ] || fail "no cache file at $cache"
"$PY" -c 'import json,sys; json.load(open(sys.argv[1]))' "$cache" || fail "cache file is not JSON"

# 2. Second run reuses it: same numbers, same timestamp, much faster.
"$PRAGMA" machine --json >"$tmp/2.json" 2>"$tmp/2.err" || fail "second run exited $?"
t2=$(now)
check_json "$tmp/2.json" || fail "second run"
for k in measured_at peak_gflops peak_gflops_1core bw_read_gbs bw_triad_gbs bw_ntcopy_gbs peak_gbs roof_gbs; do
	[ "$(field "$tmp/1.json" $k)" = "$(field "$tmp/2.json" $k)" ] || fail "second run changed $k: not from the cache"
done
"$PY" -c "import sys; sys.exit(0 if ($t2 - $t1) < ($t1 - $t0) else 1)" ||
	fail "second run ($t1 .. $t2) was not faster than the measuring one ($t0 .. $t1)"

# 3. The human table.
"$PRAGMA" machine >"$tmp/table.txt" 2>/dev/null || fail "pragma machine exited $?"
for word in "CPU" "Caches" "Core" "Micro-architecture" "Clock" "Peak FP32" "GFLOP/s" "Roof" "ntcopy" \
	"inputs read once + outputs written once" "Peak memory" "impossible-speed" "GB/s" "$cache"; do
	grep -qF -- "$word" "$tmp/table.txt" || { cat "$tmp/table.txt"; fail "table lacks '$word'"; }
done

# 4. --measure measures again and rewrites the cache.
sleep 1   # measured_at has one-second resolution
"$PRAGMA" machine --json --measure >"$tmp/3.json" 2>"$tmp/3.err" || fail "--measure exited $?"
check_json "$tmp/3.json" || fail "--measure run"
[ "$(field "$tmp/1.json" measured_at)" != "$(field "$tmp/3.json" measured_at)" ] || fail "--measure did not measure"
[ "$(field "$cache" measured_at)" = "$(field "$tmp/3.json" measured_at)" ] || fail "--measure did not rewrite the cache"

# 5. A corrupt cache is ignored with a warning and replaced.
printf '{"vendor": "AuthenticAMD", trunc' >"$cache"
"$PRAGMA" machine --json >"$tmp/4.json" 2>"$tmp/4.err" || { cat "$tmp/4.err"; fail "corrupt cache: exited $?"; }
grep -q "warning" "$tmp/4.err" || { cat "$tmp/4.err"; fail "corrupt cache: no warning"; }
check_json "$tmp/4.json" || fail "after a corrupt cache"
"$PY" -c 'import json,sys; json.load(open(sys.argv[1]))' "$cache" || fail "corrupt cache not replaced"

# 6. Usage.
"$PRAGMA" machine --help >"$tmp/help.txt" || fail "--help exited $?"
grep -q "usage: pragma machine" "$tmp/help.txt" || fail "--help prints no usage"
"$PRAGMA" machine --bogus >/dev/null 2>&1
[ $? -eq 2 ] || fail "an unknown flag must exit 2"

echo "ok: peak $(field "$tmp/4.json" peak_gflops) GFLOP/s, roof $(field "$tmp/4.json" roof_gbs) GB/s, highest $(field "$tmp/4.json" peak_gbs) GB/s"
