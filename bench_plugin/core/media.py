"""Images and audio that go with a message's text: where each comes from, what it is, and its bytes when sent.

A ``MediaPart`` names exactly one source: a file in the suite's folder (resolved and checked at collection),
a URL (sent as it is: the model's endpoint fetches it), or base64 data (a dataset's). Records keep only its
reference (``reference``: kind, media type, file name or URL, size, SHA-256), never the bytes; a provider reads
the bytes when it sends them (``part_bytes``), and a file that changed since collection is refused.
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from dataclasses import dataclass
from pathlib import Path
from typing import Any

KINDS = ("image", "audio")
IMAGE_TYPES = ("image/png", "image/jpeg", "image/gif", "image/webp")
AUDIO_TYPES = ("audio/wav", "audio/mpeg")
DEFAULT_LIMITS = {"image": 20 * 1024 * 1024, "audio": 25 * 1024 * 1024}
"""Bytes a part may hold by default: what the OpenAI and Anthropic APIs accept at most per image (20 MB) and
per audio input (25 MB)."""

_AUDIO_FORMATS = {"audio/wav": "wav", "audio/mpeg": "mp3"}
_SIGNATURES: tuple[tuple[int, bytes, str], ...] = (
    (0, b"\x89PNG\r\n\x1a\n", "image/png"),
    (0, b"\xff\xd8\xff", "image/jpeg"),
    (0, b"GIF87a", "image/gif"),
    (0, b"GIF89a", "image/gif"),
    (0, b"ID3", "audio/mpeg"),
    (0, b"\xff\xfb", "audio/mpeg"),
    (0, b"\xff\xf3", "audio/mpeg"),
    (0, b"\xff\xf2", "audio/mpeg"),
)
_RIFF_FORMS = {b"WEBP": "image/webp", b"WAVE": "audio/wav"}


class MediaError(ValueError):
    """Media that cannot be sent: an unknown type, too many bytes, data that is not base64, a changed file."""


@dataclass(frozen=True)
class MediaPart:
    """One image or audio clip of a message.

    Attributes:
        kind: ``image`` or ``audio``.
        media_type: what the bytes are (sniffed from them for a file or data): ``image/png``, ``audio/wav``...
            For a URL, what its name says, or ``""`` when it does not say.
        file: the file as the suite names it, relative to the suite's folder (with ``path``).
        path: the file, resolved inside the folders the suite may read.
        url: an ``http(s)`` URL the endpoint fetches.
        data: the bytes as base64 (a dataset's ``data:`` URL or ``input_audio``).
        size: the number of bytes (None for a URL: never fetched here).
        sha256: their SHA-256, hex (None for a URL).
    """

    kind: str
    media_type: str
    file: str | None = None
    path: str | None = None
    url: str | None = None
    data: str | None = None
    size: int | None = None
    sha256: str | None = None

    @property
    def source(self) -> str:
        """``file``, ``url`` or ``data``."""
        if self.path is not None:
            return "file"
        return "url" if self.url is not None else "data"

    def reference(self) -> dict[str, Any]:
        """What records keep of the part: never its bytes.

        ``{"type", "media_type", "file" | "url" | "source": "data", "bytes", "sha256"}``.
        """
        out: dict[str, Any] = {"type": self.kind, "media_type": self.media_type}
        if self.source == "file":
            out["file"] = self.file
        elif self.source == "url":
            out["url"] = self.url
        else:
            out["source"] = "data"
        out["bytes"] = self.size
        out["sha256"] = self.sha256
        return out

    def describe(self) -> str:
        """One line for a person: ``image image/png pics/cat.png, 412 bytes, sha256 3f2a9c01``."""
        where = self.file or self.url or "data"
        if self.sha256 is None:
            return f"{self.kind} {where}"
        return f"{self.kind} {self.media_type} {where}, {self.size} bytes, sha256 {self.sha256[:8]}"


def sniff(head: bytes) -> str | None:
    """The media type the first bytes show (PNG, JPEG, GIF, WebP, WAV, MP3), or None."""
    if head[:4] == b"RIFF" and head[8:12] in _RIFF_FORMS:
        return _RIFF_FORMS[head[8:12]]
    return next((kind for at, magic, kind in _SIGNATURES if head[at:at + len(magic)] == magic), None)


def kind_of(media_type: str) -> str:
    """``image`` or ``audio``: the first half of a media type."""
    return media_type.partition("/")[0]


def checked_type(kind: str, content: bytes, shown: str) -> str:
    """The media type of ``content``, which must be a ``kind`` we can send.

    Raises:
        MediaError: bytes that are none of the known types, or of the other kind.
    """
    found = sniff(content[:16])
    known = IMAGE_TYPES if kind == "image" else AUDIO_TYPES
    if found is None or found not in known:
        what = f"is {found}" if found else "is of an unknown type"
        raise MediaError(f"{shown} {what}, expected {kind}: {', '.join(known)} (read from its first bytes)")
    return found


def check_size(kind: str, size: int, limit: int, shown: str) -> None:
    """Raises: MediaError when ``size`` bytes are more than ``limit``."""
    if size > limit:
        raise MediaError(f"{shown} is {shown_size(size)}, more than the {kind} limit of {shown_size(limit)}")


def shown_size(size: int) -> str:
    """``20.0 MB``, ``3.5 KB``, ``104 bytes``."""
    if size >= 1024 * 1024:
        return f"{size / 1024 / 1024:.1f} MB"
    return f"{size / 1024:.1f} KB" if size >= 1024 else f"{size} bytes"


def decode_base64(text: str, shown: str) -> bytes:
    """Raises: MediaError for text that is not base64."""
    try:
        return base64.b64decode(text, validate=True)
    except (binascii.Error, ValueError) as exc:
        raise MediaError(f"{shown} is not base64 data ({exc})") from None


def split_data_url(url: str) -> tuple[str, str]:
    """``data:image/png;base64,AAAA`` -> (``image/png``, ``AAAA``).

    Raises:
        MediaError: a data URL that is not base64.
    """
    head, comma, payload = url[len("data:"):].partition(",")
    media_type, _, encoding = head.partition(";")
    if not comma or encoding != "base64":
        raise MediaError("a data: URL must be data:MEDIA/TYPE;base64,DATA")
    return media_type, payload


def digest(content: bytes) -> str:
    """SHA-256 of ``content``, hex."""
    return hashlib.sha256(content).hexdigest()


def part_bytes(part: MediaPart) -> bytes:
    """The bytes of a file or data part (a file is read again, and must still be what was checked).

    Raises:
        MediaError: a URL part (it has no bytes here), or a file that changed or cannot be read.
    """
    if part.data is not None:
        return base64.b64decode(part.data)
    if part.path is None:
        raise MediaError(f"{part.describe()} is a URL: its bytes are the endpoint's to fetch")
    try:
        with Path(part.path).open("rb") as handle:
            content = handle.read((part.size or 0) + 1)
    except OSError as exc:
        raise MediaError(f"cannot read {part.file}: {exc.strerror or exc}") from None
    if digest(content) != part.sha256:
        raise MediaError(f"{part.file} changed since the suite was collected")
    return content


def part_base64(part: MediaPart) -> str:
    """The part's bytes as base64 (a data part's as it came)."""
    return part.data if part.data is not None else base64.b64encode(part_bytes(part)).decode("ascii")


def data_url(part: MediaPart) -> str:
    """The part as the URL OpenAI's ``image_url`` takes: its own URL, or a ``data:`` URL of its bytes."""
    if part.url is not None:
        return part.url
    return f"data:{part.media_type};base64,{part_base64(part)}"


def audio_format(part: MediaPart) -> str:
    """OpenAI's ``input_audio.format`` of an audio part: ``wav`` or ``mp3``."""
    return _AUDIO_FORMATS.get(part.media_type, "wav")
