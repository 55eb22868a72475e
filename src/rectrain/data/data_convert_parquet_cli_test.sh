#!/bin/sh
# ctest data_convert_parquet_cli_test: `rectrain data convert ... --to parquet` end to end.
# - criteo TSV -> Parquet; the printed config snippet reads it back, and a model trained on the
#   converted train/valid files equals the one trained on the originals (same valid AUC and
#   logloss to the last digit: the batches are the same).
# - Compaction: 8 small TSVs -> parts of --target-size in row order; the snippet's glob reads
#   them into the same model again.
# - csv with a config (split list, group key, filter): same model from the Parquet file.
# - Errors: flags that need --to parquet, a bad --target-size / --codec / --numbers, a
#   directory that already holds parts, a later non-integer in an INT64 column.
# tests/parquet_writer_duckdb_test.sh checks the files with DuckDB and parquet-wasm.
# Usage: data_convert_parquet_cli_test.sh RECTRAIN_BINARY
set -eu
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$tmp"
"$bin" data gen --rows 4000 --out tr.tsv --shape easy --seed 1 > /dev/null
"$bin" data gen --rows 1000 --out va.tsv --shape easy --seed 2 > /dev/null

# The snippet is everything after the "# Read it back" lines.
snippet() { sed -n '/^# filters, \.\.\.) applies unchanged/,$p' "$1" | sed 1d; }
common='model: {type: fm, embedding_dim: 8}
tracking: {enabled: false}
monitoring: {enabled: false}
train: {epochs: 1}
deterministic: true
threads: 1'
metrics() { sed -n '/"valid": {/,/}/p' "$1" | grep -E '"(auc|logloss|rows)"' | tr -d ' \n'; }
train() {  # train CONFIG RUN_DIR [ARGS...]
  cfg=$1; run=$2; shift 2
  "$bin" train "$cfg" --run-dir "$run" --skip-data-check "$@" > "$run.txt" 2>&1 || { cat "$run.txt"; fail "train $cfg"; }
  metrics "$run/summary.json"
}

"$bin" data convert tr.tsv --to parquet --out tr.parquet --row-group-rows 1000 > c1.txt 2>&1 || { cat c1.txt; fail "convert train"; }
grep -q '^convert: wrote tr.parquet: 4000 rows in 4 row groups, 40 columns, ' c1.txt || fail "convert line: $(cat c1.txt)"
grep -q '^  I1 INT64 (' c1.txt && grep -q '^  C26 STRING (RLE_DICTIONARY' c1.txt || fail "column lines: $(cat c1.txt)"
"$bin" data convert va.tsv --to parquet --out va.parquet --codec snappy > c2.txt 2>&1 || { cat c2.txt; fail "convert valid"; }
printf 'data: {train: tr.tsv, valid: va.tsv, batch_size: 256, shuffle: off, cache: off}\n%s\n' "$common" > orig.yaml
{ snippet c1.txt; printf '%s\n' "$common"; } > conv.yaml
grep -q '^  format: parquet$' conv.yaml || { cat conv.yaml; fail "snippet"; }
set_data="--set data.valid=va.parquet --set data.batch_size=256 --set data.shuffle=off --set data.cache=off"
m1=$(train orig.yaml r1)
# shellcheck disable=SC2086
m2=$(train conv.yaml r2 $set_data)
echo "$m1" | grep -q '"rows":1000' && [ "$m1" = "$m2" ] || fail "converted data trains differently: original $m1, converted $m2"

# Compaction: many small inputs, a few parts of about the target size, in row order.
mkdir small
i=0
while [ $i -lt 8 ]; do
  sed -n "$((i * 500 + 1)),$((i * 500 + 500))p" tr.tsv > "small/s$i.tsv"
  i=$((i + 1))
done
"$bin" data convert 'small/*.tsv' --to parquet --out parts --target-size 80KiB --row-group-rows 500 > c3.txt 2>&1 ||
  { cat c3.txt; fail "compaction"; }
