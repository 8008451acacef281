"""The one bootstrap of the package: many means at once from one resampling of the units.

A report needs a dozen means per model (the composite, each component, the pass rate, every
breakdown group) over the same cases. The resampling units (cases, or clusters such as tasks) are
drawn once per replicate, as a count matrix ``W`` (replicates x units), and every mean of every
replicate is ``(W @ sums) / (W @ counts)``: one matrix product instead of a Python loop over cases.
``intervals.mean_ci`` reads the same replicates for its one column.

Each replicate's mean of a column is pooled over the units drawn (a task drawn twice counts twice);
a column that is missing from every drawn unit has no value in that replicate, and its interval is
taken over the replicates where it has one.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import numpy as np

from bench_plugin.report.statistics.core import CONFIDENCE, N_BOOT, FloatArray, IntArray, rounded

# replicates x units drawn per generator call (bounds memory on large inputs)
_CHUNK_CELLS = 2_000_000
# cells drawn and weighed at once: arrays of half a MB, which stay in the CPU's cache (a quarter of 250,000 cells
# halved the time and took 6 MB off the end of a 10,000-case run, with the same draws)
_BLOCK_CELLS = 62_500


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


def _weight_blocks(n_units: int, n_boot: int, rng: np.random.Generator) -> Iterator[tuple[int, FloatArray]]:
    """Per block of replicates, its first replicate and how often each unit was drawn (block x units).

    Drawn a block of rows at a time: the generator's stream does not depend on how it is cut (its state
    carries over between calls), so the draws are those of whole chunks, while the arrays of a whole chunk
    (four of 2M cells from 2000 units on) were the largest allocation of a run.
    """
    step = max(1, _CHUNK_CELLS // max(n_units, 1))
    block = max(1, min(step, _BLOCK_CELLS // max(n_units, 1)))
    for start in range(0, n_boot, block):
        stop = min(n_boot, start + block)
        draws = rng.integers(0, n_units, size=(stop - start, n_units))
        offsets = (np.arange(stop - start, dtype=np.int64) * n_units)[:, None]
        weights = np.bincount((draws + offsets).ravel(), minlength=(stop - start) * n_units)
        yield start, weights.reshape(stop - start, n_units).astype(np.float64)


def replicate_means(sums: FloatArray, counts: FloatArray, n_boot: int, rng: np.random.Generator) -> FloatArray:
    """``n_boot`` pooled means of each column (replicates x columns), units drawn with replacement.

    A replicate that drew no unit with a value for a column has NaN there.
    """
    replicates = np.full((max(n_boot, 0), sums.shape[1]), np.nan)
    for start, weights in _weight_blocks(sums.shape[0], n_boot, rng):
        with np.errstate(invalid="ignore", divide="ignore"):
            replicates[start:start + len(weights)] = (weights @ sums) / (weights @ counts)
    return replicates


def bootstrap_means(
    values: FloatArray,
    units: IntArray,
    n_units: int,
    *,
    n_boot: int = N_BOOT,
    confidence: float = CONFIDENCE,
    seed: int = 0,
) -> list[dict[str, Any] | None]:
    """The mean of each column of ``values`` with its bootstrap standard error and percentile interval.

    Args:
        values: one row per case, one column per figure; NaN where the case has no value for it.
        units: the resampling unit of each row, ``0 <= unit < n_units`` (a case, or its task when
            runs repeat); every unit is drawn with equal chance, whether or not it has values.
        n_units: the number of units.
        n_boot: replicates (fewer than 2: no interval).
        confidence: the interval's nominal coverage.
        seed: the generator's seed.

    Returns:
        Per column ``{"mean", "se", "ci_low", "ci_high", "n", "units"}`` (``n``: cases with a value,
        ``units``: units with a value; ``se`` and the bounds None with fewer than two units), or None
        for a column with no value at all. Figures are rounded to ``DECIMALS``.
    """
    sums, counts = unit_sums(values, units, n_units)
    valued_units = np.count_nonzero(counts, axis=0)
    estimable = valued_units >= 2
    replicates = np.full((max(n_boot, 0), values.shape[1]), np.nan)
    if n_boot >= 2 and estimable.any():
        rng = np.random.default_rng(seed)
        replicates[:, estimable] = replicate_means(sums[:, estimable], counts[:, estimable], n_boot, rng)
    low, high, spread = percentiles(replicates, confidence)
    totals, present = sums.sum(axis=0), counts.sum(axis=0)
    return [
        _estimate(totals[column], int(present[column]), int(valued_units[column]),
                  (spread[column], low[column], high[column]))
        for column in range(values.shape[1])
    ]


def _estimate(total: float, present: int, units: int, spread: tuple[float, float, float]) -> dict[str, Any] | None:
    """One column's figures: its pooled mean, and the bootstrap's spread when two units have a value."""
    if present == 0:
        return None
    se, low, high = (rounded(value) for value in spread) if units >= 2 else (None, None, None)
    return {"mean": rounded(total / present), "se": se, "ci_low": low, "ci_high": high, "n": present, "units": units}


def percentiles(replicates: FloatArray, confidence: float) -> tuple[FloatArray, FloatArray, FloatArray]:
    """Per column, the percentile bounds and the standard deviation (ddof=1) of the non-NaN replicates.

    The bounds interpolate linearly between order statistics, as ``numpy.quantile`` does; a column with
    fewer than two replicates gets NaN.
    """
    columns = replicates.shape[1]
    valid = np.count_nonzero(~np.isnan(replicates), axis=0)
    nan = np.full(columns, np.nan)
    if replicates.shape[0] == 0:
        return nan, nan.copy(), nan.copy()
    ordered = np.sort(replicates, axis=0)  # NaN sorts last
    alpha = 1.0 - confidence
    last = np.maximum(valid - 1, 0)
    bounds = []
    for share in (alpha / 2.0, 1.0 - alpha / 2.0):
        position = share * last
        below = np.floor(position).astype(np.int64)
        above = np.minimum(below + 1, last)
        fraction = position - below
        picked = np.arange(columns)
        bound = ordered[below, picked] * (1.0 - fraction) + ordered[above, picked] * fraction
        bounds.append(np.where(valid >= 2, bound, np.nan))
    with np.errstate(invalid="ignore", divide="ignore"):
        filled = np.where(np.isnan(replicates), 0.0, replicates)
        centre = filled.sum(axis=0) / valid
        squares = np.where(np.isnan(replicates), 0.0, (replicates - centre) ** 2).sum(axis=0)
        spread = np.where(valid >= 2, np.sqrt(squares / np.maximum(valid - 1, 1)), np.nan)
    return bounds[0], bounds[1], spread
