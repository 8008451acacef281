"""JSON read back from files and endpoints, bounded: depth, numbers and text as this package writes them.

A results file, a cache row or an endpoint's body is input. ``json.loads`` takes a 200,000-deep array
(then ``RecursionError``), a 400-digit count (then ``OverflowError`` where it meets a float), ``NaN`` and
``1e400`` (``inf``). ``loads_bounded`` refuses all of them with a ``BoundsError`` (a ``ValueError``) that
names where the value is (``call_log[0].output_tokens``), so a reader can skip or refuse the value in words.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Iterator
from typing import Any

MAX_DEPTH = 64
"""The deepest nesting read: our records reach about 10 levels; json's own limit is Python's recursion."""
MAX_NUMBER = 1e15
"""The largest magnitude of a number read (seconds, dollars, tokens and scores are all far below it)."""
MAX_INTEGER = 2**53
"""The largest whole number read: above it a float cannot hold it exactly."""
MAX_TEXT_CHARS = 16 * 1024 * 1024
"""The longest text read in one value: the default largest answer of an endpoint (16 MB)."""


class BoundsError(ValueError):
    """JSON that is valid but not what we write: too deep, a number out of range, text too long."""


def loads_bounded(text: str | bytes) -> Any:
    """``json.loads(text)``, refused when it breaks a bound (``value_problem``).

    A text plainly within the bounds (its nesting measured on the text, its numbers checked as they are parsed)
    is read in one pass; any other is parsed and walked as before, so a refusal names where the value is.

    Raises:
        json.JSONDecodeError: not JSON (a torn line, a truncated body).
        BoundsError: JSON nested too deep, a number not finite or too large, a text too long.
    """
    plainly = _read_plainly(text)
    if plainly is not _NOT_PLAINLY:
        return plainly
    try:
        value = json.loads(text)
    except json.JSONDecodeError:
        raise
    except RecursionError as exc:  # json's C scanner stops at Python's recursion limit
        field = _deep_field(text if isinstance(text, str) else text.decode("utf-8", "replace"))
        raise BoundsError(f"{field + ': ' if field else ''}nested deeper than {MAX_DEPTH} levels") from exc
    except ValueError as exc:  # an integer of more than 4,300 digits
        raise BoundsError(f"a number out of range ({exc})") from exc
    problem = value_problem(value)
    if problem is not None:
        raise BoundsError(problem)
    return value


def value_problem(value: Any, max_depth: int = MAX_DEPTH) -> str | None:
    """What in ``value`` breaks a bound, with where it is (``turns[2].latency_s: ...``); None when nothing does.

    Iterative: a value deeper than the stack is measured without recursion.
    """
    for item, depth, where in _walk(value):
        if depth > max_depth and isinstance(item, (dict, list)):  # depth: the containers around it and itself
            return f"{_path(where)}: nested deeper than {max_depth} levels"
        problem = _scalar_problem(item)
        if problem is not None:
            return f"{_path(where)}: {problem}" if where else problem
    return None


_NOT_PLAINLY = object()


def _read_plainly(text: str | bytes) -> Any:
    """The value of a text plainly within every bound, read in one pass; ``_NOT_PLAINLY`` for any other text.

    No decoded text is longer than the JSON text holding it; the nesting is measured on the text; the numbers are
    checked as they are parsed.

    Raises:
        json.JSONDecodeError: not JSON.
    """
    if not isinstance(text, str) or len(text) > MAX_TEXT_CHARS or _nested_too_deep(text):
        return _NOT_PLAINLY
    try:
        return json.loads(text, parse_int=_whole_within, parse_float=_number_within, parse_constant=_outside)
    except (_Outside, RecursionError):
        return _NOT_PLAINLY  # measured again by the walk, to say where


class _Outside(Exception):
    """A number out of bounds met while parsing: the text is measured again by the walk, which says where."""


def _whole_within(text: str) -> int:
    try:
        value = int(text)
    except ValueError as exc:  # more than 4,300 digits
        raise _Outside from exc
    if not -MAX_INTEGER < value < MAX_INTEGER:
        raise _Outside
    return value


def _number_within(text: str) -> float:
    value = float(text)
    if not (math.isfinite(value) and abs(value) < MAX_NUMBER):
        raise _Outside
    return value


def _outside(text: str) -> Any:
    raise _Outside  # NaN, Infinity, -Infinity


def _nested_too_deep(text: str) -> bool:
    """Whether ``text`` nests containers deeper than ``MAX_DEPTH`` (or may: then it is walked).

    Texts are blanked, then each pass removes every innermost container: the passes it takes are the depth.
    """
    if text.count("[") + text.count("{") <= MAX_DEPTH:  # too few brackets to nest that deep (most records)
        return False
    bare = _TEXT.sub("", text)
    for _ in range(MAX_DEPTH):
        bare, found = _INNERMOST.subn("0", bare)
        if not found:
            return False
    return _BRACKET.search(bare) is not None


_TEXT = re.compile(r'"[^"\\]*(?:\\.[^"\\]*)*"')  # a JSON text, escapes included (unrolled: a third of the time)
_INNERMOST = re.compile(r"\[[^\[\]{}]*\]|\{[^\[\]{}]*\}")
_BRACKET = re.compile(r"[\[\]{}]")


Where = tuple[Any, ...] | None  # (parent's where, key): the path built only when a problem is found


def _walk(value: Any) -> Iterator[tuple[Any, int, Where]]:
    stack: list[tuple[Any, int, Where]] = [(value, 1, None)]
    while stack:
        item, depth, where = stack.pop()
        yield item, depth, where
        if isinstance(item, dict):
            stack.extend((child, depth + 1, (where, str(key))) for key, child in item.items())
        elif isinstance(item, list):
            stack.extend((child, depth + 1, (where, index)) for index, child in enumerate(item))


def _scalar_problem(item: Any) -> str | None:
    if isinstance(item, bool) or item is None:
        return None
    if isinstance(item, int):
        return None if -MAX_INTEGER < item < MAX_INTEGER else f"a whole number of {len(str(abs(item)))} digits"
    if isinstance(item, float):
        return None if math.isfinite(item) and abs(item) < MAX_NUMBER else f"a number out of range ({item!r})"
    if isinstance(item, str) and len(item) > MAX_TEXT_CHARS:
        return f"a text of {len(item):,} characters (at most {MAX_TEXT_CHARS:,})"
    return None


def _path(where: Where) -> str:
    keys: list[Any] = []
    while where is not None:
        where, key = where
        keys.append(key)
    text = ""
    for key in reversed(keys):
        text += f"[{key}]" if isinstance(key, int) else (f".{key}" if text else key)
    return text or "the value"


def _deep_field(text: str) -> str | None:
    """The top-level key whose value nests deeper than ``MAX_DEPTH`` (found by counting brackets), or None.

    json stops at the recursion limit without saying where: this names the field for the reader's warning.
    """
    depth, key = 0, None
    for token in _TOKENS.finditer(text):
        mark = token.group()
        if mark[0] == '"':
            key = mark[1:-1] if depth == 1 else key  # at the top, the last text before a value is its key
        elif mark in "[{":
            depth += 1
            if depth > MAX_DEPTH:
                return key
        else:
            depth -= 1
    return None


_TOKENS = re.compile(r'"(?:[^"\\]|\\.)*"|[][{}]')
"""A JSON text (escapes included) or a bracket: brackets inside texts are not counted."""
