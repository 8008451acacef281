"""One run's cases indexed once: a small row per case to filter and sort, whole records read back on demand.

A 10,000-case run keeps, per case, its row (names, status, scores, spend, and the lowercased text of its prompt
and output for the free-text filter, bounded), the record the report writers read (``CaseRecord.for_reports``:
the leaderboard and charts) and the comparison's facts (``report.compare.facts``); the transcript stays in the
file until a case page asks for it, found again by the byte offset of its line. The index is rebuilt when the
file changes (a run still going), never per request.
"""

from __future__ import annotations

import dataclasses
import math
import threading
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from functools import cached_property
from pathlib import Path
from typing import Any

from bench_plugin.report.compare.facts import CaseFacts, facts_of
from bench_plugin.report.dashboard.page import render_suite
from bench_plugin.report.summary import summarize
from bench_plugin.results.record import FAILED, PASSED, CaseRecord
from bench_plugin.results.store import parse_record_data
from bench_plugin.view.images import image_parts
from bench_plugin.view.runs import RunSource

SEARCHED_CHARS = 20_000
"""Of a case's prompt and output, how much the free-text filter searches (a long transcript is cut there)."""


@dataclass(frozen=True, slots=True)
class CaseRow:
    """What the run page lists and filters of one case; ``number`` is its id in URLs (its place in the file).

    ``images``: how many image parts its record has (``--static`` copies the files that may show).
    """

    number: int
    nodeid: str
    suite: str
    task: str
    model: str
    label: str
    run: int
    status: str
    reason: str
    tags: tuple[str, ...]
    composite: float | None
    components: Mapping[str, float | None]
    cost_usd: float | None
    tokens: int | None
    latency_s: float | None
    text: str
    offset: int
    length: int
    images: int = 0


@dataclass(frozen=True)
class _Case:
    """What the index keeps of one line: its row (numbered once every line is read), report record and facts."""

    row: CaseRow
    record: CaseRecord
    facts: CaseFacts


class RunIndex:
    """The rows, report records and facts of one run, and its whole records on demand.

    Args:
        source: the run.
    """

    def __init__(self, source: RunSource) -> None:
        self.source = source
        self.stamp = _stamp(source.results)
        cases, self.skipped = _read_cases(source.results)
        self.rows = [dataclasses.replace(case.row, number=number) for number, case in enumerate(cases)]
        self.records = [case.record for case in cases]
        self.facts = [case.facts for case in cases]
        self.by_nodeid = {row.nodeid: row.number for row in self.rows}
        self._summary: dict[str, Any] | None = None
        self._summary_lock = threading.Lock()
        self._choices: dict[str, list[str]] = {}

    def record(self, number: int) -> CaseRecord:
        """The whole record of case ``number``, read from the file now.

        Raises:
            LookupError: no such case, or its line changed since the index was built.
        """
        row = self.rows[number]
        with self.source.results.open("rb") as file:
            file.seek(row.offset)
            line = file.read(row.length).decode("utf-8", "replace")
        try:
            data = parse_record_data(line, self.source.results, number + 1, last=False)
        except ValueError as exc:
            raise LookupError(f"the record of {row.nodeid} changed since it was read: reload the page") from exc
        if data is None or data.get("nodeid") != row.nodeid:
            raise LookupError(f"the record of {row.nodeid} moved since it was read: reload the page")
        return CaseRecord.from_dict(data)

    @property
    def summary(self) -> dict[str, Any]:
        """What ``report.summary.summarize`` says of the run (the leaderboard's intervals), computed once."""
        with self._summary_lock:
            if self._summary is None:
                self._summary = summarize(self.records)
            return self._summary

    def summary_if_ready(self) -> dict[str, Any] | None:
        """The run's statistics when computed; None while they are, started in the background if not yet.

        A 10,000-case run's intervals and comparisons take seconds: its run page lists and filters the cases
        meanwhile.
        """
        if self._summary is None and not self._summary_lock.locked():
            threading.Thread(target=lambda: self.summary, name="bench-view-statistics", daemon=True).start()
        return self._summary

    @cached_property
    def charts(self) -> list[str]:
        """Each suite's dashboard block (leaderboard with intervals and the charts), drawn once."""
        by_suite: dict[tuple[str, str], list[CaseRecord]] = {}
        for record in self.records:
            by_suite.setdefault((record.suite, record.path), []).append(record)
        return [render_suite(index, suite, by_suite.get((str(suite.get("suite")), str(suite.get("path"))), []))
                for index, suite in enumerate(self.summary.get("suites") or [])]

    @cached_property
    def overview(self) -> dict[str, Any]:
        """The runs page's row: when, suites, models, cases, mean, pass rate, cost, tokens, duration.

        Counted from the rows, so the runs page does not wait for every run's statistics.
        """
        scored = [row for row in self.rows if row.status in (PASSED, FAILED)]
        return {
            "started": min(filter(None, (r.started_at for r in self.records)), default=None),
            "suites": self.choices("suite"),
            "models": self.models,
            "cases": len(self.rows),
            "mean": _mean([row.composite for row in scored]),
            "pass_rate": _mean([float(row.status == PASSED) for row in scored]),
            "cost_usd": _total([row.cost_usd for row in self.rows]),
            "tokens": _total([row.tokens for row in self.rows]),
            "duration_s": _total([r.duration_s for r in self.records]),
        }

    @cached_property
    def models(self) -> list[str]:
        """The run's models, in the order first seen."""
        return list(dict.fromkeys(row.model for row in self.rows))

    @cached_property
    def components(self) -> list[str]:
        """Every component name of the run's cases, in the order first seen."""
        return list(dict.fromkeys(name for row in self.rows for name in row.components))

    def choices(self, field: str) -> list[str]:
        """The distinct values of a row field (``suite``, ``model``, ``task``, ``status``), for the filters."""
        if field not in self._choices:
            self._choices[field] = list(dict.fromkeys(str(getattr(row, field)) for row in self.rows))
        return self._choices[field]

    @cached_property
    def tags(self) -> list[str]:
        """Every tag of the run's cases, in the order first seen."""
        return list(dict.fromkeys(tag for row in self.rows for tag in row.tags))


