"""Compare pages: two runs, or two models of one run, through ``report.compare`` (its matching and statistics).

Two models of one run are compared as two sides whose cases pair on everything but the model: the same suite,
task, prompt variant and run number, asked the same way. The page adds to compare.json's data the cases whose
outcome differs, each a link to the two outputs side by side with a text diff.
"""

from __future__ import annotations

import difflib
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from typing import Any

from bench_plugin.report.compare.build import NothingToCompare, Side, compare_sides
from bench_plugin.report.compare.cases import LISTS
from bench_plugin.report.compare.facts import CaseFacts
from bench_plugin.report.compare.matching import match_cases
from bench_plugin.report.compare.text import headline_lines
from bench_plugin.report.compare.verdicts import CompareSettings
from bench_plugin.results.record import CaseRecord
from bench_plugin.view.index import RunIndex

SHOWN_CASES = 500
"""The most case differences a compare page lists (largest score changes first)."""
MAX_DIFF_LINES = 5_000


@dataclass(frozen=True)
class CaseChange:
    """A compared case whose status, score or output differs, and where each side's case page is."""

    nodeid: str
    task: str
    baseline_status: str
    current_status: str
    baseline_score: float | None
    current_score: float | None
    output_changed: bool
    baseline_number: int
    current_number: int

    @property
    def difference(self) -> float | None:
        """Current minus baseline score; None when either has none."""
        if self.baseline_score is None or self.current_score is None:
            return None
        return self.current_score - self.baseline_score


@dataclass
class Comparison:
    """What a compare page shows: compare.json's data (None when nothing pairs, ``problem`` says why)."""

    title: str
    baseline_run: str
    current_run: str
    data: dict[str, Any] | None = None
    problem: str | None = None
    headline: list[str] = field(default_factory=list)
    changes: list[CaseChange] = field(default_factory=list)
    changed_total: int = 0
    numbers: dict[str, tuple[int, int]] = field(default_factory=dict)  # current node id -> both case numbers
    lists: dict[str, str] = field(default_factory=lambda: {name: title for name, (title, _) in LISTS.items()})


def compare_runs(baseline: RunIndex, current: RunIndex, settings: CompareSettings | None = None) -> Comparison:
    """Run ``current`` against run ``baseline``, case by case."""
    title = f"{current.source.name} against {baseline.source.name}"
    return _compare(title, (baseline, baseline.facts), (current, current.facts), settings or CompareSettings())


def compare_models(index: RunIndex, first: str, second: str, settings: CompareSettings | None = None) -> Comparison:
    """Model ``second`` against model ``first`` within one run: their cases pair on everything but the model."""
    pair = f"{first} → {second}"

    def side(model: str) -> list[CaseFacts]:
        return [replace(facts, key=(*facts.key[:3], pair, facts.key[4])) for facts in index.facts
                if facts.key[3] == model]

    title = f"{second} against {first} in {index.source.name}"
    return _compare(title, (index, side(first)), (index, side(second)), settings or CompareSettings())


def _compare(title: str, baseline: tuple[RunIndex, Sequence[CaseFacts]], current: tuple[RunIndex, Sequence[CaseFacts]],
             settings: CompareSettings) -> Comparison:
    (before_index, before), (now_index, now) = baseline, current
    shown = Comparison(title, before_index.source.id, now_index.source.id)
    try:
        shown.data = compare_sides(Side(before_index.source.name, before), Side(now_index.source.name, now), settings)
    except NothingToCompare as exc:
        shown.problem = str(exc)
        return shown
    shown.headline = headline_lines(shown.data)
    changes = []
    for old, new in match_cases(before, now).pairs:
        numbers = (before_index.by_nodeid[old.nodeid], now_index.by_nodeid[new.nodeid])
        shown.numbers[new.nodeid] = numbers
        if (old.status, old.score, old.output) != (new.status, new.score, new.output):
            changes.append(CaseChange(new.nodeid, new.task, old.status, new.status, old.score, new.score,
                                      old.output != new.output, *numbers))
    changes.sort(key=lambda change: -abs(change.difference or 0.0))
    shown.changes, shown.changed_total = changes[:SHOWN_CASES], len(changes)
    return shown


@dataclass(frozen=True)
class DiffLine:
    """A line of a unified diff and its kind: ``add``, ``remove``, ``hunk`` or ``same``."""

    kind: str
    text: str


def text_diff(before: CaseRecord, now: CaseRecord) -> list[DiffLine]:
    """The unified diff of the two cases' final outputs, line by line (bounded)."""
    lines = difflib.unified_diff((before.response or "").splitlines(), (now.response or "").splitlines(),
                                 "baseline", "current", lineterm="", n=3)
    shown = []
    for number, line in enumerate(lines):
        if number >= MAX_DIFF_LINES:
            shown.append(DiffLine("hunk", "… (the rest of the diff is not shown)"))
            break
        shown.append(DiffLine(_kind(line), line))
    return shown


def _kind(line: str) -> str:
    if line.startswith(("+++", "---", "@@")):
        return "hunk"
    return {"+": "add", "-": "remove"}.get(line[:1], "same")
