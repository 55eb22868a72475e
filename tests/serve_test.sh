#!/bin/sh
# rectrain export / serve / predict end to end (docs/serving.md):
#  1. export; `rectrain eval --predictions`, `rectrain predict` and `rectrain serve` give
#     bit-equal probabilities with fp32 rows; fp16 and int8 rows stay within their bounds;
#     --min-count leaves rows out.
#  2. Bad requests get a 4xx naming the row and field (too many rows, a body over the limit:
#     413), and the server keeps answering.
#  3. Hot reload: a new version directory is picked up; a corrupt one is refused with the reason
#     and the old version keeps serving; POST /v1/reload; /readyz, /v1/model, /metrics.
#  4. 20 hot reloads while wrk keeps 8 connections busy: not one failed request. The served
#     version is the directory's number; a manifest its config contradicts is refused; a version
#     copied in two parts (manifest first) loads once complete; a dead export's temp dir goes.
#  5. Hostile clients (tests/http_limits_probe.py): /healthz answers while 500 idle and slow
#     connections are held; a chunked body over --max-body-bytes gets 413 at once; ambiguous
#     framing is 400; a POST without a length and pipelined requests are answered.
#  6. Serving deltas (rectrain publish): 30 deltas published while wrk keeps 8 connections busy,
#     each applied in place with not one failed request; the served chain scores bit for bit as
#     `rectrain eval` of the same model; a delta made against another version of its base is
#     refused (log, 409 on /v1/reload) and the server keeps serving.
#  7. Off loopback a token is required.
# Usage: serve_test.sh RECTRAIN
set -eu
B=$(cd "$(dirname "$1")" && pwd)/$(basename "$1")
PROBE=$(cd "$(dirname "$0")" && pwd)/http_limits_probe.py
W=$(mktemp -d "${TMPDIR:-/tmp}/rectrain_serve_XXXXXX")
trap 'pkill -KILL -f "$W/" 2>/dev/null || true; rm -rf "$W"' EXIT
cd "$W"
fail() { echo "FAIL: $*"; [ -f serve.log ] && tail -20 serve.log; exit 1; }
command -v curl >/dev/null || fail "curl is not installed (scripts/install_deps.sh installs it)"

"$B" data gen --rows 30000 --out tr.tsv --seed 1 >/dev/null 2>&1
"$B" data gen --rows 3000 --out va.tsv --seed 2 >/dev/null 2>&1
cat > m.yaml <<'CFG'
threads: 2
data: {train: tr.tsv, valid: va.tsv, format: criteo, batch_size: 512, cache_dir: cache}
features: {log1p: true}
model: {type: deepfm, embedding_dim: 8, hidden: [32, 32]}
optimizer: {type: adam, lr: 0.002}
train: {epochs: 1}
tracking: {enabled: false}
CFG
"$B" train m.yaml --run-dir run1 >train1.log 2>&1 || { cat train1.log; fail "training run1"; }
"$B" train m.yaml --run-dir run2 --set seed=7 >train2.log 2>&1 || fail "training run2"

echo "== 1. export, and the same probabilities from eval, predict and serve"
"$B" export run1 --out models/1 | tee export.log
grep -q "version 1" export.log || fail "export did not report version 1"
"$B" export run1 --out models/1 2>err.txt && fail "export over an existing directory succeeded"
grep -q "already exists" err.txt || fail "no AlreadyExists message: $(cat err.txt)"
# An export killed before its rename (kill -9) leaves DIR.tmp-HOST-PID: the next export into the
# same directory removes those of dead processes of this host, and says so.
sh -c 'exit 0' & DEAD=$!; wait $DEAD
H=$(uname -n)
mkdir -p "models/5.tmp-$H-$DEAD/tables" "models/6.tmp-$DEAD" "models/7.tmp-otherhost-$DEAD" "models/8.tmp-$H-$$"
head -c 100000 /dev/zero > "models/5.tmp-$H-$DEAD/tables/emb.rows"
"$B" export run1 --out models/1 --force >/dev/null 2>export.err || fail "export --force: $(cat export.err)"
for d in "5.tmp-$H-$DEAD" "6.tmp-$DEAD"; do
  [ -e "models/$d" ] && fail "the dead export's models/$d was not removed"
  grep -q "removed .*models/$d, left by an export that no longer runs" export.err || fail "no note of models/$d: $(cat export.err)"
