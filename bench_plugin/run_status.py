"""What the runner is doing right now: cases started and finished, errors, and every call that waits.

The runner's loop thread counts here; the progress display (``progress.py``) reads it from pytest's
main thread, so every change and every read holds one lock.
"""

from __future__ import annotations

import contextlib
import itertools
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass


@dataclass(frozen=True)
class Wait:
    """One call waiting: on which provider, why, and until when (monotonic seconds)."""

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
        self.waits: dict[int, Wait] = {}

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

    def line(self, total: int | None) -> str:
        """One line: cases done (of ``total``), in flight, errors, not run, and the waits grouped."""
        with self._lock:
            done, flight, errors, not_run = self.finished, self.started - self.finished, self.errors, self.not_run
            waits = list(self.waits.values())
        parts = [f"{done}/{total}" if total is not None else f"{done}", f"cases done, {flight} in flight"]
        text = f"bench: {' '.join(parts)}, {errors} error{'s' * (errors != 1)}"
        if not_run:
            text += f", {not_run} not run"
        if waits:
            text += "; waiting: " + "; ".join(_grouped(waits))
        return text


def _grouped(waits: list[Wait]) -> list[str]:
    now = time.monotonic()
    groups: dict[tuple[str, str], list[float]] = {}
    for wait in waits:
        groups.setdefault((wait.provider, wait.why), []).append(max(0.0, wait.until - now))
    return [
        f"{provider} ({len(left)} call{'s' * (len(left) != 1)}): {why}, {max(left):.0f} s left"
        for (provider, why), left in sorted(groups.items())
    ]
