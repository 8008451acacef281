"""The comparison with ``--bench-baseline`` at the end of a session: compare.md and compare.json in the output folder.

Controller only. The baseline is read when the session starts, before the run writes anything (it may be the
very results.jsonl the run replaces); the run's own side is its results.jsonl once the reports are written, so
one process and ``-n 2`` compare the same records. A regression fails the session (exit status 1, as a failed
case does); a baseline that cannot be compared, with no case of the run or from another version of the suite,
ends it with pytest's usage-error status.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from pathlib import Path

import pytest

from bench_plugin.core.text_safety import log_line
from bench_plugin.report.compare.build import NothingToCompare, Side, compare_sides, regressions
from bench_plugin.report.compare.facts import facts_of
from bench_plugin.report.compare.text import headline_lines
from bench_plugin.report.compare.verdicts import CompareSettings
from bench_plugin.report.compare.write import write_comparison
from bench_plugin.results.journal import journals
from bench_plugin.results.record import CaseRecord
from bench_plugin.results.store import read_result_sets


class BaselineComparison:
    """The baseline's cases, read at the start, and the comparison made at the end."""

    def __init__(self, results: Path, settings: CompareSettings | None = None) -> None:
        """Read the baseline now.

        Raises:
            pytest.UsageError: the baseline cannot be read (the message names the file and the line).
        """
        self.settings = settings or CompareSettings()
        files = [results] if results.is_file() else []
        try:  # a named run's journals hold the cases a killed session finished (``journal.py``)
            records, _, _ = read_result_sets([*files, *journals(results)])
        except (OSError, ValueError) as exc:
            raise pytest.UsageError(f"--bench-baseline: cannot read the baseline: {exc}") from None
        self.baseline = Side(str(results), [facts_of(record) for record in records])
        self.by_nodeid = {record.nodeid: record for record in records}  # what relative quality gates compare with
        self.lines: list[str] = []  # the headline, for the terminal's summary
        self.problem: str | None = None  # why no comparison was written
        self.regressed = False

    def compare(self, read: Callable[[], Sequence[CaseRecord]], results: Path, folder: Path) -> None:
        """Compare the run's records (``read`` from ``results``) with the baseline; write both files into ``folder``."""
        try:
            current = Side(str(results), [facts_of(record) for record in read()])
            comparison = compare_sides(self.baseline, current, self.settings)
            written = write_comparison(comparison, folder)
        except NothingToCompare as exc:
            self.problem = f"bench compare: {exc}"
            return
        except (OSError, ValueError) as exc:  # ValueError: results.jsonl was changed meanwhile
            where = f"{exc.filename}: {exc.strerror or exc}" if isinstance(exc, OSError) else str(exc)
            self.problem = f"bench compare: cannot compare with the baseline: {where}"
            return
        self.regressed = bool(regressions(comparison))
        self.lines = [*headline_lines(comparison), f"comparison: {written['markdown']}, {written['json'].name}"]

    def exit_status(self, status: int | pytest.ExitCode) -> int | pytest.ExitCode:
        """The session's exit status after the comparison: a regression fails an otherwise green session."""
        if status not in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            return status  # interrupted, an internal error: that says more
        if self.problem is not None:
            return pytest.ExitCode.USAGE_ERROR
        return pytest.ExitCode.TESTS_FAILED if self.regressed else status

    def summary(self, terminalreporter: pytest.TerminalReporter) -> None:
        """The headline (or why there is none) under the bench summary."""
        if self.problem is not None:
            terminalreporter.write_line(log_line(self.problem), red=True, bold=True)
        for index, line in enumerate(self.lines):
            terminalreporter.write_line(log_line(line), red=self.regressed and index == 0)
