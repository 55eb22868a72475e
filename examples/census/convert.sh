#!/bin/sh
# Converts the UCI Census-Income (KDD) sample (../shared/data/uci-census-income-kdd-sample/
# census-income.sample: a row index, then the 42 UCI columns, comma-separated) into train/valid
# TSV files for examples/census/mmoe.yaml, with two binary labels, the standard MMoE setting:
#   income         1 if income_50k is "50000+."
#   never_married  1 if marital_stat is "Never married"
# Features: age, wage_per_hour, capital_gains, capital_losses, stock_dividends, weeks_worked
# (numbers) and class_worker, education, major_ind_code, major_occ_code, race, sex,
# full_or_part_emp, tax_filer_stat, citizenship (categories; leading blanks trimmed). Columns
# that restate the marital status (det_hh_fam_stat, det_hh_summ: "Child 18+ never marr...") are
# left out, so the second task is not given away. The first 75% of the rows are train.tsv, the
# rest valid.tsv (the file has no time order).
#
# Usage: examples/census/convert.sh INPUT_FILE OUT_DIR       (POSIX sh + awk)
set -eu
if [ $# -ne 2 ]; then
  echo "usage: $0 INPUT_FILE OUT_DIR" >&2
  exit 2
fi
in=$1
out=$2
if [ ! -r "$in" ]; then
  echo "$0: cannot read $in" >&2
  exit 1
fi
mkdir -p "$out"
n=$(wc -l < "$in")
ntrain=$((n * 3 / 4))
awk -v ntrain="$ntrain" -v tr="$out/train.tsv.tmp.$$" -v va="$out/valid.tsv.tmp.$$" '
  function trim(s) { sub(/^ +/, "", s); sub(/ +$/, "", s); return s }
  BEGIN {
    FS = ","; OFS = "\t"
    h = "income\tnever_married\tage\twage_per_hour\tcapital_gains\tcapital_losses\tstock_dividends\tweeks_worked\t" \
        "class_worker\teducation\tmajor_ind_code\tmajor_occ_code\trace\tsex\tfull_or_part_emp\ttax_filer_stat\tcitizenship"
    print h > tr; print h > va
  }
  {
    if (NF != 43) { printf "%s:%d: expected 43 comma-separated fields, got %d\n", FILENAME, FNR, NF > "/dev/stderr"; bad = 1; exit 1 }
    income = trim($43) == "50000+." ? 1 : 0
    never = trim($9) == "Never married" ? 1 : 0
    line = income OFS never OFS trim($2) OFS trim($7) OFS trim($18) OFS trim($19) OFS trim($20) OFS trim($41)
    split("3 6 10 11 12 14 17 21 37", cols, " ")
    for (i = 1; i <= 9; i++) line = line OFS trim($(cols[i]))
    if (FNR <= ntrain) print line > tr; else print line > va
  }
  END { if (bad) exit 1 }
' "$in"
mv "$out/train.tsv.tmp.$$" "$out/train.tsv"
mv "$out/valid.tsv.tmp.$$" "$out/valid.tsv"
echo "$out/train.tsv: $ntrain rows; $out/valid.tsv: $((n - ntrain)) rows"
