"""Means and pass rates with their intervals: a cluster t interval for means, Wilson's for a proportion.

Every interval is over **units**: the cases, or the clusters they belong to (a task whose runs repeat, or
the cluster a record declares). Cases of one unit are correlated, so they count as one piece of evidence.

Method (``cluster_t``), for a mean pooled over the cases of G units with a value:

- standard error: the cluster-robust (CR1) one, ``sqrt(G / (G - 1) * sum_g (s_g - mean * n_g)^2) / N``, with
  ``s_g`` and ``n_g`` the sum and the count of unit g's cases and N all cases (one case per unit: the usual
  standard error of a mean);
- interval: ``mean +- t(G - 1) * se``, Student's t with G - 1 degrees of freedom, the small-sample
  correction that keeps a nominal 95% interval covering about 95% from 4 units up (a simulation test
  checks at least 92%);
- never of zero width: scores lie in known bounds (0 to 1, differences -1 to 1), and G units that all
  agree (8 cases all 1.0) do not show that no unit lies far off; their standard error is 0. Wilson's
  interval for G successes in G trials answers that: a share up to ``t^2 / (G + t^2)`` of the units
  could lie at the bound (Wilson's ``z`` replaced by the interval's own t(G - 1) quantile, so that 4
  agreeing units do not get Wilson's bound for n = 4, which covers 87% at best). That share is taken of
  the units that agree (``agreeing_share``: those at the most common unit mean), and the interval reaches
  at least that far towards each bound: for 8 cases all 1.0, [0.589, 1] (Wilson's: [0.676, 1]); 7 at 1.0
  and one at 0.99, nearly as far. Units that all differ keep their t interval (the floor shrinks to 1/G of
  itself), so the floor does not widen a small suite's intervals to a worst case its data contradict;
- fewer than ``MIN_UNITS`` (4) units: no interval ("too few to bound"), whatever the spread: an interval
  from 2 or 3 units covers far less often than it claims.

A pass rate over cases that are their own units uses Wilson's score interval (``wilson_interval``).
"""

from __future__ import annotations

import math
import warnings
from collections.abc import Hashable, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench_plugin.report.statistics.core import (
    CONFIDENCE,
    FloatArray,
    IntArray,
    check_aligned,
    check_confidence,
    is_missing,
    normal_quantile,
    rounded,
    unit_codes,
)

MIN_UNITS = 4  # fewer units than this: no interval
SCORE_BOUNDS = (0.0, 1.0)
DIFFERENCE_BOUNDS = (-1.0, 1.0)
METHOD = "cluster-t"


def cluster_sums(values: FloatArray, clusters: Sequence[Hashable] | None) -> tuple[FloatArray, FloatArray]:
    """Per-unit sums and counts: one unit per case, or one per cluster (first-seen order)."""
    if clusters is None:
        return values.copy(), np.ones_like(values)
    codes, n_units = unit_codes(list(clusters))
    sums = np.bincount(codes, weights=values, minlength=n_units).astype(np.float64)
    counts = np.bincount(codes, minlength=n_units).astype(np.float64)
    return sums, counts


def unit_sums(values: FloatArray, units: IntArray, n_units: int) -> tuple[FloatArray, FloatArray]:
    """Per unit and column, the sum and the count of the present (non-NaN) values."""
    present = ~np.isnan(values)
    filled = np.where(present, values, 0.0)
    columns = values.shape[1]
    sums = np.zeros((n_units, columns), dtype=np.float64)
    counts = np.zeros((n_units, columns), dtype=np.float64)
    for column in range(columns):
        sums[:, column] = np.bincount(units, weights=filled[:, column], minlength=n_units)
        counts[:, column] = np.bincount(units, weights=present[:, column].astype(np.float64), minlength=n_units)
    return sums, counts


def t_quantile(share: float, df: FloatArray | IntArray) -> FloatArray:
    """Student's t quantile with ``df`` degrees of freedom (``scipy.stats.t.ppf``).

    ``scipy.special.stdtrit`` is the same function; importing scipy.special costs a report a sixth of what
    scipy.stats does.
    """
    from scipy.special import stdtrit

    quantiles: FloatArray = np.asarray(stdtrit(df, share), dtype=np.float64)
    return quantiles


