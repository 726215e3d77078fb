#!/usr/bin/env python3
"""A backend that uses push-gateway: Python standard library only (urllib, json).

What a company's backend does with the gateway (docs/gateway.md):
  1. its app uploads {"registration", "apnsDeviceToken", "apnsEnvironment"} (the iOS reference,
     Examples/iOS/Sources/PushSealApp/PushSealRegistration.swift); the backend adds its own id for the installation
     and forwards it: POST /v1/devices?recipient=ID;
  2. it sends notifications: POST /v1/notifications (202 = committed to the outbox);
  3. it follows them: GET /v1/notifications/{id} until a final status.

The API key comes from the environment (PUSHSEAL_API_KEY), never from the command line.

  PUSHSEAL_API_KEY=psk_... backend.py --gateway http://127.0.0.1:8080 [--gateway URL2] PHONES_DIR

PHONES_DIR holds one directory per emulated phone (its name is the recipient id), each with
registration.json (the record `push-keys device generate` prints, as the app makes it),
device-token (the APNs device token, hex) and optionally pinned-sender-key-ids (one a line). Requests alternate between the --gateway URLs (several
instances on one database). Prints one JSON line per phone: recipient, id, final status; writes
the same to PHONES_DIR/<recipient>/notification.json.
"""
import argparse
import json
import os
import sys
import time
import urllib.error
import urllib.parse
import urllib.request

FINAL = {"accepted", "unregistered", "rejected", "failed", "expired", "cancelled"}


class GatewayError(Exception):
    """A non-2xx answer: the HTTP status and the gateway's {"error":{"code","message"}}."""

    def __init__(self, status, body):
        error = body.get("error", {}) if isinstance(body, dict) else {}
        super().__init__(f"HTTP {status} {error.get('code', '?')}: {error.get('message', '')}")
        self.status = status


class Gateway:
    """One push-gateway instance: its base URL and the backend's API key."""

    def __init__(self, base_url, api_key):
        self.base_url = base_url.rstrip("/")
        self.api_key = api_key

    def request(self, method, path, body=None, headers=None):
        """Sends one request; returns (status, decoded JSON or None). Raises GatewayError on 4xx/5xx."""
        data = None if body is None else json.dumps(body).encode()
        req = urllib.request.Request(self.base_url + path, data=data, method=method)
        req.add_header("Authorization", f"Bearer {self.api_key}")
        if data is not None:
            req.add_header("Content-Type", "application/json")
        for name, value in (headers or {}).items():
            req.add_header(name, value)
        try:
            with urllib.request.urlopen(req, timeout=30) as answer:
                raw = answer.read()
                return answer.status, (json.loads(raw) if raw else None)
        except urllib.error.HTTPError as e:
            raw = e.read()
            try:
                parsed = json.loads(raw)
            except ValueError:
                parsed = None
            raise GatewayError(e.code, parsed) from None

    def register(self, recipient, upload):
        """POST /v1/devices?recipient=ID with the app's upload body; returns "registered", "tokenUpdated" or "unchanged"."""
        path = "/v1/devices?recipient=" + urllib.parse.quote(recipient, safe="")
        _, answer = self.request("POST", path, upload)
        return answer["status"]

    def send(self, items, idempotency_key):
        """POST /v1/notifications with up to 1,000 items; returns the per-item answers, in order."""
        _, answer = self.request("POST", "/v1/notifications", {"notifications": items},
                                 {"Idempotency-Key": idempotency_key})
        return answer["notifications"]

    def retract(self, ids, idempotency_key=None):
        """POST /v1/notifications/retract with up to 100 ids send() returned (a message deleted or
        read elsewhere): one sealed retract per recipient, a queued one cancelled instead; returns
        the per-id answers, in order ({"id": retract, "status": "queued"} | {"status": "cancelled"} | {"error"})."""
        headers = {"Idempotency-Key": idempotency_key} if idempotency_key else None
        _, answer = self.request("POST", "/v1/notifications/retract", {"ids": list(ids)}, headers)
        return answer["notifications"]

    def status(self, notification_id):
        """GET /v1/notifications/{id}: the notification's current state."""
        _, answer = self.request("GET", "/v1/notifications/" + notification_id)
        return answer


