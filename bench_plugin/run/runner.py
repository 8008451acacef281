"""The runner: one background event loop that keeps many cases in flight and owns every model call.

pytest runs items one by one on the main thread; each item waits on its own future while the loop
works ahead on the cases submitted after deselection (see ``schedule.py``). Providers and their
httpx clients live inside this loop and are reused across cases (measured fastest in
``design/pytest-concurrency.md``). Every call passes the limits of ``limits.py`` and the retries of
``providers/retry.py`` here, and is written into its case's ``CallLog``. The response cache (``cache.py``)
answers a call before it takes a slot, a rate-limit token or a share of the budget.
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import selectors
import sys
import threading
import time
from collections import Counter
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass, field, replace
from pathlib import Path
from typing import Any

from bench_plugin.calls.attempts import AttemptGate, Endpoint
from bench_plugin.calls.cache import HIT_COST, OFF, ResponseCache, cache_key, is_cacheable
from bench_plugin.calls.call_log import CallEntry, CallLog
from bench_plugin.calls.embedding_calls import EmbeddingCall, can_embed
from bench_plugin.calls.pricing import call_cost
from bench_plugin.calls.rate_limits import (
    CasePlaces,
    CaseSlot,
    CircuitBreaker,
    RankedSlots,
    RateLimits,
    Scope,
    SessionBudget,
    shared_by,
)
from bench_plugin.calls.retry import DEFAULT_MAX_WAIT_S, complete_with_retries
from bench_plugin.calls.run_status import RunStatus
from bench_plugin.core.chat import Completion, CompletionRequest, EmbeddingRequest, Embeddings
from bench_plugin.core.endpoints import ProviderSpec
from bench_plugin.core.errors import CaseError, ProviderError
from bench_plugin.core.places import placed
from bench_plugin.core.registry import Registry
from bench_plugin.providers.http import HttpPool
from bench_plugin.providers.interface import Provider, apply_system_policy
from bench_plugin.providers.registry import PROVIDER_TYPES, ProviderFactory, create_provider
from bench_plugin.results import record as rec
from bench_plugin.results.journal import CaseJournal
from bench_plugin.results.record import CaseRecord
from bench_plugin.run.case import PreparedCase, build_record, execute_case
from bench_plugin.run.load_steps import LoadGates, stamp

_SHUTDOWN_TIMEOUT_S = 5.0
TICK_S = 0.25
"""How often the main thread, waiting for a case, lets the progress display draw."""
QUIET_S = 0.002
"""How long the loop must have been waiting on its connections, with nothing else to do, to count as quiet."""
BREAKER_THRESHOLD = 10
"""Consecutive failures that open an endpoint's breaker by default: this, or twice the calls it may have in
flight when that is more, so that one burst of calls failing together (a network blip) does not open it."""


@dataclass(frozen=True)
class RunnerSettings:
    """How calls are bounded: the ``--bench-*`` call options, checked (``options.py``).

    ``provider_limits`` and ``model_limits`` override the suite's keys by provider and model name
    (``concurrency``, ``rpm``, ``tpm``; providers also ``timeout``, ``max_retries``, ``max_wait``).
    ``on_wait`` is told how long the main thread has waited for a case, every ``TICK_S``.
    ``cache_mode`` is ``--bench-cache`` (``off`` here: a Runner made in code caches only when asked) and
    ``cache_dir`` the folder of its file. ``processes`` is how many processes keep to these limits together
    (the xdist workers): each keeps to an equal share of every provider's and model's limits. ``journal``: a
    named run's file where each case's record goes the moment it finishes (``journal.py``). ``stream``
    (--bench-stream): every provider streams its answers (``providers/streaming.py``).
    """

    provider_limits: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    model_limits: Mapping[str, Mapping[str, float]] = field(default_factory=dict)
    fail_fast: bool = False
    breaker_threshold: int | None = None
    call_timeout_s: float | None = None
    case_timeout_s: float | None = None
    budget_usd: float | None = None
    budget_tokens: int | None = None
    status: RunStatus = field(default_factory=RunStatus)
    on_wait: Callable[[float], None] | None = None
    cache_mode: str = OFF
    cache_dir: Path | None = None
    processes: int = 1
    journal: Path | None = None
    stream: bool = False


class _QuietSelector(selectors.DefaultSelector):
    """The loop's selector, noting since when the loop has been waiting for I/O with nothing else to do."""

    def __init__(self) -> None:
        super().__init__()
        self.waiting_since: float | None = None  # time.monotonic() of the current wait, None while the loop works

    def select(self, timeout: float | None = None) -> list[tuple[selectors.SelectorKey, int]]:
        if timeout is None or timeout > 0:  # 0: the loop only looks, it has callbacks ready to run
            self.waiting_since = time.monotonic()
        try:
            return super().select(timeout)
        finally:
            self.waiting_since = None


