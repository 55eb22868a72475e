#!/bin/sh
# Converts UCI Adult (../shared/data/uci-adult: adult.data = train, adult.test = valid) to libsvm
# and libffm files for examples/libsvm/ (POSIX sh + awk). Category ids are assigned in first-seen
# order over train then valid, so both files share one index space.
#   libsvm: label -1/+1; indices 1..6 = the dense columns (age, fnlwgt, education-num,
#           capital-gain, capital-loss, hours-per-week) with their values; 7.. = one index per
#           (column, category) with value 1 ("?" = missing: no pair).
#   libffm: label 0/1; fields 0..5 = the dense columns (index = field, the value); fields 6..13 =
#           workclass, education, marital-status, occupation, relationship, race, sex,
#           native-country, with the category's index and value 1.
# Usage: convert.sh ADULT_DIR OUT_DIR [MAX_ROWS_PER_SPLIT]
# Writes OUT_DIR/{train,valid}.{svm,ffm} and prints the row counts.
set -eu
in=$1
out=$2
max=${3:-0}
for f in adult.data adult.test; do
  [ -r "$in/$f" ] || { echo "convert.sh: cannot read $in/$f" >&2; exit 1; }
done
mkdir -p "$out"
awk -F ', *' -v out="$out" -v max="$max" '
  BEGIN { nd = split("1 3 5 11 12 13", dcol, " "); nc = split("2 4 6 7 8 9 10 14", ccol, " "); next_id = 7 }
  FNR == 1 { split_name = (FILENAME ~ /adult\.test$/) ? "valid" : "train"; n = 0 }
  NF < 15 { next }                                   # blank lines, the "|1x3" header of adult.test
  max > 0 && n >= max { next }
  {
    n++; rows[split_name] = n
    pos = ($15 ~ />50K/) ? 1 : 0
    svm = (pos ? "+1" : "-1"); ffm = pos
    for (i = 1; i <= nd; i++) {
      svm = svm " " i ":" $dcol[i]
      ffm = ffm " " (i - 1) ":" (i - 1) ":" $dcol[i]
    }
    for (i = 1; i <= nc; i++) {
      v = $ccol[i]; sub(/\.$/, "", v)
      if (v == "?") continue
      key = ccol[i] "=" v
      if (!(key in id)) id[key] = next_id++
      svm = svm " " id[key] ":1"
      ffm = ffm " " (nd + i - 1) ":" id[key] ":1"
    }
    print svm > (out "/" split_name ".svm")
    print ffm > (out "/" split_name ".ffm")
  }
  END { printf "%s/train.{svm,ffm}: %d rows; %s/valid.{svm,ffm}: %d rows\n", out, rows["train"], out, rows["valid"] }
' "$in/adult.data" "$in/adult.test"
