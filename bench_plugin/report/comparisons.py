"""Is the difference real? Every pair of models compared case by case, a Holm-corrected test, and tiers.

For each pair (a, b), a ranked above b, only the cases both finished with a score count. The mean
difference ``a - b`` gets a paired t interval over the units, cluster-robust (``case_table``).
The test for "no difference":

- ``wilcoxon``: when every leaderboard component is a judge's grade (an ordinal scale, such as 1-10),
  the Wilcoxon signed-rank test of the per-unit mean differences (``statistics.wilcoxon_signed_rank``);
- ``permutation``: otherwise, the sign-flip permutation test of the mean difference (as
  ``statistics.paired_difference``): exact when the units fit in ``N_PERM`` patterns, else Monte Carlo
  with one matrix of random signs shared by every pair.

A unit is a case, or a task when runs repeat (its differences flip together). The p-values of all
pairs of the suite are adjusted with Holm's step-down method (``statistics.holm_adjust``), and models
whose difference is not significant at 5% share a tier (``statistics.holm_tiers``).
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from bench_plugin.report.case_table import Columns
from bench_plugin.report.statistics import (
    FloatArray,
    holm_adjust,
    rounded,
    seed_for,
    significant_pairs,
    tiers,
    unit_sums,
    wilcoxon_signed_rank,
)

ALPHA = 0.05
N_PERM = 2000
TESTS = {
    "wilcoxon": "Wilcoxon signed-rank test",
    "permutation": "sign-flip permutation test of the mean difference",
}


def pairs_of(ranked: Sequence[str]) -> list[tuple[str, str]]:
    """Every pair of models, the better-ranked one first, in ranking order."""
    return [(a, b) for index, a in enumerate(ranked) for b in ranked[index + 1 :]]


def add_pair_columns(columns: Columns, ranked: Sequence[str]) -> None:
    """Add ``("pair", a, b)``: on a's rows, a's score minus b's on the same case (NaN unless both scored)."""
    table = columns.table
    for a, b in pairs_of(ranked):
        rows = table.rows_of(a)
        other: dict[tuple[str, int], float] = {}
        for row in table.rows_of(b):
            other.setdefault(table.keys[row], float(table.scores[row]))
        theirs = np.array([other.get(table.keys[row], np.nan) for row in rows], dtype=np.float64)
        columns.add(("pair", a, b), rows, table.scores[rows] - theirs)


def compare_models(
    columns: Columns,
    estimates: Mapping[Hashable, dict[str, Any] | None],
    ranked: Sequence[str],
    means: Mapping[str, float | None],
    *,
    ordinal: bool,
) -> dict[str, Any] | None:
    """The section's data: one entry per pair, the test, the correction and the tiers.

    Args:
        columns: the suite's columns, with ``add_pair_columns`` already added.
        estimates: ``columns.estimate()``.
        ranked: the models, best first.
        means: model -> its clean mean (orders the tiers).
        ordinal: use the Wilcoxon test (judge grades) rather than the permutation test.

    Returns:
        ``{"test", "test_name", "correction": "holm", "alpha", "unit", "pairs", "tiers"}``, each pair
        ``{"a", "b", "n", "units", "mean_a", "mean_b", "diff", "se", "ci_low", "ci_high", "wins",
        "losses", "ties", "p_value", "p_holm", "significant"}``; None with fewer than two models.
    """
    pairs = pairs_of(ranked)
    if not pairs:
        return None
    table = columns.table
    diffs = _pair_differences(columns, pairs)
    sums, counts = unit_sums(diffs, table.units, table.n_units)
    test = "wilcoxon" if ordinal else "permutation"
    p_values = _p_values(test, sums, counts, table.path)
    adjusted = holm_adjust(p_values)
    rows = [
        {"a": a, "b": b, **_pair_figures(diffs[:, p], counts[:, p], table.scores, estimates.get(("pair", a, b)) or {}),
         "p_value": rounded(p_values[p]), "p_holm": rounded(adjusted[p])}
        for p, (a, b) in enumerate(pairs)
    ]
    significant = _significant(pairs, p_values)
    for row in rows:
        row["significant"] = significant[frozenset((row["a"], row["b"]))]
    return {
        "test": test,
        "test_name": TESTS[test],
        "correction": "holm",
        "alpha": ALPHA,
        "unit": "task" if table.clustered else "case",
        "pairs": rows,
        "tiers": tiers(means, significant),
    }


def _significant(pairs: Sequence[tuple[str, str]], p_values: Sequence[float | None]) -> dict[frozenset[str], bool]:
    """Whether each pair differs, Holm-corrected at ``ALPHA``."""
    return significant_pairs({(a, b): p_values[p] for p, (a, b) in enumerate(pairs)}, alpha=ALPHA)


