"""The controller's judge of quality gates: their records, their verdicts, and the exit status they may decide.

It keeps the records of suites with gates, judges each gate, reports the gates no worker ran (xdist), and, with
``--bench-exit-on-gates``, makes their verdicts the exit status. Registered only where ``workerinput`` is absent.
In one process the gate items call ``judge`` as they run, last; under xdist the scheduler keeps them off the
workers, and once the loop is over (every record has arrived) the judge reports them through
``pytest_runtest_logreport``, before junitxml, the terminal summary and the exit status are written: both ways
give the same verdicts, from the same records in case order.
"""

from __future__ import annotations

from collections.abc import Generator, Iterable, Mapping
from typing import Any

import pytest

from bench_plugin.plugin.gate_items import GATE_MARKER, GateBroken, settle, verdict_properties
from bench_plugin.plugin.options.quality_gates import GateSettings
from bench_plugin.plugin.session import STATE_KEY
from bench_plugin.report.quality_gates import (
    BROKEN,
    HELD,
    SKIPPED,
    BaselineError,
    GateVerdict,
    judge_gate,
)
from bench_plugin.results.record import CaseRecord
from bench_plugin.suite.quality_gates import QualityGateSpec, build_quality_gates, gate_nodeid, is_gate_nodeid
from bench_plugin.suite.sections import read_suite_sections

_SHARD_REASON = ("a shard (--bench-shard) holds part of the cases: judge the gates over the merged results "
                 "(bench gates RESULTS...)")


class GateJudge:
    """Judges the session's quality gates from the records the controller receives."""

    def __init__(self, config: pytest.Config, settings: GateSettings) -> None:
        self.config = config
        self.settings = settings
        self.selected: list[str] | None = None  # the selected gates' node ids (the first worker's, under xdist)
        self.records: dict[str, dict[str, CaseRecord]] = {}  # suite path -> node id -> record (suites with gates)
        self.reported: set[str] = set()  # gates a process already reported (their items ran)
        self.verdicts: dict[str, GateVerdict] = {}
        self._baseline: Mapping[str, CaseRecord] | BaselineError | None = None
        self.exit_note: str | None = None  # what --bench-exit-on-gates did to the exit status

    @pytest.hookimpl(trylast=True)
    def pytest_collection_finish(self, session: pytest.Session) -> None:
        """The gates selected in this process (one process: the controller collects)."""
        self._select(item.nodeid for item in session.items)

    @pytest.hookimpl(optionalhook=True)
    def pytest_xdist_node_collection_finished(self, node: Any, ids: list[str]) -> None:
        """Under xdist the controller collects nothing: the workers' collection names the gates."""
        self._select(ids)

    def _select(self, nodeids: Iterable[str]) -> None:
        if self.selected is None:
            self.selected = [nodeid for nodeid in nodeids if is_gate_nodeid(nodeid)]
            self.records = {nodeid.partition("::")[0]: {} for nodeid in self.selected}

    @pytest.hookimpl(tryfirst=True)
    def pytest_runtest_logreport(self, report: pytest.TestReport) -> None:
        """Keep each record of a suite with gates; note the gates a process reported."""
        data = getattr(report, "bench_record", None)
        if data is not None:
            kept = self.records.get(str(data.get("path") or report.nodeid.partition("::")[0]))
            if kept is not None:
                kept[report.nodeid] = CaseRecord.for_reports(data)
        elif is_gate_nodeid(report.nodeid):
            self.reported.add(report.nodeid)

    def judge(self, nodeid: str, gate: QualityGateSpec) -> GateVerdict:
        """The gate's verdict over its suite's records in case order (kept for the summary and the exit status)."""
        if self.config.stash[STATE_KEY].shard is not None:
            verdict = GateVerdict(gate, SKIPPED, _SHARD_REASON)
        else:
            records = sorted(self.records.get(nodeid.partition("::")[0], {}).values(), key=lambda r: r.case_index)
            verdict = judge_gate(gate, records, self.baseline() if gate.relative else None)
        self.verdicts[nodeid] = verdict
        return verdict

    def use_baseline(self, records: Mapping[str, CaseRecord]) -> None:
        """The baseline's records by node id, as ``--bench-baseline``'s comparison read them at the start."""
        self._baseline = records

    def baseline(self) -> Mapping[str, CaseRecord] | BaselineError | None:
        """The baseline's records by node id; None when no baseline was given."""
        return self._baseline

    @pytest.hookimpl(wrapper=True)
    def pytest_runtestloop(self, session: pytest.Session) -> Generator[None, object, object]:
        """Under xdist, once every worker is done: judge and report the gates no worker ran."""
        result = yield
        if self.config.pluginmanager.has_plugin("dsession") and not self.config.option.collectonly:
            self._report_left_gates()
        return result

    def _report_left_gates(self) -> None:
        left = [nodeid for nodeid in self.selected or () if nodeid not in self.reported]
        if not left:
            return
        gates = self._gates_again({nodeid.partition("::")[0] for nodeid in left})
        for nodeid in left:
            gate = gates.get(nodeid)
            if gate is not None:
                send_gate_reports(self.config, nodeid, self.judge(nodeid, gate))

    def _gates_again(self, paths: set[str]) -> dict[str, QualityGateSpec]:
        """The gates of the suites named, read again from their files (the controller collected none)."""
        found = read_suite_sections(sorted(paths), self.config.rootpath,
                                    lambda loaded: build_quality_gates(loaded, self.settings.gates))
        return {gate_nodeid(path, gate): gate for path, gates in found.items() for gate in gates}

    def pytest_sessionfinish(self, session: pytest.Session) -> None:
        """With ``--bench-exit-on-gates``: exit 0 when every gate judged holds, 1 when one is broken.

        A collection error, an interrupted run or a usage error keeps its own status.
        """
        if self.settings.exit_on_gates and session.exitstatus in (pytest.ExitCode.OK, pytest.ExitCode.TESTS_FAILED):
            status, self.exit_note = gates_exit_status(list(self.verdicts.values()), bool(self.selected))
            if status is not None:
                session.exitstatus = status

    def pytest_terminal_summary(self, terminalreporter: Any) -> None:
        """Each gate's verdict and why, and what decided the exit status."""
        if not self.verdicts and self.exit_note is None:
            return
        terminalreporter.write_sep("-", "quality gates")
        for nodeid, verdict in self.verdicts.items():
            mark = {HELD: "HELD", BROKEN: "BROKEN", SKIPPED: "SKIPPED"}[verdict.outcome]
            terminalreporter.write_line(f"{mark} {nodeid}: {verdict.reason}", red=verdict.outcome == BROKEN,
                                        green=verdict.outcome == HELD)
            for line in verdict.lines()[1:]:
                terminalreporter.write_line(f"    {line.strip()}")
        if self.exit_note is not None:
            terminalreporter.write_line(self.exit_note, bold=True)


