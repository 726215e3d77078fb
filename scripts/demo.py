#!/usr/bin/env python3
"""PushSeal demo: the whole pipeline with the real command-line tools.

Run by `make demo` after a release build. Everything lives in a fresh temporary directory
(removed at the end; `--keep` keeps it): a server keychain, an emulated iPhone keychain with
the app's and its Notification Service Extension's entitlements, a key provisioned from the
server to the phone, a local HTTP server for the encrypted image. Each example notification in
Examples/notifications/ is sealed with `push-seal` and opened with `push-open` as the
extension. Then a key rotation with a message in flight, the locked-phone mistake, and public-key
mode (v2): the app registers its own key, the server seals in HPKE auth mode, a stolen copy of
the server store opens nothing, and a forged base-mode payload is refused.

Exit status 0 only if every step gave the expected result.
"""

import argparse
import http.server
import json
import os
import shutil
import socketserver
import subprocess
import sys
import tempfile
import threading
import time
import unicodedata
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
APP_ID = "com.example.app"
TEAM_ID = "ABCDE12345"
RECIPIENT = "alice-iphone"

failures = []


def bins(build_dir):
    d = ROOT / build_dir
    return {name: str(d / name) for name in ("push-keys", "push-seal", "push-open")}


def run(argv, *, input_bytes=None, expect_codes=(0,), quiet=False, env=None):
    """Runs a tool; returns (exit code, stdout text, stderr text, milliseconds)."""
    start = time.perf_counter()
    proc = subprocess.run(argv, input=input_bytes, capture_output=True, env=env)
    ms = (time.perf_counter() - start) * 1000
    out = proc.stdout.decode("utf-8", "replace")
    err = proc.stderr.decode("utf-8", "replace")
    if proc.returncode not in expect_codes:
        failures.append(f"{Path(argv[0]).name} {' '.join(argv[1:3])}… exited {proc.returncode}: {err.strip()[:300]}")
        if not quiet:
            print(f"  ! {Path(argv[0]).name} exited {proc.returncode}: {err.strip()[:300]}")
    return proc.returncode, out, err, ms


def expect(condition, what):
    if not condition:
        failures.append(what)
        print(f"  ! expected: {what}")
    return condition


def width(text):
    """Display width in a terminal: East Asian wide characters take two cells, marks none."""
    w = 0
    for ch in text:
        if unicodedata.combining(ch) or ch in "\u200d\ufe0f":
            continue
        w += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return w


def clip(text, cells):
    text = " ".join((text or "").split())
    out, w = "", 0
    for ch in text:
        cw = 0 if (unicodedata.combining(ch) or ch in "\u200d\ufe0f") else (2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1)
        if w + cw > cells - 1 and len(text) > len(out) + 1:
            return out + "…" + " " * max(0, cells - w - 1)
        out += ch
        w += cw
    return out + " " * max(0, cells - w)


