"""Paired comparisons of two models case by case: the mean difference with its interval, and rank tests.

The p-value of :func:`paired_difference` comes from a **sign-flip permutation test** (the paired
randomization test): under "A and B are exchangeable on each case" the sign of every case's difference
(of every cluster's differences together, with ``clusters``) is flipped at random. It is exact (all
``2**G`` sign patterns) when ``2**G <= n_perm`` and Monte Carlo with the ``(1 + b) / (1 + n_perm)``
correction otherwise. Its interval is :func:`intervals.mean_ci`'s of the differences, on the scale -1 to 1.

Ties. Scores are stored rounded to 6 decimals, so two equal differences of grid values (judge grades
``(g - 1) / 9``: 6/9 - 4/9 is stored 0.222223, 3/9 - 1/9 0.222222) can differ in the last digit. The rank
and sign tests first move the differences onto the coarsest grid ``1/k`` (``k <= MAX_GRID``) that they all
lie on within that rounding (``snap_to_grid``), so equal differences tie and a difference of 1e-6 is
zero; differences on no such grid (continuous scores) are left as they are.
"""

from __future__ import annotations

from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any, Literal

import numpy as np

from bench_plugin.report.statistics.core import (
    FloatArray,
    Seed,
    binomial_p_value,
    check_aligned,
    check_confidence,
    paired_values,
    rng_of,
)
from bench_plugin.report.statistics.intervals import DIFFERENCE_BOUNDS, cluster_sums, mean_ci_of

# sign patterns x units drawn at once (bounds memory on large inputs)
_CHUNK_CELLS = 2_000_000
# the most a stored difference (or a mean of stored differences) is off: two roundings to 6 decimals
STORAGE_RESOLUTION = 1e-6
MAX_GRID = 1000  # a 0-100 scale averaged over 10 runs
_PERMUTED_AT_MOST = 13  # scipy's wilcoxon permutes the signs of this many differences at most
_GRID_TOLERANCE = STORAGE_RESOLUTION * (1 + 1e-6)  # and the float error of the subtraction
_GRID_BATCH = 64


def grid_denominator(values: FloatArray) -> int | None:
    """The smallest ``k <= MAX_GRID`` such that every value is a multiple of ``1/k`` within storage rounding."""
    candidates = np.arange(1, MAX_GRID + 1, dtype=np.float64)
    for start in range(0, len(values), _GRID_BATCH):
        scaled = values[start:start + _GRID_BATCH, None] * candidates
        fits = np.all(np.abs(scaled - np.round(scaled)) <= _GRID_TOLERANCE * candidates, axis=0)
        candidates = candidates[fits]
        if not candidates.size:
            return None
    return int(candidates[0]) if len(values) else None


def snap_to_grid(values: FloatArray) -> FloatArray:
    """``values`` moved onto their grid (``grid_denominator``), so equal grid values are equal floats."""
    denominator = grid_denominator(values)
    if denominator is None:
        return values
    snapped: FloatArray = np.round(values * denominator) / denominator
    return snapped


@dataclass(frozen=True)
class PairedDifference:
    """Mean of ``a - b`` over the cases both models finished, with a cluster t interval and a p-value.

    Attributes:
        mean_a: mean of ``a`` over the paired cases.
        mean_b: mean of ``b`` over the paired cases.
        mean_diff: mean of ``a - b``.
        se: CR1 standard error of ``mean_diff`` (NaN with fewer than two units).
        ci_low: lower end of the cluster t interval of ``mean_diff`` (NaN with fewer than ``MIN_UNITS`` units).
        ci_high: its upper end.
        p_value: two-sided sign-flip permutation p-value for "no difference".
        p_method: ``"exact"`` (all sign patterns enumerated) or ``"monte-carlo"``.
        n: number of paired cases.
        n_clusters: number of resampling units (clusters, or ``n``).
        confidence: the interval's nominal coverage.
    """

    mean_a: float
    mean_b: float
    mean_diff: float
    se: float
    ci_low: float
    ci_high: float
    p_value: float
    p_method: Literal["exact", "monte-carlo"]
    n: int
    n_clusters: int
    confidence: float



