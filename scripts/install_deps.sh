#!/usr/bin/env bash
# Installs every Debian package rectrain needs to build, test and benchmark.
# Usage: scripts/install_deps.sh [--peer]   (--peer adds PyTorch etc. for the benchmark peer)
set -euo pipefail
PKGS=(build-essential cmake ninja-build pkg-config git
      libdnnl-dev ocl-icd-opencl-dev libyaml-cpp-dev nlohmann-json3-dev
      libgtest-dev libgmock-dev libbenchmark-dev libzstd-dev zlib1g-dev
      libsnappy-dev liblz4-dev libxxhash-dev
      libsqlite3-dev libcpp-httplib-dev prometheus prometheus-alertmanager chromium
      librdkafka-dev libhiredis-dev redis-server
      libopenmpi-dev openmpi-bin iproute2 dataset-fashion-mnist
      curl wrk
      libcurl4-openssl-dev libssl-dev openssl ca-certificates python3-boto3
      python3
      clang libclang-rt-14-dev)   # libFuzzer targets (scripts/fuzz.sh, run by scripts/test.sh)
if [[ "${1:-}" == "--peer" ]]; then
  # libopenblas0-pthread: without it libblas.so.3 is the unoptimised reference BLAS and the
  # PyTorch peer runs its GEMMs ~10x slower than the environment it is documented for.
  PKGS+=(python3-torch python3-pandas python3-sklearn python3-numpy libopenblas0-pthread)
fi
SUDO=""; [[ $(id -u) -ne 0 ]] && SUDO=sudo
missing=()
for p in "${PKGS[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if ((${#missing[@]})); then
  export DEBIAN_FRONTEND=noninteractive
  $SUDO apt-get update -qq
  $SUDO apt-get install -y -qq --no-install-recommends "${missing[@]}"
fi
# The web UI is built with npm (Vite 7 needs Node.js >= 20; the machine image ships Node 20).
if ! command -v npm >/dev/null 2>&1; then
  echo "install_deps: npm not found; installing Debian's nodejs/npm (Node 18 is too old for the UI" \
       "build: install Node.js 20 or configure with -DRECTRAIN_BUILD_UI=OFF)" >&2
  $SUDO apt-get install -y -qq --no-install-recommends nodejs npm
fi
