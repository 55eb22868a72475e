#!/bin/sh
# Incremental checkpoints (train.checkpoint_full_every) under kill -9: a trainer that writes a
# checkpoint every step (a full one, then three deltas) is killed with SIGKILL while a delta
# checkpoint directory is being written (polled: "step-N.tmp" exists), three times at later and
# later steps; each time `--resume` continues from the newest complete checkpoint (a delta and
# its chain), and the run ends with the model of the uninterrupted run, byte for byte (tables
# compared by id).
# Usage: incremental_kill_test.sh RECTRAIN
set -eu
B=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
SAME_TABLE=$(cd "$(dirname "$0")" && pwd)/s3/same_table.py
W=$(mktemp -d "${TMPDIR:-/tmp}/rectrain_inc_kill_XXXXXX")
trap 'kill -9 ${PID:-} 2>/dev/null || true; rm -rf "$W"' EXIT
cd "$W"
fail() { echo "FAIL: $*"; exit 1; }
"$B" data gen --rows 8000 --out tr.tsv --seed 1 >/dev/null 2>&1
cat > t.yaml <<'CFG'
seed: 7
deterministic: true
threads: 1
data: {train: tr.tsv, batch_size: 128, shuffle: true, shuffle_buffer: 2000, cache: off}
model: {type: deepfm, embedding_dim: 16, hidden: [16]}
embedding: {min_count: 2, ttl_steps: 8, optimizer: {type: adagrad, lr: 0.05}}
optimizer: {type: adam, lr: 0.002}
train: {epochs: 2, checkpoint_every_steps: 1, checkpoint_full_every: 4, keep_checkpoints: 2, log_every_steps: 1000}
tracking: {enabled: false}
monitoring: {enabled: false}
CFG
"$B" train t.yaml --run-dir plain --quiet --set train.checkpoint_full_every=1 >/dev/null 2>&1 || fail "uninterrupted run"
# kill_mid_write STEP ARGS...: start (or resume) the run, SIGKILL it once the checkpoint of step
# STEP or a later one is being written (its step-N.tmp exists).
deltas_resumed=0
kill_mid_write() {
  at=$1
  shift
  newest=$(ls killed/checkpoints 2>/dev/null | sed -n 's/^step-\([0-9]*\)$/\1/p' | sort -n | tail -1)
  [ -z "$newest" ] || [ "$at" -gt $((newest + 1)) ] || at=$((newest + 2))  # past the resume point
  "$B" train "$@" --quiet >>run.txt 2>&1 &
  PID=$!
  i=0
  found=""
  until [ -n "$found" ]; do  # shell builtins only: a poll of microseconds, not a fork
    n=$at
    while [ $n -lt $((at + 40)) ]; do
      if [ -d "killed/checkpoints/step-$n.tmp" ]; then found=$n; break; fi
      n=$((n + 1))
    done
    [ -n "$found" ] && break
    kill -0 $PID 2>/dev/null || { cat run.txt; fail "the run ended before it could be killed writing step $at"; }
    i=$((i + 1)); [ $i -lt 10000000 ] || fail "no checkpoint of step $at or later in progress seen"
  done
  kill -9 $PID
  if wait $PID; then fail "the run was not killed"; fi
  tmp=$(ls -d killed/checkpoints/*.tmp 2>/dev/null | tr '\n' ' ')
  last=$(ls killed/checkpoints | grep '^step-[0-9]*$' | sort -t- -k2 -n | tail -1)
  delta=$(grep -c '"incremental"' killed/checkpoints/$last/meta.json || true)
  deltas_resumed=$((deltas_resumed + delta))
  echo "killed while writing ${tmp:-(a write that had just finished)}; the newest complete checkpoint: $last ($([ "$delta" = 1 ] && echo delta || echo full))"
}
# Full checkpoints at steps 1, 5, 9, ...: steps 7, 40 and 80 are deltas, so each kill lands while a
# delta is written and the resume reads a full checkpoint and deltas.
kill_mid_write 7 t.yaml --run-dir killed
kill_mid_write 40 --resume killed
kill_mid_write 80 --resume killed
[ "$deltas_resumed" -ge 2 ] || fail "only $deltas_resumed of the resumes started from a delta"
"$B" train --resume killed --quiet >>run.txt 2>&1 || { cat run.txt; fail "the last resume"; }
grep -q "checkpoint (delta" killed/train.log || fail "no delta checkpoint was written"
cmp -s killed/model/dense.bin plain/model/dense.bin || fail "the dense parameters differ from the uninterrupted run's"
for f in $(cd plain/model && find tables -type f | sort); do
  /usr/bin/python3 "$SAME_TABLE" "killed/model/$f" "plain/model/$f" || fail "killed/model/$f differs"
done
echo "ok: killed 3 times while a delta was written, resumed from full + deltas, the model equals the uninterrupted run's"
