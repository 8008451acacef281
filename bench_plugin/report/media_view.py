"""The images a case sent, for its HTML view: each read again from the suite's folder, or its reference alone.

Records keep references, never bytes (``core/media.py``). At report time an image file is read again, confined
to the folder of the suite file: a reference is data from ``results.jsonl`` like any other, so a ``file`` that
leads elsewhere, bytes that are not what the record's digest says, or bytes that are no image we know are shown
as the reference only. URLs are shown as text, never loaded: the page must not call out when it is opened.
"""

from __future__ import annotations

import base64
import html
from collections.abc import Iterator, Mapping
from pathlib import Path
from typing import Any

from bench_plugin.core.media import IMAGE_TYPES, digest, sniff
from bench_plugin.core.text_safety import shown

MAX_INLINE_BYTES = 2 * 1024 * 1024
"""A larger image is named, not embedded: pytest-html keeps every case's view in the page."""


def media_html(record: Mapping[str, Any], root: Path | None) -> str:
    """A ``<details>`` block with each image (and audio reference) of the case's messages; ``""`` when none.

    Args:
        record: the case record (``CaseRecord.to_dict()``).
        root: the folder the record's ``path`` is relative to (the run's root), or None to show references only.
    """
    references = list(_references(record))
    if not references:
        return ""
    folder = _suite_folder(record, root)
    figures = "".join(_figure(reference, folder) for reference in references)
    return f"<details open><summary>Media ({len(references)})</summary>{figures}</details>"


def _references(record: Mapping[str, Any]) -> Iterator[Mapping[str, Any]]:
    """Each media reference of the record's messages and transcript, once (by digest, else URL)."""
    seen: set[str] = set()
    for part in _parts_of([*(record.get("messages") or []), *(record.get("transcript") or [])]):
        key = str(part.get("sha256") or part.get("url") or "")
        if key not in seen:
            seen.add(key)
            yield part


def _parts_of(messages: list[Any]) -> Iterator[Mapping[str, Any]]:
    """The ``parts`` of each message that are mappings (a record is data from a file: anything may be there)."""
    for message in messages:
        parts = message.get("parts") if isinstance(message, Mapping) else None
        yield from (part for part in (parts if isinstance(parts, list) else []) if isinstance(part, Mapping))


def _suite_folder(record: Mapping[str, Any], root: Path | None) -> Path | None:
    path = record.get("path")
    if root is None or not isinstance(path, str) or not path:
        return None
    try:
        return (root / path).resolve().parent
    except (OSError, RuntimeError):
        return None


def _figure(reference: Mapping[str, Any], folder: Path | None) -> str:
    caption = f"<figcaption>{_text(describe_reference(reference))}</figcaption>"
    content = _image_bytes(reference, folder)
    if content is None:
        return f"<figure>{caption}</figure>"
    media_type = sniff(content[:16]) or ""
    encoded = base64.b64encode(content).decode("ascii")
    image = f'<img alt="{html.escape(str(reference.get("file")))}" src="data:{media_type};base64,{encoded}" ' \
            'style="max-width:320px;max-height:320px">'
    return f"<figure>{image}{caption}</figure>"


def describe_reference(reference: Mapping[str, Any]) -> str:
    """``image image/png pics/cat.png, 73 bytes, sha256 2623c363``, from a record's reference."""
    where = reference.get("file") or reference.get("url") or "data"
    text = f"{reference.get('type')} {reference.get('media_type') or ''} {where}".replace("  ", " ")
    if reference.get("sha256"):
        text += f", {reference.get('bytes')} bytes, sha256 {str(reference['sha256'])[:8]}"
    return text


def _image_bytes(reference: Mapping[str, Any], folder: Path | None) -> bytes | None:
    """The image file's bytes when they may be embedded: in the folder, small, the recorded ones, an image."""
    name, size = reference.get("file"), reference.get("bytes")
    if folder is None or reference.get("type") != "image" or not isinstance(name, str):
        return None
    if not isinstance(size, int) or size > MAX_INLINE_BYTES:
        return None
    content = _read_confined(folder, name)
    if content is None or digest(content) != reference.get("sha256") or sniff(content[:16]) not in IMAGE_TYPES:
        return None
    return content


def _read_confined(folder: Path, name: str) -> bytes | None:
    """At most ``MAX_INLINE_BYTES`` + 1 bytes of ``name`` when it resolves inside ``folder``; None otherwise."""
    try:
        file = (folder / name).resolve()
        if not file.is_relative_to(folder):
            return None
        with file.open("rb") as handle:
            return handle.read(MAX_INLINE_BYTES + 1)
    except (OSError, RuntimeError, ValueError):
        return None


def _text(value: str) -> str:
    return html.escape(shown(value), quote=False)
