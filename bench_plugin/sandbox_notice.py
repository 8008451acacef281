"""The end of a run says which agent cases ran their programs without a sandbox (``sandbox: none``).

Registered on the controller only; it reads the records as they arrive, locally and from xdist workers.
"""

from __future__ import annotations

from typing import Any

import pytest

WARNING = "WARNING: agent commands ran WITHOUT a sandbox (sandbox: none) in {count} case(s): {cases}"


class SandboxNotice:
    """Counts the cases whose record says ``agent.sandbox: none`` and says so in the terminal summary."""

    def __init__(self) -> None:
        self.cases: list[str] = []

    @pytest.hookimpl
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Note a case whose programs ran without isolation (its record travels on the report)."""
        record = getattr(report, "bench_record", None)
        agent = record.get("agent") if isinstance(record, dict) else None
        if isinstance(agent, dict) and agent.get("sandbox") == "none" and report.nodeid not in self.cases:
            self.cases.append(report.nodeid)

    @pytest.hookimpl(trylast=True)
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """One red line after the bench summary, naming the first few cases."""
        if self.cases:
            shown = ", ".join(self.cases[:3]) + (f" and {len(self.cases) - 3} more" if len(self.cases) > 3 else "")
            terminalreporter.write_line(WARNING.format(count=len(self.cases), cases=shown), red=True, bold=True)
