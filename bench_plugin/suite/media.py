"""Images and audio in a suite: content parts as people write them, and each source checked into a ``MediaPart``.

A message's ``content`` may be a list of parts, OpenAI's (``{type: text, text}``, ``{type: image_url,
image_url: {url}}``, ``{type: input_audio, input_audio: {data, format}}``) or our short ones (``{text: ...}``,
``{image: SOURCE}``, ``{audio: SOURCE}``); a task's ``images:`` and ``audio:`` (and a turn's) list sources. A
source is a file in the suite's folder, an ``http(s)`` URL or a ``data:`` URL, written as a template (a dataset
field can name it). Each is checked at collection, before any call: a file outside the folders the suite may
read, too large, or whose first bytes are no image (audio) we can send is an error at its key.
"""

from __future__ import annotations

import functools
import mimetypes
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_plugin.core.chat import Message
from bench_plugin.core.endpoints import ModelSpec
from bench_plugin.core.errors import CaseError
from bench_plugin.core.frozen import type_name
from bench_plugin.core.media import (
    DEFAULT_LIMITS,
    KINDS,
    MediaError,
    MediaPart,
    check_size,
    checked_type,
    decode_base64,
    digest,
    shown_size,
    split_data_url,
)
from bench_plugin.suite.paths import SuiteFolders
from bench_plugin.suite.templates import TemplateRenderer

MEDIA_KEYS = ("images", "audio")
"""A task's (or a turn's) lists of sources, and the kind of each: ``images`` are images, ``audio`` audio."""
PART_HINT = ("a part is text, {text: ...}, {image: SOURCE}, {audio: SOURCE}, {type: image_url, image_url: {url: "
             "SOURCE}} or {type: input_audio, input_audio: {data: BASE64, format: wav|mp3}}; a SOURCE is a file "
             "in the suite's folder, an http(s) URL or a data: URL")
NO_AUDIO = frozenset({"anthropic"})
"""Provider types whose API takes no audio input."""


@dataclass(frozen=True)
class MediaSpec:
    """One image or audio source as the suite writes it: a template rendered per case, at ``key`` and ``line``."""

    kind: str
    source: str
    key: str = ""
    line: int | None = None


@dataclass(frozen=True)
class Where:
    """Where a source is written, for its errors: the suite file, the key path and the 0-based line."""

    path: str | None
    key: str | None
    line: int | None

    def error(self, message: str, hint: str | None = None) -> CaseError:
        """A ``CaseError`` at this place."""
        return CaseError(message, path=self.path, line=self.line, key=self.key, hint=hint)


def part_of(item: Any) -> tuple[str, str, tuple[str, ...]]:
    """``(kind, text or source, the keys that hold it)`` of one content part; kind is text, image or audio.

    Raises:
        ValueError: a part of none of the known shapes.
    """
    if isinstance(item, str):
        return "text", item, ()
    if not isinstance(item, Mapping):
        raise ValueError(f"a content part is {type_name(item)}")
    for kind in ("text", "image", "audio"):
        if isinstance(item.get(kind), str):
            return kind, item[kind], (kind,)
    if "image_url" in item:
        return _image_url(item["image_url"])
    if isinstance(item.get("input_audio"), Mapping):
        return _input_audio(item["input_audio"])
    raise ValueError(f"a content part with keys {', '.join(map(str, item)) or 'none'} is not text, image or audio")


def _image_url(value: Any) -> tuple[str, str, tuple[str, ...]]:
    if isinstance(value, str):
        return "image", value, ("image_url",)
    if isinstance(value, Mapping) and isinstance(value.get("url"), str):
        return "image", value["url"], ("image_url", "url")
    raise ValueError("image_url must be a URL or {url: URL}")


def _input_audio(value: Mapping[str, Any]) -> tuple[str, str, tuple[str, ...]]:
    data, fmt = value.get("data"), value.get("format", "wav")
    if not isinstance(data, str) or fmt not in ("wav", "mp3"):
        raise ValueError("input_audio must be {data: BASE64, format: wav|mp3}")
    media_type = "audio/wav" if fmt == "wav" else "audio/mpeg"
    return "audio", f"data:{media_type};base64,{data}", ("input_audio", "data")


def resolve_media(
    kind: str,
    source: str,
    folders: SuiteFolders | None,
    where: Where,
    limits: Mapping[str, int] = DEFAULT_LIMITS,
    prefix: str = "",
) -> MediaPart:
    """The part a rendered source names, checked: a file (confined, sized, sniffed), a URL, or ``data:``.

    Raises:
        CaseError: at ``where``: a file outside the folders or missing, too many bytes, bytes of an unknown
            type (or of the other kind), data that is not base64, audio from a URL.
    """
    text = source.strip()
    try:
        if text.startswith(("http://", "https://")):
            return _url_part(kind, text, where)
        if text.startswith("data:"):
            return _data_part(kind, text, limits[kind])
        return _file_part(kind, text, folders, where, limits[kind])
    except MediaError as exc:
        raise where.error(f"{prefix}{exc}", hint=_limit_hint(kind, limits[kind])) from None
    except CaseError as exc:  # the file's confinement, at the same key: which part of which message it is
        raise where.error(f"{prefix}{exc.message}", hint=exc.hint) from None


def _limit_hint(kind: str, limit: int) -> str:
    size = shown_size(limit)
    what = "an image must be PNG, JPEG, GIF or WebP" if kind == "image" else "audio must be WAV or MP3"
    return f"{what}, at most {size} (a suite sets its own with media_limits: {{{kind}_mb: N}})"


