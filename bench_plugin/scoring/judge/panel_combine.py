"""How a panel's verdicts combine, and how far apart they are: pure functions over numbers.

Only judges that gave a verdict take part; an unreadable reply is never counted as a 0.
"""

from __future__ import annotations

import statistics
from collections.abc import Mapping, Sequence

AGGREGATES = ("mean", "median", "min", "majority", "consensus")
NUMERIC = ("mean", "median", "min")


def combine(values: Sequence[float], how: str) -> float:
    """``mean``, ``median`` or ``min`` of the verdicts (at least one).

    Example: ``combine([80, 70, 95], "median") == 80``.
    """
    if not values:
        raise ValueError("no verdict to combine")
    if how == "median":
        return float(statistics.median(values))
    if how == "min":
        return float(min(values))
    return sum(values) / len(values)


def strict_majority(votes: Sequence[bool]) -> bool:
    """More than half of the votes pass: 2 of 3 passes, 2 of 4 does not."""
    return sum(votes) * 2 > len(votes)


def spread(values: Sequence[float]) -> float | None:
    """Highest minus lowest verdict, or None with fewer than two verdicts."""
    return max(values) - min(values) if len(values) >= 2 else None


def combine_by_key(maps: Sequence[Mapping[str, float | None]], how: str) -> dict[str, float]:
    """Per key (a rubric category, a participant), the verdicts of the judges that gave one, combined.

    Keys keep the order they are first seen in; ``how`` other than mean/median/min takes the mean.
    """
    keys = list(dict.fromkeys(key for found in maps for key in found))
    out: dict[str, float] = {}
    for key in keys:
        values = _given(maps, key)
        if values:
            out[key] = round(combine(values, how if how in NUMERIC else "mean"), 6)
    return out


def _given(maps: Sequence[Mapping[str, float | None]], key: str) -> list[float]:
    """The values the maps give for ``key`` (None is no value)."""
    return [value for found in maps if (value := found.get(key)) is not None]
