"""A task's (or a prompt's) ``messages:``: a list written in the YAML, or a template that gives one from data.

Chat-format datasets (inspect_ai's ``input`` as a list of messages, a JSONL ``messages`` column)
hold whole conversations; ``messages: "{{ messages }}"`` sends a row's conversation as it is. What
comes from data is data: its contents are not rendered as templates.
"""

from __future__ import annotations

import json
from collections.abc import Mapping, Sequence
from typing import Any

from bench_plugin.core.chat import Message
from bench_plugin.core.errors import CaseError
from bench_plugin.core.frozen import type_name
from bench_plugin.core.media import DEFAULT_LIMITS
from bench_plugin.suite.loader import KeyPath, LoadedSuite, format_key_path
from bench_plugin.suite.media import MEDIA_KEYS, MediaSpec, Where, part_of, parts_from_data, render_media
from bench_plugin.suite.paths import SuiteFolders
from bench_plugin.suite.sources import TemplateSpec
from bench_plugin.suite.spec import MessageSpec
from bench_plugin.suite.templates import TemplateRenderer

ROLES = ("system", "user", "assistant")
_HINT = ('give a list of {role: system|user|assistant, content: TEXT or a list of parts}, '
         'e.g. messages: "{{ row.messages }}"')


def build_messages(loaded: LoadedSuite, raw: Any, base: KeyPath) -> tuple[MessageSpec, ...] | TemplateSpec:
    """The ``messages:`` at ``base`` (schema-valid): each entry's templates, or the one template that gives them all."""
    if isinstance(raw, str):
        return TemplateSpec(raw, key=format_key_path(base), line=loaded.lines.line_of(base))
    return tuple(_message_spec(loaded, message, (*base, i)) for i, message in enumerate(raw))


def _message_spec(loaded: LoadedSuite, message: Mapping[str, Any], path: KeyPath) -> MessageSpec:
    content = message.get("content")
    if isinstance(content, list):
        text, media = _parts(loaded, content, (*path, "content"))
        return MessageSpec(role=message["role"], content=text, name=message.get("name"), media=media)
    return MessageSpec(role=message["role"], content=_content(loaded, message, path), name=message.get("name"))


def _content(loaded: LoadedSuite, message: Mapping[str, Any], path: KeyPath) -> TemplateSpec | None:
    for option, from_file in (("content_file", True), ("content", False)):  # the file wins, as for prompts
        if option in message:
            where = (*path, option)
            return TemplateSpec(message[option], from_file=from_file, key=format_key_path(where),
                                line=loaded.lines.line_of(where))
    return None


def _parts(loaded: LoadedSuite, content: list[Any], path: KeyPath) -> tuple[TemplateSpec | None, tuple[MediaSpec, ...]]:
    """A list ``content`` (schema-valid): its text parts as one template (joined by new lines), and its media."""
    texts: list[TemplateSpec] = []
    media: list[MediaSpec] = []
    for i, item in enumerate(content):
        kind, value, keys = part_of(item)
        where = (*path, i, *keys)
        key, line = format_key_path(where), loaded.lines.line_of(where)
        if kind == "text":
            texts.append(TemplateSpec(value, key=key, line=line))
        else:
            media.append(MediaSpec(kind, value, key=key, line=line))
    if not texts:
        return None, tuple(media)
    return TemplateSpec("\n".join(t.source for t in texts), key=texts[0].key, line=texts[0].line), tuple(media)


def build_media(loaded: LoadedSuite, entry: Mapping[str, Any], base: KeyPath) -> tuple[MediaSpec, ...]:
    """The sources of an entry's ``images:`` and ``audio:`` lists (schema-valid), images first."""
    return tuple(
        MediaSpec("image" if option == "images" else "audio", source, key=format_key_path((*base, option, i)),
                  line=loaded.lines.line_of((*base, option, i)))
        for option in MEDIA_KEYS
        for i, source in enumerate(entry.get(option) or [])
    )


def render_messages(
    renderer: TemplateRenderer, messages: tuple[MessageSpec, ...] | TemplateSpec, scope: Mapping[str, Any], path: str
) -> tuple[Message, ...]:
    """The messages of one case: each entry rendered, or the template's value read as chat messages.

    Raises:
        CaseError: a template that fails, or a value that is not a list of chat messages (at the key).
    """
    if isinstance(messages, TemplateSpec):
        value = renderer.evaluate(messages.source, scope, key=messages.key, line=messages.line)
        return messages_from_data(value, path=path, key=messages.key, line=messages.line, folders=renderer.folders,
                                  limits=renderer.media_limits)
    return tuple(
        Message(role=entry.role, content=entry.content.render(renderer, scope) if entry.content else "",
                name=entry.name, parts=render_media(renderer, entry.media, scope, path))
        for entry in messages
    )


def messages_from_data(
    value: Any,
    *,
    path: str | None,
    key: str,
    line: int | None,
    folders: SuiteFolders | None = None,
    limits: Mapping[str, int] = DEFAULT_LIMITS,
) -> tuple[Message, ...]:
    """Chat messages from data: a list of ``{role, content, name?}`` mappings, or JSON text of one.

    Other keys of a message (an ``id``, a ``source``) are left out; a role other than system, user or
    assistant is an error. ``content`` is text, or a list of content parts (OpenAI's, or ``{image: ...}``):
    their files must lie in ``folders`` and each part hold at most its kind's ``limits`` (``suite/media.py``).

    Raises:
        CaseError: naming the message that is wrong and what it holds.
    """
    where = Where(path, key or None, line)
    value = _decoded(value, where)
    if not isinstance(value, Sequence) or isinstance(value, str) or not value:
        shown = "an empty list" if isinstance(value, Sequence) and not value else type_name(value)
        raise _error(f"expected a list of chat messages, got {shown}", where)
    return tuple(_message(number, message, where, folders, limits) for number, message in enumerate(value))


def _decoded(value: Any, where: Where) -> Any:
    """JSON text read as data; anything else as it is."""
    if not isinstance(value, str):
        return value
    try:
        return json.loads(value)
    except json.JSONDecodeError as exc:
        raise _error(f"expected chat messages, got text that is not JSON ({exc.msg})", where) from exc


def _message(
    number: int, message: Any, where: Where, folders: SuiteFolders | None, limits: Mapping[str, int]
) -> Message:
    """Message ``number`` of the list, checked: a mapping with a known role, content and a text name."""
    shown = f"message {number}"
    if not isinstance(message, Mapping):
        raise _error(f"{shown} is {type_name(message)}, expected a mapping with role and content", where)
    role, content, name = message.get("role"), message.get("content"), message.get("name")
    if role not in ROLES:
        raise _error(f"{shown}: role {role!r} is not one of {', '.join(ROLES)}", where)
    if name is not None and not isinstance(name, str):
        raise _error(f"{shown}: name is {type_name(name)}, expected text", where)
    if isinstance(content, list):
        text, parts = parts_from_data(content, folders, where, f"{shown}: ", limits)
        return Message(role=role, content=text, name=name, parts=parts)
    if not isinstance(content, str):
        raise _error(f"{shown}: content is {type_name(content)}, expected text or a list of parts", where)
    return Message(role=role, content=content, name=name)


def _error(message: str, where: Where) -> CaseError:
    return where.error(message, hint=_HINT)
