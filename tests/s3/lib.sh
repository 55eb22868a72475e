# tests/s3/lib.sh: sourced by the object-storage end-to-end tests. Starts npm's s3rver (installed
# in tests/s3/node_modules by the build's `npm ci`) and the fault proxy on free loopback ports,
# runs Debian's boto3 (the independent client), and points rectrain at the server through the
# variables the AWS tools read. Needs: S3DIR (this directory), W (the test's work directory).

fail() { echo "FAIL: $*"; exit 1; }

free_port() {
  /usr/bin/python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
}

# wait_port PORT PID LOG: until something listens on PORT (30 s), or PID exits.
wait_port() {
  i=0
  until /usr/bin/python3 -c "import socket,sys; socket.create_connection(('127.0.0.1',$1),1)" 2>/dev/null; do
    kill -0 "$2" 2>/dev/null || { cat "$3"; fail "process $2 exited before listening on $1"; }
    i=$((i + 1)); [ $i -lt 300 ] || fail "nothing listens on port $1 after 30 s"
    sleep 0.1
  done
}

# wait_log FILE PATTERN PID: until FILE has a line matching PATTERN (60 s), while PID runs.
wait_log() {
  i=0
  until grep -q "$2" "$1" 2>/dev/null; do
    i=$((i + 1)); [ $i -lt 1200 ] || fail "no line \"$2\" in $1"
    kill -0 "$3" 2>/dev/null || fail "the run ended before \"$2\" appeared in $1"
    sleep 0.05
  done
}

# start_s3rver: s3rver on $S3_PORT (chosen once) over $W/s3data with bucket "data"; sets S3_PID.
start_s3rver() {
  [ -f "$S3DIR/node_modules/s3rver/bin/s3rver.js" ] || fail "s3rver missing: run npm ci in tests/s3 (the build does it)"
  : "${S3_PORT:=$(free_port)}"
  mkdir -p "$W/s3data"
  # s3rver 3.7 builds ListObjectsV2 continuation tokens with DES: OpenSSL's legacy provider.
  node --openssl-legacy-provider "$S3DIR/node_modules/s3rver/bin/s3rver.js" -d "$W/s3data" -a 127.0.0.1 \
    -p "$S3_PORT" --configure-bucket data --silent >"$W/s3rver.log" 2>&1 &
  S3_PID=$!
  wait_port "$S3_PORT" "$S3_PID" "$W/s3rver.log"
  S3_URL=http://127.0.0.1:$S3_PORT
}

stop_s3rver() { kill -9 "$S3_PID" 2>/dev/null; wait "$S3_PID" 2>/dev/null || true; }

# start_proxy PLAN [ONLY]: the fault proxy in front of s3rver, faulting only requests whose path
# contains ONLY (if given); sets PROXY_URL, PROXY_PID, PROXY_LOG.
start_proxy() {
  PROXY_PORT=$(free_port)
  PROXY_LOG=$W/proxy-$PROXY_PORT.log
  /usr/bin/python3 "$S3DIR/fault_proxy.py" --upstream "$S3_URL" --port "$PROXY_PORT" --plan "$1" --only "${2:-}" \
    --stall-seconds 3 --log "$PROXY_LOG" >"$PROXY_LOG.out" 2>&1 &
  PROXY_PID=$!
  wait_port "$PROXY_PORT" "$PROXY_PID" "$PROXY_LOG.out"
  PROXY_URL=http://127.0.0.1:$PROXY_PORT
}

boto() { /usr/bin/python3 "$S3DIR/boto_tool.py" "$S3_URL" "$@"; }

# use_store URL: rectrain talks to URL as the AWS tools would be told to (credentials from the
# environment: s3rver takes any signature); short backoffs keep failure paths quick.
# s3rver knows only the key id S3RVER but takes any signature, so the secret and the token are
# unique strings that a test can grep for in every output.
use_store() {
  export AWS_ENDPOINT_URL="$1" AWS_ACCESS_KEY_ID=S3RVER AWS_REGION=us-east-1
  export AWS_SECRET_ACCESS_KEY=rectrain-secret-7c41d0e2 AWS_SESSION_TOKEN=rectrain-token-93ab5f17
  export AWS_MAX_ATTEMPTS=${AWS_MAX_ATTEMPTS:-8} RECTRAIN_S3_RETRY_BASE_MS=20 RECTRAIN_S3_RETRY_MAX_MS=200
  export RECTRAIN_S3_STALL_TIMEOUT_MS=1000
}

# same_model RUN_A RUN_B: the trained models' parameters are the same bit for bit: dense.bin byte
# for byte, each embedding table row by row (same_table.py: a reload may change the slot order
# rows are written in). meta.json differs (timings, the config's hash over the data paths).
same_model() {
  cmp -s "$1/model/dense.bin" "$2/model/dense.bin" || fail "$1/model/dense.bin differs from $2/model/dense.bin"
  for f in $(cd "$1/model" && find tables -type f | sort); do
    /usr/bin/python3 "$S3DIR/same_table.py" "$1/model/$f" "$2/model/$f" || fail "$1/model/$f differs from $2/model/$f"
  done
}

json() {  # json FILE python-expression-on-j
  /usr/bin/python3 -c "import json,sys; j=json.load(open('$1')); print($2)"
}

# two_runs: tr.tsv, va.tsv and two small DeepFM runs on them, run1 and run2 (another seed), with
# m.yaml their config. Needs B (the rectrain binary).
two_runs() {
  "$B" data gen --rows 20000 --out tr.tsv --seed 1 >/dev/null 2>&1
  "$B" data gen --rows 2000 --out va.tsv --seed 2 >/dev/null 2>&1
  cat > m.yaml <<'CFG'
threads: 2
data: {train: tr.tsv, valid: va.tsv, format: criteo, batch_size: 512}
model: {type: deepfm, embedding_dim: 8, hidden: [32]}
train: {epochs: 1}
tracking: {enabled: false}
CFG
  "$B" train m.yaml --run-dir run1 --quiet >/dev/null 2>&1 || fail "training run1"
  "$B" train m.yaml --run-dir run2 --quiet --set seed=7 >/dev/null 2>&1 || fail "training run2"
}

# post_lua: post.lua, wrk's script POSTing req.json to /v1/predict.
post_lua() {
  cat > post.lua <<'LUA'
wrk.method = "POST"
wrk.body = io.open("req.json"):read("*a")
wrk.headers["Content-Type"] = "application/json"
LUA
}
