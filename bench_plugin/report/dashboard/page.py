"""The dashboard page: a header with the run's counts, then per suite its sections in reading order."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Mapping, Sequence
from typing import Any

from bench_plugin.record import CaseRecord
from bench_plugin.report.dashboard.compare import comparison_of, rating_sets
from bench_plugin.report.dashboard.figures import breakdowns, model_figures
from bench_plugin.report.dashboard.frame import PAGE_SCRIPT, PAGE_STYLE, fmt
from bench_plugin.report.dashboard.scores import (
    breakdown_section,
    component_section,
    distribution_section,
    heat_map_section,
    leaderboard_section,
)
from bench_plugin.report.dashboard.svg import esc
from bench_plugin.report.dashboard.versus import (
    audit_section,
    ratings_section,
    repeats_section,
    significance_section,
)
from bench_plugin.report.sandbox_flag import html_suite_warning, html_warning, unsandboxed_cases

_SCRIPT_HASH = base64.b64encode(hashlib.sha256(PAGE_SCRIPT.encode()).digest()).decode()
# only the page's own script may run: a label that slipped past escaping still could not execute
CSP = f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-{_SCRIPT_HASH}'"
STATUS_WORDS = {"passed": "passed", "failed": "failed", "unscored": "unscored", "errors": "infrastructure errors",
                "invalid": "invalid", "skipped": "skipped"}


def render_dashboard(
    summary: Mapping[str, Any], records: Sequence[CaseRecord], *, title: str = "Benchmark dashboard"
) -> str:
    """The whole ``dashboard.html`` page.

    Args:
        summary: what ``report.summary.summarize`` returned for ``records``, with the sections
            ``write_reports`` adds (a suite's Elo ``leaderboard``).
        records: the same records (only each model's scored composites are read, for the histograms).
        title: the page's heading.

    Returns:
        One HTML document; an empty run gives a short valid page.
    """
    by_suite: dict[tuple[str, str], list[CaseRecord]] = {}
    for record in records:
        by_suite.setdefault((record.suite, record.path), []).append(record)
    suites = list(summary.get("suites") or [])
    body = [f"<header><h1>{esc(title)}</h1><p>{describe_counts(summary.get('totals') or {})}</p>",
            html_warning(unsandboxed_cases(summary))]  # agent commands that ran without a sandbox, if any
    if len(suites) > 1:
        links = "".join(f'<a href="#suite-{i}">{esc(s.get("suite") or "suite")}</a>' for i, s in enumerate(suites))
        body.append(f"<nav>{links}</nav>")
    body.append("</header><main>")
    if not suites:
        body.append("<p>No cases were run.</p>")
    for index, suite in enumerate(suites):
        body.append(render_suite(index, suite, by_suite.get((str(suite.get("suite")), str(suite.get("path"))), [])))
    return (
        '<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
        f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
        '<meta name="viewport" content="width=device-width, initial-scale=1">'
        f"<title>{esc(title)}</title><style>{PAGE_STYLE}</style></head><body>"
        + "".join(body) + f"</main><script>{PAGE_SCRIPT}</script></body></html>\n"
    )


def describe_counts(counts: Mapping[str, Any]) -> str:
    """The cases by status and the mean over scored cases, as escaped text."""
    parts = [f"{counts.get('cases', 0)} cases"]
    parts += [f"{counts[key]} {word}" for key, word in STATUS_WORDS.items() if counts.get(key)]
    scored = int(counts.get("passed") or 0) + int(counts.get("failed") or 0)
    mean = counts.get("mean_composite")
    tail = f"; mean score {fmt(mean)} over {scored} scored cases" if isinstance(mean, (int, float)) else ""
    return esc(", ".join(parts) + tail)


def render_suite(index: int, suite: Mapping[str, Any], records: Sequence[CaseRecord]) -> str:
    """One suite's block: how each model scores, then models against each other, then what to check."""
    models = model_figures(suite, records)
    comparison = comparison_of(suite) if len(models) > 1 else None
    statistics = suite.get("statistics")
    unit = "tasks (runs repeat)" if isinstance(statistics, Mapping) and statistics.get("unit") == "task" else "cases"
    heading = esc(suite.get("suite") or "suite") + (f" <code>{esc(suite['path'])}</code>" if suite.get("path") else "")
    counts = describe_counts(suite.get("totals") or {})
    name = esc(suite.get("suite") or "suite")
    parts = [f'<section class="suite" id="suite-{index}" data-suite="{name}"><h2>{heading}</h2>',
             f"{html_suite_warning(suite)}<p>{counts}</p>",
             leaderboard_section(models, comparison, unit), heat_map_section(suite), distribution_section(models),
             component_section(models), breakdown_section(breakdowns(suite, models), models)]
    if comparison is not None:
        parts.append(significance_section(models, comparison))
    parts += [ratings_section(suite, models, rating_sets(suite)), repeats_section(suite, models), audit_section(suite)]
    return "".join(parts) + "</section>"
