#!/usr/bin/env python3
"""A bounded hostile-client probe of a running rectrain HTTP server (rectrain serve, rectrain ui),
on loopback, for its tests (tests/serve_test.sh, tests/ui_limits_test.sh) and for the figures in
docs/decisions/0008-own-http-server.md. Issue 26 items 1-4:

  1. idle + slow connections held while /healthz is asked on fresh connections: every answer
     must come within 2 s, and the median within 100 ms;
  2. a chunked POST over --max-body: 413 before the client has sent all of 4x the limit (at
     least 64 MiB), and with --pid the server's peak RSS grows by at most the limit + 16 MiB;
  3. Content-Length twice: 400; a POST without a length: answered at once; three pipelined
     requests: three answers;
  4. the connection counters on /metrics.

Usage: http_limits_probe.py URL --post PATH --max-body BYTES [--token T] [--idle N] [--slow N]
                            [--pid PID] [--report-only]
--report-only prints what happens without failing (to measure another server's behaviour).
Every wait has a deadline; the whole probe ends within about a minute.
"""
import argparse
import socket
import statistics
import sys
import time
import urllib.parse

FAILURES = []
REST = {}  # socket -> bytes received beyond the replies read so far


def check(ok, what):
    print(("ok:   " if ok else "FAIL: ") + what, flush=True)
    if not ok:
        FAILURES.append(what)


def connect(addr, timeout=5.0):
    s = socket.create_connection(addr, timeout=timeout)
    s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return s


def read_reply(s, deadline, no_body=False):
    """(status, headers, body) of the next Content-Length framed reply; status 0 on timeout/close."""
    buf = REST.pop(s, b"")
    while True:
        end = buf.find(b"\r\n\r\n")
        if end >= 0:
            head = buf[:end].decode("latin-1").lower()
            length = 0
            for line in head.split("\r\n")[1:]:
                if line.startswith("content-length:"):
                    length = int(line.split(":", 1)[1])
            if no_body:
                length = 0
            if len(buf) >= end + 4 + length:
                REST[s] = buf[end + 4 + length:]
                return int(head.split(" ")[1]), head, buf[end + 4:end + 4 + length]
        left = deadline - time.monotonic()
        if left <= 0:
            return 0, "", b""
        s.settimeout(left)
        try:
            chunk = s.recv(65536)
        except (socket.timeout, OSError):
            return 0, "", b""
        if not chunk:
            return 0, "", b""
        buf += chunk


