r"""A ``.env`` file's variables, read in one pass: the syntax python-dotenv reads, in time linear in the file.

python-dotenv's ``dotenv_values(interpolate=True)`` copied the environment for every variable (100,000 lines:
150 s), and its parser alone took seconds. Here each line is matched once and each ``${NAME}`` looked up in a
dict. What is read: ``NAME=value`` and ``export NAME=value``; spaces around ``=``; ``# comments`` on their own
line or after an unquoted value; ``'single'`` quotes (literal, ``\'`` and ``\\`` unescaped) and ``"double"``
quotes (backslash escapes), both of which may span lines; a bare ``NAME`` (no value). ``${NAME}`` and
``${NAME:-default}`` are replaced in every value (quoted ones too), from the file's earlier variables first,
then the environment, as python-dotenv (``interpolate=True``) does. Expansion is bounded
(``MAX_EXPANDED_CHARS`` in all), so ``B=${A}${A}``, ``C=${B}${B}``... cannot grow without end. A line
that is none of these is skipped.
"""

from __future__ import annotations

import codecs
import os
import re
from collections.abc import Iterator, Mapping

MAX_EXPANDED_CHARS = 16 * 1024 * 1024
"""The most characters the file's values may hold in all, after ``${NAME}`` is replaced."""

_ASSIGNMENT = re.compile(r"[ \t]*(?:export[ \t]+)?(?P<name>[^=#\s]+)[ \t]*(?:=[ \t]*(?P<value>.*))?")
_UNQUOTED_COMMENT = re.compile(r"[ \t]+#.*")
_VARIABLE = re.compile(r"\$\{(?P<name>[^}:]*)(?::-(?P<default>[^}]*))?\}")
_DOUBLE_ESCAPE = re.compile(r"\\[\\'\"abfnrtv]")
_SINGLE_ESCAPE = re.compile(r"\\[\\']")


class ExpansionTooLarge(ValueError):
    """The values, with every ``${NAME}`` replaced, would hold more than ``MAX_EXPANDED_CHARS``."""


def env_values(text: str, environ: Mapping[str, str] | None = None) -> dict[str, str | None]:
    """Name -> value (None for a bare name) of a ``.env`` file's ``text``; later lines win.

    Raises:
        ExpansionTooLarge: the values expand past ``MAX_EXPANDED_CHARS``.
    """
    environ = os.environ if environ is None else environ
    values: dict[str, str | None] = {}
    budget = MAX_EXPANDED_CHARS
    for name, value in _assignments(text):
        if value is not None and "${" in value:
            value = _expanded(value, values, environ, budget)
        budget -= len(value or "")
        if budget < 0:
            raise ExpansionTooLarge(f"the values hold more than {MAX_EXPANDED_CHARS:,} characters")
        values[name] = value
    return values


def _assignments(text: str) -> Iterator[tuple[str, str | None]]:
    """(name, value as written: quotes and escapes undone) for each assignment, in order."""
    lines = text.splitlines()
    index = 0
    while index < len(lines):
        line = lines[index]
        index += 1
        start = line.lstrip()
        if not start or start[0] == "#":
            continue
        found = _ASSIGNMENT.fullmatch(line)
        if found is None:
            continue
        raw = found.group("value")
        if raw is None:
            yield found.group("name"), None
            continue
        quote = raw[:1]
        if quote not in ("'", '"'):
            yield found.group("name"), (_UNQUOTED_COMMENT.sub("", raw) if "#" in raw else raw).rstrip()
            continue
        value, used = _quoted(raw, lines, index, quote)
        if value is not None:
            index += used
            yield found.group("name"), value


def _quoted(first: str, lines: list[str], after: int, quote: str) -> tuple[str | None, int]:
    """A quoted value starting on ``first`` and perhaps going on over the next lines; and how many it took.

    None when the quote is never closed (the line is then skipped, as python-dotenv skips it).
    """
    body = first[1:]
    used = 0
    while True:
        end = _closing(body, quote)
        if end >= 0:
            rest = body[end + 1:]
            if rest.strip() and not rest.lstrip().startswith("#"):
                return None, 0
            text = body[:end]
            return (_unescape_double(text) if quote == '"' else _SINGLE_ESCAPE.sub(_drop_backslash, text)), used
        if after + used >= len(lines):
            return None, 0
        body += "\n" + lines[after + used]
        used += 1


def _closing(body: str, quote: str) -> int:
    """Where the closing quote is in ``body`` (a backslash escapes it), or -1."""
    position = body.find(quote)
    while position >= 0:
        before = position
        while before > 0 and body[before - 1] == "\\":
            before -= 1
        if (position - before) % 2 == 0:
            return position
        position = body.find(quote, position + 1)
    return -1


def _drop_backslash(found: re.Match[str]) -> str:
    return found.group()[1]


def _unescape_double(text: str) -> str:
    return _DOUBLE_ESCAPE.sub(lambda found: codecs.decode(found.group(), "unicode-escape"), text)


def _expanded(value: str, values: Mapping[str, str | None], environ: Mapping[str, str], budget: int) -> str:
    """``value`` with each ``${NAME}`` (or ``${NAME:-default}``) replaced.

    The file's earlier value comes first, then the environment's, then the default, else nothing.
    """
    grown = 0

    def replace(found: re.Match[str]) -> str:
        nonlocal grown
        name = found.group("name")
        source = values if name in values else environ  # the file's earlier lines win, as in python-dotenv
        result = source.get(name, found.group("default") or "") or ""
        grown += len(result)
        if grown > budget:
            raise ExpansionTooLarge(f"the values hold more than {MAX_EXPANDED_CHARS:,} characters")
        return result

    return _VARIABLE.sub(replace, value)
