"""A comparison's figures as short text, and its headline: the lines a terminal prints and compare.md opens with."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench_plugin.report.compare.verdicts import REGRESSED

MISSING = "-"


def score_change(figure: Mapping[str, Any] | None) -> str:
    """``-0.0500 [-0.0800, -0.0200]``: a mean score's change with its interval (``[n/a]`` when unbounded)."""
    if figure is None:
        return MISSING
    return f"{figure['difference']:+.4f} {_interval(figure, 1.0, '.4f')}"


def rate_change(figure: Mapping[str, Any] | None) -> str:
    """``-5.0 pts [-8.0, -2.0]``: a pass rate's change in percentage points with its interval."""
    if figure is None:
        return MISSING
    return f"{figure['difference'] * 100:+.1f} pts {_interval(figure, 100.0, '.1f')}"


def score_pair(figure: Mapping[str, Any] | None) -> str:
    """``0.8000 → 0.7500``: the mean score on both sides."""
    return MISSING if figure is None else f"{figure['baseline']:.4f} → {figure['current']:.4f}"


def rate_pair(figure: Mapping[str, Any] | None) -> str:
    """``80.0% → 75.0%``: the pass rate on both sides."""
    return MISSING if figure is None else f"{figure['baseline'] * 100:.1f}% → {figure['current'] * 100:.1f}%"


def p_value(figure: Mapping[str, Any] | None) -> str:
    """The Holm-adjusted p-value (``<0.0001`` when smaller), ``-`` when the figure was not tested."""
    if figure is None or figure["p_holm"] is None:
        return MISSING
    value = figure["p_holm"]
    return "<0.0001" if value < 0.0001 else f"{value:.4f}"


def _interval(figure: Mapping[str, Any], scale: float, spec: str) -> str:
    if figure["low"] is None or figure["high"] is None:
        return "[no interval]"
    return f"[{figure['low'] * scale:{spec}}, {figure['high'] * scale:{spec}}]"


def count_verdicts(comparison: Mapping[str, Any]) -> str:
    """``1 regressed, 2 unchanged``: the suite x model verdicts that occur."""
    return ", ".join(f"{count} {verdict}" for verdict, count in comparison["counts"].items() if count)


def headline_lines(comparison: Mapping[str, Any]) -> list[str]:
    """The overall verdict, then one line per suite x model: what the terminal prints."""
    rows = comparison["comparisons"]
    compared = comparison["matching"]["compared"]
    lines = [f"compare: {comparison['verdict']} ({count_verdicts(comparison)} of {len(rows)} suite x model "
             f"comparison{'s' * (len(rows) != 1)}; {compared} case{'s' * (compared != 1)} compared)"]
    for row in rows:
        lines.append(f"  {row['suite']} {row['model']}: {row['verdict']}: mean score {score_change(row['score'])}, "
                     f"pass rate {rate_change(row['pass_rate'])}")
    tasks = [f"{row['suite']} {row['model']} {task['task']}" for row in rows for task in row["tasks"]
             if task["verdict"] == REGRESSED]
    if tasks:
        lines.append(f"  regressed task{'s' * (len(tasks) != 1)}: {', '.join(tasks)}")
    return lines
