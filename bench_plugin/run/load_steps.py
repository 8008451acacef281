"""The load steps of a latency benchmark at run time: each step's cap on cases in flight, or its start rate.

The scheduler runs the steps one after the other (its look-ahead stops where the next step begins:
``schedule.Scheduler``'s ``phase``); here each case of a step waits for its step's turn: a place among the
step's ``in_flight`` cases, or its start time at the step's ``rate`` (an open loop: started on time, whether
or not the cases before it answered). The record says which step a case ran in and when (``stamp``), which
is what the report's tables per step read (``report/latency.py``).
"""

from __future__ import annotations

import asyncio
import contextlib
import dataclasses
import time
from collections.abc import AsyncIterator
from dataclasses import dataclass

from bench_plugin.results.record import CaseRecord
from bench_plugin.suite.load import LoadStep


@dataclass
class _Pacer:
    """Hands out start times ``1 / rate`` seconds apart, from the first case of the step on."""

    rate: float
    next_at: float | None = None

    async def wait_turn(self) -> None:
        now = time.monotonic()
        at = now if self.next_at is None else max(now, self.next_at)
        self.next_at = at + 1.0 / self.rate
        await asyncio.sleep(at - now)


class LoadGates:
    """One gate per step (by suite and step): made on the first case of the step, in the runner's loop."""

    def __init__(self) -> None:
        self._caps: dict[tuple[str, LoadStep], asyncio.Semaphore] = {}
        self._pacers: dict[tuple[str, LoadStep], _Pacer] = {}

    @contextlib.asynccontextmanager
    async def turn(self, path: str, step: LoadStep | None) -> AsyncIterator[None]:
        """Hold the case's turn in its step for as long as it runs (no step: at once)."""
        if step is None:
            yield
            return
        key = (path, step)
        if step.in_flight is not None:
            async with self._caps.setdefault(key, asyncio.Semaphore(step.in_flight)):
                yield
            return
        await self._pacers.setdefault(key, _Pacer(step.value)).wait_turn()
        yield


def stamp(record: CaseRecord, step: LoadStep | None, started: float, ended: float) -> CaseRecord:
    """The record with its step and when (epoch seconds) it started and ended; as it was outside any step."""
    if step is None:
        return record
    load = {"step": step.label, "kind": step.kind, "value": step.value, "started": started, "ended": ended}
    return dataclasses.replace(record, load=load)
