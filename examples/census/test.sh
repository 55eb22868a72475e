#!/bin/sh
# Test of examples/census/convert.sh + examples/census/mmoe.yaml (ctest: census_mmoe_example_test):
# converts the 200-row sample, checks the two labels, trains MMoE and checks that both tasks are
# evaluated (train output, summary.json, evals.jsonl), that `rectrain eval` reports both, and
# that a task label that is not 0/1 or not a column fails clearly. Then the same for UCI Adult
# (examples/census/adult_convert.sh + adult_mmoe.yaml, the census benchmark), when it is there:
# row and label counts of the published split, malformed rows named by file and line, and one
# epoch of MMoE evaluating both tasks.
# Usage: test.sh RECTRAIN_BINARY SOURCE_DIR [DATA_FILE [ADULT_DIR]]
# Exit 77 (skipped) when the sample is not there.
set -eu
bin=$1
src=$2
data=${3:-$src/../shared/data/uci-census-income-kdd-sample/census-income.sample}
adult=${4:-$src/../shared/data/uci-adult}
if [ ! -r "$data" ]; then
  echo "skipped: no $data"
  exit 77
fi
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }

sh "$src/examples/census/convert.sh" "$data" "$tmp/c" > "$tmp/convert.out"
[ "$(cat "$tmp/convert.out")" = "$tmp/c/train.tsv: 150 rows; $tmp/c/valid.tsv: 50 rows" ] || fail "converter said: $(cat "$tmp/convert.out")"
# 12 incomes above 50k and 84 never married in the 200 rows (README of the sample; marital_stat).
[ "$(awk -F '\t' 'FNR > 1 { s += $1 } END { print s }' "$tmp/c/train.tsv" "$tmp/c/valid.tsv")" = 12 ] || fail "income labels"
[ "$(awk -F '\t' 'FNR > 1 { s += $2 } END { print s }' "$tmp/c/train.tsv" "$tmp/c/valid.tsv")" = 84 ] || fail "never_married labels"
awk -F '\t' 'FNR > 1 && NF != 17 { exit 1 }' "$tmp/c/train.tsv" "$tmp/c/valid.tsv" || fail "field count"

"$bin" train "$src/examples/census/mmoe.yaml" --run-dir "$tmp/m" --set "data.train=$tmp/c/train.tsv" \
  --set "data.valid=$tmp/c/valid.tsv" --set tracking.enabled=false --set monitoring.enabled=false \
  --set train.epochs=3 > "$tmp/m.out" 2>&1 || { cat "$tmp/m.out"; fail "train mmoe"; }
grep -q "^valid task income: auc 0\.[0-9]*  logloss" "$tmp/m.out" || { cat "$tmp/m.out"; fail "no income task metrics"; }
grep -q "^valid task never_married: auc 0\.[0-9]*  logloss .*(14 positive)" "$tmp/m.out" || { cat "$tmp/m.out"; fail "no never_married task metrics"; }
python3 - "$tmp/m" <<'PY' || fail "summary.json / evals.jsonl tasks"
import json, sys
d = sys.argv[1]
s = json.load(open(d + "/summary.json"))
t = s["valid"]["tasks"]
assert set(t) == {"income", "never_married"}, t
assert t["income"]["auc"] == s["valid"]["auc"], "task 0 is the label's metrics"
assert 0 < t["never_married"]["auc"] <= 1 and t["never_married"]["positives"] == 14, t
last = [json.loads(l) for l in open(d + "/evals.jsonl")][-1]
assert set(last["tasks"]) == {"income", "never_married"}, last
PY
"$bin" eval "$tmp/m" --data "$tmp/c/valid.tsv" > "$tmp/eval.out" 2>&1 || { cat "$tmp/eval.out"; fail "eval"; }
grep -q "^task never_married: auc 0\.[0-9]*" "$tmp/eval.out" || { cat "$tmp/eval.out"; fail "eval: no task line"; }
# A task label that is not 0/1 (age) fails the first step, naming it and the fix.
if "$bin" train "$src/examples/census/mmoe.yaml" --run-dir "$tmp/bad" --set "data.train=$tmp/c/train.tsv" \
  --set "data.valid=$tmp/c/valid.tsv" --set tracking.enabled=false --set monitoring.enabled=false \
  --set "model.task_labels=[age]" > "$tmp/bad.out" 2>&1; then fail "a non-binary task label was accepted"; fi