class Probe:
    def __init__(self, args):
        u = urllib.parse.urlparse(args.url)
        self.addr = (u.hostname, u.port)
        self.host = "Host: %s:%d\r\n" % (u.hostname, u.port)
        self.auth = "Authorization: Bearer %s\r\n" % args.token if args.token else ""
        self.args = args

    def request(self, raw, timeout=2.0, no_body=False):
        s = connect(self.addr)
        try:
            s.sendall(raw.encode("latin-1") if isinstance(raw, str) else raw)
            return read_reply(s, time.monotonic() + timeout, no_body)
        finally:
            s.close()

    def get(self, path, timeout=2.0):
        return self.request("GET %s HTTP/1.1\r\n%s%sConnection: close\r\n\r\n" % (path, self.host, self.auth), timeout)

    def rss_kib(self, field):
        if not self.args.pid:
            return None
        for line in open("/proc/%d/status" % self.args.pid):
            if line.startswith(field + ":"):
                return int(line.split()[1])
        return None

    def held_connections(self):
        a = self.args
        held = []
        for i in range(a.idle + a.slow):
            s = connect(self.addr)
            if i < a.slow:
                s.sendall(b"GET /healthz HTTP/1.1\r\nHo")  # a head that never ends
            held.append(s)
        times = []
        for _ in range(20):
            t0 = time.monotonic()
            status, _, _ = self.get("/healthz", timeout=2.0)
            times.append((time.monotonic() - t0) * 1000 if status == 200 else float("inf"))
        answered = [t for t in times if t != float("inf")]
        median = statistics.median(times)
        print("healthz with %d idle + %d slow connections held: %d/20 answered within 2 s, median %.2f ms, max %s"
              % (a.idle, a.slow, len(answered), median, "%.2f ms" % max(answered) if answered else "-"))
        check(len(answered) == 20, "every /healthz answered within 2 s while %d connections are held" % len(held))
        check(median < 100, "median /healthz under 100 ms (%.2f ms)" % median)
        metrics = self.get("/metrics")[2].decode("latin-1", "replace")
        open_line = [l for l in metrics.split("\n") if l.startswith("rectrain_http_connections_open ")]
        if not a.report_only:
            check(bool(open_line) and float(open_line[0].split()[1]) >= len(held),
                  "rectrain_http_connections_open counts them (%s)" % (open_line[0] if open_line else "absent"))
        for s in held:
            s.close()

    def oversized_chunked(self):
        a = self.args
        chunk = 1 << 18
        hwm0 = self.rss_kib("VmHWM")
        s = connect(self.addr)
        s.sendall(("POST %s HTTP/1.1\r\n%s%sContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                   % (a.post, self.host, self.auth)).encode())
        sent, status, t0 = 0, 0, time.monotonic()
        total = max(4 * a.max_body, 64 << 20)
        payload = b"%x\r\n" % chunk + b" " * chunk + b"\r\n"
        try:
            while sent < total and time.monotonic() - t0 < 30:
                s.sendall(payload)
                sent += chunk
                s.settimeout(0.0)
                try:
                    peek = s.recv(1, socket.MSG_PEEK)
                except (BlockingIOError, socket.timeout):
                    peek = None
                s.settimeout(5.0)
                if peek:
                    break
            if sent >= total:
                s.sendall(b"0\r\n\r\n")
            status, _, body = read_reply(s, time.monotonic() + 15)
        except OSError as e:  # reset after the reply: read what came
            status, _, body = read_reply(s, time.monotonic() + 2)
            if status == 0:
                print("  the connection failed after %d bytes: %s" % (sent, e))
        s.close()
        hwm1 = self.rss_kib("VmHWM")
        grew = "" if hwm0 is None else ", server peak RSS %d -> %d MiB" % (hwm0 // 1024, hwm1 // 1024)
        print("chunked POST over the %d-byte limit: HTTP %d after %.1f MiB sent in %.2f s%s"
              % (a.max_body, status, sent / 2**20, time.monotonic() - t0, grew))
        check(status == 413, "413 for a chunked body over the limit")
        # What the client has sent includes what the kernel buffers on loopback (a few MiB).
        check(sent < total, "the 413 came before the client had sent %d MiB (%.1f MiB)" % (total >> 20, sent / 2**20))
        if hwm0 is not None:
            check((hwm1 - hwm0) * 1024 <= a.max_body + (16 << 20),
                  "the server's peak RSS grew by at most the limit + 16 MiB (%d KiB)" % (hwm1 - hwm0))

    def framing(self):
        a = self.args
        # A 400 that names the framing (the route's own 400 for the body would not).
        st, _, body = self.request("POST %s HTTP/1.1\r\n%s%sContent-Length: 2\r\nContent-Length: 2\r\n\r\n{}"
                                   % (a.post, self.host, self.auth))
        check(st == 400 and b"Content-Length" in body, "two Content-Length headers: 400 (got %d %s)" % (st, body[:80]))
        st, _, body = self.request("POST %s HTTP/1.1\r\n%s%sContent-Length: 7\r\nTransfer-Encoding: chunked\r\n\r\n"
                                   "2\r\n{}\r\n0\r\n\r\n" % (a.post, self.host, self.auth))
        check(st == 400 and b"Transfer-Encoding" in body,
              "Content-Length with Transfer-Encoding: 400 (got %d %s)" % (st, body[:80]))
        t0 = time.monotonic()
        st, _, _ = self.request("POST %s HTTP/1.1\r\n%s%s\r\n" % (a.post, self.host, self.auth), timeout=2.0)
        ms = (time.monotonic() - t0) * 1000
        check(st != 0, "a POST without a length is answered at once (HTTP %d in %.1f ms)" % (st, ms))
        s = connect(self.addr)
        s.sendall(("GET /healthz HTTP/1.1\r\n%s\r\n" % self.host * 3).encode())
        got = [read_reply(s, time.monotonic() + 2)[0] for _ in range(3)]
        s.close()
        check(got == [200, 200, 200], "three pipelined requests, three answers (%s)" % got)


def main():
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    p.add_argument("url")
    p.add_argument("--post", required=True, help="a POST route that reads a body (/v1/predict)")
    p.add_argument("--max-body", type=int, required=True, help="the server's body limit in bytes")
    p.add_argument("--token", default="")
    p.add_argument("--idle", type=int, default=480)
    p.add_argument("--slow", type=int, default=20)
    p.add_argument("--pid", type=int, default=0, help="the server's pid, for its peak RSS")
    p.add_argument("--report-only", action="store_true")
    args = p.parse_args()
    probe = Probe(args)
    probe.held_connections()
    probe.oversized_chunked()
    probe.framing()
    metrics = probe.get("/metrics")[2].decode("latin-1", "replace")
    for line in metrics.split("\n"):
        if line.startswith("rectrain_http_connections_closed_total") and not line.endswith(" 0"):
            print("  " + line)
    if FAILURES and not args.report_only:
        print("%d check(s) failed" % len(FAILURES))
        return 1
    return 0


if __name__ == "__main__":
    sys.exit(main())
