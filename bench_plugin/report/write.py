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
from bench_plugin.report.case_table import CaseCell, unfinished_cells
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
_SKIPPED_NAMED = 20  # summary.json names the first lines left out; the warnings on the terminal name each


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
    skipped: Sequence[str] = (),
    scored_apart: Mapping[str, int] | None = None,
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
        skipped: ``path:line: why`` of each line of the results files read that was not a case record, left
            out: report.md and summary.json (``"skipped_records"``) count them.
        scored_apart: records not re-judged this time that may be scored otherwise than those re-judged
            (``scoring_mix.scored_apart``): report.md and summary.json (``"scored_apart"``) say so.
    """
    ordered = in_case_order(records)
    summary = summarize(ordered, _unfinished(selected, ordered))
    paths = {"summary": folder / "summary.json", "markdown": folder / "report.md"}
    if left_out:
        summary["left_out"] = describe_left_out(left_out)
    if skipped:
        summary["skipped_records"] = {"count": len(skipped), "lines": list(skipped[:_SKIPPED_NAMED])}
    if scored_apart:
        summary["scored_apart"] = dict(scored_apart)
    tables = add_aggregates(summary, ordered, aggregates or {})
    boards = _Leaderboards(folder, leaderboards or {}, ordered, whole, earlier)
    for suite in summary["suites"]:
        paths.update(boards.update(suite))
    # piece by piece: joined, the pieces of a 10,000-case summary were the largest thing the end of a run held
    write_atomically(paths["summary"], chain(summary_json(summary), ["\n"]))
    write_atomically(paths["markdown"], render_markdown(summary))
    paths["dashboard"] = folder / "dashboard.html"
    write_atomically(paths["dashboard"], dashboard_pieces(summary, ordered))  # piece by piece, as summary.json
    paths.update(write_csvs(folder, summary, tables))
    return paths


def _unfinished(selected: Iterable[str] | None, records: Sequence[CaseRecord]) -> dict[str, list[CaseCell]] | None:
    """The selected cases without a record, by suite path, when the records are one session's (see ``summarize``)."""
    return None if selected is None else unfinished_cells(selected, records)


def write_csvs(folder: Path, summary: Mapping[str, Any], tables: Sequence[Mapping[str, Any]]) -> dict[str, Path]:
    """Write the aggregate tables that ask for a CSV, then each suite's pairwise table; return their paths."""
    aggregate_csvs = [table for table in tables if table["csv"]]
    # FastChat's win/loss/tie table of each suite with pairwise judgments
    pairwise = pairwise_csvs(summary, (table["csv"] for table in aggregate_csvs))
    rendered = ((table["csv"], render_csv(table)) for table in aggregate_csvs)  # each rendered as it is written
    paths = {}
    for name, text in chain(rendered, pairwise.items()):
        paths[f"csv:{name}"] = output_file(folder, name)  # names from data: always a file in the folder
        write_atomically(paths[f"csv:{name}"], text)
    return paths


def describe_left_out(left_out: Mapping[str, Mapping[str, int]]) -> dict[str, Any]:
    """summary.json's ``left_out``: how many earlier cases, and by suite path their tasks and cases."""
    return {"cases": sum(sum(tasks.values()) for tasks in left_out.values()),
            "tasks": {path: dict(tasks) for path, tasks in left_out.items()}}


class _Leaderboards:
    """The Elo leaderboards of a run's suites, each updated with the suite's sessions (``update_leaderboard``)."""

    def __init__(
        self,
        folder: Path,
        specs: Mapping[str, LeaderboardSpec],
        ordered: Sequence[CaseRecord],
        whole: Callable[[str], Sequence[CaseRecord]] | None,
        earlier: Callable[[str], Sequence[CaseRecord]] | None,
    ) -> None:
        self.folder, self.specs, self.ordered, self.whole, self.earlier = folder, specs, ordered, whole, earlier

    def update(self, suite: dict[str, Any]) -> dict[str, Path]:
        """Update the suite's leaderboard, if it declares one, into its summary; return the path of its page."""
        spec = self.specs.get(suite["path"])
        if spec is None:
            return {}
        before = in_case_order(self.earlier(suite["path"]) if self.earlier is not None else ())
        suite["leaderboard"] = update_leaderboard(spec, self._members(suite["path"]), self.folder, before)
        return {f"leaderboard:{suite['path']}": self.folder / suite["leaderboard"]["markdown"]}

    def _members(self, path: str) -> list[CaseRecord]:
        """The suite's records that name its sessions: the whole records when the run's are for reports only."""
        if self.whole is not None:
            return in_case_order(self.whole(path))
        return [r for r in self.ordered if r.path == path]


def summary_json(value: Any, indent: str = "") -> Iterator[str]:
    """summary.json's text, in pieces: keys sorted and indented by two spaces, each row of a table on one line.

    A mapping has a key per line; a list of rows (of values, or of mappings and lists of values) has a row per
    line, as ``{"cases": 1, "models": {"m": 1.0}, ...}``, so a diff of two runs shows the rows that changed.
    Written whole with ``indent=2``, the file took Python's pure-Python encoder (json's C encoder does not
    indent): 22 ms at 1000 cases, where the rows, a line each, go through the C encoder in 4.
    """
    if _is_object(value):
        yield from _object_json(value, indent)
    elif _is_table(value):
        yield from _table_json(value, indent)
    else:
        yield _ONE_LINE.encode(value)


def _is_object(value: Any) -> bool:
    """Whether ``value`` is written a key per line: a mapping with keys, all strings."""
    return type(value) is dict and bool(value) and all(type(key) is str for key in value)


def _is_table(value: Any) -> bool:
    """Whether ``value`` is written an item per line: a list with an item that is no plain value."""
    return type(value) is list and bool(value) and not _all_scalars(value)


def _object_json(value: dict[str, Any], indent: str) -> Iterator[str]:
    inner = indent + "  "
    separator = "{\n"
    for key in sorted(value):
        yield separator + inner + _ONE_LINE.encode(key) + ": "
        yield from summary_json(value[key], inner)
        separator = ",\n"
    yield "\n" + indent + "}"


def _table_json(value: list[Any], indent: str) -> Iterator[str]:
    inner = indent + "  "
    separator = "[\n"
    for item in value:
        yield separator + inner
        yield from [_ONE_LINE.encode(item)] if _is_row(item) else summary_json(item, inner)
        separator = ",\n"
    yield "\n" + indent + "]"


def _is_row(value: Any) -> bool:
    """Whether ``value`` goes on one line in a list: a value, or a container of values and of containers of values."""
    if isinstance(value, _SCALARS):
        return True
    return all(isinstance(part, _SCALARS) or _all_scalars(part) for part in _parts(value))


def _parts(container: Any) -> Iterable[Any]:
    """A mapping's values, or a list's items."""
    return container.values() if isinstance(container, dict) else container


def _all_scalars(container: Any) -> bool:
    return all(isinstance(item, _SCALARS) for item in _parts(container))


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
