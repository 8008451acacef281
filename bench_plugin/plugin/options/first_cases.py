"""``--bench-limit N``: only the first N cases of each suite for each model, the same in every process.

A case here is a task variant (a row, a matrix cell, a prompt): its runs (``--bench-runs``) all stay or
all go. The order is the items' (YAML order), after ``-k``/``-m``/``--lf``, so the choice is the same in
every xdist worker and on every machine of a sharded run.
"""

from __future__ import annotations

from collections.abc import Callable, Hashable, Sequence
from typing import TypeVar

ItemT = TypeVar("ItemT")


def first_cases(
    items: Sequence[ItemT], limit: int, case_key: Callable[[ItemT], tuple[Hashable, Hashable, Hashable] | None]
) -> tuple[list[ItemT], list[ItemT]]:
    """Split ``items`` into (kept, deselected): per (suite, model), the items of its first ``limit`` cases.

    Args:
        items: the selected items, in order.
        limit: cases kept per suite and model (>= 1).
        case_key: ``(suite, model, case)`` of an item, or None for an item that is not a case (always kept).
    """
    seen: dict[tuple[Hashable, Hashable], set[Hashable]] = {}
    kept: list[ItemT] = []
    deselected: list[ItemT] = []
    for item in items:
        key = case_key(item)
        if key is None:
            kept.append(item)
            continue
        suite, model, case = key
        cases = seen.setdefault((suite, model), set())
        if case not in cases and len(cases) < limit:
            cases.add(case)
        (kept if case in cases else deselected).append(item)
    return kept, deselected
