#!/usr/bin/env bash
# Fuzz the .npy parser with libFuzzer for N seconds (default 60) and keep
# new interesting inputs (and any crasher) in tests/fuzz/npy-corpus.
set -euo pipefail
cd "$(dirname "$0")/../.."
secs=${1:-60}
out=$(mktemp -d)
clang -g -O1 -fsanitize=fuzzer,address,undefined -D_GNU_SOURCE -Iinclude \
	tests/fuzz/fuzz_npy.c lib/util/tensor.c lib/util/buf.c lib/util/err.c lib/util/fs.c lib/util/hash.c \
	-o "$out/fuzz_npy" -lm
"$out/fuzz_npy" -max_total_time="$secs" -max_len=4096 -artifact_prefix=tests/fuzz/npy-corpus/crash- \
	tests/fuzz/npy-corpus
rm -rf "$out"
