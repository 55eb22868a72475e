#!/bin/sh
# Serving benchmarks (docs/benchmarks.md "Serving"): the criteo-shape DeepFM of
# bench/specs/criteo_deepfm.yaml trained on 2M generated rows, exported, then
#  1. offline: rows/s of `rectrain eval` and `rectrain predict` (the forward pass at batch 4096);
#  2. `rectrain serve` on loopback: one client sending 1-row requests (client-timed p50/p99),
#     then wrk with 1 / 32 / 256 rows per request on 1, 16 and 4 connections (requests/s and
#     rows/s from wrk, latency quantiles from the server's histogram), beside the forward pass
#     alone at those batch sizes (model_benchmark BM_DeepFmForward);
#  3. cold start of a 10M-row model: time to /readyz and RSS, with and without checksums;
#  4. 20 hot reloads under load: failed requests.
# Usage: sh bench/serve/run.sh [WORK_DIR]   (from the repository root, after the release build)
#   SERVE_FLAGS="--precision fp32" sh bench/serve/run.sh   serves with fp32 GEMMs
#   ONLY=serve RECTRAIN=/path/to/rectrain sh bench/serve/run.sh   parts 2 and 4 only, with
#   another binary (to compare two builds on the same model in one session)
set -eu
R=$(pwd)
B=${RECTRAIN:-$R/build/release/rectrain}
ONLY=${ONLY:-all}
G=$R/build/release/src/rectrain/serve/serve_grow_model
W=${1:-bench-serve}
mkdir -p "$W" && cd "$W"
DUR=${DUR:-10}
[ -f train.tsv ] || "$B" data gen --rows 2000000 --out train.tsv --seed 1 >/dev/null 2>&1
[ -f valid.tsv ] || "$B" data gen --rows 200000 --out valid.tsv --seed 2 >/dev/null 2>&1
PREC=${PREC:-auto}
if [ ! -f run/model/meta.json ]; then
  "$B" train "$R/bench/specs/criteo_deepfm.yaml" --run-dir run --set data.train=train.tsv --set data.valid=valid.tsv \
    --set model.precision=$PREC --set tracking.enabled=false 2>&1 | grep -E "valid:|samples/s" | tail -2
fi
rm -rf models && "$B" export run --out models/1
if [ "$ONLY" = all ]; then
echo "== offline"
"$B" eval run --data valid.tsv --json > eval.json
python3 -c "import json; j = json.load(open('eval.json')); print('rectrain eval: %d rows in %.2f s = %.0f rows/s, auc %.5f' % (j['rows'], j['seconds'], j['rows'] / j['seconds'], j['auc']))"
"$B" predict models/1 --data valid.tsv --out pred.txt --threads 2
echo "== quantised rows: AUC and size"
for t in fp16 int8; do
  rm -rf q_$t && "$B" export run --out q_$t --rows $t >/dev/null
  "$B" predict q_$t --data valid.tsv --out pred_$t.txt --threads 2 2>/dev/null
done
python3 - <<'PY'
import json
labels = [int(l.split("\t", 1)[0]) for l in open("valid.tsv")]
def auc(p):
    order = sorted(range(len(p)), key=lambda i: p[i])
    ranks = [0.0] * len(p)
    i = 0
    while i < len(order):  # average ranks over ties
        j = i
        while j + 1 < len(order) and p[order[j + 1]] == p[order[i]]:
            j += 1
        for k in range(i, j + 1):
            ranks[order[k]] = (i + j) / 2 + 1
        i = j + 1
    pos = sum(labels)
    neg = len(labels) - pos
    return (sum(r for r, y in zip(ranks, labels) if y) - pos * (pos + 1) / 2) / (pos * neg)
ref = [float(x) for x in open("pred.txt")]
base = auc(ref)
for name, d in (("fp32", "models/1"), ("fp16", "q_fp16"), ("int8", "q_int8")):
    p = ref if name == "fp32" else [float(x) for x in open("pred_%s.txt" % name)]
    size = sum(t["file"]["bytes"] for t in json.load(open(d + "/manifest.json"))["tables"])
    print("%s: auc %.6f (%+.1e)  max |dp| %.1e  table bytes %.1f MB" % (name, auc(p), auc(p) - base,
          max(abs(a - b) for a, b in zip(ref, p)), size / 1e6))
PY
fi

"$B" serve models --port 0 --poll-ms 200 --max-request-rows 100000 ${SERVE_FLAGS:-} >serve.out 2>serve.log &
S=$!
trap 'kill $S 2>/dev/null || true' EXIT
for i in $(seq 100); do grep -q "POST http" serve.out 2>/dev/null && break; sleep 0.1; done
U=$(sed -n 's/^rectrain serve: \(http[^ ]*\) .*/\1/p' serve.out)
for n in 1 32 256; do
  python3 -c "
