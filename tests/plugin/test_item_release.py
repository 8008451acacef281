"""A case's item lets its case go once it ran: pytest keeps every item to the end of the session.

At 10,000 cases the specs, messages and bound scorers of the finished cases were about 10 MB of the run's peak.
"""

from __future__ import annotations

import concurrent.futures
import gc
import json
import weakref
from pathlib import Path

import pytest

from bench_plugin.results.record import CaseRecord
from bench_plugin.run.schedule import Scheduler
from suites import CAPITALS  # type: ignore[import-not-found]

WATCH_RELEASE = """\
import gc
import json
from pathlib import Path

from bench_plugin.plugin.nodes import CaseItem
from bench_plugin.suite.spec import CaseSpec

SEEN = {}


def pytest_runtest_setup(item):
    if isinstance(item, CaseItem):
        SEEN[item.nodeid] = (item, item.case.case_id)  # a CaseSpec has slots, no weak references


def pytest_sessionfinish(session):
    gc.unfreeze()  # the plugin freezes what collection made (gc_freeze.py): get_objects lists only the rest
    gc.collect()
    alive = {each.case_id for each in gc.get_objects() if isinstance(each, CaseSpec)}
    out = {}
    for nodeid, (item, case_id) in SEEN.items():
        try:
            item.case
            problem = None
        except RuntimeError as exc:
            problem = str(exc)
        out[nodeid] = {"spec_alive": case_id in alive, "problem": problem}
    Path(__file__).parent.joinpath("released.json").write_text(json.dumps(out))
"""

REPEAT_FIRST = """\
def pytest_collection_modifyitems(items):
    items.append(items[0])  # the first case runs twice, as a plugin repeating flaky tests would have it
"""


def released(pytester: pytest.Pytester) -> dict[str, dict[str, object]]:
    return json.loads(Path(pytester.path, "released.json").read_text())  # type: ignore[no-any-return]


def test_a_finished_case_is_freed_and_its_item_says_so(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/capitals": CAPITALS})
    pytester.makeconftest(WATCH_RELEASE)
    result = pytester.runpytest("suites", "-p", "no:randomly", "-rA")
    result.assert_outcomes(passed=2, failed=2)
    seen = released(pytester)
    assert len(seen) == 4
    assert all(not case["spec_alive"] for case in seen.values())  # nothing else holds it: the scheduler let it go
    assert all("let go once its item ran" in str(case["problem"]) for case in seen.values())
    # what pytest shows after the run still names the task where it is written
    result.stdout.fnmatch_lines(["FAILED suites/capitals.yaml::capital-france[[]parrot-run1[]]*"])


def test_an_item_run_twice_keeps_its_case_for_the_second_run(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/capitals": CAPITALS})
    pytester.makeconftest(WATCH_RELEASE + REPEAT_FIRST)
    result = pytester.runpytest("suites", "-p", "no:randomly")
    result.assert_outcomes(passed=3, failed=2)
    seen = released(pytester)
    first = "suites/capitals.yaml::capital-france[atlas-run1]"
    assert seen[first] == {"spec_alive": True, "problem": None}
    assert all(not case["spec_alive"] for nodeid, case in seen.items() if nodeid != first)


class Case:
    """A case the scheduler hands on (weakly referable, unlike a slotted spec)."""


def test_the_scheduler_keeps_no_case_it_started() -> None:
    def submit(case: Case, nodeid: str) -> concurrent.futures.Future[CaseRecord]:
        future: concurrent.futures.Future[CaseRecord] = concurrent.futures.Future()
        future.set_result(CaseRecord(nodeid, "s", "p", "t", "m", "m", "m", "x", 1, "passed"))
        return future

    scheduler: Scheduler[Case] = Scheduler(submit, window=2)
    cases = [(f"id{i}", Case()) for i in range(4)]
    refs = [weakref.ref(case) for _, case in cases]
    scheduler.plan(cases)
    del cases
    gc.collect()
    assert [ref() is None for ref in refs] == [True, True, False, False]  # the window's two started, let go
    scheduler.result("id3", Case())
    gc.collect()
    assert all(ref() is None for ref in refs)
