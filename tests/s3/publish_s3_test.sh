#!/bin/sh
# Publishing to an S3-compatible store (npm s3rver; boto3 reads what was written), served by
# `rectrain serve s3://...` (docs/online.md "Publishing to serving"):
#  1. `rectrain publish RUN --to s3://data/models`: a full export, then deltas; each version's
#     manifest.json is its last upload (the proxy log), a delta's manifest is a delta's.
#  2. A server started on version 1 follows deltas 2..4 under wrk load with no failed request,
#     applying them to the version it serves; a server started on an empty cache fetches the
#     newest delta's chain; both score bit for bit as `rectrain export` of the last model.
#  3. A run with train.publish.to s3:// (full_every 0): versions staged in RUN/publish-staging and
#     uploaded, the staging directory pruned to the full export and the newest delta; the newest
#     served from the bucket scores as the export of the run's final model.
#  4. The store killed (SIGKILL) while a run trained from a Redis stream publishes: the failures
#     are counted and logged, training goes on, publishing recovers once the store is back, and
#     a server that lost the store meanwhile ends on the last version, bit-equal to the export.
# Usage: publish_s3_test.sh RECTRAIN
set -eu
B=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
S3DIR=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/rectrain_s3_publish_XXXXXX")
. "$S3DIR/lib.sh"
trap 'kill -9 ${S3_PID:-} ${PROXY_PID:-} ${SERVE_PID:-} ${SERVE2_PID:-} ${WRK:-} ${TRAIN_PID:-} ${PROD_PID:-} ${REDIS_PID:-} 2>/dev/null || true; rm -rf "$W"' EXIT
cd "$W"
export TMPDIR="$W"  # the publisher's temporary staging directories, checked below
export RECTRAIN_TRACKING_STORE="$W/tracking.db"
start_s3rver
start_proxy ""
use_store "$PROXY_URL"

two_runs
head -200 va.tsv > head.tsv
python3 -c '
import json
open("req.json", "w").write(json.dumps({"lines": [l.rstrip("\n") for l in open("head.tsv")]}))'

# served PORT OUT: the predictions of head.tsv served on PORT, one per line.
served() {
  curl -sf -X POST -H 'Content-Type: application/json' --data-binary @req.json "http://127.0.0.1:$1/v1/predict" |
    python3 -c 'import json,sys; print("\n".join(repr(p) for p in json.load(sys.stdin)["predictions"]))' > "$2"
}
# same_scores A B: two prediction files hold the same fp32 values, row for row.
same_scores() {
  python3 - "$1" "$2" <<'PY' || fail "$1 and $2 differ"
import struct, sys
def f32(path):
    return [struct.pack("<f", float(v)) for v in open(path).read().split()]
a, b = f32(sys.argv[1]), f32(sys.argv[2])
sys.exit(0 if len(a) == 200 and a == b else 1)
PY
}
# exported_scores RUN OUT: `rectrain export RUN` (its final model, a full export) scored by predict.
exported_scores() {
  rm -rf "exp-$1" && "$B" export "$1" --out "exp-$1" >/dev/null || fail "export of $1"
  "$B" predict "exp-$1" --data head.tsv --out "$2" >/dev/null 2>&1 || fail "predict with the export of $1"
}
# start_serve URL CACHE LOG: sets SERVE_PORT, and the pid in LAST_PID.
start_serve() {
  "$B" serve "$1" --port 0 --poll-ms 50 --cache-dir "$2" >"$3.out" 2>"$3" &
  LAST_PID=$!
  for i in $(seq 300); do grep -q "POST http" "$3.out" 2>/dev/null && break; sleep 0.1; done
  SERVE_PORT=$(sed -n "s|^rectrain serve: http://[^:]*:\([0-9]*\).*|\1|p" "$3.out")
  [ -n "$SERVE_PORT" ] || { cat "$3"; fail "serve did not print its URL"; }
}
# wait_version PORT N LOG: until version N is served (30 s).
wait_version() {
  for i in $(seq 600); do curl -s "http://127.0.0.1:$1/readyz" | grep -q "\"model_version\":$2[,}]" && return 0; sleep 0.05; done
  tail "$3"; fail "version $2 was not served on port $1"
}

