"""Load steps: parsed once, expanded into their own items in order, run step after step with their own caps."""

from __future__ import annotations

import asyncio
import concurrent.futures
import time
from dataclasses import replace

import pytest

from bench_plugin.results.record import CaseRecord
from bench_plugin.run.load_steps import LoadGates, stamp
from bench_plugin.run.schedule import Scheduler
from bench_plugin.suite.expand import in_load_steps
from bench_plugin.suite.load import LoadShape, LoadStep, load_from_option, load_from_yaml
from bench_plugin.suite.spec import CaseSpec, CompositeSpec


def case(name: str, index: int = 0) -> CaseSpec:
    return CaseSpec("s", "p.yaml", name, "m", None, 1, (), (), CompositeSpec(), 1.0, {}, index=index)


def test_the_option_and_the_yaml_give_the_same_steps() -> None:
    assert load_from_option("in_flight=8,32,128") == load_from_yaml({"in_flight": [8, 32, 128]})
    assert load_from_option("rate=0.5,2").steps == (LoadStep("rate", 0.5), LoadStep("rate", 2.0))
    assert [s.label for s in load_from_option("rate=0.5,2").steps] == ["rate=0.5/s", "rate=2/s"]
    assert load_from_option("in_flight=8,128").most_in_flight() == 128
    assert load_from_yaml(None) is None


@pytest.mark.parametrize(("text", "says"), [
    ("in_flight=0", "whole numbers from 1"), ("in_flight=2.5", "whole numbers"), ("rate=-1", "numbers > 0"),
    ("rate=inf", "numbers > 0"), ("rate=a,b", "numbers separated by commas"), ("pace=3", "in_flight=N"),
    ("in_flight", "in_flight=N"),
])
def test_a_bad_option_says_what_was_expected(text: str, says: str) -> None:
    with pytest.raises(ValueError, match=says):
        load_from_option(text)


def test_every_case_runs_once_per_step_step_after_step_with_its_own_id() -> None:
    cases = [case("a", 0), case("b", 1)]
    stepped = in_load_steps(cases, load_from_option("in_flight=1,4"))
    assert [c.case_id for c in stepped] == ["a[m-run1-in_flight1]", "b[m-run1-in_flight1]",
                                            "a[m-run1-in_flight4]", "b[m-run1-in_flight4]"]
    assert [c.index for c in stepped] == [0, 1, 2, 3]
    assert case("a").case_id == "a[m-run1]"  # outside any step, ids are as they were


class FakeRunner:
    def __init__(self) -> None:
        self.started: list[str] = []

    def submit(self, spec: CaseSpec, nodeid: str) -> concurrent.futures.Future[CaseRecord]:
        self.started.append(nodeid)
        future: concurrent.futures.Future[CaseRecord] = concurrent.futures.Future()
        future.set_result(CaseRecord(nodeid, "s", "p", spec.task, "m", "m", "m", "x", 1, "passed"))
        return future


def test_the_look_ahead_stops_where_the_next_step_begins() -> None:
    runner = FakeRunner()
    scheduler = Scheduler(runner.submit, window=10, phase=lambda spec: spec.load)
    stepped = in_load_steps([case(f"t{i}", i) for i in range(3)], load_from_option("in_flight=1,2"))
    cases = [(spec.case_id, spec) for spec in stepped]
    scheduler.plan(cases)
    assert runner.started == [nodeid for nodeid, _ in cases[:3]]  # the first step only, though the window is 10
    scheduler.result(cases[2][0], cases[2][1])
    assert len(runner.started) == 3
    scheduler.result(cases[3][0], cases[3][1])  # pytest reached the next step: every case before it reported
    assert runner.started == [nodeid for nodeid, _ in cases]


def test_without_phases_the_look_ahead_is_as_before() -> None:
    runner = FakeRunner()
    scheduler = Scheduler(runner.submit, window=4)
    scheduler.plan([(f"id{i}", case(f"t{i}")) for i in range(6)])
    assert runner.started == ["id0", "id1", "id2", "id3"]


def test_an_in_flight_step_holds_that_many_cases_at_once() -> None:
    async def run() -> int:
        gates, now, most = LoadGates(), [0], [0]

        async def one() -> None:
            async with gates.turn("p.yaml", LoadStep("in_flight", 3)):
                now[0] += 1
                most[0] = max(most[0], now[0])
                await asyncio.sleep(0.01)
                now[0] -= 1

        await asyncio.gather(*(one() for _ in range(12)))
        return most[0]

    assert asyncio.run(run()) == 3


def test_a_rate_step_starts_cases_at_its_rate_whatever_they_take() -> None:
    async def run() -> list[float]:
        gates, starts = LoadGates(), [time.monotonic()]

        async def one() -> None:
            async with gates.turn("p.yaml", LoadStep("rate", 20)):
                starts.append(time.monotonic())
                await asyncio.sleep(0.5)  # an open loop: a slow case does not hold the next one back

        await asyncio.gather(*(one() for _ in range(5)))
        return starts

    before, *starts = asyncio.run(run())
    # case i starts no sooner than i/20 s after the first could (a loaded machine only makes it later) ...
    assert all(start >= before + i / 20 - 0.002 for i, start in enumerate(sorted(starts)))
    # ... and not after the one before it ended: in a closed loop the fifth would start after 2 s
    assert max(starts) - before < 1.5


def test_stamp_names_the_step_and_its_times() -> None:
    record = CaseRecord("n", "s", "p", "t", "m", "m", "m", "x", 1, "passed")
    assert stamp(record, None, 1.0, 2.0) is record
    stamped = stamp(record, LoadStep("in_flight", 8), 1.0, 2.5)
    assert stamped.load == {"step": "in_flight=8", "kind": "in_flight", "value": 8.0, "started": 1.0, "ended": 2.5}
    assert "load" not in record.to_dict() and stamped.to_dict()["load"]["step"] == "in_flight=8"


def test_a_load_shape_of_rate_steps_asks_for_no_places() -> None:
    assert LoadShape((LoadStep("rate", 2),)).most_in_flight() == 0
    assert replace(case("a"), load=LoadStep("rate", 0.5)).case_id == "a[m-run1-rate0.5]"