@dataclass(frozen=True)
class ClusterT:
    """Per column of a units x columns table: the pooled mean, its CR1 standard error and the interval.

    Attributes:
        mean: pooled mean over the column's cases (NaN without any).
        se: CR1 standard error (NaN with fewer than two units).
        low: lower end (NaN with fewer than ``MIN_UNITS`` units).
        high: upper end (NaN likewise).
        n: cases with a value.
        units: units with a value.
    """

    mean: FloatArray
    se: FloatArray
    low: FloatArray
    high: FloatArray
    n: FloatArray
    units: IntArray


def cluster_t(
    sums: FloatArray, counts: FloatArray, lower: FloatArray, upper: FloatArray, confidence: float = CONFIDENCE
) -> ClusterT:
    """The cluster t interval of each column (see the module docstring); ``lower`` / ``upper`` bound its values."""
    present = counts.sum(axis=0)
    units = np.count_nonzero(counts, axis=0)
    with np.errstate(invalid="ignore", divide="ignore"):
        mean = sums.sum(axis=0) / present
        squares = ((sums - mean * counts) ** 2).sum(axis=0)
        se = np.where(units >= 2, np.sqrt(units / (units - 1) * squares) / present, np.nan)
    quantile = t_quantile(0.5 + confidence / 2.0, np.maximum(units - 1, 1))
    half = quantile * se
    unseen = agreeing_share(sums, counts) * quantile**2 / (np.maximum(units, 1) + quantile**2)
    low = np.maximum(lower, np.minimum(mean - half, mean - unseen * (mean - lower)))
    high = np.minimum(upper, np.maximum(mean + half, mean + unseen * (upper - mean)))
    enough = units >= MIN_UNITS
    return ClusterT(mean, se, np.where(enough, low, np.nan), np.where(enough, high, np.nan), present, units)


def agreeing_share(sums: FloatArray, counts: FloatArray) -> FloatArray:
    """Per column, the share of its units whose mean is the most common one (to the 6 decimals scores keep)."""
    shares = np.ones(sums.shape[1])
    with np.errstate(invalid="ignore", divide="ignore"):
        means = np.round(sums / counts, 6)
    for column in range(sums.shape[1]):
        valued = means[counts[:, column] > 0, column]
        if valued.size:
            shares[column] = np.unique(valued, return_counts=True)[1].max() / valued.size
    return shares


def bounds_with(values: FloatArray, bounds: Sequence[tuple[float, float]]) -> tuple[FloatArray, FloatArray]:
    """Per column the scale's ends, widened to the values seen (a scorer outside 0-1 is not clipped)."""
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)  # an all-NaN column: its ends stay the scale's
        seen_low, seen_high = np.nanmin(values, axis=0), np.nanmax(values, axis=0)
    lower = np.array([low for low, _ in bounds], dtype=np.float64)
    upper = np.array([high for _, high in bounds], dtype=np.float64)
    return np.fmin(lower, seen_low), np.fmax(upper, seen_high)


def cluster_means(
    values: FloatArray,
    units: IntArray,
    n_units: int,
    *,
    bounds: Sequence[tuple[float, float]] | None = None,
    confidence: float = CONFIDENCE,
) -> list[dict[str, Any] | None]:
    """The mean of each column of ``values`` with its cluster t interval, from one pass over the units.

    Args:
        values: one row per case, one column per figure; NaN where the case has no value for it.
        units: the unit of each row, ``0 <= unit < n_units`` (a case, or its cluster).
        n_units: the number of units.
        bounds: per column, the ends of its scale (default 0 and 1: a score or a rate).
        confidence: the interval's nominal coverage.

    Returns:
        Per column ``{"mean", "se", "ci_low", "ci_high", "n", "units", "method", "too_few"}`` (``n``: cases
        with a value, ``units``: units with a value; ``se`` None with fewer than two units, the ends None
        with fewer than ``MIN_UNITS``, then ``too_few`` is True), or None for a column with no value at all.
        Figures are rounded to ``DECIMALS``.
    """
    sums, counts = unit_sums(values, units, n_units)
    lower, upper = bounds_with(values, bounds or [SCORE_BOUNDS] * values.shape[1])
    found = cluster_t(sums, counts, lower, upper, confidence)
    return [_estimate(found, column) for column in range(values.shape[1])]


