#!/usr/bin/env python3
"""Online ingest benchmark: the criteo-shape DeepFM trained from the same rows read from a local
file, from a Redis stream and from a Kafka topic, interleaved in one session (docs/online.md).

  python3 bench/online/ingest.py --rows 400000 --repeats 3

The rows are generated once (`rectrain data gen`), produced once into a private redis-server and
into librdkafka's mock cluster (the stream_kafka_mock process; no Kafka broker is packaged in
Debian 12), then each repeat trains once per source: `rectrain train bench/specs/criteo_deepfm.yaml`
with data.train = the file, or data.stream = the broker with start: earliest, a group of its own
and train.max_rows = the rows. Samples/s is summary.json's train.samples_per_sec (training-loop
time, data waits included); beside it, rows per CPU-second of the trainer process (user + system
time of the `rectrain train` child: setup, the consumer path and training), which a loaded
machine disturbs less than wall time, and the CPU seconds the broker process (redis-server, the
mock cluster) spent meanwhile. The brokers run on the same machine and take CPU from the trainer,
as they would on one host. Prints the medians and the stream/file ratios; --csv appends rows.

The mock cluster keeps at most 5 MiB (and 100,000 produce batches) per partition and drops the
oldest batches beyond that (librdkafka 2.0.2, rdkafka_mock.c; not configurable through its API),
so the topic gets one partition per 4 MiB of rows: with one partition, 400k rows (97 MB) left
only the newest ~20k in the topic, and a run waiting for train.max_rows waited forever. Each
training run is bounded (--timeout) and must read exactly the rows produced.

Only the Python standard library; the binaries come from build/release.
"""
import argparse
import csv
import json
import os
import resource
import shutil
import signal
import socket
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def log(msg):
    print(msg, flush=True)


def free_port():
    s = socket.socket()
    s.bind(("127.0.0.1", 0))
    port = s.getsockname()[1]
    s.close()
    return port


def wait_for(pred, seconds, what):
    deadline = time.time() + seconds
    while time.time() < deadline:
        if pred():
            return
        time.sleep(0.05)
    raise RuntimeError(f"timed out waiting for {what}")


def log_machine():
    """Logs the CPU's AVX-512 flags, the core count and the load average (docs: name the CPU)."""
    cpu = sorted(set(w for w in open("/proc/cpuinfo").read().split() if w.startswith("avx512")))
    log(f"cpu flags: {' '.join(cpu) or 'no avx512'}; {os.cpu_count()} cpus; load average {os.getloadavg()}")


def start_redis(work):
    """A private redis-server on a free loopback port, without persistence; (process, port) once
    it accepts connections."""
    redis_dir = os.path.join(work, "redis")
    os.makedirs(redis_dir, exist_ok=True)
    port = free_port()
    proc = subprocess.Popen(["redis-server", "--port", str(port), "--bind", "127.0.0.1", "--save", "", "--appendonly", "no",
                             "--dir", redis_dir, "--logfile", os.path.join(redis_dir, "redis.log")])

    def up():
        try:
            socket.create_connection(("127.0.0.1", port), timeout=0.2).close()
            return True
        except OSError:
            return False
    wait_for(up, 10, "redis-server")
    return proc, port


MOCK_PARTITION_BYTES = 4 << 20  # under the mock's 5 MiB per partition, with room for batch overhead


class Brokers:
    """A private redis-server and a stream_kafka_mock process with a topic of `partitions`
    partitions, torn down on exit."""

    def __init__(self, build, work, partitions):
        redis, self.redis_port = start_redis(work)
        self.procs = [redis]
        boot = os.path.join(work, "bootstraps")
        if os.path.exists(boot):
            os.remove(boot)  # a previous run's (its brokers are gone)
        self.procs.append(subprocess.Popen(
            [os.path.join(build, "stream_kafka_mock"), "--out", boot, "--brokers", "1", "--topic", f"events:{partitions}"],
            stderr=open(os.path.join(work, "kafka_mock.log"), "w")))
        wait_for(lambda: os.path.exists(boot), 10, "the kafka mock")
        self.kafka = open(boot).read().strip()

    def cpu_seconds(self, kind):
        """User + system CPU seconds the broker process of `kind` has used so far."""
        pid = self.procs[0 if kind == "redis" else 1].pid
        with open(f"/proc/{pid}/stat") as f:
            fields = f.read().rsplit(")", 1)[1].split()
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def url(self, kind):
        return f"redis://127.0.0.1:{self.redis_port}/events" if kind == "redis" else f"kafka://{self.kafka}/events"

    def close(self):
        for p in self.procs:
            p.send_signal(signal.SIGTERM)
            try:
                p.wait(10)
            except subprocess.TimeoutExpired:
                p.kill()


