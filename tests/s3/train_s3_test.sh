#!/bin/sh
# Training from and checkpointing to an S3-compatible store (npm s3rver on a free loopback port;
# fixtures written and results checked with Debian's boto3):
#  1. DeepFM from TSV and from Parquet objects (a prefix, a glob) gives the byte-identical model
#     of training from the same files on local disk (deterministic: true); no credential appears
#     in train.log, summary.json, config.yaml, the tracking store or the output.
#  2. train.checkpoint_dir s3://...: every checkpoint is in the bucket with meta.json, the newest
#     keep_checkpoints of them; --resume on a machine without the local copy continues from the
#     bucket to the uninterrupted model.
#  3. A fault proxy (503, SlowDown, dropped and stalled connections, on a schedule) between the
#     trainer and the store: the same model, and the retries reported in train.log and
#     summary.json.
#  4. The store stopped mid-run: a clear error naming the object, the operation and the failure;
#     the last checkpoint intact; --resume after the store returns gives the uninterrupted model.
# Usage: train_s3_test.sh RECTRAIN
set -eu
B=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
S3DIR=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/rectrain_s3_train_XXXXXX")
. "$S3DIR/lib.sh"
trap 'kill -9 ${S3_PID:-} ${PROXY_PID:-} 2>/dev/null || true; rm -rf "$W"' EXIT
cd "$W"
export RECTRAIN_TRACKING_STORE="$W/tracking.db"
start_s3rver
use_store "$S3_URL"

