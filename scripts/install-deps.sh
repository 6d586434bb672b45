#!/usr/bin/env bash
# Installs every Debian package pragma builds, runs or tests with.
# Idempotent: packages already present are left alone, and apt is only
# consulted when something is missing.
set -euo pipefail

pkgs=(
	build-essential cmake pkg-config git
	gcc clang libomp-14-dev libclang-rt-14-dev
	libcurl4-openssl-dev libjansson-dev libsqlite3-dev libcmocka-dev libseccomp-dev
	binutils valgrind linux-perf
	patchelf # scripts/gpu-bundle.sh
	llvm-19 # llvm-mca-19 for the mca collector: Zen 4/5 models and a corrected Zen 3 one (llvm-mca 14 works too)
	python3 python3-torch python3-numpy libopenblas0-pthread
	libtcmalloc-minimal4
	chromium # headless, for the HTML report test (tests/e2e/report_html.sh)
	slurm-wlm munge # a one-node Slurm for bench --executor slurm (scripts/slurm-dev.sh, tests/e2e/bench_slurm.sh)
)

missing=()
for p in "${pkgs[@]}"; do
	dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done

if [ "${#missing[@]}" -eq 0 ]; then
	echo "install-deps: all ${#pkgs[@]} packages present"
	exit 0
fi

SUDO=
[ "$(id -u)" -eq 0 ] || SUDO=sudo
echo "install-deps: installing ${missing[*]}"
$SUDO apt-get update -q
DEBIAN_FRONTEND=noninteractive $SUDO apt-get install -y -q --no-install-recommends "${missing[@]}"
