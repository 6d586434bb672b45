#!/usr/bin/env bash
# Build pragma here and bundle it for a GPU machine that has nvcc, ncu and a
# CUDA PyTorch but not pragma's libraries (jansson, curl, sqlite, seccomp):
#
#   scripts/gpu-bundle.sh [--build-dir DIR] [--out DIR] [--no-build]
#
# Output (default build-gpu/, gitignored, inside the repository so that a
# device run can carry it: carry ["build-gpu"]):
#
#   build-gpu/pragma            wrapper: PRAGMA_HOME = this repository, then bin/pragma
#   build-gpu/bin/              pragma, pragma-harness, pragma-cuda-harness
#   build-gpu/lib/              every shared library they need that is not
#                               part of glibc, the compiler runtime or CUDA
#   build-gpu/MANIFEST          what is in it, from where, and the newest glibc symbol needed
#
# The binaries find lib/ through their own RPATH ($ORIGIN/../lib, set with
# patchelf, as DT_RPATH so that it also covers the libraries' own
# dependencies), not through LD_LIBRARY_PATH: the GPU machine's Python and
# torch, nvcc, gcc and ncu that pragma starts must keep their own libz,
# libzstd and OpenSSL. Left out on purpose: glibc (libc, libm, libdl,
# libpthread, librt, the loader), libgcc_s, libstdc++ and libgomp (the
# machine's compilers bring theirs, and kernels they build must load with
# them), and the CUDA libraries (the machine's driver and toolkit).
set -euo pipefail

ROOT=$(cd "$(dirname "$0")/.." && pwd)
BUILD=$ROOT/build-bundle
OUT=$ROOT/build-gpu
DO_BUILD=1
while [ $# -gt 0 ]; do
	case $1 in
	--build-dir) BUILD=$2; shift 2 ;;
	--out) OUT=$2; shift 2 ;;
	--no-build) DO_BUILD=0; shift ;;
	-h|--help) sed -n '2,24p' "$0"; exit 0 ;;
	*) echo "gpu-bundle: unknown option $1" >&2; exit 2 ;;
	esac
done
command -v patchelf >/dev/null || { echo "gpu-bundle: needs patchelf (apt-get install patchelf)" >&2; exit 3; }

if [ $DO_BUILD = 1 ]; then
	cmake -S "$ROOT" -B "$BUILD" -DCMAKE_BUILD_TYPE=RelWithDebInfo >/dev/null
	cmake --build "$BUILD" -j"$(nproc)" --target pragma_cli pragma-harness pragma_cuda_harness >/dev/null
fi
for b in pragma pragma-harness pragma-cuda-harness; do
	[ -x "$BUILD/$b" ] || { echo "gpu-bundle: $BUILD/$b was not built (no nvcc for the CUDA harness?)" >&2; exit 3; }
done

rm -rf "$OUT"
mkdir -p "$OUT/bin" "$OUT/lib"
for b in pragma pragma-harness pragma-cuda-harness; do
	cp "$BUILD/$b" "$OUT/bin/$b"
	strip --strip-debug "$OUT/bin/$b" 2>/dev/null || true
done

# Libraries the machine brings itself (see the top).
keep_out() {
	case $1 in
	linux-vdso.so*|ld-linux*|libc.so*|libm.so*|libdl.so*|libpthread.so*|librt.so*|libresolv.so*|libutil.so*) return 0 ;;
	libmvec.so*|libanl.so*|libnsl.so*|libBrokenLocale.so*) return 0 ;;
	libgcc_s.so*|libstdc++.so*|libgomp.so*|libatomic.so*) return 0 ;;
	libcuda.so*|libcudart.so*|libnvidia*|libcupti.so*|libnvrtc*) return 0 ;;
	esac
	return 1
}

: >"$OUT/MANIFEST"
declare -A seen=()
for b in "$OUT"/bin/*; do
	# ldd of the build-tree binary: the CUDA harness's RPATH finds libcudart here
	while read -r name arrow path rest; do
		[ "$arrow" = "=>" ] || continue
		keep_out "$name" && continue
		[ -n "${seen[$name]:-}" ] && continue
		if [ ! -f "$path" ]; then
			echo "gpu-bundle: $b needs $name, which is not found here" >&2
			exit 3
		fi
		seen[$name]=1
		cp -L "$path" "$OUT/lib/$name"
		strip --strip-unneeded "$OUT/lib/$name" 2>/dev/null || true
		echo "lib/$name <- $path" >>"$OUT/MANIFEST"
	done < <(ldd "$BUILD/$(basename "$b")")
done

# RPATH: our lib/ first; for the CUDA harness also the toolkit's lib64
# (where it found libcudart at build time, and /usr/local/cuda).
for b in pragma pragma-harness; do
	patchelf --force-rpath --set-rpath '$ORIGIN/../lib' "$OUT/bin/$b"
done
old=$(patchelf --print-rpath "$BUILD/pragma-cuda-harness" 2>/dev/null || true)
patchelf --force-rpath --set-rpath "\$ORIGIN/../lib${old:+:$old}:/usr/local/cuda/lib64" "$OUT/bin/pragma-cuda-harness"
for l in "$OUT"/lib/*; do
	patchelf --force-rpath --set-rpath '$ORIGIN' "$l"
done

cat >"$OUT/pragma" <<'WRAP'
#!/bin/sh
# pragma from this bundle (scripts/gpu-bundle.sh): the data files (include/,
# bridge/, runtime/, tasks/, prompts/, knowledge/) come from the repository
# the bundle sits in; the libraries come through the binaries' RPATH.
here=$(cd "$(dirname "$0")" && pwd)
: "${PRAGMA_HOME:=$(dirname "$here")}"
export PRAGMA_HOME
exec "$here/bin/pragma" "$@"
WRAP
chmod +x "$OUT/pragma"

# What the bundle was built from, so that gpu-check can tell a stale one.
(cd "$ROOT" && find lib src runtime include bridge knowledge prompts CMakeLists.txt -type f -print0 | sort -z |
	xargs -0 sha256sum | sha256sum | cut -d' ' -f1) >"$OUT/SOURCE_HASH"

glibc=$(objdump -T "$OUT"/bin/* "$OUT"/lib/* 2>/dev/null | grep -o 'GLIBC_[0-9.]*' | sort -uV | tail -1)
{
	echo "built on: $(. /etc/os-release && echo "$PRETTY_NAME"), $(ldd --version | head -1)"
	echo "newest glibc symbol needed: $glibc (the GPU machine's glibc must be at least that)"
	echo "nvcc at build: $("$BUILD/pragma" doctor --json 2>/dev/null | python3 -c 'import json,sys; print(next((c["detail"] for c in json.load(sys.stdin)["checks"] if c["name"]=="cuda nvcc"), "?"))' 2>/dev/null || echo '?')"
} >>"$OUT/MANIFEST"
size=$(du -sm "$OUT" | cut -f1)
echo "gpu-bundle: $OUT ($size MiB, $(ls "$OUT/lib" | wc -l) libraries; needs $glibc)"
if [ "$size" -gt 48 ]; then
	echo "gpu-bundle: warning: $size MiB is close to the 64 MiB a device run may carry" >&2
fi