def wait_final(gateways, ids, timeout_seconds=60.0):
    """Polls GET /v1/notifications/{id} (round robin over the instances) until every id is final."""
    states = {}
    deadline = time.monotonic() + timeout_seconds
    pending = list(ids)
    turn = 0
    while pending:
        still = []
        for notification_id in pending:
            state = gateways[turn % len(gateways)].status(notification_id)
            turn += 1
            if state["status"] in FINAL:
                states[notification_id] = state
            else:
                still.append(notification_id)
        pending = still
        if pending:
            if time.monotonic() > deadline:
                raise TimeoutError(f"{len(pending)} notifications not final after {timeout_seconds} s")
            time.sleep(0.05)
    return states


def main():
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--gateway", action="append", required=True, help="a gateway instance's base URL (repeat it)")
    parser.add_argument("--environment", default="development", help="the phones' APNs environment")
    parser.add_argument("phones", help="the directory of emulated phones")
    args = parser.parse_args()
    key = os.environ.get("PUSHSEAL_API_KEY")
    if not key:
        sys.exit("backend.py: error: PUSHSEAL_API_KEY is not set\nhint: export PUSHSEAL_API_KEY=$(push-gateway keys create ...)")
    gateways = [Gateway(url, key) for url in args.gateway]
    phones = sorted(d for d in os.listdir(args.phones) if os.path.isdir(os.path.join(args.phones, d)))

    # 1. Each phone's upload, forwarded as the app sent it, with the backend's recipient id.
    for n, recipient in enumerate(phones):
        with open(os.path.join(args.phones, recipient, "registration.json")) as f:
            record = json.load(f)
        with open(os.path.join(args.phones, recipient, "device-token")) as f:
            token = f.read().strip()
        upload = {"registration": record, "apnsDeviceToken": token, "apnsEnvironment": args.environment}
        pins = os.path.join(args.phones, recipient, "pinned-sender-key-ids")
        if os.path.exists(pins):  # the sender keys the app pinned, as the iOS reference reports them
            with open(pins) as f:
                upload["pinnedSenderKeyIds"] = f.read().split()
        gateways[n % len(gateways)].register(recipient, upload)
    print(f"registered {len(phones)} phones through POST /v1/devices", file=sys.stderr)

    # 2. One notification each, in one request. The Idempotency-Key makes a retry of this request
    #    safe (same key, same body: the first answer again, nothing queued twice); a real backend
    #    derives it from the event it notifies about (an order id), not from the clock.
    items = [{"recipient": r, "notification": {"title": f"Hello {r}", "body": f"Your order #{1000 + n} has shipped"}, "ttl": 3600}
             for n, r in enumerate(phones)]
    answers = gateways[-1].send(items, idempotency_key=f"demo-{int(time.time())}")
    ids = {}
    for answer in answers:
        if "error" in answer:
            raise SystemExit(f"backend.py: error: {answer['recipient']}: {answer['error']}")
        ids[answer["recipient"]] = answer["id"]
    print(f"queued {len(ids)} notifications through POST /v1/notifications (202)", file=sys.stderr)

    # 3. Follow them to their final status.
    states = wait_final(gateways, ids.values())
    for recipient, notification_id in ids.items():
        state = states[notification_id]
        line = {"recipient": recipient, "id": notification_id, "status": state["status"], "apnsId": state.get("apnsId"),
                "attempts": state.get("attempts")}
        with open(os.path.join(args.phones, recipient, "notification.json"), "w") as f:
            json.dump(line, f)
        print(json.dumps(line))


if __name__ == "__main__":
    main()
