#!/bin/sh
# Serving deltas (docs/serving.md "Deltas"): the criteo-shape DeepFM of bench/specs/criteo_deepfm.yaml
# trained on ROWS generated rows (run A), and the same run trained one more step on 4096 other
# rows (run B, as an online trainer's next publish interval). Then, with `rectrain serve` polling
# every POLL_MS and wrk keeping 4 connections busy, N publishes alternating B, A, B, ... each
# timed from the start of `rectrain publish` (the trained state exists) to the first /readyz
# answer with the new version (the first request it serves); and a delta's bytes against a full
# export's. Freshness end to end = the stream's lag + the wait for the next publish (at most
# publish_every_s) + this figure.
# Usage: sh bench/serve/deltas.sh [WORK_DIR]   (from the repository root, after the release build)
set -eu
R=$(pwd)
B=$R/build/release/rectrain
W=${1:-bench-deltas}
ROWS=${ROWS:-300000}
N=${N:-20}
POLL_MS=${POLL_MS:-100}
mkdir -p "$W" && cd "$W"
grep -o 'avx512[a-z_0-9]*' /proc/cpuinfo | sort -u | tr '\n' ' '; echo
[ -f train.tsv ] || "$B" data gen --rows "$ROWS" --out train.tsv --seed 1 >/dev/null 2>&1
[ -f step.tsv ] || "$B" data gen --rows 4096 --out step.tsv --seed 3 >/dev/null 2>&1
[ -f valid.tsv ] || "$B" data gen --rows 20000 --out valid.tsv --seed 2 >/dev/null 2>&1
if [ ! -f a/summary.json ]; then
  "$B" train "$R/bench/specs/criteo_deepfm.yaml" --run-dir a --set data.train=train.tsv --set data.valid=valid.tsv \
    --set tracking.enabled=false --quiet >/dev/null
  rm -rf b && cp -r a b
  "$B" train --resume b --set train.epochs=2 --set data.train=step.tsv --quiet >/dev/null
fi
rm -rf models && "$B" publish a --to models
"$B" serve "$(pwd)/models" --port 0 --poll-ms "$POLL_MS" >serve.out 2>serve.log &
SERVE=$!
trap 'kill $SERVE 2>/dev/null || true' EXIT
for i in $(seq 200); do grep -q "POST http" serve.out 2>/dev/null && break; sleep 0.1; done
U=$(sed -n 's/^rectrain serve: \(http[^ ]*\) .*/\1/p' serve.out)
python3 - "$U" "$B" "$N" <<'PY'
import json, statistics, subprocess, sys, threading, time, urllib.request
u, b, n = sys.argv[1], sys.argv[2], int(sys.argv[3])
lines = [l.rstrip("\n") for l in open("valid.tsv")][:4]
body = json.dumps({"lines": lines}).encode()
stop, counts = False, {"ok": 0, "failed": 0}
def load():
    while not stop:
        try:
            r = urllib.request.urlopen(urllib.request.Request(u + "/v1/predict", data=body, method="POST"))
            counts["ok" if r.status == 200 else "failed"] += 1
        except Exception:
            counts["failed"] += 1
threads = [threading.Thread(target=load) for _ in range(4)]
for t in threads: t.start()
def served():
    return json.load(urllib.request.urlopen(u + "/readyz"))["model_version"]
lat, pub, sizes = [], [], []
for i in range(n):
    run = "b" if i % 2 == 0 else "a"
    t0 = time.monotonic()
    out = subprocess.run([b, "publish", run, "--to", "models", "--full-every", "0"], capture_output=True, text=True, check=True).stdout
    t1 = time.monotonic()
    v = int(out.split("version ")[1].split(",")[0])
    while served() != v: time.sleep(0.002)
    t2 = time.monotonic()
    lat.append(t2 - t0); pub.append(t1 - t0)
    sizes.append(float(out.split(" MB")[0].split(", ")[-1]))
    if i == 0: print(out.strip())
stop = True
for t in threads: t.join()
full = json.load(open("models/1/manifest.json"))
full_bytes = sum(t["file"]["bytes"] for t in full["tables"]) + full["dense"]["bytes"] + full["config"]["bytes"]
rows = sum(t["rows"] for t in full["tables"])
q = lambda xs, p: sorted(xs)[min(len(xs) - 1, int(p * len(xs)))]
print("publish (load the run + write the delta), s: p50 %.3f max %.3f" % (statistics.median(pub), max(pub)))
print("publish start -> served, s: p50 %.3f p99 %.3f max %.3f over %d deltas" % (statistics.median(lat), q(lat, 0.99), max(lat), n))
print("delta %.2f MB vs full export %.2f MB (%d rows): %.1f%%" % (statistics.median(sizes), full_bytes / 1e6, rows, 100 * statistics.median(sizes) * 1e6 / full_bytes))
print("requests during the deltas: %d ok, %d failed" % (counts["ok"], counts["failed"]))
PY
grep -o '(1 delta applied to version [0-9]* in [0-9]* ms)' serve.log | awk '{print $(NF-1)}' | sort -n |
  awk '{a[NR]=$1} END {print "apply one delta in the server, ms: p50 " a[int(NR/2)+1] " max " a[NR]}'