def _pair_differences(columns: Columns, pairs: Sequence[tuple[str, str]]) -> FloatArray:
    """The ``("pair", a, b)`` columns, one per pair, side by side."""
    index = {key: position for position, key in enumerate(columns.keys)}
    return np.column_stack([columns.values[index[("pair", a, b)]] for a, b in pairs])


def _p_values(test: str, sums: FloatArray, counts: FloatArray, path: str) -> list[float | None]:
    """Each pair's p-value (a column each): Wilcoxon's over unit means, or the sign-flip test's."""
    if test == "wilcoxon":
        return [_wilcoxon(sums[:, p], counts[:, p]) for p in range(sums.shape[1])]
    return sign_flip_p_values(sums, counts, N_PERM, seed_for(path, "sign-flip"))


def _pair_figures(
    column: FloatArray, unit_counts: FloatArray, scores: FloatArray, estimate: Mapping[str, Any]
) -> dict[str, Any]:
    """A pair's paired cases and units, both means, the difference's estimate, and its wins, losses and ties.

    ``column``: on the first model's rows, its score less the other's on the same case (NaN unless both scored).
    """
    present = ~np.isnan(column)
    mine = scores[present]
    return {
        "n": int(present.sum()), "units": int(np.count_nonzero(unit_counts)),
        "mean_a": rounded(float(mine.mean())) if present.any() else None,
        "mean_b": rounded(float((mine - column[present]).mean())) if present.any() else None,
        "diff": estimate.get("mean"), "se": estimate.get("se"),
        "ci_low": estimate.get("ci_low"), "ci_high": estimate.get("ci_high"),
        "wins": int((column > 0).sum()), "losses": int((column < 0).sum()), "ties": int((column == 0).sum()),
    }


def _wilcoxon(sums: FloatArray, counts: FloatArray) -> float | None:
    """The Wilcoxon p-value of the per-unit mean differences; None when no case was shared."""
    valued = counts > 0
    if not valued.any():
        return None
    unit_means = sums[valued] / counts[valued]
    result = wilcoxon_signed_rank(list(unit_means), [0.0] * len(unit_means))
    return None if result is None else result.p_value


def _exact_sign_flip(units: FloatArray) -> float:
    """The sign-flip p-value of the units' total over every pattern of signs."""
    patterns = np.arange(2**units.size, dtype=np.int64)[:, None] >> np.arange(units.size, dtype=np.int64)
    signs = 1.0 - 2.0 * (patterns & 1)
    observed = abs(float(units.sum()))
    tolerance = 1e-9 * max(1.0, float(np.abs(units).sum()))
    return float(int(np.count_nonzero(np.abs(signs @ units) >= observed - tolerance)) / 2**units.size)


def _random_sign_flips(chosen: FloatArray, n_perm: int, seed: int) -> list[float]:
    """The sign-flip p-values of the columns' totals over ``n_perm`` random patterns of signs, shared by all."""
    observed = np.abs(chosen.sum(axis=0))
    tolerance = 1e-9 * np.maximum(1.0, np.abs(chosen).sum(axis=0))
    rng = np.random.default_rng(seed)
    signs = 1.0 - 2.0 * rng.integers(0, 2, size=(n_perm, chosen.shape[0])).astype(np.float64)
    extreme = np.count_nonzero(np.abs(signs @ chosen) >= observed - tolerance, axis=0)
    return [float((1 + count) / (1 + n_perm)) for count in extreme]


def sign_flip_p_values(sums: FloatArray, counts: FloatArray, n_perm: int, seed: int) -> list[float | None]:
    """Two-sided sign-flip p-values of each column's total (one column per pair, one row per unit).

    A column whose non-zero units fit in ``n_perm`` sign patterns is enumerated exactly; the others
    share one Monte Carlo matrix of random signs (``(1 + b) / (1 + n_perm)``). A column with no unit
    (no shared case: no count) gets None; one whose differences are all zero gets 1.0.
    """
    out: list[float | None] = [None] * sums.shape[1]
    random_columns = []
    for column in range(sums.shape[1]):
        if not counts[:, column].any():
            continue
        units = sums[:, column][sums[:, column] != 0]
        if units.size <= 20 and 2**units.size <= n_perm:
            out[column] = _exact_sign_flip(units)
        else:
            random_columns.append(column)
    if random_columns:
        found = _random_sign_flips(sums[:, random_columns], n_perm, seed)
        for position, column in enumerate(random_columns):
            out[column] = found[position]
    return out