done
[ -d "models/7.tmp-otherhost-$DEAD" ] || fail "another host's temporary directory was removed"
[ -d "models/8.tmp-$H-$$" ] || fail "a running process's temporary directory was removed"
rm -rf models/*.tmp-*
"$B" eval run1 --data va.tsv --predictions eval.txt >/dev/null
"$B" predict models/1 --data va.tsv --out pred.txt 2>/dev/null
[ "$(wc -l < pred.txt)" = 3000 ] || fail "predict wrote $(wc -l < pred.txt) lines for 3000 rows"
cmp eval.txt pred.txt || fail "rectrain predict differs from rectrain eval"
"$B" predict models/1 --data va.tsv --out pred7.txt --batch-size 7 2>/dev/null
cmp eval.txt pred7.txt || fail "rectrain predict with 7-row batches differs from rectrain eval"
for t in fp16 int8; do
  "$B" export run1 --out q/$t --rows $t >/dev/null
  "$B" predict q/$t --data va.tsv --out pred_$t.txt 2>/dev/null
done
python3 - <<'PY' || fail "quantised rows out of bounds"
ref = [float(x) for x in open("eval.txt")]
for t, bound in (("fp16", 2e-3), ("int8", 2e-2)):
    got = [float(x) for x in open("pred_%s.txt" % t)]
    d = max(abs(a - b) for a, b in zip(ref, got))
    print("%s: max |p - p_fp32| = %.2e (bound %.0e)" % (t, d, bound))
    assert len(got) == len(ref) and d <= bound and d > 0
PY
"$B" export run1 --out q/min3 --min-count 3 | tee min.log
grep -q "below --min-count left out" min.log || fail "min-count dropped no rows"
python3 - <<'PY' || fail "model sizes"
import json
full = json.load(open("models/1/manifest.json"))["tables"][0]
small = json.load(open("q/min3/manifest.json"))["tables"][0]
assert small["rows"] < full["rows"] and small["dropped_rows"] > 0, (small, full)
print("min-count 3 keeps %d of %d rows" % (small["rows"], full["rows"]))
PY

"$B" serve "$W/models" --port 0 --poll-ms 100 --max-request-rows 1000 --max-body-bytes 2000000 >serve.out 2>serve.log &
SERVE_PID=$!
for i in $(seq 100); do grep -q "POST http" serve.out 2>/dev/null && break; sleep 0.1; done
U=$(sed -n 's/^rectrain serve: \(http[^ ]*\) .*/\1/p' serve.out)
[ -n "$U" ] || fail "serve did not print its URL"
curl -sf "$U/readyz" | grep -q '"ready":true' || fail "/readyz"
python3 - "$U" <<'PY' || fail "serve differs from eval"
import json, sys, urllib.request
u = sys.argv[1]
lines = [l.rstrip("\n") for l in open("va.tsv")][:300]
ref = [float(x) for x in open("eval.txt")][:300]
def post(body):
    req = urllib.request.Request(u + "/v1/predict", data=json.dumps(body).encode(), method="POST")
    return json.load(urllib.request.urlopen(req))
got = post({"lines": lines})
assert got["model_version"] == 1 and got["predictions"] == ref, "lines"
cols = ["label"] + ["I%d" % i for i in range(1, 14)] + ["C%d" % i for i in range(1, 27)]
rows = []
for l in lines:
    f = l.split("\t")
    rows.append({c: (None if v == "" else (int(v) if c.startswith("I") else v)) for c, v in zip(cols[1:], f[1:])})
by_name = post({"rows": rows})["predictions"]
assert by_name == ref, "rows by name"
one = [post({"rows": [r]})["predictions"][0] for r in rows[:20]]
assert one == ref[:20], "one row per request"
print("serve: 300 rows as lines, by name and one per request equal rectrain eval bit for bit")
PY

