#!/usr/bin/env bash
# The README's test command: installs dependencies, builds the release preset, runs every
# test with ctest, then the libFuzzer targets for a bounded time from their corpora
# (scripts/fuzz.sh; RECTRAIN_FUZZ_SECONDS per target, default 20, 0 skips). Set
# RECTRAIN_TEST_SANITIZERS=1 to also build and test the ASan+UBSan preset.
set -euo pipefail
cd "$(dirname "$0")/.."
bash scripts/install_deps.sh
bash scripts/build.sh release
ctest --preset release
if [[ "${RECTRAIN_FUZZ_SECONDS:-20}" != 0 ]]; then
  bash scripts/fuzz.sh "${RECTRAIN_FUZZ_SECONDS:-20}"
fi
if [[ "${RECTRAIN_TEST_SANITIZERS:-0}" == 1 ]]; then
  bash scripts/build.sh dev
  ctest --preset dev -LE slow
fi
