"""Which cases to start when: a bounded look-ahead over the selected items.

Work starts only after deselection (``-k``, ``-m``, ``--lf`` cost no calls). The look-ahead keeps
about twice the concurrency submitted ahead of the item pytest is running, so ``-x`` or Ctrl-C waste
little; while a running case waits for its limits (its place let go: ``limits.CasePlaces``) it reaches
``WAITING_WINDOWS`` times as far, so that while one model waits out a 429's pause or a slow rpm, the
other models' cases go on. Under xdist a worker plans the share the controller gave it
(``xdist_schedule.py``); an item that was never planned (a worker under an explicit ``--dist``, where
it learns its items one by one, or a case handed over from a crashed worker) submits itself when it runs.
"""

from __future__ import annotations

import concurrent.futures
import threading
from collections.abc import Callable, Sequence
from typing import Generic, TypeVar

from bench_plugin.results.record import CaseRecord

CaseT = TypeVar("CaseT")
Submit = Callable[[CaseT, str], "concurrent.futures.Future[CaseRecord]"]


WAITING_WINDOWS = 8
"""How many windows more the look-ahead may grow by for cases waiting for their limits: it bounds the records
kept for pytest to report (and the cases run ahead of ``-x``) while a case it waits for is held up."""


class Scheduler(Generic[CaseT]):
    """Hands out one future per case and keeps a window of cases running ahead.

    Args:
        submit: starts a case (the runner's ``submit``).
        window: how many cases may be started ahead of the one pytest is on.
        waiting: how many running cases wait for their limits, their place let go (the runner's
            ``waiting_cases``): while any does, the look-ahead is ``WAITING_WINDOWS`` windows.
        phase: a case's phase (its load step, ``suite/load.py``): the look-ahead never reaches into the next
            phase, so a phase's first case starts when pytest is on it, every case before it reported.
    """

    def __init__(
        self, submit: Submit[CaseT], window: int, waiting: Callable[[], int] = lambda: 0,
        phase: Callable[[CaseT], object] = lambda case: None,
    ) -> None:
        self._submit = submit
        self._window = max(1, window)
        self._waiting = waiting
        self._phase_of = phase
        self._phases: dict[str, object] = {}  # nodeid -> its phase (a load step), for the planned cases
        self._lock = threading.Lock()  # the runner's loop widens the window too (``widen``)
        self._at = 0  # the position of the case pytest is on
        self._order: list[str] = []  # the planned nodeids, in run order
        self._cases: dict[str, CaseT] = {}  # the planned cases not started yet (a started one is let go)
        self._position: dict[str, int] = {}
        self._futures: dict[str, concurrent.futures.Future[CaseRecord]] = {}
        self._submitted_upto = 0

    def plan(self, cases: Sequence[tuple[str, CaseT]]) -> None:
        """Take the selected (nodeid, case) pairs that can run, in run order, and start the first window."""
        with self._lock:
            self._order = [nodeid for nodeid, _ in cases]
            self._cases = dict(cases)
            self._position = {nodeid: i for i, nodeid in enumerate(self._order)}
            self._phases = {nodeid: self._phase_of(case) for nodeid, case in cases}
            self._advance(0)

    def result(self, nodeid: str, case: CaseT) -> CaseRecord:
        """Block until this case's record is ready, starting it (and the window after it) if needed."""
        with self._lock:
            position = self._position.get(nodeid)
            if position is not None:
                self._advance(position)
            future = self._futures.get(nodeid)
            if future is None:
                future = self._futures[nodeid] = self._submit(case, nodeid)
        try:
            return future.result()
        finally:
            with self._lock:
                self._futures.pop(nodeid, None)

    def widen(self) -> None:
        """A running case let its place go while its calls wait for their limits: start the cases ahead.

        Called in the runner's loop, while pytest waits for a case on the main thread.
        """
        with self._lock:
            self._advance(self._at)

    def _advance(self, position: int) -> None:
        self._at = position
        reach = self._window * (WAITING_WINDOWS if self._waiting() else 1)
        target = min(len(self._order), position + reach)
        phase = self._phases.get(self._order[position]) if position < len(self._order) else None
        while self._submitted_upto < target:
            nodeid = self._order[self._submitted_upto]
            if self._phases.get(nodeid) != phase:
                break  # the next phase starts when pytest reaches it
            # a started case is not kept: its item lets it go once it ran (``CaseItem.release``), and then
            # it is freed, instead of every case of the run staying to its end
            case = self._cases.pop(nodeid, None)  # None: planned twice (the same item twice), started already
            if case is not None and nodeid not in self._futures:
                self._futures[nodeid] = self._submit(case, nodeid)
            self._submitted_upto += 1
