#!/bin/sh
# bench/zoo/criteo_ceiling on small generated files: every score is printed, they fall in the
# order the truth implies, the posterior bound rises with the training rows, and a malformed row
# is an error naming its file and line. With
# --predictions, the oracle's own probabilities carry every truth term at full strength (1), a
# constant prediction none (0), and a bad prediction file is an error naming its line.
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
[ "$(grep -c '^valid auc' "$W/out")" -eq 9 ] || { echo "expected 9 scores" >&2; exit 1; }
# oracle > noise-free oracle > ids seen >= 1x > ... > ids seen >= 100x, noise-free > main+dense,
# and the posterior bound (estimated ids) below the ids seen >= 1x known exactly, above chance.
awk '/^valid auc/ { a[++n] = $3 }
     END { ok = a[1] > a[2] && a[2] > a[3] && a[2] > a[4]
           for (i = 4; i < 8; i++) ok = ok && a[i] >= a[i + 1]
           ok = ok && a[9] < a[4] && a[9] > 0.6
           exit !ok }' "$W/out" || { echo "scores out of order" >&2; exit 1; }
# Five times the training rows: every id is estimated from more of its rows, so the bound rises
# (the exact-knowledge lines need not: more ids are seen, but each is known exactly either way).
"$B" data gen --rows 100000 --out "$W/train100k.tsv" --seed 1 >/dev/null
"$C" "$W/train100k.tsv" "$W/valid.tsv" > "$W/out100k"
small=$(awk '/^valid auc .* posterior bound/ { print $3 }' "$W/out")
large=$(awk '/^valid auc .* posterior bound/ { print $3 }' "$W/out100k")
awk -v s="$small" -v l="$large" 'BEGIN { exit !(l > s + 0.01) }' || { echo "bound $large at 100k rows, $small at 20k" >&2; exit 1; }
head -n 3 "$W/valid.tsv" > "$W/bad.tsv"
printf '1\t2\t3\n' >> "$W/bad.tsv"
if "$C" "$W/train.tsv" "$W/bad.tsv" 2> "$W/err"; then echo "a malformed row was accepted" >&2; exit 1; fi
grep -q "bad.tsv:4: expected 40 tab-separated fields, found 3" "$W/err" || { cat "$W/err" >&2; exit 1; }
awk -F '\t' 'BEGIN { OFS = "\t" } NR == 2 { $3 = "x7" } { print }' "$W/valid.tsv" > "$W/bad2.tsv"
if "$C" "$W/train.tsv" "$W/bad2.tsv" 2> "$W/err"; then echo "a non-number was accepted" >&2; exit 1; fi
grep -q 'bad2.tsv:2: field 3: not a number: "x7"' "$W/err" || { cat "$W/err" >&2; exit 1; }
# --predictions: the truth's own probabilities (valid.tsv.prob) carry every term at about 1 (the
# row noise makes the fit on 5000 rows inexact); a constant carries none.
"$C" "$W/train.tsv" "$W/valid.tsv" --predictions "$W/valid.tsv.prob" > "$W/out"
cat "$W/out"
[ "$(grep -c '^  pair C' "$W/out")" -eq 14 ] || { echo "expected 14 pair coefficients" >&2; exit 1; }
awk '/^  main / { ok = ($2 > 0.95 && $2 < 1.05 && $4 > 0.95 && $4 < 1.05); seen = 1 }
     /^  pair C/ { ok = ok && $NF > 0.8 && $NF < 1.3 }
     END { exit !(seen && ok) }' "$W/out" || { echo "the oracle's coefficients are not about 1" >&2; exit 1; }
awk '{ print "0.25" }' "$W/valid.tsv.prob" > "$W/const.txt"
"$C" "$W/train.tsv" "$W/valid.tsv" --predictions "$W/const.txt" > "$W/out"
awk '/^  main / { ok = ($2 + 0 == 0 && $4 + 0 == 0); seen = 1 }
     /^  pair C/ { ok = ok && $NF + 0 == 0 }
     END { exit !(seen && ok) }' "$W/out" || { cat "$W/out" >&2; echo "a constant prediction learnt something" >&2; exit 1; }
awk 'NR == 7 { print "1.5"; next } { print }' "$W/valid.tsv.prob" > "$W/badpred.txt"
if "$C" "$W/train.tsv" "$W/valid.tsv" --predictions "$W/badpred.txt" > /dev/null 2> "$W/err"; then
  echo "a probability of 1.5 was accepted" >&2; exit 1
fi
grep -q 'badpred.txt:7: expected a probability in (0, 1), found "1.5"' "$W/err" || { cat "$W/err" >&2; exit 1; }
head -n 10 "$W/valid.tsv.prob" > "$W/short.txt"
if "$C" "$W/train.tsv" "$W/valid.tsv" --predictions "$W/short.txt" > /dev/null 2> "$W/err"; then
  echo "10 predictions for 5000 rows were accepted" >&2; exit 1
fi
grep -q 'short.txt: 10 predictions for 5000 rows of' "$W/err" || { cat "$W/err" >&2; exit 1; }
echo "criteo_ceiling_test: ok"