class _CaseFuture(concurrent.futures.Future[CaseRecord]):
    """A case's future whose ``result()`` lets the progress display draw while the main thread waits."""

    def __init__(self, on_wait: Callable[[float], None] | None) -> None:
        super().__init__()
        self._on_wait = on_wait

    def result(self, timeout: float | None = None) -> CaseRecord:
        if timeout is not None or self._on_wait is None:
            return super().result(timeout)
        started = time.monotonic()
        while True:
            try:
                return super().result(TICK_S)
            except concurrent.futures.TimeoutError:
                if self.done():  # the case itself ended in a TimeoutError
                    raise
                with contextlib.suppress(Exception):  # progress on the terminal never fails a case
                    self._on_wait(time.monotonic() - started)


class Runner:
    """Runs cases concurrently on a daemon thread's event loop.

    Args:
        concurrency: most cases (and model calls) in flight at once (``--bench-concurrency``).
        provider_types: the provider types by name.
        settings: limits, retries, budgets and progress (``RunnerSettings``).
    """

    def __init__(
        self,
        concurrency: int = 16,
        provider_types: Registry[ProviderFactory] = PROVIDER_TYPES,
        settings: RunnerSettings | None = None,
    ) -> None:
        self.concurrency = concurrency
        self.settings = settings or RunnerSettings()
        self.budget = SessionBudget(self.settings.budget_usd, self.settings.budget_tokens, self.settings.processes)
        self._provider_types = provider_types
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._places: CasePlaces | None = None  # the cases in flight: made with the loop
        self.on_case_waits: Callable[[], None] | None = None  # told, in the loop, when a case lets its place go
        self.call_slots: RankedSlots | None = None
        self._http: HttpPool | None = None
        self._specs: dict[ProviderSpec, ProviderSpec] = {}
        self._providers: dict[ProviderSpec, Provider] = {}
        self._endpoints: dict[str, Endpoint] = {}
        self._declared: set[ProviderSpec] = set()  # every endpoint the planned cases may call (``declare``)
        self._model_scopes: dict[tuple[str, str, str], Scope] = {}
        self._futures: set[concurrent.futures.Future[CaseRecord]] = set()
        self._starts: list[Callable[[], None]] = []  # cases submitted that the loop has not taken yet (_take_starts)
        self._selector: _QuietSelector | None = None  # the loop's, made with it (see ``wait_until_quiet``)
        mode, folder = self.settings.cache_mode, self.settings.cache_dir
        self.cache = ResponseCache(folder, mode) if mode != OFF and folder is not None else None
        self.journal = CaseJournal(self.settings.journal) if self.settings.journal is not None else None
        # calls in flight by cache key: an identical call waits for the answer instead of paying for another one
        self._answering: dict[str, asyncio.Future[Completion | None]] = {}
        self._load_gates = LoadGates()

    def declare(self, specs: Iterable[ProviderSpec]) -> None:
        """Name the endpoints the planned cases call, before the first call.

        Providers that share a server keep the strictest of their limits, whichever of them is called first (a
        ``--bench-rate-limit`` on either holds); before, the first one called set them.
        """
        self._declared.update(specs)

    def submit(self, case: PreparedCase, nodeid: str) -> concurrent.futures.Future[CaseRecord]:
        """Start a case now; the future resolves to its record (it never raises for case problems)."""
        loop = self._ensure_started()
        future = _CaseFuture(self.settings.on_wait)

        def start() -> None:
            if future.cancelled():
                return
            task = loop.create_task(self._run_case(case, nodeid))
            task.add_done_callback(lambda done: _settle(future, done))
            future.add_done_callback(lambda f: _cancel_soon(loop, task) if f.cancelled() else None)

        self._futures.add(future)
        future.add_done_callback(self._futures.discard)
        with self._lock:
            self._starts.append(start)
            wake = len(self._starts) == 1
        if wake:  # one wake-up for every case submitted until the loop takes them
            loop.call_soon_threadsafe(self._take_starts)
        return future

    def _take_starts(self) -> None:
        """Start, in the loop, every case submitted since it last looked.

        Waking the loop once per case cost the main thread a write to the loop's self-pipe each, and handed the
        GIL back and forth: the first window of 128 cases took 12-22 ms to submit, one wake-up per case.
        """
        with self._lock:
            starts, self._starts = self._starts, []
        for start in starts:
            start()

    @property
    def waiting_cases(self) -> int:
        """Running cases that let their place go while their calls wait for their limits (``limits.CasePlaces``)."""
        return self._places.waiting if self._places is not None else 0

    async def _run_case(self, case: PreparedCase, nodeid: str) -> CaseRecord:
        assert self._places is not None
        status = self.settings.status
        # a case with a wall budget keeps its place while it waits: its clock runs from its start, and started
        # ahead to wait for a limit it would spend its budget queuing (``--bench-case-timeout``)
        slot = self._places.slot(gives=not self.settings.case_timeout_s)
        await slot.take()
        try:
            spent = self.budget.exhausted()
            if spent is not None:  # the session budget is spent: no new case starts
                record = build_record(case.spec, nodeid, rec.SKIPPED, f"not run: {spent}",
                                      error={"kind": "budget", "type": "BudgetExhausted", "message": spent})
                status.case_finished(record.status, ran=False)
                return record
            if status.calls_stopped:  # Ctrl-C or SIGTERM came: the case is left for a resumed run
                raise asyncio.CancelledError("the run is stopping")
            status.case_started()
            log = CallLog()
            repeats: Counter[str] = Counter()  # identical calls of this case, each its own cache entry
            deadline = time.monotonic() + self.settings.case_timeout_s if self.settings.case_timeout_s else None

            async def call(request: CompletionRequest) -> Completion:
                return await self._bounded_call(request, log.start(request), deadline, repeats, slot)

            async def embed(request: EmbeddingRequest) -> Embeddings:
                return await self._bounded_embed(request, log, deadline, slot)

            with placed(slot.take_again):  # an agent's programs run in a place (``places.take_place``)
                async with self._load_gates.turn(case.spec.path, case.spec.load):  # a latency benchmark's step
                    started = time.time()
                    record = await execute_case(case, nodeid, call, calls=log, embed=embed)
                    record = stamp(record, case.spec.load, started, time.time())
            if self.journal is not None:
                self.journal.write(record)
            status.case_finished(record.status)
            return record
        finally:
            slot.end()

    async def call_model(self, request: CompletionRequest) -> Completion:
        """Make one model call outside any case (every case's calls also come through ``_call``)."""
        return await self._call(request, CallEntry.of(request))

    async def _bounded_call(
        self, request: CompletionRequest, entry: CallEntry, deadline: float | None, repeats: Counter[str] | None = None,
        slot: CaseSlot | None = None,
    ) -> Completion:
        """One call of a case, cut off when the case's wall budget (``--bench-case-timeout``) runs out."""
        if deadline is None:
            return await self._call(request, entry, repeats, slot)
        try:
            return await asyncio.wait_for(self._call(request, entry, repeats, slot),
                                          timeout=max(0.0, deadline - time.monotonic()))
        except asyncio.TimeoutError:
            message = (f"the case's wall budget of {self.settings.case_timeout_s:g} s ran out during a call "
                       f"to {request.model.name}")
            entry.error = ProviderError(message, kind="case_timeout")
            raise entry.error from None

    async def _call(
        self, request: CompletionRequest, entry: CallEntry, repeats: Counter[str] | None = None,
        slot: CaseSlot | None = None,
    ) -> Completion:
        """Applies the model's system policy, the response cache, the limits of its endpoint and model, and retries.

        ``repeats`` counts the case's calls by cache key, so that identical calls of one case stay apart. ``slot``:
        the case's place among the cases in flight, let go while the call waits (``limits.CaseSlot``).
        """
        prepared = replace(request, messages=apply_system_policy(request.messages, request.model))
        key = self._cache_key(prepared, entry, repeats)
        if key is not None and (hit := await self._cached_answer(key, slot)) is not None:
            entry.cache, entry.completion, entry.cost = rec.CACHE_HIT, hit, HIT_COST
            return hit
        answered = None  # for identical calls meanwhile; after a failure, each waiter calls for itself
        if key is not None and self.cache is not None and self.cache.writes and key not in self._answering:
            answered = self._answering[key] = asyncio.get_running_loop().create_future()
        try:
            completion = await self._call_endpoint(request, prepared, entry, slot)
        except BaseException:
            if entry.cache == rec.CACHE_REFRESH:
                entry.cache = None  # nothing was stored
            raise
        finally:
            if key is not None and answered is not None:
                del self._answering[key]
                answered.set_result(entry.completion if entry.error is None else None)
        if key is not None and self.cache is not None:  # answers only: a failed call raised above
            self.cache.put(key, completion, request.model.provider.name, request.model.id)
        return completion

    async def _cached_answer(self, key: str, slot: CaseSlot | None = None) -> Completion | None:
        """The cache's answer to a call, or that of an identical call in flight (its answer is stored for both).

        Two cases that make the same call (two models' identical answers before a judge, two tasks with one
        prompt) got two answers, and the cache kept the last: a re-run then replayed a verdict the first run had
        not recorded for one of them. Now the second waits for the first's answer, as it would find it stored.
        """
        assert self.cache is not None
        hit = self.cache.get(key)
        while hit is None and self.cache.writes and (answered := self._answering.get(key)) is not None:
            if slot is not None and not answered.done():
                slot.let_go()  # the call it waits for may itself wait for its limits
            completion = await asyncio.shield(answered)  # a waiter cut short leaves the call alone
            if completion is None:
                return None  # it failed (failures are never shared): this call tries for itself
            hit = replace(completion, attempts=0, cached=True, ttft_s=None, tokens_per_s=None, itl_s=None)
        return hit

    async def _call_endpoint(
        self, request: CompletionRequest, prepared: CompletionRequest, entry: CallEntry, slot: CaseSlot | None = None
    ) -> Completion:
        """The call itself: the limits of its endpoint and model, retries, its cost and the session's budget."""
        spec = self._effective(request.model.provider)
        provider = self._provider(spec)
        endpoint = self._endpoint(provider, spec)
        attempts = AttemptGate(provider, endpoint, self._model_scope(endpoint, request), entry,
                               session_slots=self.call_slots, status=self.settings.status,
                               fail_fast=self.settings.fail_fast, case_slot=slot)
        try:
            completion = await complete_with_retries(
                attempts, prepared, max_retries=spec.max_retries, max_wait=spec.max_wait_s or DEFAULT_MAX_WAIT_S,
                retry_rate_limits=not self.settings.fail_fast, sleep=attempts.sleep, on_retry=attempts.on_retry,
            )
        except Exception as exc:
            entry.error = exc
            raise
        except asyncio.CancelledError:  # a time budget (the case's, an agent's) or Ctrl-C cut the call short
            entry.error = ProviderError("the call was cancelled before it answered", kind="cancelled")
            raise
        entry.completion = completion
        entry.cost = call_cost(request.model, completion.usage)
        self.budget.add(entry.cost, completion.usage)
        return completion

    def _cache_key(self, request: CompletionRequest, entry: CallEntry, repeats: Counter[str] | None) -> str | None:
        """The call's key when the cache is in use for it (an HTTP provider), noting in ``entry`` what it does."""
        if self.cache is None or not is_cacheable(request.model.provider):
            return None
        first = cache_key(request)
        occurrence = 0
        if repeats is not None:
            occurrence = repeats[first]
            repeats[first] += 1
        entry.cache = rec.CACHE_MISS if self.cache.reads else rec.CACHE_REFRESH
        return cache_key(request, occurrence) if occurrence else first

    async def _bounded_embed(
        self, request: EmbeddingRequest, log: CallLog, deadline: float | None, slot: CaseSlot | None = None
    ) -> Embeddings:
        """An embedding call of a case (a ``similar`` scorer's): a completion's limits, retries, log and budget.

        ``embedding_calls.EmbeddingCall`` lets the completion path carry it; the response cache does not.
        """
        spec = self._effective(request.model.provider)
        provider = self._provider(spec)
        if not can_embed(provider):
            raise CaseError(f"model '{request.model.name}' cannot embed texts: its provider type "
                            f"{spec.type!r} has no embeddings endpoint here (use an openai_compatible provider)")
        embedding = EmbeddingCall(provider, request)
        entry = log.start(embedding.stand_in)
        endpoint = self._endpoint(provider, spec)
        attempts = AttemptGate(embedding, endpoint, self._model_scope(endpoint, embedding.stand_in), entry,
                               session_slots=self.call_slots, status=self.settings.status,
                               fail_fast=self.settings.fail_fast, case_slot=slot)
        calling = complete_with_retries(
            attempts, embedding.stand_in, max_retries=spec.max_retries, max_wait=spec.max_wait_s or DEFAULT_MAX_WAIT_S,
            retry_rate_limits=not self.settings.fail_fast, sleep=attempts.sleep, on_retry=attempts.on_retry,
        )
        try:
            timeout = None if deadline is None else max(0.0, deadline - time.monotonic())
            completion = await asyncio.wait_for(calling, timeout=timeout)
        except Exception as exc:
            if deadline is not None and isinstance(exc, asyncio.TimeoutError) and time.monotonic() >= deadline:
                entry.error = ProviderError(f"the case's wall budget of {self.settings.case_timeout_s:g} s ran out "
                                            f"during an embedding call to {request.model.name}", kind="case_timeout")
                raise entry.error from None
            entry.error = exc
            raise
        except asyncio.CancelledError:
            entry.error = ProviderError("the call was cancelled before it answered", kind="cancelled")
            raise
        entry.completion = completion
        entry.cost = call_cost(request.model, completion.usage)
        self.budget.add(entry.cost, completion.usage)
        return embedding.answer(completion)

    def _effective(self, spec: ProviderSpec) -> ProviderSpec:
        """The provider spec with the command line's overrides (``--bench-rate-limit``, ``--bench-timeout``)."""
        if spec not in self._specs:
            given: dict[str, Any] = dict(self.settings.provider_limits.get(spec.name, {}))
            if self.settings.call_timeout_s is not None:
                given.setdefault("timeout", self.settings.call_timeout_s)
            if self.settings.stream:  # --bench-stream (a model's own ``stream:`` still wins: streaming.wants_stream)
                given["stream"] = True
            names = {"timeout": "timeout_s", "max_wait": "max_wait_s"}
            fields = {names.get(key, key): value for key, value in given.items()}
            for key in ("concurrency", "max_retries"):
                if key in fields:
                    fields[key] = int(fields[key])
            self._specs[spec] = replace(spec, **fields)
        return self._specs[spec]

    def _provider(self, spec: ProviderSpec) -> Provider:
        if spec not in self._providers:  # specs are deep-frozen, so equal endpoints share one provider
            assert self._http is not None, "the loop thread makes the pool before any call"
            self._providers[spec] = create_provider(spec, self._http, self._provider_types)
        return self._providers[spec]

    def _endpoint(self, provider: Provider, spec: ProviderSpec) -> Endpoint:
        key = provider.connection_key()
        if key not in self._endpoints:  # the strictest limits of the providers on this server (``declare``)
            limits = strictest([provider, *self._sharing(key, spec.type)])
            limits = shared_by(limits, self.settings.processes)
            threshold = self.settings.breaker_threshold
            if threshold is None:
                threshold = max(BREAKER_THRESHOLD, 2 * min(limits.concurrency or self.concurrency, self.concurrency))
            self._endpoints[key] = Endpoint(key, spec.name, Scope(spec.name, limits), CircuitBreaker(threshold))
        return self._endpoints[key]

    def _sharing(self, key: str, kind: str) -> list[Provider]:
        """The declared providers of type ``kind`` on the server ``key`` (one that cannot be made fails its cases)."""
        found = []
        for spec in self._declared:
            if spec.type == kind:
                with contextlib.suppress(Exception):
                    provider = self._provider(self._effective(spec))
                    if provider.connection_key() == key:
                        found.append(provider)
        return found

    def _model_scope(self, endpoint: Endpoint, request: CompletionRequest) -> Scope:
        model = request.model
        # by name too: two of a suite's models may share an id (two temperatures, a model its own judge), each
        # with its own limits
        key = (endpoint.key, model.id, model.name)
        if key not in self._model_scopes:
            given = {"concurrency": model.concurrency, "rpm": model.rpm, "tpm": model.tpm,
                     # --bench-model-rate-limit names a model as the suite does, or as provider:model-id
                     **self.settings.model_limits.get(f"{model.provider.name}:{model.id}", {}),
                     **self.settings.model_limits.get(model.name, {})}
            concurrency = int(given["concurrency"]) if given["concurrency"] else None
            limits = shared_by(RateLimits(concurrency, given["rpm"], given["tpm"]), self.settings.processes)
            self._model_scopes[key] = Scope(f"{endpoint.name}/{model.id}", limits)
        return self._model_scopes[key]

    def _ensure_started(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                ready = threading.Event()
                self._thread = threading.Thread(target=self._serve, args=(ready,), name="bench-runner", daemon=True)
                self._thread.start()
                ready.wait()
            assert self._loop is not None
            return self._loop

    def wait_until_quiet(self, timeout: float, quiet: float = QUIET_S) -> bool:
        """Block until the loop has waited on its connections for ``quiet`` s; False if ``timeout`` ran out first.

        For work of another thread that holds the GIL long (the report writers' imports): started then, it
        does not hold up calls leaving or answers being read. Cases submitted and not yet taken count as work:
        a loop still asleep when the first window is submitted looks quiet, and when the writers' thread got
        there first, the first window left after numpy's import (64 cases: about 50 ms later). True at once
        when no loop runs (nothing to disturb), or where the loop's waits are not observed (Windows).
        """
        if self._loop is None or self._selector is None:
            return True
        deadline = time.monotonic() + timeout
        while True:
            since, now = self._selector.waiting_since, time.monotonic()
            if since is not None and now - since >= quiet and not self._starts:
                return True
            if now >= deadline:
                return False
            time.sleep(quiet / 2)

    def _serve(self, ready: threading.Event) -> None:
        if sys.platform == "win32":  # its default loop (proactor) has no selector; its waits go unobserved
            loop = asyncio.new_event_loop()
        else:  # what new_event_loop() makes here, with a selector that tells when the loop is waiting
            self._selector = _QuietSelector()
            loop = asyncio.SelectorEventLoop(self._selector)
        asyncio.set_event_loop(loop)
        self._loop = loop
        self._places = CasePlaces(self.concurrency)
        self._places.on_let_go = lambda: self.on_case_waits() if self.on_case_waits is not None else None
        self._places.report_wait = self.settings.status.waiting_for_place
        self.call_slots = RankedSlots(self.concurrency)
        self._http = HttpPool(size=self.concurrency)
        ready.set()
        loop.run_forever()
        loop.close()  # stopped by close(): its self-pipe goes too (else a ResourceWarning under -W error)

    def close(self) -> None:
        """Cancel what is still in flight (Ctrl-C, -x), close clients inside the loop, stop the thread."""
        with self._lock:
            loop, self._loop = self._loop, None
            self._starts.clear()  # their futures are cancelled below; a loop started later must be woken anew
        if loop is None:
            return
        for future in list(self._futures):
            future.cancel()
        closing = asyncio.run_coroutine_threadsafe(self._aclose(), loop)
        with contextlib.suppress(concurrent.futures.TimeoutError, concurrent.futures.CancelledError):
            closing.result(timeout=_SHUTDOWN_TIMEOUT_S)
        loop.call_soon_threadsafe(loop.stop)
        if self._thread is not None:
            self._thread.join(timeout=_SHUTDOWN_TIMEOUT_S)
        if self.cache is not None:  # after the loop: every answer it got is queued, and now stored
            self.cache.close()
        if self.journal is not None:
            self.journal.close()

    async def _aclose(self) -> None:
        pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        for provider in self._providers.values():
            await provider.aclose()
        if self._http is not None:
            await self._http.aclose()


def strictest(providers: Iterable[Provider]) -> RateLimits:
    """The lowest concurrency, rpm and tpm that any of ``providers`` declares (None where none does)."""
    def lowest(values: Iterable[float | None]) -> Any:
        given = [value for value in values if value]
        return min(given) if given else None

    found = list(providers)
    return RateLimits(lowest(p.max_concurrency() for p in found), lowest(p.spec.rpm for p in found),
                  lowest(p.spec.tpm for p in found))


def _settle(future: concurrent.futures.Future[CaseRecord], task: asyncio.Task[CaseRecord]) -> None:
    """Copy a finished task's outcome to the future the main thread waits on (unless it was cancelled)."""
    with contextlib.suppress(concurrent.futures.InvalidStateError):
        if task.cancelled():
            future.cancel()
        elif task.exception() is not None:
            future.set_exception(task.exception())
        else:
            future.set_result(task.result())


def _cancel_soon(loop: asyncio.AbstractEventLoop, task: asyncio.Task[CaseRecord]) -> None:
    with contextlib.suppress(RuntimeError):  # the loop is already closed: the task went with it
        loop.call_soon_threadsafe(task.cancel)
