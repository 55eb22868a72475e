#!/bin/sh
# Test of examples/libsvm/ (ctest: libsvm_example_test): converts the first 1500 rows of each split of
# UCI Adult to libsvm and libffm, checks the files, trains both example configs for a few steps
# and checks a valid AUC is reported; then a malformed pair stops training with file:line:column.
# Usage: test.sh RECTRAIN_BINARY SOURCE_DIR [ADULT_DIR]
# Exit 77 (skipped) when the data set is not there.
set -eu
bin=$1
src=$2
data=${3:-$src/../shared/data/uci-adult}
if [ ! -r "$data/adult.data" ]; then
  echo "skipped: no $data/adult.data"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

sh "$src/examples/libsvm/convert.sh" "$data" "$tmp/a" 1500 > "$tmp/convert.out"
[ "$(cat "$tmp/convert.out")" = "$tmp/a/train.{svm,ffm}: 1500 rows; $tmp/a/valid.{svm,ffm}: 1500 rows" ] ||
  fail "converter said: $(cat "$tmp/convert.out")"
[ "$(head -n 1 "$tmp/a/train.svm")" = "-1 1:39 2:77516 3:13 4:2174 5:0 6:40 7:1 8:1 9:1 10:1 11:1 12:1 13:1 14:1" ] ||
  fail "train.svm line 1: $(head -n 1 "$tmp/a/train.svm")"
[ "$(head -n 1 "$tmp/a/train.ffm")" = "0 0:0:39 1:1:77516 2:2:13 3:3:2174 4:4:0 5:5:40 6:7:1 7:8:1 8:9:1 9:10:1 10:11:1 11:12:1 12:13:1 13:14:1" ] ||
  fail "train.ffm line 1: $(head -n 1 "$tmp/a/train.ffm")"
[ "$(wc -l < "$tmp/a/valid.ffm")" -eq 1500 ] || fail "valid.ffm lines"
if sh "$src/examples/libsvm/convert.sh" "$tmp/nope" "$tmp/x" 2> "$tmp/err"; then fail "no error"; fi
grep -q "cannot read $tmp/nope/adult.data" "$tmp/err" || fail "error text: $(cat "$tmp/err")"

for fmt in svm ffm; do
  "$bin" train "$src/examples/libsvm/adult_lib$fmt.yaml" --run-dir "$tmp/run-$fmt" \
    --set "data.train=$tmp/a/train.$fmt" --set "data.valid=$tmp/a/valid.$fmt" \
    --set train.max_steps=6 --set train.epochs=1 --set tracking.enabled=false \
    --set monitoring.enabled=false > "$tmp/train.out" 2>&1 || { cat "$tmp/train.out"; fail "train $fmt"; }
  grep -q "^valid: auc 0\.[0-9]*  logloss [0-9.]*  .*(1500 rows)" "$tmp/train.out" ||
    { cat "$tmp/train.out"; fail "no valid AUC over 1500 rows ($fmt)"; }
done

# A weighted categorical pair on line 3 stops training with the place and the fix.
awk 'NR == 3 { $9 = "8:0.5" } { print }' "$tmp/a/train.svm" > "$tmp/bad.svm"
if "$bin" train "$src/examples/libsvm/adult_libsvm.yaml" --run-dir "$tmp/run-bad" \
  --set "data.train=$tmp/bad.svm" --set "data.valid=$tmp/a/valid.svm" --set tracking.enabled=false \
  --set monitoring.enabled=false > "$tmp/bad.out" 2>&1; then fail "bad pair trained"; fi
grep -q "$tmp/bad.svm:3:[0-9]*: categorical pair \"8:0.5\" of feature features has a value other than 1" "$tmp/bad.out" ||
  { cat "$tmp/bad.out"; fail "bad pair message"; }
echo "ok"
