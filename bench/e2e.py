#!/usr/bin/env python3
"""End-to-end benchmark runner: rectrain vs the PyTorch DeepFM peer on the same files.

Runs each spec (bench/specs/<name>.yaml, a rectrain config) on generated data, optionally
interleaved with the peer (../shared/peers/torch_deepfm.py) in the same session, repeats, and
prints medians and our/peer ratios. Results are appended as CSV to --csv.

  python3 bench/e2e.py --spec criteo_deepfm --rows 2000000 --valid-rows 500000 --repeats 3 --peer
  python3 bench/e2e.py --spec seed_deepfm --rows 4000000 --valid-rows 200000 --repeats 1
  # one process x 2 threads against 2 MPI ranks x 1 thread, interleaved (docs/scaling.md):
  python3 bench/e2e.py --spec criteo_deepfm --rows 1000000 --valid-rows 200000 --variants 1x2,2x1

Only the Python standard library is used. The peer needs Debian's python3-torch, python3-pandas
and python3-sklearn (scripts/install_deps.sh --peer) and runs under /usr/bin/python3.
"""
import argparse
import csv
import json
import os
import re
import shutil
import statistics
import subprocess
import sys
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
SHAPES = {"criteo_deepfm": "criteo", "criteo_lr": "criteo", "seed_deepfm": "seed"}


def log(msg):
    print(msg, flush=True)


def gen(binary, shape, rows, out, seed):
    if os.path.exists(out) and os.path.exists(out + ".prob"):
        return
    t = time.time()
    subprocess.run([binary, "data", "gen", "--rows", str(rows), "--out", out, "--seed", str(seed),
                    "--shape", shape], check=True)
    size = os.path.getsize(out)
    log(f"generated {out}: {rows} rows, {size / 1e6:.0f} MB in {time.time() - t:.1f}s")


MPIEXEC = ["mpiexec", "--allow-run-as-root", "--oversubscribe", "--bind-to", "none"]


def run_ours(binary, spec, train, valid, run_dir, threads, extra, ranks=1):
    cmd = [binary, "train", os.path.join(ROOT, "bench", "specs", spec + ".yaml"),
           "--set", f"data.train={train}", "--set", f"data.valid={valid}",
           "--set", f"threads={threads}", "--run-dir", run_dir] + sum([["--set", e] for e in extra], [])
    if ranks > 1:
        cmd = MPIEXEC + ["-np", str(ranks)] + cmd
    t = time.time()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    wall = time.time() - t
    if proc.returncode != 0:
        sys.stdout.write(proc.stdout[-4000:])
        raise SystemExit(f"rectrain failed with exit code {proc.returncode}")
    with open(os.path.join(run_dir, "summary.json")) as f:
        s = json.load(f)
    tr = s["train"]
    dist = s.get("dist", {})
    return {"who": "rectrain" if ranks == 1 and threads == 2 else f"rectrain {ranks}x{threads}",
            "samples_per_sec": tr["samples_per_sec"], "auc": s["valid"]["auc"],
            "bytes_sent_per_rank": statistics.mean([r["bytes_sent"] for r in dist["ranks"]]) if dist else 0,
            "bytes_over_min": (sum(r["bytes_sent"] for r in dist["ranks"]) /
                               max(1, sum(r.get("min_bytes_sent", 0) for r in dist["ranks"]))) if dist else 0,
            "steps": tr["steps"],
            "logloss": s["valid"]["logloss"], "peak_rss_mib": s["peak_rss_bytes"] / 2**20,
            "wall_s": wall, "breakdown": tr.get("breakdown", {}),
            "oracle_auc": s.get("oracle", {}).get("auc")}


