"""What a session continues: a named run's earlier results, and for each case whether to reuse, re-judge or run it.

A named run (``--bench-run NAME``) keeps its results in ``<output>/runs/NAME/results.jsonl``. Every
process of a session (the controller and each xdist worker) reads that file once, read-only, at start:
an index of node id -> where its newest line is, its outcome and a fingerprint of what it was asked.
Only the controller writes the file (``store.py``). A case whose record is finished is not sent to a
model again: its outcome is reported from the record. ``--bench-rejudge`` reads the same records to
score their transcripts again.
"""

from __future__ import annotations

import contextlib
import hashlib
import json
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_plugin.core.json_bounds import loads_bounded
from bench_plugin.results import record as rec
from bench_plugin.results.record import CaseRecord, record_problem
from bench_plugin.results.store import parse_record_line
from bench_plugin.run.rejudge import rejudge_problem
from bench_plugin.suite.asked import asked_digest
from bench_plugin.suite.spec import CaseSpec

RUN = "run"  # send it to its model
REUSE = "reuse"  # finished earlier: report the stored record
REJUDGE = "rejudge"  # score the stored transcript again
CANNOT_REJUDGE = "cannot-rejudge"  # --bench-rejudge, and nothing stored can be judged again


@dataclass(frozen=True)
class RunSettings:
    """The options that say what a session continues (``run_options.py`` reads them).

    ``name``: ``--bench-run``; ``results``: the results file the session reads and continues (None: none);
    ``fresh``: ``--bench-fresh``; ``retry_errors``: ``--bench-retry-errors``; ``rejudge``:
    ``--bench-rejudge``; ``keep_earlier``: the session's results file keeps the records of cases it does
    not run (a named run, ``--lf``, ``--bench-rejudge``).
    """

    name: str | None = None
    results: Path | None = None
    fresh: bool = False
    retry_errors: bool = False
    rejudge: bool = False
    keep_earlier: bool = False


@dataclass(frozen=True)
class _Entry:
    """Where a case's newest line is in the file, and what decides whether it can be reused."""

    offset: int
    length: int
    status: str
    error_kind: str | None
    fingerprint: str
    rejudge_problem: str | None
    asked: str | None = None  # the record's ``asked``: a multi-turn, conversation or agent task's setup
    scored_by: str | None = None  # the record's ``scored_by``: how it was scored


class RunHistory:
    """The earlier records of the session's results file, read lazily: one index in memory, records on demand.

    Args:
        settings: what the session continues.
        entries: node id -> its newest line's place and outcome (``load`` reads them).
    """

    def __init__(self, settings: RunSettings | None = None, entries: Mapping[str, _Entry] | None = None,
                 set_aside: Sequence[str] = (), set_aside_before: Sequence[str] = ()) -> None:
        self.settings = settings or RunSettings()
        self._entries = dict(entries or {})
        # ``path:line: why`` of each line that was not a case record, moved to results.rejected.jsonl at start
        self.set_aside = tuple(set_aside)
        # the lines earlier sessions moved there: still left out, so still counted
        self.set_aside_before = tuple(set_aside_before)
        self._decisions: dict[str, str] = {}

    @classmethod
    def load(cls, settings: RunSettings, set_aside: Sequence[str] = (),
             set_aside_before: Sequence[str] = ()) -> RunHistory:
        """Index the results file the settings name; an empty history when there is none, or ``fresh``.

        A line that is not a case record is passed over: its case runs again (the controller has set such lines
        aside before, ``rejected.py``: ``set_aside`` says which).

        Raises:
            OSError: the file exists but cannot be read.
        """
        path = settings.results
        if path is None or settings.fresh or not (settings.name or settings.rejudge) or not path.exists():
            return cls(settings, set_aside=set_aside, set_aside_before=set_aside_before)
        entries: dict[str, _Entry] = {}
        for record, offset, length, number in _record_lines(path.read_bytes()):
            entries.pop(record["nodeid"], None)  # the newest line of a case is its record
            with contextlib.suppress(ValueError):  # not a record this version can read: the case runs again
                entries[record["nodeid"]] = _entry(record, offset, length, path, number)
        return cls(settings, entries, set_aside, set_aside_before)

    def __len__(self) -> int:
        return len(self._entries)

    def __contains__(self, nodeid: object) -> bool:
        """Whether the results file has a record of the case."""
        return nodeid in self._entries

    def decide(self, nodeid: str, case: CaseSpec) -> str:
        """``RUN``, ``REUSE``, ``REJUDGE`` or ``CANNOT_REJUDGE`` for one selected case (the same answer every time)."""
        decision = self._decisions.get(nodeid)
        if decision is None:
            decision = self._decisions[nodeid] = self._decide(nodeid, case)
        return decision

    def _decide(self, nodeid: str, case: CaseSpec) -> str:
        entry = self._entries.get(nodeid)
        if self.settings.rejudge:
            return REJUDGE if entry is not None and entry.rejudge_problem is None else CANNOT_REJUDGE
        if self.settings.name is None or entry is None:
            return RUN
        return REUSE if _still_answers(entry, case, self.settings.retry_errors) else RUN

    def scored_otherwise(self, nodeid: str, scored_by: str | None) -> bool:
        """Whether the case's stored record was scored otherwise than ``scored_by`` says it is now.

        A scorer added, a rubric or a formula changed; False when either does not say (a record written before).
        """
        entry = self._entries.get(nodeid)
        return entry is not None and None not in (entry.scored_by, scored_by) and entry.scored_by != scored_by

    def rejudge_problem(self, nodeid: str) -> str:
        """Why a case cannot be judged again (``CANNOT_REJUDGE``), for its error."""
        entry = self._entries.get(nodeid)
        where = self.settings.results
        if entry is None:
            return f"cannot re-judge: {where} has no record of this case; run it first (without --bench-rejudge)"
        return f"cannot re-judge: {entry.rejudge_problem}"

    def record(self, nodeid: str) -> CaseRecord:
        """The case's stored record, read from the file now.

        Raises:
            KeyError: no record of the case.
        """
        entry = self._entries[nodeid]
        assert self.settings.results is not None
        with self.settings.results.open("rb") as file:
            file.seek(entry.offset)
            line = file.read(entry.length).decode("utf-8", "replace")
        record = parse_record_line(line, self.settings.results, 0, last=False)
        assert record is not None
        return record