def train(binary, spec, run_dir, sets, timeout):
    shutil.rmtree(run_dir, ignore_errors=True)
    cmd = [binary, "train", spec, "--run-dir", run_dir, "--quiet", "--no-progress"]
    for s in sets:
        cmd += ["--set", s]
    env = dict(os.environ, RECTRAIN_TRACKING_STORE=os.path.join(os.path.dirname(run_dir), "tracking.db"))
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    try:
        subprocess.run(cmd, check=True, env=env, timeout=timeout)
    except subprocess.TimeoutExpired:
        raise RuntimeError(f"{' '.join(cmd)} did not finish within {timeout}s (a stream holding fewer rows than "
                           "train.max_rows waits for more)") from None
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    with open(os.path.join(run_dir, "summary.json")) as f:
        return json.load(f), cpu


def main():
    ap = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    ap.add_argument("--rows", type=int, default=400000)
    ap.add_argument("--repeats", type=int, default=3)
    ap.add_argument("--spec", default=os.path.join(ROOT, "bench", "specs", "criteo_deepfm.yaml"))
    ap.add_argument("--build", default=os.path.join(ROOT, "build", "release"))
    ap.add_argument("--work", default="")
    ap.add_argument("--csv", default="")
    ap.add_argument("--timeout", type=int, default=300, help="seconds one training run may take")
    ap.add_argument("--set", action="append", default=[], help="extra --set for every run")
    a = ap.parse_args()
    binary = os.path.join(a.build, "rectrain")
    work = a.work or tempfile.mkdtemp(prefix="rectrain_online_bench_")
    os.makedirs(work, exist_ok=True)
    data = os.path.join(work, f"criteo_{a.rows}.tsv")
    if not os.path.exists(data):
        subprocess.run([binary, "data", "gen", "--rows", str(a.rows), "--out", data, "--seed", "1"], check=True)
    log_machine()
    partitions = max(1, -(-os.path.getsize(data) // MOCK_PARTITION_BYTES))
    log(f"kafka topic of {partitions} partitions")
    brokers = Brokers(a.build, work, partitions)
    results = {"file": [], "redis": [], "kafka": []}
    per_cpu = {"file": [], "redis": [], "kafka": []}
    try:
        for kind in ("redis", "kafka"):
            t = time.time()
            subprocess.run([binary, "data", "produce", data, "--to", brokers.url(kind), "--quiet"], check=True)
            log(f"produced {a.rows} rows into {kind} in {time.time() - t:.1f}s")
        for r in range(a.repeats):
            for kind in ("file", "redis", "kafka"):
                run_dir = os.path.join(work, f"run_{kind}_{r}")
                if kind == "file":
                    sets = [f"data.train={data}"]
                else:
                    sets = [f"data.stream.url={brokers.url(kind)}", f"data.stream.group=bench-{kind}-{r}",
                            "data.stream.start=earliest", f"train.max_rows={a.rows}"]
                broker_before = brokers.cpu_seconds(kind) if kind != "file" else 0.0
                s, cpu = train(binary, a.spec, run_dir, sets + a.set, a.timeout)
                broker_cpu = brokers.cpu_seconds(kind) - broker_before if kind != "file" else 0.0
                if s["train"]["rows_read"] != a.rows:
                    raise RuntimeError(f"{kind} run read {s['train']['rows_read']} rows, not {a.rows}")
                sps = s["train"]["samples_per_sec"]
                results[kind].append(sps)
                per_cpu[kind].append(a.rows / cpu)
                log(f"repeat {r} {kind:5s}: {sps:,.0f} samples/s ({s['train']['rows_read']} rows, "
                    f"data wait {s['train']['breakdown']['data_wait_s']:.2f}s); {a.rows / cpu:,.0f} rows per CPU-second "
                    f"of the trainer process ({cpu:.1f} s); broker process {broker_cpu:.1f} CPU-s; "
                    f"load {os.getloadavg()[0]:.1f}")
    finally:
        brokers.close()
    med = {k: statistics.median(v) for k, v in results.items()}
    log(f"median samples/s: file {med['file']:,.0f}  redis {med['redis']:,.0f} ({med['redis'] / med['file']:.2f}x)  "
        f"kafka {med['kafka']:,.0f} ({med['kafka'] / med['file']:.2f}x)")
    cm = {k: statistics.median(v) for k, v in per_cpu.items()}
    log(f"median rows per CPU-second: file {cm['file']:,.0f}  redis {cm['redis']:,.0f} ({cm['redis'] / cm['file']:.2f}x)  "
        f"kafka {cm['kafka']:,.0f} ({cm['kafka'] / cm['file']:.2f}x)")
    if a.csv:
        new = not os.path.exists(a.csv)
        with open(a.csv, "a", newline="") as f:
            w = csv.writer(f)
            if new:
                w.writerow(["time", "rows", "source", "repeat", "samples_per_sec", "rows_per_cpu_second"])
            for kind, vals in results.items():
                for i, v in enumerate(vals):
                    w.writerow([time.strftime("%Y-%m-%dT%H:%M:%S"), a.rows, kind, i, f"{v:.0f}", f"{per_cpu[kind][i]:.0f}"])


if __name__ == "__main__":
    sys.exit(main())