grep -q '^convert: wrote parts ([0-9]* parts): 4000 rows in 8 row groups' c3.txt || fail "compaction line: $(cat c3.txt)"
n=$(ls parts/part-*.parquet | wc -l)
[ "$n" -ge 2 ] && [ "$n" -lt 8 ] || fail "$n parts for 8 inputs"
for p in parts/part-*.parquet; do
  [ "$(wc -c < "$p")" -le 81920 ] || fail "$p is larger than the target size"
done
grep -q '^  train: "parts/part-\*.parquet"$' c3.txt || fail "parts snippet: $(cat c3.txt)"
{ snippet c3.txt; printf '%s\n' "$common"; } > parts.yaml
# shellcheck disable=SC2086
m3=$(train parts.yaml r3 $set_data)
[ "$m1" = "$m3" ] || fail "compacted data trains differently: original $m1, parts $m3"
expect_error() {  # expect_error MESSAGE ARGS...
  msg=$1; shift
  rc=0
  "$bin" "$@" > err.txt 2>&1 || rc=$?
  [ "$rc" -ne 0 ] || fail "$* must fail"
  grep -qF -- "$msg" err.txt || fail "$*: expected \"$msg\", got: $(cat err.txt)"
}
expect_error "parts already holds $n part files (parts/part-00000.parquet, ...); remove them or choose another --out" \
  data convert 'small/*.tsv' --to parquet --out parts --target-size 80KiB

# csv with a config: a split list, a group key and a filter (applied when the Parquet is read).
{
  echo "label,age,genres,user"
  i=0
  while [ $i -lt 300 ]; do
    g=""; k=0
    while [ $k -lt $((i % 4)) ]; do g="$g${g:+|}g$(((i + k) % 9))"; k=$((k + 1)); done
    echo "$((i % 3 == 0 ? 1 : 0)),$((18 + i % 50)),$g,u$((i % 37))"
    i=$((i + 1))
  done
} > r.csv
cat > csv.yaml <<'YAML'
data: {train: r.csv, valid: r.csv, format: csv, header: true, dense: [age], sparse: [genres, user], group_key: user,
       filters: ["genres not null"], shuffle: off, cache: off}
features: {transforms: {age: "fill(30) | standardize", genres: "split('|', 3)"}}
model: {type: fm, embedding_dim: 8}
tracking: {enabled: false}
monitoring: {enabled: false}
deterministic: true
threads: 1
YAML
"$bin" data convert r.csv --config csv.yaml --to parquet --out r.parquet > c4.txt 2>&1 || { cat c4.txt; fail "convert csv"; }
grep -q '^  age INT64 (' c4.txt && grep -q '^  genres STRING (' c4.txt || fail "csv columns: $(cat c4.txt)"
m4=$(train csv.yaml r4)
m5=$(train csv.yaml r5 --set data.train=r.parquet --set data.valid=r.parquet --set data.format=parquet)
[ "$m4" = "$m5" ] || fail "csv and its Parquet train differently: $m4 vs $m5"

# Errors.
expect_error "--target-size, --row-group-rows and --numbers apply to --to parquet" \
  data convert tr.tsv --to tsv --out x.tsv --target-size 1MiB
expect_error "--target-size \"lots\" is not a positive size such as 512MiB or 1GB" \
  data convert tr.tsv --to parquet --out x --target-size lots
expect_error "unknown Parquet compression \"lz4\"; expected zstd, snappy or none" \
  data convert tr.tsv --to parquet --out x.parquet --codec lz4
expect_error "--numbers must be auto or double, got \"float\"" data convert tr.tsv --to parquet --out x.parquet --numbers float
{ head -n 20 tr.tsv; head -n 1 tr.tsv | awk -F'\t' 'BEGIN { OFS = "\t" } { $2 = "2.5"; print }'; } > mixed.tsv
expect_error "mixed.tsv:21: column I1: \"2.5\" is not an integer, but the column is written as INT64" \
  data convert mixed.tsv --to parquet --out m.parquet --row-group-rows 10
[ ! -e m.parquet ] || fail "a failed convert wrote m.parquet"
"$bin" data convert mixed.tsv --to parquet --out m.parquet --row-group-rows 10 --numbers double > c5.txt 2>&1 ||
  { cat c5.txt; fail "--numbers double"; }
grep -q '^  I1 DOUBLE (' c5.txt || fail "--numbers double: $(cat c5.txt)"
echo ok
