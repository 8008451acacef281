"""The images and audio of a request the mock server received, in either wire format: their SHA-256 digests.

OpenAI: ``image_url`` parts (a ``data:`` URL, or a URL whose text is hashed) and ``input_audio`` parts;
Anthropic: ``image`` blocks (a ``base64`` source, or a ``url`` one). A rule's ``image_sha256`` matches a request
that carries media whose digest starts with it (``mock/rules.py``).
"""

from __future__ import annotations

import base64
import binascii
import hashlib
from collections.abc import Iterator, Mapping
from typing import Any


def media_digests(body: Mapping[str, Any]) -> frozenset[str]:
    """The SHA-256 (hex) of each image or audio clip of the request's messages; of the URL's text for a URL."""
    messages = body.get("messages")
    if not isinstance(messages, list):
        return frozenset()
    return frozenset(_digest(payload) for message in messages if isinstance(message, dict)
                     for payload in _payloads(message.get("content")))


def _payloads(content: Any) -> Iterator[bytes]:
    """The bytes of every media part of one message's ``content`` (a URL's text for a URL)."""
    if not isinstance(content, list):
        return
    for part in content:
        if isinstance(part, dict):
            found = _payload(part)
            if found is not None:
                yield found


def _payload(part: Mapping[str, Any]) -> bytes | None:
    kind = part.get("type")
    if kind == "image_url":
        url = part.get("image_url", {}).get("url") if isinstance(part.get("image_url"), dict) else None
        return _from_url(url) if isinstance(url, str) else None
    if kind == "input_audio" and isinstance(part.get("input_audio"), dict):
        return _decoded(part["input_audio"].get("data"))
    if kind == "image" and isinstance(part.get("source"), dict):
        source = part["source"]
        return _decoded(source.get("data")) if source.get("type") == "base64" else _text(source.get("url"))
    return None


def _from_url(url: str) -> bytes | None:
    if url.startswith("data:"):
        return _decoded(url.partition(",")[2])
    return url.encode("utf-8")


def _decoded(data: Any) -> bytes | None:
    if not isinstance(data, str):
        return None
    try:
        return base64.b64decode(data, validate=True)
    except (binascii.Error, ValueError):
        return None


def _text(value: Any) -> bytes | None:
    return value.encode("utf-8") if isinstance(value, str) else None


def _digest(payload: bytes) -> str:
    return hashlib.sha256(payload).hexdigest()
