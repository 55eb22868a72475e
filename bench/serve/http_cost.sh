#!/bin/sh
# Instructions the `rectrain serve` process executes per request (valgrind --tool=callgrind,
# counting only while the requests run), for comparing two builds on a machine too loaded for
# wall-clock figures (docs/decisions/0008-own-http-server.md). One keep-alive client sends, in
# turn: GET /healthz (the HTTP layer alone), 1-row and 256-row POST /v1/predict bodies.
# Usage: sh bench/serve/http_cost.sh RECTRAIN MODEL_DIR VALID_TSV [N [N256]]
#   N: GET /healthz and 1-row requests (default 300); N256: 256-row requests (default 5: under
#   callgrind one takes ~20 s at criteo shape)
set -eu
B=$1 M=$2 V=$3 N=${4:-300} N256=${5:-5}
W=$(mktemp -d "${TMPDIR:-/tmp}/rectrain_http_cost_XXXXXX")
trap 'kill $S 2>/dev/null || true; rm -rf "$W"' EXIT
python3 - "$V" "$W" <<'PY'
import json, sys
lines = [l.rstrip("\n") for l in open(sys.argv[1])][:256]
for n in (1, 256):
    open("%s/req%d.json" % (sys.argv[2], n), "w").write(json.dumps({"lines": lines[:n]}))
PY
# RECTRAIN_KEEP_OMP_ENV: no re-exec of /proc/self/exe (under valgrind that is valgrind itself).
RECTRAIN_KEEP_OMP_ENV=1 OMP_WAIT_POLICY=passive valgrind --tool=callgrind --instr-atstart=no --callgrind-out-file="$W/cg.out" \
  "$B" serve "$M" --port 0 --no-verify --threads 1 > "$W/out.txt" 2> "$W/err.txt" &
S=$!
for i in $(seq 600); do grep -q "POST http" "$W/out.txt" 2>/dev/null && break; sleep 0.2; done
U=$(sed -n 's/^rectrain serve: \(http[^ ]*\) .*/\1/p' "$W/out.txt")
[ -n "$U" ] || { cat "$W/err.txt"; exit 1; }
python3 - "$U" "$W" "$N" "$S" "$N256" <<'PY'
import http.client, subprocess, sys, urllib.parse
u, w, n, pid, n256 = urllib.parse.urlparse(sys.argv[1]), sys.argv[2], int(sys.argv[3]), sys.argv[4], int(sys.argv[5])
c = http.client.HTTPConnection(u.hostname, u.port, timeout=600)
def send(method, path, body=None, count=1):
    for _ in range(count):
        c.request(method, path, body, {"Content-Type": "application/json"} if body else {})
        r = c.getresponse(); r.read()
        assert r.status == 200, (path, r.status)
def measured(label, method, path, body, count):
    send(method, path, body, 3)  # warm
    subprocess.run(["callgrind_control", "--instr=on", pid], check=True, capture_output=True)
    send(method, path, body, count)
    subprocess.run(["callgrind_control", "--dump=" + label, pid], check=True, capture_output=True)
    subprocess.run(["callgrind_control", "--instr=off", pid], check=True, capture_output=True)
measured("healthz", "GET", "/healthz", None, n)
measured("predict1", "POST", "/v1/predict", open(w + "/req1.json").read(), n)
measured("predict256", "POST", "/v1/predict", open(w + "/req256.json").read(), n256)
PY
kill $S; wait $S 2>/dev/null || true
for f in "$W"/cg.out.*; do
  label=$(sed -n "s/^desc: Trigger: dump //p" "$f")
  total=$(sed -n 's/^summary: //p' "$f")
  count=$N; [ "$label" = predict256 ] && count=$N256
  echo "$label: $total instructions for $count requests: $((total / count)) per request"
done
