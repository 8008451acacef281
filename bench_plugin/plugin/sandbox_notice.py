"""The end of a run names the agent cases that ran without a sandbox, and those skipped for want of one.

Without one: ``sandbox: none``. Skipped: no sandbox works on this machine; the reason and the fix follow.

Registered on the controller only; it reads the records as they arrive, locally and from xdist workers,
and flags them in the terminal summary and in report.html (the files written from records flag them
through ``report/sandbox_flag.py``).
"""

from __future__ import annotations

from typing import Any

import pytest

from bench_plugin.core.text_safety import log_line
from bench_plugin.report.sandbox_flag import (
    SKIPPED_HEADLINE,
    html_skipped_note,
    html_warning,
    ran_without_sandbox,
    skipped_for_want_of_sandbox,
)

WARNING = "WARNING: agent commands ran WITHOUT a sandbox (sandbox: none) in {count} case(s): {cases}"
SKIPPED = SKIPPED_HEADLINE + " ({count}): {cases}"


class SandboxNotice:
    """Counts the cases whose record says ``agent.sandbox: none`` and says so in the terminal and report.html."""

    def __init__(self) -> None:
        self.cases: list[str] = []
        self.skipped: list[str] = []
        self.skip_reason = ""

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Note a case whose programs ran without isolation, or did not run for want of it (the record's)."""
        record = getattr(report, "bench_record", None)
        if not isinstance(record, dict):
            return
        if ran_without_sandbox(record.get("agent"), record.get("scores")):
            _add_once(self.cases, report.nodeid)
        if skipped_for_want_of_sandbox(record.get("status"), record.get("error")):
            _add_once(self.skipped, report.nodeid)
            self.skip_reason = self.skip_reason or str(record.get("reason"))

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """A line after the bench summary naming the first few cases: red for none, yellow with the fix for skips."""
        if self.skipped:
            terminalreporter.write_line(log_line(SKIPPED.format(count=len(self.skipped), cases=_first(self.skipped))),
                                        yellow=True, bold=True)
            for line in self.skip_reason.removeprefix("sandbox: ").splitlines():
                terminalreporter.write_line("  " + log_line(line.strip()), yellow=True)
        if self.cases:
            terminalreporter.write_line(log_line(WARNING.format(count=len(self.cases), cases=_first(self.cases))),
                                        red=True, bold=True)

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_summary(self, prefix: list[str], summary: list[str], postfix: list[str]) -> None:
        """A banner at the top of report.html (pytest-html calls this once, after the last case)."""
        for banner in (html_skipped_note(self.skipped, self.skip_reason), html_warning(self.cases)):
            if banner:
                prefix.append(banner)


def _first(nodeids: list[str]) -> str:
    """The first three node ids, and how many more."""
    return ", ".join(nodeids[:3]) + (f" and {len(nodeids) - 3} more" if len(nodeids) > 3 else "")


def _add_once(nodeids: list[str], nodeid: str) -> None:
    if nodeid not in nodeids:
        nodeids.append(nodeid)
