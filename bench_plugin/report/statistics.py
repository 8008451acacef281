"""Significance statistics (bootstrap CIs, paired tests, pass@k, Bradley-Terry) to decide "A beats B".

Every function here is pure: it reads its arguments, returns a frozen dataclass (or a plain
value), and draws random numbers only from the ``seed`` it is given (an ``int`` or a
``numpy.random.Generator``), so the same call gives the same answer.

Missing values. ``None`` and NaN mean "no value" (a case that was not scored, a run that did not
finish): they are dropped, never counted as zero. Paired functions keep only the cases that both
models finished. A function that is left with nothing to work on returns ``None`` (documented per
function); a spread that cannot be estimated (one case, one cluster) is NaN.

Methods chosen:

- Confidence intervals are **percentile bootstrap** intervals (the ``alpha/2`` and ``1 - alpha/2``
  quantiles of the bootstrap distribution, numpy's default linear interpolation), and the standard
  error is the standard deviation (ddof=1) of the bootstrap replicates. With ``clusters`` (e.g. task
  ids when runs repeat), whole clusters are resampled with replacement and the statistic is the
  pooled mean over all cases of the drawn clusters (cluster bootstrap), so correlated repeats of one
  task do not count as independent evidence.
- The p-value of :func:`paired_difference` comes from a **sign-flip permutation test** (the paired
  randomization test): under "A and B are exchangeable on each case" the sign of every case's
  difference (of every cluster's differences together, with ``clusters``) is flipped at random. It is
  exact (all ``2**G`` sign patterns) when ``2**G <= n_perm`` and Monte Carlo with the ``(1 + b) /
  (1 + n_perm)`` correction otherwise.
- Bradley-Terry is fitted here by Newton's method (a halving line search, every bootstrap replicate
  solved in one batched step) on the weighted, pair-aggregated log-likelihood, rather than with
  ``choix``: choix has no notion of a tie or of weighted comparisons (a half win each would need
  duplicated data), ships no type hints (this module is ``mypy --strict`` clean), and the whole fit is
  some forty lines of numpy. Resampling comparisons with replacement is drawn as one multinomial over
  the distinct (pair, outcome) kinds, which has the same distribution and costs nothing per comparison,
  so a thousand replicates of 20,000 comparisons take milliseconds. A tiny L2 term
  (``l2``, default ``1e-6``) keeps the optimum finite when a model wins or loses every game; it moves
  ordinary ratings by far less than 0.01 points. Ratings are put on the Elo-like scale of LMSYS/FastChat
  (``scale * log_base(strength)``, scale 400, base 10), centred so their mean is ``init_rating``
  (1000), or shifted so that a named ``anchor`` model sits at ``init_rating``.
"""

from __future__ import annotations

import functools
import math
from collections.abc import Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from statistics import NormalDist
from typing import Any, Literal

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Seed = int | np.random.Generator
PairKey = frozenset[str] | tuple[str, str]
# Mapping keys are invariant, so a dict keyed only by tuples (or only by frozensets) needs its own arm
PValues = (
    Mapping[frozenset[str], float | None]
    | Mapping[tuple[str, str], float | None]
    | Mapping[PairKey, float | None]
)
Significance = Mapping[frozenset[str], bool] | Mapping[tuple[str, str], bool] | Mapping[PairKey, bool]

# how many bootstrap replicates x resampling units to draw at once (bounds memory on large inputs)
_CHUNK_CELLS = 2_000_000
# Bradley-Terry: Newton steps at most, and the gradient at which a fit is done
_BT_MAX_STEPS = 200
_BT_STEP_TOLERANCE = 1e-10  # natural-log strength: 4e-8 rating points


# ---------------------------------------------------------------------------------------------------
# helpers


def _is_missing(value: float | None) -> bool:
    """None or NaN (NaN is the one value not equal to itself, numpy floats included)."""
    return value is None or value != value


def _check_confidence(confidence: float) -> None:
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence}")


@functools.lru_cache(maxsize=16)
def _normal_quantile(share: float) -> float:
    """The standard normal quantile, computed once per confidence.

    The standard library's (Wichura's AS241, within 1e-15 of scipy's ``ppf``): every run's report
    needs it, and importing scipy.stats for it cost each run about a second of CPU and 30 MB.
    """
    return NormalDist().inv_cdf(share)


def _binomial_p_value(successes: int, trials: int) -> float:
    """Two-sided p-value of ``successes`` in ``trials`` against one half (``scipy.stats.binomtest``)."""
    from scipy import stats as scipy_stats  # start-up: scipy.stats costs ~1 s and 30 MB; only some reports use it

    return float(scipy_stats.binomtest(successes, trials, 0.5).pvalue)


def _rng(seed: Seed) -> np.random.Generator:
    return np.random.default_rng(seed)