echo "== 2. bad requests"
code() { curl -s -o body.txt -w '%{http_code}' -X POST "$U/v1/predict" --data-binary "$1"; }
expect() {  # expect CODE TEXT BODY
  c=$(code "$3"); [ "$c" = "$1" ] || fail "body $3: HTTP $c, expected $1 ($(cat body.txt))"
  grep -q "$2" body.txt || fail "body $3: no '$2' in $(cat body.txt)"
}
expect 400 "not valid JSON" '{"rows": ['
expect 400 'rows\[0\]: unknown field' '{"rows": [{"C99": "x"}]}'
expect 400 'rows\[1\].I3: expected a string, a number or null' '{"rows": [{}, {"I3": {"a": 1}}]}'
expect 400 "field I2" '{"rows": [{"I2": "abc"}]}'
expect 400 "exactly one of" '{}'
python3 -c 'import json; print(json.dumps({"lines": ["x"] * 1001}))' > many.json
expect 413 "at most 1000 per request" @many.json
head -c 2100000 /dev/zero | tr '\0' ' ' > big.json
c=$(code @big.json); [ "$c" = 413 ] || fail "a 2.1 MB body got HTTP $c, expected 413"
curl -sf -X POST "$U/v1/predict" -d '{"rows": [{}]}' | grep -q predictions || fail "the server stopped answering after bad requests"

echo "== 3. hot reload"
"$B" export run2 --out models/2 >/dev/null
for i in $(seq 100); do curl -s "$U/readyz" | grep -q '"model_version":2' && break; sleep 0.1; done
curl -s "$U/readyz" | grep -q '"model_version":2' || fail "version 2 was not picked up"
cp -r models/2 models/.tmp3 && sed -i 's/"version": 2/"version": 3/' models/.tmp3/manifest.json
printf 'X' | dd of=models/.tmp3/dense.bin bs=1 seek=200 conv=notrunc 2>/dev/null
mv models/.tmp3 models/3
for i in $(seq 50); do grep -q "refused.*models/3" serve.log && break; sleep 0.1; done
grep -q "refused.*models/3.*dense.bin has checksum.*still serving version 2" serve.log || fail "corrupt version 3 not refused"
curl -s "$U/readyz" | grep -q '"model_version":2' || fail "the corrupt version replaced version 2"
curl -s -X POST "$U/v1/reload" -d '' -o body.txt -w '%{http_code}' | grep -q 409 || fail "/v1/reload of a corrupt version is not 409"
grep -q "corrupt" body.txt || fail "reload error: $(cat body.txt)"
rm -rf models/3
curl -sf "$U/v1/model" | grep -q '"model_type":"deepfm"' || fail "/v1/model"
curl -sf "$U/metrics" > m1.txt
for s in 'rectrain_serve_requests_total{code="200"}' 'rectrain_serve_requests_total{code="400"}' \
         'rectrain_serve_requests_total{code="413"}' 'rectrain_serve_reloads_total{result="failed"} 2' \
         'rectrain_serve_model_version 2' 'rectrain_serve_request_seconds_bucket' 'rectrain_serve_batch_rows_count' \
         'rectrain_serve_unknown_ids_total' 'rectrain_serve_ids_total'; do
  grep -qF "$s" m1.txt || fail "/metrics lacks $s"
done

echo "== 4. 20 hot reloads under load"
if command -v wrk >/dev/null; then
  python3 -c '
import json
lines = [l.rstrip("\n") for l in open("va.tsv")][:4]
open("req.json", "w").write(json.dumps({"lines": lines}))'
  cat > post.lua <<'LUA'
