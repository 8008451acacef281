"""Keep pytest's failure summary linear: its scan for teardown sections, once per failure, skips silent reports.

pytest (9.2) prints every failure's teardown sections by scanning the passed setup and teardown reports
(``terminalreporter.stats[""]``, two per case) once per failure (``_handle_teardown_sections``): 10,000 cases of
which a third fail made 3,333 scans of 20,000 reports, most of the end of the run. Only a teardown report with
sections (captured output or logs) can print anything there, so while pytest's own summary runs that list holds
only the reports with sections, and the whole list is put back before any other plugin's summary reads it. The
output is the same. The fix upstream, grouping the teardown reports once: ``docs/upstream/``.
"""

from __future__ import annotations

from collections.abc import Generator
from typing import Any

import pytest

_PASSED_PHASES = ""  # pytest's category of a passed setup or teardown report (``pytest_report_teststatus``)


def register_failure_summary(config: pytest.Config) -> None:
    """Register the scan's two halves (pluggy takes one implementation of a hook per plugin object)."""
    scan = FailureSummaryScan()
    config.pluginmanager.register(scan, "bench_failure_summary")
    config.pluginmanager.register(_PutBack(scan), "bench_failure_summary_put_back")


class FailureSummaryScan:
    """Hides the silent passed setup and teardown reports from pytest's per-report scan, during its summary only."""

    def __init__(self) -> None:
        self._stats: dict[str, list[Any]] | None = None
        self._quiet: list[Any] | None = None

    @pytest.hookimpl(wrapper=True, tryfirst=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> Generator[None, object, object]:
        """Outside the terminal reporter's own wrapper, whose FAILURES (and -rP PASSES) run before its ``yield``."""
        stats: dict[str, list[Any]] = terminalreporter.stats
        quiet = stats.get(_PASSED_PHASES)
        if quiet:
            self._stats, self._quiet = stats, quiet
            stats[_PASSED_PHASES] = [report for report in quiet if getattr(report, "sections", None)]
        try:
            return (yield)
        finally:
            self.put_back()

    def put_back(self) -> None:
        """The whole list again, as every other reader expects it."""
        if self._stats is not None and self._quiet is not None:
            self._stats[_PASSED_PHASES] = self._quiet
        self._stats = self._quiet = None


class _PutBack:
    """The terminal reporter's sections are printed: the other plugins' summaries read the whole list."""

    def __init__(self, scan: FailureSummaryScan) -> None:
        self.scan = scan

    @pytest.hookimpl(tryfirst=True)
    def pytest_terminal_summary(self) -> None:
        self.scan.put_back()
