#!/bin/sh
# Export to and serve from an S3-compatible store (npm s3rver; boto3 checks what was written):
#  1. `rectrain export RUN --out s3://data/models/1`: the package is in the bucket, manifest.json
#     uploaded last (the proxy log), and `rectrain predict s3://...` equals `rectrain eval`.
#  2. `rectrain serve s3://data/models`: version 1 downloaded into the cache directory and
#     served; a version uploaded without its manifest is ignored; version 2 exported to the
#     bucket is downloaded, verified and hot-swapped while wrk keeps 8 connections busy, with no
#     failed request.
# Usage: serve_s3_test.sh RECTRAIN
set -eu
B=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
S3DIR=$(cd "$(dirname "$0")" && pwd)
W=$(mktemp -d "${TMPDIR:-/tmp}/rectrain_s3_serve_XXXXXX")
. "$S3DIR/lib.sh"
trap 'kill -9 ${S3_PID:-} ${PROXY_PID:-} ${SERVE_PID:-} ${WRK:-} 2>/dev/null || true; rm -rf "$W"' EXIT
cd "$W"
command -v curl >/dev/null || fail "curl is not installed (scripts/install_deps.sh installs it)"
export RECTRAIN_TRACKING_STORE="$W/tracking.db"
start_s3rver
start_proxy ""
use_store "$PROXY_URL"

two_runs

echo "== 1. export to the bucket"
"$B" export run1 --out s3://data/models/1 | tee export.log
grep -q "version 1" export.log || fail "export did not report version 1"
"$B" export run1 --out s3://data/models/1 2>err.txt && fail "export over an existing version succeeded"
grep -q "already exists" err.txt || fail "no AlreadyExists message: $(cat err.txt)"
last=$(grep '"PUT"\|"POST"' "$PROXY_LOG" | tail -1)
echo "$last" | grep -q "models/1/manifest.json" || fail "manifest.json was not the last upload: $last"
boto sync-down data models/1 got1
"$B" export run1 --out local1 >/dev/null
for f in dense.bin $(cd local1 && ls tables/*); do cmp "got1/$f" "local1/$f" || fail "$f in the bucket differs from a local export"; done
"$B" eval run1 --data va.tsv --predictions eval.txt >/dev/null
boto put data va/va.tsv va.tsv
"$B" predict local1 --data s3://data/va/va.tsv --out s3://data/out/pred.txt 2>/dev/null || fail "predict to the bucket"
boto get data out/pred.txt pred.txt
cmp eval.txt pred.txt || fail "rectrain predict (data and output in the bucket) differs from rectrain eval"
echo "ok: the package in the bucket (manifest last); predict from and to the bucket equals eval"

echo "== 2. serve from the bucket, hot swap under load"
"$B" serve s3://data/models --port 0 --poll-ms 100 --cache-dir "$W/cache" >serve.out 2>serve.log &
SERVE_PID=$!
for i in $(seq 300); do grep -q "POST http" serve.out 2>/dev/null && break; sleep 0.1; done
U=$(sed -n 's/^rectrain serve: \(http[^ ]*\) .*/\1/p' serve.out)
[ -n "$U" ] || { cat serve.log; fail "serve did not print its URL"; }
curl -sf "$U/readyz" | grep -q '"model_version":1' || fail "version 1 is not served"
[ -f "$W/cache/1/manifest.json" ] || fail "version 1 is not in the cache directory"
# A version still being uploaded (no manifest.json) is ignored.
mkdir -p part/tables && cp got1/dense.bin part/ && boto sync-up part data models/3
sleep 1
curl -sf "$U/readyz" | grep -q '"model_version":1' || fail "a version without its manifest was loaded"
python3 -c '
import json
lines = [l.rstrip("\n") for l in open("va.tsv")][:4]
open("req.json", "w").write(json.dumps({"lines": lines}))'
post_lua
if command -v wrk >/dev/null; then
  wrk -t2 -c8 -d8s -s post.lua "$U/v1/predict" > wrk.txt &
  WRK=$!
  sleep 1
fi
"$B" export run2 --out s3://data/models/2 >/dev/null || fail "export of version 2"
for i in $(seq 300); do curl -s "$U/readyz" | grep -q '"model_version":2' && break; sleep 0.05; done
curl -s "$U/readyz" | grep -q '"model_version":2' || { tail serve.log; fail "version 2 was not hot-swapped"; }
grep -q "serving version 2 from $W/cache/2" serve.log || fail "version 2 was not served from the cache directory"
if [ -n "${WRK:-}" ]; then
  wait $WRK
  cat wrk.txt
  grep -q "Non-2xx" wrk.txt && fail "failed requests during the swap"
  grep -q "Socket errors" wrk.txt && fail "socket errors during the swap"
  echo "ok: version 2 from the bucket hot-swapped under load: $(grep -o '[0-9]* requests in' wrk.txt), no failed request"
else
  echo "ok: version 2 from the bucket hot-swapped (wrk not installed: no load)"
fi
kill $SERVE_PID
