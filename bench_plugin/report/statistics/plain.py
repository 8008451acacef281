"""Small statistics over case results, as pure functions that treat None as "no value"."""

from __future__ import annotations

import math
from collections.abc import Iterable


def known(values: Iterable[float | None]) -> list[float]:
    """The values that are present; None means unscored or unknown and never counts as zero."""
    return [value for value in values if value is not None]


def mean(values: Iterable[float | None]) -> float | None:
    """Arithmetic mean of the known values, or None when there are none.

    Example: ``mean([1.0, None, 0.0]) == 0.5``: an unscored case is left out, not counted as zero.
    """
    present = known(values)
    if not present:
        return None
    return sum(present) / len(present)


def total(values: Iterable[float | None]) -> float | None:
    """Sum of the known values, or None when none is known (unknown cost is not zero cost).

    Dollars are summed exactly and kept to 1e-10 (``0.21``, not ``0.20999999999999996``); counts stay whole.
    """
    present = known(values)
    if not present:
        return None
    if all(isinstance(value, int) for value in present):
        return sum(present)
    return round(math.fsum(present), 10)


def rate(numerator: int, denominator: int) -> float | None:
    """``numerator / denominator``, or None for an empty denominator (no scored case, no pass rate)."""
    if denominator <= 0:
        return None
    return numerator / denominator