def gates_exit_status(verdicts: list[GateVerdict], selected: bool) -> tuple[pytest.ExitCode | None, str | None]:
    """The exit status the gates give (None: pytest's stays, no gate was judged), and the line that says so."""
    judged = [verdict for verdict in verdicts if verdict.outcome in (HELD, BROKEN)]
    if not judged:  # when gates were selected and none could read a case, say why the status is pytest's
        note = "no quality gate was judged: the exit status is pytest's (--bench-exit-on-gates)"
        return None, note if selected else None
    broken = sum(verdict.outcome == BROKEN for verdict in judged)
    status = pytest.ExitCode.TESTS_FAILED if broken else pytest.ExitCode.OK
    verdict = f"{broken} of {len(judged)} broken" if broken else f"all {len(judged)} hold"
    return status, (f"exit status {int(status)} from the quality gates (--bench-exit-on-gates): {verdict}; "
                    "failed cases do not decide it")


def send_gate_reports(config: pytest.Config, nodeid: str, verdict: GateVerdict) -> None:
    """Report a gate judged on the controller as its item would have: setup, call and teardown reports."""
    path = nodeid.partition("::")[0]
    line = verdict.gate.line or 0
    location = (path, line, nodeid.partition("::")[2])
    hook = config.hook
    hook.pytest_runtest_logstart(nodeid=nodeid, location=location)
    outcome, longrepr = _outcome(verdict, path, line)
    properties = verdict_properties(verdict)
    keywords = {location[2]: 1, GATE_MARKER: 1}
    for when, result, shown, props in (("setup", "passed", None, []), ("call", outcome, longrepr, properties),
                                       ("teardown", "passed", None, properties)):
        hook.pytest_runtest_logreport(report=pytest.TestReport(
            nodeid, location, keywords, result, shown, when, user_properties=props))  # type: ignore[arg-type]
    hook.pytest_runtest_logfinish(nodeid=nodeid, location=location)


def _outcome(verdict: GateVerdict, path: str, line: int) -> tuple[str, Any]:
    """The pytest outcome and ``longrepr`` for a verdict, as ``settle`` gives them in one process."""
    try:
        settle(verdict)
    except pytest.skip.Exception as skipped:
        return "skipped", (path, line + 1, f"Skipped: {skipped.msg}")
    except GateBroken as broken:  # the same message as the item's repr_failure
        return "failed", str(broken)
    return "passed", None
