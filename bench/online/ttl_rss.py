#!/usr/bin/env python3
"""Memory of a run without end (docs/online.md "Memory over a run without end"): `rectrain train`
from a Redis stream that keeps bringing ids never seen before, with `embedding.ttl_steps` set, and
the trainer's resident memory sampled while it runs. The target of issue 29: RSS growth <= 5%
after the first 5 minutes of 30.

  python3 bench/online/ttl_rss.py --minutes 30 --ttl-steps 60             # the figure
  python3 bench/online/ttl_rss.py --minutes 8 --ttl-steps 0               # the contrast: no expiry

What runs, all on loopback:
  - a private redis-server;
  - a producer (a thread of this script, plain RESP over a socket) that XADDs --rate rows per
    second in criteo layout (label, 13 integers, 26 categorical hex ids) to the stream, trimmed
    with MAXLEN ~ so Redis memory stays bounded. Of the 26 categorical fields, --new-fields take
    an id never used before (a counter, mixed so ids spread over the shards), the others an id
    from a fixed vocabulary of --vocab ids per field: the population of live ids keeps turning
    over, as new users and items arrive and old ones go quiet;
  - the trainer: a small DeepFM (bench/online/ttl_rss.yaml, one thread, so the run takes a
    modest share of the CPU) with data.stream at the redis stream (start: earliest) and
    embedding.ttl_steps = --ttl-steps, checkpointing every --checkpoint-s seconds (each
    checkpoint acknowledges the entries trained, so the consumer group's pending list stays
    bounded too); stopped with SIGTERM after --minutes;
  - the sampler: VmRSS of the trainer process (/proc/PID/status) every --sample-s seconds.
    The CSV has the time, the RSS and the rows produced so far.

Prints RSS at the end of the warm-up (--warmup-min, 5 by default), the maximum and last RSS after
it, and growth = (last - warm-up) / warm-up and (max - warm-up) / warm-up. --csv writes every
sample. Only the Python standard library; the binaries come from build/release.
"""
import argparse
import csv
import os
import random
import shutil
import signal
import socket
import subprocess
import sys
import tempfile
import threading
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from ingest import log, log_machine, start_redis  # noqa: E402  (beside this script)


def resp(*args):
    out = [b"*%d\r\n" % len(args)]
    for a in args:
        b = a if isinstance(a, bytes) else str(a).encode()
        out.append(b"$%d\r\n%s\r\n" % (len(b), b))
    return b"".join(out)


class Producer(threading.Thread):
    """XADDs rows at a fixed rate, in small pipelined bursts every 50 ms; stops on stop()."""

    def __init__(self, port, key, rate, new_fields, vocab, maxlen):
        super().__init__(daemon=True)
        self.port, self.key, self.rate = port, key, rate
        self.new_fields, self.vocab, self.maxlen = new_fields, vocab, maxlen
        self.sent = 0
        self.counter = 0
        self.error = None
        self._stop = threading.Event()
        self.rng = random.Random(1)

    def row(self):
        r = self.rng
        ints = [str(r.randrange(0, 100)) if r.random() > 0.1 else "" for _ in range(13)]
        cats = []
        for f in range(26):
            if f < self.new_fields:
                self.counter += 1
                v = (self.counter * 0x9E3779B97F4A7C15 + f) & 0xFFFFFFFF  # never repeats per field
            else:
                v = (f << 24) | r.randrange(self.vocab)
            cats.append("%08x" % v)
        return "\t".join([str(int(r.random() < 0.25))] + ints + cats)

    def stop(self):
        self._stop.set()

    def run(self):
        try:
            s = socket.create_connection(("127.0.0.1", self.port))
            start = time.time()
            buf = b""
            while not self._stop.is_set():
                due = int((time.time() - start) * self.rate)
                n = due - self.sent
                if n > 0:
                    cmds = [resp("XADD", self.key, "MAXLEN", "~", self.maxlen, "*", "row", self.row()) for _ in range(n)]
                    s.sendall(b"".join(cmds))
                    need = n
                    while need > 0:  # one reply line per XADD: "$15\r\n<id>\r\n"
                        buf += s.recv(65536)
                        while need > 0 and buf.count(b"\r\n") >= 2:
                            first = buf.index(b"\r\n")
                            if buf.startswith(b"-"):
                                raise RuntimeError(buf[:first].decode())
                            second = buf.index(b"\r\n", first + 2)
                            buf = buf[second + 2:]
                            need -= 1
                    self.sent += n
                self._stop.wait(0.05)
        except Exception as e:  # noqa: BLE001  (reported by the main thread)
            self.error = e


