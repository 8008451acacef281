"""Under ``pytest -n N``: give each xdist worker a fixed share of the bench cases, which it runs concurrently.

xdist's default ``--dist load`` hands a worker a few items at a time, so the worker only learns a
case when it reaches it and keeps one case in flight. Here the controller assigns every worker its
share when it starts (``workerinput``), before anything is collected; the worker computes which
items that is (``shards.worker_share``, round robin over the suite items of the collection every
worker agrees on) and starts them ahead on its own runner. The scheduler then sends each worker
exactly its share, a window at a time, so ``-x`` and Ctrl-C still stop a worker soon. Ordinary
tests in the same run are load-balanced as ``--dist load`` does. Loaded on the controller only,
and only when xdist distributes and the user did not choose a ``--dist`` mode.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Sequence
from typing import Any

import pytest
from xdist.scheduler import LoadScheduling

from bench_plugin.run.shards import SHARE_KEY, share_from_workerinput, worker_share
from bench_plugin.suite.quality_gates import is_gate_nodeid


def wants_bench_distribution(config: pytest.Config) -> bool:
    """Whether xdist distributes this run and leaves the choice of scheduler to us.

    An explicit ``--dist MODE`` (or ``-d``), on the command line, in ``PYTEST_ADDOPTS`` or in the ini's
    ``addopts``, is the user's choice and is kept; ``-n N`` alone means ``--dist load`` to xdist, which
    we replace.
    """
    if hasattr(config, "workerinput") or not config.pluginmanager.hasplugin("xdist"):
        return False
    if config.getoption("dist", "no") == "no" or not config.getoption("tx", None) or config.option.collectonly:
        return False
    given = config.known_args_namespace  # as parsed from the arguments, before xdist turned -n into load
    return getattr(given, "dist", "no") == "no" and not getattr(given, "distload", False)


class BenchDistribution:
    """The controller's xdist hooks: shares in each worker's ``workerinput``, and the scheduler.

    Args:
        window: how many items to keep queued on a worker (the worker starts its cases ahead by
            its own look-ahead, so this only needs to keep it from waiting for the controller).
    """

    def __init__(self, window: int) -> None:
        self.window = max(2, window)
        self._assigned = 0

    @pytest.hookimpl(optionalhook=True)
    def pytest_configure_node(self, node: Any) -> None:
        """Tell each of the first N workers its share; a worker started to replace a crashed one gets none."""
        workers = int(node.workerinput["workercount"])
        if self._assigned < workers:
            node.workerinput[SHARE_KEY] = [self._assigned, workers]
            self._assigned += 1

    @pytest.hookimpl(tryfirst=True, optionalhook=True)
    def pytest_xdist_make_scheduler(self, config: pytest.Config, log: Any) -> BenchScheduling:
        """Our scheduler, ahead of xdist's own: the shares handed out above must be the ones followed."""
        return BenchScheduling(config, log, window=self.window)


class BenchScheduling(LoadScheduling):  # type: ignore[misc]  # xdist ships no type information
    """``--dist load`` for ordinary tests; every bench case goes to the worker whose share it is; gates to none.

    A run without bench cases is scheduled exactly as ``--dist load`` schedules it.

    Args:
        config: the controller's config.
        log: xdist's log producer.
        window: how many items to keep queued on a worker while its share lasts.
    """

    # LoadScheduling's state that this class also sets (a worker node is xdist's WorkerController)
    collection: list[str] | None
    pending: list[int]
    maxschedchunk: int | None
    node2pending: dict[Any, list[int]]
    node2collection: dict[Any, list[str]]

    def __init__(self, config: pytest.Config, log: Any = None, *, window: int = 32) -> None:
        super().__init__(config, log)
        self.window = max(2, window)
        self.node2share: dict[Any, deque[int]] = {}

    @property
    def tests_finished(self) -> bool:
        """Whether every item ran, shares included."""
        return not any(self.node2share.values()) and bool(super().tests_finished)

    @property
    def has_pending(self) -> bool:
        """Whether items remain, shares included."""
        return any(self.node2share.values()) or bool(super().has_pending)

    def schedule(self) -> None:
        """Once every worker has collected: set each worker's share aside, then distribute as ``load``."""
        if self.collection is None and self.collection_is_completed:
            collection: list[str] = next(iter(self.node2collection.values()))
            shares = self._shares(collection)
            # no worker runs a quality gate: the controller judges it once every record arrived (gate_judge.py)
            gates = {index for index, nodeid in enumerate(collection) if is_gate_nodeid(nodeid)}
            if any(shares.values()) or gates:
                if not self._check_nodes_have_same_collection():
                    self.log("**Different tests collected, aborting run**")
                    return
                self.collection = collection
                if self.maxschedchunk is None:
                    self.maxschedchunk = len(collection)
                assigned = gates.union(*shares.values())
                self.pending[:] = [index for index in range(len(collection)) if index not in assigned]
                self.node2share = {node: deque(share) for node, share in shares.items() if share}
        super().schedule()  # with a collection set: check_schedule on every node

    def _shares(self, collection: Sequence[str]) -> dict[Any, list[int]]:
        """Each worker's share of ``collection``; the share of a worker that is gone stays in the pool."""
        shares: dict[Any, list[int]] = {}
        for node in self.nodes:
            share = share_from_workerinput(node.workerinput)
            if share is not None:
                shares[node] = worker_share(collection, *share)
        return shares

    def check_schedule(self, node: Any, duration: float = 0) -> None:
        """Top up the worker's queue from its share; once the share is sent, behave as ``load``."""
        if node.shutting_down:
            return
        share = self.node2share.get(node)
        if share:
            queued = self.node2pending[node]
            if len(queued) > self.window // 2:
                return
            batch = [share.popleft() for _ in range(min(len(share), self.window - len(queued)))]
            queued.extend(batch)
            node.send_runtest_some(batch)
            if share:
                return
        # share sent: ordinary tests as --dist load sends them, or the shutdown after the last queued item
        # (a worker runs an item only once it knows the next one, or that there is none)
        super().check_schedule(node, duration)

    def remove_node(self, node: Any) -> str | None:
        """A worker went down: what it was not sent of its share goes back to the pool for the others."""
        self.pending.extend(self.node2share.pop(node, ()))
        crashed: str | None = super().remove_node(node)
        return crashed
