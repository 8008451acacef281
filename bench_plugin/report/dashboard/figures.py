"""The numbers the dashboard draws: read from the summary, where every figure is computed, and histograms from records.

``report.summary.summarize`` computes every figure that the reports share, intervals included; the
dashboard only reads them, so its numbers are the ones in report.md and summary.json. Readers accept
a missing key (a summary from an older writer, a suite with one model) and give a figure without an
interval rather than fail. The only per-case data read here is each model's scored composites, binned
into histograms in Python, so the page embeds no records.
"""

from __future__ import annotations

import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np
import numpy.typing as npt

from bench_plugin.results.record import FAILED, PASSED, CaseRecord


def number(value: Any) -> float | None:
    """``value`` as a float when it is a finite real number (not a bool), else None."""
    if isinstance(value, bool) or not isinstance(value, (int, float)) or not math.isfinite(value):
        return None
    return float(value)


@dataclass(frozen=True)
class Estimate:
    """A figure with its standard error and 95% interval (NaN where the summary gives none)."""

    mean: float | None
    se: float = math.nan
    low: float = math.nan
    high: float = math.nan
    n: int = 0

    @property
    def has_interval(self) -> bool:
        """Whether both bounds are numbers."""
        return math.isfinite(self.low) and math.isfinite(self.high)


def estimate(value: Any, fallback: Any = None) -> Estimate:
    """An ``Estimate`` from a summary interval (``{"mean", "se", "ci_low", "ci_high", "n"}``).

    Args:
        value: the summary's interval, or anything else (then only ``fallback`` is known).
        fallback: the plain figure to show when ``value`` has no mean.
    """
    if not isinstance(value, Mapping):
        return Estimate(number(fallback))
    mean = number(value.get("mean"))
    low, high, se = (number(value.get(key)) for key in ("ci_low", "ci_high", "se"))
    n = value.get("n")
    return Estimate(
        mean if mean is not None else number(fallback), _nan_if_none(se), _nan_if_none(low), _nan_if_none(high),
        n if isinstance(n, int) else 0,
    )


def _nan_if_none(value: float | None) -> float:
    return math.nan if value is None else value


@dataclass(frozen=True)
class ModelFigures:
    """One model of a suite as the dashboard shows it.

    Attributes:
        model: the model's key in the suite.
        label: its display label (from the suite: escape before showing).
        counts: the summary's row (counts by status, tokens, cost, coverage...).
        score: the clean mean composite (over scored cases), with interval.
        normalised: the coverage-normalised score (cases without a score count 0), with interval.
        pass_rate: passed / scored, with interval.
        components: component name -> its mean, with interval.
        scores: the composite of each scored case (for the histograms).
    """

    model: str
    label: str
    counts: Mapping[str, Any]
    score: Estimate
    normalised: Estimate
    pass_rate: Estimate
    components: Mapping[str, Estimate]
    scores: Sequence[float]


def model_figures(suite: Mapping[str, Any], records: Sequence[CaseRecord]) -> list[ModelFigures]:
    """Per model of the suite, in the summary's order: its row, its intervals, its scored composites.

    Args:
        suite: one suite of the summary.
        records: that suite's records.
    """
    scores = _scored_composites(records)
    components = list(suite.get("components") or [])
    return [_model_figures(row, components, scores) for row in suite.get("models") or []]


def _scored_composites(records: Sequence[CaseRecord]) -> dict[str, list[float]]:
    """Model -> the composites of its scored cases."""
    scores: dict[str, list[float]] = {}
    for record in records:
        value = number(record.composite)
        if record.status in (PASSED, FAILED) and value is not None:
            scores.setdefault(record.model, []).append(value)
    return scores


def _model_figures(
    row: Mapping[str, Any], components: Sequence[Any], scores: Mapping[str, list[float]]
) -> ModelFigures:
    """One leaderboard row of the summary, with its intervals, its components' and its scored composites."""
    model = str(row.get("model"))
    intervals = _mapping(row.get("intervals"))
    given, plain = _mapping(intervals.get("components")), _mapping(row.get("components"))
    return ModelFigures(
        model=model,
        label=str(row.get("label") or model),
        counts=row,
        score=estimate(intervals.get("mean_composite"), row.get("mean_composite")),
        normalised=estimate(intervals.get("normalised")),
        pass_rate=estimate(intervals.get("pass_rate"), row.get("pass_rate")),
        components={str(name): estimate(given.get(name), plain.get(name)) for name in components},
        scores=scores.get(model, []),
    )


