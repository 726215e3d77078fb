#!/usr/bin/env python3
"""HPKE (RFC 9180) for one suite, written from the RFC's text alone, for PushSeal's interop tests.

Suite: DHKEM(X25519, HKDF-SHA256) (KEM 0x0020), HKDF-SHA256 (KDF 0x0001), AES-256-GCM (AEAD 0x0002),
all four modes (base 0x00, psk 0x01, auth 0x02, auth_psk 0x03), single-shot and multi-message
contexts, and the secret export interface (§5.3). X25519 and AES-GCM come from Python's
`cryptography`; HKDF-Extract/Expand (RFC 5869) are HMAC-SHA256 from the standard library, which
keeps this file independent of both the Swift code (OpenSSL's EVP_KDF) and `pyhpke`.
Not used by the Swift code. Section numbers below are RFC 9180's.

    python3 hpke_ref.py selftest DIR   checks every encryption and export of the RFC vectors in DIR
                                       (rfc9180_x25519_sha256_aesgcm*.json, AES-256-GCM entries)
"""
import hashlib
import hmac
import json
import os
import sys

from cryptography.hazmat.primitives.asymmetric.x25519 import X25519PrivateKey, X25519PublicKey
from cryptography.hazmat.primitives.ciphers.aead import AESGCM
from cryptography.hazmat.primitives import serialization

KEM_ID, KDF_ID, AEAD_ID = 0x0020, 0x0001, 0x0002
N_SECRET, N_ENC, N_PK, N_SK = 32, 32, 32, 32   # §7.1, Table 2
N_K, N_N, N_H = 32, 12, 32                     # §7.3 (AES-256-GCM), §7.2 (HKDF-SHA256)
MODE_BASE, MODE_PSK, MODE_AUTH, MODE_AUTH_PSK = 0x00, 0x01, 0x02, 0x03


class HPKEError(Exception):
    """code: one of invalidEnc, zeroSharedSecret, authenticationFailed, invalidPSK, messageLimit."""

    def __init__(self, code, reason):
        super().__init__(f"{code}: {reason}")
        self.code, self.reason = code, reason


def i2osp(n, w):
    return n.to_bytes(w, "big")


KEM_SUITE = b"KEM" + i2osp(KEM_ID, 2)                                           # §4.1
HPKE_SUITE = b"HPKE" + i2osp(KEM_ID, 2) + i2osp(KDF_ID, 2) + i2osp(AEAD_ID, 2)  # §5.1


def extract(salt, ikm):           # RFC 5869 §2.2; an empty salt is HashLen zero bytes
    return hmac.new(salt or bytes(N_H), ikm, hashlib.sha256).digest()


def expand(prk, info, length):    # RFC 5869 §2.3
    out, t, i = b"", b"", 1
    while len(out) < length:
        t = hmac.new(prk, t + info + bytes([i]), hashlib.sha256).digest()
        out += t
        i += 1
    return out[:length]


def labeled_extract(suite, salt, label, ikm):            # §4
    return extract(salt, b"HPKE-v1" + suite + label + ikm)


def labeled_expand(suite, prk, label, info, length):     # §4
    return expand(prk, i2osp(length, 2) + b"HPKE-v1" + suite + label + info, length)


# ------------------------------------------------------------------ DHKEM(X25519, HKDF-SHA256), §4.1

def public_key(sk):
    return X25519PrivateKey.from_private_bytes(sk).public_key().public_bytes(
        serialization.Encoding.Raw, serialization.PublicFormat.Raw)


def generate_key_pair():
    sk = os.urandom(N_SK)
    return sk, public_key(sk)


def derive_key_pair(ikm):                                 # §7.1.3
    prk = labeled_extract(KEM_SUITE, b"", b"dkp_prk", ikm)
    sk = labeled_expand(KEM_SUITE, prk, b"sk", b"", N_SK)
    return sk, public_key(sk)


