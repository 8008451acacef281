"""Many pairs at once: Holm's correction of their p-values, which pairs differ, and the tiers that follow."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Literal

from bench_plugin.report.statistics.core import is_missing

PairKey = frozenset[str] | tuple[str, str]
# Mapping keys are invariant, so a dict keyed only by tuples (or only by frozensets) needs its own arm
PValues = (
    Mapping[frozenset[str], float | None]
    | Mapping[tuple[str, str], float | None]
    | Mapping[PairKey, float | None]
)
Significance = Mapping[frozenset[str], bool] | Mapping[tuple[str, str], bool] | Mapping[PairKey, bool]


def holm_adjust(pvalues: Sequence[float | None]) -> list[float | None]:
    """Holm-Bonferroni step-down adjusted p-values, in the input order.

    With the ``m`` present p-values sorted ascending, ``p_adj(i) = max_{j <= i} min(1, (m - j + 1)
    p(j))``. Reject hypothesis ``i`` at level alpha iff ``p_adj(i) <= alpha``; this controls the
    family-wise error rate.

    Args:
        pvalues: raw p-values; None/NaN stay None and do not count in ``m``.

    Returns:
        The adjusted p-values, same length and order as the input.

    Raises:
        ValueError: when a p-value lies outside [0, 1].
    """
    present = _present_p_values(pvalues)
    adjusted: list[float | None] = [None] * len(pvalues)
    m = len(present)
    running = 0.0
    for rank, (value, index) in enumerate(sorted(present)):
        running = max(running, min(1.0, (m - rank) * value))
        adjusted[index] = running
    return adjusted


def _present_p_values(pvalues: Sequence[float | None]) -> list[tuple[float, int]]:
    """The present p-values with their positions; one outside [0, 1] is an error."""
    present = [(float(value), index) for index, value in enumerate(pvalues)
               if value is not None and not is_missing(value)]
    for value, _ in present:
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"p-values must lie in [0, 1], got {value}")
    return present


def _pair_key(key: PairKey) -> frozenset[str]:
    pair = frozenset(key)
    if len(pair) != 2:
        raise ValueError(f"a pair needs two different models, got {key!r}")
    return pair


def significant_pairs(
    pvalues: PValues,
    *,
    alpha: float = 0.05,
    adjust: Literal["holm", "none"] = "holm",
) -> dict[frozenset[str], bool]:
    """Which model pairs differ at level ``alpha`` after (by default) Holm's correction.

    Args:
        pvalues: pair (a frozenset or an (a, b) tuple, either order) -> raw p-value; None/NaN
            means "not tested" and gives False.
        alpha: the family-wise level.
        adjust: ``"holm"`` (adjust over the present p-values) or ``"none"``.

    Returns:
        frozenset({a, b}) -> True when the pair is significantly different.

    Raises:
        ValueError: when a pair appears twice or names one model twice.
    """
    keys = [_pair_key(key) for key in pvalues]
    if len(set(keys)) != len(keys):
        raise ValueError("a model pair appears more than once")
    raw = list(pvalues.values())
    adjusted = holm_adjust(raw) if adjust == "holm" else [None if is_missing(p) else p for p in raw]
    return {key: p is not None and p <= alpha for key, p in zip(keys, adjusted, strict=True)}


def tiers(means: Mapping[str, float | None], pairwise_significant: Significance) -> list[list[str]]:
    """Group models into tiers that the tests cannot separate, greedily from the best model.

    Rule: sort the models by mean, best first (ties by name). The best model opens tier 1. Walking
    down the list, a model joins the current tier when it is **not** significantly different from any
    model already in it; when the test separates it from one of them, it opens a new tier. So no tier
    holds two models the test separates, and tiers are contiguous in the ranking (two models in
    different tiers are not necessarily separated: only a model and some member of the tier above).
    A pair missing from ``pairwise_significant`` counts as not significant (it was not shown to
    differ). Models whose mean is None/NaN are left out.

    Args:
        means: model -> its mean score (higher is better).
        pairwise_significant: pair (frozenset or (a, b) tuple, either order) -> whether the two
            models differ significantly (e.g. from :func:`significant_pairs`).

    Returns:
        The tiers, best first, each listing its models best first.

    Raises:
        ValueError: when the same pair is given twice with different answers.
    """
    significant = _significance_by_pair(pairwise_significant)
    result: list[list[str]] = []
    for model in _ranked(means):
        if result and not any(significant.get(frozenset((member, model)), False) for member in result[-1]):
            result[-1].append(model)
        else:
            result.append([model])
    return result


def _significance_by_pair(pairwise_significant: Significance) -> dict[frozenset[str], bool]:
    """The answers keyed by frozenset pair; the same pair given twice must agree."""
    significant: dict[frozenset[str], bool] = {}
    for key, value in pairwise_significant.items():
        pair = _pair_key(key)
        if significant.setdefault(pair, bool(value)) != bool(value):
            raise ValueError(f"conflicting significance for {sorted(pair)}")
    return significant


def _ranked(means: Mapping[str, float | None]) -> list[str]:
    """The models with a mean, best first (ties by name)."""
    present = {model: float(mean) for model, mean in means.items() if mean is not None and not math.isnan(mean)}
    return sorted(present, key=lambda model: (-present[model], model))

