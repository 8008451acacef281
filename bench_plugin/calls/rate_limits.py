"""Client-side limits on model calls: concurrency caps, rpm/tpm buckets, 429 pauses, a circuit breaker, the budget.

A real run is thousands of calls to rate-limited endpoints: the runner keeps each endpoint (and each
model on it) within what the suite or the command line declares, pauses an endpoint the server said
to slow down, and stops calling one that keeps failing instead of paying for every case's retries.
"""

from __future__ import annotations

import asyncio
import contextlib
import heapq
import itertools
import math
import time
from collections.abc import Callable
from dataclasses import dataclass

from bench_plugin.calls.pricing import Cost
from bench_plugin.core.chat import CompletionRequest, Usage
from bench_plugin.core.errors import AuthError, ProviderError, TransientProviderError, is_rate_limit

Clock = Callable[[], float]
WaitReporter = Callable[[str, float], contextlib.AbstractContextManager[object]]
"""``(why, seconds)`` -> a context held while a call waits: how progress learns who waits and why."""

LIMIT_KEYS = ("concurrency", "rpm", "tpm")
BURST_S = 1.0
"""A bucket holds this many seconds of its rate: calls are paced, not sent in a minute's burst."""
RECHECK_S = 0.25
"""Longest nap of a call waiting for a bucket before it looks again (a tpm bucket refunded by an answer)."""


@dataclass(frozen=True)
class RateLimits:
    """Caps of one scope (an endpoint, or one model on it); None: no cap."""

    concurrency: int | None = None
    rpm: float | None = None
    tpm: float | None = None


