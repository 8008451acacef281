"""The report files of a run, written from its records: summary.json, report.md, dashboard.html and aggregate CSVs."""

from __future__ import annotations

import json
from collections.abc import Callable, Iterable, Iterator, Mapping, Sequence
from itertools import chain
from pathlib import Path
from typing import Any

from bench_plugin.core.safe_names import output_file
from bench_plugin.report.aggregate_csv import render_csv
from bench_plugin.report.aggregates import compute_aggregates
from bench_plugin.report.case_table import unfinished_cells
from bench_plugin.report.dashboard import dashboard_pieces
from bench_plugin.report.leaderboard import update_leaderboard
from bench_plugin.report.markdown import render_markdown
from bench_plugin.report.pairwise_table import pairwise_csvs
from bench_plugin.report.summary import summarize
from bench_plugin.results.record import CaseRecord
from bench_plugin.results.store import write_atomically
from bench_plugin.suite.aggregates.spec import AggregateSpec
from bench_plugin.suite.leaderboard import LeaderboardSpec

_ONE_LINE = json.JSONEncoder(sort_keys=True, separators=(", ", ": "))  # without indent: json's C encoder
_SCALARS = (str, int, float, bool, type(None))


def in_case_order(records: Iterable[CaseRecord]) -> list[CaseRecord]:
    """Suite, then position in the suite's expansion: the same order with or without xdist."""
    return sorted(records, key=lambda r: (r.path, r.case_index, r.nodeid))


def write_reports(
    records: Iterable[CaseRecord],
    folder: Path,
    aggregates: Mapping[str, AggregateSpec] | None = None,
    leaderboards: Mapping[str, LeaderboardSpec] | None = None,
    whole: Callable[[str], Sequence[CaseRecord]] | None = None,
    selected: Iterable[str] | None = None,
    left_out: Mapping[str, Mapping[str, int]] | None = None,
    earlier: Callable[[str], Sequence[CaseRecord]] | None = None,
) -> dict[str, Path]:
    """Write summary.json, report.md and dashboard.html for ``records`` into ``folder``; return their paths.

    Args:
        records: the run's records, in any order (xdist workers finish in any order); the reports use
            case order.
        folder: the output folder, created if missing.
        aggregates: the ``aggregates:`` of each suite, by suite path as records name it. Their
            tables join the suite's summary and report section; a table with ``csv:`` is also
            written to that file in ``folder`` (returned under ``csv:<name>``).
        leaderboards: the ``leaderboard:`` of each suite, by suite path: the run's sessions are
            added to the Elo leaderboard kept in ``folder`` (returned under ``leaderboard:<suite path>``),
            which the suite's summary and report section show.
        whole: the whole records of a suite (by path), when ``records`` are those ``CaseRecord.for_reports``
            keeps: a leaderboard's sessions are named by a digest of the whole records. None: ``records`` are.
        selected: the node ids a session was asked to run, when the records are that session's alone: a model
            is then expected to finish the cases it was selected for (a shard, ``-k``), not every case another
            model has. None (a merge, a rebuild, a run continuing earlier records): every model every case.
        left_out: earlier records not in ``records`` because their suite no longer has their task: suite path ->
            task -> cases. report.md and summary.json (``"left_out"``) say so.
        earlier: the whole records of a suite as the run held them before this session (a continued run): the
            leaderboard sessions they gave are replaced by those of ``records`` (``update_leaderboard``).
    """
    ordered = in_case_order(records)
    summary = summarize(ordered, None if selected is None else unfinished_cells(selected, ordered))
    paths = {"summary": folder / "summary.json", "markdown": folder / "report.md"}
    if left_out:
        summary["left_out"] = {"cases": sum(sum(tasks.values()) for tasks in left_out.values()),
                               "tasks": {path: dict(tasks) for path, tasks in left_out.items()}}
    tables = add_aggregates(summary, ordered, aggregates or {})
    for suite in summary["suites"]:
        board = (leaderboards or {}).get(suite["path"])
        if board is not None:
            members = in_case_order(whole(suite["path"])) if whole is not None else \
                [r for r in ordered if r.path == suite["path"]]
            before = earlier(suite["path"]) if earlier is not None else ()
            suite["leaderboard"] = update_leaderboard(board, members, folder, in_case_order(before))
            paths[f"leaderboard:{suite['path']}"] = folder / suite["leaderboard"]["markdown"]
    # piece by piece: joined, the pieces of a 10,000-case summary were the largest thing the end of a run held
    write_atomically(paths["summary"], chain(summary_json(summary), ["\n"]))
    write_atomically(paths["markdown"], render_markdown(summary))
    paths["dashboard"] = folder / "dashboard.html"
    write_atomically(paths["dashboard"], dashboard_pieces(summary, ordered))  # piece by piece, as summary.json
    for table in tables:
        if table["csv"]:
            paths[f"csv:{table['csv']}"] = output_file(folder, table["csv"])
            write_atomically(paths[f"csv:{table['csv']}"], render_csv(table))
    # FastChat's win/loss/tie table of each suite with pairwise judgments (names already safe: safe_file_name)
    for name, text in pairwise_csvs(summary, (table["csv"] for table in tables if table["csv"])).items():
        paths[f"csv:{name}"] = output_file(folder, name)
        write_atomically(paths[f"csv:{name}"], text)
    return paths


def summary_json(value: Any, indent: str = "") -> Iterator[str]:
    """summary.json's text, in pieces: keys sorted and indented by two spaces, each row of a table on one line.

    A mapping has a key per line; a list of rows (of values, or of mappings and lists of values) has a row per
    line, as ``{"cases": 1, "models": {"m": 1.0}, ...}``, so a diff of two runs shows the rows that changed.
    Written whole with ``indent=2``, the file took Python's pure-Python encoder (json's C encoder does not
    indent): 22 ms at 1000 cases, where the rows, a line each, go through the C encoder in 4.
    """
    if type(value) is dict and value and all(type(key) is str for key in value):
        inner = indent + "  "
        separator = "{\n"
        for key in sorted(value):
            yield separator + inner + _ONE_LINE.encode(key) + ": "
            yield from summary_json(value[key], inner)
            separator = ",\n"
        yield "\n" + indent + "}"
    elif type(value) is list and value and not all(isinstance(item, _SCALARS) for item in value):
        inner = indent + "  "
        separator = "[\n"
        for item in value:
            yield separator + inner
            if _is_row(item):
                yield _ONE_LINE.encode(item)
            else:
                yield from summary_json(item, inner)
            separator = ",\n"
        yield "\n" + indent + "]"
    else:
        yield _ONE_LINE.encode(value)


def _is_row(value: Any) -> bool:
    """Whether ``value`` goes on one line in a list: a value, or a container of values and of containers of values."""
    if isinstance(value, _SCALARS):
        return True
    parts = value.values() if isinstance(value, dict) else value
    for part in parts:
        if isinstance(part, _SCALARS):
            continue
        inner = part.values() if isinstance(part, dict) else part
        if not all(isinstance(item, _SCALARS) for item in inner):
            return False
    return True


def add_aggregates(
    summary: dict[str, Any], records: list[CaseRecord], aggregates: Mapping[str, AggregateSpec]
) -> list[dict[str, Any]]:
    """Compute each suite's aggregate tables into its summary (``aggregates``); return all tables."""
    tables: list[dict[str, Any]] = []
    for suite in summary["suites"]:
        spec = aggregates.get(suite["path"])
        if spec is not None:
            suite["aggregates"] = compute_aggregates(spec, [r for r in records if r.path == suite["path"]])
            tables += suite["aggregates"]
    return tables
