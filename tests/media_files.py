"""Small media files made byte for byte the same every time: the tests' images and audio, and suites/vision's."""

from __future__ import annotations

import struct
import zlib
from collections.abc import Callable
from pathlib import Path

RGB = tuple[int, int, int]
WHITE, BLACK, RED, GREEN, BLUE = (255, 255, 255), (0, 0, 0), (220, 30, 30), (30, 160, 60), (40, 70, 200)


def png(width: int, height: int, rgb: RGB) -> bytes:
    """A PNG of one colour."""
    return png_of(lambda x, y: rgb, width, height)


def png_of(colour: Callable[[int, int], RGB], width: int, height: int) -> bytes:
    """A PNG whose pixel (x, y) is ``colour(x, y)``: 8-bit RGB, zlib level 9, the same bytes every time."""
    raw = b"".join(b"\x00" + b"".join(bytes(colour(x, y)) for x in range(width)) for y in range(height))

    def chunk(kind: bytes, data: bytes) -> bytes:
        return struct.pack(">I", len(data)) + kind + data + struct.pack(">I", zlib.crc32(kind + data))

    header = struct.pack(">IIBBBBB", width, height, 8, 2, 0, 0, 0)
    return b"\x89PNG\r\n\x1a\n" + chunk(b"IHDR", header) + chunk(b"IDAT", zlib.compress(raw, 9)) + chunk(b"IEND", b"")


def wav(samples: int = 800, rate: int = 8000) -> bytes:
    """A WAV of silence: 8-bit mono."""
    data = b"\x80" * samples
    fmt = struct.pack("<HHIIHH", 1, 1, rate, rate, 1, 8)
    body = b"WAVE" + b"fmt " + struct.pack("<I", len(fmt)) + fmt + b"data" + struct.pack("<I", len(data)) + data
    return b"RIFF" + struct.pack("<I", len(body)) + body


def vision_images() -> dict[str, bytes]:
    """The images of ``suites/vision`` by file name (``python tests/media_files.py`` writes them there)."""
    return {
        "red.png": png(32, 32, RED),
        "stripes.png": png_of(lambda x, y: BLUE if (y // 4) % 2 else WHITE, 32, 24),  # three blue stripes
        "checker.png": png_of(lambda x, y: BLACK if (x // 8 + y // 8) % 2 else WHITE, 32, 32),
        "corner.png": png_of(lambda x, y: GREEN if x < 12 and y < 12 else WHITE, 32, 32),  # top left
    }


if __name__ == "__main__":
    folder = Path(__file__).resolve().parents[1] / "suites" / "vision" / "images"
    folder.mkdir(parents=True, exist_ok=True)
    for name, content in vision_images().items():
        (folder / name).write_bytes(content)