class QuietHandler(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


def start_media_server(directory):
    handler = lambda *a, **k: QuietHandler(*a, directory=str(directory), **k)  # noqa: E731
    server = socketserver.ThreadingTCPServer(("127.0.0.1", 0), handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    return server


def write_entitlements(path, app_identifier, groups, app_groups):
    path.write_text(json.dumps({
        "application-identifier": app_identifier,
        "keychain-access-groups": groups,
        "application-groups": app_groups,
    }))
    os.chmod(path, 0o600)


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--build-dir", default=".build/release")
    parser.add_argument("--keep", action="store_true", help="keep the demo directory")
    args = parser.parse_args()
    tools = bins(args.build_dir)
    for name, path in tools.items():
        if not os.access(path, os.X_OK):
            print(f"demo: error: {path} is missing; run 'make demo' (it builds first)", file=sys.stderr)
            return 66

    work = Path(tempfile.mkdtemp(prefix="pushseal-demo-"))
    os.chmod(work, 0o700)
    server = None
    try:
        server_kc = work / "server-keychain"
        device_kc = work / "iphone-keychain"
        www = work / "www"
        www.mkdir()
        shared_group = f"{TEAM_ID}.{APP_ID}.shared"
        app_group = f"group.{APP_ID}"
        app_ents = work / "app.entitlements.json"
        ext_ents = work / "extension.entitlements.json"
        write_entitlements(app_ents, f"{TEAM_ID}.{APP_ID}", [shared_group], [app_group])
        write_entitlements(ext_ents, f"{TEAM_ID}.{APP_ID}.NotificationService", [shared_group], [app_group])

        print("PushSeal demo — everything below runs the real tools in", work)
        print()
        print("1. Keys: the server generates a key for alice's iPhone; the phone imports it into the")
        print("   keychain access group it shares with its Notification Service Extension.")
        code, out, err, _ = run([tools["push-keys"], "generate", "--keychain", str(server_kc), "--app-id", APP_ID, "--recipient", RECIPIENT])
        key_id = out.strip()
        expect(code == 0 and key_id, "push-keys generate prints a key id")
        print(f"   server keychain: key id {key_id} (primary)")
        record = work / "alice.keyrecord.json"
        run([tools["push-keys"], "export", "--keychain", str(server_kc), "--app-id", APP_ID, "--recipient", RECIPIENT, "--out", str(record)])
        expect(record.exists() and (record.stat().st_mode & 0o777) == 0o600, "the exported key record is a 0600 file")
        run([tools["push-keys"], "keychain", "init", "--keychain", str(device_kc)])
        code, _, err, _ = run([tools["push-keys"], "import", "--keychain", str(device_kc), "--entitlements", str(app_ents), "--app-id", APP_ID, str(record)])
        record.unlink()
        print(f"   iPhone keychain: imported into access group {shared_group}, accessibility afterFirstUnlockThisDeviceOnly")
        print()

        # Media: the plain image for 11, the sealed blob for 12, both from a local HTTP server.
        media_dir = ROOT / "Examples/notifications/media"
        shutil.copy(media_dir / "lighthouse.png", www / "lighthouse.png")
        server = start_media_server(www)
        port = server.server_address[1]
        code, descriptor_text, _, _ = run([tools["push-seal"], "media", str(media_dir / "lighthouse.png"),
                                           "--out", str(www / "lighthouse.png.sealed"),
                                           "--url", f"http://127.0.0.1:{port}/lighthouse.png.sealed"])
        descriptor = json.loads(descriptor_text) if code == 0 else {}
        print(f"2. Media: push-seal media encrypted lighthouse.png ({(media_dir / 'lighthouse.png').stat().st_size} bytes) into a blob")
        print(f"   served by a local HTTP server on 127.0.0.1:{port}; its key travels only inside the sealed notification.")
        print()

        print("3. Each example notification: push-seal on the server, push-open as the extension on the phone.")
        print()
        header = f"   {'file':<26} {'bytes':>5}  {'APNs sees (alert)':<24} {'the user sees':<44} {'outcome':<22} {'ms':>5}"
        print(header)
        print("   " + "-" * (len(header) - 3))
        notifications = sorted((ROOT / "Examples/notifications").glob("*.json"))
        expect(len(notifications) >= 8, "at least 8 example notifications")
        for path in notifications:
            text = path.read_text(encoding="utf-8")
            text = text.replace("PORT", str(port))
            if descriptor:
                text = text.replace("SEALED_SHA256", descriptor.get("sha256", "")).replace("SEALED_KEY", descriptor.get("key", ""))
            note = json.loads(text)
            filled = work / path.name
            filled.write_text(text, encoding="utf-8")
            code, payload_text, err, _ = run([tools["push-seal"], "--app-id", APP_ID, "--recipient", RECIPIENT,
                                              "--keychain", str(server_kc), str(filled)])
            if code != 0:
                continue
            payload = json.loads(payload_text)
            payload_path = work / (path.stem + ".payload.json")
            payload_path.write_bytes(payload_text.encode("utf-8"))
            alert = payload["aps"]["alert"]
            expect(note.get("title", "") not in payload_text or not note.get("title"), f"{path.name}: APNs payload must not contain the title")
            locale = "pt-BR" if "localizations" in note else "en"
            open_argv = [tools["push-open"], "--keychain", str(device_kc), "--app-id", APP_ID, "--entitlements", str(ext_ents),
                         "--allow-insecure-loopback", "--locale", locale, str(payload_path)]
            code, result_text, err, ms = run(open_argv, expect_codes=(0,))
            result = json.loads(result_text) if result_text.strip().startswith("{") else {}
            outcome = result.get("outcome", "?")
            want = "decrypted"
            expect(outcome == want, f"{path.name}: outcome {want}, got {outcome} ({result.get('reason')})")
            shown_title = result.get("title", "")
            if "localizations" in note:
                expect(shown_title == note["localizations"]["pt-BR"].get("title"), f"{path.name}: pt-BR title shown")
            else:
                expect(shown_title == note.get("title", ""), f"{path.name}: title shown byte for byte")
                expect(result.get("body", "") == note.get("body", ""), f"{path.name}: body shown byte for byte")
            if "media" in note:
                expect(len(result.get("attachments", [])) == 1, f"{path.name}: image attached")
            seen = f"{alert.get('title')} / {alert.get('body')}"
            shown = f"{shown_title} / {result.get('body', '')}"
            if result.get("attachments"):
                outcome += f" + {len(result['attachments'])} image"
            print(f"   {clip(path.name, 26)} {len(payload_text.encode()):>5}  {clip(seen, 24)} {clip(shown, 44)} {clip(outcome, 22)} {ms:>5.0f}")

            if "ttl" in note or "exp" in note:
                later = int(time.time()) + 3600
                code, result_text, _, _ = run(open_argv[:-1] + ["--now", str(later), str(payload_path)], expect_codes=(1,))
                result = json.loads(result_text) if result_text.strip().startswith("{") else {}
                expect(result.get("outcome") == "original" and result.get("reason") == "expired",
                       f"{path.name}: an hour later it is expired (got {result.get('outcome')}, {result.get('reason')})")
                print(f"   {clip('  … opened 1 h later', 26)} {'':>5}  {clip(seen, 24)} {clip(result.get('title', '') + ' / ' + result.get('body', ''), 44)} {clip('original: ' + str(result.get('reason')), 22)}")
        print()
        print("   APNs sees only the generic fallback alert and ciphertext; the phone shows the real text.")
        print()

        rotation_demo(tools, work, server_kc, device_kc, app_ents, ext_ents)
        locked_phone_demo(tools, work, app_ents, ext_ents)
        v2_demo(tools, work, app_ents, ext_ents)
    finally:
        if server:
            server.shutdown()
        if args.keep:
            print(f"(kept {work})")
        else:
            shutil.rmtree(work, ignore_errors=True)

    print()
    if failures:
        print(f"demo: {len(failures)} step(s) did not give the expected result:", file=sys.stderr)
        for f in failures:
            print(f"  - {f}", file=sys.stderr)
        return 1
    print("demo: every step gave the expected result.")
    return 0


def seal_text(tools, work, server_kc, name, title, body):
    note = work / f"{name}.json"
    note.write_text(json.dumps({"title": title, "body": body}), encoding="utf-8")
    code, payload_text, _, _ = run([tools["push-seal"], "--app-id", APP_ID, "--recipient", RECIPIENT, "--keychain", str(server_kc), str(note)])
    path = work / f"{name}.payload.json"
    path.write_text(payload_text, encoding="utf-8")
    return path, (json.loads(payload_text).get("key_id") if code == 0 else None)


def open_payload(tools, device_kc, ents, path, extra=(), codes=(0, 1)):
    code, out, _, _ = run([tools["push-open"], "--keychain", str(device_kc), "--app-id", APP_ID, "--entitlements", str(ents), *extra, str(path)],
                          expect_codes=codes)
    return json.loads(out) if out.strip().startswith("{") else {}


def rotation_demo(tools, work, server_kc, device_kc, app_ents, ext_ents):
    print("4. Rotation with a message in flight (add, roll out, then promote — the order Tink uses).")
    in_flight, old_kid = seal_text(tools, work, server_kc, "in-flight", "Sealed before the rotation", "APNs held me for a while.")
    print(f"   sealed a message with the old primary {old_kid}; APNs holds it while the keys rotate")
    code, out, err, _ = run([tools["push-keys"], "rotate", "--keychain", str(server_kc), "--app-id", APP_ID, "--recipient", RECIPIENT,
                             "--grace", "30d", "--device-keychain", str(device_kc), "--device-entitlements", str(app_ents)])
    after, new_kid = seal_text(tools, work, server_kc, "after", "Sealed after the rotation", "The new key is already on the phone.")
    expect(new_kid and new_kid != old_kid, "the server seals with the new key after rotate")
    print(f"   push-keys rotate: new primary {new_kid} installed on the phone first, then promoted; {old_kid} is decryptOnly for 30 days")
    r1 = open_payload(tools, device_kc, ext_ents, in_flight)
    r2 = open_payload(tools, device_kc, ext_ents, after)
    expect(r1.get("outcome") == "decrypted", f"the in-flight message opens during the grace window (got {r1.get('outcome')}, {r1.get('reason')})")
    expect(r2.get("outcome") == "decrypted", f"the new message opens at once (got {r2.get('outcome')}, {r2.get('reason')})")
    print(f"   in-flight message ({old_kid}): {r1.get('outcome')} — \"{r1.get('title')}\"")
    print(f"   new message ({new_kid}):       {r2.get('outcome')} — \"{r2.get('title')}\"")
    later = str(int(time.time()) + 31 * 86400)
    for kc, ents in ((server_kc, None), (device_kc, app_ents)):
        argv = [tools["push-keys"], "prune", "--keychain", str(kc), "--now", later]
        if ents:
            argv += ["--entitlements", str(ents)]
        run(argv)
    r3 = open_payload(tools, device_kc, ext_ents, in_flight)
    expect(r3.get("outcome") == "original" and r3.get("reason") == "unknownKey",
           f"after prune the old message falls back with 'unknownKey' (got {r3.get('outcome')}, {r3.get('reason')})")
    print(f"   31 days later, push-keys prune deletes {old_kid}'s key item; the old message now shows the fallback, reason: {r3.get('reason')}")
    print()


def locked_phone_demo(tools, work, app_ents, ext_ents):
    print("5. The locked-phone mistake: a key stored with accessibility WhenUnlocked.")
    server_kc = work / "server2"
    device_kc = work / "iphone2"
    run([tools["push-keys"], "generate", "--keychain", str(server_kc), "--app-id", APP_ID, "--recipient", RECIPIENT])
    record = work / "bob.keyrecord.json"
    run([tools["push-keys"], "export", "--keychain", str(server_kc), "--app-id", APP_ID, "--recipient", RECIPIENT, "--out", str(record)])
    run([tools["push-keys"], "keychain", "init", "--keychain", str(device_kc)])
    # Device key items are always afterFirstUnlockThisDeviceOnly; the legacy keyset form still
    # takes another accessibility, which is how this mistake is made (docs/keychain.md).
    code, _, err, _ = run([tools["push-keys"], "import", "--keychain", str(device_kc), "--entitlements", str(app_ents),
                           "--app-id", APP_ID, "--accessibility", "whenUnlocked", "--legacy-keyset", str(record)])
    warned = "warning" in err
    expect(warned, "push-keys warns when asked for whenUnlocked")
    payload, _ = seal_text(tools, work, server_kc, "locked", "Your lab results are ready", "Open the app to view them.")
    run([tools["push-keys"], "keychain", "device-state", "--keychain", str(device_kc), "locked"])
    r = open_payload(tools, device_kc, ext_ents, payload)
    expect(r.get("outcome") == "original" and "25308" in str(r.get("reason", "")),
           f"a WhenUnlocked key on a locked phone gives -25308 (got {r.get('outcome')}, {r.get('reason')})")
    print(f"   phone locked, notification arrives: {r.get('outcome')} — the user sees \"{r.get('title')} / {r.get('body')}\"")
    print(f"   reason: {r.get('reason')}")
    print("   Why: iOS encrypts WhenUnlocked keychain items with a key that exists only while the phone is")
    print("   unlocked, and notifications mostly arrive while it is locked. Fix: store push keys with")
    print("   AfterFirstUnlockThisDeviceOnly (the push-keys default).")
    run([tools["push-keys"], "keychain", "device-state", "--keychain", str(device_kc), "unlocked"])
    device_kc2 = work / "iphone2-fixed"
    run([tools["push-keys"], "keychain", "init", "--keychain", str(device_kc2)])
    run([tools["push-keys"], "import", "--keychain", str(device_kc2), "--entitlements", str(app_ents), "--app-id", APP_ID, str(record)])
    record.unlink()
    run([tools["push-keys"], "keychain", "device-state", "--keychain", str(device_kc2), "locked"])
    r = open_payload(tools, device_kc2, ext_ents, payload)
    expect(r.get("outcome") == "decrypted", f"with AfterFirstUnlockThisDeviceOnly the locked phone decrypts (got {r.get('outcome')}, {r.get('reason')})")
    print(f"   after the fix, phone still locked: {r.get('outcome')} — \"{r.get('title')}\"")



def v2_demo(tools, work, app_ents, ext_ents):
    print()
    print("6. Public-key mode (wire format v2, HPKE): the app registers; the server never holds a key that opens.")
    phone = work / "iphone3"
    server_kc = work / "server3"
    run([tools["push-keys"], "keychain", "init", "--keychain", str(phone)])
    run([tools["push-keys"], "keychain", "init", "--keychain", str(server_kc)])
    code, registration, err, _ = run([tools["push-keys"], "device", "generate", "--keychain", str(phone), "--entitlements", str(app_ents),
                                      "--app-id", APP_ID])
    reg = json.loads(registration) if code == 0 and registration.strip().startswith("{") else {}
    expect(reg.get("format") == "pushseal-device-key", f"device generate prints a registration record (got exit {code}: {err.strip()})")
    print(f"   the app made its key pair on the phone (key id {reg.get('keyId')}); the private key never leaves its keychain item")
    reg_path = work / "carol.registration.json"
    reg_path.write_text(registration, encoding="utf-8")
    code, sender_record, err, _ = run([tools["push-keys"], "sender", "generate", "--keychain", str(server_kc), "--app-id", APP_ID])
    expect(code == 0 and "pushseal-sender-key" in sender_record, f"sender generate prints the sender key record (got exit {code}: {err.strip()})")
    sender_path = work / "sender-key.json"
    sender_path.write_text(sender_record, encoding="utf-8")
    code, _, err, _ = run([tools["push-keys"], "register", "--keychain", str(server_kc), "--recipient", "carol", "--app-id", APP_ID, str(reg_path)])
    expect(code == 0, f"the server imports the registration (got exit {code}: {err.strip()})")
    code, _, err, _ = run([tools["push-keys"], "device", "pin-sender", "--keychain", str(phone), "--entitlements", str(app_ents),
                           "--app-id", APP_ID, str(sender_path)])
    expect(code == 0, f"the app pins the server's sender key (got exit {code}: {err.strip()})")
    print("   the app uploaded its registration record (public) and pinned the server's sender key record (public)")
    note = work / "v2.json"
    note.write_text(json.dumps({"title": "Your transfer arrived", "body": "EUR 1,250.00 from Dana"}), encoding="utf-8")
    code, payload_text, err, _ = run([tools["push-seal"], "--app-id", APP_ID, "--recipient", "carol", "--keychain", str(server_kc), str(note)])
    payload = json.loads(payload_text) if code == 0 else {}
    expect(payload.get("enc_alg") == "HPKE-AUTH-X25519-A256GCM", f"the server seals in auth mode (got {payload.get('enc_alg')}: {err.strip()})")
    v2_payload = work / "v2.payload.json"
    v2_payload.write_text(payload_text, encoding="utf-8")
    r = open_payload(tools, phone, ext_ents, v2_payload)
    expect(r.get("outcome") == "decrypted" and r.get("title") == "Your transfer arrived", f"the phone opens the v2 payload (got {r.get('outcome')}, {r.get('reason')})")
    print(f"   push-seal: {payload.get('enc_alg')}, {len(payload_text.encode())} bytes; the phone: {r.get('outcome')} — \"{r.get('title')}\"")

    stolen = work / "stolen-server-store"
    # The worst case: the thief has the store and the secret that protects it.
    shutil.copytree(server_kc, stolen)
    shutil.copy(Path(str(server_kc) + ".secret"), Path(str(stolen) + ".secret"))
    code, listed, _, _ = run([tools["push-keys"], "registrations", "--keychain", str(stolen), "--json"])
    expect(code == 0 and reg.get("publicKey", "?") in listed, "the stolen store holds carol's public key")
    r = open_payload(tools, stolen, ext_ents, v2_payload)
    expect(r.get("outcome") == "original", f"a stolen copy of the server store opens nothing (got {r.get('outcome')}, {r.get('reason')})")
    print(f"   a stolen copy of the server store and its secret, used as the phone's keychain: {r.get('outcome')} ({r.get('reason')}):")
    print("   it holds carol's public key and the sender key, nothing that opens a payload sealed to her (the")
    print("   sender key would let the thief sign new notifications: rotate it after a theft, SECURITY.md)")

    forger = work / "forger-store"
    run([tools["push-keys"], "keychain", "init", "--keychain", str(forger)])
    run([tools["push-keys"], "register", "--keychain", str(forger), "--recipient", "carol", "--app-id", APP_ID, str(reg_path)])
    forged_note = work / "forged.json"
    forged_note.write_text(json.dumps({"title": "Security alert", "body": "Call +1 555 0100 now"}), encoding="utf-8")
    code, forged_text, err, _ = run([tools["push-seal"], "--app-id", APP_ID, "--recipient", "carol", "--keychain", str(forger), str(forged_note)])
    forged = json.loads(forged_text) if code == 0 else {}
    expect(forged.get("enc_alg") == "HPKE-BASE-X25519-A256GCM", f"anyone with the public registration can seal in base mode (got {forged.get('enc_alg')}: {err.strip()})")
    forged_path = work / "forged.payload.json"
    forged_path.write_text(forged_text, encoding="utf-8")
    r = open_payload(tools, phone, ext_ents, forged_path)
    expect(r.get("outcome") == "original" and "downgrade" in str(r.get("reason", "")).lower(),
           f"a forged base-mode payload is refused on a phone that pinned the sender key (got {r.get('outcome')}, {r.get('reason')})")
    print(f"   a forged base-mode payload (sealed to the public registration by someone else): {r.get('outcome')}, reason {r.get('reason')}")


if __name__ == "__main__":
    sys.exit(main())