class RunIndexes:
    """Each served run's index, built the first time it is asked for and again when its file changes."""

    def __init__(self, sources: Sequence[RunSource]) -> None:
        self.sources = {source.id: source for source in sources}
        self._built: dict[str, RunIndex] = {}
        self._lock = threading.Lock()  # the server answers requests in threads: one build per run

    def get(self, run_id: str) -> RunIndex | None:
        """The run's index; None for an id that names no run served."""
        source = self.sources.get(run_id)
        if source is None:
            return None
        with self._lock:
            index = self._built.get(run_id)
            if index is None or index.stamp != _stamp(source.results):
                index = self._built[run_id] = RunIndex(source)
        return index


def _stamp(path: Path) -> tuple[int, int]:
    status = path.stat()
    return status.st_size, status.st_mtime_ns


def _read_cases(path: Path) -> tuple[list[_Case], list[str]]:
    """The cases of a results file (the newest line of each case, placed where it is), and what was left out.

    Left out: ``path:line: why`` of each line that is not a case record this version reads (``record_problem``);
    a torn last line (no newline yet) is not read at all. The file is read a line at a time, and each line's whole
    data let go once it is indexed.
    """
    newest: dict[str, _Case] = {}
    skipped: list[str] = []
    offset = 0
    with path.open("rb") as file:
        for number, line in enumerate(file, start=1):
            place, offset = (offset, len(line) - 1), offset + len(line)
            if not line.endswith(b"\n"):
                break  # torn by a run killed while writing it, or still being written
            try:
                case = _case(line[:-1].decode("utf-8", "replace"), path, number, place)
            except ValueError as exc:
                skipped.append(str(exc))
                continue
            if case is not None:
                newest.pop(case.row.nodeid, None)  # the newest line of a case is its record, placed last
                newest[case.row.nodeid] = case
    return list(newest.values()), skipped


def _case(text: str, path: Path, number: int, place: tuple[int, int]) -> _Case | None:
    """One line indexed (None for a blank line); ``place``: its offset and length in bytes.

    Raises:
        ValueError: not a case record this version reads (``path:line: why``).
    """
    if not text.strip():
        return None
    data = parse_record_data(text, path, number, last=False)
    assert data is not None  # last=False: a line that is not JSON raises
    try:
        whole = CaseRecord.from_dict(data)
        kept = CaseRecord.for_reports(data)
    except TypeError as exc:
        raise ValueError(f"{path}:{number}: incomplete case record: {exc}") from exc
    facts = facts_of(whole)
    return _Case(_row(whole, facts, place), kept, facts)


def _row(record: CaseRecord, facts: CaseFacts, place: tuple[int, int]) -> CaseRow:
    return CaseRow(
        number=-1, nodeid=record.nodeid, suite=record.suite or record.path, task=record.task, model=record.model,
        label=record.model_label, run=record.run, status=record.status, reason=record.reason,
        tags=tuple(record.tags), composite=record.composite,
        components={name: _number(c.get("value")) for name, c in record.components.items()},
        cost_usd=facts.cost_usd, tokens=facts.tokens, latency_s=record.latency_s,
        text=searched_text(record), offset=place[0], length=place[1], images=len(image_parts(record)),
    )


def _number(value: Any) -> float | None:
    return float(value) if isinstance(value, (int, float)) and not isinstance(value, bool) else None


def searched_text(record: CaseRecord) -> str:
    """The prompt's and the output's text, lowercased and bounded, for the free-text filter."""
    # the transcript holds the messages sent and every answer; a record without one has its messages
    parts = [text_of(message.get("content")) for message in record.transcript or record.messages]
    parts.append(record.response or "")
    return "\n".join(parts)[:SEARCHED_CHARS].casefold()


def text_of(content: Any) -> str:
    """A message's text: the content itself, or its text parts joined (an image part has none)."""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "\n".join(str(part.get("text", "")) for part in content if isinstance(part, Mapping))
    return ""


def _mean(values: Sequence[float | None]) -> float | None:
    """The mean of the values known; None when none is."""
    known = [value for value in values if value is not None]
    return math.fsum(known) / len(known) if known else None


def _total(values: Sequence[float | int | None]) -> Any:
    """The sum of the values known (a count stays whole); None when none is."""
    known = [value for value in values if value is not None]
    if not known:
        return None
    return sum(known) if all(isinstance(value, int) for value in known) else math.fsum(known)
