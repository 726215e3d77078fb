#!/usr/bin/env python3
"""The device keychain layout of docs/keychain.md ("Device key items", "The key manifest"),
read independently of the Swift code: what an iPhone's Notification Service Extension finds in
its keychain access group, applied to one version 1 payload. Not used by the Swift code.

Reads one JSON object on stdin:
  {"appId": APP, "now": UNIX, "payload": {APNs payload},
   "items": [{"service", "account", "label", "accessibility", "data": HEX}, ...]}
(the generic-password items of the app's shared access group, as SecItemCopyMatching returns
them) and prints one JSON object: {"outcome": "decrypted", "plaintext": {...}} or
{"outcome": "original", "reason": CODE} with the reason tokens of docs/fallback.md.
"""
import hashlib
import json
import os
import sys

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import pushseal_ref  # noqa: E402

RECORD_LEN = 59
STATUS = {1: "pending", 2: "primary", 3: "decryptOnly", 4: "disabled"}
LABELS = {1: "PushSeal v1 key", 2: "PushSeal v2 key", 3: "PushSeal sender key"}
SERVICE_PREFIX = {1: "pushseal.key:", 2: "pushseal.key:", 3: "pushseal.sender:"}


class Refused(Exception):
    pass


def i64(b):
    return int.from_bytes(b, "big", signed=True)


def parse_manifest(data):
    """docs/keychain.md "The key manifest": {(service prefix, key id): (digest, previous)}."""
    if len(data) < 11 or data[0] != 1:
        raise Refused("corruptKey")
    generation = int.from_bytes(data[1:9], "big")
    count = int.from_bytes(data[9:11], "big")
    if generation < 1 or count > 4096:
        raise Refused("corruptKey")
    entries, at, last = {}, 11, None
    for _ in range(count):
        if at + 2 > len(data) or data[at] not in (1, 2, 3):
            raise Refused("corruptKey")
        kind, length = data[at], data[at + 1]
        end = at + 2 + length + 64
        if end > len(data):
            raise Refused("corruptKey")
        key_id = data[at + 2:at + 2 + length]
        if not pushseal_ref.KEY_ID_RE.match(key_id.decode("ascii", "replace")) or (kind, key_id) <= (last or (0, b"")):
            raise Refused("corruptKey")
        digest, previous = data[end - 64:end - 32], data[end - 32:end]
        zero = bytes(32)
        entries[(SERVICE_PREFIX[kind], key_id.decode())] = (None if digest == zero else digest, None if previous == zero else previous)
        last, at = (kind, key_id), end
    if at != len(data):
        raise Refused("corruptKey")
    return entries


def v1_key(items, app_id, key_id, now):
    """The kind 1 item for key_id after the manifest and the reader rules; returns (key, record)."""
    item = next((i for i in items if i["service"] == "pushseal.key:" + app_id and i["account"] == key_id), None)
    if item is None:
        raise Refused("unknownKey")
    data = bytes.fromhex(item["data"])
    manifest = next((i for i in items if i["service"] == "pushseal.manifest:" + app_id and i["account"] == "manifest"), None)
    if manifest is None:
        raise Refused("keyRolledBack")
    entry = parse_manifest(bytes.fromhex(manifest["data"])).get(("pushseal.key:", key_id))
    if entry is None or hashlib.sha256(data).digest() not in [d for d in entry if d is not None]:
        raise Refused("keyRolledBack")
    if len(data) != RECORD_LEN or data[0] != 1 or data[1] not in LABELS or data[2] not in STATUS:
        raise Refused("corruptKey")
    if data[1] != 1:
        raise Refused("unknownKey")  # a v1 payload reads only kind 1
    if item["label"] != LABELS[1] or item["accessibility"] != "afterFirstUnlockThisDeviceOnly":
        raise Refused("corruptKey")
    status, retired_at, not_after = STATUS[data[2]], i64(data[11:19]), i64(data[19:27])
    if status == "disabled":
        raise Refused("keyDisabled")
    if status == "decryptOnly" and not_after != -1 and now >= not_after:
        raise Refused("keyExpired")
    return data[27:59], status, retired_at


def main():
    request = json.load(sys.stdin)
    app_id, payload, items = request["appId"], request["payload"], request["items"]
    try:
        key, status, retired_at = v1_key(items, app_id, payload.get("key_id", ""), request["now"])
        try:
            plaintext, _ = pushseal_ref.open_payload(payload, key, app_id)
        except pushseal_ref.FormatError as e:
            raise Refused(e.code)
        if status == "decryptOnly" and retired_at >= 0 and (plaintext.get("iat") is None or plaintext["iat"] > retired_at):
            raise Refused("keys:keyRetired")
        print(json.dumps({"outcome": "decrypted", "plaintext": plaintext}))
    except Refused as r:
        print(json.dumps({"outcome": "original", "reason": str(r)}))


if __name__ == "__main__":
    main()
