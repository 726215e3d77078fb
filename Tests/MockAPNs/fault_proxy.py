#!/usr/bin/env python3
"""A TCP fault proxy for push-send's tests (loopback only, standard library only).

    python3 fault_proxy.py --target PORT [--blackhole-first-after BYTES]
    python3 fault_proxy.py --target PORT --tls-dir DIR --drop-first N --drop-after BYTES --report FILE

Listens on 127.0.0.1 (a free port), prints `listening PORT` and forwards every connection to
127.0.0.1:TARGET. Ends when its standard input ends (the test that started it is gone) or on
SIGTERM.

--blackhole-first-after N (plain TCP, issue 26 R2): the first connection stops moving bytes both
ways once N bytes came from the client: nothing is read or written on it any more, and it is not
closed (TCP stays up; the windows fill: a wedged connection, as a black-holed route or a stalled
peer looks). Later connections are forwarded as they are.

--drop-first N --drop-after BYTES (issue 26 R10): the proxy ends the client's TLS itself (the
mock's server.pem and server.key from --tls-dir, a fresh TLS connection with ca.pem to the
mock; a thread per connection, TLS through memory BIOs so a TLS error at the end loses nothing
read before it), so it reads the client's HTTP/2 frames. Each of the first N connections forwards its
first BYTES bytes of HTTP/2 from the client to the mock, then stops reading from the client:
the client's writes fill the kernel's buffers, then block, so request bytes stay in the client's
own buffer. Once the client's socket has stopped taking bytes (its send queue in /proc/net/tcp
unchanged while the proxy reads nothing), the proxy ends the connection towards the client (a
TCP FIN, no TLS close_notify: a lost connection) and stops forwarding the mock's answers; after
the client has closed its side, the proxy reads everything the client's kernel still holds, so it
sees every byte the client ever wrote to that socket. Nothing after the first BYTES reaches the
mock. For each such connection it appends one JSON line to --report:
    {"connection": K, "forwarded": BYTES, "received": B, "blockedSendQueue": Q, "readAfterClose": R,
     "clientState": S, "ending": E, "endStreams": [L, ...]}
(B and R in bytes of HTTP/2, Q the client's send queue in bytes when it blocked, S its TCP state
when the proxy began to read again, E how the TLS stream ended).
"endStreams" lists, for every request whose END_STREAM the client wrote (and the proxy read), the
number after "n": in its body (-1 when there is none): the test puts the input line there.
Later connections are forwarded as they are.
"""
import argparse
import asyncio
import json
import os
import re
import select
import signal
import socket
import ssl
import sys
import threading
import time


class EndStreams:
    """Counts the requests whose END_STREAM a client's HTTP/2 byte stream holds (RFC 9113)."""

    def __init__(self):
        self.buf = bytearray()
        self.preface = False
        self.bodies = {}
        self.ended = []
        self.total = 0

    def feed(self, data):
        self.total += len(data)
        self.buf += data
        if not self.preface:
            if len(self.buf) < 24:
                return
            del self.buf[:24]
            self.preface = True
        at = 0
        while len(self.buf) - at >= 9:
            length = int.from_bytes(self.buf[at:at + 3], "big")
            if len(self.buf) - at < 9 + length:
                break
            kind, flags = self.buf[at + 3], self.buf[at + 4]
            stream = int.from_bytes(self.buf[at + 5:at + 9], "big") & 0x7FFFFFFF
            payload = bytes(self.buf[at + 9:at + 9 + length])
            at += 9 + length
            if kind == 0:  # DATA
                if flags & 0x8:  # PADDED
                    payload = payload[1:len(payload) - payload[0]]
                body = self.bodies.get(stream, b"") + payload
                if flags & 0x1:
                    self.bodies.pop(stream, None)
                    m = re.search(rb'"n":\s*(\d+)', body)
                    self.ended.append(int(m.group(1)) if m else -1)
                else:
                    self.bodies[stream] = body
            elif kind == 1 and flags & 0x1:  # HEADERS with END_STREAM: no body
                self.ended.append(-1)
        del self.buf[:at]


