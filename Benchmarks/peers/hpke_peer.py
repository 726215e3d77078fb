#!/usr/bin/env python3
"""PushSeal benchmark peer (Python `pyhpke`): the HPKE core job of push-bench's HPKEBench —
RFC 9180 DHKEM(X25519, HKDF-SHA256) / HKDF-SHA256 / AES-256-GCM single-shot seal of a
`size`-byte plaintext to a recipient public key with the 57-byte v2 base-mode info and no AAD
(fresh ephemeral key each time: create_sender_context + seal), in base and auth mode, and the
matching open (create_recipient_context + open). Keys are made once, outside the timed loop.

Prints `RESULT impl=python op=hpke-seal|hpke-auth-seal|hpke-open size=<bytes> rep=<n> n=<iterations> ns=<ns per op>`.
Usage: hpke_peer.py [--quick] [--n N --warmup W --reps R]
"""
import os, sys, time
from cryptography.hazmat.primitives.asymmetric import x25519
from pyhpke import AEADId, CipherSuite, KDFId, KEMId, KEMKey

INFO = b"pushseal:v2|HPKE-BASE-X25519-A256GCM|key-1|com.example.app"
SUITE = CipherSuite.new(KEMId.DHKEM_X25519_HKDF_SHA256, KDFId.HKDF_SHA256, AEADId.AES256_GCM)


def option(name, default):
    return int(sys.argv[sys.argv.index(name) + 1]) if name in sys.argv else default


def main():
    quick = "--quick" in sys.argv
    iterations, warmup, reps = (1250, 125, 3) if quick else (5000, 1250, 11)
    iterations, warmup, reps = option("--n", iterations), option("--warmup", warmup), option("--reps", reps)
    sk_r = x25519.X25519PrivateKey.generate()
    sk_s = x25519.X25519PrivateKey.generate()
    skr, pkr = KEMKey.from_pyca_cryptography_key(sk_r), KEMKey.from_pyca_cryptography_key(sk_r.public_key())
    sks = KEMKey.from_pyca_cryptography_key(sk_s)

    def seal(pt):
        enc, ctx = SUITE.create_sender_context(pkr, INFO)
        return enc + ctx.seal(pt)

    def auth_seal(pt):
        enc, ctx = SUITE.create_sender_context(pkr, INFO, sks)
        return enc + ctx.seal(pt)

    def open_(sealed):
        return SUITE.create_recipient_context(sealed[:32], skr, INFO).open(sealed[32:])

    for size in (256, 1024, 2048):
        pt = os.urandom(size)
        sealed = seal(pt)
        assert open_(sealed) == pt
        for op, job, arg in (("hpke-seal", seal, pt), ("hpke-auth-seal", auth_seal, pt), ("hpke-open", open_, sealed)):
            for _ in range(warmup):
                job(arg)
            for rep in range(reps):
                start = time.perf_counter_ns()
                for _ in range(iterations):
                    job(arg)
                ns = (time.perf_counter_ns() - start) / iterations
                print(f"RESULT impl=python op={op} size={size} rep={rep} n={iterations} ns={ns:.1f}", flush=True)


if __name__ == "__main__":
    main()