def dh(sk, pk):
    """X25519; an all-zero result is refused (§7.1.4)."""
    if len(pk) != N_PK:
        raise HPKEError("invalidEnc", f"public key of {len(pk)} bytes, not {N_PK}")
    try:
        out = X25519PrivateKey.from_private_bytes(sk).exchange(X25519PublicKey.from_public_bytes(pk))
    except ValueError:   # `cryptography` itself refuses the all-zero output
        raise HPKEError("zeroSharedSecret", "X25519 output is all zero")
    if out == bytes(32):
        raise HPKEError("zeroSharedSecret", "X25519 output is all zero")
    return out


def extract_and_expand(dh_bytes, kem_context):
    prk = labeled_extract(KEM_SUITE, b"", b"eae_prk", dh_bytes)
    return labeled_expand(KEM_SUITE, prk, b"shared_secret", kem_context, N_SECRET)


def encap(pk_r, sk_e=None):
    sk_e = sk_e or generate_key_pair()[0]
    enc = public_key(sk_e)
    return extract_and_expand(dh(sk_e, pk_r), enc + pk_r), enc


def decap(enc, sk_r):
    if len(enc) != N_ENC:
        raise HPKEError("invalidEnc", f"enc of {len(enc)} bytes, not {N_ENC}")
    return extract_and_expand(dh(sk_r, enc), enc + public_key(sk_r))


def auth_encap(pk_r, sk_s, sk_e=None):
    sk_e = sk_e or generate_key_pair()[0]
    enc = public_key(sk_e)
    ss = extract_and_expand(dh(sk_e, pk_r) + dh(sk_s, pk_r), enc + pk_r + public_key(sk_s))
    return ss, enc


def auth_decap(enc, sk_r, pk_s):
    if len(enc) != N_ENC:
        raise HPKEError("invalidEnc", f"enc of {len(enc)} bytes, not {N_ENC}")
    return extract_and_expand(dh(sk_r, enc) + dh(sk_r, pk_s), enc + public_key(sk_r) + pk_s)


# ------------------------------------------------------------------ key schedule and context, §5

class Context:
    def __init__(self, key, base_nonce, exporter_secret):
        self.key, self.base_nonce, self.exporter_secret, self.seq = key, base_nonce, exporter_secret, 0

    def _nonce(self):
        return bytes(a ^ b for a, b in zip(self.base_nonce, i2osp(self.seq, N_N)))

    def seal(self, aad, pt):
        ct = AESGCM(self.key).encrypt(self._nonce(), pt, aad)
        self.seq += 1
        return ct

    def open(self, aad, ct):
        try:
            pt = AESGCM(self.key).decrypt(self._nonce(), ct, aad)
        except Exception:
            raise HPKEError("authenticationFailed", "tag did not verify")
        self.seq += 1
        return pt

    def export(self, exporter_context, length):           # §5.3
        return labeled_expand(HPKE_SUITE, self.exporter_secret, b"sec", exporter_context, length)


def key_schedule(mode, shared_secret, info, psk=b"", psk_id=b""):
    if bool(psk) != bool(psk_id):
        raise HPKEError("invalidPSK", "psk and psk_id must be given together")
    if (mode in (MODE_PSK, MODE_AUTH_PSK)) != bool(psk):
        raise HPKEError("invalidPSK", "a psk mode needs a psk; other modes must not have one")
    psk_id_hash = labeled_extract(HPKE_SUITE, b"", b"psk_id_hash", psk_id)
    info_hash = labeled_extract(HPKE_SUITE, b"", b"info_hash", info)
    context = bytes([mode]) + psk_id_hash + info_hash
    secret = labeled_extract(HPKE_SUITE, shared_secret, b"secret", psk)
    return Context(labeled_expand(HPKE_SUITE, secret, b"key", context, N_K),
                   labeled_expand(HPKE_SUITE, secret, b"base_nonce", context, N_N),
                   labeled_expand(HPKE_SUITE, secret, b"exp", context, N_H))