mkdir -p tsv
"$B" data gen --rows 12000 --out tsv/part-0.tsv --seed 1 >/dev/null 2>&1
"$B" data gen --rows 12000 --out tsv/part-1.tsv --seed 2 >/dev/null 2>&1
"$B" data gen --rows 3000 --out valid.tsv --seed 3 >/dev/null 2>&1
rm -f tsv/*.prob
boto sync-up tsv data tsv
boto put data valid/valid.tsv valid.tsv
mkdir pq
for c in gzip snappy zstd uncompressed; do cp "$S3DIR/../parquet_fixtures/duckdb_${c}_v1.parquet" "pq/part-$c.parquet"; done
boto sync-up pq data pq

cat > tsv.yaml <<'CFG'
seed: 7
deterministic: true
threads: 1
data: {format: criteo, batch_size: 256, shuffle: true, shuffle_buffer: 2000, cache: off}
model: {type: deepfm, embedding_dim: 8, hidden: [32, 16]}
embedding: {optimizer: {type: adagrad, lr: 0.05}}
optimizer: {type: adam, lr: 0.002}
train: {epochs: 2, log_every_steps: 20}
monitoring: {enabled: false}
CFG
cat > pq.yaml <<'CFG'
seed: 7
deterministic: true
threads: 1
data: {format: parquet, label: label, dense: [i32, f64], sparse: [c_low, s_high], batch_size: 128, shuffle: true, cache: off}
model: {type: deepfm, embedding_dim: 8, hidden: [16]}
optimizer: {type: adam, lr: 0.002}
train: {epochs: 2, log_every_steps: 20}
monitoring: {enabled: false}
CFG

echo "== 1. the same model from the bucket as from local files"
"$B" train tsv.yaml --run-dir local-tsv --quiet --set 'data.train=[tsv/part-0.tsv, tsv/part-1.tsv]' \
  --set data.valid=valid.tsv >/dev/null || fail "local TSV run"
"$B" train tsv.yaml --run-dir s3-tsv --quiet --set data.train=s3://data/tsv/ --set data.valid=s3://data/valid/valid.tsv \
  >s3-tsv.txt 2>&1 || { cat s3-tsv.txt; fail "TSV run from the bucket"; }
same_model local-tsv s3-tsv
[ "$(json s3-tsv/summary.json "j['valid']['auc']")" = "$(json local-tsv/summary.json "j['valid']['auc']")" ] || fail "valid AUC differs"
[ "$(json s3-tsv/summary.json "j['object_store']['requests'] > 0")" = True ] || fail "no object_store traffic in summary.json"
"$B" train pq.yaml --run-dir local-pq --quiet --set 'data.train=pq/*.parquet' >/dev/null || fail "local Parquet run"
"$B" train pq.yaml --run-dir s3-pq --quiet --set 'data.train=s3://data/pq/part-*.parquet' >s3-pq.txt 2>&1 ||
  { cat s3-pq.txt; fail "Parquet run from the bucket"; }
same_model local-pq s3-pq
echo "ok: TSV (prefix) and Parquet (glob) from the bucket give the local models byte for byte"
for secret in "$AWS_SECRET_ACCESS_KEY" "$AWS_SESSION_TOKEN"; do
  ! grep -rl "$secret" s3-tsv s3-pq s3-tsv.txt "$RECTRAIN_TRACKING_STORE"* || fail "a credential was written out"
done
echo "ok: no credential in train.log, summary.json, config.yaml, the tracking store or the output"

echo "== 2. checkpoints in the bucket, --resume from it"
set -- --set data.train=s3://data/tsv/ --set data.valid=s3://data/valid/valid.tsv \
  --set train.checkpoint_every_steps=40 --set train.keep_checkpoints=2
"$B" train tsv.yaml --run-dir run-a --quiet "$@" --set train.checkpoint_dir=s3://data/runs/a/checkpoints >run-a.txt 2>&1 &
TRAIN=$!
wait_log run-a/train.log "checkpoint uploaded to s3://data/runs/a/checkpoints/step-80" $TRAIN
kill -TERM $TRAIN
if wait $TRAIN; then fail "the run was not interrupted"; fi
complete() {  # the complete checkpoints (with meta.json) under a bucket prefix
  boto list data "$1" | /usr/bin/python3 -c "import json,sys; print(sorted({k[0].split('/')[3] for k in json.load(sys.stdin) if k[0].endswith('/meta.json')}))"
}
echo "in the bucket after SIGTERM: $(complete runs/a/checkpoints/)"
# Another machine: the run directory without its local checkpoints resumes from the bucket.
rm -rf run-a/checkpoints
"$B" train --resume run-a --quiet >resume.txt 2>&1 || { cat resume.txt; fail "resume from the bucket"; }
"$B" train tsv.yaml --run-dir run-b --quiet "$@" --set train.checkpoint_dir=s3://data/runs/b/checkpoints >/dev/null 2>&1 ||
  fail "uninterrupted run"
same_model run-a run-b
steps=$(json run-b/summary.json "j['train']['steps']")
want=$(/usr/bin/python3 -c "s=$steps; c=sorted(set(list(range(40, s + 1, 40)) + [s])); print(sorted('step-%d' % n for n in c[-2:]))")
[ "$(complete runs/a/checkpoints/)" = "$want" ] || fail "bucket holds $(complete runs/a/checkpoints/), want $want"
echo "ok: interrupted, resumed from the bucket alone, the uninterrupted model; the bucket keeps the newest 2 checkpoints"

echo "== 3. faults between the trainer and the store"
start_proxy "503%7,slowdown%11,drop%13,stall%29"
use_store "$PROXY_URL"
"$B" train tsv.yaml --run-dir faults --quiet --set data.train=s3://data/tsv/ --set data.valid=s3://data/valid/valid.tsv \
  >faults.txt 2>&1 || { cat faults.txt; tail -5 "$PROXY_LOG"; fail "training through the fault proxy"; }
use_store "$S3_URL"
same_model local-tsv faults
retries=$(json faults/summary.json "j['object_store']['retries']")
[ "$retries" -gt 0 ] || fail "no retries reported"
grep -q "object store: .* $retries retries" faults/train.log || fail "train.log does not report the retries"
injected=$(grep -c '"fault": "\(503\|slowdown\|drop\|stall\)"' "$PROXY_LOG" || true)
echo "ok: $injected faults injected, $retries retries ($(json faults/summary.json "j['object_store']['retry_reasons']")), same model"

echo "== 4. the store stops mid-run"
AWS_MAX_ATTEMPTS=3 "$B" train tsv.yaml --run-dir stop --set data.train=s3://data/tsv/ --set data.valid=s3://data/valid/valid.tsv \
  --set train.checkpoint_every_steps=20 --set train.checkpoint_dir=s3://data/runs/stop/checkpoints \
  >stop.txt 2>&1 &
TRAIN=$!
wait_log stop/train.log "checkpoint uploaded to .*step-40" $TRAIN
stop_s3rver
if wait $TRAIN; then fail "training went on without its store"; fi
grep -q "s3://data/.*failed after 3 attempts.*connection refused" stop.txt || { cat stop.txt; fail "the error does not name the object, the operation and the failure"; }
grep "error" stop.txt | head -2
[ -f stop/checkpoints/step-40/meta.json ] || fail "the last local checkpoint is not intact"
start_s3rver
boto list data runs/stop/checkpoints/step-40/ | grep -q meta.json || fail "the last checkpoint in the bucket is not intact"
"$B" train --resume stop --quiet >resume2.txt 2>&1 || { cat resume2.txt; fail "resume after the store came back"; }
same_model stop local-tsv
echo "ok: a clear error when the store went away, and --resume gave the uninterrupted model"