def _mapping(value: Any) -> Mapping[str, Any]:
    return value if isinstance(value, Mapping) else {}


def heat_rows(suite: Mapping[str, Any]) -> tuple[list[str], list[list[float | None]]]:
    """Task ids (easiest first: by mean over all models) and each model's mean composite per task.

    Returns:
        ``(tasks, values)`` with ``values[model index][task index]``, models in the summary's order.
    """
    models = [str(row.get("model")) for row in suite.get("models") or []]
    tasks = _easiest_first(list(suite.get("tasks") or []))
    return [str(task.get("task")) for task in tasks], [[_task_mean(task, model) for task in tasks] for model in models]


def _easiest_first(tasks: list[Mapping[str, Any]]) -> list[Mapping[str, Any]]:
    """The task rows by their mean over all models, best first (a task without one last); ties keep their order."""
    order = sorted(range(len(tasks)), key=lambda i: -(number(tasks[i].get("mean_composite")) or -1.0))
    return [tasks[i] for i in order]


def _task_mean(task: Mapping[str, Any], model: str) -> float | None:
    """A model's mean composite on a task (a row of the summary's task table)."""
    return number((task.get("models") or {}).get(model))


def score_bins(models: Sequence[ModelFigures], bins: int = 10) -> tuple[list[float], list[list[int]]]:
    """Shared histogram bins over every model's scored composites (``[0, 1]`` unless scores leave it)."""
    everything = [score for figures in models for score in figures.scores]
    edges = np.linspace(min([0.0, *everything]), max([1.0, *everything]), bins + 1)
    counts = [_histogram(figures.scores, edges) for figures in models]
    return [float(edge) for edge in edges], counts


def _histogram(scores: Sequence[float], edges: npt.NDArray[np.float64]) -> list[int]:
    """How many ``scores`` fall in each bin."""
    return [int(count) for count in np.histogram(np.asarray(scores, dtype=np.float64), bins=edges)[0]]


@dataclass(frozen=True)
class Breakdown:
    """One dimension of the summary's breakdowns (a tag key, a category...): each group's mean per model.

    Attributes:
        title: the dimension's name, with its source.
        groups: the group values, in the summary's order.
        cases: cases per group (every status, every model).
        values: ``values[group][model]``, models in the suite's order.
    """

    title: str
    groups: list[str]
    cases: list[int]
    values: list[list[Estimate]]


def breakdowns(suite: Mapping[str, Any], models: Sequence[ModelFigures]) -> list[Breakdown]:
    """The suite's breakdowns (``summary["breakdowns"]``), one per dimension with two or more groups."""
    found = [(entry, _groups(entry)) for entry in _entries(suite)]
    return [_breakdown(entry, groups, models) for entry, groups in found if len(groups) >= 2]


def _entries(suite: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [entry for entry in suite.get("breakdowns") or [] if isinstance(entry, Mapping)]


def _groups(entry: Mapping[str, Any]) -> list[Mapping[str, Any]]:
    return [group for group in entry.get("groups") or [] if isinstance(group, Mapping)]


def _breakdown(
    entry: Mapping[str, Any], groups: Sequence[Mapping[str, Any]], models: Sequence[ModelFigures]
) -> Breakdown:
    """One dimension: its title with its source and scorer, and each group's cases and estimate per model."""
    return Breakdown(
        title=_title(entry),
        groups=[str(group.get("value")) for group in groups],
        cases=[int(group.get("cases") or 0) for group in groups],
        values=[_group_estimates(group, models) for group in groups],
    )


def _group_estimates(group: Mapping[str, Any], models: Sequence[ModelFigures]) -> list[Estimate]:
    """A group's mean per model, with its interval."""
    return [estimate((group.get("models") or {}).get(m.model)) for m in models]


def _title(entry: Mapping[str, Any]) -> str:
    """The dimension's name, with its source and its scorer when the summary gives them."""
    source = f" ({entry['source']})" if entry.get("source") else ""
    scorer = f", scorer {entry['scorer']}" if entry.get("scorer") else ""
    return f"{entry.get('dimension')}{source}{scorer}"


def ranked(models: Sequence[ModelFigures]) -> list[ModelFigures]:
    """The models best first by mean score (a model without one last); ties keep the suite's order."""
    return sorted(models, key=lambda m: -(m.score.mean if m.score.mean is not None else -math.inf))
