"""The end of a run says which agent cases ran their programs without a sandbox (``sandbox: none``).

Registered on the controller only; it reads the records as they arrive, locally and from xdist workers,
and flags them in the terminal summary and in report.html (the files written from records flag them
through ``report/sandbox_flag.py``).
"""

from __future__ import annotations

from typing import Any

import pytest

from bench_plugin.core.text_safety import log_line
from bench_plugin.report.sandbox_flag import html_warning, ran_without_sandbox

WARNING = "WARNING: agent commands ran WITHOUT a sandbox (sandbox: none) in {count} case(s): {cases}"


class SandboxNotice:
    """Counts the cases whose record says ``agent.sandbox: none`` and says so in the terminal and report.html."""

    def __init__(self) -> None:
        self.cases: list[str] = []

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Note a case whose programs ran without isolation (its record travels on the report)."""
        record = getattr(report, "bench_record", None)
        agent = record.get("agent") if isinstance(record, dict) else None
        if ran_without_sandbox(agent) and report.nodeid not in self.cases:
            self.cases.append(report.nodeid)

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """One red line after the bench summary, naming the first few cases."""
        if self.cases:
            shown = ", ".join(self.cases[:3]) + (f" and {len(self.cases) - 3} more" if len(self.cases) > 3 else "")
            terminalreporter.write_line(log_line(WARNING.format(count=len(self.cases), cases=shown)), red=True,
                                        bold=True)

    @pytest.hookimpl(optionalhook=True)
    def pytest_html_results_summary(self, prefix: list[str], summary: list[str], postfix: list[str]) -> None:
        """A banner at the top of report.html (pytest-html calls this once, after the last case)."""
        banner = html_warning(self.cases)
        if banner:
            prefix.append(banner)
