#!/usr/bin/env python3
"""The load generator of `make bench-gateway` (scripts/bench-gateway.sh): HTTP/1.1 keep-alive
clients (http.client, one connection per thread) against push-gateway instances, standard
library only.

  gateway_load.py batches --body FILE --requests N --threads T URL...
      POSTs FILE (a {"notifications":[…]} body, sent as is, bytes prepared once) N times to
      /v1/notifications, T threads spread over the URLs, closed loop (each thread sends its next
      request when the answer came). Prints one JSON object: requests, answers by status, items
      queued (counted in the 202 bodies), the wall-clock ms of the first send and of the last
      answer, seconds.
  gateway_load.py rate --items FILE --rate R --seconds S --threads T --out TSV URL...
      single-notification requests at R a second, open loop: request i is due at start + i/R
      whatever the answers do (a thread takes the next due request, waits for its time, sends);
      the time to the answer is counted from the due time, so a slow server cannot hide its
      queue (no coordinated omission). Items are FILE's lines round robin. Writes "id<TAB>due
      wall ms<TAB>202 wall ms<TAB>latency µs" per queued notification to TSV and prints a
      JSON summary: sent, answers by status, p50/p99/max latency to the answer (ms), how late the
      sends were (p99 ms: the generator's own lag), achieved rate.
  gateway_load.py sink
      a trivial HTTP/1.1 endpoint (reads each request and its body, answers 202 with a fixed
      small body, keep-alive), printing "listening PORT": the generator's ceiling is measured
      against it (its cost shares the cores, so the ceiling measured is a lower bound).
The API key is read from $PUSHSEAL_API_KEY (never argv: ps shows argv to every local user).
"""
import argparse
import http.client
import json
import os
import signal
import socket
import sys
import threading
import time
import urllib.parse


def connection(url):
    u = urllib.parse.urlsplit(url)
    c = http.client.HTTPConnection(u.hostname, u.port, timeout=120)
    c.connect()
    c.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
    return c


def post(c, key, body):
    c.request("POST", "/v1/notifications", body=body,
              headers={"Authorization": "Bearer " + key, "Content-Type": "application/json"})
    r = c.getresponse()
    return r.status, r.read()


def run_threads(targets):
    """Runs the workers; the first exception of any stops the generator (exit 1, one line)."""
    errors = []

    def guarded(f, arg):
        try:
            f(arg)
        except Exception as e:  # noqa: BLE001 — reported and turned into the exit status
            errors.append(e)

    threads = [threading.Thread(target=guarded, args=t) for t in targets]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if errors:
        sys.exit("gateway_load: error: %s: %s" % (type(errors[0]).__name__, errors[0]))


def percentile(sorted_values, p):
    if not sorted_values:
        return None
    return sorted_values[min(len(sorted_values) - 1, int(round(p / 100 * (len(sorted_values) - 1))))]


def batches(a):
    body = open(a.body, "rb").read()
    lock = threading.Lock()
    state = {"next": 0, "queued": 0, "statuses": {}, "last": 0.0}

    def worker(url):
        c = connection(url)
        while True:
            with lock:
                if state["next"] >= a.requests:
                    break
                state["next"] += 1
            status, answer = post(c, a.key, body)
            queued = answer.count(b'"status":"queued"') if status == 202 else 0
            done = time.time()
            with lock:
                state["queued"] += queued
                state["statuses"][status] = state["statuses"].get(status, 0) + 1
                state["last"] = max(state["last"], done)
        c.close()

    start_wall, start = time.time(), time.monotonic()
    run_threads([(worker, a.urls[i % len(a.urls)]) for i in range(a.threads)])
    seconds = time.monotonic() - start
    print(json.dumps({"requests": a.requests, "statuses": {str(k): v for k, v in state["statuses"].items()},
                      "queued": state["queued"], "startMs": int(start_wall * 1000), "lastAnswerMs": int(state["last"] * 1000),
                      "seconds": round(seconds, 3)}))


