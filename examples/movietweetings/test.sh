#!/bin/sh
# Test of examples/movietweetings/convert.sh + examples/movietweetings/movietweetings.yaml (ctest:
# movietweetings_example_test). Converts the first 3000 ratings, checks the split and the
# columns, then trains the example config for a few steps and checks it reports a valid AUC.
# Usage: test.sh RECTRAIN_BINARY SOURCE_DIR [DATA_DIR]
# Exit 77 (skipped) when the data set is not there.
set -eu
bin=$1
src=$2
data=${3:-$src/../shared/data/movietweetings-100k}
if [ ! -r "$data/ratings.dat" ]; then
  echo "skipped: no $data/ratings.dat"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

sh "$src/examples/movietweetings/convert.sh" "$data" "$tmp/mt" 3000 > "$tmp/convert.out"
[ "$(cat "$tmp/convert.out")" = "$tmp/mt/train.tsv: 2400 rows; $tmp/mt/valid.tsv: 600 rows" ] ||
  fail "converter said: $(cat "$tmp/convert.out")"
[ "$(head -n 1 "$tmp/mt/train.tsv")" = "$(printf 'rating\tuser\tmovie\tgenres\tts\tdecade\thistory')" ] ||
  fail "train.tsv header: $(head -n 1 "$tmp/mt/train.tsv")"
[ "$(wc -l < "$tmp/mt/train.tsv")" -eq 2401 ] || fail "train.tsv lines"
[ "$(wc -l < "$tmp/mt/valid.tsv")" -eq 601 ] || fail "valid.tsv lines"
# Every row has 6 fields; time order holds within and across the split.
awk -F '\t' 'FNR > 1 && NF != 7 { exit 1 }' "$tmp/mt/train.tsv" "$tmp/mt/valid.tsv" || fail "field count"
# The history holds only movies the user rated at an earlier second, at most 20, the latest
# last; some rows have one.
awk -F '\t' '
  FNR > 1 {
    n = split($7, a, "|")
    if (n > 20) { print "history longer than 20 at " FILENAME ":" FNR; bad = 1 }
    for (i = 1; i <= n; i++) if (!(($2, a[i]) in first) || first[$2, a[i]] >= $5) { print "leak at " FILENAME ":" FNR ": " a[i]; bad = 1 }
    if (n > 0) some = 1
    if (!(($2, $3) in first)) first[$2, $3] = $5
  }
  END { if (!some) { print "no row has a history"; bad = 1 } exit bad }
' "$tmp/mt/train.tsv" "$tmp/mt/valid.tsv" || fail "history column"
awk -F '\t' 'FNR > 1 { if ($5 < last) exit 1; last = $5 }' "$tmp/mt/train.tsv" "$tmp/mt/valid.tsv" ||
  fail "rows not time-ordered"
# A multi-valued genres field is kept with its separators.
grep -q "$(printf '\t')[A-Za-z-]*|[A-Za-z-]*" "$tmp/mt/train.tsv" || fail "no multi-valued genres"
# Errors: a missing input file.
if sh "$src/examples/movietweetings/convert.sh" "$tmp/nope" "$tmp/x" 2> "$tmp/err"; then fail "no error"; fi
grep -q "cannot read $tmp/nope/ratings.dat" "$tmp/err" || fail "error text: $(cat "$tmp/err")"

# FM (the example) and DIN over the history column each train a few steps and evaluate.
for cfg in movietweetings din; do
  "$bin" train "$src/examples/movietweetings/$cfg.yaml" --run-dir "$tmp/run-$cfg" \
    --set "data.train=$tmp/mt/train.tsv" --set "data.valid=$tmp/mt/valid.tsv" \
    --set train.max_steps=8 --set train.epochs=1 --set tracking.enabled=false \
    --set monitoring.enabled=false > "$tmp/train.out" 2>&1 || { cat "$tmp/train.out"; fail "train $cfg"; }
  grep -q "^valid: auc 0\.[0-9]*  logloss [0-9.]*  .*(600 rows)" "$tmp/train.out" ||
    { cat "$tmp/train.out"; fail "no valid AUC over 600 rows ($cfg)"; }
done
echo "ok"
