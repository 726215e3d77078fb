#!/usr/bin/env python3
"""PushSeal registration tokens: an independent reference written from docs/registration.md
alone, with Python's standard library only (hmac, hashlib, base64, json). Not used by the Swift code.

Subcommands:
  mint --secret-file F --recipient R --app-id A --iat S [--lifetime S] --jti J
        prints the compact HS256 JWT (header {"alg":"HS256","typ":"JWT"}, claims in the order
        sub, aud, iat, exp, jti, compact JSON: the bytes PushSeal writes).
  verify --secret-file F --app-id A --now S  (token on stdin)
        prints the claims as JSON, or `error: CODE` on stderr and exits 65.
  vectors   prints Tests/Vectors/registration-tokens.json (JSON, deterministic).
"""
import argparse
import base64
import hashlib
import hmac
import json
import sys

MAX_LIFETIME = 86400
LEEWAY = 60


def b64url(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode("ascii")


def b64url_decode(text):
    if not text or any(c not in "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_" for c in text):
        raise ValueError("not base64url")
    return base64.urlsafe_b64decode(text + "=" * (-len(text) % 4))


def secret_key(text):
    """The HMAC key: the secret file's text without one trailing LF."""
    if text.endswith(b"\n"):
        text = text[:-1]
    if len(text) < 32 or any(b <= 32 or b >= 127 for b in text):
        raise ValueError("invalidSecret")
    return text


def compact(obj):
    return json.dumps(obj, separators=(",", ":"), ensure_ascii=False).encode("utf-8")


def mint(key, recipient, app_id, iat, lifetime, jti, header=None, claims=None):
    header = header if header is not None else {"alg": "HS256", "typ": "JWT"}
    claims = claims if claims is not None else {"sub": recipient, "aud": app_id, "iat": iat, "exp": iat + lifetime, "jti": jti}
    signing_input = b64url(compact(header)) + "." + b64url(compact(claims))
    sig = hmac.new(key, signing_input.encode("ascii"), hashlib.sha256).digest()
    return signing_input + "." + b64url(sig)


class Refused(Exception):
    pass


def verify(token, key, app_id, now):
    parts = token.split(".")
    if len(parts) != 3:
        raise Refused("malformedToken")
    try:
        header = json.loads(b64url_decode(parts[0]))
    except ValueError:
        raise Refused("malformedToken")
    if not isinstance(header, dict):
        raise Refused("malformedToken")
    if header.get("alg") != "HS256":
        raise Refused("unsupportedAlgorithm")
    if "typ" in header and (not isinstance(header["typ"], str) or header["typ"].upper() != "JWT"):
        raise Refused("malformedToken")
    try:
        sig = b64url_decode(parts[2])
    except ValueError:
        raise Refused("malformedToken")
    expected = hmac.new(key, (parts[0] + "." + parts[1]).encode("ascii"), hashlib.sha256).digest()
    if not hmac.compare_digest(expected, sig):
        raise Refused("badSignature")
    try:
        claims = json.loads(b64url_decode(parts[1]))
    except ValueError:
        raise Refused("malformedToken")
    if not isinstance(claims, dict):
        raise Refused("malformedToken")

    def is_int(v):
        return isinstance(v, int) and not isinstance(v, bool)
    if not isinstance(claims.get("sub"), str) or not is_int(claims.get("iat")) or not is_int(claims.get("exp")) \
            or not isinstance(claims.get("jti"), str):
        raise Refused("malformedToken")
    aud = claims.get("aud")
    auds = [aud] if isinstance(aud, str) else aud if isinstance(aud, list) else None
    if auds is None or not all(isinstance(a, str) for a in auds):
        raise Refused("malformedToken")
    if app_id not in auds:
        raise Refused("wrongAudience")
    for v in (claims["sub"], app_id, claims["jti"]):
        n = len(v.encode("utf-8"))
        if n == 0 or n > 128 or any(ord(c) < 32 or ord(c) == 127 for c in v):
            raise Refused("invalidClaim")
    iat, exp = claims["iat"], claims["exp"]
    if not (exp > iat and exp - iat <= MAX_LIFETIME):
        raise Refused("lifetimeTooLong")
    if now > exp + LEEWAY:
        raise Refused("expired")
    if iat > now + LEEWAY:
        raise Refused("notYetValid")
    return claims


def vectors():
    secret = b"pushseal-test-secret-0123456789abcdefghijkl\n"
    other = b"another-test-secret-0123456789abcdefghijklm\n"
    key, other_key = secret_key(secret), secret_key(other)
    app, now = "com.example.app", 1764633600
    good = {"sub": "alice-iphone", "aud": app, "iat": now, "exp": now + 3600, "jti": "tok-0001"}
    cases = []

    def case(name, token, expect, comment):
        cases.append({"name": name, "comment": comment, "token": token, "expect": expect})
    case("ok", mint(key, "alice-iphone", app, now, 3600, "tok-0001"), "valid", "the token PushSeal mints for these claims, byte for byte")
    case("ok-aud-array", mint(key, None, None, 0, 0, None, claims=dict(good, aud=["other.app", app])), "valid", "aud as an array holding the app id (RFC 7519 §4.1.3)")
    case("ok-no-typ", mint(key, None, None, 0, 0, None, header={"alg": "HS256"}, claims=good), "valid", "typ is optional")
    case("ok-24h", mint(key, None, None, 0, 0, None, claims=dict(good, exp=now + 86400)), "valid", "exactly 24 hours")
    case("alg-none", b64url(compact({"alg": "none", "typ": "JWT"})) + "." + b64url(compact(good)) + ".", "unsupportedAlgorithm", "alg none, empty signature")
    case("alg-hs512", mint(key, None, None, 0, 0, None, header={"alg": "HS512", "typ": "JWT"}, claims=good), "unsupportedAlgorithm", "another alg (signed with HS256 anyway)")
    case("alg-missing", mint(key, None, None, 0, 0, None, header={"typ": "JWT"}, claims=good), "unsupportedAlgorithm", "no alg")
    case("wrong-secret", mint(other_key, "alice-iphone", app, now, 3600, "tok-0001"), "badSignature", "signed under another secret")
    flipped = mint(key, "alice-iphone", app, now, 3600, "tok-0001")
    h, c, s = flipped.split(".")
    case("claims-changed", h + "." + b64url(compact(dict(good, sub="mallory-phone"))) + "." + s, "badSignature", "sub changed after signing")
    case("wrong-audience", mint(key, "alice-iphone", "com.example.other", now, 3600, "tok-0001"), "wrongAudience", "aud is another app id")
    case("expired", mint(key, "alice-iphone", app, now - 7200, 3600, "tok-0001"), "expired", "exp an hour before now")
    case("expired-in-leeway", mint(key, "alice-iphone", app, now - 3630, 3600, "tok-0001"), "valid", "exp 30 s before now: within the 60 s leeway")
    case("future", mint(key, "alice-iphone", app, now + 600, 3600, "tok-0001"), "notYetValid", "iat ten minutes after now")
    case("lifetime-25h", mint(key, None, None, 0, 0, None, claims=dict(good, exp=now + 90000)), "lifetimeTooLong", "exp - iat over 24 h")
    case("exp-before-iat", mint(key, None, None, 0, 0, None, claims=dict(good, exp=now - 1)), "lifetimeTooLong", "exp not after iat")
    case("iat-string", mint(key, None, None, 0, 0, None, claims=dict(good, iat=str(now))), "malformedToken", "iat not an integer")
    case("no-jti", mint(key, None, None, 0, 0, None, claims={k: v for k, v in good.items() if k != "jti"}), "malformedToken", "jti missing")
    case("empty-sub", mint(key, None, None, 0, 0, None, claims=dict(good, sub="")), "invalidClaim", "sub empty")
    case("two-parts", h + "." + c, "malformedToken", "no signature part")
    case("padded", flipped + "=", "malformedToken", "base64url with padding")
    out = {"comment": "Registration tokens (docs/registration.md), made by Tests/Interop/registration_token_ref.py vectors with Python's hmac; verify each with secret, appId, now.",
           "secret": secret.decode("ascii"), "appId": app, "now": now, "cases": cases}
    print(json.dumps(out, indent=1, ensure_ascii=False))


def main():
    ap = argparse.ArgumentParser(prog="registration_token_ref")
    sub = ap.add_subparsers(dest="cmd", required=True)
    m = sub.add_parser("mint")
    m.add_argument("--secret-file", required=True)
    m.add_argument("--recipient", required=True)
    m.add_argument("--app-id", required=True)
    m.add_argument("--iat", type=int, required=True)
    m.add_argument("--lifetime", type=int, default=3600)
    m.add_argument("--jti", required=True)
    v = sub.add_parser("verify")
    v.add_argument("--secret-file", required=True)
    v.add_argument("--app-id", required=True)
    v.add_argument("--now", type=int, required=True)
    sub.add_parser("vectors")
    args = ap.parse_args()
    if args.cmd == "vectors":
        vectors()
        return
    with open(args.secret_file, "rb") as f:
        key = secret_key(f.read())
    if args.cmd == "mint":
        print(mint(key, args.recipient, args.app_id, args.iat, args.lifetime, args.jti))
    else:
        try:
            print(json.dumps(verify(sys.stdin.read().strip(), key, args.app_id, args.now)))
        except Refused as e:
            sys.stderr.write(f"error: {e}\n")
            sys.exit(65)


if __name__ == "__main__":
    main()
