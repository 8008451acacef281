"""JSON in a judge's reply: the values found at a path, in every JSON object the reply holds."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Any

from bench_plugin.core.json_text import PathStep, iter_json_objects, walk_json_path


def values_at(text: str, steps: Sequence[PathStep]) -> Iterator[Any]:
    """The value at ``steps`` of each JSON value in ``text`` that has one, in order.

    The JSON values are the reply itself, its fenced blocks and the objects embedded in its prose.
    """
    for candidate in iter_json_objects(text):
        try:
            yield walk_json_path(candidate, steps)
        except LookupError:
            continue
