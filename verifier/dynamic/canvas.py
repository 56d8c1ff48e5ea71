"""An RGB pixel canvas with rectangles and bitmap text, encoded as PNG with zlib alone.

Enough for a bar chart; it keeps matplotlib out of the dependencies.
"""

from __future__ import annotations

import struct
import zlib

from verifier.dynamic import glyphs

Color = tuple[int, int, int]


class Canvas:
    def __init__(self, width: int, height: int, background: Color = (255, 255, 255)) -> None:
        self.width = width
        self.height = height
        self.rows = [bytearray(bytes(background) * width) for _ in range(height)]

    def fill_rect(self, x0: int, y0: int, x1: int, y1: int, color: Color) -> None:
        """Fill the half-open box [x0, x1) x [y0, y1), clipped to the canvas."""
        x0, x1 = max(0, min(x0, x1)), min(self.width, max(x0, x1))
        y0, y1 = max(0, min(y0, y1)), min(self.height, max(y0, y1))
        if x0 >= x1:
            return
        span = bytes(color) * (x1 - x0)
        for y in range(y0, y1):
            self.rows[y][3 * x0 : 3 * x1] = span

    def text(self, x: int, y: int, text: str, color: Color = (0, 0, 0), scale: int = 2) -> None:
        """Draw `text` with its top-left corner at (x, y)."""
        for index, character in enumerate(text):
            left = x + index * text_width(" ", scale)
            for row, cells in enumerate(glyphs.glyph(character)):
                for column, cell in enumerate(cells):
                    if cell == "#":
                        top = y + row * scale
                        self.fill_rect(left + column * scale, top, left + (column + 1) * scale, top + scale, color)

    def png_bytes(self) -> bytes:
        raw = b"".join(b"\x00" + bytes(row) for row in self.rows)
        header = struct.pack(">IIBBBBB", self.width, self.height, 8, 2, 0, 0, 0)
        return (
            b"\x89PNG\r\n\x1a\n"
            + _chunk(b"IHDR", header)
            + _chunk(b"IDAT", zlib.compress(raw, 9))
            + _chunk(b"IEND", b"")
        )


def text_width(text: str, scale: int = 2) -> int:
    # One blank column between characters.
    return len(text) * (glyphs.WIDTH + 1) * scale


def _chunk(kind: bytes, data: bytes) -> bytes:
    return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data) & 0xFFFFFFFF)