class TLSEnd:
    """One side of a TLS connection over a non-blocking socket, through memory BIOs."""

    def __init__(self, sock, context, server_side, hostname=None):
        self.sock = sock
        self.sock.setblocking(False)
        self.inc, self.out = ssl.MemoryBIO(), ssl.MemoryBIO()
        self.obj = context.wrap_bio(self.inc, self.out, server_side=server_side, server_hostname=hostname)
        self.pending_out = bytearray()
        self.error = None
        self.handshaken = False
        self.early = bytearray()  # plaintext to send once the handshake is done

    def send(self, data):
        """Encrypts `data` and sends what the socket takes (after the handshake)."""
        if not self.handshaken:
            self.early += data
            return
        self.obj.write(data)
        self.flush()

    def flush(self, wait=False):
        """Sends the ciphertext there is (with wait, all of it)."""
        self.pending_out += self.out.read()
        while self.pending_out:
            try:
                n = self.sock.send(self.pending_out)
            except BlockingIOError:
                if not wait:
                    return
                select.select([], [self.sock], [], 1)
                continue
            except OSError:
                self.pending_out.clear()
                return
            del self.pending_out[:n]

    def receive(self):
        """Reads ciphertext from the socket into the BIO; False at its end."""
        try:
            data = self.sock.recv(262144)
        except BlockingIOError:
            return True
        except OSError:
            data = b""
        if not data:
            self.inc.write_eof()
            return False
        self.inc.write(data)
        return True

    def plain(self):
        """The plaintext the BIO's records hold (the handshake first)."""
        chunks = []
        try:
            if not self.handshaken:
                self.obj.do_handshake()
                self.handshaken = True
                if self.early:
                    self.obj.write(bytes(self.early))
                    self.early.clear()
            while True:
                chunk = self.obj.read(262144)
                if not chunk:
                    break
                chunks.append(chunk)
        except (ssl.SSLWantReadError, ssl.SSLWantWriteError):
            pass
        except ssl.SSLError as e:
            self.error = self.error or repr(e)
        self.flush()
        return b"".join(chunks)


def tcp_row(local, remote):
    """The kernel's row for the TCP socket local -> remote (both (ip, port)): (state, tx_queue,
    rx_queue), or None when there is none."""
    def hexaddr(addr):
        ip = socket.inet_aton(addr[0])
        return "%08X:%04X" % (int.from_bytes(ip, "little"), addr[1])
    want = (hexaddr(local), hexaddr(remote))
    with open("/proc/net/tcp") as f:
        next(f)
        for line in f:
            cols = line.split()
            if (cols[1], cols[2]) == want:
                tx, rx = cols[4].split(":")
                return int(cols[3], 16), int(tx, 16), int(rx, 16)
    return None