wrk.method = "POST"
wrk.body = io.open("req.json"):read("*a")
wrk.headers["Content-Type"] = "application/json"
LUA
  wrk -t2 -c8 -d10s -s post.lua "$U/v1/predict" > wrk.txt &
  WRK=$!
  sleep 0.5
  for v in $(seq 4 23); do
    cp -r models/2 models/.tmp$v && sed -i "s/\"version\": 2/\"version\": $v/" models/.tmp$v/manifest.json
    mv models/.tmp$v models/$v
    for i in $(seq 50); do curl -s "$U/readyz" | grep -q "\"model_version\":$v" && break; sleep 0.05; done
  done
  wait $WRK
  cat wrk.txt
  curl -s "$U/readyz" | grep -q '"model_version":23' || fail "the last version is not served"
  grep -q "Non-2xx" wrk.txt && fail "failed requests during the reloads"
  grep -q "Socket errors" wrk.txt && fail "socket errors during the reloads"
  curl -sf "$U/metrics" > m2.txt
  ok=$(sed -n 's/^rectrain_serve_reloads_total{result="ok"} //p' m2.txt)
  [ "$ok" -ge 22 ] || fail "only $ok successful loads"
  grep -q 'rectrain_serve_requests_total{code="5' m2.txt && fail "5xx responses"
  echo "20 reloads under load: $(grep -o '[0-9]* requests in' wrk.txt), no failed request"
else
  echo "SKIP: wrk is not installed (scripts/install_deps.sh installs it)"
fi
echo "== 4b. the directory number is the version; a manifest its config contradicts; a copy in two parts"
served() {  # served VERSION: polls /readyz for it (5 s)
  for i in $(seq 100); do curl -s "$U/readyz" | grep -q "\"model_version\":$1[,}]" && return 0; sleep 0.05; done
  return 1
}
cp -r models/1 models/.tmp30 && mv models/.tmp30 models/30   # its manifest says version 1
served 30 || fail "models/30 (manifest version 1) is not served as version 30: $(curl -s "$U/readyz")"
curl -sf "$U/v1/model" | grep -q '"model_version":30' || fail "/v1/model does not report version 30"
grep -q "models/30/manifest.json says version 1; serving it as version 30" serve.log || fail "no note of the renumbered version"
cp -r models/2 models/.tmp31 && sed -i 's/"model_type": "deepfm"/"model_type": "dcn_v2"/' models/.tmp31/manifest.json
mv models/.tmp31 models/31
for i in $(seq 100); do grep -q "refused.*models/31" serve.log && break; sleep 0.05; done
grep -q "refused.*models/31.*model_type 'dcn_v2'.*model.type 'deepfm'" serve.log || fail "a model_type the config contradicts was not refused"
curl -s "$U/readyz" | grep -q '"model_version":30' || fail "version 31 replaced version 30"
mkdir models/32 && cp models/2/manifest.json models/32/    # the manifest first ...
for i in $(seq 100); do grep -q "refused.*models/32" serve.log && break; sleep 0.05; done
grep -q "refused.*models/32.*missing" serve.log || fail "the incomplete version 32 was not refused as incomplete"
cp -r models/2/config.yaml models/2/dense.bin models/2/tables models/32/   # ... the rest later
served 32 || fail "version 32 was not loaded once its copy was complete (not retried)"
echo "versions by directory number, a contradicting manifest refused, a copy in two parts picked up"

echo "== 5. hostile clients"
python3 "$PROBE" "$U" --post /v1/predict --max-body 2000000 --pid $SERVE_PID || fail "the limits probe"
kill $SERVE_PID; wait $SERVE_PID 2>/dev/null || true

echo "== 6. serving deltas under load; a delta of another base refused"
head -200 va.tsv > small.tsv
cp -r run1 run3   # run1 trained one more step on 200 rows: a few thousand rows change
"$B" train --resume run3 --set train.epochs=2 --set data.train=small.tsv >train3.log 2>&1 || fail "training run3: $(tail -3 train3.log)"
"$B" eval run3 --data va.tsv --predictions eval3.txt >/dev/null
"$B" publish run1 --to deltas | grep -q "version 1, a full export" || fail "the first publish is not a full export"
"$B" serve "$W/deltas" --port 0 --poll-ms 50 >serve_d.out 2>serve_d.log &
SERVE_PID=$!
for i in $(seq 100); do grep -q "POST http" serve_d.out 2>/dev/null && break; sleep 0.1; done
U=$(sed -n 's/^rectrain serve: \(http[^ ]*\) .*/\1/p' serve_d.out)
[ -n "$U" ] || fail "serve did not print its URL"
served_eq() {  # served_eq FILE: the served predictions of va.tsv's first 300 rows equal FILE's
  python3 - "$U" "$1" <<'PY'
import json, sys, urllib.request
u, ref_file = sys.argv[1], sys.argv[2]
lines = [l.rstrip("\n") for l in open("va.tsv")][:300]
ref = [float(x) for x in open(ref_file)][:300]
req = urllib.request.Request(u + "/v1/predict", data=json.dumps({"lines": lines}).encode(), method="POST")
got = json.load(urllib.request.urlopen(req))
sys.exit(0 if got["predictions"] == ref else 1)
PY
}
if command -v wrk >/dev/null; then
  wrk -t2 -c8 -d120s -s post.lua "$U/v1/predict" > wrk_d.txt &
  WRK=$!
