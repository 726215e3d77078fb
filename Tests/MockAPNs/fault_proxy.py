#!/usr/bin/env python3
"""A TCP fault proxy for push-send's tests (loopback only, standard library only).

    python3 fault_proxy.py --target PORT [--blackhole-first-after BYTES]

Listens on 127.0.0.1 (a free port), prints `listening PORT` and forwards every connection to
127.0.0.1:TARGET. With --blackhole-first-after N, the first connection stops moving bytes both
ways once N bytes came from the client: nothing is read or written on it any more, and it is
not closed (TCP stays up; the windows fill: a wedged connection, as a black-holed route or a
stalled peer looks). Later connections are forwarded as they are. Ends when its standard input
ends (the test that started it is gone) or on SIGTERM.
"""
import argparse
import asyncio
import os
import signal
import sys


async def main():
    # A parent may pass SIGTERM/SIGINT down blocked (the test runner's threads do).
    signal.pthread_sigmask(signal.SIG_UNBLOCK, {signal.SIGTERM, signal.SIGINT})
    p = argparse.ArgumentParser()
    p.add_argument("--target", type=int, required=True)
    p.add_argument("--blackhole-first-after", type=int, default=-1)
    args = p.parse_args()
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
        except (ConnectionError, OSError):
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

    server = await asyncio.start_server(handle, "127.0.0.1", 0)
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
