#!/bin/sh
# ctest parquet_writer_duckdb_test: Parquet written by `rectrain data convert --to parquet`, read
# by two independent readers, DuckDB (@duckdb/node-api) and parquet-wasm (arrow-rs), installed
# from tests/parquet_fixtures/package-lock.json with `npm ci` (kept in the build tree and
# reinstalled when the lock file changes). tests/parquet_fixtures/check_rectrain_writer.mjs checks:
#   criteo TSV (data gen, 20,000 rows) with zstd, snappy and no compression, and as parts of a
#     target size: schema (INTEGER label, BIGINT I*, VARCHAR C*), every value in row order
#     against DuckDB's own read_csv of the TSV, the codec of every chunk, RLE_DICTIONARY on the
#     categorical columns, min/max/null statistics against the values; parquet-wasm reads them;
#   csv with quoted fields, UTF-8, empty fields, an unused column: the same against read_csv;
#   libsvm: labels, dense indices, the bag of indices as VARCHAR[];
#   a Parquet input (the DuckDB fixture: nulls, booleans, floats, lists) written again: every
#     value equals the fixture's.
# Skipped (exit 77) only when npm or node is missing: scripts/install_deps.sh installs them.
# Usage: parquet_writer_duckdb_test.sh RECTRAIN_BINARY SOURCE_DIR NPM_DIR
set -eu
bin=$1
src=$2
npm_dir=$3
fail() { echo "FAIL: $*" >&2; exit 1; }
rc=0
sh "$src/tests/parquet_fixtures/npm_install.sh" "$npm_dir" || rc=$?
[ "$rc" -ne 77 ] || { echo "SKIP: npm/node not found (scripts/install_deps.sh installs them)"; exit 77; }
[ "$rc" -eq 0 ] || fail "npm ci (above)"

tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
cd "$tmp"
convert() { "$bin" data convert "$@" > out.txt 2>&1 || { cat out.txt; fail "data convert $*"; }; }

"$bin" data gen --rows 20000 --out g.tsv --seed 3 > /dev/null
for codec in zstd snappy none; do
  convert g.tsv --to parquet --out "g_$codec.parquet" --codec "$codec" --row-group-rows 6000
done
convert g.tsv --to parquet --out g_parts --target-size 400KiB --row-group-rows 2000

{
  echo 'label,age,score,city,note'
  echo '1,34,0.1,Zürich,"a note, with a comma"'
  echo '0,,-2.5e3,"New York, NY","say ""hi"""'
  echo '1,007,1e-7,São Paulo,'
  echo '0,-12,3,,plain'
  i=0
  while [ $i -lt 300 ]; do
    echo "$((i % 2)),$((i % 90)),$i.25,city$((i % 7)),n$i"
    i=$((i + 1))
  done
} > r.csv
convert r.csv --to parquet --out r.parquet --format csv --header --dense age,score --sparse city

printf '1 1:0.5 7:1 9:1\n-1 3:1 007:1\n+1 2:4 4:1\n0\n1 1:-3 2:0 12:1 5:1\n' > s.svm
convert s.svm --to parquet --out s.parquet --format libsvm --dense 1,2

cp "$src/tests/parquet_fixtures/duckdb_snappy_v1.parquet" .
convert duckdb_snappy_v1.parquet --to parquet --out fx.parquet --format parquet --dense i32,f32,f64 \
  --sparse i64,c_low,seq,tags --codec snappy

timeout 300 node "$npm_dir/check_rectrain_writer.mjs" "$tmp" || fail "an independent reader disagrees (above)"
