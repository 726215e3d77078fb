#!/usr/bin/env python3
"""Batch benchmark for `push-seal batch`: streams N JSON Lines (1 KB notifications) into the
built binary, discards the output, and reports payloads per second (wall clock, every core)
and the peak resident memory of the push-seal process, which must stay flat as N grows.

Prints `RESULT impl=pushseal op=batch size=1024 rep=0 n=<lines> ns=<wall ns per payload>` and
`RESULT impl=pushseal op=batch-rss size=1024 rep=0 n=<lines> kb=<peak RSS KiB>`.
Usage: batch_rss.py PUSH_SEAL_BINARY [LINES]   (default 1,000,000 lines)
The server keychain is made by `push-keys generate` (the push-keys binary beside push-seal);
every seal reads alice's keyset item and counts the seal, as in production.
"""
import os, resource, subprocess, sys, tempfile, threading, time

binary = sys.argv[1]
count = int(sys.argv[2]) if len(sys.argv) > 2 else 1_000_000
head, tail = '{"title":"Dinner plans","body":"', '","id":"bench-1"}'
note = head + "x" * (1024 - len(head) - len(tail)) + tail
line = ('{"recipient":"alice","notification":' + note + '}\n').encode()

with tempfile.TemporaryDirectory() as d:
    keychain = os.path.join(d, "server")
    keys_binary = os.path.join(os.path.dirname(binary), "push-keys")
    subprocess.run([keys_binary, "generate", "--keychain", keychain, "--app-id", "com.example.app", "--recipient", "alice"],
                   check=True, stdout=subprocess.DEVNULL)
    p = subprocess.Popen([binary, "batch", "--app-id", "com.example.app", "--keychain", keychain, "-"],
                         stdin=subprocess.PIPE, stdout=subprocess.PIPE)

    def feed():
        block = line * 1000
        for _ in range(count // 1000):
            p.stdin.write(block)
        p.stdin.write(line * (count % 1000))
        p.stdin.close()

    start = time.monotonic_ns()
    t = threading.Thread(target=feed)
    t.start()
    lines = 0
    out_bytes = 0
    while True:
        chunk = p.stdout.read(1 << 20)
        if not chunk:
            break
        lines += chunk.count(b"\n")
        out_bytes += len(chunk)
    t.join()
    status = p.wait()
    elapsed = time.monotonic_ns() - start
    rss = resource.getrusage(resource.RUSAGE_CHILDREN).ru_maxrss
    if status != 0 or lines != count:
        sys.exit(f"batch_rss: push-seal exited {status} with {lines} of {count} lines")
    print(f"RESULT impl=pushseal op=batch size=1024 rep=0 n={count} ns={elapsed / count:.1f}")
    print(f"RESULT impl=pushseal op=batch-rss size=1024 rep=0 n={count} kb={rss}")
    print(f"# {count / (elapsed / 1e9):,.0f} payloads/s, peak RSS {rss / 1024:.1f} MiB, {out_bytes / count:.0f} output bytes per line")
