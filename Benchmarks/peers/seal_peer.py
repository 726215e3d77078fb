#!/usr/bin/env python3
"""PushSeal benchmark peer (Python `cryptography`): the same full seal job as push-bench's
SenderBench — notification JSON in, APNs payload bytes out — written the way a Python server
would: json.loads, validate, add iat, compact json.dumps, Padmé padding, AES-256-GCM with a
fresh random 12-byte nonce and AAD `pushseal:v1|A256GCM|<key_id>|<app_id>`, base64, payload.

Also the crypto core alone (`op=seal`: fresh nonce + AESGCM.encrypt of a `size`-byte plaintext
with the 40-byte AAD, like push-bench's CryptoBench) and a batch mode: `--batch KEY.hex` reads
push-seal batch's JSON Lines ({"recipient", "notification"}) on stdin and writes one
{"recipient", "payload", "headers"} line per input line on stdout, sealing with the fixed key
(no keychain).

Prints `RESULT impl=python op=seal|fullseal size=<bytes> rep=<n> n=<iterations> ns=<ns per op>`.
Usage: seal_peer.py [--quick] [--n N --warmup W --reps R]   |   seal_peer.py --batch KEY.hex
"""
import base64, json, os, sys, time
from cryptography.hazmat.primitives.ciphers.aead import AESGCM

APP_ID = "com.example.app"
KEY_ID = "key-1"
AAD = f"pushseal:v1|A256GCM|{KEY_ID}|{APP_ID}".encode()
PREFIX = b'{"aps":{"alert":{"title":"New message","body":"Open the app to read it"},"mutable-content":1},"encrypted_data":"'
SUFFIX = f'","key_id":"{KEY_ID}","enc_alg":"A256GCM"}}'.encode()
FIELDS = ("title", "subtitle", "body", "media", "localizations", "data", "iat", "exp", "id")


def notification(size):
    head, tail = '{"title":"Dinner plans","body":"', '","id":"bench-1"}'
    return (head + "x" * max(0, size - len(head) - len(tail)) + tail).encode()


def padme(n):
    if n < 2:
        return n
    e = n.bit_length() - 1
    s = e.bit_length()
    mask = (1 << (e - s)) - 1
    return (n + mask) & ~mask


def full_seal(aead, raw):
    return seal_notification(aead, json.loads(raw))


def seal_notification(aead, n):
    if not isinstance(n, dict):
        raise ValueError("not an object")
    for k in ("title", "subtitle", "body", "id"):
        if k in n and not isinstance(n[k], str):
            raise ValueError(k)
    if not (n.get("title") or n.get("subtitle") or n.get("body")):
        raise ValueError("empty")
    n.setdefault("iat", int(time.time()))
    plain = json.dumps({k: n[k] for k in FIELDS if k in n}, ensure_ascii=False, separators=(",", ":")).encode()
    plain += b" " * (padme(len(plain)) - len(plain))
    nonce = os.urandom(12)
    box = nonce + aead.encrypt(nonce, plain, AAD)
    payload = PREFIX + base64.b64encode(box) + SUFFIX
    if len(payload) > 4096:
        raise ValueError("too large")
    return payload


HEADERS = b'"headers":{"apns-push-type":"alert","apns-topic":"' + APP_ID.encode() + b'","apns-priority":"10"}}\n'


def batch(key_file):
    with open(key_file) as f:
        aead = AESGCM(bytes.fromhex(f.read().strip()))
    out = sys.stdout.buffer
    dumps = json.dumps
    for line in sys.stdin.buffer:
        item = json.loads(line)
        payload = seal_notification(aead, item["notification"])
        out.write(b'{"recipient":' + dumps(item["recipient"]).encode() + b',"payload":' + payload + b',' + HEADERS)
    out.flush()


def core_seal(aead, plain):
    nonce = os.urandom(12)
    return nonce + aead.encrypt(nonce, plain, AAD)


def option(name, default):
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def main():
    if "--batch" in sys.argv:
        return batch(sys.argv[sys.argv.index("--batch") + 1])
    quick = "--quick" in sys.argv
    iterations, warmup, reps = (5000, 500, 3) if quick else (20000, 5000, 11)
    iterations, warmup, reps = option("--n", iterations), option("--warmup", warmup), option("--reps", reps)
    aead = AESGCM(os.urandom(32))
    for size in (256, 1024, 2048):
        raw = notification(size)
        assert len(raw) == size
        plain = os.urandom(size)
        for op, job, arg in (("seal", core_seal, plain), ("fullseal", full_seal, raw)):
            for _ in range(warmup):
                job(aead, arg)
            for rep in range(reps):
                start = time.perf_counter_ns()
                for _ in range(iterations):
                    job(aead, arg)
                ns = (time.perf_counter_ns() - start) / iterations
                print(f"RESULT impl=python op={op} size={size} rep={rep} n={iterations} ns={ns:.1f}", flush=True)


if __name__ == "__main__":
    main()
