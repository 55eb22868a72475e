#!/bin/sh
# ctest data_check_cli_test: `rectrain data stats` and `rectrain data check` end to end (the
# table, --json, the exit code 6 and the full violation report), and the same check before
# `rectrain train`.
# Usage: data_check_cli_test.sh RECTRAIN_BINARY
set -eu
bin=$1
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
fail() { echo "FAIL: $*" >&2; exit 1; }
cd "$tmp"
printf 'label,x,c\n1,2.5,u\n0,,v\n0,-1,u\n' > a.csv
printf 'label,x,c\n1,4,w\n' > b.csv

"$bin" data stats a.csv b.csv --format csv --header > stats.txt
grep -q '^a.csv  *3  *0$' stats.txt || fail "rows per file: $(cat stats.txt)"
grep -q '^x  *4  *3  *0.2500  *-1  *4  *1.83333  *3$' stats.txt || fail "x row: $(cat stats.txt)"
grep -q '^rows 4, label label: rate 0.5000 (2 of 4 labeled rows)$' stats.txt || fail "label: $(cat stats.txt)"
"$bin" data stats a.csv b.csv --format csv --header --json > stats.json
grep -q '"label_rate": 0.5' stats.json || fail "json: $(cat stats.json)"
grep -q '"null_ratio": 0.25' stats.json || fail "json null ratio"

cat > c.yaml <<'YAML'
data: {train: [a.csv, b.csv], format: csv, header: true, dense: [x], sparse: [c]}
checks: {max_null_ratio: {x: 0.1, "*": 0.5, zz: 0.1}, min_rows: 10, label_rate: [0.6, 1]}
YAML
rc=0
"$bin" data check c.yaml > check.out 2> check.err || rc=$?
[ "$rc" -eq 6 ] || fail "exit code $rc, want 6: $(cat check.err)"
cat > want.err <<'TXT'
rectrain data check: error: data check failed (data.train): 4 violations
  rows: 4 is below checks.min_rows = 10
  label rate: 0.5000 is outside checks.label_rate [0.6, 1]
  x: null ratio 0.2500 exceeds checks.max_null_ratio.x = 0.1
  checks.max_null_ratio.zz: no such column (columns: label, x, c)
TXT
diff want.err check.err || fail "violation report differs"
"$bin" data check c.yaml --set checks.min_rows=4 --set 'checks.label_rate=[0.5, 1]' \
  --set 'checks.max_null_ratio={x: 0.25}' > ok.out || fail "check should pass: $(cat ok.out)"
tail -n 1 ok.out | grep -q '^data check passed (train)$' || fail "pass line: $(cat ok.out)"
rc=0
"$bin" data check c.yaml --json > check.json 2> /dev/null || rc=$?
[ "$rc" -eq 6 ] || fail "json exit code $rc"
grep -q '"rows: 4 is below checks.min_rows = 10"' check.json || fail "json violations"

# The same check runs before `rectrain train` (data.train and data.valid, one report, exit 6,
# RUN_DIR/data_profile.json, the run recorded as failed); a clean config trains;
# --skip-data-check and checks.before_train: false turn it off.
"$bin" data gen --rows 3000 --out t.tsv --seed 1 > /dev/null
awk -F '\t' 'BEGIN { OFS = "\t" } NR <= 200 { $1 = 0; print }' t.tsv > v0.tsv
cat > train.yaml <<'YAML'
data: {train: t.tsv, valid: v0.tsv, format: criteo, batch_size: 256}
model: {type: lr}
train: {max_steps: 3}
monitoring: {enabled: false}
YAML
rc=0
"$bin" train train.yaml --run-dir bad --set checks.min_rows=5000 --set checks.max_rows=0 > bad.out 2> bad.err || rc=$?
[ "$rc" -eq 6 ] || fail "train exit code $rc, want 6: $(cat bad.err)"
cat > want.err <<'TXT'
rectrain train: error: data check before training failed: 3 violations (profile: bad/data_profile.json; thresholds: checks.* in docs/config.md; skip with --skip-data-check or checks.before_train: false)
  data.train: rows: 3000 is below checks.min_rows = 5000
  data.valid: rows: 200 is below checks.min_rows = 5000
  data.valid: label: constant: all 200 labeled rows are 0 (label label); a model cannot learn from one class (check the label column and its transform, or set checks.allow_constant_label: true)
TXT
grep -v '^tracking: ' bad.err > bad.err2
diff want.err bad.err2 || fail "train violation report differs"
[ -f bad/data_profile.json ] || fail "no bad/data_profile.json"
grep -q '"data.valid: rows: 200 is below checks.min_rows = 5000"' bad/data_profile.json || fail "profile violations"
[ ! -e bad/summary.json ] && [ ! -e bad/checkpoints ] || fail "training ran despite the violations"
"$bin" runs list > runs.out
grep -q '^1  *bad  *failed ' runs.out || fail "run not recorded as failed: $(cat runs.out)"
"$bin" runs show 1 | grep -q '^  data_profile  .*/bad/data_profile.json' || fail "no data_profile artifact"
# Clean data trains (the constant valid split allowed; the default thresholds otherwise).
"$bin" train train.yaml --run-dir good --set checks.allow_constant_label=true > good.out 2> good.err ||
  fail "clean train: $(cat good.err)"
grep -q '^data check passed: data.train 3000 rows (label rate 0\.[0-9]*), data.valid 200 rows (label rate 0.0000) in [0-9.]* s -> good/data_profile.json$' good.err ||
  fail "pass line: $(cat good.err)"
[ -f good/summary.json ] && [ -f good/data_profile.json ] || fail "good run files"
"$bin" train train.yaml --run-dir skip1 --skip-data-check > /dev/null 2> skip1.err || fail "--skip-data-check: $(cat skip1.err)"
"$bin" train train.yaml --run-dir skip2 --set checks.before_train=false > /dev/null 2> skip2.err || fail "before_train: $(cat skip2.err)"
[ ! -e skip1/data_profile.json ] && [ ! -e skip2/data_profile.json ] || fail "skipped check wrote a profile"
! grep -q 'data check' skip1.err skip2.err || fail "skipped check ran"
echo ok
