"""Each attempt of a model call waits its turn: rate and concurrency limits, the breaker, 429 pauses.

``complete_with_retries`` decides whether and when to try again; what one attempt must wait for,
and what its outcome tells the endpoint's shared state, is here, so retries and limits stay apart.
"""

from __future__ import annotations

import asyncio
import contextlib
from dataclasses import dataclass, field

from bench_plugin.calls.call_log import CallEntry
from bench_plugin.calls.rate_limits import (
    CaseSlot,
    CircuitBreaker,
    RankedSlots,
    Scope,
    estimate_tokens,
    is_missing_model,
)
from bench_plugin.calls.retry import DEFAULT_MAX_WAIT_S, seconds_text
from bench_plugin.calls.run_status import RunStatus
from bench_plugin.core.chat import Completion, CompletionRequest
from bench_plugin.core.endpoints import ProviderSpec
from bench_plugin.core.errors import ProviderError, is_rate_limit
from bench_plugin.providers.interface import Provider


@dataclass
class Endpoint:
    """One endpoint's shared state: its limits and its circuit breakers (``key``: its connection key)."""

    key: str
    name: str
    scope: Scope
    breaker: CircuitBreaker
    models: dict[str, CircuitBreaker] = field(default_factory=dict)  # model id -> its breaker (``model_breaker``)

    def model_breaker(self, model_id: str) -> CircuitBreaker:
        """The breaker of one of the endpoint's models: as many 404s in a row as open the endpoint's end its calls."""
        if model_id not in self.models:
            self.models[model_id] = CircuitBreaker(self.breaker.threshold, counts=is_missing_model)
        return self.models[model_id]


