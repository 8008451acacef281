"""Means and pass rates with their intervals: the bootstrap interval of a mean, Wilson's of a proportion.

Every function here is pure and draws random numbers only from the ``seed`` it is given (an ``int`` or a
``numpy.random.Generator``), so the same call gives the same answer.

Confidence intervals of means are **percentile bootstrap** intervals (the ``alpha/2`` and ``1 - alpha/2``
quantiles of the bootstrap distribution, numpy's default linear interpolation), and the standard error
is the standard deviation (ddof=1) of the bootstrap replicates. With ``clusters`` (e.g. task ids when
runs repeat), whole clusters are resampled with replacement and the statistic is the pooled mean over
all cases of the drawn clusters (cluster bootstrap), so correlated repeats of one task do not count as
independent evidence. The replicates are ``bootstrap.replicate_means``': the same draws as a report's.
"""

from __future__ import annotations

import math
from collections.abc import Hashable, Sequence
from dataclasses import dataclass

import numpy as np

from bench_plugin.report.statistics.bootstrap import replicate_means
from bench_plugin.report.statistics.core import (
    FloatArray,
    Seed,
    check_aligned,
    check_confidence,
    is_missing,
    normal_quantile,
    rng_of,
    unit_codes,
)


def cluster_sums(values: FloatArray, clusters: Sequence[Hashable] | None) -> tuple[FloatArray, FloatArray]:
    """Per-resampling-unit sums and counts: one unit per case, or one per cluster (first-seen order)."""
    if clusters is None:
        return values.copy(), np.ones_like(values)
    codes, n_units = unit_codes(list(clusters))
    sums = np.bincount(codes, weights=values, minlength=n_units).astype(np.float64)
    counts = np.bincount(codes, minlength=n_units).astype(np.float64)
    return sums, counts


def _percentile_ci(replicates: FloatArray, confidence: float) -> tuple[float, float]:
    alpha = 1.0 - confidence
    low, high = np.quantile(replicates, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(low), float(high)


@dataclass(frozen=True)
class MeanCI:
    """A mean with its bootstrap standard error and percentile confidence interval.

    Attributes:
        mean: the plain mean over all present cases.
        se: standard deviation of the bootstrap means (NaN with fewer than two resampling units, or
            with ``n_boot < 2``).
        ci_low: lower percentile-bootstrap bound (NaN when ``se`` is).
        ci_high: upper percentile-bootstrap bound (NaN when ``se`` is).
        n: number of present (non-None, non-NaN) cases.
        n_clusters: number of resampling units: clusters when given, else ``n``.
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
    values: FloatArray,
    clusters: Sequence[Hashable] | None,
    confidence: float,
    n_boot: int,
    rng: np.random.Generator,
) -> MeanCI:
    """``mean_ci`` of present values (the paired difference's interval too)."""
    sums, counts = cluster_sums(values, clusters)
    mean = float(values.mean())
    if len(sums) < 2 or n_boot < 2:
        return MeanCI(mean, math.nan, math.nan, math.nan, len(values), len(sums), confidence)
    replicates = replicate_means(sums[:, None], counts[:, None], n_boot, rng)[:, 0]
    low, high = _percentile_ci(replicates, confidence)
    return MeanCI(mean, float(replicates.std(ddof=1)), low, high, len(values), len(sums), confidence)


def mean_ci(
    values: Sequence[float | None],
    *,
    clusters: Sequence[Hashable] | None = None,
    confidence: float = 0.95,
    n_boot: int = 2000,
    seed: Seed = 0,
) -> MeanCI | None:
    """Mean of the present values with a percentile-bootstrap CI, resampling cases or clusters.

    Args:
        values: one score per case; None/NaN are dropped (with their cluster label).
        clusters: optional label per value (same length), e.g. the task id when a task ran several
            times; whole clusters are resampled (cluster bootstrap) and the SE reflects that.
        confidence: nominal coverage of the interval, in (0, 1).
        n_boot: number of bootstrap replicates.
        seed: an int seed or a numpy Generator (used as is, so its state advances).

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
    return mean_ci_of(present, kept_clusters, confidence, n_boot, rng_of(seed))




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