def run_peer(script, train, valid, threads):
    cmd = ["/usr/bin/python3", script, "--train", train, "--test", valid, "--threads", str(threads)]
    env = dict(os.environ)
    t = time.time()
    proc = subprocess.run(cmd, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True, env=env)
    wall = time.time() - t
    out = proc.stdout
    if proc.returncode != 0:
        sys.stdout.write(out[-4000:])
        raise SystemExit("peer failed")
    m = re.search(r"-> (\d+) samples/s \(steady state after \d+ steps: (\d+) samples/s\)", out)
    a = re.search(r"AUC=([0-9.]+) logloss=([0-9.]+)", out)
    r = re.search(r"peak RSS (\d+) MiB", out)
    p = re.search(r"parse: train \d+ rows ([0-9.]+)s", out)
    return {"who": "peer", "samples_per_sec": float(m.group(1)), "steady": float(m.group(2)),
            "auc": float(a.group(1)), "logloss": float(a.group(2)), "peak_rss_mib": float(r.group(1)),
            "wall_s": wall, "parse_s": float(p.group(1)) if p else None}


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--spec", default="criteo_deepfm", choices=sorted(SHAPES))
    ap.add_argument("--rows", type=int, default=2_000_000)
    ap.add_argument("--valid-rows", type=int, default=500_000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--threads", type=int, default=2)
    ap.add_argument("--peer", action="store_true", help="interleave the PyTorch peer")
    ap.add_argument("--peer-script", default=os.path.join(ROOT, "..", "shared", "peers", "torch_deepfm.py"))
    ap.add_argument("--binary", default=os.path.join(ROOT, "build", "release", "rectrain"))
    ap.add_argument("--data-dir", default=os.path.join(ROOT, "build", "bench-data"))
    ap.add_argument("--csv", default=os.path.join(ROOT, "build", "bench-results.csv"))
    ap.add_argument("--set", action="append", default=[], help="extra rectrain --set overrides")
    ap.add_argument("--variants", default="",
                    help="RANKSxTHREADS list run interleaved in every repeat instead of --threads, e.g. 1x2,2x1")
    args = ap.parse_args()

    shape = SHAPES[args.spec]
    os.makedirs(args.data_dir, exist_ok=True)
    train = os.path.join(args.data_dir, f"{shape}_train_{args.rows}.tsv")
    valid = os.path.join(args.data_dir, f"{shape}_valid_{args.valid_rows}.tsv")
    gen(args.binary, shape, args.rows, train, seed=1)
    gen(args.binary, shape, args.valid_rows, valid, seed=2)

    results = []
    for rep in range(args.repeats):
        run_dir = os.path.join(args.data_dir, "runs", f"{args.spec}_{rep}")
        shutil.rmtree(run_dir, ignore_errors=True)  # a fresh run each time, never a resume
        variants = [tuple(map(int, v.split("x"))) for v in args.variants.split(",")] if args.variants else [(1, args.threads)]
        for ranks, threads in variants:
            shutil.rmtree(run_dir, ignore_errors=True)
            r = run_ours(args.binary, args.spec, train, valid, run_dir, threads, args.set, ranks)
            log(f"[{rep}] {r['who']}: {r['samples_per_sec']:.0f} samples/s  AUC {r['auc']:.4f}  "
                f"logloss {r['logloss']:.4f}  peak RSS {r['peak_rss_mib']:.0f} MiB  breakdown {r['breakdown']}"
                + (f"  bytes/step/rank {r['bytes_sent_per_rank'] / r['steps']:.0f} ({r['bytes_over_min']:.3f}x the minimum)"
                   if ranks > 1 else ""))
            results.append(r)
        if args.peer:
            p = run_peer(args.peer_script, train, valid, args.threads)
            log(f"[{rep}] peer:     {p['samples_per_sec']:.0f} samples/s (steady {p['steady']:.0f})  "
                f"AUC {p['auc']:.4f}  logloss {p['logloss']:.4f}  peak RSS {p['peak_rss_mib']:.0f} MiB")
            results.append(p)

    def med(who, key):
        vals = [r[key] for r in results if r["who"] == who and r.get(key) is not None]
        return statistics.median(vals) if vals else None

    if args.variants:
        log(f"\n== {args.spec}: {args.rows} train rows, {args.repeats} repeats (medians)")
        names = sorted({r["who"] for r in results})
        base = med(names[0], "samples_per_sec")
        for who in names:
            log(f"{who}: {med(who, 'samples_per_sec'):.0f} samples/s ({med(who, 'samples_per_sec') / base:.2f}x of "
                f"{names[0]}), valid AUC {med(who, 'auc'):.4f}")
        return
    ours_sps, ours_auc = med("rectrain", "samples_per_sec"), med("rectrain", "auc")
    log(f"\n== {args.spec}: {args.rows} train rows, {args.valid_rows} valid rows, {args.threads} threads, "
        f"{args.repeats} repeats (medians)")
    log(f"rectrain: {ours_sps:.0f} samples/s, valid AUC {ours_auc:.4f}, logloss {med('rectrain', 'logloss'):.4f}, "
        f"peak RSS {med('rectrain', 'peak_rss_mib'):.0f} MiB")
    oracle = med("rectrain", "oracle_auc")
    if oracle:
        log(f"oracle AUC {oracle:.4f} (gap {oracle - ours_auc:.4f})")
    if args.peer:
        peer_sps, peer_auc = med("peer", "samples_per_sec"), med("peer", "auc")
        log(f"peer:     {peer_sps:.0f} samples/s (steady {med('peer', 'steady'):.0f}), valid AUC {peer_auc:.4f}, "
            f"logloss {med('peer', 'logloss'):.4f}, peak RSS {med('peer', 'peak_rss_mib'):.0f} MiB")
        log(f"ratio rectrain/peer: samples/s {ours_sps / peer_sps:.2f}x, AUC diff {ours_auc - peer_auc:+.4f}")

    new = not os.path.exists(args.csv)
    with open(args.csv, "a", newline="") as f:
        w = csv.writer(f)
        if new:
            w.writerow(["time", "spec", "rows", "who", "samples_per_sec", "auc", "logloss", "peak_rss_mib", "wall_s"])
        for r in results:
            w.writerow([time.strftime("%Y-%m-%dT%H:%M:%S"), args.spec, args.rows, r["who"],
                        f"{r['samples_per_sec']:.0f}", f"{r['auc']:.5f}", f"{r['logloss']:.5f}",
                        f"{r['peak_rss_mib']:.0f}", f"{r['wall_s']:.1f}"])


if __name__ == "__main__":
    main()
