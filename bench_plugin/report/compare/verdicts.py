"""The rule that turns a paired difference into a verdict: regressed, improved, unchanged or inconclusive.

Kept apart from the figures (``figures.py``, which asks ``report.statistics``) so that the rule reads in one place
and the figures can come from another method without touching it. With ``margin`` M on the 0-1 scale and
``confidence`` C:

- ``regressed`` / ``improved``: the change is significant (its Holm-adjusted p below 1 - C) and the estimate
  lies beyond the margin (a drop larger than M, a gain larger than M);
- ``unchanged``: the whole interval lies within (-M, +M): the data exclude a change as large as the margin;
- ``inconclusive``: the data can do neither (too few cases, too much spread, a significant change smaller than M
  whose interval still reaches past it).
"""

from __future__ import annotations

import math
from collections.abc import Iterable
from dataclasses import dataclass

REGRESSED = "regressed"
IMPROVED = "improved"
UNCHANGED = "unchanged"
INCONCLUSIVE = "inconclusive"
VERDICTS = (REGRESSED, IMPROVED, UNCHANGED, INCONCLUSIVE)

DEFAULT_MARGIN = 0.02
"""Two points on the 0-1 scale: a change smaller than that is not worth a red build."""
DEFAULT_CONFIDENCE = 0.95


@dataclass(frozen=True)
class CompareSettings:
    """How sure a verdict must be, and how large a change counts.

    Attributes:
        margin: the smallest change that counts, on the 0-1 scale of scores and pass rates.
        confidence: the intervals' coverage; a change is significant when its Holm-adjusted p < 1 - confidence.
        seed: the resampling's seed: the same records give the same figures.
    """

    margin: float = DEFAULT_MARGIN
    confidence: float = DEFAULT_CONFIDENCE
    seed: int = 0

    def __post_init__(self) -> None:
        """Refuse what no comparison can use: the message names the option."""
        if not (math.isfinite(self.margin) and 0.0 <= self.margin < 1.0):
            raise ValueError(f"margin: expected a number from 0 to below 1 (0.02 is two points), got {self.margin}")
        if not 0.0 < self.confidence < 1.0:
            raise ValueError(f"confidence: expected a number between 0 and 1 such as 0.95, got {self.confidence}")

    @property
    def alpha(self) -> float:
        """The significance level the adjusted p-values are held to."""
        return 1.0 - self.confidence


def judge(difference: float, low: float | None, high: float | None, p_holm: float | None,
          settings: CompareSettings) -> str:
    """The verdict of one paired difference (current minus baseline); see the module docstring."""
    significant = p_holm is not None and p_holm < settings.alpha
    if significant and difference < -settings.margin:
        return REGRESSED
    if significant and difference > settings.margin:
        return IMPROVED
    if low is not None and high is not None and -settings.margin < low and high < settings.margin:
        return UNCHANGED
    return INCONCLUSIVE


def combine(verdicts: Iterable[str]) -> str:
    """One verdict for several figures of the same cases (mean score, pass rate).

    A regression in any figure is a regression; else a gain in any is a gain; unchanged only when every figure
    is; inconclusive otherwise, and when there is no figure at all.
    """
    found = list(verdicts)
    for verdict in (REGRESSED, IMPROVED):
        if verdict in found:
            return verdict
    return UNCHANGED if found and all(verdict == UNCHANGED for verdict in found) else INCONCLUSIVE
