#!/usr/bin/env python3
"""Regenerates lighthouse.png (160x120 RGB, about 1.3 KB) with zlib and struct only."""
import struct
import zlib

W, H, HORIZON = 160, 120, 78


def pixel(x, y):
    if y < HORIZON:  # sky: orange to deep blue, with a setting sun
        t = y / HORIZON
        rgb = (int(250 - 180 * t), int(170 - 110 * t), int(90 + 80 * t))
        if (x - 112) ** 2 + (y - 70) ** 2 < 16 * 16:
            rgb = (255, 214, 102)
    else:  # sea, with the sun's reflection in stripes
        t = (y - HORIZON) / (H - HORIZON)
        rgb = (int(20 + 20 * t), int(70 + 30 * t), int(120 + 40 * t))
        if (y // 3) % 3 == 0 and abs(x - 112) < 22 - (y - HORIZON) // 3:
            rgb = (240, 190, 90)
    if 40 <= x < 52 and 30 <= y < HORIZON + 4:  # tower, red and white bands
        rgb = (200, 40, 40) if ((y - 30) // 8) % 2 == 0 else (245, 245, 240)
    if 38 <= x < 54 and 22 <= y < 30:  # lamp
        rgb = (255, 240, 160)
    if 36 <= x < 56 and HORIZON <= y < HORIZON + 6:  # rock
        rgb = (60, 60, 60)
    return bytes(rgb)


def chunk(kind, data):
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)


raw = b"".join(b"\x00" + b"".join(pixel(x, y) for x in range(W)) for y in range(H))
png = (b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", struct.pack(">IIBBBBB", W, H, 8, 2, 0, 0, 0))
       + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b""))
with open(__file__.rsplit("/", 1)[0] + "/lighthouse.png" if "/" in __file__ else "lighthouse.png", "wb") as f:
    f.write(png)
