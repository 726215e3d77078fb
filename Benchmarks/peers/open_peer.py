#!/usr/bin/env python3
"""PushSeal benchmark peer (Python `cryptography`, `json`, `base64`): the same full open job as
push-bench's OpenBench — APNs payload bytes in, notification out — written the way a Python
receiver would: json.loads, check the three sealed fields, strict base64 decode, AES-256-GCM
open with AAD `pushseal:v1|<enc_alg>|<key_id>|<app_id>`, json.loads of the plaintext, check the
text members. The AESGCM object (key schedule) is made once, outside the timed loop.

Prints `RESULT impl=python op=fullopen size=<bytes> rep=<n> n=<iterations> ns=<ns per op>`.
Usage: open_peer.py [--quick] DIR     (DIR holds key.hex and payload-<size>.json, from push-bench)
"""
import base64, json, os, sys, time
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

APP_ID = "com.example.app"


def full_open(aead, raw):
    p = json.loads(raw)
    if not isinstance(p, dict):
        raise ValueError("payload is not an object")
    fields = [p.get(k) for k in ("encrypted_data", "key_id", "enc_alg")]
    if not all(isinstance(f, str) and f for f in fields):
        raise ValueError("sealed fields")
    data, key_id, alg = fields
    if alg != "A256GCM":
        raise ValueError("enc_alg")
    box = base64.b64decode(data, validate=True)
    if len(box) < 28:
        raise ValueError("truncated box")
    aad = f"pushseal:v1|{alg}|{key_id}|{APP_ID}".encode()
    plain = aead.decrypt(box[:12], box[12:], aad)
    n = json.loads(plain)
    if not isinstance(n, dict):
        raise ValueError("plaintext is not an object")
    for k in ("title", "subtitle", "body", "id"):
        if k in n and n[k] is not None and not isinstance(n[k], str):
            raise ValueError(k)
    if not (n.get("title") or n.get("subtitle") or n.get("body")):
        raise ValueError("blank")
    return n


def main():
    args = [a for a in sys.argv[1:] if a != "--quick"]
    quick = "--quick" in sys.argv
    if len(args) != 1:
        sys.exit("usage: open_peer.py [--quick] DIR")
    directory = args[0]
    iterations, warmup, reps = (5000, 500, 3) if quick else (20000, 5000, 11)
    with open(os.path.join(directory, "key.hex")) as f:
        aead = AESGCM(bytes.fromhex(f.read().strip()))
    for size in (256, 1024, 2048):
        with open(os.path.join(directory, f"payload-{size}.json"), "rb") as f:
            raw = f.read()
        if full_open(aead, raw).get("title") != "Dinner plans":
            sys.exit(f"payload-{size}.json does not open to its title")
        for _ in range(warmup):
            full_open(aead, raw)
        for rep in range(reps):
            start = time.perf_counter_ns()
            for _ in range(iterations):
                full_open(aead, raw)
            ns = (time.perf_counter_ns() - start) / iterations
            print(f"RESULT impl=python op=fullopen size={size} rep={rep} n={iterations} ns={ns:.1f}", flush=True)


if __name__ == "__main__":
    main()