fi
sleep 0.3
for v in $(seq 2 31); do
  if [ $((v % 2)) = 0 ]; then r=run3; else r=run1; fi
  "$B" publish $r --to deltas --full-every 0 > pub.txt || fail "publish $v: $(cat pub.txt)"
  grep -q "version $v, a delta of version $((v - 1))" pub.txt || fail "publish $v: $(cat pub.txt)"
  served $v || fail "delta $v was not applied: $(tail -3 serve_d.log)"
done
[ -n "${WRK:-}" ] && { kill -INT $WRK; wait $WRK || true; cat wrk_d.txt; }
served_eq eval.txt || fail "the served chain (version 31, run1) differs from rectrain eval of run1"
"$B" publish run3 --to deltas --full-every 0 >/dev/null && served 32 || fail "delta 32"
served_eq eval3.txt || fail "the served chain (version 32, run3) differs from rectrain eval of run3"
n=$(grep -c "(1 delta applied to version" serve_d.log)
[ "$n" -ge 31 ] || fail "only $n versions were applied as one delta to the version before: $(grep serving serve_d.log | tail -3)"
if [ -n "${WRK:-}" ]; then
  grep -q "Non-2xx" wrk_d.txt && fail "failed requests while deltas were applied"
  grep -q "Socket errors" wrk_d.txt && fail "socket errors while deltas were applied"
  curl -sf "$U/metrics" | grep -q 'rectrain_serve_requests_total{code="5' && fail "5xx responses"
fi
# A delta made against another version 32 (of another directory) names 32 as its base but with
# another manifest: refused, and version 32 keeps serving.
cp -r deltas other && rm -rf other/32
"$B" publish run1 --to other --full-every 0 >/dev/null && "$B" publish run3 --to other --full-every 0 >/dev/null || fail "publishing into other/"
cp -r other/33 deltas/.tmp33 && mv deltas/.tmp33 deltas/33
for i in $(seq 100); do grep -q "refused.*deltas/33" serve_d.log && break; sleep 0.05; done
grep -q "refused.*deltas/33 is a delta of version 32 (manifest xxh64 [0-9a-f]*) but .*deltas/32/manifest.json has xxh64 [0-9a-f]*: the delta was made against another version 32; publish a full export.*still serving version 32" serve_d.log ||
  fail "a delta of another base was not refused as such: $(grep deltas/33 serve_d.log)"
curl -s -X POST "$U/v1/reload" -d '' -o body.txt -w '%{http_code}' | grep -q 409 || fail "/v1/reload of a delta of another base is not 409"
grep -q "made against another version 32" body.txt || fail "reload error: $(cat body.txt)"
served_eq eval3.txt || fail "version 32 stopped serving after the refusal"
echo "30 deltas applied under load ($(grep -o "[0-9]* requests" wrk_d.txt 2>/dev/null), none failed), bit-equal to eval; a delta of another base refused"
kill $SERVE_PID; wait $SERVE_PID 2>/dev/null || true

echo "== 7. off loopback a token is required"
"$B" serve models --host 0.0.0.0 --port 0 2>err.txt && fail "serve on 0.0.0.0 without a token started"
grep -q "token is required.*could score with and reload the model" err.txt || fail "no token message: $(cat err.txt)"
"$B" serve models --host 0.0.0.0 --port 0 --token '                ' 2>err.txt && fail "a token of spaces was taken"
grep -q "at least 8 different" err.txt || fail "no token rule: $(cat err.txt)"
echo "serve_test: OK"
