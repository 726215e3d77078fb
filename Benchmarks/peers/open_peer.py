#!/usr/bin/env python3
"""PushSeal benchmark peer (Python `cryptography`, `json`, `base64`): the same full open job as
push-bench's OpenBench — APNs payload bytes in, notification out — written the way a Python
receiver would: json.loads, check the three sealed fields, strict base64 decode, AES-256-GCM
open with AAD `pushseal:v1|<enc_alg>|<key_id>|<app_id>`, json.loads of the plaintext, check the
text members. The AESGCM object (key schedule) is made once, outside the timed loop.

Prints `RESULT impl=python op=fullopen size=<bytes> rep=<n> n=<iterations> ns=<ns per op>`.
Usage: open_peer.py [--quick] [--n N --warmup W --reps R] DIR
       (DIR holds key.hex and payload-<size>.json, from push-bench)
       open_peer.py --once FILE
       (single shot for push-bench's cold start: open one payload with the key in key.hex beside
       FILE and print {"outcome", "title", "subtitle", "body"}; interpreter start included)
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


def once(path):
    with open(os.path.join(os.path.dirname(os.path.abspath(path)), "key.hex")) as f:
        aead = AESGCM(bytes.fromhex(f.read().strip()))
    with open(path, "rb") as f:
        n = full_open(aead, f.read())
    print(json.dumps({"outcome": "decrypted", "title": n.get("title"), "subtitle": n.get("subtitle"), "body": n.get("body")}))


def main():
    if "--once" in sys.argv:
        return once(sys.argv[sys.argv.index("--once") + 1])
    args, quick, settings, i = [], "--quick" in sys.argv, {}, 1
    while i < len(sys.argv):
        if sys.argv[i] in ("--n", "--warmup", "--reps"):
            settings[sys.argv[i]] = int(sys.argv[i + 1])
            i += 2
            continue
        if sys.argv[i] != "--quick":
            args.append(sys.argv[i])
        i += 1
    if len(args) != 1:
        sys.exit("usage: open_peer.py [--quick] [--n N --warmup W --reps R] DIR")
    directory = args[0]
    iterations, warmup, reps = (5000, 500, 3) if quick else (20000, 5000, 11)
    iterations, warmup, reps = settings.get("--n", iterations), settings.get("--warmup", warmup), settings.get("--reps", reps)
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
