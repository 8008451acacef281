"""GateItem: one quality gate of a suite as a pytest item, collected after the suite's cases.

Gate items are items like any other for ``-k``, ``-m bench_gate``, ``--collect-only`` and junitxml. In one process a
gate runs last (``gates_last``) and reads the records its suite's cases reported; under xdist no worker runs it
(``xdist_schedule.py`` keeps gates back): the controller, which receives every record, judges the gates at the end
of the loop and reports them itself (``gate_judge.py``).
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator
from typing import Any, Protocol

import pytest

from bench_plugin.report.quality_gates import BROKEN, SKIPPED, GateVerdict
from bench_plugin.suite.quality_gates import ITEM_NAME, QualityGateSpec

GATE_MARKER = "bench_gate"


class Judge(Protocol):
    """Who judges gates: the controller's ``GateJudge``, which receives every case's record."""

    def judge(self, nodeid: str, gate: QualityGateSpec) -> GateVerdict:
        """The gate's verdict over the records its suite reported."""
        ...


JUDGE_KEY = pytest.StashKey[Judge]()  # set on the controller only (one process, or xdist's)


class GateBroken(Exception):
    """A gate that does not hold: its message is what pytest shows, without a traceback."""


def gate_items(parent: pytest.File, gates: Iterable[QualityGateSpec]) -> Iterator[GateItem]:
    """One item per gate of the suite file ``parent``, marked ``bench_gate``."""
    for gate in gates:
        name = f"{ITEM_NAME}[{gate.label}]"
        item = GateItem.from_parent(parent, name=name, nodeid=f"{parent.nodeid}::{name}", gate=gate)
        item.add_marker(GATE_MARKER)
        yield item


def gates_last(items: list[pytest.Item]) -> list[pytest.Item]:
    """The items with every gate moved to the end, each group in its order: a gate reads the cases before it."""
    return [item for item in items if not isinstance(item, GateItem)] + [
        item for item in items if isinstance(item, GateItem)]


def verdict_properties(verdict: GateVerdict) -> list[tuple[str, str]]:
    """The junitxml properties of a gate: what it reads, its outcome, and each model's figure."""
    figures = "; ".join(f"{figure.model}={'' if figure.value is None else format(figure.value, '.4f')}"
                        f" ({figure.outcome})" for figure in verdict.models)
    return [("bench_gate", verdict.gate.label), ("bench_gate_figure", verdict.gate.measured),
            ("bench_gate_outcome", verdict.outcome), ("bench_gate_models", figures)]


def settle(verdict: GateVerdict) -> None:
    """Turn a verdict into pytest's outcome: pass, fail (``GateBroken``), or skip with the reason."""
    if verdict.outcome == BROKEN:
        raise GateBroken("\n".join(verdict.lines()))
    if verdict.outcome == SKIPPED:
        raise pytest.skip.Exception(verdict.reason, _use_item_location=True)


class GateItem(pytest.Item):
    """A suite's quality gate: passes when it holds, fails with its figures when it does not."""

    def __init__(self, *, gate: QualityGateSpec, **kwargs: Any) -> None:
        super().__init__(**kwargs)
        self.gate = gate

    def runtest(self) -> None:
        """Judge the gate over the records its suite reported (the controller's judge holds them)."""
        judge = self.config.stash.get(JUDGE_KEY, None)
        if judge is None:  # an xdist worker with --dist chosen by the user: only the controller sees every record
            raise pytest.skip.Exception("quality gates are judged on the xdist controller (leave --dist to "
                                        "bench_plugin)", _use_item_location=True)
        verdict = judge.judge(self.nodeid, self.gate)
        self.user_properties.extend(verdict_properties(verdict))
        settle(verdict)

    def repr_failure(self, excinfo: pytest.ExceptionInfo[BaseException], style: Any = None) -> str | Any:
        """A broken gate's figures, without our traceback."""
        if isinstance(excinfo.value, GateBroken):
            return str(excinfo.value)
        return super().repr_failure(excinfo, style=style)

    def reportinfo(self) -> tuple[Any, int, str]:
        """The suite file and the gate's line (a gate from ``--bench-gate`` points at the file's top)."""
        return self.path, self.gate.line or 0, self.name