echo "== 1. rectrain publish to the bucket: a full export, then deltas"
"$B" publish run1 --to s3://data/models --full-every 0 | tee pub1.log
grep -q "version 1, a full export" pub1.log || fail "the first publish is not a full export"
last=$(grep '"PUT"\|"POST"' "$PROXY_LOG" | tail -1)
echo "$last" | grep -q "models/1/manifest.json" || fail "manifest.json was not the last upload: $last"
ls "$W" | grep -q rectrain-publish- && fail "the temporary staging directory was left behind"

echo "== 2. a server follows the deltas under load; a fresh one fetches the chain"
start_serve s3://data/models "$W/cache" serve.log
SERVE_PID=$LAST_PID P1=$SERVE_PORT
wait_version "$P1" 1 serve.log
post_lua
wrk -t1 -c4 -d60s -s post.lua "http://127.0.0.1:$P1/v1/predict" > wrk.txt &
WRK=$!
for run in run2 run1 run2; do
  "$B" publish "$run" --to s3://data/models --full-every 0 | tee -a pubs.log
done
[ "$(grep -c 'a delta of version' pubs.log)" = 3 ] || fail "versions 2..4 are not deltas: $(cat pubs.log)"
boto get data models/2/manifest.json m2.json
grep -q '"rectrain-serving-delta"' m2.json || fail "version 2's manifest is not a delta's: $(cat m2.json)"
for v in 2 3 4; do
  grep "\"PUT\"\|\"POST\"" "$PROXY_LOG" | grep "models/$v/" | tail -1 | grep -q "models/$v/manifest.json" ||
    fail "manifest.json was not the last upload of version $v"
done
wait_version "$P1" 4 serve.log
kill -INT $WRK; wait $WRK || true; WRK=
cat wrk.txt
grep -q "requests in" wrk.txt || fail "wrk did not run"
grep -q "Non-2xx\|Socket errors" wrk.txt && fail "failed requests while the deltas were applied"
grep -q "refused" serve.log && fail "the server refused a version: $(cat serve.log)"
grep -q "applied to version" serve.log || fail "no delta was applied to the served version: $(cat serve.log)"
exported_scores run2 want2.txt
served "$P1" got1.txt
same_scores want2.txt got1.txt
start_serve s3://data/models "$W/cache2" serve2.log
SERVE2_PID=$LAST_PID
wait_version "$SERVE_PORT" 4 serve2.log
grep -q "full export .*/1 and 3 deltas" serve2.log || fail "the fresh server did not load the chain 1..4: $(cat serve2.log)"
served "$SERVE_PORT" got2.txt
same_scores want2.txt got2.txt
kill $SERVE2_PID; wait $SERVE2_PID 2>/dev/null || true; SERVE2_PID=
echo "ok: versions 2..4 are deltas in the bucket; served from it (applied in order, or as a chain) they score as the export"

