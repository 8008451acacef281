"""The paired figures of a comparison: each case's current value minus its baseline value, with interval and p.

The interval and the p-value come from ``report.statistics.paired_difference`` (its sign-flip permutation test,
its interval over the resampling units), Holm's adjustment from ``statistics.holm_adjust``; nothing here is a
method of its own. A figure needs two units to be tested: with one there is a difference and no interval.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Hashable, Sequence
from dataclasses import dataclass, replace
from typing import Any

from bench_plugin.report.compare.facts import CaseFacts
from bench_plugin.report.compare.verdicts import INCONCLUSIVE, CompareSettings, judge
from bench_plugin.report.statistics import holm_adjust, paired_difference

Pair = tuple[CaseFacts, CaseFacts]
Reading = Callable[[CaseFacts], float | None]
DECIMALS = 6


@dataclass(frozen=True)
class Figure:
    """A paired difference over the cases both sides have a value for.

    Attributes:
        baseline: the baseline's mean over those cases.
        current: the current run's mean over them.
        difference: ``current - baseline``.
        low: the interval's lower end, None when it cannot be bounded (fewer than two units).
        high: its upper end.
        p: the two-sided p-value for "no change", None when not tested.
        n: the cases.
        units: the resampling units (tasks, or cases within a task).
        p_holm: ``p`` adjusted over the comparisons made (``adjust``).
        verdict: ``verdicts.judge`` of the figure.
    """

    baseline: float
    current: float
    difference: float
    low: float | None
    high: float | None
    p: float | None
    n: int
    units: int
    p_holm: float | None = None
    verdict: str = INCONCLUSIVE

    def to_dict(self) -> dict[str, Any]:
        """Plain data for compare.json, rounded so that the same records give the same file."""
        return {"baseline": _round(self.baseline), "current": _round(self.current),
                "difference": _round(self.difference), "low": _round(self.low), "high": _round(self.high),
                "p": _round(self.p), "p_holm": _round(self.p_holm), "n": self.n, "units": self.units,
                "verdict": self.verdict}


def score(facts: CaseFacts) -> float | None:
    """A case's composite score (None: unscored, or it never reached its scorers)."""
    return facts.score


def passed(facts: CaseFacts) -> float | None:
    """A case's pass (1) or fail (0); None for every other outcome."""
    return facts.passed


def paired_figure(pairs: Sequence[Pair], read: Reading, settings: CompareSettings, *,
                  clustered: bool) -> Figure | None:
    """The paired difference of ``read`` over ``pairs``; None when no pair has a value on both sides.

    Args:
        pairs: (baseline, current) facts of the same cases.
        read: the value of a case (``score`` or ``passed``).
        settings: the interval's confidence and the seed.
        clustered: resample whole clusters (``CaseFacts.cluster``: a task's runs and prompt variants together);
            else each case is a unit.
    """
    values = _both_present(pairs, read)
    if not values:
        return None
    clusters: list[Hashable] | None = [cluster for _, _, cluster in values] if clustered else None
    units = len(set(clusters)) if clusters is not None else len(values)
    if units < 2:  # nothing to resample or flip
        return _difference_only(values, units)
    result = paired_difference([now for _, now, _ in values], [before for before, _, _ in values],
                               clusters=clusters, confidence=settings.confidence, seed=settings.seed)
    assert result is not None  # every value is present
    return Figure(result.mean_b, result.mean_a, result.mean_diff, _finite(result.ci_low), _finite(result.ci_high),
                  result.p_value, result.n, result.n_clusters)


def _difference_only(values: Sequence[tuple[float, float, str]], units: int) -> Figure:
    """The means and their difference, with no interval and no test."""
    mean_before = math.fsum(before for before, _, _ in values) / len(values)
    mean_now = math.fsum(now for _, now, _ in values) / len(values)
    return Figure(mean_before, mean_now, mean_now - mean_before, None, None, None, len(values), units)


def adjust(figures: Sequence[Figure | None], settings: CompareSettings) -> list[Figure | None]:
    """The figures with their Holm-adjusted p-values over the family and their verdicts, in the same order."""
    adjusted = holm_adjust([None if figure is None else figure.p for figure in figures])
    judged: list[Figure | None] = []
    for figure, p_holm in zip(figures, adjusted, strict=True):
        if figure is None:
            judged.append(None)
            continue
        verdict = judge(figure.difference, figure.low, figure.high, p_holm, settings)
        judged.append(replace(figure, p_holm=p_holm, verdict=verdict))
    return judged


def _both_present(pairs: Sequence[Pair], read: Reading) -> list[tuple[float, float, str]]:
    """(baseline value, current value, cluster) of each pair with a value on both sides."""
    values = []
    for before, now in pairs:
        value_before, value_now = read(before), read(now)
        if value_before is not None and value_now is not None:
            values.append((value_before, value_now, now.cluster))
    return values


def _finite(value: float) -> float | None:
    return value if math.isfinite(value) else None


def _round(value: float | None) -> float | None:
    return None if value is None else round(value, DECIMALS)
