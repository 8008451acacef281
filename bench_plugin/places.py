"""A case's place among the cases at work (``--bench-concurrency``), for the work it does between its calls.

The runner gives each case it starts a place, and a case whose call waits for its limits gives its place to the
next case (``limits.CasePlaces``). Work between calls that loads the machine, an agent's programs, takes a place
again first (``at_work``): cases without places ran theirs many at once, eight with ``--bench-concurrency 2``,
and the commands' wall-clock timeouts measured the crowd, not the command.
"""

from __future__ import annotations

import contextlib
from collections.abc import Callable, Iterator
from contextlib import AbstractAsyncContextManager
from contextvars import ContextVar

PlaceHolder = Callable[[], AbstractAsyncContextManager[object]]
"""Holds the case's place while its block runs, taking one again first if the case gave its place up."""

_HOLDER: ContextVar[PlaceHolder | None] = ContextVar("bench_case_place", default=None)


def at_work() -> AbstractAsyncContextManager[object]:
    """Hold the running case's place while the block runs (outside a runner's case: nothing to hold)."""
    holder = _HOLDER.get()
    return holder() if holder is not None else contextlib.nullcontext()


@contextlib.contextmanager
def placed(holder: PlaceHolder) -> Iterator[None]:
    """Within the block (a case's task, and the tasks it starts), ``at_work`` holds the place through ``holder``."""
    token = _HOLDER.set(holder)
    try:
        yield
    finally:
        _HOLDER.reset(token)
