"""Power: the smallest difference a paired comparison could have detected, shown beside "not significant".

For a pair compared over G units with the standard error ``se`` of its mean difference (CR1: the observed
spread of the units' differences over sqrt(G)), the minimum detectable difference at 80% power in a
two-sided test at level alpha is ``(t(1 - alpha/2; G - 1) + t(power; G - 1)) * se``: a true difference of
that size gives a significant result four times in five. A difference smaller than it that the test did
not find says little: the suite could not have seen it.
"""

from __future__ import annotations

import math

import numpy as np

from bench_plugin.report.statistics.intervals import MIN_UNITS, t_quantile

POWER = 0.8
ALPHA = 0.05


def minimum_detectable_difference(
    se: float | None, units: int, *, alpha: float = ALPHA, power: float = POWER
) -> float | None:
    """The minimum detectable difference (see the module docstring).

    None without a standard error or with fewer than ``MIN_UNITS`` units.
    """
    if se is None or not math.isfinite(se) or units < MIN_UNITS:
        return None
    degrees = np.array([units - 1])
    return float(se * (t_quantile(1.0 - alpha / 2.0, degrees)[0] + t_quantile(power, degrees)[0]))
