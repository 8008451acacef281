"""The scheduler starts a bounded window ahead and never runs a case twice."""

from __future__ import annotations

import concurrent.futures

from bench_plugin.record import CaseRecord
from bench_plugin.schedule import Scheduler
from bench_plugin.suite.spec import CaseSpec, CompositeSpec


def case(name: str) -> CaseSpec:
    return CaseSpec("s", "p", name, "m", None, 1, (), (), CompositeSpec(), 1.0, {})


class FakeRunner:
    def __init__(self) -> None:
        self.started: list[str] = []

    def submit(self, spec: CaseSpec, nodeid: str) -> concurrent.futures.Future[CaseRecord]:
        self.started.append(nodeid)
        future: concurrent.futures.Future[CaseRecord] = concurrent.futures.Future()
        future.set_result(CaseRecord(nodeid, "s", "p", spec.task, "m", "m", "m", "x", 1, "passed"))
        return future


def test_plan_starts_only_the_window_and_advances_as_items_run() -> None:
    runner = FakeRunner()
    scheduler = Scheduler(runner.submit, window=3)
    cases = [(f"id{i}", case(f"t{i}")) for i in range(10)]
    scheduler.plan(cases)
    assert runner.started == ["id0", "id1", "id2"]
    assert scheduler.result("id0", cases[0][1]).nodeid == "id0"
    assert runner.started == ["id0", "id1", "id2"]
    scheduler.result("id4", cases[4][1])
    assert runner.started == ["id0", "id1", "id2", "id3", "id4", "id5", "id6"]


def test_unplanned_item_starts_itself_once() -> None:
    runner = FakeRunner()
    scheduler = Scheduler(runner.submit, window=2)
    assert scheduler.result("lonely", case("t")).nodeid == "lonely"
    assert runner.started == ["lonely"]
