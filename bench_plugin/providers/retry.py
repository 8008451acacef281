"""Retries of one model call: backoff with jitter, the server's ``Retry-After``, and when to give up.

Every provider's calls go through here (the runner calls it), HTTP or offline alike; a provider
only says which of its errors are worth another attempt (``should_retry``).
"""

from __future__ import annotations

import asyncio
import dataclasses
import logging
import random
from collections.abc import Awaitable, Callable
from typing import Any

from bench_plugin.chat import Completion, CompletionRequest
from bench_plugin.errors import ProviderError
from bench_plugin.http import RETRY_AFTER_CEILING_S
from bench_plugin.providers.interface import Provider

logger = logging.getLogger("bench_plugin.http")  # the name users already filter on

async def complete_with_retries(
    provider: Provider,
    request: CompletionRequest,
    *,
    max_retries: int,
    base_delay: float = 0.5,
    max_delay: float = 20.0,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    rng: random.Random | None = None,
) -> Completion:
    """Call ``provider.complete`` until it answers, retrying what ``provider.should_retry`` allows.

    Waits the server's ``Retry-After`` when the error carries one (up to a 60 s ceiling; a longer
    request, such as an exhausted daily quota, gives up at once), otherwise exponential backoff
    ``min(max_delay, base_delay * 2.0**retry)`` plus up to 25 % jitter.

    Returns:
        The completion with ``attempts`` set to the number of calls made.

    Raises:
        ProviderError: the last error, of the same type, status and kind, its message saying how many
            attempts were made. Errors that are not retryable propagate at once, unchanged.
    """
    rng = rng or random.Random()
    attempt = 0
    while True:
        attempt += 1
        try:
            completion = await provider.complete(request)
        except Exception as exc:  # CancelledError is a BaseException and passes through
            if not provider.should_retry(exc):
                raise
            delay = _retry_delay(exc, attempt - 1, base_delay, max_delay, rng)
            if attempt > max_retries or delay is None:
                final = _gave_up(exc, attempt)
                if final is exc:
                    raise
                raise final from exc
            logger.info("retrying %s in %.2f s after attempt %d: %s", provider.spec.name, delay, attempt, exc)
            await sleep(delay)
            continue
        return dataclasses.replace(completion, attempts=attempt)


def _retry_delay(
    exc: Exception, retry: int, base_delay: float, max_delay: float, rng: random.Random
) -> float | None:
    """Seconds to wait before retry number ``retry`` (0-based), or None when waiting is pointless."""
    server_wait: float | None = getattr(exc, "retry_after", None)
    if isinstance(server_wait, (int, float)):
        if server_wait > RETRY_AFTER_CEILING_S:
            return None
        # a little jitter so cases rejected together do not all come back in the same instant
        return server_wait + rng.uniform(0, min(1.0, 0.1 * server_wait))
    backoff = min(max_delay, base_delay * 2.0**retry)
    return backoff + rng.uniform(0, 0.25 * backoff)


def _gave_up(exc: Exception, attempts: int) -> Exception:
    """A copy of ``exc`` (same type, status, kind) whose message counts the attempts."""
    if not isinstance(exc, ProviderError):
        return exc
    note = f"gave up after {attempts} attempt{'s' if attempts != 1 else ''}"
    if exc.retry_after is not None and exc.retry_after > RETRY_AFTER_CEILING_S:
        note += f"; the server asked to wait {exc.retry_after:.0f} s"
    try:
        return type(exc)(
            f"{exc.message} ({note})", status=exc.status, retry_after=exc.retry_after, kind=exc.kind
        )
    except TypeError:  # a subclass with its own constructor: keep it as it was
        return exc
