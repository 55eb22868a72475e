#!/usr/bin/env bash
# Builds libFuzzer targets with clang (ASan + UBSan, in build/fuzz) and runs each for a bounded
# time from its corpus in the repository (fuzz/README.md). CI runs it with the default targets;
# a crash fails it and prints the input that crashed, hex-encoded.
# Usage: scripts/fuzz.sh [SECONDS_PER_TARGET [TARGET...]]
#   default: 20 s each for http_request_fuzzer and config_fuzzer; the reader and Parquet fuzzers
#   can be named as well.
set -euo pipefail
cd "$(dirname "$0")/.."
root=$(pwd)
secs=${1:-20}
shift || true
targets=("$@")
((${#targets[@]})) || targets=(http_request_fuzzer config_fuzzer)
# Each target's seed directories (space-separated, relative to the repository root).
pq_seeds="tests/parquet_fixtures tests/golden/parquet"
declare -A corpus=([http_request_fuzzer]=fuzz/corpus/http [config_fuzzer]=fuzz/corpus/config
                   [text_reader_fuzzer]=fuzz/corpus/text
                   [idx_reader_fuzzer]=fuzz/corpus/idx [parquet_reader_fuzzer]=$pq_seeds
                   [parquet_writer_fuzzer]=$pq_seeds [parquet_fuzzer]=$pq_seeds)
declare -A max_len=([http_request_fuzzer]=8192 [config_fuzzer]=16384
                    [text_reader_fuzzer]=4096 [idx_reader_fuzzer]=4096
                    [parquet_reader_fuzzer]=200000 [parquet_writer_fuzzer]=200000 [parquet_fuzzer]=200000)
launcher=()
command -v ccache >/dev/null && launcher=(-DCMAKE_CXX_COMPILER_LAUNCHER=ccache -DCMAKE_C_COMPILER_LAUNCHER=ccache)
cmake -S . -B build/fuzz -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DCMAKE_CXX_COMPILER=clang++ \
  -DCMAKE_C_COMPILER=clang -DRECTRAIN_BUILD_FUZZERS=ON -DRECTRAIN_BUILD_TESTS=OFF \
  -DRECTRAIN_BUILD_BENCHMARKS=OFF -DRECTRAIN_BUILD_UI=OFF "${launcher[@]}" >/dev/null
cmake --build build/fuzz -j"$(nproc)" --target "${targets[@]}"
for t in "${targets[@]}"; do
  bin=$(find build/fuzz -name "$t" -type f -perm -u+x | head -1)
  work=$(mktemp -d "${TMPDIR:-/tmp}/rectrain_fuzz_XXXXXX")
  mkdir -p "$work/new"
  seeds=()
  for d in ${corpus[$t]}; do seeds+=("$root/$d"); done
  echo "== $t: ${secs} s from ${corpus[$t]}"
  # New units go to $work/new (the first corpus directory); the repository's stays as it is.
  if ! (cd "$work" && "$root/$bin" -max_total_time="$secs" -max_len="${max_len[$t]}" -timeout=10 \
          -rss_limit_mb=2048 -print_final_stats=1 -artifact_prefix="$work/" new "${seeds[@]}" \
          > "$work/log" 2>&1); then
    tail -40 "$work/log"
    for a in "$work"/crash-* "$work"/leak-* "$work"/timeout-* "$work"/oom-*; do
      [ -f "$a" ] && { echo "input $(basename "$a"):"; od -An -tx1 -v "$a" | head -40; }
    done
    echo "FAIL: $t (artifacts in $work)"
    exit 1
  fi
  grep -E "^(Done|stat::number_of_executed_units|stat::peak_rss_mb)|cov: .* ft: " "$work/log" | tail -4
  rm -rf "$work"
done
