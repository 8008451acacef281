"""When retries stop: rate limits apart from other failures, the total wait, fail-fast, the attempt cap."""

from __future__ import annotations

import random

import pytest

from bench_plugin.calls.retry import MAX_ATTEMPTS, complete_with_retries
from bench_plugin.core.chat import Completion, CompletionRequest
from bench_plugin.core.endpoints import ModelSpec, ProviderSpec
from bench_plugin.core.errors import ProviderError, TransientProviderError, is_rate_limit
from bench_plugin.providers.interface import BaseProvider

REQUEST = CompletionRequest(model=ModelSpec(name="m", provider=ProviderSpec("p", "test"), id="m", label="m"),
                            messages=())


class Failing(BaseProvider):
    """Raises the scripted errors in turn (the last one forever when ``forever``), then answers."""

    def __init__(self, *errors: Exception, forever: bool = False) -> None:
        super().__init__(ProviderSpec("failing", "test"))
        self.errors = list(errors)
        self.forever = forever
        self.calls = 0

    async def complete(self, request: CompletionRequest) -> Completion:
        self.calls += 1
        if self.errors:
            raise self.errors[0] if self.forever else self.errors.pop(0)
        return Completion("done")


class Sleeps:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


def limited(wait: float | None = 0.1) -> TransientProviderError:
    return TransientProviderError("slow down", status=429, retry_after=wait)


@pytest.mark.asyncio
async def test_rate_limits_do_not_use_up_the_retries_of_failures():
    provider = Failing(limited(), limited(), TransientProviderError("x", status=500), limited())

    completion = await complete_with_retries(provider, REQUEST, max_retries=1, sleep=Sleeps())

    assert completion.attempts == 5


@pytest.mark.asyncio
async def test_total_wait_is_capped_by_max_wait():
    provider = Failing(TransientProviderError("down", status=503), forever=True)
    sleeps = Sleeps()

    with pytest.raises(TransientProviderError, match=r"retries would wait more than the .* left of max_wait"):
        await complete_with_retries(provider, REQUEST, max_retries=10, base_delay=1, max_wait=4, sleep=sleeps,
                                    rng=random.Random(3))
    assert sum(sleeps.delays) <= 4
    assert provider.calls == len(sleeps.delays) + 1


@pytest.mark.asyncio
async def test_a_server_wait_beyond_what_is_left_gives_up_without_waiting():
    provider = Failing(limited(5), limited(50))
    sleeps = Sleeps()

    with pytest.raises(TransientProviderError, match=r"server asked to wait 50 s, more than the 2[45](\.\d)? s left"):
        await complete_with_retries(provider, REQUEST, max_retries=3, max_wait=30, sleep=sleeps)
    assert len(sleeps.delays) == 1


class MostJitter(random.Random):
    def uniform(self, a: float, b: float) -> float:
        return b


@pytest.mark.asyncio
async def test_the_jitter_never_makes_a_call_give_up_a_wait_that_fits():
    """9.5 s asked of 10 s left: the call waits (at most what is left), whatever jitter is drawn."""
    provider = Failing(limited(9.5))
    sleeps = Sleeps()

    completion = await complete_with_retries(provider, REQUEST, max_retries=0, max_wait=10, sleep=sleeps,
                                             rng=MostJitter())
    assert completion.attempts == 2 and sleeps.delays == [10.0]


@pytest.mark.asyncio
async def test_earlier_jitter_does_not_use_up_max_wait():
    """Three 1 s waits asked of a 3 s max_wait: the jitter of the first two made the third give up."""
    provider = Failing(limited(1.0), limited(1.0), limited(1.0))
    sleeps = Sleeps()
    completion = await complete_with_retries(provider, REQUEST, max_retries=0, max_wait=3, sleep=sleeps,
                                             rng=MostJitter())
    assert completion.attempts == 4 and sleeps.delays == [1.1, 1.1, 1.0]


@pytest.mark.asyncio
async def test_rate_limits_are_not_retried_when_retry_rate_limits_is_off():
    provider = Failing(limited())

    with pytest.raises(TransientProviderError, match="rate limits are not retried under --bench-fail-fast") as info:
        await complete_with_retries(provider, REQUEST, max_retries=3, retry_rate_limits=False, sleep=Sleeps())
    assert provider.calls == 1 and info.value.status == 429


@pytest.mark.asyncio
async def test_endless_rate_limits_stop_at_the_attempt_cap():
    provider = Failing(limited(0.0), forever=True)

    with pytest.raises(TransientProviderError, match=f"gave up after {MAX_ATTEMPTS} attempts"):
        await complete_with_retries(provider, REQUEST, max_retries=0, sleep=Sleeps())
    assert provider.calls == MAX_ATTEMPTS


@pytest.mark.asyncio
async def test_each_wait_is_announced_with_its_error_and_length():
    errors = [limited(2), TransientProviderError("t", kind="timeout")]
    told: list[tuple[Exception, float, int]] = []
    sleeps = Sleeps()

    await complete_with_retries(Failing(*errors), REQUEST, max_retries=2, sleep=sleeps,
                                on_retry=lambda exc, delay, attempts: told.append((exc, delay, attempts)))

    assert [(exc, attempts) for exc, _, attempts in told] == [(errors[0], 1), (errors[1], 2)]
    assert [delay for _, delay, _ in told] == sleeps.delays


def test_rate_limit_is_a_429_by_status_or_kind():
    assert is_rate_limit(TransientProviderError("x", status=429))
    assert is_rate_limit(ProviderError("x", kind="http_429"))
    assert not is_rate_limit(TransientProviderError("x", status=503))
    assert not is_rate_limit(ValueError("x"))