def rss_kib(pid):
    try:
        with open(f"/proc/{pid}/status") as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
    except OSError:
        return None
    return None


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--minutes", type=float, default=30)
    ap.add_argument("--warmup-min", type=float, default=5)
    ap.add_argument("--ttl-steps", type=int, default=60)
    ap.add_argument("--rate", type=int, default=1000, help="rows per second produced")
    ap.add_argument("--new-fields", type=int, default=13, help="categorical fields with a new id in every row")
    ap.add_argument("--vocab", type=int, default=10000, help="ids per field of the other fields")
    ap.add_argument("--sample-s", type=float, default=5)
    ap.add_argument("--checkpoint-s", type=int, default=120)
    ap.add_argument("--spec", default=os.path.join(ROOT, "bench", "online", "ttl_rss.yaml"))
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--work", default="")
    ap.add_argument("--csv", default="")
    ap.add_argument("--set", action="append", default=[], help="extra --set for the trainer")
    a = ap.parse_args()
    binary = os.path.join(a.build, "rectrain")
    work = a.work or tempfile.mkdtemp(prefix="rectrain_ttl_rss_")
    os.makedirs(work, exist_ok=True)
    log_machine()
    redis, port = start_redis(work)
    trainer = None
    producer = None
    samples = []
    try:
        # The stream stays ahead of the trainer by far less than this at --rate; the trim only
        # bounds Redis's own memory, it never removes an entry the trainer has not read.
        producer = Producer(port, "events", a.rate, a.new_fields, a.vocab, max(100000, a.rate * 120))
        producer.start()
        run_dir = os.path.join(work, "run")
        shutil.rmtree(run_dir, ignore_errors=True)
        cmd = [binary, "train", a.spec, "--run-dir", run_dir, "--quiet", "--no-progress",
               "--set", f"data.stream.url=redis://127.0.0.1:{port}/events",
               "--set", f"embedding.ttl_steps={a.ttl_steps}",
               "--set", f"train.checkpoint_every_s={a.checkpoint_s}"]
        for s in a.set:
            cmd += ["--set", s]
        env = dict(os.environ, RECTRAIN_TRACKING_STORE=os.path.join(work, "tracking.db"))
        log_file = open(os.path.join(work, "trainer.log"), "w")
        trainer = subprocess.Popen(cmd, env=env, stdout=log_file, stderr=subprocess.STDOUT)
        start = time.time()
        end = start + a.minutes * 60
        while time.time() < end:
            if trainer.poll() is not None:
                raise RuntimeError(f"the trainer exited with {trainer.returncode}; see {work}/trainer.log")
            if producer.error:
                raise RuntimeError(f"producer: {producer.error}")
            kib = rss_kib(trainer.pid)
            t = time.time() - start
            samples.append((t, kib, producer.sent))
            if len(samples) % max(1, int(60 / a.sample_s)) == 0:
                log(f"{t / 60:5.1f} min  RSS {kib / 1024:8.1f} MiB  produced {producer.sent:,}  load {os.getloadavg()[0]:.1f}")
            time.sleep(max(0.0, start + len(samples) * a.sample_s - time.time()))
    finally:
        if producer:
            producer.stop()
        if trainer and trainer.poll() is None:
            trainer.send_signal(signal.SIGTERM)
            try:
                trainer.wait(120)
            except subprocess.TimeoutExpired:
                trainer.kill()
        redis.send_signal(signal.SIGTERM)
        redis.wait(10)
    if a.csv:
        with open(a.csv, "w", newline="") as f:
            w = csv.writer(f)
            w.writerow(["seconds", "rss_kib", "rows_produced"])
            w.writerows(samples)
    warm = [s for s in samples if s[0] >= a.warmup_min * 60]
    if not warm:
        log("the run ended before the warm-up did")
        return 1
    base, last = warm[0][1], warm[-1][1]
    peak = max(s[1] for s in warm)
    log(f"ttl_steps {a.ttl_steps}, {a.minutes:g} min, {a.rate} rows/s produced ({producer.sent:,} rows), "
        f"{a.new_fields} of 26 fields new ids every row")
    log(f"RSS at {a.warmup_min:g} min {base / 1024:.1f} MiB; after it max {peak / 1024:.1f} MiB, last {last / 1024:.1f} MiB; "
        f"growth last {100.0 * (last - base) / base:+.1f}%, max {100.0 * (peak - base) / base:+.1f}%")
    log(f"trainer log: {work}/trainer.log")
    return 0


if __name__ == "__main__":
    sys.exit(main())