def rate(a):
    items = [l.strip().encode() for l in open(a.items) if l.strip()]
    total = int(a.rate * a.seconds)
    lock = threading.Lock()
    state = {"next": 0}
    latencies, lags, statuses, rows = [], [], {}, []
    start_mono = time.monotonic() + 0.2
    start_wall = time.time() + 0.2

    def worker(url):
        c = connection(url)
        while True:
            with lock:
                i = state["next"]
                if i >= total:
                    break
                state["next"] += 1
            due = start_mono + i / a.rate
            wait = due - time.monotonic()
            if wait > 0:
                time.sleep(wait)
            sent = time.monotonic()
            try:
                status, answer = post(c, a.key, items[i % len(items)])
            except (OSError, http.client.HTTPException):
                c.close()
                c = connection(url)
                status, answer = 0, b""
            answered = time.monotonic()
            micro = int((answered - due) * 1e6)
            note = None
            if status == 202:
                o = json.loads(answer)
                n = o["notifications"][0]
                if "id" in n:
                    note = (n["id"], int((start_wall + (due - start_mono)) * 1000), int((start_wall + (answered - start_mono)) * 1000), micro)
            with lock:
                statuses[status] = statuses.get(status, 0) + 1
                latencies.append(micro)
                lags.append(int((sent - due) * 1e6))
                if note:
                    rows.append(note)
        c.close()

    run_threads([(worker, a.urls[i % len(a.urls)]) for i in range(a.threads)])
    elapsed = time.monotonic() - start_mono
    with open(a.out, "w") as f:
        for r in rows:
            f.write("%s\t%d\t%d\t%d\n" % r)
    latencies.sort()
    lags.sort()
    ms = lambda v: None if v is None else round(v / 1000, 2)
    print(json.dumps({"sent": total, "statuses": {str(k): v for k, v in statuses.items()}, "queued": len(rows),
                      "p50Ms": ms(percentile(latencies, 50)), "p99Ms": ms(percentile(latencies, 99)), "maxMs": ms(latencies[-1] if latencies else None),
                      "lagP99Ms": ms(percentile(lags, 99)), "achievedPerSecond": round(total / elapsed, 1)}))


def sink(_a):
    answer = b'{"notifications":[{"id":"00000000-0000-4000-8000-000000000000","recipient":"r","status":"queued"}]}'
    head = b"HTTP/1.1 202 Accepted\r\nContent-Type: application/json\r\nContent-Length: %d\r\n\r\n" % len(answer)
    server = socket.socket()
    server.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    server.bind(("127.0.0.1", 0))
    server.listen(128)

    def serve(s):
        s.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        f = s.makefile("rb", buffering=1 << 16)
        buf = bytearray(1 << 20)
        try:
            while True:
                length = 0
                line = f.readline()
                if not line:
                    return
                while line not in (b"\r\n", b"\n", b""):
                    if line[:15].lower() == b"content-length:":
                        length = int(line[15:])
                    line = f.readline()
                while length > 0:
                    n = f.readinto(memoryview(buf)[:min(length, len(buf))])
                    if not n:
                        return
                    length -= n
                s.sendall(head + answer)
        except OSError:
            return
        finally:
            s.close()

    print("listening %d" % server.getsockname()[1], flush=True)
    while True:
        s, _ = server.accept()
        threading.Thread(target=serve, args=(s,), daemon=True).start()


def main():
    # A parent may start us with SIGTERM blocked (a test runner that handles its own signals):
    # the bench stops the sink with SIGTERM, so take the default action back.
    signal.pthread_sigmask(signal.SIG_UNBLOCK, [signal.SIGTERM, signal.SIGINT])
    p = argparse.ArgumentParser(description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter)
    sub = p.add_subparsers(dest="mode", required=True)
    b = sub.add_parser("batches")
    b.add_argument("--body", required=True)
    b.add_argument("--requests", type=int, required=True)
    b.add_argument("--threads", type=int, default=4)
    b.add_argument("urls", nargs="+")
    r = sub.add_parser("rate")
    r.add_argument("--items", required=True)
    r.add_argument("--rate", type=float, required=True)
    r.add_argument("--seconds", type=float, required=True)
    r.add_argument("--threads", type=int, default=32)
    r.add_argument("--out", required=True)
    r.add_argument("urls", nargs="+")
    sub.add_parser("sink")
    a = p.parse_args()
    a.key = os.environ.get("PUSHSEAL_API_KEY", "")
    {"batches": batches, "rate": rate, "sink": sink}[a.mode](a)


if __name__ == "__main__":
    sys.exit(main())
