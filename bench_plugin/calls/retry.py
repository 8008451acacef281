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
    ``retry_headers.retry_wait_of``), otherwise exponential backoff ``min(max_delay, base_delay * 2.0**retry)``
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
    budget = _Budget(max_retries, max_wait, retry_rate_limits)
    while True:
        budget.attempts += 1
        try:
            completion = await provider.complete(request)
        except Exception as exc:  # CancelledError is a BaseException and passes through
            if not provider.should_retry(exc):
                raise
            wait, jitter = _retry_delay(exc, budget.attempts - 1, base_delay, max_delay, rng)
            final = budget.final_error(exc, wait)
            if final is exc:
                raise
            if final is not None:
                raise final from exc
            delay = budget.delay(wait, jitter)
            _announce_retry(provider, exc, delay, budget.attempts, on_retry)
            await sleep(delay)
            budget.waited += wait
            continue
        return dataclasses.replace(completion, attempts=budget.attempts)


@dataclasses.dataclass
class _Budget:
    """What one call has spent on its attempts, against what it may spend."""

    max_retries: int
    max_wait: float
    retry_rate_limits: bool
    attempts: int = 0
    failures: int = 0  # failures other than rate limits
    waited: float = 0.0  # the waits asked for (or the backoffs); the jitter is ours and does not count

    @property
    def wait_left(self) -> float:
        return self.max_wait - self.waited

    def final_error(self, exc: Exception, wait: float) -> Exception | None:
        """Count the failure ``exc``; the error to raise when the call stops here, None when it waits ``wait``."""
        limited = is_rate_limit(exc)
        self.failures += not limited
        if self._out_of_tries(limited):
            return _gave_up(exc, self.attempts, None, self.retry_rate_limits)
        if wait > self.wait_left:
            return _gave_up(exc, self.attempts, self.wait_left, self.retry_rate_limits)
        return None

    def _out_of_tries(self, limited: bool) -> bool:
        if limited and not self.retry_rate_limits:
            return True
        return self.failures > self.max_retries or self.attempts >= MAX_ATTEMPTS

    def delay(self, wait: float, jitter: float) -> float:
        """The wait plus as much of the jitter as ``max_wait`` still has room for."""
        return wait + min(jitter, max(0.0, self.wait_left - wait))


def _announce_retry(provider: Provider, exc: Exception, delay: float, attempts: int, on_retry: OnRetry | None) -> None:
    # the error quotes the server and the suite: one line of the log, whatever they hold
    logger.info("retrying %s in %.2f s after attempt %d: %s", log_line(provider.spec.name), delay, attempts,
                log_line(exc))
    if on_retry is not None:
        on_retry(exc, delay, attempts)


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
    note += _why_stopped(exc, wait_left, retry_rate_limits)
    try:
        return type(exc)(
            f"{exc.message} ({note})", status=exc.status, retry_after=exc.retry_after, kind=exc.kind
        )
    except TypeError:  # a subclass with its own constructor: keep it as it was
        return exc


def _why_stopped(exc: ProviderError, wait_left: float | None, retry_rate_limits: bool) -> str:
    """The end of the give-up note: the wait that did not fit in ``max_wait``, or rate limits not retried."""
    if wait_left is not None and exc.retry_after is not None:
        asked, left = seconds_text(exc.retry_after), seconds_text(wait_left)
        return f"; the server asked to wait {asked} s, more than the {left} s left"
    if wait_left is not None:
        return f"; retries would wait more than the {max(wait_left, 0):.0f} s left of max_wait"
    if is_rate_limit(exc) and not retry_rate_limits:
        return "; rate limits are not retried under --bench-fail-fast"
    return ""


def seconds_text(value: float) -> str:
    """Seconds as a message shows them: whole from 10 on, else to a tenth (a wait of 0.4 s is not "0 s")."""
    value = max(value, 0.0)
    return f"{value:.0f}" if value >= 10 else f"{value:.1f}".removesuffix(".0")