def media_limits(written: Mapping[str, float]) -> dict[str, int]:
    """The bytes each kind may hold: the suite's ``media_limits:`` (``image_mb``, ``audio_mb``) over the defaults."""
    limits = dict(DEFAULT_LIMITS)
    for kind in KINDS:
        if f"{kind}_mb" in written:
            limits[kind] = int(written[f"{kind}_mb"] * 1024 * 1024)
    return limits


def _url_part(kind: str, url: str, where: Where) -> MediaPart:
    if kind == "audio":
        raise where.error("audio cannot come from a URL: the APIs take audio as data",
                          hint="give a file in the suite's folder, or a data:audio/wav;base64,... URL")
    guessed, _ = mimetypes.guess_type(url.split("?", 1)[0])  # what the name says; the endpoint reads the bytes
    return MediaPart(kind, guessed if guessed and guessed.startswith("image/") else "", url=url)


def _data_part(kind: str, url: str, limit: int) -> MediaPart:
    _, payload = split_data_url(url)
    check_size(kind, len(payload) * 3 // 4 - 2, limit, "the data: URL")  # before decoding it: base64 is 4/3 of it
    content = decode_base64(payload, "the data: URL")
    check_size(kind, len(content), limit, "the data: URL")
    media_type = checked_type(kind, content, "the data: URL")
    return MediaPart(kind, media_type, data=payload, size=len(content), sha256=digest(content))


def _file_part(kind: str, name: str, folders: SuiteFolders | None, where: Where, limit: int) -> MediaPart:
    if folders is None:
        raise where.error(f"{kind} file {name} needs the suite's folder")
    file = folders.confine(name, what=f"{kind} file", path=where.path, key=where.key, line=where.line)
    try:
        stat = file.stat() if file.is_file() else None
        if stat is None:
            raise where.error(f"{kind} file {name} does not exist in the suite's folder ({folders.root})")
        check_size(kind, stat.st_size, limit, f"{kind} file {name}")
        size, head, sha256 = _read_file(str(file), stat.st_size, stat.st_mtime_ns)
    except OSError as exc:
        raise where.error(f"cannot read {kind} file {name}: {exc.strerror or exc}") from None
    check_size(kind, size, limit, f"{kind} file {name}")  # it may have grown since the stat
    media_type = checked_type(kind, head, f"{kind} file {name}")
    return MediaPart(kind, media_type, file=_shown(file, folders), path=str(file), size=size, sha256=sha256)


@functools.lru_cache(maxsize=1024)
def _read_file(path: str, size: int, mtime_ns: int) -> tuple[int, bytes, str]:
    """(size, first bytes, SHA-256) of a file, read once per version: a dataset's rows may all name one image."""
    content = Path(path).read_bytes()
    return len(content), content[:16], digest(content)


def _shown(file: Path, folders: SuiteFolders) -> str:
    """The file as records name it: relative to the suite's folder (an allowed folder's: its full path)."""
    return file.relative_to(folders.root).as_posix() if file.is_relative_to(folders.root) else str(file)


def parts_from_data(
    content: Sequence[Any],
    folders: SuiteFolders | None,
    where: Where,
    shown: str = "",
    limits: Mapping[str, int] = DEFAULT_LIMITS,
) -> tuple[str, tuple[MediaPart, ...]]:
    """A dataset message's list ``content``: its texts joined by new lines, and its media checked.

    Raises:
        CaseError: at ``where``, for a part of no known shape or a source that cannot be sent.
    """
    texts: list[str] = []
    parts: list[MediaPart] = []
    for number, item in enumerate(content):
        try:
            kind, value, _ = part_of(item)
        except ValueError as exc:
            raise where.error(f"{shown}content part {number}: {exc}", hint=PART_HINT) from None
        if kind == "text":
            texts.append(value)
        else:
            parts.append(resolve_media(kind, value, folders, where, limits, f"{shown}content part {number}: "))
    return "\n".join(texts), tuple(parts)


def with_parts(messages: tuple[Message, ...], parts: tuple[MediaPart, ...]) -> tuple[Message, ...]:
    """The messages with ``parts`` added to the last user message (one of its own when there is none)."""
    if not parts:
        return messages
    at = next((i for i in range(len(messages) - 1, -1, -1) if messages[i].role == "user"), None)
    if at is None:
        return (*messages, Message("user", "", parts=parts))
    message = messages[at]
    joined = Message(message.role, message.content, name=message.name, parts=(*message.parts, *parts))
    return (*messages[:at], joined, *messages[at + 1:])


_AUDIO_HINT = ("run this task on a model that takes audio (e.g. openai:gpt-4o-audio-preview), or list the models "
               "it runs under the task's models:")


def refuse_audio(model: ModelSpec, messages: Sequence[Message], where: Where, hint: str = _AUDIO_HINT) -> None:
    """Raises: CaseError when the messages carry audio and the model's API takes none."""
    if model.provider.type not in NO_AUDIO:
        return
    if any(part.kind == "audio" for message in messages for part in message.parts):
        raise where.error(f"model '{model.name}' ({model.provider.type}) does not take audio input", hint=hint)


def render_media(
    renderer: TemplateRenderer, specs: Sequence[MediaSpec], scope: Mapping[str, Any], path: str | None
) -> tuple[MediaPart, ...]:
    """Each source rendered for a case and checked (``resolve_media``).

    Raises:
        CaseError: at the source's key: a template that fails, or a source that cannot be sent.
    """
    return tuple(
        resolve_media(spec.kind, renderer.render(spec.source, scope, key=spec.key, line=spec.line),
                      renderer.folders, Where(path, spec.key, spec.line), renderer.media_limits)
        for spec in specs
    )
