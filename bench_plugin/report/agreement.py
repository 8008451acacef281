"""How much judges agree: Krippendorff's alpha for interval data, a pure function.

Units are the things judged (cases), each with the values its judges gave (None where a judge gave
none). Only units with two or more values are pairable. With ``n`` pairable values in all::

    D_o = 1/n * sum over units u of  1/(m_u - 1) * sum over ordered pairs i != j in u of (v_i - v_j)^2
    D_e = 1/(n (n - 1)) * sum over ordered pairs i != j of all pairable values of (v_i - v_j)^2
    alpha = 1 - D_o / D_e

alpha is 1 for perfect agreement, about 0 for agreement no better than chance, and below 0 for
systematic disagreement (Krippendorff, "Computing Krippendorff's Alpha-Reliability", 2011).
"""

from __future__ import annotations

from collections.abc import Sequence


def _pair_sum(values: Sequence[float]) -> float:
    """Sum of (v_i - v_j)^2 over ordered pairs i != j: 2 * n * the sum of squared deviations."""
    count = len(values)
    if count < 2:
        return 0.0
    centre = sum(values) / count
    return 2.0 * count * sum((value - centre) ** 2 for value in values)


def krippendorff_alpha_interval(units: Sequence[Sequence[float | None]]) -> float | None:
    """Krippendorff's alpha with the interval metric (squared differences).

    Args:
        units: for each unit (a case), the values of its coders (judges); None is a missing value.

    Returns:
        alpha, or None when it is undefined: fewer than two pairable values, or no variation at all
        among them (every judge gave every case the same value, so there is nothing to agree on).

    Example:
        Two judges over three cases, (1, 2), (3, 3), (4, 5): D_o = 4/6, D_e = 120/30 = 4,
        alpha = 1 - (2/3)/4 = 0.8333.
    """
    pairable = _pairable(units)
    every = [value for values in pairable for value in values]
    count = len(every)
    if count < 2:
        return None
    expected = _pair_sum(every) / (count * (count - 1))
    if expected == 0:
        return None
    observed = sum(_pair_sum(values) / (len(values) - 1) for values in pairable) / count
    return 1.0 - observed / expected


def _pairable(units: Sequence[Sequence[float | None]]) -> list[list[float]]:
    """The values of each unit that has two or more."""
    found = ([value for value in unit if value is not None] for unit in units)
    return [values for values in found if len(values) >= 2]
