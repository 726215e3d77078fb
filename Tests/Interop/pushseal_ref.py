#!/usr/bin/env python3
"""PushSeal wire format v1: an independent reference implementation, written from
docs/FORMAT.md alone (Python 3.9+, `cryptography`'s AESGCM). Not used by the Swift code.

Subcommands:
  seal     --key HEX --key-id ID --app-id APP [--nonce HEX] [--no-padding]
           reads a plaintext JSON object on stdin, prints the sealed fields as a JSON object
           (add --alert to print a whole APNs payload with a fallback alert).
  open     --key HEX --app-id APP
           reads an APNs payload on stdin, prints the plaintext object (padding removed);
           on failure prints `error: <code>: <reason>` on stderr and exits 65.
  vectors  --out DIR      writes the vector files of Tests/Vectors (deterministic nonces).
  example                 prints the worked example of FORMAT.md §10.
  vectors-v2 --out DIR    writes Tests/Vectors/v2 (wire format v2, fixed ephemeral keys).
  example-v2              prints the worked example of FORMAT.md's version 2 part (§V.9).
  revocation              reads a revocation record (FORMAT.md §V.12) on stdin, prints
                          {"appId","keyIds","revokedAt"} or `error: <code>` and exits 65.
  vectors-revocation      prints Tests/Vectors/revocation-records.json (FORMAT.md §V.12).
  serve                   JSON Lines on stdin/stdout, one request per line:
           {"op":"seal","key":HEX,"keyId":..,"appId":..,"plaintext":{..},"padding":bool[,"nonce":HEX]}
             -> {"fields":{"encrypted_data":..,"key_id":..,"enc_alg":..}}
           {"op":"open","key":HEX,"appId":..,"payload":{..}}
             -> {"plaintext":{..},"plaintextHex":HEX} or {"error":CODE,"reason":..}
           {"op":"seal2","publicKey":HEX,"keyId":..,"appId":..,"plaintext":{..},"padding":bool
            [,"senderKey":HEX,"senderKeyId":..][,"ephemeralKey":HEX]}
             -> {"fields":{"encrypted_data":..,"key_id":..,"enc_alg":..[,"sender_key_id":..]}}
           {"op":"open2","deviceKeys":{KEYID:HEX,..},"appId":..,"payload":{..}
            [,"senderKeys":{SENDERKEYID:HEX,..}]}   (senderKeys: the public keys the device pinned)
             -> {"plaintext":{..},"plaintextHex":HEX} or {"error":CODE,"reason":..}

Version 2 (public-key mode, HPKE RFC 9180) uses hpke_ref.py beside this file, itself written
from the RFC alone.
"""
import argparse
import base64
import binascii
import json
import os
import re
import sys

try:
    from cryptography.hazmat.primitives.ciphers.aead import AESGCM
    from cryptography.exceptions import InvalidTag
except ImportError:  # pragma: no cover
    sys.stderr.write("pushseal_ref: error: Python package cryptography is missing\n"
                     "hint: make test installs it via scripts/install-deps.sh\n")
    sys.exit(69)

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import hpke_ref  # noqa: E402  (needs `cryptography`, checked above)

VERSION = "pushseal:v1"
ALG = "A256GCM"
NONCE_LEN, TAG_LEN = 12, 16
KEY_ID_RE = re.compile(r"\A[A-Za-z0-9_-]{1,64}\Z")
LOCALE_RE = re.compile(r"\A[A-Za-z0-9_-]{1,35}\Z")
HEX64_RE = re.compile(r"\A[0-9A-Fa-f]{64}\Z")


class FormatError(Exception):
    def __init__(self, code, reason):
        super().__init__(f"{code}: {reason}")
        self.code, self.reason = code, reason


def valid_app_id(app_id):
    b = app_id.encode("utf-8")
    return 1 <= len(b) <= 255 and all(0x21 <= c <= 0x7E and c != 0x7C for c in b)


def aad(alg, key_id, app_id):
    return f"{VERSION}|{alg}|{key_id}|{app_id}".encode("utf-8")


def padme(n):
    if n <= 2:
        return n
    e = n.bit_length() - 1
    s = e.bit_length()          # floor(log2 e) + 1
    mask = (1 << (e - s)) - 1
    return (n + mask) & ~mask


def b64_encode(data):
    return base64.b64encode(data).decode("ascii")


def b64_decode(text):
    """FORMAT.md §4: ignore space/tab/CR/LF; alphabet by special characters; '=' means padded."""
    s = re.sub(r"[ \t\r\n]", "", text)
    std = any(c in s for c in "+/")
    url = any(c in s for c in "-_")
    if std and url:
        raise FormatError("invalidBase64", "mixes standard and URL-safe alphabets")
    alphabet = "A-Za-z0-9" + (r"\-_" if url else r"+/")
    if "=" in s:
        if not re.fullmatch(f"[{alphabet}]*={{0,2}}", s) or len(s) % 4 != 0:
            raise FormatError("invalidBase64", "malformed padded base64")
        body = s.rstrip("=")
    else:
        if not re.fullmatch(f"[{alphabet}]*", s):
            raise FormatError("invalidBase64", "character outside the alphabet")
        body = s
    if len(body) % 4 == 1:
        raise FormatError("invalidBase64", "length is not a whole number of bytes")
    std_body = body.replace("-", "+").replace("_", "/")
    padded = std_body + "=" * (-len(std_body) % 4)
    if "=" in s and padded != s.replace("-", "+").replace("_", "/"):
        raise FormatError("invalidBase64", "wrong number of '='")
    data = base64.b64decode(padded, validate=True)
    # Leftover bits of the last character must be zero (canonical encoding).
    if base64.b64encode(data).decode("ascii").rstrip("=") != std_body:
        raise FormatError("invalidBase64", "non-zero leftover bits")
    return data


def string_field(payload, name):
    if name not in payload:
        raise FormatError("missingField", f"no {name}")
    v = payload[name]
    if not isinstance(v, str):
        raise FormatError("wrongFieldType", f"{name} is not a string")
    return v


def parse_payload(payload):
    if not isinstance(payload, dict):
        raise FormatError("missingField", "payload is not an object")
    data = string_field(payload, "encrypted_data")
    key_id = string_field(payload, "key_id")
    alg = string_field(payload, "enc_alg")
    for name, v in (("encrypted_data", data), ("key_id", key_id), ("enc_alg", alg)):
        if v == "":
            raise FormatError("emptyField", f"{name} is empty")
    if alg != ALG:
        raise FormatError("unknownAlgorithm", alg)
    if not KEY_ID_RE.match(key_id):
        raise FormatError("invalidKeyID", key_id)
    box = b64_decode(data)
    if len(box) == 0:
        raise FormatError("emptyField", "encrypted_data holds only whitespace")
    if len(box) < NONCE_LEN + TAG_LEN:
        raise FormatError("truncatedBox", f"{len(box)} bytes")
    return box, key_id, alg


