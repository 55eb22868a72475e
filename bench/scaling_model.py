#!/usr/bin/env python3
"""Predicts the throughput of an N-node sync job from measured inputs (docs/scaling.md).

  python3 bench/scaling_model.py --single ONE/summary.json --job TWO/summary.json \
      --bandwidth-gbit 25 --latency-us 10 --nodes 8,64 --rows 50000000 --local-batch 4096

ONE: a single-process run (its samples/s is the per-node compute rate); TWO: a 2-rank run of the
same spec (per-rank embedding bytes and AllReduce bytes per step, and its AllReduce wait, the
straggler term). Model per step on every node, local batch b, global batch N*b:
  T(N) = b/r_node + Vemb(b)*(N-1)/N/beta + 2(N-1)/N*D/beta + k(N-1)*alpha + s(N)
with Vemb and D scaled from the measured local batch to b, s(N) = s(2)*log2(N). Standard library only.
"""
import argparse
import json
import math


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--single", required=True, help="summary.json of a 1-process run")
    ap.add_argument("--job", required=True, help="summary.json of a 2-rank run of the same spec")
    ap.add_argument("--bandwidth-gbit", type=float, default=25.0)
    ap.add_argument("--efficiency", type=float, default=0.8, help="share of the link a transfer gets")
    ap.add_argument("--latency-us", type=float, default=10.0)
    ap.add_argument("--rounds-per-peer", type=float, default=4.0)
    ap.add_argument("--nodes", default="8,64")
    ap.add_argument("--rows", type=float, default=50e6, help="rows per epoch")
    ap.add_argument("--local-batch", type=int, default=4096)
    args = ap.parse_args()

    one = json.load(open(args.single))
    job = json.load(open(args.job))
    r_node = one["train"]["samples_per_sec"]
    steps = job["train"]["steps"]
    ranks = job["dist"]["ranks"]
    world = job["dist"]["world"]
    measured_local = job["train"]["rows_read"] / steps / world
    scale = args.local_batch / measured_local
    # Per rank and step, at the measured local batch.
    d_bytes = sum(r["allreduce_bytes_sent"] for r in ranks) / len(ranks) / steps / (2 * (world - 1) / world)
    emb = sum(r["bytes_sent"] - r["allreduce_bytes_sent"] for r in ranks) / len(ranks) / steps
    emb_all = emb / ((world - 1) / world)  # what a rank would send if every owner were remote
    straggle = sum(r["breakdown"]["allreduce_s"] for r in ranks) / len(ranks) / steps
    beta = args.bandwidth_gbit * 1e9 / 8 * args.efficiency
    alpha = args.latency_us * 1e-6
    print(f"inputs: compute {r_node:.0f} rows/s per node (1 process), local batch {measured_local:.0f} measured -> "
          f"{args.local_batch} modelled; dense gradients {d_bytes / 1e6:.2f} MB; embedding bytes per rank-step "
          f"{emb_all * scale / 1e6:.2f} MB if all remote; 2-rank AllReduce wait {straggle * 1e3:.1f} ms; "
          f"link {args.bandwidth_gbit:g} Gbit/s x {args.efficiency:g}, {args.latency_us:g} us")
    for n in [int(x) for x in args.nodes.split(",")]:
        b = args.local_batch
        t_comp = b / r_node
        t_emb = emb_all * scale * (n - 1) / n / beta
        t_ar = 2 * (n - 1) / n * d_bytes / beta
        t_lat = args.rounds_per_peer * (n - 1) * alpha
        t_str = straggle * math.log2(n)
        t = t_comp + t_emb + t_ar + t_lat + t_str
        sps = n * b / t
        print(f"{n:3d} nodes: step {t * 1e3:.1f} ms (compute {t_comp * 1e3:.1f}, embedding {t_emb * 1e3:.1f}, "
              f"allreduce {t_ar * 1e3:.1f}, latency {t_lat * 1e3:.1f}, stragglers {t_str * 1e3:.1f}) -> "
              f"{sps:,.0f} samples/s, {args.rows / sps / 60:.1f} min per epoch of {args.rows / 1e6:g}M rows, "
              f"{sps / (n * r_node):.0%} of linear")


if __name__ == "__main__":
    main()