import json, sys
lines = [l.rstrip('\n') for l in open('valid.tsv')][:$n]
open('req$n.json', 'w').write(json.dumps({'lines': lines}))"
done
cat > post.lua <<'LUA'
wrk.method = "POST"
wrk.headers["Content-Type"] = "application/json"
function init(args) wrk.body = io.open(args[1]):read("*a") end
LUA
metric() { curl -s "$U/metrics" | sed -n "s/^$1 //p"; }
# Latency quantiles from the server's own histogram (as Prometheus' histogram_quantile):
# wrk 4.1's percentiles on these runs disagree with its own mean and request count.
hist() { curl -s "$U/metrics" | grep '^rectrain_serve_request_seconds_bucket' | sed 's/.*le="\([^"]*\)"} /\1 /'; }
run_wrk() {  # connections rows
  b0=$(metric rectrain_serve_batch_rows_sum); c0=$(metric rectrain_serve_batch_rows_count); hist > h0.txt
  wrk -t$(( $1 < 2 ? 1 : 2 )) -c$1 -d${DUR}s -s post.lua "$U/v1/predict" -- req$2.json > wrk_$1_$2.txt
  b1=$(metric rectrain_serve_batch_rows_sum); c1=$(metric rectrain_serve_batch_rows_count); hist > h1.txt
  python3 - "$1" "$2" "$b0" "$b1" "$c0" "$c1" <<'PY'
import re, sys
c, n, b0, b1, c0, c1 = sys.argv[1:]
t = open("wrk_%s_%s.txt" % (c, n)).read()
rps = float(re.search(r"Requests/sec:\s+([\d.]+)", t).group(1))
bad = re.search(r"Non-2xx or 3xx responses: (\d+)", t)
def load(f):
    return [(float("inf") if a == "+Inf" else float(a), float(b)) for a, b in (l.split() for l in open(f))]
h = [(le, x1 - x0) for (le, x1), (_, x0) in zip(load("h1.txt"), load("h0.txt"))]
def q(phi):
    total = h[-1][1]; rank = phi * total; lo = 0.0; prev = 0.0
    for le, cum in h:
        if cum >= rank:
            return lo + (le - lo) * (rank - prev) / max(cum - prev, 1)
        lo, prev = le, cum
batch = (float(b1) - float(b0)) / max(1.0, float(c1) - float(c0))
print("%2s conn x %3s rows/request: %8.0f requests/s %9.0f rows/s  server p50 %.2f ms p99 %.2f ms  mean batch %.1f rows  failed %s"
      % (c, n, rps, rps * int(n), q(0.5) * 1e3, q(0.99) * 1e3, batch, bad.group(1) if bad else 0))
PY
}
one_client() {  # a closed loop of 1-row requests on one connection, timed by the client
  python3 - "$U" <<'PY'
import sys, time, http.client, urllib.parse
u = urllib.parse.urlparse(sys.argv[1])
body = open("req1.json").read()
c = http.client.HTTPConnection(u.hostname, u.port)
ts = []
for i in range(5000):
    t = time.perf_counter()
    c.request("POST", "/v1/predict", body, {"Content-Type": "application/json"})
    c.getresponse().read()
    ts.append(time.perf_counter() - t)
ts.sort()
print(" 1 conn x   1 row,  client-timed (python http.client): p50 %.3f ms  p99 %.3f ms  max %.1f ms  (%.0f requests/s)"
      % (ts[len(ts) // 2] * 1e3, ts[int(len(ts) * 0.99)] * 1e3, ts[-1] * 1e3, len(ts) / sum(ts)))
PY
}
echo "== serve ($(nproc) cores; wrk shares them)"
one_client
run_wrk 1 1
run_wrk 16 1
run_wrk 16 32
run_wrk 4 256

if [ "$ONLY" = all ]; then
  echo "== the forward pass alone, 2 threads (fp32 and bf16)"
  OMP_WAIT_POLICY=passive "$R/build/release/src/rectrain/nn/model_benchmark" --benchmark_filter='BM_DeepFmForward/.*/threads:2' \
    --benchmark_min_time=0.5 2>/dev/null | grep BM_ | awk '{print "  " $1, $NF}'
fi

echo "== 20 hot reloads under load"
wrk -t2 -c8 -d${DUR}s -s post.lua "$U/v1/predict" -- req1.json > wrk_reload.txt &
WK=$!
sleep 0.5
for v in $(seq 2 21); do
  cp -r models/1 models/.tmp$v && sed -i "s/\"version\": 1$/\"version\": $v/" models/.tmp$v/manifest.json && mv models/.tmp$v models/$v
  for i in $(seq 100); do curl -s "$U/readyz" | grep -q "\"model_version\":$v" && break; sleep 0.05; done
done
wait $WK
echo "$(grep -o '[0-9]* requests in [0-9.]*s' wrk_reload.txt) across 20 reloads; failed: $(sed -n 's/.*Non-2xx or 3xx responses: //p' wrk_reload.txt | grep . || echo 0); serving version $(curl -s "$U/readyz")"
kill $S; wait $S 2>/dev/null || true
[ "$ONLY" = all ] || exit 0

echo "== cold start, 10M embedding rows"
[ -d big ] || "$G" models/1 big 10000000
for mode in verify no-verify; do
  sync; echo 3 > /proc/sys/vm/drop_caches 2>/dev/null || true
  flag=""; [ $mode = no-verify ] && flag=--no-verify
  t0=$(date +%s.%N)
  "$B" serve big --port 0 $flag >big.out 2>big.log &
  S=$!
  for i in $(seq 600); do grep -q "POST http" big.out 2>/dev/null && break; sleep 0.05; done
  t1=$(date +%s.%N)
  U=$(sed -n 's/^rectrain serve: \(http[^ ]*\) .*/\1/p' big.out)
  rss=$(ps -o rss= -p $S)
  curl -s -X POST "$U/v1/predict" -H 'Content-Type: application/json' --data-binary @req32.json >/dev/null
  rss2=$(ps -o rss= -p $S)
  echo "$mode: ready in $(python3 -c "print('%.2f' % ($t1 - $t0))") s; RSS $((rss / 1024)) MiB (after 32 rows: $((rss2 / 1024)) MiB); table file $(du -m big/tables/*.rows | cut -f1) MiB"
  kill $S; wait $S 2>/dev/null || true
done
