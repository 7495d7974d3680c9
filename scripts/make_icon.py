"""Draws the extension icon (client-vscode/images/icon.png, 128×128 RGBA) with no image library.

A rounded teal square; a white wire runs from a tool node (ring) on the left through a
bend to a filled node on the right, with a small spark above. Shapes are signed-distance
functions sampled 4×4 per pixel for anti-aliasing; the PNG is written with zlib.

Usage: ``python scripts/make_icon.py [OUT]``. Re-run after changing a shape; the PNG is
committed, so packaging does not need this script.
"""

from __future__ import annotations

import math
import struct
import sys
import zlib
from pathlib import Path

SIZE = 128
SAMPLES = 4
BACKGROUND = (14, 116, 144)
FOREGROUND = (255, 255, 255)
SPARK = (253, 224, 71)


def rounded_square(x: float, y: float) -> float:
    """Signed distance to the icon's rounded square (negative inside)."""
    half, radius = SIZE / 2 - 2, 26.0
    qx, qy = abs(x - SIZE / 2) - (half - radius), abs(y - SIZE / 2) - (half - radius)
    outside = math.hypot(max(qx, 0), max(qy, 0))
    return outside + min(max(qx, qy), 0) - radius


def segment(x: float, y: float, ax: float, ay: float, bx: float, by: float) -> float:
    """Distance from (x, y) to the segment a-b."""
    dx, dy = bx - ax, by - ay
    t = max(0.0, min(1.0, ((x - ax) * dx + (y - ay) * dy) / (dx * dx + dy * dy)))
    return math.hypot(x - ax - t * dx, y - ay - t * dy)


WIRE = [(40, 78), (58, 78), (70, 50), (88, 50)]


def wire(x: float, y: float) -> float:
    """Signed distance to the white shapes: the wire, a ring node and a filled node."""
    line = min(segment(x, y, *WIRE[i], *WIRE[i + 1]) for i in range(len(WIRE) - 1)) - 4.5
    ring = abs(math.hypot(x - 30, y - 78) - 10) - 4.5
    dot = math.hypot(x - 98, y - 50) - 12
    return min(line, ring, dot)


def spark(x: float, y: float) -> float:
    """Signed distance to a four-pointed star above the right node."""
    cx, cy, r = 98, 24, 11
    ux, uy = abs(x - cx), abs(y - cy)
    return (ux ** 0.5 + uy ** 0.5) - r ** 0.5


def pixel(px: int, py: int) -> tuple[int, int, int, int]:
    """Averages SAMPLES² samples of one pixel into straight-alpha RGBA."""
    r = g = b = a = 0.0
    for sy in range(SAMPLES):
        for sx in range(SAMPLES):
            x, y = px + (sx + 0.5) / SAMPLES, py + (sy + 0.5) / SAMPLES
            if rounded_square(x, y) > 0:
                continue
            colour = FOREGROUND if wire(x, y) <= 0 else SPARK if spark(x, y) <= 0 else BACKGROUND
            r, g, b, a = r + colour[0], g + colour[1], b + colour[2], a + 1
    if a == 0:
        return (0, 0, 0, 0)
    return (round(r / a), round(g / a), round(b / a), round(255 * a / SAMPLES ** 2))


def png(rows: list[bytes]) -> bytes:
    """A PNG file of 8-bit RGBA rows (filter 0)."""
    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", SIZE, SIZE, 8, 6, 0, 0, 0)
    raw = b"".join(b"\x00" + row for row in rows)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def main() -> None:
    """Renders the icon and writes it."""
    out = Path(sys.argv[1]) if len(sys.argv) > 1 else Path(__file__).resolve().parent.parent / "client-vscode/images/icon.png"
    rows = [b"".join(bytes(pixel(x, y)) for x in range(SIZE)) for y in range(SIZE)]
    out.parent.mkdir(parents=True, exist_ok=True)
    out.write_bytes(png(rows))
    print(out)


if __name__ == "__main__":
    main()