echo "== 3. a run publishing to the bucket"
# Batches of 64 (~310 steps): a publish due while one is uploaded is skipped (docs/online.md), so
# the run lasts long enough for several uploads.
cat > pub.yaml <<'CFG'
threads: 2
seed: 3
deterministic: true
data: {train: tr.tsv, format: criteo, batch_size: 64}
model: {type: deepfm, embedding_dim: 8, hidden: [32]}
train: {epochs: 1, publish: {to: 's3://data/trained', every_s: 0.02, full_every: 0}}
tracking: {enabled: false}
CFG
"$B" train pub.yaml --run-dir run3 --no-progress >run3.log 2>&1 || { cat run3.log; fail "training run3"; }
grep -q "publish: the model goes to s3://data/trained" run3.log || fail "no publishing announced: $(cat run3.log)"
grep -q "cannot publish" run3.log && fail "a publish failed: $(cat run3.log)"
n=$(boto list data trained/ | python3 -c 'import json,sys; print(len({k.split("/")[1] for k,_,_ in json.load(sys.stdin) if k.endswith("/manifest.json")}))')
[ "$n" -ge 3 ] || fail "$n versions published (want 3 or more)"
# Only a full export then deltas (full_every 0): staging keeps the full export and the newest delta.
staged=$(ls run3/publish-staging | grep -c '^[0-9]*$' || true)
[ "$staged" = 2 ] || fail "run3/publish-staging holds $staged versions after $n published (want the full export and the newest)"
start_serve s3://data/trained "$W/cache3" serve3.log
SERVE2_PID=$LAST_PID
wait_version "$SERVE_PORT" "$n" serve3.log
exported_scores run3 want3.txt
served "$SERVE_PORT" got3.txt
same_scores want3.txt got3.txt
kill $SERVE2_PID; wait $SERVE2_PID 2>/dev/null || true; SERVE2_PID=
echo "ok: $n versions published by the run; the newest, served from the bucket, scores as its export"

echo "== 4. the store killed while a streaming run publishes"
kill $SERVE_PID; wait $SERVE_PID 2>/dev/null || true
use_store "$S3_URL"  # no proxy: the run talks to s3rver itself, which goes away
export AWS_MAX_ATTEMPTS=3
REDIS_PORT=$(free_port)
redis-server --port "$REDIS_PORT" --bind 127.0.0.1 --save '' --appendonly no >redis.log 2>&1 &
REDIS_PID=$!
wait_port "$REDIS_PORT" "$REDIS_PID" redis.log
STREAM=redis://127.0.0.1:$REDIS_PORT/events
head -6000 tr.tsv > stream.tsv
cat > online.yaml <<CFG
threads: 1
seed: 7
deterministic: true
data: {format: criteo, batch_size: 128, stream: {url: '$STREAM', group: g, start: earliest}}
model: {type: deepfm, embedding_dim: 4, hidden: [16]}
train: {max_rows: 6000, publish: {to: 's3://data/online', every_s: 0.2}}
monitoring: {enabled: false}
tracking: {enabled: false}
CFG
"$B" data produce stream.tsv --to "$STREAM" --rate 600 --quiet >produce.log 2>&1 &
PROD_PID=$!
start_serve s3://data/online "$W/cache4" serve4.log
SERVE_PID=$LAST_PID
"$B" train online.yaml --run-dir run4 --no-progress >run4.log 2>&1 &
TRAIN_PID=$!
wait_version "$SERVE_PORT" 1 serve4.log
stop_s3rver
wait_log run4.log "warning: cannot publish to s3://data/online" "$TRAIN_PID"
start_s3rver
wait $TRAIN_PID || { cat run4.log; fail "the run failed"; }
TRAIN_PID=
wait $PROD_PID || fail "the producer failed"
PROD_PID=
grep "publish" run4.log
grep -q "after [0-9]* failed publish(es)" run4.log || fail "no recovery in the log: $(cat run4.log)"
json run4/summary.json 'j["status"]' | grep -q completed || fail "the run did not complete"
[ "$(json run4/summary.json 'j["train"]["rows_read"]')" = 6000 ] || fail "rows were lost"
failures=$(sed -n 's/.*after \([0-9]*\) failed publish(es).*/\1/p' run4.log | head -1)
n=$(boto list data online/ | python3 -c 'import json,sys; print(max(int(k.split("/")[1]) for k,_,_ in json.load(sys.stdin) if k.endswith("/manifest.json")))')
wait_version "$SERVE_PORT" "$n" serve4.log
grep -q "cannot fetch from s3://data/online" serve4.log || fail "the server did not notice the store was gone"
exported_scores run4 want4.txt
served "$SERVE_PORT" got4.txt
same_scores want4.txt got4.txt
echo "ok: $failures failed publishes while the store was down, training went on, version $n served after it came back equals the export"