def sign_flip_p_value(
    sums: FloatArray, n_perm: int, rng: np.random.Generator
) -> tuple[float, Literal["exact", "monte-carlo"]]:
    """Two-sided sign-flip p-value of ``sums.sum()`` (the case count is fixed, so a sum is a mean)."""
    units = len(sums)
    observed = abs(float(sums.sum()))
    tolerance = 1e-9 * max(1.0, float(np.abs(sums).sum()))
    if units <= 20 and 2**units <= n_perm:
        patterns = np.arange(2**units, dtype=np.int64)[:, None] >> np.arange(units, dtype=np.int64)
        signs = 1.0 - 2.0 * (patterns & 1)
        extreme = int(np.count_nonzero(np.abs(signs @ sums) >= observed - tolerance))
        return extreme / 2**units, "exact"
    extreme = 0
    step = max(1, _CHUNK_CELLS // max(units, 1))
    for start in range(0, n_perm, step):
        stop = min(n_perm, start + step)
        signs = rng.choice(np.array([-1.0, 1.0]), size=(stop - start, units))
        extreme += int(np.count_nonzero(np.abs(signs @ sums) >= observed - tolerance))
    return (1 + extreme) / (1 + n_perm), "monte-carlo"



def paired_difference(
    a: Sequence[float | None],
    b: Sequence[float | None],
    *,
    clusters: Sequence[Hashable] | None = None,
    confidence: float = 0.95,
    n_perm: int = 2000,
    seed: Seed = 0,
) -> PairedDifference | None:
    """Mean difference ``a - b`` over cases both models finished, with a cluster t interval and permutation p.

    The CI is ``intervals.mean_ci``'s over cases (over clusters when ``clusters`` is given). The
    p-value is a two-sided sign-flip permutation test of the mean difference: exact when the
    ``2**n_units`` patterns fit in ``n_perm``, else Monte Carlo with ``n_perm`` draws. With all
    differences zero the p-value is 1.0.

    Args:
        a: model A's score per case; None/NaN means A did not finish that case.
        b: model B's score on the same cases, in the same order.
        clusters: optional label per case (e.g. the task id of a repeated run); one unit of the
            interval, and sign-flipped as a whole.
        confidence: nominal coverage of the interval, in (0, 1).
        n_perm: number of random sign patterns (or the exact-enumeration budget).
        seed: an int seed or a numpy Generator.

    Returns:
        A :class:`PairedDifference`, or None when no case has both scores.

    Raises:
        ValueError: when ``a``, ``b`` and ``clusters`` differ in length, or on a bad ``confidence``.
    """
    check_confidence(confidence)
    check_aligned("a", a, clusters)
    keep, xs, ys = paired_values(a, b)
    if not keep:
        return None
    kept_clusters = None if clusters is None else [clusters[index] for index in keep]
    rng = rng_of(seed)
    diffs = xs - ys
    interval = mean_ci_of(diffs, kept_clusters, confidence, DIFFERENCE_BOUNDS)
    sums, _ = cluster_sums(diffs, kept_clusters)
    p_value, p_method = sign_flip_p_value(sums, n_perm, rng)
    return PairedDifference(
        mean_a=float(xs.mean()),
        mean_b=float(ys.mean()),
        mean_diff=interval.mean,
        se=interval.se,
        ci_low=interval.ci_low,
        ci_high=interval.ci_high,
        p_value=p_value,
        p_method=p_method,
        n=interval.n,
        n_clusters=interval.n_clusters,
        confidence=confidence,
    )



@dataclass(frozen=True)
class WilcoxonResult:
    """Wilcoxon signed-rank test of ``a - b`` (two-sided).

    Attributes:
        statistic: scipy's two-sided statistic, ``min(W+, W-)`` (0.0 when every difference is zero).
        p_value: two-sided p-value (1.0 when every difference is zero).
        n: number of paired cases (both present).
        n_nonzero: number of paired cases with a non-zero difference.
    """

    statistic: float
    p_value: float
    n: int
    n_nonzero: int


def wilcoxon_signed_rank(
    a: Sequence[float | None],
    b: Sequence[float | None],
    *,
    zero_method: Literal["wilcox", "pratt", "zsplit"] = "wilcox",
) -> WilcoxonResult | None:
    """Wilcoxon signed-rank test on paired scores (e.g. 1-10 judge ratings), two-sided.

    The differences are snapped to their grid first (module docstring), so equal differences tie.
    Uses ``scipy.stats.wilcoxon(method="auto")``: exact for up to 50 distinct non-zero differences;
    with ties or zeros an exhaustive permutation for up to 13 cases and the tie-corrected normal
    approximation beyond (scipy >= 1.15; older scipy uses the normal approximation with ties).

    Args:
        a: model A's score per case; None/NaN drops the case.
        b: model B's score on the same cases.
        zero_method: scipy's handling of zero differences (``"wilcox"`` drops them).

    Returns:
        A :class:`WilcoxonResult` (``p_value == 1.0`` when all differences are zero), or None when no
        case has both scores.

    Raises:
        ValueError: when ``a`` and ``b`` differ in length.
    """
    keep, xs, ys = paired_values(a, b)
    if not keep:
        return None
    diffs = snap_to_grid(xs - ys)
    nonzero = int(np.count_nonzero(diffs))
    if nonzero == 0:
        return WilcoxonResult(0.0, 1.0, len(keep), 0)
    from scipy import stats as scipy_stats  # start-up: imported on use (see core.normal_quantile)

    result = scipy_stats.wilcoxon(diffs, zero_method=zero_method, alternative="two-sided", method=_method(diffs))
    p_value = float(result.pvalue)
    if _permuted(diffs) and zero_method == "wilcox":
        p_value = _signed_rank_permutation_p(diffs[diffs != 0])
    return WilcoxonResult(float(result.statistic), p_value, len(keep), nonzero)


def _permuted(diffs: FloatArray) -> bool:
    """Whether scipy's ``method="auto"`` takes its permutation path: ties or zeros among at most 13 differences."""
    magnitudes = np.abs(diffs)
    return len(diffs) <= _PERMUTED_AT_MOST and (len(np.unique(magnitudes)) < len(diffs) or not magnitudes.all())


def _method(diffs: FloatArray) -> Any:  # scipy's stubs still name "approx", which scipy now calls "asymptotic"
    """The method scipy chooses, except its permutation path, computed here (``_signed_rank_permutation_p``)."""
    return "asymptotic" if _permuted(diffs) else "auto"


def _signed_rank_permutation_p(diffs: FloatArray) -> float:
    """Two-sided p of the signed-rank sum over all ``2**n`` sign patterns, ranks averaged over ties.

    The p-value scipy's ``wilcoxon(method="auto")`` gives with ties or zeros among at most 13 differences
    (its ``PermutationMethod``), computed in one matrix product instead of seconds of resampling calls.
    """
    from scipy.stats import rankdata

    ranks = rankdata(np.abs(diffs))
    observed = float(ranks[diffs > 0].sum())
    patterns = (np.arange(2 ** len(diffs), dtype=np.int64)[:, None] >> np.arange(len(diffs), dtype=np.int64)) & 1
    totals = patterns @ ranks
    tolerance = 1e-9 * float(ranks.sum())
    below = float(np.mean(totals <= observed + tolerance))
    above = float(np.mean(totals >= observed - tolerance))
    return min(1.0, 2.0 * min(below, above))


@dataclass(frozen=True)
class SignTestResult:
    """Two-sided sign test of ``a`` against ``b``.

    Attributes:
        wins_a: cases where ``a > b``.
        wins_b: cases where ``a < b``.
        ties: cases where ``a == b`` on the scores' grid (left out of the test).
        n: number of paired cases.
        p_value: exact two-sided binomial p-value of ``wins_a`` in ``wins_a + wins_b`` at 1/2 (1.0
            when every case is a tie).
    """

    wins_a: int
    wins_b: int
    ties: int
    n: int
    p_value: float


def sign_test(a: Sequence[float | None], b: Sequence[float | None]) -> SignTestResult | None:
    """Sign test: are A's wins among the non-tied cases different from half? (``scipy.stats.binomtest``).

    Args:
        a: model A's score per case; None/NaN drops the case.
        b: model B's score on the same cases.

    Returns:
        A :class:`SignTestResult`, or None when no case has both scores.

    Raises:
        ValueError: when ``a`` and ``b`` differ in length.
    """
    keep, xs, ys = paired_values(a, b)
    if not keep:
        return None
    diffs = snap_to_grid(xs - ys)
    wins_a = int(np.count_nonzero(diffs > 0))
    wins_b = int(np.count_nonzero(diffs < 0))
    ties = len(keep) - wins_a - wins_b
    decided = wins_a + wins_b
    p_value = 1.0 if decided == 0 else binomial_p_value(wins_a, decided)
    return SignTestResult(wins_a, wins_b, ties, len(keep), min(1.0, p_value))

