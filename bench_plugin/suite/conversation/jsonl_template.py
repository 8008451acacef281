"""Conversation templates in the UniversalBackrooms JSONL format: one line per participant."""

from __future__ import annotations

import json
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_plugin.core.chat import Message

_PLACEHOLDER = re.compile(r"\{\{|\}\}|\{(lm(\d+)_([A-Za-z_]\w*))\}")
_LINE_KEYS = ("system_prompt", "context")
_ROLES = ("user", "assistant")


@dataclass(frozen=True)
class TemplateLine:
    """One participant's start: its system prompt and the messages of its private history."""

    system_prompt: str
    context: tuple[Message, ...]
    cli: bool = False
    """A seat the original served by its world-interface server: its participant must name the model serving it."""


def placeholder_variables(participants: Sequence[Mapping[str, Any]]) -> dict[str, str]:
    """``lm{j}_actor``, ``lm{j}_company``, ``lm{j}_model`` and ``lm{j}_<var>`` for every participant j (1-based).

    Args:
        participants: each participant as templates see it (``me``): ``name``, ``model`` (a mapping
            with ``label``), ``company`` and its ``vars``.
    """
    out: dict[str, str] = {}
    for number, me in enumerate(participants, 1):
        for key, value in me.items():
            if key in ("index", "name", "model"):
                continue
            out[f"lm{number}_{key}"] = str(value)
        out[f"lm{number}_actor"] = str(me["name"])
        out[f"lm{number}_model"] = str(me["model"]["label"])
    return out


def fill_placeholders(text: str, variables: Mapping[str, str]) -> str:
    """Replace ``{lmN_key}`` placeholders and ``{{``/``}}`` escapes; other braces stay as they are.

    Raises:
        ValueError: for a placeholder of a participant that does not exist, or a key it does not have.
    """

    def replace(match: re.Match[str]) -> str:
        if match.group(1) is None:
            return match.group(0)[0]
        name, number = match.group(1), int(match.group(2))
        if name in variables:
            return variables[name]
        known = sorted({k.split("_", 1)[1] for k in variables if k.startswith("lm1_")})
        if not any(k.startswith(f"lm{number}_") for k in variables):
            raise ValueError(f"placeholder {{{name}}} names participant {number}, but there is no such participant")
        raise ValueError(f"unknown placeholder {{{name}}}: participants have {', '.join(known)}")

    return _PLACEHOLDER.sub(replace, text)


def read_template(path: Path) -> list[dict[str, Any]]:
    """The lines of a template file, checked: one object per non-blank line with the known keys.

    Each line is a JSON object with ``system_prompt`` (a string, may be empty) and ``context`` (the messages that
    seed that participant's private history, ``{role: user|assistant, content}``). Texts name participants through
    placeholders such as ``{lm1_actor}`` or ``{lm2_company}`` (participant 1's name, participant 2's company), and
    ``{{``/``}}`` stand for one brace, as in the original's ``str.format``, so its files read the same. A line
    ``{"cli": true}`` is a seat the original's world-interface server plays: its participant names that model. Unlike
    ``str.format``, any other brace is left as it is (a lone ``{`` in ASCII art or code does not break the
    template).

    Raises:
        ValueError: naming the file's line, for a file that cannot be read or bad JSON.
        TypeError: naming the file's line, for a line of the wrong shape.
    """
    try:
        text = path.read_text(encoding="utf-8")
    except (OSError, UnicodeDecodeError) as exc:
        raise ValueError(f"cannot read {path.name}: {getattr(exc, 'strerror', None) or exc}") from exc
    lines = [_read_line(raw, f"{path.name}:{number}") for number, raw in enumerate(text.splitlines(), 1) if raw.strip()]
    if not lines:
        raise ValueError(f"{path.name}: no participant lines")
    return lines


def _read_line(raw: str, where: str) -> dict[str, Any]:
    try:
        entry = json.loads(raw)
    except json.JSONDecodeError as exc:
        raise ValueError(f"{where}: invalid JSON: {exc.msg}") from exc
    return _checked_line(entry, where)


def _checked_line(entry: Any, where: str) -> dict[str, Any]:
    if not isinstance(entry, dict):
        raise TypeError(f"{where}: expected a JSON object with system_prompt and context")
    unknown = [key for key in entry if key not in (*_LINE_KEYS, "cli")]
    if unknown:
        raise ValueError(f"{where}: unknown key '{unknown[0]}' (keys: {', '.join(_LINE_KEYS)})")
    if not isinstance(entry.get("system_prompt", ""), str):
        raise TypeError(f"{where}: system_prompt must be a string")
    _check_context(entry.get("context", []), where)
    return entry


def _check_context(context: Any, where: str) -> None:
    """A line's ``context``: a list of ``{role: user|assistant, content: text}`` messages."""
    if not isinstance(context, list):
        raise TypeError(f"{where}: context must be a list of {{role, content}} messages")
    for i, message in enumerate(context):
        if not _is_context_message(message):
            expected = '{"role": "user" or "assistant", "content": text}'
            raise ValueError(f"{where}: context[{i}]: expected {expected}")


def _is_context_message(message: Any) -> bool:
    return isinstance(message, dict) and message.get("role") in _ROLES and isinstance(message.get("content"), str)


def fill_line(entry: Mapping[str, Any], variables: Mapping[str, str]) -> TemplateLine:
    """A checked template line with its placeholders filled."""
    return TemplateLine(
        system_prompt=fill_placeholders(str(entry.get("system_prompt", "")), variables),
        context=tuple(
            Message(m["role"], fill_placeholders(m["content"], variables)) for m in entry.get("context", [])
        ),
        cli=entry.get("cli") is True,
    )
