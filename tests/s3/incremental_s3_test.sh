#!/bin/sh
# Incremental checkpoints kept in an object store (npm s3rver; boto3 checks the bucket): a run
# with train.checkpoint_dir s3://... and train.checkpoint_full_every 3 uploads a full checkpoint
# and deltas (each delta holding only the tables' changes); on a machine without the local
# checkpoints, `--resume` downloads the newest delta with its chain (the full checkpoint and the
# delta before it) and ends with the uninterrupted run's model.
# Usage: incremental_s3_test.sh RECTRAIN
set -eu
B=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
S3DIR=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/rectrain_s3_inc_XXXXXX")
. "$S3DIR/lib.sh"
trap 'kill -9 ${S3_PID:-} 2>/dev/null || true; rm -rf "$W"' EXIT
cd "$W"
export RECTRAIN_TRACKING_STORE="$W/tracking.db"
start_s3rver
use_store "$S3_URL"
"$B" data gen --rows 6000 --out tr.tsv --seed 1 >/dev/null 2>&1
cat > t.yaml <<'CFG'
seed: 7
deterministic: true
threads: 1
data: {train: tr.tsv, format: criteo, batch_size: 256, shuffle: true, shuffle_buffer: 2000, cache: off}
model: {type: deepfm, embedding_dim: 8, hidden: [32, 16]}
embedding: {optimizer: {type: adagrad, lr: 0.05}}
optimizer: {type: adam, lr: 0.002}
train: {epochs: 2, checkpoint_every_steps: 5, checkpoint_full_every: 3, keep_checkpoints: 1}
monitoring: {enabled: false}
CFG
"$B" train t.yaml --run-dir plain --quiet --set train.checkpoint_full_every=1 >/dev/null 2>&1 || fail "uninterrupted run"
"$B" train t.yaml --run-dir inc --quiet --set train.max_steps=14 --set train.checkpoint_dir=s3://data/runs/i/checkpoints \
  >inc.txt 2>&1 || { cat inc.txt; fail "run with incremental checkpoints to the store"; }
got=$(boto list data runs/i/checkpoints/ | /usr/bin/python3 -c "
import json,sys; print(' '.join(k[len('runs/i/checkpoints/'):] for k, _, _ in json.load(sys.stdin)))")
want="step-10/dense.bin step-10/meta.json step-10/tables/emb.delta.bin step-14/dense.bin step-14/meta.json step-14/tables/emb.delta.bin step-5/dense.bin step-5/meta.json step-5/tables/emb.bin"
[ "$got" = "$want" ] || fail "the bucket holds $got; want $want (keep_checkpoints 1 keeps the chain of the newest delta)"
full=$(wc -c <inc/checkpoints/step-5/tables/emb.bin)
delta=$(wc -c <inc/checkpoints/step-14/tables/emb.delta.bin)
echo "ok: the bucket holds step-5 (full, table $full bytes) and the deltas step-10 and step-14 (table $delta bytes)"
rm -rf inc/checkpoints
"$B" train --resume inc --quiet --set train.max_steps=0 >resume.txt 2>&1 || { cat resume.txt; fail "resume from the bucket"; }
grep -q "resumed from inc/checkpoints/step-14 at step 14," inc/train.log || { grep resum inc/train.log; fail "not resumed from step-14"; }
same_model inc plain
echo "ok: --resume downloaded step-14 with its chain and continued to the uninterrupted model"
