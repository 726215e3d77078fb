#!/usr/bin/env python3
"""PushSeal benchmark peer (Python `pywebpush`): the Web Push message encryption a Python server
does for every push (RFC 8291 with RFC 8188 `aes128gcm`: a fresh P-256 key pair, one ECDH with the
subscription's public key, HKDF, AES-128-GCM), through pywebpush's own `WebPusher.encode`, the step
before its HTTP request (nothing is sent). The plaintext is the same notification JSON as
seal_peer.py's full seal at 256 B / 1 KB / 2 KB, so push-bench's V2Bench can put it beside the
v2 full seal (issue 13: "at least 1.5x faster than pywebpush"). The subscription's key pair and
auth secret are made once, outside the timed loop; one encrypted message is decrypted with
`http_ece` and the subscription's private key first, to show the job is real.

Prints `RESULT impl=pywebpush op=webpush-seal size=<bytes> rep=<n> n=<iterations> ns=<ns per op>`.
Usage: webpush_peer.py [--quick] [--n N --warmup W --reps R]
"""
import base64, os, sys, time

import http_ece
from cryptography.hazmat.primitives import serialization
from cryptography.hazmat.primitives.asymmetric import ec
from pywebpush import WebPusher


def option(name, default):
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def notification(size):
    head, tail = '{"title":"Dinner plans","body":"', '","id":"bench-1"}'
    return (head + "x" * max(0, size - len(head) - len(tail)) + tail).encode()


def b64url(raw):
    return base64.urlsafe_b64encode(raw).strip(b"=").decode()


def main():
    quick = "--quick" in sys.argv
    iterations, warmup, reps = (1250, 125, 3) if quick else (5000, 1250, 11)
    iterations, warmup, reps = option("--n", iterations), option("--warmup", warmup), option("--reps", reps)
    receiver = ec.generate_private_key(ec.SECP256R1())
    public = receiver.public_key().public_bytes(serialization.Encoding.X962, serialization.PublicFormat.UncompressedPoint)
    auth = os.urandom(16)
    pusher = WebPusher({"endpoint": "https://push.invalid/bench", "keys": {"p256dh": b64url(public), "auth": b64url(auth)}})
    for size in (256, 1024, 2048):
        pt = notification(size)
        body = pusher.encode(pt)["body"]
        if http_ece.decrypt(body, private_key=receiver, auth_secret=auth, version="aes128gcm") != pt:
            sys.exit("webpush_peer: pywebpush's message does not decrypt")
        for _ in range(warmup):
            pusher.encode(pt)
        for rep in range(reps):
            start = time.perf_counter_ns()
            for _ in range(iterations):
                pusher.encode(pt)
            ns = (time.perf_counter_ns() - start) / iterations
            print(f"RESULT impl=pywebpush op=webpush-seal size={size} rep={rep} n={iterations} ns={ns:.1f}", flush=True)


if __name__ == "__main__":
    main()
