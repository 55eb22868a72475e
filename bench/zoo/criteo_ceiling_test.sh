#!/bin/sh
# bench/zoo/criteo_ceiling on small generated files: every score is printed, they fall in the
# order the truth implies, and a malformed row is an error naming its file and line.
# Usage: criteo_ceiling_test.sh CRITEO_CEILING RECTRAIN
set -eu
C=$1
B=$2
W=$(mktemp -d)
trap 'rm -rf "$W"' EXIT
"$B" data gen --rows 20000 --out "$W/train.tsv" --seed 1 >/dev/null
"$B" data gen --rows 5000 --out "$W/valid.tsv" --seed 2 >/dev/null
"$C" "$W/train.tsv" "$W/valid.tsv" > "$W/out"
cat "$W/out"
[ "$(grep -c '^valid auc' "$W/out")" -eq 8 ] || { echo "expected 8 scores" >&2; exit 1; }
# oracle > noise-free oracle > ids seen >= 1x > ... > ids seen >= 100x, and noise-free > main+dense.
awk '/^valid auc/ { a[++n] = $3 }
     END { ok = a[1] > a[2] && a[2] > a[3] && a[2] > a[4]
           for (i = 4; i < 8; i++) ok = ok && a[i] >= a[i + 1]
           exit !ok }' "$W/out" || { echo "scores out of order" >&2; exit 1; }
head -n 3 "$W/valid.tsv" > "$W/bad.tsv"
printf '1\t2\t3\n' >> "$W/bad.tsv"
if "$C" "$W/train.tsv" "$W/bad.tsv" 2> "$W/err"; then echo "a malformed row was accepted" >&2; exit 1; fi
grep -q "bad.tsv:4: expected 40 tab-separated fields, found 3" "$W/err" || { cat "$W/err" >&2; exit 1; }
awk -F '\t' 'BEGIN { OFS = "\t" } NR == 2 { $3 = "x7" } { print }' "$W/valid.tsv" > "$W/bad2.tsv"
if "$C" "$W/train.tsv" "$W/bad2.tsv" 2> "$W/err"; then echo "a non-number was accepted" >&2; exit 1; fi
grep -q 'bad2.tsv:2: field 3: not a number: "x7"' "$W/err" || { cat "$W/err" >&2; exit 1; }
echo "criteo_ceiling_test: ok"