def _entry(record: Mapping[str, Any], offset: int, length: int, path: Path, number: int) -> _Entry:
    problem = record_problem(record)
    if problem is not None:
        raise ValueError(f"{path}:{number}: not a case record this version can read: {problem}")
    try:
        case = CaseRecord.from_dict(record)
    except TypeError as exc:
        raise ValueError(f"{path}:{number}: incomplete case record: {exc}") from exc
    error = case.error or {}
    return _Entry(offset, length, case.status, error.get("kind"), fingerprint(case.model_id, case.messages),
                  rejudge_problem(case), case.asked, case.scored_by)


def fingerprint(model_id: str, messages: list[dict[str, Any]]) -> str:
    """What a case asked of which model: a record is reused only for the case it was made for."""
    text = json.dumps([model_id, messages], ensure_ascii=False, sort_keys=True, default=str)
    return hashlib.blake2b(text.encode("utf-8", "backslashreplace"), digest_size=16).hexdigest()


def _record_lines(data: bytes) -> Iterator[tuple[dict[str, Any], int, int, int]]:
    """(record, offset, length, line number) of each line of a results file that is a JSON object with a node id.

    A torn last line is left out, and so is a line that is not a case record.
    """
    offset = 0
    number = 0
    while (end := data.find(b"\n", offset)) >= 0:  # no newline: a last line torn by a killed run (cut off later)
        number += 1
        line = data[offset:end].decode("utf-8", "replace")
        record = _case_record(line) if line.strip() else None
        if record is not None:
            yield record, offset, end - offset, number
        offset = end + 1


def _case_record(line: str) -> dict[str, Any] | None:
    """The line's JSON object with a node id; None for anything else (the controller set it aside, naming it)."""
    try:
        record = loads_bounded(line)
    except ValueError:  # not JSON, or not bounded
        return None
    return record if isinstance(record, dict) and isinstance(record.get("nodeid"), str) else None


def _still_answers(entry: _Entry, case: CaseSpec, retry_errors: bool) -> bool:
    """Whether a stored record still answers the case as the suite asks it now."""
    if entry.status == rec.INVALID or entry.error_kind == "budget":
        return False  # never ran: the suite had a problem (it may be fixed) or the budget was spent
    if entry.status == rec.ERROR and retry_errors:
        return False
    if entry.fingerprint != fingerprint(case.model.id if case.model else case.model_name,
                                        [m.to_dict() for m in case.messages]):
        return False  # the prompt or the model changed since: its record is not this case's
    # its turns, conversation or tools changed since (a record written before says nothing)
    return entry.asked is None or entry.asked == asked_digest(case)