grep -q "task label age is .* a task label must be 0 or 1" "$tmp/bad.out" || { cat "$tmp/bad.out"; fail "bad label message"; }
# A task label that is not a dense column is a config error naming the key.
if "$bin" train "$src/examples/census/mmoe.yaml" --run-dir "$tmp/bad2" --set "data.train=$tmp/c/train.tsv" \
  --set "data.valid=$tmp/c/valid.tsv" --set tracking.enabled=false --set monitoring.enabled=false \
  --set "model.task_labels=[married]" > "$tmp/bad2.out" 2>&1; then fail "an unknown task label was accepted"; fi
grep -q 'model.task_labels: "married" is not a dense column' "$tmp/bad2.out" || { cat "$tmp/bad2.out"; fail "unknown label message"; }

if [ ! -r "$adult/adult.data" ]; then
  echo "ok (UCI Adult part skipped: no $adult/adult.data)"
  exit 0
fi
sh "$src/examples/census/adult_convert.sh" "$adult" "$tmp/a" > "$tmp/aconvert.out"
[ "$(cat "$tmp/aconvert.out")" = "$tmp/a/train.tsv: 32561 rows; $tmp/a/valid.tsv: 16281 rows" ] || fail "adult converter said: $(cat "$tmp/aconvert.out")"
# Positives from the README of the data (income) and adult.data/adult.test's marital-status column.
[ "$(awk -F '\t' 'FNR > 1 { s += $1 } END { print s }' "$tmp/a/train.tsv")" = 7841 ] || fail "adult train income labels"
[ "$(awk -F '\t' 'FNR > 1 { s += $1 } END { print s }' "$tmp/a/valid.tsv")" = 3846 ] || fail "adult valid income labels"
[ "$(awk -F '\t' 'FNR > 1 { s += $2 } END { print s }' "$tmp/a/train.tsv")" = 10683 ] || fail "adult never_married labels"
awk -F '\t' 'FNR > 1 && NF != 14 { exit 1 }' "$tmp/a/train.tsv" "$tmp/a/valid.tsv" || fail "adult field count"
# "?" (missing) becomes an empty field; no converted field keeps a blank.
grep -q '?' "$tmp/a/train.tsv" && fail "a ? survived the conversion"
awk -F '\t' '{ for (i = 1; i <= NF; i++) if ($i ~ /^ | $/) exit 1 }' "$tmp/a/train.tsv" || fail "untrimmed field"
# Malformed input names the file, the line and the field.
mkdir -p "$tmp/bad-adult"
head -3 "$adult/adult.data" > "$tmp/bad-adult/adult.data"
echo "39, State-gov, 77516, Bachelors" >> "$tmp/bad-adult/adult.data"
cp "$adult/adult.test" "$tmp/bad-adult/adult.test"
if sh "$src/examples/census/adult_convert.sh" "$tmp/bad-adult" "$tmp/ba" 2> "$tmp/ba.err"; then fail "a short adult row was accepted"; fi
grep -q "adult.data:4: expected 15 comma-separated fields, got 4" "$tmp/ba.err" || { cat "$tmp/ba.err"; fail "short row message"; }
head -3 "$adult/adult.data" | sed '2s/<=50K$/maybe/' > "$tmp/bad-adult/adult.data"
if sh "$src/examples/census/adult_convert.sh" "$tmp/bad-adult" "$tmp/ba" 2> "$tmp/ba.err"; then fail "a bad income was accepted"; fi
grep -q 'adult.data:2: field 15 (income): expected >50K or <=50K, got "maybe"' "$tmp/ba.err" || { cat "$tmp/ba.err"; fail "bad income message"; }
[ -z "$(ls "$tmp/ba")" ] || fail "a failed conversion left files: $(ls "$tmp/ba")"
"$bin" train "$src/examples/census/adult_mmoe.yaml" --run-dir "$tmp/am" --set "data.train=$tmp/a/train.tsv" \
  --set "data.valid=$tmp/a/valid.tsv" --set tracking.enabled=false --set monitoring.enabled=false \
  --set train.epochs=1 > "$tmp/am.out" 2>&1 || { cat "$tmp/am.out"; fail "train adult mmoe"; }
grep -q "^valid task income: auc 0\.[0-9]*  logloss .*(3846 positive)" "$tmp/am.out" || { cat "$tmp/am.out"; fail "adult: no income task metrics"; }
grep -q "^valid task never_married: auc 0\.[0-9]*  logloss .*(5434 positive)" "$tmp/am.out" || { cat "$tmp/am.out"; fail "adult: no never_married task metrics"; }
# One epoch already separates both tasks well above chance (a broken task wiring gives ~0.5).
python3 - "$tmp/am/summary.json" <<'PY' || fail "adult task AUCs"
import json, sys
t = json.load(open(sys.argv[1]))["valid"]["tasks"]
assert t["income"]["auc"] > 0.8 and t["never_married"]["auc"] > 0.8, t
PY
echo "ok"
