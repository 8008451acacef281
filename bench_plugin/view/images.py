"""Image parts of a case (``{"type": "image", "media_type", "file" | "url", "bytes", "sha256"}``) and which may show.

Every part is shown as its reference. The image itself is served only from a file inside a folder ``bench view``
was given (the run's folder) or the folder of the case's suite when that lies inside the folder ``bench view`` runs
in, of a raster type, at most ``MAX_IMAGE_BYTES`` and, when the part names a digest, with that digest. A URL is
never fetched nor made a link: the page loads nothing from outside the machine.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_plugin.results.record import CaseRecord

IMAGE_TYPES = {"image/png": b"\x89PNG", "image/jpeg": b"\xff\xd8\xff", "image/gif": b"GIF8", "image/webp": b"RIFF"}
"""The media types served, each with how its files start (SVG, which may hold scripts, is never served)."""
MAX_IMAGE_BYTES = 20 * 1024 * 1024
_WHERE = ("messages", "transcript", "turns", "conversation", "agent")  # the fields image parts may be in


@dataclass(frozen=True)
class ImagePart:
    """One image part of a case, as its record names it (every value as text, or None)."""

    index: int
    where: str
    media_type: str | None
    file: str | None
    url: str | None
    size: int | None
    sha256: str | None


def image_parts(record: CaseRecord) -> list[ImagePart]:
    """Every image part in the case's messages, transcript, turns, conversation and agent steps, in order."""
    found = [(where, part) for name in _WHERE for where, part in _parts(getattr(record, name), name)]
    return [ImagePart(index, where, _text(part.get("media_type")), _text(part.get("file")), _text(part.get("url")),
                      _size(part.get("bytes")), _text(part.get("sha256")))
            for index, (where, part) in enumerate(found)]


def _parts(value: Any, where: str) -> Iterator[tuple[str, Mapping[str, Any]]]:
    """(where, part) for each mapping whose ``type`` is ``image``, depth first (records are bounded in depth)."""
    stack: list[tuple[str, Any]] = [(where, value)]
    while stack:
        place, item = stack.pop()
        if isinstance(item, Mapping):
            if item.get("type") == "image":
                yield place, item
            stack.extend(reversed([(f"{place}.{key}", child) for key, child in item.items()]))
        elif isinstance(item, list):
            stack.extend(reversed([(f"{place}[{i}]", child) for i, child in enumerate(item)]))


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None


def _size(value: Any) -> int | None:
    return value if isinstance(value, int) and not isinstance(value, bool) else None


def image_roots(record: CaseRecord, run_folder: Path, base: Path) -> list[Path]:
    """The folders a case's image files may be in: its suite's folder (inside ``base``), then the run's folder."""
    roots = [run_folder.resolve()]
    suite_folder = (base / record.path).resolve().parent
    if suite_folder.is_relative_to(base.resolve()) and suite_folder.is_dir():
        roots.insert(0, suite_folder)
    return roots


def image_file(part: ImagePart, roots: Sequence[Path]) -> tuple[Path, str] | None:
    """The file and media type to serve for ``part``; None when it may not show (see the module docstring)."""
    if part.file is None or part.media_type not in IMAGE_TYPES:
        return None
    for root in roots:
        try:
            candidate = (root / part.file).resolve()
            if any(candidate.is_relative_to(allowed) for allowed in roots) and candidate.is_file():
                return (candidate, part.media_type) if _fits(candidate, part) else None
        except (OSError, ValueError):  # a NUL in the name, a file that cannot be read: not shown
            return None
    return None


def _fits(path: Path, part: ImagePart) -> bool:
    """Whether the file is no larger than allowed, starts as its media type does and has the part's digest."""
    if path.stat().st_size > MAX_IMAGE_BYTES:
        return False
    data = path.read_bytes()
    if not data.startswith(IMAGE_TYPES[str(part.media_type)]):
        return False
    return part.sha256 is None or hashlib.sha256(data).hexdigest() == part.sha256.lower()
