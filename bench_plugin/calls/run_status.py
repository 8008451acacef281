"""What the runner is doing right now: cases started and finished, calls in flight, errors, and every wait.

A call waits for its provider's limits (``waiting``); a case, for a place among the cases at work to run a
command, an agent's program (``waiting_for_place``, through ``places.take_place``). The runner's loop thread
counts here; the progress display (``progress.py``) reads it from pytest's main thread, so every change and
every read holds one lock. Under xdist each worker sends ``StatusSnapshot``s of its counters as plain data,
and the controller draws their sum (``combine``).
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections.abc import Iterable, Iterator, Mapping
from dataclasses import dataclass
from typing import Any


@dataclass(frozen=True)
class Wait:
    """One call waiting: on which provider, why, and until when (monotonic seconds; in a snapshot, wall clock)."""

    provider: str
    why: str
    until: float


class RunStatus:
    """Counters the runner's loop thread updates and the main thread reads (under a lock)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._ids = itertools.count()
        self.started = 0
        self.finished = 0
        self.errors = 0
        self.not_run = 0
        self.place_waits = 0  # cases waiting for a place among the cases at work, to run a command
        self.calls = 0  # calls sent and not answered yet: a provider's limits keep it below the cases started
        self.waits: dict[int, Wait] = {}
        self._stopping = threading.Event()  # set from a signal handler: no lock (it may interrupt a holder)

    def stop_calls(self) -> None:
        """The run is stopping (Ctrl-C, SIGTERM): no call is sent from now on, and no case starts."""
        self._stopping.set()

    @property
    def calls_stopped(self) -> bool:
        """Whether ``stop_calls`` was called: checked right before each attempt is sent and each case starts."""
        return self._stopping.is_set()

    def case_started(self) -> None:
        """A case took its slot and began."""
        with self._lock:
            self.started += 1

    def case_finished(self, status: str, *, ran: bool = True) -> None:
        """A case's record is ready; ``ran`` is False for a case a budget kept from starting."""
        with self._lock:
            self.finished += 1
            self.started += not ran
            self.errors += status == "error"
            self.not_run += not ran

    @contextlib.contextmanager
    def waiting(self, provider: str, why: str, seconds: float) -> Iterator[None]:
        """Show a call of ``provider`` as waiting ``seconds`` for ``why`` while the block runs."""
        with self._lock:
            key = next(self._ids)
            self.waits[key] = Wait(provider, why, time.monotonic() + seconds)
        try:
            yield
        finally:
            with self._lock:
                self.waits.pop(key, None)

    @contextlib.contextmanager
    def calling(self) -> Iterator[None]:
        """Count a call as in flight while the block sends it and waits for its answer."""
        with self._lock:
            self.calls += 1
        try:
            yield
        finally:
            with self._lock:
                self.calls -= 1

    @contextlib.contextmanager
    def waiting_for_place(self) -> Iterator[None]:
        """Count a case as waiting for a place to run a command while the block runs (``limits.CaseSlot``)."""
        with self._lock:
            self.place_waits += 1
        try:
            yield
        finally:
            with self._lock:
                self.place_waits -= 1

    def snapshot(self) -> StatusSnapshot:
        """The counters now, with each wait's end on the wall clock (so another process can read it)."""
        with self._lock:
            started, finished, errors, not_run = self.started, self.finished, self.errors, self.not_run
            place_waits, calls, waits = self.place_waits, self.calls, list(self.waits.values())
        at, monotonic = time.time(), time.monotonic()
        ends = tuple(Wait(wait.provider, wait.why, at + wait.until - monotonic) for wait in waits)
        return StatusSnapshot(started, finished, errors, not_run, ends, place_waits, calls)

    def line(self, total: int | None) -> str:
        """One line: cases done (of ``total``) and started, calls in flight, errors, not run, the waits grouped."""
        return self.snapshot().line(total)


_COUNTS = ("started", "finished", "errors", "not_run")


@dataclass(frozen=True)
class StatusSnapshot:
    """``RunStatus`` at one moment; ``waits`` end on the wall clock (``time.time()``).

    ``place_waits``: cases waiting for a place to run a command (they are also started). ``calls``: calls sent
    and not answered yet.
    """

    started: int = 0
    finished: int = 0
    errors: int = 0
    not_run: int = 0
    waits: tuple[Wait, ...] = ()
    place_waits: int = 0
    calls: int = 0

    def to_dict(self) -> dict[str, Any]:
        """Plain data, to cross from an xdist worker to the controller."""
        return {"started": self.started, "finished": self.finished, "errors": self.errors, "not_run": self.not_run,
                "place_waits": self.place_waits, "calls": self.calls,
                "waits": [[wait.provider, wait.why, wait.until] for wait in self.waits]}

    @classmethod
    def from_dict(cls, data: Mapping[str, Any]) -> StatusSnapshot:
        """Read ``to_dict``'s data back.

        Raises:
            ValueError: when ``data`` does not have that shape.
        """
        try:
            started, finished, errors, not_run = (int(data[key]) for key in _COUNTS)
            place_waits, calls = int(data.get("place_waits", 0)), int(data.get("calls", 0))
            waits = tuple(Wait(str(provider), str(why), float(until)) for provider, why, until in data["waits"])
        except (KeyError, TypeError, ValueError) as exc:
            raise ValueError(f"not a status snapshot: {exc}") from exc
        return cls(started, finished, errors, not_run, waits, place_waits, calls)

    def line(self, total: int | None, now: float | None = None) -> str:
        """One line: cases done (of ``total``) and started, calls in flight, errors, not run, the waits grouped.

        Cases started (not done yet) and calls in flight are apart: 200 cases may start while a provider lets 4
        calls go at a time, the others waiting for its limits.
        """
        done, running, errors, not_run = self.finished, self.started - self.finished, self.errors, self.not_run
        parts = [f"{done}/{total}" if total is not None else f"{done}", f"cases done, {running} started"]
        calls = f"{self.calls} call{'s' * (self.calls != 1)} in flight"
        text = f"bench: {' '.join(parts)}, {calls}, {errors} error{'s' * (errors != 1)}"
        if not_run:
            text += f", {not_run} not run"
        if self.place_waits:
            text += f", {self.place_waits} waiting for a place to run a command"
        if self.waits:
            text += "; waiting: " + "; ".join(_grouped(self.waits, time.time() if now is None else now))
        return text


def combine(snapshots: Iterable[StatusSnapshot]) -> StatusSnapshot:
    """The sum of several processes' snapshots (the xdist workers'), their waits side by side."""
    total = StatusSnapshot()
    for part in snapshots:
        total = StatusSnapshot(total.started + part.started, total.finished + part.finished,
                               total.errors + part.errors, total.not_run + part.not_run, total.waits + part.waits,
                               total.place_waits + part.place_waits, total.calls + part.calls)
    return total


def _grouped(waits: Iterable[Wait], now: float) -> list[str]:
    groups: dict[tuple[str, str], list[float]] = {}
    for wait in waits:
        groups.setdefault((wait.provider, wait.why), []).append(max(0.0, wait.until - now))
    # the time first: a line cut at the terminal's width keeps it
    return [
        f"{provider} ({len(left)} call{'s' * (len(left) != 1)}) {max(left):.0f} s: {why}"
        for (provider, why), left in sorted(groups.items())
    ]
