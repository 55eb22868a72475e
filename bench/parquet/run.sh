#!/bin/sh
# Parquet writer benchmarks (docs/benchmarks.md "Parquet writer", docs/data.md "Parquet export"),
# on ROWS criteo-shape rows from `rectrain data gen` (default 1M, 243 MB of TSV):
#  1. write: `rectrain data convert --to parquet` (zstd, snappy) and DuckDB's COPY of the same
#     TSV (tests/parquet_fixtures/make_criteo_parquet.mjs), interleaved, REPS times: wall seconds
#     and user+sys CPU seconds of each process (/usr/bin/time), rows/s and MB/s of TSV;
#  2. sizes: the TSV, rectrain's files (zstd, snappy, none), DuckDB's (zstd, snappy);
#  3. read back by rectrain's reader (data_reader_benchmark BM_ReadParquet, batches of 4096, the
#     default transforms; 1 and 2 workers): rectrain's files vs DuckDB's, interleaved, REPS times;
#  4. row-group size: the same rows written with 16k .. 512k rows per row group, read back with 1
#     and 2 workers (interleaved, REPS times), and the file sizes;
#  5. compaction: the first 200k rows as ~400 small parts of one 500-row row group each
#     (`--target-size`), compacted into one file by `data convert` (timed), both read back.
# Prints one line per measurement ("write rectrain zstd: ...", "read duckdb_zstd t1: ...") and
# the CPU's AVX-512 flags. Needs the release build and npm (for DuckDB).
# Usage: sh bench/parquet/run.sh [WORK_DIR]   (from the repository root; ROWS=, REPS= to change,
#        SECTIONS="write read rowgroups compaction" to run some)
set -eu
R=$(pwd)
B=$R/build/release/rectrain
BM=$R/build/release/src/rectrain/data/data_reader_benchmark
W=${1:-bench-parquet}
ROWS=${ROWS:-1000000}
REPS=${REPS:-3}
SECTIONS=${SECTIONS:-write read rowgroups compaction}
has() { case " $SECTIONS " in *" $1 "*) return 0 ;; esac; return 1; }
NPM=$R/build/release/tests/parquet_npm
mkdir -p "$W" && cd "$W"
sh "$R/tests/parquet_fixtures/npm_install.sh" "$NPM"
echo "cpu: $(grep -m1 'model name' /proc/cpuinfo | cut -d: -f2 | sed 's/^ //'), $(nproc) cores;" \
     "$(grep -o 'avx512[a-z_0-9]*' /proc/cpuinfo | sort -u | tr '\n' ' ')"
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
[ -f x.tsv ] || "$B" data gen --rows "$ROWS" --out x.tsv --seed 1 > /dev/null
tsv_mb=$(awk "BEGIN { print $(wc -c < x.tsv) / 1e6 }")

# timed LABEL CMD...: wall and CPU seconds of CMD, rows/s and MB/s of input (t_rows rows, t_mb MB).
t_rows=$ROWS
t_mb=$tsv_mb
timed() {
  label=$1; shift
  /usr/bin/time -f "%e %U %S" -o t.txt "$@" > /dev/null 2>&1 || { echo "$label failed"; return; }
  awk -v l="$label" -v rows="$t_rows" -v mb="$t_mb" '{ cpu = $2 + $3;
    printf "write %s: %.2f s wall, %.2f CPU-s, %.0f rows/s, %.1f MB/s (wall); %.0f rows per CPU-s\n",
           l, $1, cpu, rows / $1, mb / $1, rows / cpu }' t.txt
}
if has write; then
i=0
while [ $i -lt "$REPS" ]; do
  for codec in zstd snappy; do
    rm -f "rt_$codec.parquet"
    timed "rectrain $codec" "$B" data convert x.tsv --to parquet --codec "$codec" --out "rt_$codec.parquet"
    rm -f "dd_$codec.parquet"
    timed "duckdb $codec" node "$NPM/make_criteo_parquet.mjs" "$PWD/x.tsv" "$PWD/dd_$codec.parquet" "$codec"
  done
  i=$((i + 1))
done
"$B" data convert x.tsv --to parquet --codec none --out rt_none.parquet > /dev/null
for f in x.tsv rt_zstd.parquet rt_snappy.parquet rt_none.parquet dd_zstd.parquet dd_snappy.parquet; do
  echo "size $f: $(wc -c < "$f") bytes"
done
fi

# read LABEL FILE THREADS: one BM_ReadParquet measurement.
read_back() {
  RECTRAIN_BENCH_PARQUET=$2 "$BM" --benchmark_filter="BM_ReadParquet/$3/" 2> /dev/null | grep BM_ReadParquet |
    sed -E "s/.*rows\/s=([0-9.]+[kM]?).*rows_per_cpu_s=([0-9.]+[kM]?).*/read $1 t$3: \1 rows\/s wall, \2 rows per CPU-s/"
}
if has read; then
i=0
while [ $i -lt "$REPS" ]; do
  for t in 1 2; do
    for f in rt_zstd dd_zstd rt_snappy dd_snappy; do read_back "$f" "$f.parquet" "$t"; done
  done
  i=$((i + 1))
done
fi

if has rowgroups; then
for rg in 16384 32768 65536 131072 262144 524288; do
  [ -f "rg_$rg.parquet" ] || "$B" data convert x.tsv --to parquet --out "rg_$rg.parquet" --row-group-rows "$rg" > /dev/null
  echo "size rg_$rg.parquet: $(wc -c < "rg_$rg.parquet") bytes"
done
i=0
while [ $i -lt "$REPS" ]; do
  for rg in 16384 32768 65536 131072 262144 524288; do
    for t in 1 2; do read_back "rg_$rg" "rg_$rg.parquet" "$t"; done
  done
  i=$((i + 1))
done
fi

if has compaction; then
head -n 200000 x.tsv > x200k.tsv
rm -rf small && "$B" data convert x200k.tsv --to parquet --out small --target-size 24KiB --row-group-rows 500 > /dev/null
echo "small parts: $(ls small | wc -l) files, $(cat small/*.parquet | wc -c) bytes"
t_rows=200000
t_mb=$(awk "BEGIN { print $(cat small/*.parquet | wc -c) / 1e6 }")
i=0
while [ $i -lt "$REPS" ]; do
  rm -f compact.parquet
  timed "compaction of $(ls small | wc -l) parts" "$B" data convert 'small/part-*.parquet' --to parquet \
    --out compact.parquet
  for t in 1 2; do
    read_back "small_parts" "small/part-*.parquet" "$t"
    read_back "compacted" "compact.parquet" "$t"
  done
  i=$((i + 1))
done
echo "size compact.parquet: $(wc -c < compact.parquet) bytes"
fi
echo "load: $(cut -d' ' -f1-3 /proc/loadavg)"
