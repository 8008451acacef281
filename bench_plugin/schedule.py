"""Which cases to start when: a bounded look-ahead over the selected items.

Work starts only after deselection (``-k``, ``-m``, ``--lf`` cost no calls). The look-ahead keeps
about twice the concurrency submitted ahead of the item pytest is running, so ``-x`` or Ctrl-C waste
little. Under xdist a worker plans the share the controller gave it (``xdist_schedule.py``); an item
that was never planned (a worker under an explicit ``--dist``, where it learns its items one by one,
or a case handed over from a crashed worker) submits itself when it runs.
"""

from __future__ import annotations

import concurrent.futures
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from bench_plugin.record import CaseRecord

CaseT = TypeVar("CaseT")
Submit = Callable[[CaseT, str], "concurrent.futures.Future[CaseRecord]"]


class Scheduler(Generic[CaseT]):
    """Hands out one future per case and keeps a window of cases running ahead.

    Args:
        submit: starts a case (the runner's ``submit``).
        window: how many cases may be started ahead of the one pytest is on.
    """

    def __init__(self, submit: Submit[CaseT], window: int) -> None:
        self._submit = submit
        self._window = max(1, window)
        self._order: list[str] = []  # the planned nodeids, in run order
        self._cases: dict[str, CaseT] = {}  # the planned cases not started yet (a started one is let go)
        self._position: dict[str, int] = {}
        self._futures: dict[str, concurrent.futures.Future[CaseRecord]] = {}
        self._submitted_upto = 0

    def plan(self, cases: Sequence[tuple[str, CaseT]]) -> None:
        """Take the selected (nodeid, case) pairs that can run, in run order, and start the first window."""
        self._order = [nodeid for nodeid, _ in cases]
        self._cases = dict(cases)
        self._position = {nodeid: i for i, nodeid in enumerate(self._order)}
        self._advance(0)

    def result(self, nodeid: str, case: CaseT) -> CaseRecord:
        """Block until this case's record is ready, starting it (and the window after it) if needed."""
        position = self._position.get(nodeid)
        if position is not None:
            self._advance(position)
        future = self._futures.get(nodeid)
        if future is None:
            future = self._futures[nodeid] = self._submit(case, nodeid)
        try:
            return future.result()
        finally:
            self._futures.pop(nodeid, None)

    def _advance(self, position: int) -> None:
        target = min(len(self._order), position + self._window)
        while self._submitted_upto < target:
            nodeid = self._order[self._submitted_upto]
            # a started case is not kept: its item lets it go once it ran (``CaseItem.release``), and then
            # it is freed, instead of every case of the run staying to its end
            case = self._cases.pop(nodeid, None)  # None: planned twice (the same item twice), started already
            if case is not None and nodeid not in self._futures:
                self._futures[nodeid] = self._submit(case, nodeid)
            self._submitted_upto += 1