def _is_int(v):
    return isinstance(v, int) and not isinstance(v, bool)


def _opt(o, k):
    v = o.get(k)
    return None if v is None else v


def check_text(o, path):
    vals = []
    for k in ("title", "subtitle", "body"):
        v = _opt(o, k)
        if v is not None and not isinstance(v, str):
            raise FormatError("invalidPlaintext", f"{path}{k}: expected a string")
        vals.append(v)
    if not any(vals):
        raise FormatError("invalidPlaintext", f"{path or 'plaintext'}: needs a non-empty title, subtitle or body")


KINDS = ("display", "retract")
MAX_RETRACT_IDS = 100
MAX_ID_BYTES = 256


def check_plaintext(o):
    """FORMAT.md §5: the members a v1 receiver knows; unknown members are ignored.
    §5.1: `kind` (absent = display) decides the content rule: a display message needs a
    non-empty title, subtitle or body; a retract needs `ids`."""
    if not isinstance(o, dict):
        raise FormatError("invalidPlaintext", "not an object")
    kind = _opt(o, "kind")
    if kind is not None and not isinstance(kind, str):
        raise FormatError("invalidPlaintext", "kind: expected a string")
    if kind is not None and kind not in KINDS:
        raise FormatError("invalidPlaintext", "kind: not a kind this receiver knows")
    kind = kind or "display"
    if kind == "display":
        check_text(o, "")
    else:
        for k in ("title", "subtitle", "body"):
            v = _opt(o, k)
            if v is not None and not isinstance(v, str):
                raise FormatError("invalidPlaintext", f"{k}: expected a string")
    m = _opt(o, "media")
    if m is not None:
        if not isinstance(m, dict):
            raise FormatError("invalidPlaintext", "media: expected an object")
        url = _opt(m, "url")
        if not isinstance(url, str) or not re.match(r"(?i)\Ahttps?://.", url):
            raise FormatError("invalidPlaintext", "media.url")
        t = _opt(m, "type")
        if t is not None and not isinstance(t, str):
            raise FormatError("invalidPlaintext", "media.type")
        h = _opt(m, "sha256")
        if h is not None and not (isinstance(h, str) and HEX64_RE.match(h)):
            raise FormatError("invalidPlaintext", "media.sha256")
        k = _opt(m, "key")
        if k is not None:
            if not isinstance(k, str):
                raise FormatError("invalidPlaintext", "media.key")
            try:
                kb = b64_decode(k)
            except FormatError as e:
                raise FormatError("invalidPlaintext", "media.key: " + e.reason)
            if len(kb) != 32:
                raise FormatError("invalidPlaintext", "media.key: not 32 bytes")
    loc = _opt(o, "localizations")
    if loc is not None:
        if not isinstance(loc, dict):
            raise FormatError("invalidPlaintext", "localizations: expected an object")
        for tag, content in loc.items():
            if not LOCALE_RE.match(tag):
                raise FormatError("invalidPlaintext", f"localizations: bad tag {tag!r}")
            if not isinstance(content, dict):
                raise FormatError("invalidPlaintext", f"localizations.{tag}: expected an object")
            check_text(content, f"localizations.{tag}.")
    d = _opt(o, "data")
    if d is not None and not isinstance(d, dict):
        raise FormatError("invalidPlaintext", "data: expected an object")
    for k in ("iat", "exp"):
        v = _opt(o, k)
        if v is not None and not (_is_int(v) and 0 <= v < 2**63):
            raise FormatError("invalidPlaintext", f"{k}: expected a non-negative integer")
    i = _opt(o, "id")
    if i is not None and not isinstance(i, str):
        raise FormatError("invalidPlaintext", "id: expected a string")
    ids = _opt(o, "ids")
    if ids is not None:
        if not isinstance(ids, list):
            raise FormatError("invalidPlaintext", "ids: expected an array")
        if not 1 <= len(ids) <= MAX_RETRACT_IDS:
            raise FormatError("invalidPlaintext", f"ids: expected 1-{MAX_RETRACT_IDS} notification ids")
        for e in ids:
            if not isinstance(e, str) or not 1 <= len(e.encode("utf-8")) <= MAX_ID_BYTES:
                raise FormatError("invalidPlaintext", f"ids: each id is a string of 1-{MAX_ID_BYTES} bytes")
    if kind == "retract" and ids is None:
        raise FormatError("invalidPlaintext", "ids: a retract needs notification ids")
    a = _opt(o, "aps")
    if a is not None:
        if not isinstance(a, dict):
            raise FormatError("invalidPlaintext", "aps: expected an object")
        for k in ("thread-id", "category", "interruption-level"):
            v = _opt(a, k)
            if v is not None and not isinstance(v, str):
                raise FormatError("invalidPlaintext", f"aps.{k}: expected a string")
        lvl = _opt(a, "interruption-level")
        if lvl is not None and lvl not in ("passive", "active", "time-sensitive", "critical"):
            raise FormatError("invalidPlaintext", "aps.interruption-level")
        s = _opt(a, "sound")
        if s is not None and not isinstance(s, str):
            if not isinstance(s, dict):
                raise FormatError("invalidPlaintext", "aps.sound: expected a string or an object")
            n = _opt(s, "name")
            if n is not None and not isinstance(n, str):
                raise FormatError("invalidPlaintext", "aps.sound.name")
            c = _opt(s, "critical")
            if c is not None and not (_is_int(c) and c in (0, 1)):
                raise FormatError("invalidPlaintext", "aps.sound.critical")
            vol = _opt(s, "volume")
            if vol is not None and not (isinstance(vol, (int, float)) and not isinstance(vol, bool) and 0 <= vol <= 1):
                raise FormatError("invalidPlaintext", "aps.sound.volume")
    return o


