#!/bin/sh
# ctest data_convert_tsv_cli_test: `rectrain data convert ... --to tsv` end to end.
# - criteo TSV -> transformed TSV; the printed config snippet reads it back, and a model trained
#   on the converted train/valid files (file order) equals the one trained on the originals:
#   same valid AUC and logloss to the last digit, since the batches are the same.
# - csv with a multi-valued field (split) and a group key -> TSV -> .rtc cache via the snippet's
#   config -> TSV again: the two TSVs are byte-identical (ids, lists, group keys survive).
# - Errors: unwritable --out, --to missing/unknown, cache-only flags with --to tsv, a bad id.
# Usage: data_convert_tsv_cli_test.sh RECTRAIN_BINARY
set -eu
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$tmp"
"$bin" data gen --rows 3000 --out tr.tsv --shape easy --seed 1 > /dev/null
"$bin" data gen --rows 1000 --out va.tsv --shape easy --seed 2 > /dev/null

# The snippet is everything after the "# Read it back" line.
snippet() { sed -n '/^# Read it back into the same batches/,$p' "$1" | sed 1d; }

"$bin" data convert tr.tsv --to tsv --out tr_t.tsv > c1.txt 2>&1 || { cat c1.txt; fail "convert train"; }
grep -q '^convert: wrote tr_t.tsv: 3000 rows, 13 dense, 26 sparse (0 multi-valued), ' c1.txt || fail "convert line: $(cat c1.txt)"
"$bin" data convert va.tsv --to tsv --out va_t.tsv > c2.txt 2>&1 || { cat c2.txt; fail "convert valid"; }
head -1 tr_t.tsv | grep -q "^label	I1	I2	.*	C26\$" || fail "header: $(head -1 tr_t.tsv)"
sed -n 2p tr_t.tsv | grep -Eq '^[01](	[-0-9.e]+){13}(	[0-9a-f]{16}){26}$' || fail "row layout: $(sed -n 2p tr_t.tsv)"

common='model: {type: fm, embedding_dim: 8}
tracking: {enabled: false}
monitoring: {enabled: false}
train: {epochs: 1}
deterministic: true
threads: 1'
printf 'data: {train: tr.tsv, valid: va.tsv, batch_size: 256, shuffle: off, cache: off}\n%s\n' "$common" > orig.yaml
{ snippet c1.txt; printf '%s\n' "$common"; } > conv.yaml
grep -q '^    "C1": "hex_id"$' conv.yaml || { cat conv.yaml; fail "snippet"; }
set_valid="--set data.valid=va_t.tsv --set data.batch_size=256 --set data.shuffle=off --set data.cache=off"
"$bin" train orig.yaml --run-dir r1 --skip-data-check > t1.txt 2>&1 || { cat t1.txt; fail "train original"; }
# shellcheck disable=SC2086
"$bin" train conv.yaml --run-dir r2 --skip-data-check $set_valid > t2.txt 2>&1 || { cat t2.txt; fail "train converted"; }
metrics() { sed -n '/"valid": {/,/}/p' "$1" | grep -E '"(auc|logloss|rows)"' | tr -d ' \n'; }
m1=$(metrics r1/summary.json)
m2=$(metrics r2/summary.json)
echo "$m1" | grep -q '"rows":1000' && [ "$m1" = "$m2" ] || fail "converted data trains differently: original $m1, converted $m2"

# csv with a multi-valued field and a group key; tsv -> cache -> tsv is stable.
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
data: {train: r.csv, format: csv, header: true, dense: [age], sparse: [genres, user], group_key: user}
features: {transforms: {age: "fill(30) | standardize", genres: "split('|', 3)"}}
model: {type: fm, embedding_dim: 8}
YAML
"$bin" data convert r.csv --config csv.yaml --to tsv --out r1.tsv > c3.txt 2>&1 || { cat c3.txt; fail "convert csv"; }
grep -q '^convert: wrote r1.tsv: 300 rows, 1 dense, 2 sparse (1 multi-valued), group key' c3.txt || fail "csv line: $(cat c3.txt)"
head -1 r1.tsv | grep -q '^label	age	genres	user	group$' || fail "csv header: $(head -1 r1.tsv)"
grep -q '"genres": "split('"','"') | hex_id"' c3.txt || fail "csv snippet: $(cat c3.txt)"
sed -n 5p r1.tsv | grep -Eq '^[01]	[-0-9.e]+	[0-9a-f]{16},[0-9a-f]{16},[0-9a-f]{16}	[0-9a-f]{16}	[0-9a-f]{16}$' ||
  fail "multi-valued row: $(sed -n 5p r1.tsv)"
{ snippet c3.txt; printf '%s\n' "$common"; } > back.yaml
"$bin" data convert r1.tsv --config back.yaml --to cache --out r.rtc > c4.txt 2>&1 || { cat c4.txt; fail "tsv -> cache"; }
"$bin" data convert r.rtc --config back.yaml --to tsv --out r2.tsv > c5.txt 2>&1 || { cat c5.txt; fail "cache -> tsv"; }
cmp r1.tsv r2.tsv || fail "tsv -> cache -> tsv changed the rows"

# Errors.
expect_error() {  # expect_error MESSAGE ARGS...
  msg=$1; shift
  rc=0
  "$bin" "$@" > err.txt 2>&1 || rc=$?
  [ "$rc" -ne 0 ] || fail "$* must fail"
  grep -qF -- "$msg" err.txt || fail "$*: expected \"$msg\", got: $(cat err.txt)"
}
expect_error "cannot create no/dir/x.tsv.tmp." data convert tr.tsv --to tsv --out no/dir/x.tsv
[ ! -e no ] || fail "a failed convert left files"
expect_error "--to is required: --to cache, tsv or parquet" data convert tr.tsv --out x.tsv
expect_error "--to csv is not supported; use --to cache, tsv or parquet" data convert tr.tsv --to csv --out x.tsv
expect_error "--codec and --block-rows apply to --to cache or parquet, not --to tsv" data convert tr.tsv --to tsv --codec zstd --out x.tsv
expect_error "--out PATH is required" data convert tr.tsv --to tsv
printf 'label\tage\tgenres\tuser\tgroup\n1\t3\tnot-an-id\t0000000000000001\t0000000000000001\n' > bad.tsv
expect_error "bad.tsv:2:5: field genres: expected an id of 16 hex digits (features.transforms step hex_id), got \"not-an-id\"" \
  data convert bad.tsv --config back.yaml --to tsv --out y.tsv
[ ! -e y.tsv ] || fail "a failed convert wrote y.tsv"
echo ok
