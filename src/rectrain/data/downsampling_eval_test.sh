#!/bin/sh
# ctest downsampling_eval_test: data.negative_downsampling end to end. Training rows are
# downsampled, validation reads every row, and eval logits are calibrated (+ ln r): without the
# correction the mean prediction over the valid set would be ~1.6x the label rate at r = 0.5.
# Usage: downsampling_eval_test.sh RECTRAIN_BINARY
set -eu
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$tmp"
"$bin" data gen --rows 40000 --out tr.tsv --shape easy --seed 1 > /dev/null
"$bin" data gen --rows 10000 --out va.tsv --shape easy --seed 2 > /dev/null
cat > c.yaml <<'YAML'
data: {train: tr.tsv, valid: va.tsv, batch_size: 512, negative_downsampling: 0.5}
model: {type: fm, embedding_dim: 8}
tracking: {enabled: false}
monitoring: {enabled: false}
YAML
"$bin" train c.yaml --run-dir run > out.txt 2>&1 || { cat out.txt; fail "train"; }
line=$(grep '^valid: auc' out.txt) || { cat out.txt; fail "no valid line"; }
echo "$line" | grep -q '(10000 rows)' || fail "valid must read every row: $line"
cal=$(echo "$line" | sed 's/.*calibration \([0-9.]*\).*/\1/')
awk -v c="$cal" 'BEGIN { exit !(c > 0.8 && c < 1.2) }' || fail "calibration $cal not in (0.8, 1.2): $line"
# Fewer training steps than without downsampling (40000 rows / 512 = 79 steps).
steps=$(sed -n 's/^done: completed, \([0-9]*\) steps.*/\1/p' out.txt)
[ "$steps" -lt 70 ] && [ "$steps" -gt 40 ] || fail "steps $steps: expected about 49 (negatives halved)"
# `rectrain eval` also reads every row and calibrates.
"$bin" eval run --data va.tsv > eval.txt 2>&1 || { cat eval.txt; fail "eval"; }
grep -q '^rows  *10000 ' eval.txt || { cat eval.txt; fail "eval rows"; }
ecal=$(sed -n 's/^calibration  *\([0-9.]*\)$/\1/p' eval.txt)
awk -v c="$ecal" 'BEGIN { exit !(c > 0.8 && c < 1.2) }' || { cat eval.txt; fail "eval calibration $ecal"; }
echo ok