def _no_dupes(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise FormatError("invalidPlaintext", "duplicate member")
    return dict(pairs)


def _depth(v):
    if isinstance(v, dict):
        return 1 + max((_depth(x) for x in v.values()), default=0)
    if isinstance(v, list):
        return 1 + max((_depth(x) for x in v), default=0)
    return 0


def open_payload(payload, key, app_id):
    """Returns (plaintext object, raw plaintext bytes)."""
    box, key_id, alg = parse_payload(payload)
    if not valid_app_id(app_id):
        raise FormatError("invalidAppID", app_id)
    nonce, ct_tag = box[:NONCE_LEN], box[NONCE_LEN:]
    try:
        raw = AESGCM(key).decrypt(nonce, ct_tag, aad(alg, key_id, app_id))
    except InvalidTag:
        raise FormatError("authenticationFailed", "tag did not verify")
    return _plaintext_from(raw), raw


def _plaintext_from(raw):
    """FORMAT.md §5 (both versions): UTF-8, JSON without duplicates, depth ≤ 64, the members' rules."""
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        raise FormatError("invalidPlaintext", "not UTF-8")
    try:
        obj = json.loads(text, object_pairs_hook=_no_dupes)
    except ValueError as e:
        if isinstance(e, FormatError):
            raise
        raise FormatError("invalidPlaintext", "not JSON")
    if _depth(obj) > 64:
        raise FormatError("invalidPlaintext", "nesting deeper than 64")
    return check_plaintext(obj)


def encode_plaintext(obj, padding=True):
    raw = json.dumps(obj, ensure_ascii=False, separators=(",", ":")).encode("utf-8")
    if padding:
        raw += b" " * (padme(len(raw)) - len(raw))
    return raw


def seal_bytes(raw, key, key_id, app_id, nonce=None, alg=ALG):
    nonce = os.urandom(NONCE_LEN) if nonce is None else nonce
    return nonce + AESGCM(key).encrypt(nonce, raw, aad(alg, key_id, app_id))


def seal(obj, key, key_id, app_id, padding=True, nonce=None):
    if not KEY_ID_RE.match(key_id):
        raise FormatError("invalidKeyID", key_id)
    if not valid_app_id(app_id):
        raise FormatError("invalidAppID", app_id)
    check_plaintext(obj)
    box = seal_bytes(encode_plaintext(obj, padding), key, key_id, app_id, nonce)
    return {"encrypted_data": b64_encode(box), "key_id": key_id, "enc_alg": ALG}


def apns_payload(fields, background=False):
    """The APNs payload around the sealed fields: an alert with mutable-content (a display
    message, for the extension) or, for a retract (§5.1), a background push
    (`content-available: 1`, no alert, no mutable-content) that iOS hands to the app."""
    if background:
        p = {"aps": {"content-available": 1}}
    else:
        p = {"aps": {"alert": {"title": "New message", "body": "Open the app to read it"}, "mutable-content": 1}}
    p.update(fields)
    return p


# ---------------------------------------------------------------- vectors

KEY = bytes(range(32))
OTHER_KEY = bytes(range(32, 64))
APP = "com.example.app"


def _nonce(i):
    return bytes([i]) * NONCE_LEN


def _write(out, name, headers, payload):
    lines = [f"{k}: {v}" for k, v in headers]
    text = "\n".join(lines) + "\n\n" + json.dumps(payload, ensure_ascii=False, indent=1) + "\n"
    with open(os.path.join(out, name + ".vector"), "w", encoding="utf-8") as f:
        f.write(text)


def _wrap(s, width, sep):
    return sep.join(s[i:i + width] for i in range(0, len(s), width))


def vectors(out):
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        if f.endswith(".vector"):
            os.remove(os.path.join(out, f))
    plain = {"title": "Lunch?", "body": "Noon at the usual place 🍜", "iat": 1796000000, "id": "m-1"}
    raw = encode_plaintext(plain)
    box = seal_bytes(raw, KEY, "k1", APP, _nonce(1))
    std = b64_encode(box)
    base = [("key", KEY.hex()), ("key-id", "k1"), ("app-id", APP)]

    def ok(name, comment, data, plaintext_raw=raw, key_id="k1"):
        hdr = [("expect", "open"), ("comment", comment), ("key", KEY.hex()), ("key-id", key_id), ("app-id", APP),
               ("plaintext-hex", plaintext_raw.hex())]
        _write(out, name, hdr, apns_payload({"encrypted_data": data, "key_id": key_id, "enc_alg": ALG}))

    def bad(name, comment, code, fields, headers=None):
        hdr = [("expect", f"error {code}"), ("comment", comment)] + (headers or base)
        _write(out, name, hdr, apns_payload(fields))

    ok("ok-standard-padded", "standard alphabet with padding, as senders write it", std)
    # Pick a box whose base64 has both '+'/'/' and a padding so every spelling differs.
    ok("ok-standard-unpadded", "standard alphabet, padding removed", std.rstrip("="))
    ok("ok-urlsafe-padded", "URL-safe alphabet with padding", std.replace("+", "-").replace("/", "_"))
    ok("ok-urlsafe-unpadded", "URL-safe alphabet without padding", std.replace("+", "-").replace("/", "_").rstrip("="))
    ok("ok-wrapped-crlf", "standard padded, wrapped at 76 characters with CR LF (MIME)", _wrap(std, 76, "\r\n"))
    ok("ok-wrapped-lf-spaces", "standard padded, with LF, spaces and tabs inside", _wrap(std, 20, "\n \t"))
    raw_np = encode_plaintext(plain, padding=False)
    ok("ok-unpadded-plaintext", "plaintext without Padme padding (padding is optional for receivers)",
       b64_encode(seal_bytes(raw_np, KEY, "k1", APP, _nonce(2))), raw_np)
    rich = {"title": "Résultats", "subtitle": "Labo", "body": "Vos résultats sont prêts.",
            "media": {"url": "https://media.example.com/a.jpg", "type": "image/jpeg",
                      "sha256": "00" * 32, "key": b64_encode(bytes(range(100, 132)))},
            "localizations": {"en": {"title": "Results", "body": "Your results are ready."},
                              "pt-BR": {"title": "Resultados"}},
            "data": {"thread": 7, "deep": {"link": "app://r/1"}}, "iat": 1796000000, "exp": 1796086400,
            "id": "r-1", "future_member": {"ignored": True}}
    raw_rich = encode_plaintext(rich)
    ok("ok-all-members", "every plaintext member, plus an unknown one that receivers ignore",
       b64_encode(seal_bytes(raw_rich, KEY, "k1", APP, _nonce(3))), raw_rich)
    kid = "Key_2026-01"
    raw_k = encode_plaintext({"body": "x"})
    ok("ok-key-id-charset", "key id using every allowed character class",
       b64_encode(seal_bytes(raw_k, KEY, kid, APP, _nonce(4))), raw_k, key_id=kid)

    retract = {"iat": 1796000000, "id": "x-1", "kind": "retract", "ids": ["m-1", "r-1"]}
    raw_retract = encode_plaintext(retract)
    hdr = [("expect", "open"), ("comment", "a retract (kind retract, ids) in a background payload: removes m-1 and r-1, shows nothing"),
           ("key", KEY.hex()), ("key-id", "k1"), ("app-id", APP), ("plaintext-hex", raw_retract.hex())]
    _write(out, "ok-retract", hdr, apns_payload({"encrypted_data": b64_encode(seal_bytes(raw_retract, KEY, "k1", APP, _nonce(5))),
                                                "key_id": "k1", "enc_alg": ALG}, background=True))
    raw_display = encode_plaintext({"title": "Lunch?", "kind": "display"})
    ok("ok-kind-display", "kind display written out: the same as no kind",
       b64_encode(seal_bytes(raw_display, KEY, "k1", APP, _nonce(6))), raw_display)

    good = {"encrypted_data": std, "key_id": "k1", "enc_alg": ALG}
    bad("wrong-key", "sealed under another key", "authenticationFailed", good,
        [("key", OTHER_KEY.hex()), ("key-id", "k1"), ("app-id", APP)])
    bad("wrong-app-id", "sealed for com.example.app, opened by com.example.other", "authenticationFailed", good,
        [("key", KEY.hex()), ("key-id", "k1"), ("app-id", "com.example.other")])
    bad("wrong-key-id", "sealed with key id k1 in the AAD, payload says k2 (receiver holds the key as k2)",
        "authenticationFailed", dict(good, key_id="k2"),
        [("key", KEY.hex()), ("key-id", "k2"), ("app-id", APP)])
    bad("unknown-key-id", "payload names a key id the receiver does not hold", "unknownKeyID", dict(good, key_id="k9"))
    bad("unknown-alg", "enc_alg other than A256GCM", "unknownAlgorithm", dict(good, enc_alg="A128GCM"))
    bad("alg-lowercase", "enc_alg is case-sensitive", "unknownAlgorithm", dict(good, enc_alg="a256gcm"))

    def flip(i):
        b = bytearray(box)
        b[i] ^= 0x01
        return b64_encode(bytes(b))
    bad("flip-nonce", "bit 0 of nonce byte 0 flipped", "authenticationFailed", dict(good, encrypted_data=flip(0)))
    bad("flip-ciphertext", "bit 0 of the first ciphertext byte flipped", "authenticationFailed",
        dict(good, encrypted_data=flip(NONCE_LEN)))
    bad("flip-tag", "bit 0 of the last tag byte flipped", "authenticationFailed",
        dict(good, encrypted_data=flip(len(box) - 1)))
    bad("truncated-box", "27 bytes: shorter than nonce plus tag", "truncatedBox",
        dict(good, encrypted_data=b64_encode(box[:27])))
    bad("truncated-tag", "last 4 bytes of the tag cut off", "authenticationFailed",
        dict(good, encrypted_data=b64_encode(box[:-4])))
    n16 = bytes(range(16))
    ct16 = AESGCM(KEY).encrypt(n16, raw, aad(ALG, "k1", APP))
    bad("nonce-16-bytes", "server used a 16-byte nonce: the first 12 bytes are read as the nonce", "authenticationFailed",
        dict(good, encrypted_data=b64_encode(n16 + ct16)))
    bad("no-nonce", "server sent ciphertext and tag without the nonce", "authenticationFailed",
        dict(good, encrypted_data=b64_encode(box[NONCE_LEN:])))
    bad("tag-first", "server wrote nonce, tag, ciphertext", "authenticationFailed",
        dict(good, encrypted_data=b64_encode(box[:NONCE_LEN] + box[-TAG_LEN:] + box[NONCE_LEN:-TAG_LEN])))
    bad("base64-mixed-alphabets", "'+' and '_' in one string", "invalidBase64",
        dict(good, encrypted_data="AB+_" + std[4:]))
    bad("base64-garbage", "a character outside both alphabets", "invalidBase64",
        dict(good, encrypted_data=std[:10] + "!" + std[11:]))
    bad("base64-bad-padding", "one '=' too many", "invalidBase64", dict(good, encrypted_data=std + "="))
    body = std.rstrip("=")
    bad("base64-bad-length", "unpadded, length 1 mod 4: not a whole number of bytes", "invalidBase64",
        dict(good, encrypted_data=body[:len(body) - (len(body) - 1) % 4]))
    last = body[-1]
    odd = "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/"
    bad("base64-leftover-bits", "unpadded, last character has non-zero leftover bits", "invalidBase64",
        dict(good, encrypted_data=body[:-1] + odd[odd.index(last) | 1]) if len(body) % 4 else good)
    bad("missing-encrypted-data", "no encrypted_data", "missingField", {"key_id": "k1", "enc_alg": ALG})
    bad("missing-key-id", "no key_id", "missingField", {"encrypted_data": std, "enc_alg": ALG})
    bad("missing-enc-alg", "no enc_alg", "missingField", {"encrypted_data": std, "key_id": "k1"})
    bad("field-number", "encrypted_data is a number", "wrongFieldType", dict(good, encrypted_data=12345))
    bad("field-array", "key_id is an array", "wrongFieldType", dict(good, key_id=["k1"]))
    bad("field-empty", "encrypted_data is empty", "emptyField", dict(good, encrypted_data=""))
    bad("field-empty-key-id", "key_id is empty", "emptyField", dict(good, key_id=""))
    bad("key-id-bad-char", "key id with a '.'", "invalidKeyID", dict(good, key_id="k.1"))
    bad("key-id-too-long", "key id of 65 characters", "invalidKeyID", dict(good, key_id="k" * 65))

    def inner(name, comment, raw_inner, code="invalidPlaintext"):
        bad(name, comment, code, dict(good, encrypted_data=b64_encode(seal_bytes(raw_inner, KEY, "k1", APP, _nonce(9)))))
    inner("inner-not-utf8", "authentic, but the plaintext is not UTF-8", b"{\"title\":\"\xff\"}")
    inner("inner-not-json", "authentic, but the plaintext is not JSON", b"title: hi")
    inner("inner-not-object", "authentic, but the plaintext is a JSON array", b"[\"hi\"]")
    inner("inner-no-text", "authentic object without title, subtitle or body", b"{\"iat\":1796000000}")
    inner("inner-title-number", "title is a number", b"{\"title\":42}")
    inner("inner-iat-string", "iat is a string", b"{\"body\":\"b\",\"iat\":\"1796000000\"}")
    inner("inner-iat-float", "iat is a fraction", b"{\"body\":\"b\",\"iat\":1796000000.5}")
    inner("inner-media-no-url", "media without url", b"{\"body\":\"b\",\"media\":{\"type\":\"image/png\"}}")
    inner("inner-media-bad-sha256", "media.sha256 is not 64 hex digits", b"{\"body\":\"b\",\"media\":{\"url\":\"https://x.example/a\",\"sha256\":\"abc\"}}")
    inner("inner-media-short-key", "media.key is 16 bytes", ("{\"body\":\"b\",\"media\":{\"url\":\"https://x.example/a\",\"key\":\"%s\"}}" % b64_encode(bytes(16))).encode())
    inner("inner-localization-not-object", "a localization is a string", b"{\"body\":\"b\",\"localizations\":{\"fr\":\"Bonjour\"}}")
    inner("inner-data-array", "data is an array", b"{\"body\":\"b\",\"data\":[1]}")
    inner("inner-kind-unknown", "a kind the receiver does not know (never displayed)", b"{\"title\":\"t\",\"kind\":\"recall\"}")
    inner("inner-kind-number", "kind is a number", b"{\"title\":\"t\",\"kind\":1}")
    inner("inner-retract-no-ids", "a retract without ids", b"{\"kind\":\"retract\",\"iat\":1796000000}")
    inner("inner-retract-empty-ids", "a retract with an empty ids array", b"{\"kind\":\"retract\",\"ids\":[]}")
    inner("inner-ids-not-strings", "ids holds a number", b"{\"kind\":\"retract\",\"ids\":[\"m-1\",2]}")
    inner("inner-retract-101-ids", "a retract naming 101 ids",
          ("{\"kind\":\"retract\",\"ids\":[%s]}" % ",".join("\"m-%d\"" % i for i in range(101))).encode())


# ---------------------------------------------------------------- version 2 (public-key mode)

VERSION2 = "pushseal:v2"
ALG_BASE = "HPKE-BASE-X25519-A256GCM"
ALG_AUTH = "HPKE-AUTH-X25519-A256GCM"
ENC_LEN = 32


def info2(alg, key_id, app_id, sender_key_id=None):
    text = f"{VERSION2}|{alg}|{key_id}|{app_id}"
    return (text + f"|{sender_key_id}" if alg == ALG_AUTH else text).encode("utf-8")


def key_id_for(public_key):
    """The key id PushSeal's generators give a v2 public key (FORMAT.md §V.6): 16 characters."""
    import hashlib
    return base64.urlsafe_b64encode(hashlib.sha256(public_key).digest()).decode("ascii")[:16]


def parse_payload_v2(payload):
    """FORMAT.md §V.7 steps 1-5: returns (alg, key_id, sender_key_id or None, enc, ct_tag)."""
    if not isinstance(payload, dict):
        raise FormatError("missingField", "payload is not an object")
    data = string_field(payload, "encrypted_data")
    key_id = string_field(payload, "key_id")
    alg = string_field(payload, "enc_alg")
    sender = string_field(payload, "sender_key_id") if alg == ALG_AUTH else None
    for name, v in (("encrypted_data", data), ("key_id", key_id), ("enc_alg", alg), ("sender_key_id", sender)):
        if v == "":
            raise FormatError("emptyField", f"{name} is empty")
    if alg not in (ALG_BASE, ALG_AUTH):
        raise FormatError("unknownAlgorithm", alg)
    if not KEY_ID_RE.match(key_id):
        raise FormatError("invalidKeyID", key_id)
    if sender is not None and not KEY_ID_RE.match(sender):
        raise FormatError("invalidKeyID", "sender_key_id")
    box = b64_decode(data)
    if len(box) == 0:
        raise FormatError("emptyField", "encrypted_data holds only whitespace")
    if len(box) < ENC_LEN:
        raise FormatError("invalidEnc", f"{len(box)} bytes: shorter than the 32-byte enc")
    if len(box) < ENC_LEN + TAG_LEN:
        raise FormatError("truncatedBox", f"{len(box)} bytes")
    return alg, key_id, sender, box[:ENC_LEN], box[ENC_LEN:]


def open_payload_v2(payload, device_keys, app_id, sender_keys=None):
    """device_keys: {key id: 32-byte X25519 private key}; sender_keys: {sender key id: 32-byte
    public key} the device pinned for app_id (empty: none pinned). Returns (object, raw bytes)."""
    sender_keys = sender_keys or {}
    alg, key_id, sender, enc, ct = parse_payload_v2(payload)
    if not valid_app_id(app_id):
        raise FormatError("invalidAppID", app_id)
    if alg == ALG_BASE and sender_keys:
        raise FormatError("downgradeRefused", "base mode for an app that pinned a sender key")
    if alg == ALG_AUTH and sender not in sender_keys:
        raise FormatError("unknownSenderKey", "sender_key_id is not pinned")
    if key_id not in device_keys:
        raise FormatError("unknownKeyID", key_id)
    mode = hpke_ref.MODE_AUTH if alg == ALG_AUTH else hpke_ref.MODE_BASE
    try:
        raw = hpke_ref.open_(mode, enc, device_keys[key_id], info2(alg, key_id, app_id, sender), b"", ct,
                             pk_s=sender_keys.get(sender))
    except hpke_ref.HPKEError as e:
        raise FormatError(e.code, e.reason)
    return _plaintext_from(raw), raw


def seal_bytes_v2(raw, public_key, key_id, app_id, sender_key=None, sender_key_id=None, ephemeral=None):
    alg = ALG_AUTH if sender_key is not None else ALG_BASE
    mode = hpke_ref.MODE_AUTH if sender_key is not None else hpke_ref.MODE_BASE
    enc, ct = hpke_ref.seal(mode, public_key, info2(alg, key_id, app_id, sender_key_id), b"", raw,
                            sk_s=sender_key, sk_e=ephemeral)
    return alg, enc + ct


def seal_v2(obj, public_key, key_id, app_id, padding=True, sender_key=None, sender_key_id=None, ephemeral=None):
    if not KEY_ID_RE.match(key_id):
        raise FormatError("invalidKeyID", key_id)
    if sender_key is not None and not KEY_ID_RE.match(sender_key_id or ""):
        raise FormatError("invalidKeyID", "sender key id")
    if not valid_app_id(app_id):
        raise FormatError("invalidAppID", app_id)
    if len(public_key) != ENC_LEN:
        raise FormatError("invalidEnc", "public key is not 32 bytes")
    check_plaintext(obj)
    alg, box = seal_bytes_v2(encode_plaintext(obj, padding), public_key, key_id, app_id, sender_key,
                             sender_key_id, ephemeral)
    fields = {"encrypted_data": b64_encode(box), "key_id": key_id, "enc_alg": alg}
    if alg == ALG_AUTH:
        fields["sender_key_id"] = sender_key_id
    return fields


DEVICE_SK = bytes(range(32))
OTHER_DEVICE_SK = bytes(range(64, 96))
SENDER_SK = bytes(range(32, 64))
OTHER_SENDER_SK = bytes(range(96, 128))


def _ephemeral(i):
    return hpke_ref.derive_key_pair(b"pushseal v2 vector ephemeral %d" % i)[0]


def vectors_v2(out):
    """Tests/Vectors/v2: headers `device-key` (private, hex), `key-id`, `app-id`, and for a
    device that pinned sender keys `sender-key-id` + `sender-public-key` (hex)."""
    os.makedirs(out, exist_ok=True)
    for f in os.listdir(out):
        if f.endswith(".vector"):
            os.remove(os.path.join(out, f))
    pk_r = hpke_ref.public_key(DEVICE_SK)
    pk_s = hpke_ref.public_key(SENDER_SK)
    kid, skid = key_id_for(pk_r), key_id_for(pk_s)
    plain = {"title": "Lunch?", "body": "Noon at the usual place 🍜", "iat": 1796000000, "id": "m-1"}
    raw = encode_plaintext(plain)
    _, base_box = seal_bytes_v2(raw, pk_r, kid, APP, ephemeral=_ephemeral(1))
    _, auth_box = seal_bytes_v2(raw, pk_r, kid, APP, SENDER_SK, skid, _ephemeral(2))
    base_fields = {"encrypted_data": b64_encode(base_box), "key_id": kid, "enc_alg": ALG_BASE}
    auth_fields = {"encrypted_data": b64_encode(auth_box), "key_id": kid, "enc_alg": ALG_AUTH, "sender_key_id": skid}
    dev = [("device-key", DEVICE_SK.hex()), ("key-id", kid), ("app-id", APP)]
    pinned = [("sender-key-id", skid), ("sender-public-key", pk_s.hex())]

    def ok(name, comment, fields, headers, raw_pt=raw):
        _write(out, name, [("expect", "open"), ("comment", comment)] + headers + [("plaintext-hex", raw_pt.hex())],
               apns_payload(fields))

    def bad(name, comment, code, fields, headers):
        _write(out, name, [("expect", f"error {code}"), ("comment", comment)] + headers, apns_payload(fields))

    ok("ok-base", "base mode, device with no pinned sender key", base_fields, dev)
    ok("ok-auth", "auth mode, device pinned the sender key", auth_fields, dev + pinned)
    rich = {"title": "Résultats", "subtitle": "Labo", "body": "Vos résultats sont prêts.",
            "media": {"url": "https://media.example.com/a.jpg", "type": "image/jpeg",
                      "sha256": "00" * 32, "key": b64_encode(bytes(range(100, 132)))},
            "localizations": {"en": {"title": "Results"}}, "data": {"thread": 7},
            "iat": 1796000000, "exp": 1796086400, "id": "r-1"}
    raw_rich = encode_plaintext(rich)
    _, rich_box = seal_bytes_v2(raw_rich, pk_r, kid, APP, SENDER_SK, skid, _ephemeral(3))
    ok("ok-auth-all-members", "auth mode, every plaintext member",
       dict(auth_fields, encrypted_data=b64_encode(rich_box)), dev + pinned, raw_rich)
    raw_retract = encode_plaintext({"iat": 1796000000, "id": "x-1", "kind": "retract", "ids": ["m-1", "r-1"]})
    _, retract_box = seal_bytes_v2(raw_retract, pk_r, kid, APP, SENDER_SK, skid, _ephemeral(4))
    _write(out, "ok-auth-retract", [("expect", "open"), ("comment", "auth mode, a retract in a background payload")]
           + dev + pinned + [("plaintext-hex", raw_retract.hex())],
           apns_payload(dict(auth_fields, encrypted_data=b64_encode(retract_box)), background=True))
    bad("wrong-app-id", "sealed for com.example.app, opened by com.example.other (the info differs)",
        "authenticationFailed", auth_fields,
        [("device-key", DEVICE_SK.hex()), ("key-id", kid), ("app-id", "com.example.other")] + pinned)
    bad("wrong-key-id", "sealed with the key id in the info, payload renamed to one the device holds for the same key",
        "authenticationFailed", dict(base_fields, key_id="renamed"),
        [("device-key", DEVICE_SK.hex()), ("key-id", "renamed"), ("app-id", APP)])
    bad("wrong-device-key", "the device holds another private key under this key id", "authenticationFailed",
        base_fields, [("device-key", OTHER_DEVICE_SK.hex()), ("key-id", kid), ("app-id", APP)])
    other_pk_s = hpke_ref.public_key(OTHER_SENDER_SK)
    bad("wrong-sender", "auth mode sealed by another sender key under the pinned sender key id",
        "authenticationFailed", auth_fields, dev + [("sender-key-id", skid), ("sender-public-key", other_pk_s.hex())])
    bad("unknown-sender-key", "auth mode with a sender key id the device did not pin", "unknownSenderKey",
        dict(auth_fields, sender_key_id="unpinned-sender"), dev + pinned)
    bad("auth-without-pin", "auth mode on a device that pinned no sender key", "unknownSenderKey", auth_fields, dev)
    bad("base-when-pinned", "base-mode payload for a device that pinned a sender key (downgrade)",
        "downgradeRefused", base_fields, dev + pinned)
    bad("auth-missing-sender-key-id", "auth mode without sender_key_id", "missingField",
        {k: v for k, v in auth_fields.items() if k != "sender_key_id"}, dev + pinned)
    bad("truncated-enc", "20 bytes: shorter than the 32-byte enc", "invalidEnc",
        dict(base_fields, encrypted_data=b64_encode(base_box[:20])), dev)
    bad("truncated-box", "40 bytes: a whole enc but no room for the tag", "truncatedBox",
        dict(base_fields, encrypted_data=b64_encode(base_box[:40])), dev)
    bad("low-order-enc", "enc is the all-zero point: the X25519 shared secret is zero", "zeroSharedSecret",
        dict(base_fields, encrypted_data=b64_encode(bytes(32) + base_box[32:])), dev)
    flipped = bytearray(auth_box)
    flipped[-1] ^= 0x01
    bad("flip-tag", "bit 0 of the last tag byte flipped", "authenticationFailed",
        dict(auth_fields, encrypted_data=b64_encode(bytes(flipped))), dev + pinned)
    flipped = bytearray(base_box)
    flipped[0] ^= 0x40
    bad("flip-enc", "bit 6 of enc byte 0 flipped (another valid point)", "authenticationFailed",
        dict(base_fields, encrypted_data=b64_encode(bytes(flipped))), dev)
    bad("unknown-key-id", "payload names a key id the device does not hold", "unknownKeyID",
        dict(base_fields, key_id="k9"), dev)
    bad("alg-v1-name-with-v2-box", "enc_alg says HPKE in lower case", "unknownAlgorithm",
        dict(base_fields, enc_alg=ALG_BASE.lower()), dev)


def example_v2():
    """The worked example of FORMAT.md §V.9, computed (not copied)."""
    pk_r = hpke_ref.public_key(DEVICE_SK)
    pk_s = hpke_ref.public_key(SENDER_SK)
    kid, skid = key_id_for(pk_r), key_id_for(pk_s)
    eph = _ephemeral(2)
    plain = {"title": "Hello", "body": "Your code is 123456", "iat": 1796000000}
    raw = encode_plaintext(plain)
    info = info2(ALG_AUTH, kid, APP, skid)
    alg, box = seal_bytes_v2(raw, pk_r, kid, APP, SENDER_SK, skid, eph)
    payload = apns_payload({"encrypted_data": b64_encode(box), "key_id": kid, "enc_alg": alg, "sender_key_id": skid})
    lines = [
        f"device private key (hex): {DEVICE_SK.hex()}",
        f"device public key (hex):  {pk_r.hex()}",
        f"device key id:            {kid}",
        f"sender private key (hex): {SENDER_SK.hex()}",
        f"sender public key (hex):  {pk_s.hex()}",
        f"sender key id:            {skid}",
        f"app id:                   {APP}",
        f"ephemeral private (hex):  {eph.hex()}",
        f"plaintext JSON:           {raw.rstrip().decode()}",
        f"padded length:            {len(raw)} bytes",
        f"info (text):              {info.decode()}",
        f"enc (hex):                {box[:ENC_LEN].hex()}",
        f"ciphertext (hex):         {box[ENC_LEN:-TAG_LEN].hex()}",
        f"tag (hex):                {box[-TAG_LEN:].hex()}",
        f"box length:               {len(box)} bytes",
        "device registration record:",
        json.dumps({"format": "pushseal-device-key", "version": 2, "appId": APP, "keyId": kid,
                    "publicKey": b64_encode(pk_r), "createdAt": 1796000000}),
        "sender key record:",
        json.dumps({"format": "pushseal-sender-key", "version": 2, "appId": APP, "senderKeyId": skid,
                    "publicKey": b64_encode(pk_s)}),
        "payload:",
        json.dumps(payload, indent=2),
    ]
    print("\n".join(lines))


def example():
    """The worked example of FORMAT.md §10, computed (not copied)."""
    key = bytes(range(32))
    nonce = bytes.fromhex("000102030405060708090a0b")
    plain = {"title": "Hello", "body": "Your code is 123456", "iat": 1796000000}
    raw = encode_plaintext(plain)
    a = aad(ALG, "k1", APP)
    box = seal_bytes(raw, key, "k1", APP, nonce)
    payload = apns_payload({"encrypted_data": b64_encode(box), "key_id": "k1", "enc_alg": ALG})
    lines = [
        f"key (hex):        {key.hex()}",
        f"key id:           k1",
        f"app id:           {APP}",
        f"nonce (hex):      {nonce.hex()}",
        f"plaintext JSON:   {raw.rstrip().decode()}",
        f"unpadded length:  {len(raw.rstrip())} bytes -> Padme length {len(raw)} bytes ({len(raw) - len(raw.rstrip())} spaces)",
        f"AAD (text):       {a.decode()}",
        f"AAD (hex):        {a.hex()}",
        f"ciphertext (hex): {box[NONCE_LEN:-TAG_LEN].hex()}",
        f"tag (hex):        {box[-TAG_LEN:].hex()}",
        f"box length:       {len(box)} bytes",
        "payload:",
        json.dumps(payload, indent=2),
    ]
    print("\n".join(lines))


# --- Revocation records (FORMAT.md §V.12) ------------------------------------------------

REVOCATION_MEMBERS = ("format", "version", "appId", "keyIds", "revokedAt")
APP_ID_RE = re.compile(r"\A[A-Za-z0-9.-]{1,255}\Z")
MAX_TIME = 253402300799


def parse_revocation(raw):
    """(app_id, key_ids, revoked_at) of a revocation record's bytes, or FormatError."""
    try:
        obj = json.loads(raw.decode("utf-8"), object_pairs_hook=_no_dupes)
    except (ValueError, UnicodeDecodeError, FormatError):
        raise FormatError("malformedRecord", "not valid JSON (or a duplicate member)")
    if not isinstance(obj, dict):
        raise FormatError("malformedRecord", "not a JSON object")
    for k in obj:
        if k not in REVOCATION_MEMBERS:
            raise FormatError("malformedRecord", "unknown member " + k)
    if obj.get("format") != "pushseal-revocation":
        raise FormatError("malformedRecord", "format")
    if not _is_int(obj.get("version")) or obj["version"] != 1:
        raise FormatError("malformedRecord", "version")
    app = obj.get("appId")
    if not isinstance(app, str):
        raise FormatError("malformedRecord", "appId")
    if not APP_ID_RE.match(app):
        raise FormatError("invalidName", "appId")
    ids = obj.get("keyIds")
    if not isinstance(ids, list) or not 1 <= len(ids) <= 1000:
        raise FormatError("malformedRecord", "keyIds")
    out = []
    for i in ids:
        if not isinstance(i, str):
            raise FormatError("malformedRecord", "keyIds member")
        if not KEY_ID_RE.match(i):
            raise FormatError("invalidName", "key id")
        if i not in out:
            out.append(i)
    t = obj.get("revokedAt")
    if not _is_int(t):
        raise FormatError("malformedRecord", "revokedAt")
    if not 0 <= t <= MAX_TIME:
        raise FormatError("timeOutOfRange", "revokedAt")
    return app, out, t


def vectors_revocation():
    app = "com.example.app"

    def rec(**over):
        o = {"format": "pushseal-revocation", "version": 1, "appId": app,
             "keyIds": ["7t2IPaCpRRWT3Ao4", "oCiYEAMutBcnTuvE"], "revokedAt": 1796000000}
        o.update(over)
        return json.dumps({k: v for k, v in o.items() if v is not None}, separators=(",", ":"))
    cases = [
        ("ok", "a device key id and a sender key id", rec()),
        ("ok-duplicate-ids", "a key id twice counts once", rec(keyIds=["k1", "k1", "k2"])),
        ("ok-v1-key-id", "a v1 key id (8 characters)", rec(keyIds=["WMSaTIkB"])),
        ("ok-1000-ids", "the most key ids one record lists", rec(keyIds=["k%d" % i for i in range(1000)])),
        ("ok-member-order", "members in any order", json.dumps({"revokedAt": 0, "keyIds": ["a"], "appId": app, "version": 1, "format": "pushseal-revocation"})),
        ("unknown-member", "an unknown member is refused (it could change what is revoked)", rec(senderKeyIds=["x"])),
        ("wrong-format", "another format", rec(format="pushseal-sender-key")),
        ("version-2", "another version", rec(version=2)),
        ("version-string", "version not an integer", rec(version="1")),
        ("no-app-id", "appId missing", rec(appId=None)),
        ("bad-app-id", "appId with a character outside A-Z a-z 0-9 . -", rec(appId="com.example/app")),
        ("empty-key-ids", "no key ids", rec(keyIds=[])),
        ("1001-ids", "more than 1000 key ids", rec(keyIds=["k%d" % i for i in range(1001)])),
        ("key-id-number", "a key id that is not a string", rec(keyIds=[12345678])),
        ("key-id-bad-char", "a key id with '.'", rec(keyIds=["abc.def"])),
        ("key-id-too-long", "a key id of 65 characters", rec(keyIds=["a" * 65])),
        ("revoked-at-float", "revokedAt not an integer", rec(revokedAt=1796000000.5)),
        ("revoked-at-negative", "revokedAt before 1970", rec(revokedAt=-1)),
        ("revoked-at-too-late", "revokedAt after 9999-12-31T23:59:59Z", rec(revokedAt=MAX_TIME + 1)),
        ("duplicate-member", "a member twice", rec()[:-1] + ',"revokedAt":0}'),
        ("not-object", "an array", "[" + rec() + "]"),
        ("not-json", "truncated", rec()[:-1]),
    ]
    out = []
    for name, comment, text in cases:
        try:
            a, ids, t = parse_revocation(text.encode("utf-8"))
            expect = {"expect": "valid", "appId": a, "keyIds": ids, "revokedAt": t}
        except FormatError as e:
            expect = {"expect": e.code}
        out.append(dict({"name": name, "comment": comment, "record": text}, **expect))
    print(json.dumps({"comment": "Revocation records (FORMAT.md §V.12), made by Tests/Interop/pushseal_ref.py vectors-revocation. "
                      "expect: valid (with the parsed appId, keyIds without repeats, revokedAt) or the error code.",
                      "cases": out}, indent=1))


def serve():
    for line in sys.stdin:
        line = line.strip()
        if not line:
            continue
        req = json.loads(line)
        try:
            if req["op"] == "seal":
                nonce = bytes.fromhex(req["nonce"]) if req.get("nonce") else None
                res = {"fields": seal(req["plaintext"], bytes.fromhex(req["key"]), req["keyId"], req["appId"],
                                      req.get("padding", True), nonce)}
            elif req["op"] == "seal2":
                sk_s = bytes.fromhex(req["senderKey"]) if req.get("senderKey") else None
                eph = bytes.fromhex(req["ephemeralKey"]) if req.get("ephemeralKey") else None
                res = {"fields": seal_v2(req["plaintext"], bytes.fromhex(req["publicKey"]), req["keyId"], req["appId"],
                                         req.get("padding", True), sk_s, req.get("senderKeyId"), eph)}
            elif req["op"] == "open2":
                keys = {k: bytes.fromhex(v) for k, v in req["deviceKeys"].items()}
                senders = {k: bytes.fromhex(v) for k, v in (req.get("senderKeys") or {}).items()}
                obj, raw = open_payload_v2(req["payload"], keys, req["appId"], senders)
                res = {"plaintext": obj, "plaintextHex": raw.hex()}
            elif req["op"] == "open":
                obj, raw = open_payload(req["payload"], bytes.fromhex(req["key"]), req["appId"])
                res = {"plaintext": obj, "plaintextHex": raw.hex()}
            else:
                res = {"error": "usage", "reason": "unknown op"}
        except FormatError as e:
            res = {"error": e.code, "reason": e.reason}
        sys.stdout.write(json.dumps(res, ensure_ascii=False) + "\n")
        sys.stdout.flush()


def main():
    ap = argparse.ArgumentParser(prog="pushseal_ref", description=__doc__.split("\n")[0])
    sub = ap.add_subparsers(dest="cmd", required=True)
    s = sub.add_parser("seal")
    s.add_argument("--key", required=True)
    s.add_argument("--key-id", required=True)
    s.add_argument("--app-id", required=True)
    s.add_argument("--nonce")
    s.add_argument("--no-padding", action="store_true")
    s.add_argument("--alert", action="store_true")
    o = sub.add_parser("open")
    o.add_argument("--key", required=True)
    o.add_argument("--app-id", required=True)
    v = sub.add_parser("vectors")
    v.add_argument("--out", required=True)
    sub.add_parser("example")
    v2 = sub.add_parser("vectors-v2")
    v2.add_argument("--out", required=True)
    sub.add_parser("example-v2")
    sub.add_parser("serve")
    sub.add_parser("revocation")
    sub.add_parser("vectors-revocation")
    args = ap.parse_args()
    try:
        if args.cmd == "seal":
            fields = seal(json.load(sys.stdin), bytes.fromhex(args.key), args.key_id, args.app_id,
                          not args.no_padding, bytes.fromhex(args.nonce) if args.nonce else None)
            print(json.dumps(apns_payload(fields) if args.alert else fields, ensure_ascii=False, indent=1))
        elif args.cmd == "open":
            obj, _ = open_payload(json.load(sys.stdin), bytes.fromhex(args.key), args.app_id)
            print(json.dumps(obj, ensure_ascii=False, indent=1))
        elif args.cmd == "vectors":
            vectors(args.out)
        elif args.cmd == "example":
            example()
        elif args.cmd == "vectors-v2":
            vectors_v2(args.out)
        elif args.cmd == "example-v2":
            example_v2()
        elif args.cmd == "serve":
            serve()
        elif args.cmd == "revocation":
            a, ids, t = parse_revocation(sys.stdin.buffer.read())
            print(json.dumps({"appId": a, "keyIds": ids, "revokedAt": t}))
        elif args.cmd == "vectors-revocation":
            vectors_revocation()
    except FormatError as e:
        sys.stderr.write(f"pushseal_ref: error: {e.code}: {e.reason}\n")
        sys.exit(65)


if __name__ == "__main__":
    main()
