#!/usr/bin/env python3
"""Freshness benchmark (docs/online.md "Freshness"): the criteo-shape DeepFM of
bench/specs/criteo_deepfm.yaml trained online from a Redis stream with train.publish.every_s 2
into a versions directory served by `rectrain serve`, while rows arrive at a fixed share of the
rate the same model trains from a local file. All in one session on one machine.

  python3 bench/online/freshness.py --share 0.5 --seconds 60

Steps:
  1. file rate: `rectrain train` from the generated file (summary.json train.samples_per_sec);
  2. the stream: `rectrain data produce --rate share x file rate` into a private redis-server,
     the trainer (data.stream, start: earliest, train.max_rows = rate x seconds, train.publish
     every_s 2, full_every 10), and `rectrain serve MODELS --poll-ms 100` from before the first
     publish;
  3. the bench polls the server's /readyz every 20 ms and records, per version, the first time
     it answers with it (the apply time A_v: the first response that reflects the version).

Freshness of an event = the apply time of the first version trained on it − its event time.
Version v's manifest holds E_v, the event time of the newest message trained into it (Redis:
the entry ID's milliseconds, assigned on arrival, so event times follow stream order), so the
events first served by version v are those with event times in (E_{v-1}, E_v], and their
freshness runs from A_v − E_v to A_v − E_{v-1}. The producer is paced, so event times are
spread evenly over each interval: the p50/p99/max below are taken over all events weighted that
way (every millisecond of (E_{v-1}, E_v] one sample). The server's own figure
(rectrain_serve_apply_freshness_seconds: A_v − E_v per version, the freshest event of each
version) is printed beside it.

Also per delta: changed rows / rows and its bytes / the bytes of the newest full version before
it, the figure of "a delta for an interval in which <= 2% of the rows changed is <= 5% of a full
export's bytes". With --warm-rows N, N rows of another generated file are put into the stream at
once before the paced ones: the trainer grows its tables on them (criteo-shape: ~2.6 table rows
per input row) and then trains the paced rows, so the later intervals change a small share of a
large table. The final publish is then compared exactly with `rectrain export` of the run's final
model (the same state), besides the deltas' ratios to that export.

Only the Python standard library; the binaries come from build/release.
"""
import argparse
import json
import os
import shutil
import signal
import subprocess
import sys
import tempfile
import time
import urllib.request

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ingest import free_port, log, log_machine  # noqa: E402  (beside this script)


def get(url, timeout=1.0):
    try:
        with urllib.request.urlopen(url, timeout=timeout) as r:
            return r.read().decode()
    except Exception:
        return ""


def dir_bytes(d):
    total = 0
    for root, _, files in os.walk(d):
        for f in files:
            total += os.path.getsize(os.path.join(root, f))
    return total


def percentile(sorted_vals, q):
    if not sorted_vals:
        return float("nan")
    i = min(len(sorted_vals) - 1, max(0, int(round(q * (len(sorted_vals) - 1)))))
    return sorted_vals[i]


def file_rate(binary, spec, data, work, sets):
    run = os.path.join(work, "file_run")
    shutil.rmtree(run, ignore_errors=True)
    cmd = [binary, "train", spec, "--run-dir", run, "--quiet", "--no-progress", "--set", f"data.train={data}",
           "--set", "tracking.enabled=false", "--set", "monitoring.enabled=false"]
    for s in sets:
        cmd += ["--set", s]
    subprocess.run(cmd, check=True)
    with open(os.path.join(run, "summary.json")) as f:
        return json.load(f)["train"]["samples_per_sec"]


def versions(models):
    out = {}
    for name in os.listdir(models):
        if name.isdigit() and os.path.exists(os.path.join(models, name, "manifest.json")):
            with open(os.path.join(models, name, "manifest.json")) as f:
                out[int(name)] = json.load(f)
    return out


