#!/bin/sh
# ctest data_check_cli_test: `rectrain data stats` and `rectrain data check` end to end (the
# table, --json, the exit code 6 and the full violation report).
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
echo ok
