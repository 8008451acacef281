"""Running a case's scoring calls together: every one finishes before the first failure is raised."""

from __future__ import annotations

import asyncio
from collections.abc import Awaitable, Iterable
from typing import TypeVar

T = TypeVar("T")


async def gather_all(awaitables: Iterable[Awaitable[T]]) -> list[T]:
    """The results in order, once all have finished.

    Raises:
        The first exception in the awaitables' order, after every one has finished (no call is left
        running behind the failure).
    """
    outcomes = await asyncio.gather(*awaitables, return_exceptions=True)
    failure = next((outcome for outcome in outcomes if isinstance(outcome, BaseException)), None)
    if failure is not None:
        raise failure
    return [outcome for outcome in outcomes if not isinstance(outcome, BaseException)]
