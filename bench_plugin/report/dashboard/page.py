"""The dashboard page: a header with the run's counts, then per suite its sections in reading order."""

from __future__ import annotations

import base64
import hashlib
from collections.abc import Iterator, Mapping, Sequence
from typing import Any

from bench_plugin.report.dashboard.compare import comparison_of, rating_sets
from bench_plugin.report.dashboard.figures import breakdowns, model_figures
from bench_plugin.report.dashboard.frame import PAGE_SCRIPT, PAGE_STYLE, fmt
from bench_plugin.report.dashboard.latency import latency_section
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
from bench_plugin.report.sandbox_flag import (
    html_skipped_note,
    html_suite_warning,
    html_warning,
    skipped_cases,
    unsandboxed_cases,
)
from bench_plugin.results.record import CaseRecord

_SCRIPT_HASH = base64.b64encode(hashlib.sha256(PAGE_SCRIPT.encode()).digest()).decode()
# only the page's own script may run: a label that slipped past escaping still could not execute
CSP = f"default-src 'none'; style-src 'unsafe-inline'; img-src data:; script-src 'sha256-{_SCRIPT_HASH}'"
STATUS_WORDS = {"passed": "passed", "failed": "failed", "unscored": "unscored", "errors": "infrastructure errors",
                "invalid": "invalid", "skipped": "skipped"}


def render_dashboard(
    summary: Mapping[str, Any], records: Sequence[CaseRecord], *, title: str = "Benchmark dashboard"
) -> str:
    """The whole ``dashboard.html`` page: ``dashboard_pieces`` joined."""
    return "".join(dashboard_pieces(summary, records, title=title))


def dashboard_pieces(
    summary: Mapping[str, Any], records: Sequence[CaseRecord], *, title: str = "Benchmark dashboard"
) -> Iterator[str]:
    """The ``dashboard.html`` page in pieces, in order, to be written one by one (``write_atomically``).

    Joined, a 10,000-case run's page was two copies of 3 MB (its heat map has a row per task) at the end of
    the run, where memory peaks.

    Args:
        summary: what ``report.summary.summarize`` returned for ``records``, with the sections
            ``write_reports`` adds (a suite's Elo ``leaderboard``).
        records: the same records (only each model's scored composites are read, for the histograms).
        title: the page's heading.

    Yields:
        One HTML document's pieces; an empty run gives a short valid page.
    """
    by_suite = _by_suite(records)
    suites = list(summary.get("suites") or [])
    yield ('<!DOCTYPE html><html lang="en"><head><meta charset="utf-8">'
           f'<meta http-equiv="Content-Security-Policy" content="{CSP}">'
           '<meta name="viewport" content="width=device-width, initial-scale=1">'
           f"<title>{esc(title)}</title><style>{PAGE_STYLE}</style></head><body>")
    yield f"<header><h1>{esc(title)}</h1><p>{describe_counts(summary.get('totals') or {})}</p>"
    yield html_warning(unsandboxed_cases(summary))  # agent commands that ran without a sandbox, if any
    yield html_skipped_note(*skipped_cases(summary))  # agent cases not run: no sandbox works here
    if len(suites) > 1:
        yield _navigation(suites)
    yield "</header><main>"
    if not suites:
        yield "<p>No cases were run.</p>"
    for index, suite in enumerate(suites):
        yield from suite_pieces(index, suite, by_suite.get((str(suite.get("suite")), str(suite.get("path"))), []))
    yield f"</main><script>{PAGE_SCRIPT}</script></body></html>\n"


def _by_suite(records: Sequence[CaseRecord]) -> dict[tuple[str, str], list[CaseRecord]]:
    by_suite: dict[tuple[str, str], list[CaseRecord]] = {}
    for record in records:
        by_suite.setdefault((record.suite, record.path), []).append(record)
    return by_suite


def _navigation(suites: Sequence[Mapping[str, Any]]) -> str:
    """A link to each suite's block."""
    links = "".join(f'<a href="#suite-{i}">{esc(s.get("suite") or "suite")}</a>' for i, s in enumerate(suites))
    return f"<nav>{links}</nav>"


def describe_counts(counts: Mapping[str, Any]) -> str:
    """The cases by status and the mean over scored cases, as escaped text."""
    parts = [f"{counts.get('cases', 0)} cases"]
    parts += [f"{counts[key]} {word}" for key, word in STATUS_WORDS.items() if counts.get(key)]
    return esc(", ".join(parts) + _mean_over_scored(counts))


def _mean_over_scored(counts: Mapping[str, Any]) -> str:
    scored = int(counts.get("passed") or 0) + int(counts.get("failed") or 0)
    mean = counts.get("mean_composite")
    return f"; mean score {fmt(mean)} over {scored} scored cases" if isinstance(mean, (int, float)) else ""


def render_suite(index: int, suite: Mapping[str, Any], records: Sequence[CaseRecord]) -> str:
    """One suite's block: how each model scores, then models against each other, then what to check."""
    return "".join(suite_pieces(index, suite, records))


def suite_pieces(index: int, suite: Mapping[str, Any], records: Sequence[CaseRecord]) -> Iterator[str]:
    """``render_suite``'s block in pieces, each section one."""
    models = model_figures(suite, records)
    comparison = comparison_of(suite) if len(models) > 1 else None
    counts = describe_counts(suite.get("totals") or {})
    name = esc(suite.get("suite") or "suite")
    yield f'<section class="suite" id="suite-{index}" data-suite="{name}"><h2>{_suite_heading(suite)}</h2>'
    yield f"{html_suite_warning(suite)}<p>{counts}</p>"
    yield leaderboard_section(models, comparison, _unit(suite))
    yield heat_map_section(suite)
    yield distribution_section(models)
    yield component_section(models)
    yield breakdown_section(breakdowns(suite, models), models)
    yield latency_section(suite)
    if comparison is not None:
        yield significance_section(models, comparison)
    yield ratings_section(suite, models, rating_sets(suite))
    yield repeats_section(suite, models)
    yield audit_section(suite)
    yield "</section>"


def _suite_heading(suite: Mapping[str, Any]) -> str:
    """The suite's name, and its file when known, as escaped HTML."""
    path = f" <code>{esc(suite['path'])}</code>" if suite.get("path") else ""
    return esc(suite.get("suite") or "suite") + path


def _unit(suite: Mapping[str, Any]) -> str:
    """What the suite's intervals resample."""
    statistics = suite.get("statistics")
    return "tasks (runs repeat)" if isinstance(statistics, Mapping) and statistics.get("unit") == "task" else "cases"