def _estimate(found: ClusterT, column: int) -> dict[str, Any] | None:
    if found.n[column] == 0:
        return None
    units = int(found.units[column])
    return {
        "mean": rounded(found.mean[column]), "se": rounded(found.se[column]),
        "ci_low": rounded(found.low[column]), "ci_high": rounded(found.high[column]),
        "n": int(found.n[column]), "units": units, "method": METHOD, "too_few": units < MIN_UNITS,
    }


@dataclass(frozen=True)
class MeanCI:
    """A mean with its cluster-robust standard error and cluster t interval.

    Attributes:
        mean: the plain mean over all present cases.
        se: CR1 standard error (NaN with fewer than two units).
        ci_low: lower end (NaN with fewer than ``MIN_UNITS`` units: too few to bound).
        ci_high: upper end (NaN likewise).
        n: number of present (non-None, non-NaN) cases.
        n_clusters: number of units: clusters when given, else ``n``.
        confidence: the interval's nominal coverage.
    """

    mean: float
    se: float
    ci_low: float
    ci_high: float
    n: int
    n_clusters: int
    confidence: float


def mean_ci_of(
    values: FloatArray, clusters: Sequence[Hashable] | None, confidence: float, bounds: tuple[float, float]
) -> MeanCI:
    """``mean_ci`` of present values (the paired difference's interval too)."""
    sums, counts = cluster_sums(values, clusters)
    lower, upper = bounds_with(values[:, None], [bounds])
    found = cluster_t(sums[:, None], counts[:, None], lower, upper, confidence)
    return MeanCI(float(values.mean()), float(found.se[0]), float(found.low[0]), float(found.high[0]),
                  len(values), len(sums), confidence)


def mean_ci(
    values: Sequence[float | None],
    *,
    clusters: Sequence[Hashable] | None = None,
    confidence: float = 0.95,
    bounds: tuple[float, float] = SCORE_BOUNDS,
) -> MeanCI | None:
    """Mean of the present values with a cluster t interval (see the module docstring).

    Args:
        values: one score per case; None/NaN are dropped (with their cluster label).
        clusters: optional label per value (same length), e.g. the task id when a task ran several
            times; the cases of a cluster are one unit, and the SE reflects that. None: each case is a unit.
        confidence: nominal coverage of the interval, in (0, 1).
        bounds: the ends of the values' scale (widened to the values seen).

    Returns:
        A :class:`MeanCI`, or None when no value is present.

    Raises:
        ValueError: on a bad ``confidence`` or when ``clusters`` does not match ``values`` in length.
    """
    check_confidence(confidence)
    check_aligned("values", values, clusters)
    keep = [index for index, value in enumerate(values) if not is_missing(value)]
    if not keep:
        return None
    present = np.array([values[index] for index in keep], dtype=np.float64)
    kept_clusters = None if clusters is None else [clusters[index] for index in keep]
    return mean_ci_of(present, kept_clusters, confidence, bounds)


@dataclass(frozen=True)
class ProportionCI:
    """A pass rate with its Wilson score interval.

    Attributes:
        successes: number of passing runs.
        n: number of runs.
        rate: ``successes / n``.
        low: lower Wilson bound.
        high: upper Wilson bound.
        confidence: the interval's nominal coverage.
    """

    successes: int
    n: int
    rate: float
    low: float
    high: float
    confidence: float


def wilson_interval(successes: int, n: int, confidence: float = 0.95) -> ProportionCI | None:
    """Wilson score interval of a binomial proportion (no continuity correction).

    Args:
        successes: number of successes, ``0 <= successes <= n``.
        n: number of trials.
        confidence: nominal coverage, in (0, 1).

    Returns:
        A :class:`ProportionCI` (e.g. 8/10 at 95%: 0.4902..0.9433), or None when ``n == 0``.

    Raises:
        ValueError: on negative counts, ``successes > n`` or a bad ``confidence``.
    """
    check_confidence(confidence)
    if n < 0 or not 0 <= successes <= max(n, 0):
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return None
    z = normal_quantile(0.5 + confidence / 2.0)
    rate = successes / n
    denominator = 1.0 + z * z / n
    centre = (rate + z * z / (2.0 * n)) / denominator
    half = z * math.sqrt(rate * (1.0 - rate) / n + z * z / (4.0 * n * n)) / denominator
    # 0/n and n/n touch the ends exactly: rounding of centre - half would leave a 1e-17 there
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return ProportionCI(successes, n, rate, low, high, confidence)