def freshness_figures(manifests, applied):
    """Per-event freshness (ms resolution) from the versions' event times and apply times."""
    samples = []
    server_view = []
    prev_e = None
    for v in sorted(manifests):
        e = manifests[v].get("events", {}).get("newest_ms", 0)
        if v not in applied or e <= 0:
            continue
        a_ms = applied[v] * 1000.0
        server_view.append((a_ms - e) / 1000.0)
        if prev_e is not None and e > prev_e:
            # every millisecond of (prev_e, e] one event; subsample to 1 per 10 ms
            for t in range(prev_e + 1, e + 1, 10):
                samples.append((a_ms - t) / 1000.0)
        prev_e = max(prev_e or 0, e)
    samples.sort()
    return samples, server_view


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=300000, help="rows generated (the file run trains on all of them)")
    ap.add_argument("--share", type=float, default=0.5, help="stream rate as a share of the file rate")
    ap.add_argument("--seconds", type=float, default=60, help="how long rows arrive")
    ap.add_argument("--every-s", type=float, default=2.0)
    ap.add_argument("--poll-ms", type=int, default=100)
    ap.add_argument("--spec", default=os.path.join(ROOT, "bench", "specs", "criteo_deepfm.yaml"))
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--work", default="")
    ap.add_argument("--set", action="append", default=[], help="extra --set for both runs")
    ap.add_argument("--warm-rows", type=int, default=0, help="rows put into the stream unpaced before the paced ones")
    ap.add_argument("--file-rate", type=float, default=0, help="skip the file run: its samples/s (from an earlier one)")
    a = ap.parse_args()
    binary = os.path.join(a.build, "rectrain")
    work = a.work or tempfile.mkdtemp(prefix="rectrain_freshness_bench_")
    os.makedirs(work, exist_ok=True)
    log_machine()
    data = os.path.join(work, f"criteo_{a.rows}.tsv")
    if not os.path.exists(data):
        subprocess.run([binary, "data", "gen", "--rows", str(a.rows), "--out", data, "--seed", "1"], check=True,
                       stdout=subprocess.DEVNULL)
    rate_file = a.file_rate or file_rate(binary, a.spec, data, work, a.set)
    rate = int(rate_file * a.share)
    max_rows = int(rate * a.seconds)
    log(f"file rate {rate_file:,.0f} samples/s; stream rate {rate:,} rows/s ({a.share:.0%}) for {a.seconds:.0f} s "
        f"= {max_rows:,} rows")
    procs = []
    models = os.path.join(work, "models")
    shutil.rmtree(models, ignore_errors=True)
    os.makedirs(models)
    try:
        redis_port = free_port()
        procs.append(subprocess.Popen(["redis-server", "--port", str(redis_port), "--bind", "127.0.0.1", "--save", "",
                                       "--appendonly", "no", "--dir", work, "--logfile", os.path.join(work, "redis.log")]))
        serve_port = free_port()
        procs.append(subprocess.Popen([binary, "serve", models, "--port", str(serve_port), "--poll-ms", str(a.poll_ms)],
                                      stdout=subprocess.DEVNULL, stderr=open(os.path.join(work, "serve.log"), "w")))
        url = f"redis://127.0.0.1:{redis_port}/events"
        deadline = time.time() + 10
        while time.time() < deadline and subprocess.run(["redis-cli", "-p", str(redis_port), "ping"],
                                                        capture_output=True).returncode != 0:
            time.sleep(0.05)
        if a.warm_rows > 0:
            warm = os.path.join(work, f"warm_{a.warm_rows}.tsv")
            if not os.path.exists(warm):
                subprocess.run([binary, "data", "gen", "--rows", str(a.warm_rows), "--out", warm, "--seed", "2"],
                               check=True, stdout=subprocess.DEVNULL)
            subprocess.run([binary, "data", "produce", warm, "--to", url, "--rate", "0", "--quiet"], check=True)
            max_rows += a.warm_rows
        produce = subprocess.Popen([binary, "data", "produce", data, "--to", url, "--rate", str(rate), "--quiet",
                                    "--max-messages", str(max_rows), "--repeat", "100"])
        procs.append(produce)
        run = os.path.join(work, "stream_run")
        shutil.rmtree(run, ignore_errors=True)
        cmd = [binary, "train", a.spec, "--run-dir", run, "--quiet", "--no-progress",
               "--set", f"data.stream.url={url}", "--set", "data.stream.start=earliest",
               "--set", f"train.max_rows={max_rows}", "--set", f"train.publish.to={models}",
               "--set", f"train.publish.every_s={a.every_s}", "--set", "train.publish.full_every=10",
               "--set", "tracking.enabled=false", "--set", "monitoring.enabled=false"]
        for s in a.set:
            cmd += ["--set", s]
        trainer = subprocess.Popen(cmd)
        procs.append(trainer)
        applied = {}
        last = None
        end_deadline = None  # once the trainer has exited: until its last version is served
        while True:
            body = get(f"http://127.0.0.1:{serve_port}/readyz", 0.5)
            now = time.time()
            if body:
                try:
                    v = json.loads(body).get("model_version")
                except ValueError:
                    v = None
                if v and v != last:
                    applied.setdefault(v, now)
                    last = v
            if trainer.poll() is not None:
                end_deadline = end_deadline or now + 30
                if last == max(versions(models) or [0]) or now > end_deadline:
                    break
            time.sleep(0.02)
        if trainer.returncode != 0:
            raise RuntimeError(f"the trainer failed ({trainer.returncode})")
    finally:
        for p in procs:
            if p.poll() is None:
                p.send_signal(signal.SIGTERM)
                try:
                    p.wait(10)
                except subprocess.TimeoutExpired:
                    p.kill()
    with open(os.path.join(run, "summary.json")) as f:
        s = json.load(f)
    sps = s["train"]["samples_per_sec"]
    manifests = versions(models)
    samples, server_view = freshness_figures(manifests, applied)
    log(f"stream run: {s['train']['rows_read']:,} rows at {sps:,.0f} samples/s ({sps / rate_file:.2f}x the file rate; "
        f"rows arrived at {rate:,}/s), {len(manifests)} versions published, {len(applied)} seen served")
    if samples:
        log(f"freshness over events (n={len(samples):,}, 10 ms apart): p50 {percentile(samples, 0.5):.2f} s  "
            f"p99 {percentile(samples, 0.99):.2f} s  max {samples[-1]:.2f} s")
        sv = sorted(server_view)
        log(f"server's view per version (apply - newest event): p50 {percentile(sv, 0.5):.2f} s  "
            f"p99 {percentile(sv, 0.99):.2f} s  max {sv[-1]:.2f} s")
    # Delta bytes against the full export before it.
    full_bytes = None
    log("version  kind   changed/rows       bytes   bytes/full")
    for v in sorted(manifests):
        m = manifests[v]
        b = dir_bytes(os.path.join(models, str(v)))
        if m.get("format") == "rectrain-serving-model":
            full_bytes = b
            log(f"{v:7d}  full   {'':>16s}  {b:>10,d}")
            continue
        changed = sum(t["changed_rows"] for t in m["tables"])
        rows = sum(t["rows"] for t in m["tables"])
        share = changed / rows if rows else 0
        log(f"{v:7d}  delta  {share:7.2%} ({changed:,})  {b:>10,d}   {b / full_bytes:7.2%}" if full_bytes else "")
    if a.warm_rows > 0:
        # The final version is the run's final model: compare with its full export, exactly.
        exported = os.path.join(work, "final_export")
        shutil.rmtree(exported, ignore_errors=True)
        subprocess.run([binary, "export", run, "--out", exported], check=True, stdout=subprocess.DEVNULL)
        eb = dir_bytes(exported)
        log(f"full export of the final model: {eb:,d} bytes ({os.path.getsize(os.path.join(exported, 'dense.bin')):,d} of them "
            f"dense.bin)")
        log("version  changed/rows         bytes   bytes / that export")
        for v in sorted(manifests)[-6:]:
            m = manifests[v]
            if m.get("format") == "rectrain-serving-model":
                continue
            changed = sum(t["changed_rows"] for t in m["tables"])
            rows = sum(t["rows"] for t in m["tables"])
            b = dir_bytes(os.path.join(models, str(v)))
            log(f"{v:7d}  {changed / rows:7.3%} ({changed:,} of {rows:,})  {b:>10,d}  {b:,d} / {eb:,d} = {b / eb:.3%}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
