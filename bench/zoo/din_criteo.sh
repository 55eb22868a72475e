#!/bin/sh
# DIN at criteo shape (docs/benchmarks.md "Model zoo"): samples/s of training, for the model-zoo
# speed table. The generated criteo data has no behaviour sequences, so this adds one, leak-free:
# a row's `hist` is the C3 values (10M ids) of the last 20 earlier rows with the same C1 (1460
# values, standing in for a user), most recent last. DIN attends over it with C3 as the target
# (hash_as(C3)); the other 25 fields and the 13 dense features go to the MLP as in DeepFM.
# The truth of the generator does not use the history, so the AUC is not a quality figure.
# Usage: sh bench/zoo/din_criteo.sh [WORK_DIR] [ROWS]   (repository root, release build)
set -eu
R=$(pwd)
B=$R/build/release/rectrain
W=${1:-bench-din}
ROWS=${2:-500000}
mkdir -p "$W"
if [ ! -f "$W/train.tsv" ]; then
  "$B" data gen --rows "$ROWS" --out "$W/criteo.tsv" --seed 1 >/dev/null
  awk 'BEGIN {
         FS = OFS = "\t"; h = "label"
         for (i = 1; i <= 13; i++) h = h OFS "I" i
         for (i = 1; i <= 26; i++) h = h OFS "C" i
         print h OFS "hist"
       }
       { u = $15; print $0, seq[u]
         if ($17 == "") next
         n = split(seq[u], a, "|"); s = $17
         for (i = n; i >= 1 && i > n - 19; i--) s = a[i] "|" s
         seq[u] = s }' "$W/criteo.tsv" > "$W/train.tsv.tmp"
  mv "$W/train.tsv.tmp" "$W/train.tsv"
  rm -f "$W/criteo.tsv" "$W/criteo.tsv.prob"
fi
cat > "$W/din.yaml" <<YAML
seed: 42
threads: 2
data:
  train: $W/train.tsv
  format: tsv
  header: true
  label: label
  dense: [I1, I2, I3, I4, I5, I6, I7, I8, I9, I10, I11, I12, I13]
  sparse: [C1, C2, C3, C4, C5, C6, C7, C8, C9, C10, C11, C12, C13, C14, C15, C16, C17, C18, C19, C20, C21, C22, C23, C24, C25, C26, hist]
  batch_size: 4096
  shuffle: true
  reader_threads: 1
features:
  log1p: true
  transforms:
    hist: "split('|', 20) | hash_as(C3)"
model:
  type: din
  embedding_dim: 16
  target_field: C3
  history_field: hist
  attention_hidden: [36]
  hidden: [400, 400]
embedding:
  optimizer: {type: adagrad, lr: 0.02}
optimizer:
  type: adam
  lr: 0.001
train:
  epochs: 1
YAML
awk -F '\t' 'NR > 1 { n = ($41 == "") ? 0 : split($41, a, "|"); s += n } END { printf "mean history length %.2f\n", s / (NR - 1) }' "$W/train.tsv"
rm -rf "$W/run"
"$B" train "$W/din.yaml" --run-dir "$W/run" --set tracking.enabled=false --set monitoring.enabled=false 2>&1 | grep -E '^done:|^run:'