def _cluster_sums(values: FloatArray, clusters: Sequence[Hashable] | None) -> tuple[FloatArray, FloatArray]:
    """Per-resampling-unit sums and counts: one unit per case, or one per cluster (first-seen order)."""
    if clusters is None:
        return values.copy(), np.ones_like(values)
    index: dict[Hashable, int] = {}
    codes = np.fromiter(
        (index.setdefault(cluster, len(index)) for cluster in clusters), dtype=np.int64, count=len(clusters)
    )
    sums = np.bincount(codes, weights=values, minlength=len(index)).astype(np.float64)
    counts = np.bincount(codes, minlength=len(index)).astype(np.float64)
    return sums, counts


def _bootstrap_means(
    sums: FloatArray, counts: FloatArray, n_boot: int, rng: np.random.Generator
) -> FloatArray:
    """``n_boot`` pooled means, each over ``len(sums)`` units drawn with replacement."""
    units = len(sums)
    out = np.empty(n_boot, dtype=np.float64)
    step = max(1, _CHUNK_CELLS // max(units, 1))
    for start in range(0, n_boot, step):
        stop = min(n_boot, start + step)
        draws = rng.integers(0, units, size=(stop - start, units))
        out[start:stop] = sums[draws].sum(axis=1) / counts[draws].sum(axis=1)
    return out


def _percentile_ci(replicates: FloatArray, confidence: float) -> tuple[float, float]:
    alpha = 1.0 - confidence
    low, high = np.quantile(replicates, [alpha / 2.0, 1.0 - alpha / 2.0])
    return float(low), float(high)


def _aligned(name: str, values: Sequence[float | None], clusters: Sequence[Hashable] | None) -> None:
    if clusters is not None and len(clusters) != len(values):
        raise ValueError(f"clusters has {len(clusters)} entries but {name} has {len(values)}")


# ---------------------------------------------------------------------------------------------------
# 1. mean with a bootstrap CI


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


def _mean_ci_of(
    values: FloatArray,
    clusters: Sequence[Hashable] | None,
    confidence: float,
    n_boot: int,
    rng: np.random.Generator,
) -> MeanCI:
    sums, counts = _cluster_sums(values, clusters)
    mean = float(values.mean())
    if len(sums) < 2 or n_boot < 2:
        return MeanCI(mean, math.nan, math.nan, math.nan, len(values), len(sums), confidence)
    replicates = _bootstrap_means(sums, counts, n_boot, rng)
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
    _check_confidence(confidence)
    _aligned("values", values, clusters)
    keep = [index for index, value in enumerate(values) if not _is_missing(value)]
    if not keep:
        return None
    present = np.array([values[index] for index in keep], dtype=np.float64)
    kept_clusters = None if clusters is None else [clusters[index] for index in keep]
    return _mean_ci_of(present, kept_clusters, confidence, n_boot, _rng(seed))


# ---------------------------------------------------------------------------------------------------
# 2. paired difference


@dataclass(frozen=True)
class PairedDifference:
    """Mean of ``a - b`` over the cases both models finished, with a bootstrap CI and a p-value.

    Attributes:
        mean_a: mean of ``a`` over the paired cases.
        mean_b: mean of ``b`` over the paired cases.
        mean_diff: mean of ``a - b``.
        se: bootstrap standard error of ``mean_diff`` (NaN with fewer than two resampling units).
        ci_low: lower percentile-bootstrap bound of ``mean_diff``.
        ci_high: upper percentile-bootstrap bound of ``mean_diff``.
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


def _paired(a: Sequence[float | None], b: Sequence[float | None]) -> tuple[list[int], FloatArray, FloatArray]:
    if len(a) != len(b):
        raise ValueError(f"a and b must be paired case by case, got lengths {len(a)} and {len(b)}")
    keep = [index for index in range(len(a)) if not _is_missing(a[index]) and not _is_missing(b[index])]
    return (
        keep,
        np.array([a[index] for index in keep], dtype=np.float64),
        np.array([b[index] for index in keep], dtype=np.float64),
    )


def _sign_flip_p_value(
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
    n_boot: int = 2000,
    n_perm: int = 2000,
    seed: Seed = 0,
) -> PairedDifference | None:
    """Mean difference ``a - b`` over cases both models finished, with bootstrap CI and permutation p.

    The CI is a percentile bootstrap over cases (over clusters when ``clusters`` is given). The
    p-value is a two-sided sign-flip permutation test of the mean difference: exact when the
    ``2**n_units`` patterns fit in ``n_perm``, else Monte Carlo with ``n_perm`` draws. With all
    differences zero the p-value is 1.0.

    Args:
        a: model A's score per case; None/NaN means A did not finish that case.
        b: model B's score on the same cases, in the same order.
        clusters: optional label per case (e.g. the task id of a repeated run); resampled and
            sign-flipped as whole clusters.
        confidence: nominal coverage of the interval, in (0, 1).
        n_boot: number of bootstrap replicates for the CI.
        n_perm: number of random sign patterns (or the exact-enumeration budget).
        seed: an int seed or a numpy Generator.

    Returns:
        A :class:`PairedDifference`, or None when no case has both scores.

    Raises:
        ValueError: when ``a``, ``b`` and ``clusters`` differ in length, or on a bad ``confidence``.
    """
    _check_confidence(confidence)
    _aligned("a", a, clusters)
    keep, xs, ys = _paired(a, b)
    if not keep:
        return None
    kept_clusters = None if clusters is None else [clusters[index] for index in keep]
    rng = _rng(seed)
    diffs = xs - ys
    interval = _mean_ci_of(diffs, kept_clusters, confidence, n_boot, rng)
    sums, _ = _cluster_sums(diffs, kept_clusters)
    p_value, p_method = _sign_flip_p_value(sums, n_perm, rng)
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


# ---------------------------------------------------------------------------------------------------
# 3. rank tests for ordinal judge scales


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
    keep, xs, ys = _paired(a, b)
    if not keep:
        return None
    diffs = xs - ys
    nonzero = int(np.count_nonzero(diffs))
    if nonzero == 0:
        return WilcoxonResult(0.0, 1.0, len(keep), 0)
    from scipy import stats as scipy_stats  # start-up: imported on use (see _normal_quantile)

    result = scipy_stats.wilcoxon(diffs, zero_method=zero_method, alternative="two-sided", method="auto")
    return WilcoxonResult(float(result.statistic), float(result.pvalue), len(keep), nonzero)


@dataclass(frozen=True)
class SignTestResult:
    """Two-sided sign test of ``a`` against ``b``.

    Attributes:
        wins_a: cases where ``a > b``.
        wins_b: cases where ``a < b``.
        ties: cases where ``a == b`` (left out of the test).
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
    keep, xs, ys = _paired(a, b)
    if not keep:
        return None
    wins_a = int(np.count_nonzero(xs > ys))
    wins_b = int(np.count_nonzero(xs < ys))
    ties = len(keep) - wins_a - wins_b
    decided = wins_a + wins_b
    p_value = 1.0 if decided == 0 else _binomial_p_value(wins_a, decided)
    return SignTestResult(wins_a, wins_b, ties, len(keep), min(1.0, p_value))


# ---------------------------------------------------------------------------------------------------
# 4. multiple comparisons and tiers


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
    present = [(value, index) for index, value in enumerate(pvalues) if not _is_missing(value)]
    for value, _ in present:
        assert value is not None
        if not 0.0 <= value <= 1.0:
            raise ValueError(f"p-values must lie in [0, 1], got {value}")
    adjusted: list[float | None] = [None] * len(pvalues)
    m = len(present)
    running = 0.0
    for rank, (value, index) in enumerate(sorted(present, key=lambda item: (item[0], item[1]))):
        assert value is not None
        running = max(running, min(1.0, (m - rank) * value))
        adjusted[index] = running
    return adjusted


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
    adjusted = holm_adjust(raw) if adjust == "holm" else [None if _is_missing(p) else p for p in raw]
    return {key: p is not None and p <= alpha for key, p in zip(keys, adjusted, strict=True)}


def tiers(means: Mapping[str, float | None], pairwise_significant: Significance) -> list[list[str]]:
    """Group models into tiers that the tests cannot separate, greedily from the best model.

    Rule: sort the models by mean, best first (ties by name). The best model opens tier 1 and is its
    top. Walking down the list, a model joins the current tier when it is **not** significantly
    different from that tier's top model; otherwise it opens a new tier and becomes its top. Tiers
    are therefore contiguous in the ranking. A pair missing from ``pairwise_significant`` counts as
    not significant (it was not shown to differ). Models whose mean is None/NaN are left out.

    Args:
        means: model -> its mean score (higher is better).
        pairwise_significant: pair (frozenset or (a, b) tuple, either order) -> whether the two
            models differ significantly (e.g. from :func:`significant_pairs`).

    Returns:
        The tiers, best first, each listing its models best first.

    Raises:
        ValueError: when the same pair is given twice with different answers.
    """
    significant: dict[frozenset[str], bool] = {}
    for key, value in pairwise_significant.items():
        pair = _pair_key(key)
        if pair in significant and significant[pair] != bool(value):
            raise ValueError(f"conflicting significance for {sorted(pair)}")
        significant[pair] = bool(value)
    ranked = sorted(
        ((model, float(mean)) for model, mean in means.items() if mean is not None and not math.isnan(mean)),
        key=lambda item: (-item[1], item[0]),
    )
    result: list[list[str]] = []
    for model, _ in ranked:
        if result and not significant.get(frozenset((result[-1][0], model)), False):
            result[-1].append(model)
        else:
            result.append([model])
    return result


# ---------------------------------------------------------------------------------------------------
# 5. pass@k and pass^k


def _check_counts(n: int, c: int, k: int) -> None:
    if n < 1 or not 0 <= c <= n:
        raise ValueError(f"need n >= 1 and 0 <= c <= n, got n={n}, c={c}")
    if not 1 <= k <= n:
        raise ValueError(f"need 1 <= k <= n, got k={k}, n={n}")


def pass_at_k(n: int, c: int, k: int) -> float:
    """Unbiased pass@k: the chance that at least one of k samples (of n, c correct) passes.

    ``1 - C(n-c, k) / C(n, k)`` (Chen et al. 2021, HumanEval), computed in the stable product form
    ``1 - prod_{i=n-c+1}^{n} (1 - k / i)``.

    Args:
        n: number of samples drawn for the task.
        c: number of them that passed.
        k: the k of pass@k, ``1 <= k <= n``.

    Returns:
        The estimate, in [0, 1].

    Raises:
        ValueError: unless ``0 <= c <= n`` and ``1 <= k <= n``.
    """
    _check_counts(n, c, k)
    if n - c < k:
        return 1.0
    return float(1.0 - np.prod(1.0 - k / np.arange(n - c + 1, n + 1, dtype=np.float64)))


def pass_hat_k(n: int, c: int, k: int) -> float:
    """Unbiased pass^k: the chance that all k samples (of n, c correct) pass (tau-bench).

    ``C(c, k) / C(n, k)``, computed as the product ``prod_{i=0}^{k-1} (c - i) / (n - i)``.

    Args:
        n: number of samples drawn for the task.
        c: number of them that passed.
        k: the k of pass^k, ``1 <= k <= n``.

    Returns:
        The estimate, in [0, 1].

    Raises:
        ValueError: unless ``0 <= c <= n`` and ``1 <= k <= n``.
    """
    _check_counts(n, c, k)
    if c < k:
        return 0.0
    steps = np.arange(k, dtype=np.float64)
    return float(np.prod((c - steps) / (n - steps)))


# ---------------------------------------------------------------------------------------------------
# 6. Wilson interval and flakiness


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
    _check_confidence(confidence)
    if n < 0 or not 0 <= successes <= max(n, 0):
        raise ValueError(f"need 0 <= successes <= n, got successes={successes}, n={n}")
    if n == 0:
        return None
    z = _normal_quantile(0.5 + confidence / 2.0)
    rate = successes / n
    denominator = 1.0 + z * z / n
    centre = (rate + z * z / (2.0 * n)) / denominator
    half = z * math.sqrt(rate * (1.0 - rate) / n + z * z / (4.0 * n * n)) / denominator
    # 0/n and n/n touch the ends exactly: rounding of centre - half would leave a 1e-17 there
    low = 0.0 if successes == 0 else max(0.0, centre - half)
    high = 1.0 if successes == n else min(1.0, centre + half)
    return ProportionCI(successes, n, rate, low, high, confidence)


FlakinessLabel = Literal["stable-pass", "stable-fail", "flaky"]


@dataclass(frozen=True)
class Flakiness:
    """How a case behaved over repeated runs.

    Attributes:
        label: ``"stable-pass"`` (every run passed), ``"stable-fail"`` (none passed) or ``"flaky"``.
        interval: the pass rate with its 95% Wilson interval (shows how little a few runs prove: 3/3
            passes still has a lower bound of 0.44).
    """

    label: FlakinessLabel
    interval: ProportionCI


def flakiness_label(successes: int, n: int) -> Flakiness | None:
    """Label a repeated case: stable-pass when every run passed, stable-fail when none did, else flaky.

    Args:
        successes: number of passing runs.
        n: number of runs that finished (errors excluded by the caller).

    Returns:
        A :class:`Flakiness` with the label and the Wilson interval, or None when ``n == 0``.

    Raises:
        ValueError: on negative counts or ``successes > n``.
    """
    interval = wilson_interval(successes, n)
    if interval is None:
        return None
    label: FlakinessLabel = "stable-pass" if successes == n else "stable-fail" if successes == 0 else "flaky"
    return Flakiness(label, interval)


# ---------------------------------------------------------------------------------------------------
# 7. Bradley-Terry


@dataclass(frozen=True)
class ModelRating:
    """One model's Bradley-Terry rating.

    Attributes:
        model: the model's name.
        rating: the maximum-likelihood rating on the Elo-like scale.
        ci_low: lower percentile-bootstrap bound (NaN when ``n_boot == 0``).
        ci_high: upper percentile-bootstrap bound (NaN when ``n_boot == 0``).
        games: number of comparisons the model took part in.
    """

    model: str
    rating: float
    ci_low: float
    ci_high: float
    games: int


@dataclass(frozen=True)
class BradleyTerryResult:
    """Bradley-Terry ratings, best first.

    Attributes:
        ratings: one :class:`ModelRating` per model, sorted by rating (ties by name).
        n_comparisons: comparisons used (those with a None/NaN outcome are dropped).
        scale: points per factor of ``base`` in the odds (400).
        base: the odds base (10).
        n_boot: bootstrap replicates behind the CIs.
        confidence: the CIs' nominal coverage.
        anchor: the model pinned at the initial rating, or None when the mean is pinned.
    """

    ratings: tuple[ModelRating, ...]
    n_comparisons: int
    scale: float
    base: float
    n_boot: int
    confidence: float
    anchor: str | None

    def as_dict(self) -> dict[str, float]:
        """Model -> rating."""
        return {entry.model: entry.rating for entry in self.ratings}

    def win_probability(self, model_a: str, model_b: str) -> float:
        """The fitted chance that ``model_a`` beats ``model_b`` (a tie counted as half a win).

        Args:
            model_a: a rated model.
            model_b: another rated model.

        Returns:
            ``1 / (1 + base ** ((r_b - r_a) / scale))``.
        """
        ratings = self.as_dict()
        return 1.0 / (1.0 + math.pow(self.base, (ratings[model_b] - ratings[model_a]) / self.scale))


def _bt_objective(
    theta: FloatArray, incidence: FloatArray, won: FloatArray, lost: FloatArray, l2: float
) -> FloatArray:
    """Penalised negative log-likelihood of each fit (one row of ``theta`` / ``won`` / ``lost`` per fit)."""
    gap = theta @ incidence.T
    # -log sigma(gap) = logaddexp(0, -gap)
    value: FloatArray = np.sum(won * np.logaddexp(0.0, -gap) + lost * np.logaddexp(0.0, gap), axis=1)
    penalised: FloatArray = value + 0.5 * l2 * np.sum(theta * theta, axis=1)
    return penalised


def _bt_fit(
    n_models: int, first: IntArray, second: IntArray, won: FloatArray, lost: FloatArray, l2: float
) -> FloatArray:
    """Maximum-likelihood strengths of many data sets at once by damped Newton steps (``won`` is fits x pairs).

    The penalised log-likelihood is strictly concave, so Newton's method with a halving line search
    converges from zero; the Hessian of every fit is solved in one batched call.
    """
    fits, pairs = won.shape
    incidence = np.zeros((pairs, n_models), dtype=np.float64)
    incidence[np.arange(pairs), first] = 1.0
    incidence[np.arange(pairs), second] = -1.0
    outer = incidence[:, :, None] * incidence[:, None, :]  # pairs x models x models
    theta = np.zeros((fits, n_models), dtype=np.float64)
    total = won + lost
    value = _bt_objective(theta, incidence, won, lost, l2)
    ridge = l2 * np.eye(n_models)
    for _ in range(_BT_MAX_STEPS):
        p_first = 0.5 * (1.0 + np.tanh(0.5 * (theta @ incidence.T)))  # sigma(gap), without overflow
        grad = (total * p_first - won) @ incidence + l2 * theta
        hessian = np.einsum("fp,pij->fij", total * p_first * (1.0 - p_first), outer) + ridge
        step = np.linalg.solve(hessian, grad[:, :, None])[:, :, 0]
        # a gradient can never reach zero in floating point with thousands of games: stop on the step
        if float(np.abs(step).max()) < _BT_STEP_TOLERANCE:
            break
        scale = np.ones(fits)
        for _ in range(60):  # halve each fit's step until its objective does not rise
            trial = theta - scale[:, None] * step
            trial_value = _bt_objective(trial, incidence, won, lost, l2)
            worse = trial_value > value + 1e-12 * np.abs(value)
            if not worse.any():
                break
            scale = np.where(worse, scale / 2.0, scale)
        theta, value = trial, trial_value
    return theta


def bradley_terry(
    comparisons: Iterable[tuple[str, str, float | None]],
    *,
    n_boot: int = 1000,
    seed: Seed = 0,
    confidence: float = 0.95,
    scale: float = 400.0,
    base: float = 10.0,
    init_rating: float = 1000.0,
    anchor: str | None = None,
    l2: float = 1e-6,
    counts: Sequence[int] | None = None,
    clusters: Sequence[Hashable] | None = None,
    prior_games: float = 0.0,
) -> BradleyTerryResult:
    """Fit Bradley-Terry ratings (as LMSYS/FastChat's MLE Elo) with percentile-bootstrap CIs.

    ``P(a beats b) = 1 / (1 + base ** ((r_b - r_a) / scale))``. A tie is half a win for each side
    (FastChat's convention). Bootstrap replicates resample the comparisons with replacement (or whole
    ``clusters``), refit, and re-anchor the same way, so a CI is the spread of that model's anchored rating.

    Args:
        comparisons: ``(model_a, model_b, outcome)`` with outcome 1 (a wins), 0 (b wins), 0.5 (tie);
            any value in [0, 1] is a fractional win for a. A None/NaN outcome (e.g. a failed judge
            call) drops the comparison.
        n_boot: bootstrap replicates (0 for no CIs: they are NaN, as with fewer than two ``clusters`` and for a
            model rated alike in every replicate, where the bootstrap measures nothing).
        seed: an int seed or a numpy Generator.
        confidence: nominal coverage of the CIs, in (0, 1).
        scale: rating points per factor ``base`` in the odds.
        base: the base of the odds.
        init_rating: the mean rating, or the anchor's rating when ``anchor`` is set.
        anchor: a model to pin at ``init_rating``; None pins the mean of all ratings instead.
        l2: L2 penalty on the natural-scale strengths; keeps undefeated/winless models finite.
        counts: optional, how many times each comparison happened (the same as repeating it that
            many times, without building the rows): 10,000 identical games cost one entry.
        clusters: optional, the cluster of each comparison (e.g. its task): replicates draw whole clusters
            with replacement, as the other intervals of a report draw tasks, since the games of one task
            (its runs, the pairs of models on it) are not independent. None: every game is its own.
        prior_games: virtual ties each model plays against a reference rated at the mean (0: the plain MLE).
            The MLE has no finite value for a model that won (or lost) every game, and a resample with such
            a model gave a bound set by ``l2`` alone (thousands of points); one virtual tie keeps both
            finite and moves a model with n games by about 1/n of its distance to the mean.

    Returns:
        A :class:`BradleyTerryResult` (with no ratings when there is no usable comparison).

    Raises:
        ValueError: on a self-comparison, an outcome outside [0, 1], a bad ``confidence``, an
            ``anchor`` that never played, or ``counts`` that do not match the comparisons.
    """
    _check_confidence(confidence)
    comparisons = list(comparisons)
    if counts is not None and (len(counts) != len(comparisons) or any(count < 0 for count in counts)):
        raise ValueError(f"counts needs one count >= 0 per comparison, got {len(counts)} for {len(comparisons)}")
    if clusters is not None and len(clusters) != len(comparisons):
        raise ValueError(f"clusters needs one cluster per comparison, got {len(clusters)} for {len(comparisons)}")
    cluster_of: dict[Hashable, int] = {}
    row_clusters: list[int] = []
    rows: list[tuple[str, str, float]] = []
    row_counts: list[int] = []
    for entry, (model_a, model_b, outcome) in enumerate(comparisons):
        count = 1 if counts is None else int(counts[entry])
        if _is_missing(outcome) or count == 0:
            continue
        assert outcome is not None
        if model_a == model_b:
            raise ValueError(f"a model cannot be compared with itself: {model_a!r}")
        if not 0.0 <= outcome <= 1.0:
            raise ValueError(f"an outcome must lie in [0, 1], got {outcome}")
        rows.append((model_a, model_b, float(outcome)))
        row_counts.append(count)
        if clusters is not None:
            row_clusters.append(cluster_of.setdefault(clusters[entry], len(cluster_of)))
    models = sorted({name for row in rows for name in row[:2]})
    if anchor is not None and rows and anchor not in models:
        raise ValueError(f"anchor model {anchor!r} has no comparison")
    if not rows:
        return BradleyTerryResult((), 0, scale, base, n_boot, confidence, anchor)
    position = {model: index for index, model in enumerate(models)}
    # each row becomes (pair index, wins of the pair's lower-indexed model)
    pair_index: dict[tuple[int, int], int] = {}
    row_pair = np.empty(len(rows), dtype=np.int64)
    row_win = np.empty(len(rows), dtype=np.float64)
    games = np.zeros(len(models), dtype=np.int64)
    for index, (model_a, model_b, outcome) in enumerate(rows):
        i, j = position[model_a], position[model_b]
        games[i] += row_counts[index]
        games[j] += row_counts[index]
        low, high, win = (i, j, outcome) if i < j else (j, i, 1.0 - outcome)
        row_pair[index] = pair_index.setdefault((low, high), len(pair_index))
        row_win[index] = win
    pairs = np.array(list(pair_index), dtype=np.int64)
    first, second = pairs[:, 0], pairs[:, 1]
    n_pairs = len(pairs)

    def to_ratings(theta: FloatArray) -> FloatArray:
        points: FloatArray = scale * theta / math.log(base)
        offset = points[:, [position[anchor]]] if anchor is not None else points.mean(axis=1, keepdims=True)
        shifted: FloatArray = points - offset + init_rating
        return shifted

    def won_lost(weights: FloatArray, kinds: IntArray, wins: FloatArray) -> tuple[FloatArray, FloatArray]:
        """Per fit and pair, the wins and losses of the pair's lower-indexed model: ``weights`` is fits x kinds."""
        to_pair = np.zeros((len(kinds), n_pairs), dtype=np.float64)
        to_pair[np.arange(len(kinds)), kinds] = 1.0
        return (weights * wins) @ to_pair, (weights * (1.0 - wins)) @ to_pair

    # rows with the same pair and outcome are interchangeable: resampling rows with replacement is
    # a multinomial draw over these kinds, with chances proportional to their counts
    kind_index: dict[tuple[int, float], int] = {}
    row_kind = np.fromiter(
        (kind_index.setdefault((int(pair), float(win)), len(kind_index))
         for pair, win in zip(row_pair, row_win, strict=True)),
        dtype=np.int64, count=len(rows),
    )
    kinds: IntArray = np.array([pair for pair, _ in kind_index], dtype=np.int64)
    kind_wins = np.array([win for _, win in kind_index], dtype=np.float64)
    kind_counts: FloatArray = np.bincount(
        row_kind, weights=np.array(row_counts, dtype=np.float64), minlength=len(kind_index)
    ).astype(np.float64)
    total = int(sum(row_counts))
    n_models = len(models)
    # the virtual ties: a pair per model with the reference (one more strength, fitted and dropped)
    with_reference = np.concatenate([first, np.arange(n_models)]), np.concatenate([second, np.full(n_models, n_models)])

    def fit(won: FloatArray, lost: FloatArray) -> FloatArray:
        if not prior_games:
            return _bt_fit(n_models, first, second, won, lost, l2)
        virtual = np.full((len(won), n_models), 0.5 * prior_games)
        both = _bt_fit(n_models + 1, *with_reference, np.hstack([won, virtual]), np.hstack([lost, virtual]), l2)
        return both[:, :n_models]

    won, lost = won_lost(kind_counts[None, :], kinds, kind_wins)
    ratings = to_ratings(fit(won, lost))[0]
    lows = np.full(len(models), math.nan)
    highs = np.full(len(models), math.nan)
    if n_boot > 0 and (clusters is None or len(cluster_of) >= 2):  # one cluster drawn again is no spread at all
        rng = _rng(seed)
        if clusters is None:
            draws = rng.multinomial(total, kind_counts / total, size=n_boot).astype(np.float64)
        else:  # each cluster's games by kind, weighed by how often the replicate drew the cluster
            by_cluster = np.zeros((len(cluster_of), len(kind_index)), dtype=np.float64)
            np.add.at(by_cluster, (np.array(row_clusters, dtype=np.int64), row_kind),
                      np.array(row_counts, dtype=np.float64))
            picks = rng.multinomial(len(cluster_of), np.full(len(cluster_of), 1.0 / len(cluster_of)), size=n_boot)
            draws = picks.astype(np.float64) @ by_cluster
        won, lost = won_lost(draws, kinds, kind_wins)
        replicates = to_ratings(fit(won, lost))
        alpha = 1.0 - confidence
        lows, highs = np.quantile(replicates, [alpha / 2.0, 1.0 - alpha / 2.0], axis=0)
        # every replicate alike (a model that won every game of every cluster): the bootstrap cannot measure
        # the uncertainty, and a zero-width interval would claim there is none
        same = np.ptp(replicates, axis=0) < 1e-9
        lows[same], highs[same] = math.nan, math.nan
    entries = sorted(
        (
            ModelRating(model, float(ratings[i]), float(lows[i]), float(highs[i]), int(games[i]))
            for model, i in position.items()
        ),
        key=lambda entry: (-entry.rating, entry.model),
    )
    return BradleyTerryResult(tuple(entries), total, scale, base, n_boot, confidence, anchor)


# ---------------------------------------------------------------------------------------------------
# 8. FastChat pairwise win rates and position bias

Verdict = Literal["model_1", "model_2", "tie", "error"]
_VERDICTS = ("model_1", "model_2", "tie", "error")


@dataclass(frozen=True)
class PairwiseGame:
    """One FastChat pairwise judgment row: a question judged in both answer orders.

    Attributes:
        model_1: the model shown as Assistant A in the first order.
        model_2: the model shown as Assistant A in the second (swapped) order.
        g1_winner: verdict of the first order (``model_1`` shown first).
        g2_winner: verdict of the swapped order (``model_2`` shown first), already translated back
            to the row's own labels, so equal verdicts mean the same model won in both positions.
    """

    model_1: str
    model_2: str
    g1_winner: Verdict
    g2_winner: Verdict

    def __post_init__(self) -> None:
        """Reject verdicts FastChat does not write (it would silently treat them as a model_2 win)."""
        for verdict in (self.g1_winner, self.g2_winner):
            if verdict not in _VERDICTS:
                raise ValueError(f"unknown verdict {verdict!r}; expected one of {_VERDICTS}")

    @classmethod
    def from_fastchat(cls, row: Mapping[str, Any]) -> PairwiseGame:
        """Build a game from one line of FastChat's ``*_pair.jsonl`` (extra fields are ignored).

        Args:
            row: the decoded JSON object with ``model_1``, ``model_2``, ``g1_winner``, ``g2_winner``.

        Returns:
            The game.
        """
        return cls(str(row["model_1"]), str(row["model_2"]), row["g1_winner"], row["g2_winner"])


@dataclass(frozen=True)
class WinRateRow:
    """One line of FastChat ``show_result.py``'s pairwise table.

    Attributes:
        model: the model.
        win: games won in both orders.
        loss: games lost in both orders.
        tie: games tied in the first order, or whose two orders disagree.
        win_rate: ``win / (win + loss + tie)``.
        loss_rate: ``loss / (win + loss + tie)``.
        win_rate_adjusted: ``(win + 0.5 * tie) / (win + loss + tie)``.
    """

    model: str
    win: int
    loss: int
    tie: int
    win_rate: float
    loss_rate: float
    win_rate_adjusted: float


def _games(games: Iterable[PairwiseGame | Mapping[str, Any]]) -> list[PairwiseGame]:
    return [game if isinstance(game, PairwiseGame) else PairwiseGame.from_fastchat(game) for game in games]


def fastchat_win_rates(
    games: Iterable[PairwiseGame | Mapping[str, Any]], *, baseline: str | None = None
) -> list[WinRateRow]:
    """Win/loss/tie table exactly as FastChat's ``show_result.py --mode pairwise-all`` computes it.

    Rules (FastChat ``display_result_pairwise``):

    1. A row whose first- **or** second-order verdict is ``error`` (a failed judge call) is dropped.
    2. If the first-order verdict is ``tie``, or the two orders disagree (opposite winners, or a win
       in one order and a tie in the other), both models get a tie.
    3. Otherwise both orders name the same model: it gets a win, the other a loss.
    4. Rates divide by the model's games ``win + loss + tie``; ties count half in
       ``win_rate_adjusted``. Rows are sorted by ``win_rate_adjusted``, highest first (ties by
       model name; pandas' own order between equal rates is unspecified).

    With ``baseline`` (``--mode pairwise-baseline --baseline-model``), only games involving the
    baseline are counted and the baseline's own row is left out. FastChat's ``--model-list`` filter
    (which checks ``model_1`` only) is not reproduced: filter the games before calling.

    Args:
        games: :class:`PairwiseGame` values or FastChat JSONL rows (mappings).
        baseline: optional baseline model.

    Returns:
        The table's rows (empty where FastChat would fail with ``KeyError: 'model'``).
    """
    tally: dict[str, list[int]] = {}
    for game in _games(games):
        if "error" in (game.g1_winner, game.g2_winner):
            continue
        if baseline is not None and baseline not in (game.model_1, game.model_2):
            continue
        for model in (game.model_1, game.model_2):
            tally.setdefault(model, [0, 0, 0])
        if game.g1_winner == "tie" or game.g1_winner != game.g2_winner:
            tally[game.model_1][2] += 1
            tally[game.model_2][2] += 1
        else:
            winner, loser = (
                (game.model_1, game.model_2) if game.g1_winner == "model_1" else (game.model_2, game.model_1)
            )
            tally[winner][0] += 1
            tally[loser][1] += 1
    rows = []
    for model, (win, loss, tie) in tally.items():
        if model == baseline:
            continue
        total = win + loss + tie
        rows.append(WinRateRow(model, win, loss, tie, win / total, loss / total, (win + 0.5 * tie) / total))
    return sorted(rows, key=lambda row: (-row.win_rate_adjusted, row.model))


@dataclass(frozen=True)
class PositionBias:
    """How often a pairwise judge picked the answer it was shown first.

    Attributes:
        first: single-order verdicts that picked the answer shown first (Assistant A).
        second: single-order verdicts that picked the answer shown second.
        n: ``first + second``: the non-tie, non-error single-order verdicts the rate is over.
        rate: ``first / n`` (None when ``n == 0``); 0.5 means no position preference.
        p_value: two-sided exact binomial p-value of ``first`` in ``n`` at 1/2 (1.0 when ``n == 0``).
    """

    first: int
    second: int
    n: int
    rate: float | None
    p_value: float


def position_bias(
    games: Iterable[PairwiseGame | Mapping[str, Any]], *, drop_error_games: bool = False
) -> PositionBias:
    """Count how often the judge picked the first-shown answer, over non-tie single-order verdicts.

    Each game holds two single-order verdicts: in the first order ``model_1`` is shown first, so
    ``g1_winner == "model_1"`` picked the first answer; in the swapped order ``model_2`` is shown
    first, so ``g2_winner == "model_2"`` did. ``tie`` and ``error`` verdicts are not counted.

    Args:
        games: :class:`PairwiseGame` values or FastChat JSONL rows.
        drop_error_games: also drop the other order of a game that has an ``error`` verdict (as
            :func:`fastchat_win_rates` drops the whole game); by default each verdict stands alone.

    Returns:
        A :class:`PositionBias`.
    """
    first = second = 0
    for game in _games(games):
        if drop_error_games and "error" in (game.g1_winner, game.g2_winner):
            continue
        for verdict, shown_first, shown_second in (
            (game.g1_winner, "model_1", "model_2"),
            (game.g2_winner, "model_2", "model_1"),
        ):
            if verdict == shown_first:
                first += 1
            elif verdict == shown_second:
                second += 1
    n = first + second
    p_value = 1.0 if n == 0 else min(1.0, _binomial_p_value(first, n))
    return PositionBias(first, second, n, None if n == 0 else first / n, p_value)
