"""The dashboard's sections on how each model scores: leaderboard, heat map, distributions, components, breakdowns."""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from typing import Any

from bench_plugin.report.dashboard.bars import Histogram, grouped_bars, histograms
from bench_plugin.report.dashboard.compare import Comparison
from bench_plugin.report.dashboard.figures import (
    Breakdown,
    Estimate,
    ModelFigures,
    heat_rows,
    ranked,
    score_bins,
)
from bench_plugin.report.dashboard.frame import fallback, fmt, fmt_interval, section, table
from bench_plugin.report.dashboard.grids import heat_map
from bench_plugin.report.dashboard.intervals import Interval, interval_chart
from bench_plugin.report.dashboard.svg import esc, model_colours
from bench_plugin.report.summary import describe_missing_cost

HEAT_MAP_TITLE = "Model \u00d7 task"


LEADERBOARD_HEAD = (
    "Rank", "Model", "Tier", "Mean score", "95% CI", "SE", "Coverage", "Normalised", "Normalised 95% CI", "Pass rate",
    "Pass rate 95% CI", "Scored", "Expected", "Cases", "Unscored", "Errors", "Invalid", "Skipped", "Tokens in",
    "Tokens out", "Cost (USD)", "Judge cost (USD)",
)


def leaderboard_section(models: Sequence[ModelFigures], comparison: Comparison | None, unit: str) -> str:
    """Mean score per model with its 95% interval, best first; every count and denominator in the table."""
    order = ranked(models)
    tier_of = _tiers(comparison)
    body = [_leaderboard_row(rank, m, tier_of) for rank, m in enumerate(order, 1)]
    note = ("Mean composite over scored cases (passed or failed); unscored cases, infrastructure errors, invalid and "
            "skipped cases are counted but left out. Normalised: every expected case without a score counts 0. "
            f"95% t intervals (cluster-robust, never of zero width) over {unit}. A model starts a new tier when the "
            "Holm-corrected paired test separates it from any model of the tier.")
    note = " ".join([note, *(line for m in order for line in describe_missing_cost(m.counts))])
    return section("leaderboard", "Leaderboard", note, _leaderboard_chart(models, order),
                   fallback(table(LEADERBOARD_HEAD, body)))


def _tiers(comparison: Comparison | None) -> dict[str, int]:
    """Model -> its tier (1: the best), from the paired comparisons."""
    if comparison is None:
        return {}
    return {model: n for n, tier in enumerate(comparison.tiers, 1) for model in tier}


def _leaderboard_chart(models: Sequence[ModelFigures], order: Sequence[ModelFigures]) -> str:
    colours = model_colours(m.model for m in models)
    rows = [Interval(m.label, m.score.mean, m.score.low, m.score.high, colours[m.model],
                     f"{m.label}: {fmt(m.score.mean)} {fmt_interval(m.score)} over {m.counts.get('scored', '?')} "
                     f"scored of {m.counts.get('cases', '?')} cases") for m in order]
    found = _finite_bounds(models)
    return interval_chart(rows, chart="leaderboard", label="Mean score per model with 95% intervals",
                          domain=(min([0.0, *found]), max([1.0, *found])))


def _finite_bounds(models: Sequence[ModelFigures]) -> list[float]:
    """Every model's mean score and interval bounds that are numbers."""
    found = [v for m in models for v in (m.score.mean, m.score.low, m.score.high)]
    return [v for v in found if v is not None and math.isfinite(v)]


def _leaderboard_row(rank: int, m: ModelFigures, tier_of: Mapping[str, int]) -> list[str]:
    c = m.counts
    return [str(rank), m.label, str(tier_of.get(m.model, "—")), fmt(m.score.mean), fmt_interval(m.score),
            fmt(m.score.se), fmt(c.get("coverage"), percent=True), fmt(m.normalised.mean),
            fmt_interval(m.normalised), fmt(m.pass_rate.mean, percent=True),
            fmt_interval(m.pass_rate, percent=True), str(c.get("scored", "—")), str(c.get("expected", "—")),
            str(c.get("cases", 0)), str(c.get("unscored", 0)), str(c.get("errors", 0)),
            str(c.get("invalid", 0)), str(c.get("skipped", 0)), fmt(c.get("input_tokens"), whole=True),
            fmt(c.get("output_tokens"), whole=True), fmt(c.get("cost_usd")), fmt(c.get("judge_cost_usd"))]


def heat_map_section(suite: Mapping[str, Any]) -> str:
    """Mean score of every model on every task, tasks easiest first."""
    tasks, values = heat_rows(suite)
    labels = _model_labels(suite)
    present = [v for row in values for v in row if v is not None]
    if not present:
        return section("heatmap", HEAT_MAP_TITLE, "No task has a scored case.", "", "")
    chart = heat_map(labels, tasks, values, chart="heatmap", label="Mean score per model and task",
                     domain=(min(0.0, *present), max(1.0, *present)))
    note = (f"Mean composite of each model's scored cases on each of {len(tasks)} tasks, tasks ordered by their mean "
            "over all models (easiest first); grey: no scored case. Hover a cell for its task and value.")
    return section("heatmap", HEAT_MAP_TITLE, note, f'<div class="scroll">{chart}</div>',
                   fallback(_heat_table(labels, tasks, values)))


