#!/bin/sh
# Converts UCI Adult (../shared/data/uci-adult: adult.data and adult.test, 15 columns separated
# by ", ") into train/valid TSV files for examples/census/adult_mmoe.yaml with two binary labels,
# the MMoE setting of the census data (Adult is an extract of the same 1994 Current Population
# Survey as Census-Income (KDD), with 48,842 rows instead of the 200 of the KDD sample):
#   income         1 if income is ">50K" (">50K." in adult.test)
#   never_married  1 if marital-status is "Never-married"
# Features: age, fnlwgt, education_num, capital_gain, capital_loss, hours_per_week (numbers) and
# workclass, education, occupation, race, sex, native_country (categories; "?" becomes an empty,
# missing value). marital-status and relationship ("Husband", "Wife", "Own-child") are left out,
# so the second task is not given away. adult.data becomes train.tsv and adult.test valid.tsv,
# the published split.
#
# Usage: examples/census/adult_convert.sh ADULT_DIR OUT_DIR       (POSIX sh + awk)
set -eu
if [ $# -ne 2 ]; then
  echo "usage: $0 ADULT_DIR OUT_DIR" >&2
  exit 2
fi
in=$1
out=$2
for f in adult.data adult.test; do
  if [ ! -r "$in/$f" ]; then
    echo "$0: cannot read $in/$f" >&2
    exit 1
  fi
done
mkdir -p "$out"
trap 'rm -f "$out/train.tsv.tmp.$$" "$out/valid.tsv.tmp.$$"' EXIT
convert() {
  awk -v out="$2" '
    function trim(s) { sub(/^ +/, "", s); sub(/ +$/, "", s); return s == "?" ? "" : s }
    BEGIN {
      FS = ","; OFS = "\t"
      print "income\tnever_married\tage\tfnlwgt\teducation_num\tcapital_gain\tcapital_loss\thours_per_week\t" \
            "workclass\teducation\toccupation\trace\tsex\tnative_country" > out
    }
    /^\|/ || /^[ \t\r]*$/ { next }   # adult.test starts with "|1x3 Cross validator"; both end blank
    {
      sub(/\r$/, "")
      if (NF != 15) { printf "%s:%d: expected 15 comma-separated fields, got %d\n", FILENAME, FNR, NF > "/dev/stderr"; bad = 1; exit 1 }
      label = trim($15); sub(/\.$/, "", label)
      if (label != ">50K" && label != "<=50K") { printf "%s:%d: field 15 (income): expected >50K or <=50K, got \"%s\"\n", FILENAME, FNR, label > "/dev/stderr"; bad = 1; exit 1 }
      n++
      print (label == ">50K") OFS (trim($6) == "Never-married") OFS trim($1) OFS trim($3) OFS trim($5) OFS trim($11) OFS trim($12) OFS trim($13) OFS \
            trim($2) OFS trim($4) OFS trim($7) OFS trim($9) OFS trim($10) OFS trim($14) > out
    }
    END { if (bad) exit 1; print n }
  ' "$1"
}
ntrain=$(convert "$in/adult.data" "$out/train.tsv.tmp.$$")
nvalid=$(convert "$in/adult.test" "$out/valid.tsv.tmp.$$")
mv "$out/train.tsv.tmp.$$" "$out/train.tsv"
mv "$out/valid.tsv.tmp.$$" "$out/valid.tsv"
echo "$out/train.tsv: $ntrain rows; $out/valid.tsv: $nvalid rows"
