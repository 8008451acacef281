"""The leaderboard's intervals and denominators: coverage, clean and coverage-normalised means, judge usage.

Per model of a suite (rows of a ``CaseTable``):

- ``expected``: the suite's distinct cases (task x run); ``scored``: those the model finished with a
  score (passed or failed); ``coverage = scored / expected``.
- ``mean_composite`` (the clean mean): over scored cases only; unscored cases, infrastructure errors,
  invalid and skipped cases are left out.
- ``normalised``: the composite summed over scored cases, divided by ``expected``: every case
  without a score (unscored, error, invalid, skipped, missing) counts 0. It equals clean mean x coverage.
- ``pass_rate``: passed / scored.
- ``judge_mean``: per case, the mean of its judge components; over the cases where a judge scored.
- ``components``: each component over the cases where it has a value (as the plain means).

Each comes with its standard error and 95% interval over the suite's units (``statistics.intervals``: a
cluster t interval, none from fewer than 4 units); the pass rate's interval is Wilson's when each case is its
own unit.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from typing import Any

import numpy as np

from bench_plugin.report.case_data import SCORED, judge_usage, judge_value, number
from bench_plugin.report.case_table import CaseTable, Columns, math_nan
from bench_plugin.report.statistics.core import FloatArray, IntArray, rounded
from bench_plugin.report.statistics.intervals import wilson_interval
from bench_plugin.results.record import PASSED


def add_leaderboard_columns(
    columns: Columns, components: Sequence[str], judges: Sequence[str]
) -> dict[str, dict[str, float | None]]:
    """Add each model's figures to ``columns`` under keys ``(figure, model)`` / ``("component", model, name)``.

    Returns:
        Per model, its judges' tokens and cost summed over its cases (``judge_usage``), read in the
        same pass over the records.
    """
    table = columns.table
    usage: dict[str, dict[str, float | None]] = {}
    for model in table.model_order:
        rows = table.rows_of(model)
        scores = table.scores[rows]
        passed, judged, values, usage[model] = _read_rows(table, rows, components, judges)
        columns.add(("mean_composite", model), rows, scores)
        if not np.isnan(scores).all():  # a suite without scorers has no score to normalise: not 0
            columns.add(("normalised", model), rows, np.nan_to_num(scores, nan=0.0))
        columns.add(("pass_rate", model), rows, passed)
        if judges:
            columns.add(("judge_mean", model), rows, judged)
        for index, name in enumerate(components):
            columns.add(("component", model, name), rows, values[:, index])
    return usage


def _read_rows(
    table: CaseTable, rows: IntArray, components: Sequence[str], judges: Sequence[str]
) -> tuple[FloatArray, FloatArray, FloatArray, dict[str, float | None]]:
    """Per row of one model: passed (1/0, NaN unless scored), the judges' mean, each component; its judges' usage."""
    passed = np.full(len(rows), np.nan)
    judged = np.full(len(rows), np.nan)
    values = np.full((len(rows), len(components)), np.nan)
    totals: dict[str, float | None] = {"input_tokens": None, "output_tokens": None, "cost_usd": None}
    for position, row in enumerate(rows):
        record = table.records[row]
        if record is None:
            continue
        if record.status in SCORED:
            passed[position] = float(record.status == PASSED)
        found = table.components[row]
        values[position] = [math_nan(number(found.get(name, {}).get("value"))) for name in components]
        judged[position] = math_nan(judge_value(found, judges))
        _add_usage(totals, judge_usage(record.usage or {}, found))
    return passed, judged, values, totals


def _add_usage(totals: dict[str, float | None], found: Mapping[str, float | None]) -> None:
    """Add one case's judge usage to the totals; an unknown figure adds nothing (and is not zero)."""
    for key, value in found.items():
        if value is not None:
            totals[key] = (totals[key] or 0.0) + value


def leaderboard_figures(
    table: CaseTable,
    estimates: Mapping[Hashable, dict[str, Any] | None],
    usage: Mapping[str, Mapping[str, float | None]],
    components: Sequence[str],
    judges: Sequence[str],
) -> dict[str, dict[str, Any]]:
    """Per model, the keys the summary adds to its leaderboard row (see the module docstring)."""
    return {model: _model_figures(table, estimates, usage[model], model, components, judges)
            for model in table.model_order}


def _model_figures(
    table: CaseTable,
    estimates: Mapping[Hashable, dict[str, Any] | None],
    usage: Mapping[str, float | None],
    model: str,
    components: Sequence[str],
    judges: Sequence[str],
) -> dict[str, Any]:
    scored, passed, finished = _case_counts(table, model)
    expected = table.expected_of[model]
    return {
        "expected": expected,
        "scored": scored,
        "missing": expected - finished,
        "coverage": scored / expected if expected else None,
        "intervals": {
            "mean_composite": estimates.get(("mean_composite", model)),
            "normalised": estimates.get(("normalised", model)),
            "pass_rate": _pass_rate(estimates.get(("pass_rate", model)), passed, scored),
            "judge_mean": estimates.get(("judge_mean", model)) if judges else None,
            "components": {name: estimates.get(("component", model, name)) for name in components},
        },
        **_usage_figures(usage),
    }


def _case_counts(table: CaseTable, model: str) -> tuple[int, int, int]:
    """The model's scored cases, passed cases, and distinct cases with a record."""
    records = [r for r in (table.records[row] for row in table.rows_of(model)) if r is not None]
    scored = sum(1 for r in records if r.status in SCORED)
    passed = sum(1 for r in records if r.status == PASSED)
    return scored, passed, len({(r.task, r.run) for r in records})


def _usage_figures(usage: Mapping[str, float | None]) -> dict[str, Any]:
    """The judges' tokens (whole) and cost (to 1e-10 dollars); None where unknown."""
    tokens_in, tokens_out, cost = usage["input_tokens"], usage["output_tokens"], usage["cost_usd"]
    return {
        "judge_input_tokens": None if tokens_in is None else int(tokens_in),
        "judge_output_tokens": None if tokens_out is None else int(tokens_out),
        "judge_cost_usd": None if cost is None else round(cost, 10),
    }


def _pass_rate(estimate: dict[str, Any] | None, passed: int, scored: int) -> dict[str, Any] | None:
    """The pass rate's estimate; when each case is its own unit, with Wilson's interval (``"method": "wilson"``).

    When cases share units (runs of a task, a declared cluster) the cluster t interval stands (``intervals``),
    never narrower than Wilson's for the rate over its units.
    """
    if estimate is None or estimate["too_few"] or estimate["units"] != estimate["n"]:
        return estimate
    found = wilson_interval(passed, scored)
    if found is None:
        return estimate
    # Wilson's interval has no standard error: the t interval's (0 for 8 of 8) would contradict it
    return {**estimate, "se": None, "ci_low": rounded(found.low), "ci_high": rounded(found.high), "method": "wilson"}
