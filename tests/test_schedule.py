"""The scheduler starts a bounded window ahead and never runs a case twice."""

from __future__ import annotations

import concurrent.futures
from types import SimpleNamespace

from bench_plugin.results.record import CaseRecord
from bench_plugin.run.schedule import WAITING_WINDOWS, Scheduler
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


def test_the_window_reaches_further_while_cases_wait_for_their_limits() -> None:
    """A case pytest waits on may wait for its model's 429 pause: the cases of other models ahead of it go on."""
    runner = FakeRunner()
    waiting = [0]
    scheduler = Scheduler(runner.submit, window=2, waiting=lambda: waiting[0])
    cases = [(f"id{i}", case(f"t{i}")) for i in range(40)]
    scheduler.plan(cases)
    assert len(runner.started) == 2
    waiting[0] = 1
    scheduler.widen()  # from the runner's loop: a case let its place go
    assert runner.started == [f"id{i}" for i in range(2 * WAITING_WINDOWS)]
    waiting[0] = 0
    scheduler.result("id0", cases[0][1])  # nothing waits any more: the window is its own size again
    assert len(runner.started) == 2 * WAITING_WINDOWS


def test_unplanned_item_starts_itself_once() -> None:
    runner = FakeRunner()
    scheduler = Scheduler(runner.submit, window=2)
    assert scheduler.result("lonely", case("t")).nodeid == "lonely"
    assert runner.started == ["lonely"]


# --- under xdist: each worker gets its share of the bench cases (bench_plugin/plugin/xdist_schedule.py) ---

SUITE_IDS = [f"suites/s.yaml::t{i}[m-run1]" for i in range(20)]


class FakeConfig:
    """What xdist's LoadScheduling reads from the controller's config."""

    def __init__(self, workers: int) -> None:
        self.workers = workers

    def getvalue(self, name: str) -> object:
        return ["popen"] * self.workers if name == "tx" else None

    def getoption(self, name: str) -> object:
        return self.getvalue(name)


class FakeNode:
    """A worker as the controller sees it: its workerinput, the items sent to it, and whether it was shut down."""

    def __init__(self, number: int, workers: int) -> None:
        self.workerinput: dict[str, object] = {"workerid": f"gw{number}", "workercount": workers}
        self.gateway = SimpleNamespace(id=f"gw{number}")
        self.sent: list[int] = []
        self.queue: list[int] = []
        self.shutting_down = False

    def send_runtest_some(self, indices: list[int]) -> None:
        self.sent += indices
        self.queue += indices

    def shutdown(self) -> None:
        self.shutting_down = True


def start(ids: list[str], workers: int = 2, window: int = 4, shares: bool = True) -> tuple[object, list[FakeNode]]:
    from bench_plugin.plugin.xdist_schedule import BenchDistribution, BenchScheduling

    distribution = BenchDistribution(window=window)
    nodes = [FakeNode(n, workers) for n in range(workers)]
    scheduler = BenchScheduling(FakeConfig(workers), window=window)  # type: ignore[arg-type]
    for node in nodes:
        if shares:
            distribution.pytest_configure_node(node)
        scheduler.add_node(node)
    for node in nodes:
        scheduler.add_node_collection(node, ids)
    scheduler.schedule()
    return scheduler, nodes


def run_all(scheduler: object, nodes: list[FakeNode]) -> None:
    """Let the workers run what they are sent, one item each in turn, until the scheduler is done."""
    for _ in range(1000):
        busy = [node for node in nodes if node.queue]
        if not busy:
            break
        for node in busy:
            scheduler.mark_test_complete(node, node.queue.pop(0))  # type: ignore[attr-defined]
    assert not any(node.queue for node in nodes)


def test_each_worker_is_sent_exactly_its_share_a_window_at_a_time() -> None:
    from bench_plugin.run.shards import worker_share

    scheduler, nodes = start(SUITE_IDS, workers=2, window=4)
    assert [node.sent for node in nodes] == [[0, 2, 4, 6], [1, 3, 5, 7]]
    assert not any(node.shutting_down for node in nodes)
    run_all(scheduler, nodes)
    assert [node.sent for node in nodes] == [worker_share(SUITE_IDS, k, 2) for k in range(2)]
    assert all(node.shutting_down for node in nodes)
    assert scheduler.tests_finished and not scheduler.has_pending  # type: ignore[attr-defined]


def test_ordinary_tests_are_load_balanced_after_the_shares_and_every_item_runs_once() -> None:
    ids = ["tests/test_a.py::test_1", *SUITE_IDS[:7], "tests/test_a.py::test_2", "tests/test_a.py::test_3"]
    scheduler, nodes = start(ids, workers=2, window=2)
    run_all(scheduler, nodes)
    sent = [index for node in nodes for index in node.sent]
    assert sorted(sent) == list(range(len(ids)))
    shares = [[i for i in node.sent if "suites/" in ids[i]] for node in nodes]
    assert shares == [[1, 3, 5, 7], [2, 4, 6]]


def test_without_bench_cases_it_is_plain_load_scheduling() -> None:
    from xdist.scheduler import LoadScheduling

    ids = [f"tests/test_a.py::test_{i}" for i in range(40)]
    scheduler, nodes = start(ids)
    reference = LoadScheduling(FakeConfig(2))
    plain = [FakeNode(n, 2) for n in range(2)]
    for node in plain:
        reference.add_node(node)
    for node in plain:
        reference.add_node_collection(node, ids)
    reference.schedule()
    assert [node.sent for node in nodes] == [node.sent for node in plain]
    run_all(scheduler, nodes)
    assert sorted(index for node in nodes for index in node.sent) == list(range(40))


def test_the_unsent_share_of_a_crashed_worker_goes_to_the_others_once() -> None:
    scheduler, nodes = start(SUITE_IDS, workers=2, window=4)
    crashed, survivor = nodes
    scheduler.mark_test_complete(crashed, crashed.queue.pop(0))  # type: ignore[attr-defined]
    running = crashed.queue[0]
    assert scheduler.remove_node(crashed) == SUITE_IDS[running]  # type: ignore[attr-defined]
    crashed.queue.clear()
    run_all(scheduler, [survivor])
    ran = [*crashed.sent[:1], *survivor.sent]
    assert sorted(ran) == sorted(set(range(20)) - {running})


def test_only_the_first_workers_get_a_share() -> None:
    from bench_plugin.plugin.xdist_schedule import BenchDistribution

    distribution = BenchDistribution(window=8)
    nodes = [FakeNode(n, 2) for n in range(3)]  # the third replaces a crashed worker
    for node in nodes:
        distribution.pytest_configure_node(node)
    assert [node.workerinput.get("bench_share") for node in nodes] == [[0, 2], [1, 2], None]


def test_a_worker_without_a_share_gets_bench_cases_as_load_sends_them() -> None:
    scheduler, nodes = start(SUITE_IDS, shares=False)
    run_all(scheduler, nodes)
    assert sorted(index for node in nodes for index in node.sent) == list(range(20))
