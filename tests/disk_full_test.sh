#!/bin/sh
# A full disk under `rectrain train`: the run stops with the file system's error and a hint that
# fits it (never "raise embedding.memory_budget"), data_profile.json is whole or absent (never
# truncated), and a checkpoint that did not fit leaves no partial directory behind.
# Each case trains with its run directory on a small tmpfs mounted in a private mount namespace
# (unshare -rm: no root needed, nothing stays mounted).
# Usage: disk_full_test.sh RECTRAIN
set -eu
B=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
W=$(mktemp -d "${TMPDIR:-/tmp}/rectrain_diskfull_XXXXXX")
trap '[ -n "${KEEP:-}" ] || rm -rf "$W"' EXIT
cd "$W"
fail() { echo "FAIL: $*"; exit 1; }
if ! unshare -rm true 2>/dev/null; then
  echo "SKIP: cannot make a private mount namespace here (unshare -rm)"
  exit 0
fi

"$B" data gen --rows 20000 --out tr.tsv --seed 1 >/dev/null 2>&1
"$B" data gen --rows 2000 --out va.tsv --seed 2 >/dev/null 2>&1
cat > m.yaml <<'CFG'
threads: 1
data: {train: tr.tsv, valid: va.tsv, format: criteo, batch_size: 512}
features: {log1p: true}
model: {type: deepfm, embedding_dim: 8, hidden: [16]}
optimizer: {type: adam, lr: 0.002}
train: {epochs: 1}
tracking: {enabled: false}
CFG

# train_on KB NAME: trains with the run directory on a tmpfs of KB kilobytes; keeps the exit
# status, the output and what the run directory held (the tmpfs goes with the namespace).
train_on() {
  mkdir -p "disk_$2" "kept_$2"
  unshare -rm sh -c "mount -t tmpfs -o size=$1k tmpfs '$W/disk_$2' || exit 99
    '$B' train '$W/m.yaml' --run-dir '$W/disk_$2/run' >'$W/$2.out' 2>'$W/$2.err'
    echo \$? > '$W/$2.rc'
    cd '$W/disk_$2/run' 2>/dev/null && find . | sort > '$W/$2.files' && cp -r . '$W/kept_$2/'" ||
    fail "could not mount a tmpfs in the namespace"
  echo "$2 ($1 KB): exit $(cat "$2.rc"); $(grep -m1 'error' "$2.err" || true)"
}
check_common() {  # check_common NAME
  [ "$(cat "$1.rc")" != 0 ] || fail "$1: training on a full disk succeeded"
  grep -q "No space left on device" "$1.err" || fail "$1: the error does not say the disk is full: $(cat "$1.err")"
  grep -q "embedding.memory_budget" "$1.err" && fail "$1: the hint points at embedding.memory_budget: $(cat "$1.err")"
  grep -q "free space on it, or write elsewhere" "$1.err" || fail "$1: no hint about the full file system: $(cat "$1.err")"
  if [ -f "kept_$1/data_profile.json" ]; then
    python3 -c 'import json, sys; json.load(open(sys.argv[1]))' "kept_$1/data_profile.json" ||
      fail "$1: data_profile.json is truncated"
  fi
  if grep -q '\.tmp' "$1.files"; then fail "$1: temporary files were left behind: $(grep '\.tmp' "$1.files")"; fi
}

# 1. Too small for the data profile (config.yaml and train.log fit).
train_on 12 profile
check_common profile
grep -q "data_profile.json" profile.err || fail "profile: the error does not name data_profile.json: $(cat profile.err)"
[ -f kept_profile/data_profile.json ] && fail "profile: a data_profile.json was left although it could not be written"

# 2. The profile fits, the checkpoint does not.
train_on 160 checkpoint
check_common checkpoint
python3 -c 'import json, sys; json.load(open(sys.argv[1]))' kept_checkpoint/data_profile.json ||
  fail "checkpoint: no whole data_profile.json"
grep -q "step-" checkpoint.files && fail "checkpoint: a partial checkpoint directory was left: $(cat checkpoint.files)"
echo "disk_full_test: OK"
