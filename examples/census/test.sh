#!/bin/sh
# Test of examples/census/convert.sh + examples/census/mmoe.yaml (ctest: census_mmoe_example_test):
# converts the 200-row sample, checks the two labels, trains MMoE and checks that both tasks are
# evaluated (train output, summary.json, evals.jsonl), that `rectrain eval` reports both, and
# that a task label that is not 0/1 or not a column fails clearly.
# Usage: test.sh RECTRAIN_BINARY SOURCE_DIR [DATA_FILE]
# Exit 77 (skipped) when the sample is not there.
set -eu
bin=$1
src=$2
data=${3:-$src/../shared/data/uci-census-income-kdd-sample/census-income.sample}
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
echo "ok"
