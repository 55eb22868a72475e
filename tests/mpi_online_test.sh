#!/bin/sh
# Online training under a real MPI launcher (ctest label "mpi"): a private redis-server holds two
# streams (data.stream.partitions), rank i of a 2-rank job reads stream i; the job trains on every
# row produced exactly once (train.max_rows), commits its positions, and publishes as it trains
# (train.publish: rank 0 gathers the ranks' rows; the version's events are the job's: the newest
# event over the ranks and every rank's stream position). The last published version scores bit
# for bit as `rectrain export` of the job's final checkpoint. Exits 77 (skip) without redis-server.
# Usage: mpi_online_test.sh RECTRAIN MPIEXEC [MPIEXEC FLAGS...]
set -eu
B=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
MPIEXEC=$2
shift 2
FLAGS="$*"
command -v redis-server >/dev/null && command -v redis-cli >/dev/null || { echo "skip: no redis-server"; exit 77; }
W=$(mktemp -d "${TMPDIR:-/tmp}/rectrain_mpi_online_XXXXXX")
REDIS_PID=
cleanup() {
  [ -n "$REDIS_PID" ] && kill "$REDIS_PID" 2>/dev/null
  rm -rf "$W"
}
trap cleanup EXIT
cd "$W"
fail() { echo "FAIL: $*"; exit 1; }
field() {  # field JSON_FILE python-expression-on-it
  /usr/bin/python3 -c "import json; s=json.load(open('$1')); print($2)"
}

# A free loopback port for the private server (bind test in Python: no fixed port).
PORT=$(/usr/bin/python3 -c "import socket; s=socket.socket(); s.bind(('127.0.0.1', 0)); print(s.getsockname()[1])")
redis-server --port "$PORT" --bind 127.0.0.1 --save '' --appendonly no >redis.log 2>&1 &
REDIS_PID=$!
i=0
until redis-cli -p "$PORT" ping >/dev/null 2>&1; do
  i=$((i + 1))
  [ "$i" -le 100 ] || { cat redis.log; fail "redis-server did not start"; }
  sleep 0.1
done

ROWS=4000
"$B" data gen --rows "$ROWS" --out train.tsv --seed 3 >/dev/null 2>&1
# One message per row, spread over the two streams in turn (2000 each).
"$B" data produce train.tsv --to "redis://127.0.0.1:$PORT/ev0" --key ev0 --key ev1 --rate 0 --quiet >/dev/null ||
  fail "data produce"
[ "$(redis-cli -p "$PORT" xlen ev0)" = 2000 ] && [ "$(redis-cli -p "$PORT" xlen ev1)" = 2000 ] ||
  fail "the streams do not hold 2000 messages each"
cat > cfg.yaml <<CFG
seed: 7
deterministic: true
threads: 1
data:
  batch_size: 200
  stream: {url: "redis://127.0.0.1:$PORT/ev0", partitions: [ev0, ev1], group: job, start: earliest}
model: {type: deepfm, embedding_dim: 4, hidden: [16, 8]}
optimizer: {type: adam, lr: 0.003}
train:
  max_rows: $ROWS
  checkpoint_every_steps: 4
  log_every_steps: 5
  publish: {to: models, every_s: 0.01, full_every: 3}
dist: {timeout_s: 30}
tracking: {enabled: false}
monitoring: {enabled: false}
CFG
$MPIEXEC $FLAGS -np 2 "$B" train cfg.yaml --run-dir job --quiet >job.txt 2>&1 || { cat job.txt; fail "2-rank online run"; }
[ "$(field job/summary.json "s['dist']['world']")" = 2 ] || fail "summary.json does not say world 2"
[ "$(field job/summary.json "s['train']['rows_read']")" = "$ROWS" ] || fail "the job did not train on every row once"
[ "$(field job/summary.json "s['status']")" = completed ] || fail "the job did not complete"
# Both ranks' positions were committed: the group has nothing pending on either stream.
for key in ev0 ev1; do
  pending=$(redis-cli -p "$PORT" xpending "$key" job | head -n 1)
  [ "$pending" = 0 ] || fail "stream $key has $pending messages not acknowledged by the group"
done
# The newest version is a delta chain ending at the job's final state; its events are the job's.
LAST=$(ls models | grep -E '^[0-9]+$' | sort -n | tail -n 1)
[ -n "$LAST" ] && [ "$LAST" -ge 2 ] || fail "fewer than 2 versions published: $(ls models)"
M=models/$LAST/manifest.json
[ "$(field "$M" "len(s['events']['stream_position']['partitions'])")" = 2 ] ||
  fail "the version's stream position is not both ranks': $(cat "$M")"
[ "$(field "$M" "s['events']['newest_ms'] > 1600000000000")" = True ] || fail "no event time in $M"
"$B" export job --out exported >/dev/null 2>&1 || fail "export of the job's final checkpoint"
"$B" predict "models/$LAST" --data train.tsv --out served.txt >/dev/null 2>&1 || fail "predict with the chain"
"$B" predict exported --data train.tsv --out exported.txt >/dev/null 2>&1 || fail "predict with the export"
cmp -s served.txt exported.txt || fail "the published chain does not score as the export of the final checkpoint"
echo "ok: 2 ranks trained $ROWS rows from 2 streams once, published $LAST versions, the last = the export"
