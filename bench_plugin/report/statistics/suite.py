"""Every statistical section of one suite computed together, over one set of units.

The leaderboard intervals, the breakdowns and the paired differences are columns over the suite's
cases (``case_table``), estimated together over the suite's units (``statistics.clusters``); every
estimate says its unit. Repeats, ratings and the audit read the records directly.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any

from bench_plugin.report.audit import audit
from bench_plugin.report.breakdowns import add_breakdown_columns, breakdown_figures, find_dimensions
from bench_plugin.report.case_data import judge_names
from bench_plugin.report.case_table import CaseCell, CaseTable, Columns, build_case_table
from bench_plugin.report.comparisons import add_pair_columns, compare_models
from bench_plugin.report.ratings import summarize_ratings
from bench_plugin.report.repeats import summarize_repeats
from bench_plugin.report.statistics.clusters import declared_cluster
from bench_plugin.report.statistics.core import CONFIDENCE, rounded
from bench_plugin.report.statistics.intervals import METHOD, MIN_UNITS
from bench_plugin.report.statistics.leaderboard import add_leaderboard_columns, leaderboard_figures
from bench_plugin.report.statistics.power import POWER, minimum_detectable_difference
from bench_plugin.results.record import CaseRecord


def rank_models(rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """Model names by mean composite, then pass rate, both descending; unknown values last, ties in suite order."""

    def key(row: Mapping[str, Any]) -> tuple[bool, float, bool, float]:
        score, pass_rate = row["mean_composite"], row["pass_rate"]
        return (score is None, -(score or 0.0), pass_rate is None, -(pass_rate or 0.0))

    return [row["model"] for row in sorted(rows, key=key)]


def suite_statistics(
    path: str, records: Sequence[CaseRecord], components: Sequence[str], model_rows: Sequence[dict[str, Any]],
    unfinished: Collection[CaseCell] | None = None,
) -> dict[str, Any]:
    """The statistical keys of one suite's summary; adds each model's intervals to its row in ``model_rows``.

    Args:
        path: the suite's path (seeds the resampling, so a report is the same every time).
        records: the suite's records, in case order.
        components: the leaderboard's components (per-turn ones left out).
        model_rows: the summary's leaderboard rows (``summarize_model``), updated in place.
        unfinished: when the session's selection is known, its cases without a record
            (``case_table.unfinished_cells``): each model is expected to finish the cases it was selected for.

    Returns:
        ``{"statistics", "comparisons", "breakdowns", "repeats", "ratings", "audit"}`` (see
        ``report.summary``).
    """
    table = build_case_table(path, records, unfinished)
    judges = judge_names(table.components)
    ranked = _scored_ranking(model_rows)
    columns = Columns(table)
    usage = add_leaderboard_columns(columns, components, judges)
    dimensions = find_dimensions(table)
    add_breakdown_columns(columns, dimensions)
    add_pair_columns(columns, ranked)
    estimates = columns.estimate()
    unit = _unit_name(table)
    for estimate in estimates.values():
        if estimate is not None:
            estimate["unit"] = unit
    figures = leaderboard_figures(table, estimates, usage, components, judges)
    for row in model_rows:
        row.update(figures[row["model"]])
    means = {row["model"]: row["mean_composite"] for row in model_rows if row["model"] in ranked}
    ordinal = bool(judges) and set(components) <= set(judges)
    return {
        "statistics": _settings(table, judges, ordinal, unit),
        "comparisons": _with_power(compare_models(columns, estimates, ranked, means, ordinal=ordinal), unit),
        "breakdowns": breakdown_figures(table, dimensions, estimates),
        "repeats": summarize_repeats(records, rank_models(model_rows)),
        "ratings": summarize_ratings(path, records, ranked),
        "audit": audit(records),
    }


def _scored_ranking(model_rows: Sequence[Mapping[str, Any]]) -> list[str]:
    """The models with a mean score, best first (``rank_models``)."""
    scored = {row["model"] for row in model_rows if row["mean_composite"] is not None}
    return [model for model in rank_models(model_rows) if model in scored]


def _unit_name(table: CaseTable) -> str:
    """What the suite's units are: declared clusters, tasks (runs repeat) or cases (``statistics.clusters``)."""
    if any(declared_cluster(record) is not None for record in table.records):
        return "cluster"
    return "task" if table.clustered else "case"


def _with_power(found: dict[str, Any] | None, unit: str) -> dict[str, Any] | None:
    """Each pair's unit, whether it had too few units for an interval, and its minimum detectable difference."""
    if found is None:
        return None
    for pair in found["pairs"]:
        pair.update(unit=unit, too_few=pair["units"] < MIN_UNITS,
                    mde=rounded(minimum_detectable_difference(pair["se"], pair["units"])))
    return {**found, "unit": unit, "method": METHOD, "power": POWER, "min_units": MIN_UNITS}


def _settings(table: CaseTable, judges: list[str], ordinal: bool, unit: str) -> dict[str, Any]:
    """How the suite's figures were computed: the ``statistics`` key of the summary."""
    return {
        "confidence": CONFIDENCE,
        "method": METHOD,
        "min_units": MIN_UNITS,
        "unit": unit,
        # None: the models were selected for different cases (a shard, -k): each has its own count
        "expected_cases": table.expected if len(set(table.expected_of.values())) <= 1 else None,
        "judges": judges,
        "ordinal": ordinal,
    }
