"""Retries of one model call: backoff with jitter, the server's requested wait, and when to give up.

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

from bench_plugin.core.chat import Completion, CompletionRequest
from bench_plugin.core.errors import ProviderError, is_rate_limit
from bench_plugin.core.text_safety import log_line
from bench_plugin.providers.interface import Provider

logger = logging.getLogger("bench_plugin.http")  # the name users already filter on

DEFAULT_MAX_WAIT_S = 300.0
"""Most seconds one call spends waiting between its attempts, rate limits included (``max_wait``)."""
MAX_ATTEMPTS = 25
"""Attempts of one call at most, however often a rate limit lets it try again."""

_JITTER = random.Random()
"""The jitter of every wait: one generator for the session (seeding one per call read os.urandom each time)."""

OnRetry = Callable[[Exception, float, int], None]
"""Told ``(error, seconds to wait, attempts made)`` before each wait: progress and logs."""


async def complete_with_retries(
    provider: Provider,
    request: CompletionRequest,
    *,
    max_retries: int,
    base_delay: float = 0.5,
    max_delay: float = 20.0,
    max_wait: float = DEFAULT_MAX_WAIT_S,
    retry_rate_limits: bool = True,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    rng: random.Random | None = None,
    on_retry: OnRetry | None = None,
) -> Completion:
    """Call ``provider.complete`` until it answers, retrying what ``provider.should_retry`` allows.

    Waits what the server asked for when the error carries it (``Retry-After`` and its kin, read by
    ``http.retry_wait_of``), otherwise exponential backoff ``min(max_delay, base_delay * 2.0**retry)``
    plus up to 25 % jitter. Failures other than rate limits get ``max_retries`` retries; rate limits
    (429) are retried while the waits add up to at most ``max_wait`` seconds (``MAX_ATTEMPTS`` at most),
    unless ``retry_rate_limits`` is off (``--bench-fail-fast``). A server asking for more than what is
    left of ``max_wait`` (an exhausted daily quota) makes the call give up at once.

    Returns:
        The completion with ``attempts`` set to the number of calls made.

    Raises:
        ProviderError: the last error, of the same type, status and kind, its message saying how many
            attempts were made. Errors that are not retryable propagate at once, unchanged.
    """
    rng = rng or _JITTER
    attempt = failures = 0
    waited = 0.0
    while True:
        attempt += 1
        try:
            completion = await provider.complete(request)
        except Exception as exc:  # CancelledError is a BaseException and passes through
            if not provider.should_retry(exc):
                raise
            limited = is_rate_limit(exc)
            failures += not limited
            wait, jitter = _retry_delay(exc, attempt - 1, base_delay, max_delay, rng)
            out_of_tries = failures > max_retries or attempt >= MAX_ATTEMPTS or (limited and not retry_rate_limits)
            # the jitter is ours: only the waits asked for (or the backoff) count against max_wait
            if out_of_tries or wait > max_wait - waited:
                final = _gave_up(exc, attempt, max_wait - waited if not out_of_tries else None, retry_rate_limits)
                if final is exc:
                    raise
                raise final from exc
            delay = wait + min(jitter, max(0.0, max_wait - waited - wait))
            # the error quotes the server and the suite: one line of the log, whatever they hold
            logger.info("retrying %s in %.2f s after attempt %d: %s", log_line(provider.spec.name), delay, attempt,
                        log_line(exc))
            if on_retry is not None:
                on_retry(exc, delay, attempt)
            await sleep(delay)
            waited += wait
            continue
        return dataclasses.replace(completion, attempts=attempt)


def _retry_delay(
    exc: Exception, retry: int, base_delay: float, max_delay: float, rng: random.Random
) -> tuple[float, float]:
    """Seconds to wait before retry number ``retry`` (0-based), the server's wait or else backoff, and a jitter."""
    server_wait: float | None = getattr(exc, "retry_after", None)
    if isinstance(server_wait, (int, float)):
        # a little jitter so cases rejected together do not all come back in the same instant
        return float(server_wait), rng.uniform(0, min(1.0, 0.1 * server_wait))
    backoff = min(max_delay, base_delay * 2.0**retry)
    return backoff, rng.uniform(0, 0.25 * backoff)


def _gave_up(exc: Exception, attempts: int, wait_left: float | None, retry_rate_limits: bool) -> Exception:
    """A copy of ``exc`` (same type, status, kind) whose message counts the attempts and says why they stopped."""
    if not isinstance(exc, ProviderError):
        return exc
    note = f"gave up after {attempts} attempt{'s' if attempts != 1 else ''}"
    if wait_left is not None and exc.retry_after is not None:
        asked, left = seconds_text(exc.retry_after), seconds_text(wait_left)
        note += f"; the server asked to wait {asked} s, more than the {left} s left"
    elif wait_left is not None:
        note += f"; retries would wait more than the {max(wait_left, 0):.0f} s left of max_wait"
    elif is_rate_limit(exc) and not retry_rate_limits:
        note += "; rate limits are not retried under --bench-fail-fast"
    try:
        return type(exc)(
            f"{exc.message} ({note})", status=exc.status, retry_after=exc.retry_after, kind=exc.kind
        )
    except TypeError:  # a subclass with its own constructor: keep it as it was
        return exc


def seconds_text(value: float) -> str:
    """Seconds as a message shows them: whole from 10 on, else to a tenth (a wait of 0.4 s is not "0 s")."""
    value = max(value, 0.0)
    return f"{value:.0f}" if value >= 10 else f"{value:.1f}".removesuffix(".0")
