"""What every statistics module shares: array types, the missing-value rule, seeds, rounding and quantiles.

Missing values. ``None`` and NaN mean "no value" (a case that was not scored, a run that did not
finish): they are dropped, never counted as zero. A function left with nothing to work on returns
``None``; a spread that cannot be estimated (one case, one cluster) is NaN.
"""

from __future__ import annotations

import functools
import math
import zlib
from collections.abc import Hashable, Sequence
from statistics import NormalDist  # the standard library's
from typing import Any

import numpy as np
import numpy.typing as npt

FloatArray = npt.NDArray[np.float64]
IntArray = npt.NDArray[np.int64]
Seed = int | np.random.Generator

CONFIDENCE = 0.95
N_BOOT = 1000
DECIMALS = 6  # summary.json figures: steady across CPUs whose BLAS adds in another order


def is_missing(value: float | None) -> bool:
    """None or NaN (NaN is the one value not equal to itself, numpy floats included)."""
    return value is None or value != value


def check_confidence(confidence: float) -> None:
    """Reject a confidence outside (0, 1)."""
    if not 0.0 < confidence < 1.0:
        raise ValueError(f"confidence must be strictly between 0 and 1, got {confidence}")


@functools.lru_cache(maxsize=16)
def normal_quantile(share: float) -> float:
    """The standard normal quantile, computed once per confidence.

    The standard library's (Wichura's AS241, within 1e-15 of scipy's ``ppf``): every run's report
    needs it, and importing scipy.stats for it cost each run about a second of CPU and 30 MB.
    """
    return NormalDist().inv_cdf(share)


def binomial_p_value(successes: int, trials: int) -> float:
    """Two-sided p-value of ``successes`` in ``trials`` against one half (``scipy.stats.binomtest``)."""
    from scipy import stats as scipy_stats  # start-up: scipy.stats costs ~1 s and 30 MB; only some reports use it

    return float(scipy_stats.binomtest(successes, trials, 0.5).pvalue)


def rng_of(seed: Seed) -> np.random.Generator:
    """A generator from an int seed, or the generator itself (its state advances)."""
    return np.random.default_rng(seed)


def seed_for(*names: str) -> int:
    """A seed that depends only on the names (suite, model...), so a model's interval ignores the other models."""
    return zlib.crc32("\0".join(names).encode("utf-8"))


def rounded(value: float | None) -> float | None:
    """A finite figure rounded to ``DECIMALS`` for the summary; NaN, infinities and None become None."""
    if value is None or not math.isfinite(value):
        return None
    return round(float(value), DECIMALS)


def unit_codes(labels: Sequence[Any]) -> tuple[IntArray, int]:
    """Integer codes for hashable labels (first seen first) and how many distinct labels there are."""
    index: dict[Any, int] = {}
    codes = np.fromiter((index.setdefault(label, len(index)) for label in labels), dtype=np.int64, count=len(labels))
    return codes, len(index)


def check_aligned(name: str, values: Sequence[float | None], clusters: Sequence[Hashable] | None) -> None:
    """Reject cluster labels that do not match the values one for one."""
    if clusters is not None and len(clusters) != len(values):
        raise ValueError(f"clusters has {len(clusters)} entries but {name} has {len(values)}")


def present_indices(*columns: Sequence[float | None]) -> list[int]:
    """The positions where every column has a value."""
    return [index for index in range(len(columns[0])) if not any(is_missing(column[index]) for column in columns)]


def paired_values(a: Sequence[float | None], b: Sequence[float | None]) -> tuple[list[int], FloatArray, FloatArray]:
    """The cases both ``a`` and ``b`` have, and their values there."""
    if len(a) != len(b):
        raise ValueError(f"a and b must be paired case by case, got lengths {len(a)} and {len(b)}")
    keep = present_indices(a, b)
    return (
        keep,
        np.array([a[index] for index in keep], dtype=np.float64),
        np.array([b[index] for index in keep], dtype=np.float64),
    )