async def main():
    # A parent may pass SIGTERM/SIGINT down blocked (the test runner's threads do).
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    p = argparse.ArgumentParser()
    p.add_argument("--target", type=int, required=True)
    p.add_argument("--blackhole-first-after", type=int, default=-1)
    p.add_argument("--tls-dir")
    p.add_argument("--drop-first", type=int, default=0)
    p.add_argument("--drop-after", type=int, default=0)
    p.add_argument("--report")
    args = p.parse_args()
    if args.drop_first and not (args.tls_dir and args.report):
        p.error("--drop-first needs --tls-dir and --report")
    count = 0
    held = []  # wedged connections, kept open

    async def pump(reader, writer, limit, on_limit):
        moved = 0
        try:
            while True:
                data = await reader.read(65536)
                if not data:
                    break
                if limit >= 0 and moved + len(data) >= limit:
                    writer.write(data[: max(0, limit - moved)])
                    on_limit()
                    return
                moved += len(data)
                writer.write(data)
                await writer.drain()
        except (ConnectionError, OSError, ssl.SSLError):
            pass
        try:
            writer.close()
        except Exception:
            pass

    async def handle(client_reader, client_writer):
        nonlocal count
        count += 1
        wedge = count == 1 and args.blackhole_first_after >= 0
        server_reader, server_writer = await asyncio.open_connection("127.0.0.1", args.target)
        state = {"wedged": False}
        tasks = []

        def wedge_now():
            state["wedged"] = True
            held.append((client_reader, client_writer, server_reader, server_writer))
            for t in tasks:
                t.cancel()

        up = asyncio.ensure_future(pump(client_reader, server_writer, args.blackhole_first_after if wedge else -1, wedge_now))
        down = asyncio.ensure_future(pump(server_reader, client_writer, -1, lambda: None))
        tasks.extend([down])
        await asyncio.gather(up, down, return_exceptions=True)
        if state["wedged"]:
            # Stop reading the client: its bytes stay in the kernel buffers (zero window).
            client_writer.transport.pause_reading()
            server_writer.transport.pause_reading()

    def tls_connection(client, number):
        """One connection with TLS ended here (threads, MemoryBIO: a TLS error at the end never
        loses what was read before it)."""
        upstream = TLSEnd(socket.create_connection(("127.0.0.1", args.target)), upstream_tls, False, "localhost")
        near = TLSEnd(client, server_tls, True)
        while not upstream.handshaken and not upstream.error:  # the proxy's own TLS to the mock first
            upstream.plain()
            upstream.flush(wait=True)
            if not upstream.handshaken:
                select.select([upstream.sock], [], [], 1)
                if not upstream.receive():
                    break
        dropping = number <= args.drop_first
        seen = EndStreams()
        forwarded = 0
        me, peer = client.getsockname(), client.getpeername()
        last = {"tx": -1, "same": 0}

        def blocked():
            row = tcp_row(peer, me)  # the client's socket
            if row is None:
                return True
            tx = row[1]
            last["same"] = last["same"] + 1 if tx == last["tx"] and tx > 0 else 0
            last["tx"] = tx
            return last["same"] >= 30  # 300 ms without a byte taken: its writes block

        reading_client = True
        deadline = 6000  # polls of 10 ms once stalled
        while True:
            socks = [upstream.sock] + ([near.sock] if reading_client else [])
            writes = [e.sock for e in (near, upstream) if e.pending_out or e.out.pending]
            r, w, _ = select.select(socks, writes, [], 0.01)
            for e in (near, upstream):
                if e.sock in w:
                    e.flush()
            if upstream.sock in r:
                if not upstream.receive():
                    break
                data = upstream.plain()
                if data:
                    near.send(data)
            if reading_client and near.sock in r:
                alive = near.receive()
                data = near.plain()
                if data:
                    if dropping:
                        seen.feed(data)
                        data = data[: max(0, args.drop_after - forwarded)]
                        forwarded += len(data)
                        if forwarded >= args.drop_after:
                            reading_client = False  # the stall: the client's bytes pile up
                    if data:
                        upstream.send(data)
                if not alive:
                    break
            if dropping and not reading_client:
                deadline -= 1
                if blocked() or deadline <= 0:
                    break
        queued = max(last["tx"], 0)
        upstream.sock.close()
        if not dropping:
            client.close()
            return
        # The drop: whole TLS records to the client, then a FIN (no close_notify): a lost connection.
        near.flush(wait=True)
        client.shutdown(socket.SHUT_WR)
        # The client closes (its FIN waits behind the bytes the kernel holds for it): its socket
        # leaves ESTABLISHED (1) and CLOSE_WAIT (8, our FIN seen, not yet closed) ...
        for _ in range(6000):
            if (tcp_row(peer, me) or (0,))[0] not in (1, 8):
                break
            time.sleep(0.01)
        closed_state = (tcp_row(peer, me) or (0,))[0]
        # ... then everything it wrote is read.
        before = seen.total
        client.setblocking(True)
        while near.receive():
            seen.feed(near.plain())
        seen.feed(near.plain())
        client.close()
        with lock, open(args.report, "a") as f:
            f.write(json.dumps({"connection": number, "forwarded": forwarded, "received": seen.total,
                                "blockedSendQueue": queued, "readAfterClose": seen.total - before, "clientState": closed_state,
                                "ending": near.error or "end of stream", "endStreams": seen.ended}) + "\n")

    listener = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    listener.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    if args.drop_first:
        # A small fixed receive buffer (no autotuning): the client blocks sooner.
        listener.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 65536)
    listener.bind(("127.0.0.1", 0))
    if args.drop_first:
        server_tls = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
        server_tls.load_cert_chain(os.path.join(args.tls_dir, "server.pem"), os.path.join(args.tls_dir, "server.key"))
        server_tls.set_alpn_protocols(["h2"])
        upstream_tls = ssl.create_default_context(cafile=os.path.join(args.tls_dir, "ca.pem"))
        upstream_tls.set_alpn_protocols(["h2"])
        lock = threading.Lock()
        listener.listen(64)

        def accept():
            nonlocal count
            while True:
                client, _ = listener.accept()
                count += 1
                threading.Thread(target=tls_connection, args=(client, count), daemon=True).start()
        threading.Thread(target=accept, daemon=True).start()
        port = listener.getsockname()[1]
    else:
        server = await asyncio.start_server(handle, sock=listener)
        port = server.sockets[0].getsockname()[1]
    print(f"listening {port}", flush=True)
    loop = asyncio.get_running_loop()
    await loop.run_in_executor(None, sys.stdin.read)
    os._exit(0)  # the held (wedged) connections are not waited for


if __name__ == "__main__":
    try:
        asyncio.run(main())
    except KeyboardInterrupt:
        pass
