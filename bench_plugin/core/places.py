"""A case's place among the cases at work (``--bench-concurrency``), for the work it does between its calls.

The runner gives each case it starts a place, and a case whose call waits for its limits gives its place to the
next case (``limits.CasePlaces``). Work between calls that loads the machine, an agent's programs, takes a place
again first (``take_place``): cases without places ran theirs many at once, eight with ``--bench-concurrency 2``,
and the commands' wall-clock timeouts measured the crowd, not the command.
"""

from __future__ import annotations

import contextlib
from collections.abc import Awaitable, Callable, Iterator
from contextvars import ContextVar

PlaceTaker = Callable[[], Awaitable[None]]
"""Takes the case's place again if it gave it up (waiting for one if none is free); it keeps it afterwards."""

_TAKER: ContextVar[PlaceTaker | None] = ContextVar("bench_case_place", default=None)


async def take_place() -> None:
    """Hold the running case's place from now on (outside a runner's case: nothing to hold)."""
    taker = _TAKER.get()
    if taker is not None:
        await taker()


@contextlib.contextmanager
def placed(taker: PlaceTaker) -> Iterator[None]:
    """Within the block (a case's task, and the tasks it starts), ``take_place`` takes the place through ``taker``."""
    token = _TAKER.set(taker)
    try:
        yield
    finally:
        _TAKER.reset(token)