class AttemptGate:
    """The provider as ``complete_with_retries`` sees it for one call: each attempt waits its turn.

    An attempt takes the model's and the endpoint's concurrency slots and rate limits, then one of the
    session's slots (``--bench-concurrency``); see ``complete`` for the order. It counts in the call's entry and
    tells the breakers how it went: the endpoint's, and the model's own, which only a model the endpoint
    does not have (HTTP 404) opens. A 429 pauses the model's calls for what the server asked (under
    ``fail_fast`` it opens the endpoint's breaker instead).

    Args:
        provider: the endpoint's provider.
        endpoint: the endpoint's shared state.
        model: the model's limits on that endpoint.
        entry: where the call's attempts are counted.
        session_slots: the session-wide cap on calls in flight.
        status: where waits are shown.
        fail_fast: a 429 ends the endpoint's calls (``--bench-fail-fast``).
        case_slot: the place of the call's case among the cases at work: given to the next case when the call
            waits for the model's or the endpoint's limits (or between attempts). Its rank puts the call ahead of
            those of cases started after it in every queue (None: a call outside any case, first).
    """

    def __init__(
        self,
        provider: Provider,
        endpoint: Endpoint,
        model: Scope,
        entry: CallEntry,
        *,
        session_slots: RankedSlots | None,
        status: RunStatus,
        fail_fast: bool = False,
        case_slot: CaseSlot | None = None,
    ) -> None:
        self._provider, self._endpoint, self._model, self._entry = provider, endpoint, model, entry
        self._session_slots, self._status, self._fail_fast = session_slots, status, fail_fast
        self._case_slot = case_slot
        self._rank = case_slot.rank if case_slot is not None else -1
        self.spec: ProviderSpec = provider.spec
        self._why = "retry"

    async def complete(self, request: CompletionRequest) -> Completion:
        """One attempt, once the limits let it go.

        From the narrowest scope out: the model's slot, its pause, its turn at its buckets and their wait, then
        the endpoint's slot, turn and wait, then the session's slot; the tokens are taken only then, just
        before the call leaves, and the turns let go as it is sent. So calls queued for a slot do not save up
        tokens and leave in a burst, a rate-limited or paused model never holds its endpoint's slots while it
        waits, and an endpoint never holds the session's. A 429 that came while the call waited sends it back
        to wait out the pause, its slots let go.
        """
        endpoint, breaker, model_scope = self._endpoint, self._endpoint.breaker, self._model
        model = endpoint.model_breaker(request.model.id)
        tokens = estimate_tokens(request) if endpoint.scope.tokens or model_scope.tokens else 0
        while True:
            async with contextlib.AsyncExitStack() as held:
                breaker.check(endpoint.name)
                model.check(model_scope.name)
                await self._hold(held, model_scope.slots)
                self._check_pause(request)
                await model_scope.wait_pause(breaker, self._model_report)
                async with contextlib.AsyncExitStack() as turns:  # let go once the tokens are taken
                    await model_scope.queue(turns, tokens, self._model_report, self._rank)
                    await model_scope.wait_ready(tokens, breaker, self._model_report)
                    await self._hold(held, endpoint.scope.slots)
                    await endpoint.scope.queue(turns, tokens, self._report, self._rank)
                    await endpoint.scope.wait_ready(tokens, breaker, self._report)
                    await _hold(held, self._session_slots, self._rank)
                    if model_scope.paused:
                        continue  # its slots and turns go back while it waits
                    self._refuse_when_stopped()
                    breaker.check(endpoint.name)
                    model.check(model_scope.name)
                    model_scope.take(tokens)
                    endpoint.scope.take(tokens)
                self._entry.attempts += 1
                try:
                    with self._status.calling():
                        completion: Completion = await self._provider.complete(request)
                except BaseException as exc:
                    # an attempt that got no answer counted no token: its estimate goes back (left taken, one
                    # 429 held the model for max_tokens / rate, 8 s for 4096 at 30,000 tpm)
                    for scope in (endpoint.scope, model_scope):
                        scope.give_back(tokens)
                    if isinstance(exc, Exception):
                        model.failure(exc)
                        self._failed(exc)
                    raise
                break
        breaker.success()
        model.success()
        used = (completion.usage.input_tokens or 0) + (completion.usage.output_tokens or 0)
        if used:
            for scope in (endpoint.scope, model_scope):
                scope.give_back(tokens - used)  # the estimate, corrected by what the endpoint counted
        return completion

    def _refuse_when_stopped(self) -> None:
        """A stopped run (Ctrl-C, SIGTERM) sends nothing more, right up to the send: a resumed one pays for none.

        Raises:
            asyncio.CancelledError: the run is stopping; the case is cancelled, as the runner's close would.
        """
        if self._status.calls_stopped:
            raise asyncio.CancelledError("the run is stopping (Ctrl-C, SIGTERM): the call was not sent")

    def _check_pause(self, request: CompletionRequest) -> None:
        """Give up at once when the model's 429 pause lasts longer than a call may wait (``max_wait``).

        The call that met the 429 gave up (an exhausted daily quota asks for hours); the model's other calls
        sat out the whole pause instead.

        Raises:
            ProviderError: ``kind`` ``http_429``, not retried: no request was sent.
        """
        left = self._model.paused_until - self._model.clock()
        max_wait = self.spec.max_wait_s or DEFAULT_MAX_WAIT_S
        if left > max_wait:
            raise ProviderError(
                f"{self._model.name}: no call sent: the model is paused for {seconds_text(left)} s more after an "
                f"HTTP 429, longer than the {seconds_text(max_wait)} s a call may wait (max_wait)",
                status=429, kind="http_429")

    def _failed(self, exc: Exception) -> None:
        self._endpoint.breaker.failure(exc)
        if not is_rate_limit(exc):
            return
        if self._fail_fast:
            self._endpoint.breaker.trip(f"rate limited (HTTP 429) under --bench-fail-fast: {exc}", "fail_fast")
        elif isinstance(exc, ProviderError) and exc.retry_after:
            self._model.pause(exc.retry_after)

    def _report(self, why: str, seconds: float, who: str | None = None) -> contextlib.AbstractContextManager[object]:
        """Show a wait of the call's limits, under the endpoint's name (or ``who``); its case lets its place go."""
        if self._case_slot is not None:
            self._case_slot.let_go()
        return self._status.waiting(who or self._endpoint.name, why, seconds)

    def _model_report(self, why: str, seconds: float) -> contextlib.AbstractContextManager[object]:
        """A wait of the model's own limits (its pause, its buckets, a retry), shown as ``endpoint/model-id``."""
        return self._report(why, seconds, self._model.name)

    async def _hold(self, held: contextlib.AsyncExitStack, slot: RankedSlots | None) -> None:
        """Take a slot of the model or of the endpoint; a case that must wait for it lets its place go."""
        if slot is not None and slot.locked() and self._case_slot is not None:
            self._case_slot.let_go()
        await _hold(held, slot, self._rank)

    def on_retry(self, exc: Exception, delay: float, attempts: int) -> None:
        """Name the wait that follows a failed attempt, for the progress line."""
        if is_rate_limit(exc):
            asked = getattr(exc, "retry_after", None)
            self._why = "HTTP 429, backing off" if asked is None else f"HTTP 429, server asked {seconds_text(asked)} s"
        else:
            self._why = f"retry {attempts + 1} after {getattr(exc, 'kind', type(exc).__name__)}"

    async def sleep(self, delay: float) -> None:
        """Wait before the next attempt; cut short when the endpoint's breaker opens."""
        with self._model_report(self._why, delay):
            await self._endpoint.breaker.nap(delay)

    def should_retry(self, exc: BaseException) -> bool:
        """As the provider says."""
        return self._provider.should_retry(exc)

    def connection_key(self) -> str:
        """As the provider says."""
        return self._provider.connection_key()

    def max_concurrency(self) -> int | None:
        """As the provider says."""
        return self._provider.max_concurrency()

    async def aclose(self) -> None:
        """Nothing: the runner closes the provider itself."""
        return None


async def _hold(held: contextlib.AsyncExitStack, slot: RankedSlots | None, rank: float) -> None:
    """Take ``slot`` (None: no cap) until ``held`` closes, behind the waiting calls of cases older than ``rank``."""
    if slot is not None:
        await slot.acquire(rank)
        held.callback(slot.release)
