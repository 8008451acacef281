"""Repeated runs of a case: unbiased pass@k and pass^k, and whether a case is flaky."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Literal

import numpy as np

from bench_plugin.report.statistics.intervals import ProportionCI, wilson_interval


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

