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

    Raises:
        json.JSONDecodeError: not JSON (a torn line, a truncated body).
        BoundsError: JSON nested too deep, a number not finite or too large, a text too long.
    """
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


SMALL_TEXT_CHARS = 64 * 1024
"""The longest text ``loads_small`` reads without a walk over its value: far below ``MAX_TEXT_CHARS``."""


def loads_small(text: str) -> Any:
    """``loads_bounded`` for a small text, such as one event of a streamed answer: the same bounds, cheaper.

    A text with fewer brackets than ``MAX_DEPTH`` cannot nest deeper, and one shorter than ``MAX_TEXT_CHARS``
    holds no longer text: only its numbers need a look, which json's hooks give as it reads them. A stream
    of 1000 events walked each one's value again, four fifths of its CPU. Any other text goes to
    ``loads_bounded``.

    Raises:
        json.JSONDecodeError: not JSON.
        BoundsError: a number out of range, ``NaN`` or ``Infinity``, or what ``loads_bounded`` refuses.
    """
    if len(text) > SMALL_TEXT_CHARS or text.count("{") + text.count("[") >= MAX_DEPTH:
        return loads_bounded(text)
    return json.loads(text, parse_int=_bounded_int, parse_float=_bounded_float, parse_constant=_no_constant)


def _bounded_int(text: str) -> int:
    number = int(text) if len(text) <= 20 else MAX_INTEGER
    if not -MAX_INTEGER < number < MAX_INTEGER:
        raise BoundsError(f"a whole number of {len(text.lstrip('-'))} digits")
    return number


def _bounded_float(text: str) -> float:
    number = float(text)
    if not (math.isfinite(number) and abs(number) < MAX_NUMBER):
        raise BoundsError(f"a number out of range ({number!r})")
    return number


def _no_constant(text: str) -> Any:
    raise BoundsError(f"a number out of range ({text})")