def _model_labels(suite: Mapping[str, Any]) -> list[str]:
    return [str(row.get("label") or row.get("model")) for row in suite.get("models") or []]


def _heat_table(labels: Sequence[str], tasks: Sequence[str], values: Sequence[Sequence[float | None]]) -> str:
    """A row per task, a column per model (``values[model][task]``)."""
    body = [[task, *(fmt(row[t]) for row in values)] for t, task in enumerate(tasks)]
    return table(["Task", *labels], body)


def distribution_section(models: Sequence[ModelFigures]) -> str:
    """Each model's histogram of case scores over shared bins, its mean marked."""
    if not any(m.scores for m in models):
        return section("distributions", "Score distributions", "No scored case.", "", "")
    edges, counts = score_bins(models)
    colours = model_colours(m.model for m in models)
    series = [Histogram(m.label, counts[i], m.score.mean, colours[m.model]) for i, m in enumerate(models)]
    chart = histograms(series, edges, chart="distributions", label="Distribution of case scores per model")
    note = ("Composite of each scored case; bar heights are shares of that model's scored cases "
            "(counts in the table); the black line is the mean.")
    return section("distributions", "Score distributions", note, chart,
                   fallback(_distribution_table(edges, counts, models)))


def _distribution_table(edges: Sequence[float], counts: Sequence[Sequence[int]], models: Sequence[ModelFigures]) -> str:
    """A row per bin, a column per model (``counts[model][bin]``)."""
    body = [[_bin_label(edges, b), *(str(row[b]) for row in counts)] for b in range(len(edges) - 1)]
    return table(["Bin", *(m.label for m in models)], body, left=1)


def _bin_label(edges: Sequence[float], b: int) -> str:
    """``[low, high)``; the last bin holds its upper edge, ``[low, high]``."""
    return f"[{edges[b]:.2f}, {edges[b + 1]:.2f}{']' if b == len(edges) - 2 else ')'}"


def _triple(found: Estimate) -> tuple[float | None, float | None, float | None]:
    return (found.mean, found.low, found.high) if found.has_interval else (found.mean, None, None)


def _shown(found: Estimate) -> str:
    """A mean and its interval, in one cell."""
    return f"{fmt(found.mean)} {fmt_interval(found)}"


def component_section(models: Sequence[ModelFigures]) -> str:
    """The mean of each score component per model, with 95% intervals."""
    names = list(models[0].components) if models else []
    if not names:
        return section("components", "Component breakdown", "The suite's scores have no components.", "", "")
    note = ("Mean value of each component (each scorer's part of the composite) over the scored cases that have it; "
            "whiskers: 95% t intervals (cluster-robust).")
    return section("components", "Component breakdown", note, _component_chart(names, models),
                   fallback(_component_table(names, models)))


def _series(models: Sequence[ModelFigures]) -> list[tuple[str, str]]:
    """Each model's label and colour, for grouped bars."""
    colours = model_colours(m.model for m in models)
    return [(m.label, colours[m.model]) for m in models]


def _component_chart(names: Sequence[str], models: Sequence[ModelFigures]) -> str:
    values = [[_triple(m.components[name]) for m in models] for name in names]
    return grouped_bars(names, _series(models), values, chart="components",
                        label="Mean of each score component per model")


def _component_table(names: Sequence[str], models: Sequence[ModelFigures]) -> str:
    body = [[name, *(_shown(m.components[name]) for m in models)] for name in names]
    return table(["Component", *(m.label for m in models)], body, left=1)


def breakdown_section(found: Sequence[Breakdown], models: Sequence[ModelFigures]) -> str:
    """Each model's mean score per group of every dimension (tags, categories, turns...), with intervals."""
    if not found:
        return section("breakdowns", "Breakdowns", "No tag, category or other dimension splits these cases.", "", "")
    series = _series(models)
    charts = "".join(_breakdown_chart(entry, series) for entry in found)
    tables = "".join(_breakdown_table(entry, models) for entry in found)
    note = ("Mean composite per group of each dimension the cases carry (tags, categories, turns and the like), over "
            "the group's scored cases, with 95% t intervals (cluster-robust); Cases counts every status.")
    return section("breakdowns", "Breakdowns", note, f'<div class="charts">{charts}</div>', fallback(tables))


def _breakdown_chart(entry: Breakdown, series: Sequence[tuple[str, str]]) -> str:
    values = [[_triple(value) for value in row] for row in entry.values]
    return (f'<div><h4>By {esc(entry.title)}</h4>'
            + grouped_bars(entry.groups, series, values, chart="breakdown", label=f"Mean score by {entry.title}")
            + "</div>")


def _breakdown_table(entry: Breakdown, models: Sequence[ModelFigures]) -> str:
    head = [entry.title, "Cases", *(m.label for m in models)]
    body = [[group, str(entry.cases[g]), *map(_shown, entry.values[g])] for g, group in enumerate(entry.groups)]
    return table(head, body, left=1)
