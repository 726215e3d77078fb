"""Sends HTTP/2 requests that PushSeal's APNs client refuses to send (a non-hex token, a payload
over 4096 bytes, an unknown push type, no provider token, two provider tokens on one
connection...) to a mock APNs, one after the other, and prints what came back as JSON.

Used by Tests/PushSealAPNsTests/MockDifferentialTests.swift to send the same requests to both
mocks (Node and native). Python's `h2` (installed with aioapns) over `ssl`, loopback only.

    python3 raw_h2_requests.py PORT CAFILE P8 < requests.json

requests.json: a list of {"connection": N, "method", "path", "headers": {name: value},
"bodyBytes": N, "token": {"kid", "iss", "iatAgo", "alg"} | "authorization": "literal"}; requests
with the same connection number go over one connection, in order. Prints a list of
{"status", "body", "headers": {name: value}, "maxConcurrentStreams"} (the server's limit after
the answer), one per request.
"""
import base64
import json
import socket
import ssl
import sys
import time

import h2.config
import h2.connection
import h2.events
from cryptography.hazmat.primitives import hashes, serialization
from cryptography.hazmat.primitives.asymmetric import ec, utils

port, ca, p8 = int(sys.argv[1]), sys.argv[2], sys.argv[3]
requests = json.load(sys.stdin)
key = serialization.load_pem_private_key(open(p8, "rb").read(), None)
now = int(time.time())


def b64(data):
    return base64.urlsafe_b64encode(data).rstrip(b"=").decode()


def jwt(kid, iss, iat, alg="ES256"):
    header = b64(json.dumps({"alg": alg, "kid": kid}, separators=(",", ":")).encode())
    claims = b64(json.dumps({"iss": iss, "iat": iat}, separators=(",", ":")).encode())
    r, s = utils.decode_dss_signature(key.sign((header + "." + claims).encode(), ec.ECDSA(hashes.SHA256())))
    return header + "." + claims + "." + b64(r.to_bytes(32, "big") + s.to_bytes(32, "big"))


# The same token string for the same (kid, iss, iat, alg) within a run.
tokens = {}


class Connection:
    def __init__(self):
        context = ssl.create_default_context(cafile=ca)
        context.set_alpn_protocols(["h2"])
        raw = socket.create_connection(("127.0.0.1", port))
        self.sock = context.wrap_socket(raw, server_hostname="127.0.0.1")
        self.h2 = h2.connection.H2Connection(h2.config.H2Configuration(client_side=True, header_encoding=None))
        self.h2.initiate_connection()
        self.flush()

    def flush(self):
        data = self.h2.data_to_send()
        if data:
            self.sock.sendall(data)

    def request(self, method, path, headers, body):
        sid = self.h2.get_next_available_stream_id()
        pairs = [(":method", method), (":scheme", "https"), (":authority", "127.0.0.1"), (":path", path)]
        pairs += [(k, v) for k, v in headers]
        self.h2.send_headers(sid, [(k.encode(), v.encode("utf-8")) for k, v in pairs], end_stream=not body)
        if body:
            self.h2.send_data(sid, body, end_stream=True)
        self.flush()
        status, response_headers, response_body = None, {}, b""
        while True:
            data = self.sock.recv(65536)
            if not data:
                raise SystemExit("the mock closed the connection")
            for event in self.h2.receive_data(data):
                if isinstance(event, h2.events.ResponseReceived) and event.stream_id == sid:
                    for k, v in event.headers:
                        if k == b":status":
                            status = int(v)
                        else:
                            response_headers[k.decode()] = v.decode()
                elif isinstance(event, h2.events.DataReceived) and event.stream_id == sid:
                    response_body += event.data
                    self.h2.acknowledge_received_data(event.flow_controlled_length, sid)
                elif isinstance(event, h2.events.StreamReset) and event.stream_id == sid:
                    raise SystemExit("stream reset by the mock: error %s" % event.error_code)
                elif isinstance(event, h2.events.StreamEnded) and event.stream_id == sid:
                    self.flush()
                    return status, response_headers, response_body
            self.flush()


connections = {}
out = []
for r in requests:
    c = connections.get(r["connection"])
    if c is None:
        c = connections[r["connection"]] = Connection()
    headers = list(r.get("headers", {}).items())
    if "token" in r:
        t = r["token"]
        spec = (t["kid"], t["iss"], now - t.get("iatAgo", 0), t.get("alg", "ES256"))
        if spec not in tokens:
            tokens[spec] = jwt(*spec)
        headers.insert(0, ("authorization", "bearer " + tokens[spec]))
    elif "authorization" in r:
        headers.insert(0, ("authorization", r["authorization"]))
    status, response_headers, body = c.request(r.get("method", "POST"), r["path"], headers, b"x" * r.get("bodyBytes", 0))
    limit = c.h2.remote_settings.max_concurrent_streams
    out.append({"status": status, "body": body.decode(), "headers": response_headers, "maxConcurrentStreams": limit})
print(json.dumps(out))
