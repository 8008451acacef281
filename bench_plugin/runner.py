"""The runner: one background event loop that keeps many cases in flight and owns every model call.

pytest runs items one by one on the main thread; each item waits on its own future while the loop
works ahead on the cases submitted after deselection (see ``schedule.py``). Providers and their
httpx clients live inside this loop and are reused across cases (measured fastest in
``design/pytest-concurrency.md``).
"""

from __future__ import annotations

import asyncio
import concurrent.futures
import contextlib
import threading
from dataclasses import replace

from bench_plugin.case import PreparedCase, execute_case
from bench_plugin.chat import Completion, CompletionRequest
from bench_plugin.endpoints import ProviderSpec
from bench_plugin.http import HttpPool
from bench_plugin.providers.interface import Provider, apply_system_policy
from bench_plugin.providers.registry import PROVIDER_TYPES, ProviderFactory, create_provider
from bench_plugin.providers.retry import complete_with_retries
from bench_plugin.record import CaseRecord
from bench_plugin.registry import Registry

_SHUTDOWN_TIMEOUT_S = 5.0


class _Slotted:
    """A provider whose every attempt takes a slot of its endpoint, so backoff sleeps hold none."""

    def __init__(self, provider: Provider, slots: asyncio.Semaphore) -> None:
        self._provider = provider
        self._slots = slots
        self.spec: ProviderSpec = provider.spec

    async def complete(self, request: CompletionRequest) -> Completion:
        async with self._slots:
            completion: Completion = await self._provider.complete(request)
            return completion

    def should_retry(self, exc: BaseException) -> bool:
        return self._provider.should_retry(exc)

    def connection_key(self) -> str:
        return self._provider.connection_key()

    def max_concurrency(self) -> int | None:
        return self._provider.max_concurrency()

    async def aclose(self) -> None:
        await self._provider.aclose()


class Runner:
    """Runs cases concurrently on a daemon thread's event loop.

    Args:
        concurrency: most cases in flight at once (``--bench-concurrency``).
    """

    def __init__(self, concurrency: int = 16, provider_types: Registry[ProviderFactory] = PROVIDER_TYPES) -> None:
        self.concurrency = concurrency
        self._provider_types = provider_types
        self._loop: asyncio.AbstractEventLoop | None = None
        self._thread: threading.Thread | None = None
        self._lock = threading.Lock()
        self._case_slots: asyncio.Semaphore | None = None
        self._http: HttpPool | None = None
        self._providers: dict[ProviderSpec, Provider] = {}
        self._provider_slots: dict[str, asyncio.Semaphore] = {}
        self._futures: set[concurrent.futures.Future[CaseRecord]] = set()

    def submit(self, case: PreparedCase, nodeid: str) -> concurrent.futures.Future[CaseRecord]:
        """Start a case now; the future resolves to its record (it never raises for case problems)."""
        loop = self._ensure_started()
        future = asyncio.run_coroutine_threadsafe(self._run_case(case, nodeid), loop)
        self._futures.add(future)
        future.add_done_callback(self._futures.discard)
        return future

    async def _run_case(self, case: PreparedCase, nodeid: str) -> CaseRecord:
        assert self._case_slots is not None
        async with self._case_slots:
            return await execute_case(case, nodeid, self.call_model)

    async def call_model(self, request: CompletionRequest) -> Completion:
        """Make one model call for a case or a judge: every call goes through here.

        Applies the model's system policy, the provider's concurrency limit and retries.
        """
        spec = request.model.provider
        provider = _Slotted(self._provider(spec), self._provider_slot(self._provider(spec)))
        prepared = replace(request, messages=apply_system_policy(request.messages, request.model))
        completion: Completion = await complete_with_retries(provider, prepared, max_retries=spec.max_retries)
        return completion

    def _provider(self, spec: ProviderSpec) -> Provider:
        if spec not in self._providers:  # specs are deep-frozen, so equal endpoints share one provider
            assert self._http is not None, "the loop thread makes the pool before any call"
            self._providers[spec] = create_provider(spec, self._http, self._provider_types)
        return self._providers[spec]

    def _provider_slot(self, provider: Provider) -> asyncio.Semaphore:
        key = provider.connection_key()
        if key not in self._provider_slots:
            self._provider_slots[key] = asyncio.Semaphore(provider.max_concurrency() or self.concurrency)
        return self._provider_slots[key]

    def _ensure_started(self) -> asyncio.AbstractEventLoop:
        with self._lock:
            if self._loop is None:
                ready = threading.Event()
                self._thread = threading.Thread(target=self._serve, args=(ready,), name="bench-runner", daemon=True)
                self._thread.start()
                ready.wait()
            assert self._loop is not None
            return self._loop

    def _serve(self, ready: threading.Event) -> None:
        loop = asyncio.new_event_loop()
        asyncio.set_event_loop(loop)
        self._loop = loop
        self._case_slots = asyncio.Semaphore(self.concurrency)
        self._http = HttpPool(size=self.concurrency)
        ready.set()
        loop.run_forever()

    def close(self) -> None:
        """Cancel what is still in flight (Ctrl-C, -x), close clients inside the loop, stop the thread."""
        with self._lock:
            loop, self._loop = self._loop, None
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

    async def _aclose(self) -> None:
        pending = [t for t in asyncio.all_tasks() if t is not asyncio.current_task()]
        for task in pending:
            task.cancel()
        await asyncio.gather(*pending, return_exceptions=True)
        for provider in self._providers.values():
            await provider.aclose()
        if self._http is not None:
            await self._http.aclose()
