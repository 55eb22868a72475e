#!/usr/bin/python3
"""A fault-injecting HTTP proxy for the object-storage tests.

Forwards every request to an upstream S3 server (s3rver) and, on a schedule, answers it with a
fault instead:
  503       HTTP 503 with an S3 <Error><Code>ServiceUnavailable</Code> body
  slowdown  HTTP 503 with <Code>SlowDown</Code> (S3's throttling answer)
  drop      forwards, sends the response headers and half of the body, then resets the connection
  stall     forwards, sends half of the body, then sends nothing for --stall-seconds
  down      closes the connection without answering (as if the server were gone)
  hold      reads the request, logs it at once, and neither forwards nor answers it until the
            proxy exits (an upload in flight: a test kills the writer while it waits)

--plan is a comma-separated list of FAULT@N (the N-th request, 1-based, counting every request
the proxy sees) and FAULT%K (every K-th request). The first matching entry wins. Requests whose
path does not contain --only (if given) are never faulted but are counted.

Writes one JSON line per request to --log: {"n", "method", "path", "fault", "status"}, before a
whole answer is sent, so a client that has its answer finds the line (a dropped or stalled answer
is logged once its first half is sent, before the drop or the stall).
Prints "listening PORT" on stdout once it accepts connections. With --certfile/--keyfile it serves
HTTPS (the TLS tests).

Usage: fault_proxy.py --upstream http://127.0.0.1:PORT --port 0 --plan "503%7,drop%11" --log FILE
"""
import argparse
import http.client
import http.server
import json
import socket
import ssl
import struct
import sys
import threading
import time
import urllib.parse

FAULT_XML = ('<?xml version="1.0" encoding="UTF-8"?><Error><Code>{code}</Code>'
             '<Message>{msg}</Message></Error>')


class Plan:
    def __init__(self, text, only):
        self.at, self.every, self.only = {}, [], only
        self.n = 0
        self.lock = threading.Lock()
        for item in filter(None, (text or "").split(",")):
            if "@" in item:
                fault, n = item.split("@")
                self.at[int(n)] = fault
            else:
                fault, k = item.split("%")
                self.every.append((fault, int(k)))

    def next(self, path):
        with self.lock:
            self.n += 1
            n = self.n
        if self.only and self.only not in path:
            return n, "pass"
        if n in self.at:
            return n, self.at[n]
        for fault, k in self.every:
            if n % k == 0:
                return n, fault
        return n, "pass"


def make_handler(args, plan, log, log_lock):
    upstream = urllib.parse.urlparse(args.upstream)

    class Handler(http.server.BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, *a):
            pass

        def record(self, n, fault, status):
            with log_lock:
                log.write(json.dumps({"n": n, "method": self.command, "path": self.path,
                                      "fault": fault, "status": status}) + "\n")
                log.flush()

        def reset(self):
            # SO_LINGER 0: close with RST, as a crashed peer or a load balancer would.
            self.connection.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            self.close_connection = True

        def handle_any(self):
            length = int(self.headers.get("Content-Length") or 0)
            body = self.rfile.read(length) if length else b""
            n, fault = plan.next(self.path)
            if fault == "hold":
                self.record(n, fault, 0)
                threading.Event().wait()  # daemon thread: ends with the proxy
            if fault == "down":
                self.record(n, fault, 0)
                self.reset()
                return
            if fault in ("503", "slowdown"):
                code, msg = (("SlowDown", "Please reduce your request rate.") if fault == "slowdown"
                             else ("ServiceUnavailable", "Injected by fault_proxy."))
                payload = FAULT_XML.format(code=code, msg=msg).encode()
                self.record(n, fault, 503)
                self.send_response(503)
                self.send_header("Content-Type", "application/xml")
                self.send_header("Content-Length", str(len(payload)))
                self.end_headers()
                if self.command != "HEAD":
                    self.wfile.write(payload)
                return
            conn = http.client.HTTPConnection(upstream.hostname, upstream.port, timeout=60)
            headers = {k: v for k, v in self.headers.items() if k.lower() != "connection"}
            conn.request(self.command, self.path, body=body, headers=headers)
            resp = conn.getresponse()
            data = resp.read()
            conn.close()
            partial = fault in ("drop", "stall") and self.command != "HEAD" and len(data) >= 2
            if not partial:
                self.record(n, "pass" if fault in ("drop", "stall") else fault, resp.status)
            self.send_response(resp.status)
            for k, v in resp.getheaders():
                if k.lower() not in ("connection", "transfer-encoding", "keep-alive", "date", "server"):
                    self.send_header(k, v)
            if "content-length" not in (k.lower() for k, _ in resp.getheaders()):
                self.send_header("Content-Length", str(len(data)))
            self.end_headers()
            if partial:
                self.wfile.write(data[: len(data) // 2])
                self.wfile.flush()
                # Logged before the stall: the client gives up on it after its own timeout,
                # retries, and may look for this line long before the stall ends.
                self.record(n, fault, resp.status)
                if fault == "stall":
                    time.sleep(args.stall_seconds)
                self.reset()
                return
            if self.command != "HEAD":
                self.wfile.write(data)

        do_GET = do_PUT = do_POST = do_DELETE = do_HEAD = handle_any

    return Handler


def main():
    p = argparse.ArgumentParser()
    p.add_argument("--upstream", required=True)
    p.add_argument("--port", type=int, default=0)
    p.add_argument("--plan", default="")
    p.add_argument("--only", default="")
    p.add_argument("--stall-seconds", type=float, default=5.0)
    p.add_argument("--log", required=True)
    p.add_argument("--certfile", default="", help="serve HTTPS with this certificate (and --keyfile)")
    p.add_argument("--keyfile", default="")
    args = p.parse_args()
    log = open(args.log, "a")
    server = http.server.ThreadingHTTPServer(("127.0.0.1", args.port),
                                             make_handler(args, Plan(args.plan, args.only), log, threading.Lock()))
    server.daemon_threads = True
    if args.certfile:
        ctx = ssl.SSLContext(ssl.PROTOCOL_TLS_SERVER)
        ctx.load_cert_chain(args.certfile, args.keyfile)
        server.socket = ctx.wrap_socket(server.socket, server_side=True)
    print("listening", server.server_address[1], flush=True)
    server.serve_forever()


if __name__ == "__main__":
    sys.exit(main())