def shared_by(limits: RateLimits, processes: int) -> RateLimits:
    """One process's equal share of ``limits`` that ``processes`` processes keep together (xdist workers).

    The processes do not see each other's calls, so each keeps to its share: ``rpm / N`` and ``tpm / N``,
    and ``concurrency // N`` but at least 1 (so a concurrency below N lets N calls go at once).

    Example: ``shared_by(RateLimits(concurrency=5, rpm=30), 2)`` is ``RateLimits(concurrency=2, rpm=15.0)``.
    """
    if processes <= 1:
        return limits
    return RateLimits(
        concurrency=max(1, limits.concurrency // processes) if limits.concurrency else None,
        rpm=limits.rpm / processes if limits.rpm else None,
        tpm=limits.tpm / processes if limits.tpm else None,
    )


class TokenBucket:
    """Refills at ``per_minute / 60`` per second up to ``BURST_S`` seconds' worth.

    A take larger than the bucket waits for a full bucket and leaves it in debt, so a large request is
    paced rather than refused. Waiters queue in order (one lock).

    Args:
        per_minute: the rate (requests or tokens per minute).
        clock: seconds, monotonic; injectable for tests.
    """

    def __init__(self, per_minute: float, clock: Clock = time.monotonic) -> None:
        self.rate = per_minute / 60.0
        self.capacity = max(1.0, self.rate * BURST_S)
        self.level = self.capacity
        self._clock = clock
        self._updated = clock()
        self.lock = asyncio.Lock()

    def _refill(self) -> None:
        now = self._clock()
        self.level = min(self.capacity, self.level + (now - self._updated) * self.rate)
        self._updated = now

    def wait_time(self, amount: float) -> float:
        """Seconds until ``amount`` can be taken (0 when it can now)."""
        self._refill()
        missing = min(amount, self.capacity) - self.level
        return max(0.0, missing / self.rate) if missing > 0 else 0.0

    def take(self, amount: float) -> None:
        """Remove ``amount`` (the level may go below zero: a debt paid by later waits)."""
        self._refill()
        self.level -= amount

    def give_back(self, amount: float) -> None:
        """Return tokens reserved but not used (a negative amount takes more)."""
        self._refill()
        self.level = min(self.capacity, self.level + amount)


class RankedSlots:
    """A semaphore that serves its waiters the oldest case first (lowest ``rank``), then in the order they came.

    asyncio's ``Semaphore`` and ``Lock`` serve whoever asked first: a case's later calls (its judges, its next
    turn) queued for a model's limits behind the first calls of every case started after it, so under a rate
    limit few cases finished until most had started, and ``-x`` or a kill found many half done. A slot let go
    passes straight to the best waiter, so a newcomer never takes it ahead of the queue.

    Args:
        value: how many holders at once (1: a lock).
    """

    def __init__(self, value: int = 1) -> None:
        self._value = value
        self._waiters: list[tuple[float, int, asyncio.Future[None]]] = []
        self._arrivals = itertools.count()

    def locked(self) -> bool:
        """Whether an ``acquire`` now would wait."""
        return self._value == 0

    def ahead_of(self, rank: float) -> int:
        """How many waiters go before a newcomer of ``rank``: those of a lower rank or of the same."""
        return sum(1 for waiter_rank, _, future in self._waiters if waiter_rank <= rank and not future.done())

    async def acquire(self, rank: float = 0) -> None:
        """Take a slot, waiting behind the waiters of a lower rank and those of this rank that came before."""
        if self._value > 0:
            self._value -= 1
            return
        future: asyncio.Future[None] = asyncio.get_running_loop().create_future()
        heapq.heappush(self._waiters, (rank, next(self._arrivals), future))
        try:
            await future
        except asyncio.CancelledError:
            if future.done() and not future.cancelled():
                self.release()  # handed the slot as it was cancelled: the next waiter has it
            else:
                future.cancel()  # left in the heap, skipped when its turn comes
            raise

    def release(self) -> None:
        """Let a slot go: to the best waiter still waiting, or back to the free ones."""
        while self._waiters:
            _, _, future = heapq.heappop(self._waiters)
            if not future.done():
                future.set_result(None)
                return
        self._value += 1


class CircuitBreaker:
    """Opens after ``threshold`` consecutive infrastructure failures of one endpoint, and stays open.

    Rate limits neither count nor reset the count; any answer resets it. ``trip`` opens it at once
    (``--bench-fail-fast`` on a 429). Waits of calls to the endpoint end early when it opens.

    Args:
        threshold: consecutive failures that open it; 0 never opens on failures.
        counts: which failures count (``counts_against_breaker``; a model's own breaker counts
            ``is_missing_model``).
    """

    def __init__(self, threshold: int, counts: Callable[[BaseException], bool] | None = None) -> None:
        self.threshold = threshold
        self._counts = counts or counts_against_breaker
        self.failures = 0
        self.reason: str | None = None
        self.kind = "circuit_open"
        self._opened = asyncio.Event()

    @property
    def open(self) -> bool:
        """Whether calls to the endpoint now end at once."""
        return self.reason is not None

    def success(self) -> None:
        """An answer came back: the endpoint works."""
        self.failures = 0

    def failure(self, exc: BaseException) -> None:
        """Count an attempt's failure; the ``threshold``-th in a row opens the breaker."""
        if not self._counts(exc):
            return
        self.failures += 1
        if self.threshold and self.failures >= self.threshold and not self.open:
            self.trip(f"{self.failures} consecutive infrastructure failures, the last: {exc}")

    def trip(self, reason: str, kind: str = "circuit_open") -> None:
        """Open now; every later call to the endpoint raises ``ProviderError(kind=kind)``."""
        if self.reason is None:
            self.reason, self.kind = reason, kind
            self._opened.set()

    def check(self, endpoint: str) -> None:
        """Raise the breaker's error when it is open.

        Raises:
            ProviderError: ``kind`` ``circuit_open`` (or ``fail_fast``), never retried.
        """
        if self.reason is not None:
            raise ProviderError(f"{endpoint}: no more calls: {self.reason}", kind=self.kind)

    async def nap(self, seconds: float) -> None:
        """Sleep ``seconds``, or less when the breaker opens meanwhile."""
        if seconds <= 0 or self.open:
            return
        with contextlib.suppress(asyncio.TimeoutError):
            await asyncio.wait_for(self._opened.wait(), timeout=seconds)


def counts_against_breaker(exc: BaseException) -> bool:
    """Infrastructure failures: timeouts, connection errors, 5xx, bad bodies, refused keys; not 429 or 4xx."""
    return not is_rate_limit(exc) and isinstance(exc, (TransientProviderError, AuthError))


def is_missing_model(exc: BaseException) -> bool:
    """HTTP 404: the endpoint has no such model (or no such route), and will not have it for the next case either.

    Counted by each model's own breaker, not the endpoint's: a misspelt model id must not stop the endpoint's
    other models. Other 4xx are left alone: a prompt too long, a parameter one case sets, fail that case only.
    """
    return isinstance(exc, ProviderError) and exc.status == 404


class Scope:
    """The live state of one scope's limits: its slots, buckets and the pause a 429 asked for.

    ``turn`` queues the calls that wait for the buckets (the oldest case first, ``RankedSlots``); a call holds it
    from its wait until it takes its tokens, just before it leaves (``AttemptGate.complete``), never while it is
    sent.
    """

    def __init__(self, name: str, limits: RateLimits, clock: Clock = time.monotonic) -> None:
        self.name = name
        self.limits = limits
        self.slots = RankedSlots(limits.concurrency) if limits.concurrency else None
        self.requests = TokenBucket(limits.rpm, clock) if limits.rpm else None
        self.tokens = TokenBucket(limits.tpm, clock) if limits.tpm else None
        self.turn = RankedSlots() if self.requests or self.tokens else None
        self.paused_until = 0.0
        self.clock = clock

    def pause(self, seconds: float) -> None:
        """Hold new attempts for ``seconds`` (the server's ``Retry-After`` on a 429)."""
        self.paused_until = max(self.paused_until, self.clock() + seconds)

    @property
    def paused(self) -> bool:
        """Whether a 429's pause holds new attempts now."""
        return self.paused_until > self.clock()

    async def wait_turn(self, tokens: int, breaker: CircuitBreaker, report: WaitReporter, rank: float = 0) -> None:
        """Wait out a pause, then take one request and ``tokens`` from the buckets."""
        await self.wait_pause(breaker, report)
        async with contextlib.AsyncExitStack() as held:
            await self.queue(held, tokens, report, rank)
            await self.wait_ready(tokens, breaker, report)
            self.take(tokens)

    async def wait_pause(self, breaker: CircuitBreaker, report: WaitReporter) -> None:
        """Wait out a 429's pause (ends early, raising, when the breaker opens)."""
        while (left := self.paused_until - self.clock()) > 0:
            with report("paused after HTTP 429", left):
                await breaker.nap(left)
            breaker.check(self.name)

    async def queue(self, held: contextlib.AsyncExitStack, tokens: int, report: WaitReporter, rank: float = 0) -> None:
        """Take this scope's ``turn`` until ``held`` closes; the calls queued for it are waiting, and say so.

        ``rank``: the call's case, oldest first (``RankedSlots``).
        """
        if self.turn is None:
            return
        if self.turn.locked():
            delay, why = self.wait_time(tokens)
            buckets = ((self.requests, "rpm"), (self.tokens, "tpm"))
            limit = next(f"{kind} limit {_rate(bucket)}" for bucket, kind in buckets if bucket is not None)
            # each call ahead of it in the queue (and the one holding the turn) leaves first, one bucket's
            # interval apart; calls of older cases that come later go ahead of it too
            ahead = self.turn.ahead_of(rank) + 1
            interval = max(60.0 / self.limits.rpm if self.limits.rpm else 0.0,
                           60.0 * tokens / self.limits.tpm if self.limits.tpm else 0.0)
            with report(f"{why or limit}, queued", delay + ahead * interval):  # one group on the line
                await self.turn.acquire(rank)
        else:
            await self.turn.acquire(rank)
        held.callback(self.turn.release)

    def wait_time(self, tokens: int) -> tuple[float, str | None]:
        """Seconds until the buckets let a call of ``tokens`` go, and which limit holds it (None: none)."""
        found: tuple[float, str | None] = (0.0, None)
        for bucket, amount, why in ((self.requests, 1, "rpm"), (self.tokens, tokens, "tpm")):
            if bucket is not None and (delay := bucket.wait_time(amount)) > found[0]:
                found = (delay, f"{why} limit {_rate(bucket)}")
        return found

    async def wait_ready(self, tokens: int, breaker: CircuitBreaker, report: WaitReporter) -> None:
        """Wait until the buckets let the call go, taking nothing (the caller holds ``turn``).

        In naps of at most ``RECHECK_S``: an answer's usage gives back what a tpm estimate took too much.
        """
        while True:
            delay, why = self.wait_time(tokens)
            if delay <= 0:
                return
            with report(why or "rate limit", delay):
                await breaker.nap(min(delay, RECHECK_S))
            breaker.check(self.name)

    def take(self, tokens: int) -> None:
        """Take one request and ``tokens`` from the buckets: the call leaves now."""
        if self.requests is not None:
            self.requests.take(1)
        if self.tokens is not None:
            self.tokens.take(tokens)

    def give_back(self, tokens: int) -> None:
        """Return ``tokens`` of a call's estimate that it did not use (negative: take more)."""
        if self.tokens is not None:
            self.tokens.give_back(tokens)


class CasePlaces:
    """The places of the cases starting and at work (``--bench-concurrency``): a new case takes one to start.

    A case whose call waits for its limits (a 429's pause, an rpm or tpm bucket, a model's or an endpoint's slot,
    the wait before a retry) gives its place to the next case, and goes on without one (``CaseSlot``): a case kept
    its place while it waited, and when most places waited for one model, the other models' cases could not start.
    It does not take a place again: waiting for one while holding a bucket's turn or a slot, behind cases that
    waited for that turn while holding places, could stop the run, and it would wait behind the cases started in
    the meantime. Calls stay bounded: every attempt still takes one of the session's call slots.

    Args:
        size: how many cases may start and work at once while none waits.
    """

    def __init__(self, size: int) -> None:
        self.free = RankedSlots(size)  # a case taking its place again goes ahead of the cases not started yet
        self.waiting = 0  # running cases that gave their place up when a call of theirs waited
        self.on_let_go: Callable[[], None] | None = None  # told (in the loop) each time a case lets its place go
        # held while a case waits to take its place again (progress: ``RunStatus.waiting_for_place``)
        self.report_wait: Callable[[], contextlib.AbstractContextManager[object]] = contextlib.nullcontext
        self._ranks = itertools.count()

    def slot(self, gives: bool = True) -> CaseSlot:
        """A new case's place, not taken yet, ranked after every case's before it.

        ``gives``: whether the case gives its place up while a call of its waits (not under a wall budget: started
        ahead to wait for a limit, cases spent their budget queuing, ``--bench-case-timeout``).
        """
        return CaseSlot(self, next(self._ranks), gives)


class CaseSlot:
    """One case's place among ``CasePlaces``: taken as it starts, given up for good when a call of its waits.

    ``rank`` orders its calls among those of other cases that wait for the same limits: the case started first
    goes first (``RankedSlots``).
    """

    def __init__(self, places: CasePlaces, rank: int = 0, gives: bool = True) -> None:
        self._places = places
        self.rank = rank
        self.gives = gives
        self.held = False
        self._let_go = False

    async def take(self) -> None:
        """Wait for a place as the case starts."""
        await self._places.free.acquire(self.rank)
        self.held = True

    async def take_again(self) -> None:
        """Hold a place from now on (to run an agent's program): one taken again first if the case gave its up.

        It waits for it ahead of the cases not started yet, and keeps it until a call of its waits again. It holds
        nothing else meanwhile (no call slot, no bucket's turn), so waiting for a place cannot stop the run. While
        it waits, ``CasePlaces.report_wait`` is held (a free place is taken at once: nothing is reported).
        """
        if not self.held and self._let_go:
            free = self._places.free
            with self._places.report_wait() if free.locked() else contextlib.nullcontext():
                await free.acquire(self.rank)
            self.held, self._let_go = True, False
            self._places.waiting -= 1

    def let_go(self) -> None:
        """Give the place to the next case: a call of this one waits for its limits (nothing if it has none)."""
        if not self.held or not self.gives:
            return
        self.held, self._let_go = False, True
        self._places.free.release()
        self._places.waiting += 1
        if self._places.on_let_go is not None:
            self._places.on_let_go()

    def end(self) -> None:
        """The case is over: its place, or its count among the waiting, goes."""
        if self.held:
            self.held = False
            self._places.free.release()
        elif self._let_go:
            self._let_go = False
            self._places.waiting -= 1


def _rate(bucket: TokenBucket) -> str:
    return f"{bucket.rate * 60:g}/min"


def estimate_tokens(request: CompletionRequest) -> int:
    """What a call will count against a tpm limit before it is made: prompt characters / 4 plus ``max_tokens``.

    The runner corrects its buckets with the usage the endpoint reports.
    """
    characters = sum(len(message.content) for message in request.messages)
    params = {**request.model.params, **request.params}
    answer = params.get("max_tokens") or params.get("max_completion_tokens") or 0
    return math.ceil(characters / 4) + (answer if isinstance(answer, int) else 0)


class SessionBudget:
    """What the session's calls cost so far, against ``--bench-budget-usd`` and ``--bench-budget-tokens``.

    Checked before each case starts: once spent, no new case starts (calls of cases already running
    finish). Calls without a price add tokens but no dollars; the reason says how many there were. A dollar
    budget cannot bound a paid endpoint whose price is unknown: its first such call ends the budget as if spent,
    naming the model and the fix (a server of one's own, with no public price, is not counted and not stopped).

    Args:
        usd: dollars the session may spend; None: no limit.
        tokens: input plus output tokens the session may use; None: no limit.
        processes: how many processes share the session's budget in equal parts (xdist workers): ``usd``
            and ``tokens`` are this one's part, and its messages say so.
    """

    def __init__(self, usd: float | None = None, tokens: int | None = None, processes: int = 1) -> None:
        self.usd, self.tokens, self.processes = usd, tokens, processes
        self.spent_usd = 0.0
        self.spent_tokens = 0
        self.unpriced_calls = 0
        self.uncountable: str | None = None  # why a call of a paid endpoint had no price, once one had none

    def add(self, cost: Cost, usage: Usage) -> None:
        """Count one call's cost and tokens."""
        if cost.usd is not None:
            self.spent_usd += cost.usd
        elif cost.note:
            self.unpriced_calls += 1
            if not cost.local and self.uncountable is None:
                self.uncountable = cost.note
        self.spent_tokens += (usage.input_tokens or 0) + (usage.output_tokens or 0)

    def exhausted(self) -> str | None:
        """Why no new case may start, or None while the budget lasts."""
        if self.usd is not None and self.uncountable is not None:
            return (f"{self._budget(f'${self.usd:g}')} cannot count calls without a price: {self.uncountable} "
                    "(or bound the run with --bench-budget-tokens; --bench-budget-usd)")
        if self.usd is not None and self.spent_usd >= self.usd:
            unpriced = f"; {self.unpriced_calls} calls had no price" if self.unpriced_calls else ""
            return f"{self._budget(f'${self.usd:g}')} is spent (${self.spent_usd:.4f}{unpriced}; --bench-budget-usd)"
        if self.tokens is not None and self.spent_tokens >= self.tokens:
            spent = f"{self._budget(f'{self.tokens} tokens')} is spent"
            return f"{spent} ({self.spent_tokens}; --bench-budget-tokens)"
        return None

    def _budget(self, share: str) -> str:
        """The budget a message names: the session's, or under xdist this worker's share of it."""
        if self.processes <= 1:
            return f"the session budget of {share}"
        return f"this worker's share of the session budget ({share}, one of {self.processes} equal shares)"