def setup_sender(mode, pk_r, info, sk_s=None, psk=b"", psk_id=b"", sk_e=None):
    if mode in (MODE_AUTH, MODE_AUTH_PSK):
        ss, enc = auth_encap(pk_r, sk_s, sk_e)
    else:
        ss, enc = encap(pk_r, sk_e)
    return enc, key_schedule(mode, ss, info, psk, psk_id)


def setup_recipient(mode, enc, sk_r, info, pk_s=None, psk=b"", psk_id=b""):
    ss = auth_decap(enc, sk_r, pk_s) if mode in (MODE_AUTH, MODE_AUTH_PSK) else decap(enc, sk_r)
    return key_schedule(mode, ss, info, psk, psk_id)


def seal(mode, pk_r, info, aad, pt, sk_s=None, psk=b"", psk_id=b"", sk_e=None):     # §6.1
    enc, ctx = setup_sender(mode, pk_r, info, sk_s, psk, psk_id, sk_e)
    return enc, ctx.seal(aad, pt)


def open_(mode, enc, sk_r, info, aad, ct, pk_s=None, psk=b"", psk_id=b""):          # §6.1
    return setup_recipient(mode, enc, sk_r, info, pk_s, psk, psk_id).open(aad, ct)


# ------------------------------------------------------------------ self-test against RFC 9180 Appendix A

def selftest(directory):
    checked = 0
    for name in ("rfc9180_x25519_sha256_aesgcm.json", "rfc9180_x25519_sha256_aesgcm_auth.json"):
        with open(os.path.join(directory, name), encoding="utf-8") as f:
            entries = json.load(f)
        for v in entries:
            if (v["kem_id"], v["kdf_id"], v["aead_id"]) != (KEM_ID, KDF_ID, AEAD_ID):
                continue
            h = {k: bytes.fromhex(v[k]) for k in ("info", "skEm", "skRm", "pkRm", "enc", "shared_secret",
                                                 "key", "base_nonce", "exporter_secret")}
            mode = v["mode"]
            psk, psk_id = bytes.fromhex(v.get("psk", "")), bytes.fromhex(v.get("psk_id", ""))
            sk_s = bytes.fromhex(v["skSm"]) if "skSm" in v else None
            pk_s = bytes.fromhex(v["pkSm"]) if "pkSm" in v else None
            assert derive_key_pair(bytes.fromhex(v["ikmE"]))[0] == h["skEm"], "DeriveKeyPair(ikmE)"
            enc, sctx = setup_sender(mode, h["pkRm"], h["info"], sk_s, psk, psk_id, h["skEm"])
            assert enc == h["enc"], f"enc, mode {mode}"
            rctx = setup_recipient(mode, enc, h["skRm"], h["info"], pk_s, psk, psk_id)
            for ctx in (sctx, rctx):
                assert (ctx.key, ctx.base_nonce, ctx.exporter_secret) == (h["key"], h["base_nonce"], h["exporter_secret"])
            for e in v["encryptions"]:
                aad, pt, ct = (bytes.fromhex(e[k]) for k in ("aad", "pt", "ct"))
                assert sctx.seal(aad, pt) == ct, f"seal, mode {mode}, seq {sctx.seq}"
                assert rctx.open(aad, ct) == pt, f"open, mode {mode}, seq {rctx.seq}"
                checked += 1
            for x in v["exports"]:
                assert rctx.export(bytes.fromhex(x["exporter_context"]), x["L"]) == bytes.fromhex(x["exported_value"])
                checked += 1
    if checked == 0:
        raise SystemExit("hpke_ref: error: no AES-256-GCM entries found in " + directory)
    print(f"hpke_ref: {checked} encryptions and exports match RFC 9180")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "selftest":
        selftest(sys.argv[2])
    else:
        sys.stderr.write(__doc__)
        sys.exit(64)
