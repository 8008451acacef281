"""JSON as models write it: inside prose and code fences, read by paths, compared as JSON compares.

Checks, judges and the agent's final-state checks all read JSON out of replies; this is their one copy.
"""

from __future__ import annotations

import contextlib
import json
import re
from collections.abc import Callable, Iterator, Sequence
from typing import Any

PathStep = str | int


_FENCED = re.compile(r"```[ \t]*(?:json)?[ \t]*\r?\n(.*?)```", re.IGNORECASE | re.DOTALL)


_PATH_TOKEN = re.compile(
    r"""\.?(?P<name>[^.\[\]'"]+)|\[(?P<index>-?\d+)\]|\[(?P<quote>['"])(?P<key>.*?)(?P=quote)\]"""
)


_MAX_EMBEDDED_ATTEMPTS = 200  # a reply full of braces must not cost seconds of decoding


def fenced_blocks(text: str) -> list[str]:
    """The contents of the ```json and plain ``` fenced blocks in ``text``, in order."""
    return [block.strip() for block in _FENCED.findall(text)]


def load_json(text: str, *, extract: bool = True) -> Any:
    """Parse ``text`` as JSON, or the first fenced block in it when ``extract`` is set.

    Raises:
        ValueError: with the decoder's message and where it stopped.
    """
    blocks = fenced_blocks(text) if extract else []
    source = blocks[0] if blocks else text.strip()
    try:
        return json.loads(source)
    except json.JSONDecodeError as exc:
        where = "the fenced block" if blocks else "the text"
        raise ValueError(
            f"{where} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc


def iter_json_objects(text: str) -> Iterator[Any]:
    """Yield JSON values found in a reply: the whole reply, fenced blocks, then embedded ``{...}``."""
    for source in (text.strip(), *fenced_blocks(text)):
        with contextlib.suppress(json.JSONDecodeError):
            yield json.loads(source)
    decoder = json.JSONDecoder()
    start = text.find("{")
    attempts = 0
    while start != -1 and attempts < _MAX_EMBEDDED_ATTEMPTS:
        attempts += 1
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        yield value
        start = text.find("{", end)


def parse_json_path(path: str) -> tuple[PathStep, ...]:
    """Split ``$.a.b[0].c`` (or ``a.b.0.c``, or ``$['odd key']``) into steps.

    Raises:
        ValueError: naming the character where the path stops making sense.
    """
    rest = path.strip().removeprefix("$")
    steps: list[PathStep] = []
    position = 0
    while position < len(rest):
        match = _PATH_TOKEN.match(rest, position)
        if match is None or match.end() == position:
            raise ValueError(f"path {path!r} is not understood at {rest[position:]!r}; write e.g. $.a.b[0].c")
        if match.group("name") is not None:
            steps.append(match.group("name"))
        elif match.group("index") is not None:
            steps.append(int(match.group("index")))
        else:
            steps.append(match.group("key"))
        position = match.end()
    return tuple(steps)


def format_json_path(steps: Sequence[PathStep]) -> str:
    """Write steps back in ``$.a.b[0]`` form, for messages."""
    parts = ["$"]
    for step in steps:
        parts.append(f"[{step}]" if isinstance(step, int) else f".{step}")
    return "".join(parts)


def walk_json_path(data: Any, steps: Sequence[PathStep]) -> Any:
    """Follow ``steps`` into ``data``. A digit step indexes a list and keys an object.

    Raises:
        LookupError: saying which step failed and what was there instead.
    """
    current = data
    for depth, step in enumerate(steps):
        where = format_json_path(steps[:depth]) or "$"
        if isinstance(current, list):
            current = current[_list_index(current, step, where)]
        elif isinstance(current, dict):
            current = current[_object_key(current, step, where)]
        else:
            # a path that meets a scalar is a miss like any other, so LookupError rather than TypeError
            raise LookupError(f"{where} is {json.dumps(current)}, not an object or list")
    return current


def _list_index(items: list[Any], step: PathStep, where: str) -> int:
    index = step if isinstance(step, int) else int(step) if re.fullmatch(r"-?\d+", step) else None
    if index is None:
        raise LookupError(f"{where} is a list, so {step!r} cannot index it")
    if not -len(items) <= index < len(items):
        raise LookupError(f"{where} has {len(items)} items, no index {index}")
    return index


def _object_key(value: dict[str, Any], step: PathStep, where: str) -> str:
    key = str(step)
    if key not in value:
        raise LookupError(f"{where} has no key {key!r} (keys: {', '.join(map(repr, value)) or 'none'})")
    return key


def json_equal(left: Any, right: Any) -> bool:
    """JSON equality: ``true`` is not ``1``, ``1`` is ``1.0``, containers compare item by item."""
    kind = _json_kind(left)
    if kind is not _json_kind(right):
        return False
    return _EQUAL_BY_KIND.get(kind, _same_value)(left, right)


def _json_kind(value: Any) -> type:
    """What JSON calls a value: booleans and numbers apart (Python counts True as 1), ints and floats one kind."""
    for kind in (bool, dict, list):
        if isinstance(value, kind):
            return kind
    return float if isinstance(value, int) else type(value)


def _same_value(left: Any, right: Any) -> bool:
    return bool(left == right)


def _equal_objects(left: dict[str, Any], right: dict[str, Any]) -> bool:
    return left.keys() == right.keys() and all(json_equal(left[k], right[k]) for k in left)


def _equal_arrays(left: list[Any], right: list[Any]) -> bool:
    return len(left) == len(right) and all(map(json_equal, left, right))


_EQUAL_BY_KIND: dict[type, Callable[[Any, Any], bool]] = {dict: _equal_objects, list: _equal_arrays}
