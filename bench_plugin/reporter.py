"""The controller's writer: streams records to results.jsonl, then writes report.md and summary.json.

Registered only where ``workerinput`` is absent, and fed by ``pytest_runtest_logreport``, which fires
for local and xdist reports alike.
"""

from __future__ import annotations

import os
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.record import FAILED, PASSED, CaseRecord
from bench_plugin.report.conversation_log import FOLDER, ConversationLogWriter
from bench_plugin.report.write import in_case_order, write_reports
from bench_plugin.store import ResultsStore
from bench_plugin.suite.aggregates.build import read_suite_aggregates
from bench_plugin.suite.leaderboard import read_suite_leaderboards


class BenchReporter:
    """Collects case records as reports arrive and writes the run's files."""

    def __init__(self, config: pytest.Config, output_dir: Path) -> None:
        self.config = config
        self.output_dir = output_dir
        self.store = ResultsStore(output_dir / "results.jsonl")
        self._opened = False
        self._html = bool(getattr(config.option, "htmlpath", None))
        self._csv_files: list[str] = []
        self.conversations = ConversationLogWriter(output_dir)

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Stream each case's record to results.jsonl as it arrives (local and xdist reports alike)."""
        data = getattr(report, "bench_record", None)
        if data is None:
            return
        if self._html:  # built here, before pytest-html reads them, so records cross xdist only once
            from bench_plugin.report.html import extras_for  # start-up: only when an HTML report is written

            report.extras = [*getattr(report, "extras", []), *extras_for(data)]  # type: ignore[attr-defined]
        if not self._opened:  # first record: only runs that have cases touch the output folder
            self.store.open()
            self._opened = True
        self.store.append(data)
        self.conversations.write(data)
        self.config.hook.pytest_bench_case_recorded(config=self.config, record=data)

    @pytest.hookimpl
    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """Put the records in case order and write every report from them."""
        if not self._opened:
            return
        records = in_case_order(self.store.records)
        self.store.finalize([r.nodeid for r in records])
        # under xdist the controller collected no suite: aggregates come from the files records name
        aggregates = read_suite_aggregates((r.path for r in records), self.config.rootpath)
        leaderboards = read_suite_leaderboards((r.path for r in records), self.config.rootpath)
        written = write_reports(records, self.output_dir, aggregates, leaderboards)
        self._csv_files = [path.name for key, path in written.items() if key.startswith("csv:")]
        self._csv_files += [str(path.relative_to(self.output_dir)) for key, path in written.items()
                            if key.startswith("leaderboard:")]

    @pytest.hookimpl
    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """Print the per-model summary and where the files went."""
        if not self._opened:
            return
        records = self.store.records
        terminalreporter.section("bench summary")
        for line in summary_lines(records):
            terminalreporter.write_line(line)
        logs = [f"{FOLDER}/"] if self.conversations.written else []
        files = ", ".join(["results.jsonl", "report.md", "summary.json", *self._csv_files, *logs])
        terminalreporter.write_line(f"results: {self.output_dir}{os.sep} ({files})")


def summary_lines(records: list[CaseRecord]) -> list[str]:
    """One line per suite and model: counts by outcome and the mean score of scored cases."""
    groups: dict[tuple[str, str], list[CaseRecord]] = {}
    for record in records:
        groups.setdefault((record.suite, record.model), []).append(record)
    width = max((len(f"{s} {m}") for s, m in groups), default=0)
    lines = []
    for (suite, model), group in groups.items():
        counts = Counter(r.status for r in group)
        scored = [r.composite for r in group if r.composite is not None and r.status in (PASSED, FAILED)]
        mean = f"mean {sum(scored) / len(scored):.4f}" if scored else "mean -"
        parts = ", ".join(f"{n} {status}" for status, n in counts.items())
        lines.append(f"{suite + ' ' + model:<{width}}  {len(group)} cases: {parts}; {mean}")
    return lines

