#!/usr/bin/env python3
"""Peer for the dense data-parallel workload: examples/fashion_mnist_mlp.yaml in PyTorch DDP.

The same training as rectrain's example, written the way a PyTorch user would: Fashion-MNIST from
Debian's dataset-fashion-mnist (pixel / 255), an MLP 784 -> 512 -> 256 -> 10 (ReLU), softmax
cross-entropy, Adam lr 1e-3 with cosine decay over every step, a global batch of 256 split over
the ranks (DistributedSampler), 6 epochs; torch.nn.parallel.DistributedDataParallel over the
gloo backend (CPU), one process per rank started by torch.multiprocessing.

Prints per run: ranks x threads, training samples/s (the epochs' wall time, data loading
excluded), test accuracy and top-5. Run with Debian's interpreter and python3-torch installed
(scripts/install_deps.sh --peer):

    /usr/bin/python3 bench/torch_mlp_ddp.py --ranks 1 --threads 2
    /usr/bin/python3 bench/torch_mlp_ddp.py --ranks 2 --threads 1

docs/benchmarks.md ("Scale-out") compares it with rectrain on the same machine, interleaved.
"""
import argparse
import gzip
import os
import socket
import time

import numpy as np
import torch
import torch.distributed as dist
import torch.multiprocessing as mp
import torch.nn as nn

DATA = "/usr/share/datasets/fashion-mnist"


def read_idx(path):
    """IDX images (u8, 0x803) -> float32 (n, rows*cols) in [0, 1]; labels (u8, 0x801) -> int64 (n,)."""
    with gzip.open(path, "rb") as f:
        raw = f.read()
    magic = int.from_bytes(raw[0:4], "big")
    if magic == 0x803:
        n, r, c = (int.from_bytes(raw[4 + 4 * i:8 + 4 * i], "big") for i in range(3))
        return np.frombuffer(raw, np.uint8, n * r * c, 16).reshape(n, r * c).astype(np.float32) / 255.0
    if magic == 0x801:
        n = int.from_bytes(raw[4:8], "big")
        return np.frombuffer(raw, np.uint8, n, 8).astype(np.int64)
    raise ValueError(f"{path}: magic {magic:#x} is not an IDX u8 image or label file")


def run(rank, world, args, port, out):
    torch.set_num_threads(args.threads)
    torch.manual_seed(args.seed)
    dist.init_process_group("gloo", init_method=f"tcp://127.0.0.1:{port}", rank=rank, world_size=world)
    x = torch.from_numpy(read_idx(os.path.join(args.data, "train-images-idx3-ubyte.gz")))
    y = torch.from_numpy(read_idx(os.path.join(args.data, "train-labels-idx1-ubyte.gz")))
    tx = torch.from_numpy(read_idx(os.path.join(args.data, "t10k-images-idx3-ubyte.gz")))
    ty = torch.from_numpy(read_idx(os.path.join(args.data, "t10k-labels-idx1-ubyte.gz")))
    dims = [x.shape[1]] + [int(h) for h in args.hidden.split(",")]
    layers = []
    for a, b in zip(dims, dims[1:]):
        layers += [nn.Linear(a, b), nn.ReLU()]
    model = nn.Sequential(*layers, nn.Linear(dims[-1], 10))
    ddp = nn.parallel.DistributedDataParallel(model) if world > 1 else model
    local = args.batch // world
    steps_per_epoch = (len(x) + args.batch - 1) // args.batch
    opt = torch.optim.Adam(model.parameters(), lr=args.lr)
    sched = torch.optim.lr_scheduler.CosineAnnealingLR(opt, T_max=steps_per_epoch * args.epochs)
    loss_fn = nn.CrossEntropyLoss()
    dist.barrier()
    start = time.perf_counter()
    for epoch in range(args.epochs):
        g = torch.Generator().manual_seed(args.seed + epoch)
        perm = torch.randperm(len(x), generator=g)  # the same global order on every rank
        for s in range(steps_per_epoch):
            idx = perm[s * args.batch:(s + 1) * args.batch][rank * local:(rank + 1) * local]
            opt.zero_grad(set_to_none=True)
            loss_fn(ddp(x[idx]), y[idx]).backward()
            opt.step()
            sched.step()
    dist.barrier()
    seconds = time.perf_counter() - start
    if rank == 0:
        with torch.no_grad():
            logits = model(tx)
            acc = (logits.argmax(1) == ty).float().mean().item()
            top5 = (logits.topk(5, 1).indices == ty[:, None]).any(1).float().mean().item()
        out.put((len(x) * args.epochs / seconds, acc, top5, seconds))
    dist.destroy_process_group()


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--ranks", type=int, default=1)
    p.add_argument("--threads", type=int, default=2, help="torch threads per rank")
    p.add_argument("--epochs", type=int, default=6)
    p.add_argument("--batch", type=int, default=256, help="global batch")
    p.add_argument("--lr", type=float, default=1e-3)
    p.add_argument("--hidden", default="512,256")
    p.add_argument("--seed", type=int, default=1)
    p.add_argument("--data", default=DATA)
    args = p.parse_args()
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    ctx = mp.get_context("spawn")
    out = ctx.SimpleQueue()
    mp.start_processes(run, args=(args.ranks, args, port, out), nprocs=args.ranks, join=True, start_method="spawn")
    sps, acc, top5, seconds = out.get()
    print(f"torch DDP {args.ranks}x{args.threads}: {sps:,.0f} samples/s ({seconds:.1f} s), "
          f"test accuracy {acc * 100:.2f}%, top-5 {top5 * 100:.2f}%")


if __name__ == "__main__":
    main()
