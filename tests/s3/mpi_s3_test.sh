#!/bin/sh
# Two MPI ranks training from a bucket prefix (npm s3rver on a free loopback port):
#  - dist.data_split shards: each rank reads its own share of the objects (the rows of the ranks
#    add up to the data set once), and the model is byte for byte the one 2 ranks train from the
#    same files on local disk;
#  - dist.data_split batches (deterministic: true): the same model as 1 process, within the
#    float-sum noise tests/mpi_train_test.sh documents.
# Usage: mpi_s3_test.sh RECTRAIN MPIEXEC [MPIEXEC FLAGS...]
set -eu
B=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
MPIEXEC=$2
shift 2
FLAGS="$*"
S3DIR=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/rectrain_s3_mpi_XXXXXX")
. "$S3DIR/lib.sh"
trap 'kill -9 ${S3_PID:-} 2>/dev/null || true; rm -rf "$W"' EXIT
cd "$W"
start_s3rver
use_store "$S3_URL"
mkdir -p tsv
for i in 0 1 2 3; do "$B" data gen --rows 6000 --out tsv/part-$i.tsv --seed $((i + 1)) >/dev/null 2>&1; done
"$B" data gen --rows 2000 --out valid.tsv --seed 9 >/dev/null 2>&1
rm tsv/*.prob
boto sync-up tsv data tsv
cat > cfg.yaml <<'CFG'
seed: 7
deterministic: true
threads: 1
data: {format: criteo, valid: valid.tsv, batch_size: 256, shuffle: true, shuffle_buffer: 2000, cache: off}
model: {type: deepfm, embedding_dim: 8, hidden: [32, 16]}
optimizer: {type: adam, lr: 0.002}
train: {epochs: 1, log_every_steps: 20}
dist: {timeout_s: 60, data_split: shards}
tracking: {enabled: false}
monitoring: {enabled: false}
CFG
close() {  # close A B TOL
  /usr/bin/python3 -c "import sys; a,b,t=map(float,sys.argv[1:]); sys.exit(0 if abs(a-b)<=t else 1)" "$1" "$2" "$3"
}
# mpirun passes the environment (AWS_ENDPOINT_URL, ...) to its ranks on one machine.
# shellcheck disable=SC2086
$MPIEXEC $FLAGS -np 2 "$B" train cfg.yaml --run-dir two-s3 --quiet --set data.train=s3://data/tsv/ >two-s3.txt 2>&1 ||
  { cat two-s3.txt; fail "2 ranks from the bucket"; }
# shellcheck disable=SC2086
$MPIEXEC $FLAGS -np 2 "$B" train cfg.yaml --run-dir two-local --quiet --set 'data.train=tsv/*.tsv' >two-local.txt 2>&1 ||
  { cat two-local.txt; fail "2 ranks from local files"; }
"$B" train cfg.yaml --run-dir one --quiet --set 'data.train=tsv/*.tsv' --set dist.data_split=batches >/dev/null 2>&1 ||
  fail "1 process"
same_model two-s3 two-local
rows=$(json two-s3/summary.json "sum(r['rows'] for r in j['dist']['ranks'])")
shares=$(json two-s3/summary.json "[r['rows'] for r in j['dist']['ranks']]")
[ "$(json two-s3/summary.json "min(r['rows'] for r in j['dist']['ranks']) > 0")" = True ] || fail "a rank read nothing: $shares"
[ "$rows" = "$(json one/summary.json "j['train']['rows_read']")" ] || fail "the ranks read $rows rows ($shares), not the data set once"
echo "ok: 2 ranks read disjoint shares $shares of the bucket prefix ($rows rows); the model equals 2 ranks from local files byte for byte"
# shellcheck disable=SC2086
$MPIEXEC $FLAGS -np 2 "$B" train cfg.yaml --run-dir two-batches --quiet --set data.train=s3://data/tsv/ \
  --set dist.data_split=batches --set train.max_steps=30 >two-b.txt 2>&1 || { cat two-b.txt; fail "2 ranks, batches"; }
"$B" train cfg.yaml --run-dir one30 --quiet --set 'data.train=tsv/*.tsv' --set dist.data_split=batches \
  --set train.max_steps=30 >/dev/null 2>&1 || fail "1 process, 30 steps"
close "$(json two-batches/summary.json "j['valid']['logloss']")" "$(json one30/summary.json "j['valid']['logloss']")" 0.000002 ||
  fail "2 ranks from the bucket (batches) differ from 1 process"
echo "ok: 2 ranks from the bucket (data_split batches) = 1 process: logloss $(json two-batches/summary.json "j['valid']['logloss']") vs $(json one30/summary.json "j['valid']['logloss']")"
