"""Client-side limits: token buckets, the circuit breaker, 429 pauses, the attempt gate, prices and the budget."""

from __future__ import annotations

import asyncio
import contextlib
import math
import subprocess
import sys
from collections.abc import Iterator
from dataclasses import replace
from typing import Any

import pytest

from bench_plugin.calls.attempts import AttemptGate, Endpoint
from bench_plugin.calls.call_log import CallEntry, CallLog
from bench_plugin.calls.pricing import Cost, add_costs, call_cost
from bench_plugin.calls.rate_limits import (
    RECHECK_S,
    CasePlaces,
    CircuitBreaker,
    RankedSlots,
    RateLimits,
    Scope,
    SessionBudget,
    TokenBucket,
    estimate_tokens,
)
from bench_plugin.calls.retry import complete_with_retries
from bench_plugin.calls.run_status import RunStatus
from bench_plugin.core.chat import Completion, CompletionRequest, Message, Usage
from bench_plugin.core.endpoints import PRESETS, ModelSpec, Pricing, ProviderSpec
from bench_plugin.core.errors import AuthError, ProviderError, TransientProviderError
from bench_plugin.providers.interface import BaseProvider
from bench_plugin.run.runner import Runner, RunnerSettings

SPEC = ProviderSpec("p", "test")
MODEL = ModelSpec(name="m", provider=SPEC, id="m", label="m")


class Clock:
    """Seconds that pass only when a test says so."""

    def __init__(self) -> None:
        self.now = 100.0

    def __call__(self) -> float:
        return self.now


class ClockBreaker(CircuitBreaker):
    """A breaker whose naps move the fake clock instead of sleeping, and remember how long they were."""

    def __init__(self, clock: Clock, threshold: int = 0) -> None:
        super().__init__(threshold)
        self.clock = clock
        self.naps: list[float] = []

    async def nap(self, seconds: float) -> None:
        self.naps.append(seconds)
        self.clock.now += seconds


class Reports:
    def __init__(self) -> None:
        self.waits: list[tuple[str, float]] = []

    @contextlib.contextmanager
    def __call__(self, why: str, seconds: float) -> Iterator[None]:
        self.waits.append((why, seconds))
        yield


# --- token buckets ------------------------------------------------------------------------------------


def test_bucket_paces_calls_at_its_rate_after_a_burst_of_one_second():
    clock = Clock()
    bucket = TokenBucket(120, clock)  # 2 per second, holds 2

    assert (bucket.capacity, bucket.wait_time(1)) == (2.0, 0.0)
    bucket.take(1)
    bucket.take(1)
    assert bucket.wait_time(1) == pytest.approx(0.5)
    clock.now += 0.5
    assert bucket.wait_time(1) == 0.0


def test_take_larger_than_the_bucket_waits_for_a_full_one_then_leaves_a_debt():
    clock = Clock()
    bucket = TokenBucket(600, clock)  # 10 per second, holds 10

    bucket.take(5)
    assert bucket.wait_time(50) == pytest.approx(0.5)  # only a full bucket is needed
    clock.now += 0.5
    bucket.take(50)
    assert bucket.level == pytest.approx(-40)
    assert bucket.wait_time(1) == pytest.approx(4.1)


def test_give_back_returns_unused_tokens_up_to_the_capacity():
    bucket = TokenBucket(600, Clock())
    bucket.take(8)
    bucket.give_back(5)
    assert bucket.level == pytest.approx(7)
    bucket.give_back(100)
    assert bucket.level == bucket.capacity


def test_slow_rates_hold_at_least_one_call():
    assert TokenBucket(1, Clock()).capacity == 1.0


# --- circuit breaker ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("error", "counts"),
    [
        (TransientProviderError("x", status=500), True),
        (TransientProviderError("x", kind="timeout"), True),
        (TransientProviderError("x", kind="malformed"), True),
        (AuthError("x", status=401), True),
        (TransientProviderError("x", status=429), False),
        (ProviderError("x", status=400), False),
        (ProviderError("x", status=404), False),  # a model's own breaker counts it (is_missing_model)
        (ValueError("bug"), False),
    ],
)
def test_breaker_counts_infrastructure_failures_only(error: Exception, counts: bool):
    breaker = CircuitBreaker(threshold=1)
    breaker.failure(error)
    assert breaker.open is counts


def test_breaker_opens_after_k_consecutive_failures_and_an_answer_resets_the_count():
    breaker = CircuitBreaker(threshold=3)
    for _ in range(2):
        breaker.failure(TransientProviderError("down", status=503))
    breaker.success()
    for _ in range(2):
        breaker.failure(TransientProviderError("down", status=503))
    assert not breaker.open
    breaker.failure(TransientProviderError("still down", status=503))

    with pytest.raises(ProviderError, match="3 consecutive infrastructure failures, the last: still down") as info:
        breaker.check("p")
    assert info.value.kind == "circuit_open" and not isinstance(info.value, TransientProviderError)


def test_breaker_with_threshold_zero_never_opens_on_failures_but_can_be_tripped():
    breaker = CircuitBreaker(threshold=0)
    for _ in range(50):
        breaker.failure(TransientProviderError("x", status=500))
    assert not breaker.open
    breaker.trip("rate limited", "fail_fast")
    breaker.trip("later reason")
    with pytest.raises(ProviderError, match="rate limited") as info:
        breaker.check("p")
    assert info.value.kind == "fail_fast"


@pytest.mark.asyncio
async def test_a_nap_ends_when_the_breaker_opens():
    breaker = CircuitBreaker(threshold=1)
    nap = asyncio.ensure_future(breaker.nap(600))
    await asyncio.sleep(0)
    breaker.failure(TransientProviderError("x", status=500))
    await asyncio.wait_for(nap, timeout=30)
    assert nap.done()


# --- scopes: 429 pauses and buckets ------------------------------------------------------------------


@pytest.mark.asyncio
async def test_a_pause_holds_new_attempts_and_says_why():
    clock = Clock()
    scope, breaker, reports = Scope("p", RateLimits(), clock), ClockBreaker(clock), Reports()
    scope.pause(12)
    await scope.wait_turn(0, breaker, reports)
    assert reports.waits == [("paused after HTTP 429", 12)]
    assert breaker.naps == [12]


@pytest.mark.asyncio
async def test_rpm_and_tpm_buckets_make_calls_wait_their_turn():
    clock = Clock()
    scope, breaker, reports = Scope("p", RateLimits(rpm=60, tpm=600), clock), ClockBreaker(clock), Reports()
    for _ in range(3):
        await scope.wait_turn(10, breaker, reports)
    assert {why for why, _ in reports.waits} == {"rpm limit 60/min"}  # in naps of RECHECK_S, each said
    assert sum(breaker.naps) == pytest.approx(2.0) and max(breaker.naps) <= RECHECK_S
    await scope.wait_turn(100, breaker, reports)  # a full bucket lets a large call go, leaving a debt of 90
    reports.waits.clear()
    before = sum(breaker.naps)
    await scope.wait_turn(10, breaker, reports)  # 90 owed plus 10 take 10 s, the rpm's 1 s within them
    assert reports.waits[0] == ("tpm limit 600/min", pytest.approx(10.0))
    assert sum(breaker.naps) - before == pytest.approx(10.0)


@pytest.mark.asyncio
async def test_waits_end_with_the_breakers_error_when_it_opens():
    clock = Clock()
    breaker = ClockBreaker(clock)
    scope = Scope("p", RateLimits(), clock)
    scope.pause(30)
    breaker.trip("down")
    with pytest.raises(ProviderError, match="down"):
        await scope.wait_turn(0, breaker, Reports())


def test_estimate_counts_prompt_characters_and_the_answer_bound():
    model = ModelSpec(name="m", provider=SPEC, id="m", label="m", params={"max_tokens": 100})
    request = CompletionRequest(model=model, messages=(Message("user", "x" * 41),))
    assert estimate_tokens(request) == 11 + 100
    assert estimate_tokens(CompletionRequest(model=MODEL, messages=(Message("user", "abcd"),))) == 1


# --- the attempt gate ---------------------------------------------------------------------------------


class Counting(BaseProvider):
    """Answers after a pause, counting the calls in flight; fails first with the given errors."""

    def __init__(self, *errors: Exception) -> None:
        super().__init__(SPEC)
        self.errors = list(errors)
        self.in_flight = self.most = 0

    async def complete(self, request: CompletionRequest) -> Completion:
        self.in_flight += 1
        self.most = max(self.most, self.in_flight)
        try:
            await asyncio.sleep(0.01)
            if self.errors:
                raise self.errors.pop(0)
            return Completion("ok", usage=Usage(3, 2))
        finally:
            self.in_flight -= 1


def gate(provider: Counting, endpoint: Endpoint, model: Scope, entry: CallEntry, **kwargs: Any) -> AttemptGate:
    return AttemptGate(provider, endpoint, model, entry, session_slots=None, status=RunStatus(), **kwargs)


@pytest.mark.asyncio
async def test_concurrency_caps_of_model_and_endpoint_hold_every_attempt():
    provider = Counting()
    endpoint = Endpoint("k", "p", Scope("p", RateLimits(concurrency=3)), CircuitBreaker(10))
    model = Scope("p/m", RateLimits(concurrency=2))
    request = CompletionRequest(model=MODEL, messages=())
    entries = [CallEntry.of(request) for _ in range(12)]
    await asyncio.gather(*(complete_with_retries(gate(provider, endpoint, model, e), request, max_retries=0)
                           for e in entries))
    assert provider.most == 2
    assert [e.attempts for e in entries] == [1] * 12


@pytest.mark.asyncio
async def test_a_429_pauses_the_model_and_fail_fast_opens_the_breaker_instead():
    request = CompletionRequest(model=MODEL, messages=())
    endpoint = Endpoint("k", "p", Scope("p", RateLimits()), CircuitBreaker(10))
    model = Scope("p/m", RateLimits())
    limited = TransientProviderError("slow down", status=429, retry_after=30)
    with pytest.raises(TransientProviderError):
        await gate(Counting(limited), endpoint, model, CallEntry.of(request)).complete(request)
    assert model.paused_until > 0 and not endpoint.breaker.open

    entry = CallEntry.of(request)
    with pytest.raises(TransientProviderError):
        await gate(Counting(limited), endpoint, Scope("p/m", RateLimits()), entry, fail_fast=True).complete(request)
    assert endpoint.breaker.kind == "fail_fast" and entry.attempts == 1
    with pytest.raises(ProviderError, match="under --bench-fail-fast"):
        await gate(Counting(), endpoint, model, CallEntry.of(request)).complete(request)


@pytest.mark.asyncio
async def test_a_pause_longer_than_max_wait_ends_the_models_other_calls_at_once():
    """An exhausted daily quota (Retry-After: 86400): the model's other calls do not sit it out, unsent."""
    request = CompletionRequest(model=MODEL, messages=())
    endpoint = Endpoint("k", "p", Scope("p", RateLimits()), CircuitBreaker(10))
    model = Scope("p/m", RateLimits())
    model.pause(86400)
    provider, entry = Counting(), CallEntry.of(request)
    with pytest.raises(ProviderError, match=r"p/m: no call sent: the model is paused for \d+ s more after an HTTP "
                                            r"429, longer than the 300 s a call may wait \(max_wait\)") as info:
        await asyncio.wait_for(complete_with_retries(gate(provider, endpoint, model, entry), request, max_retries=2),
                               timeout=5)
    assert info.value.kind == "http_429" and entry.attempts == 0 and provider.most == 0
    short = Scope("p/m", RateLimits())
    short.pause(0.05)  # a pause that fits is waited out
    assert (await gate(Counting(), endpoint, short, CallEntry.of(request)).complete(request)).text == "ok"


@pytest.mark.asyncio
async def test_a_model_the_endpoint_does_not_have_ends_its_own_calls_only():
    endpoint = Endpoint("k", "p", Scope("p", RateLimits()), CircuitBreaker(3))
    missing = CompletionRequest(model=replace(MODEL, id="typo"), messages=())
    request = CompletionRequest(model=MODEL, messages=())
    for _ in range(3):
        with pytest.raises(ProviderError, match="no such model"):
            await gate(Counting(ProviderError("no such model", status=404)), endpoint, Scope("p/typo", RateLimits()),
                       CallEntry.of(missing)).complete(missing)
    entry = CallEntry.of(missing)
    with pytest.raises(ProviderError, match="p/typo: no more calls: 3 consecutive") as info:
        await gate(Counting(), endpoint, Scope("p/typo", RateLimits()), entry).complete(missing)
    assert info.value.kind == "circuit_open" and entry.attempts == 0
    # the endpoint and its other models go on
    assert not endpoint.breaker.open and endpoint.breaker.failures == 0
    assert (await gate(Counting(), endpoint, Scope("p/m", RateLimits()), CallEntry.of(request)).complete(request)).text


class Timed(BaseProvider):
    """Notes when each call leaves; the first one answers after ``first_s`` (or fails with ``first_error``)."""

    def __init__(self, first_s: float = 0.0, first_error: Exception | None = None) -> None:
        super().__init__(SPEC)
        self.sent: list[float] = []
        self.first_s, self.first_error = first_s, first_error

    async def complete(self, request: CompletionRequest) -> Completion:
        self.sent.append(asyncio.get_running_loop().time())
        if len(self.sent) == 1:
            await asyncio.sleep(self.first_s)
            if self.first_error is not None:
                raise self.first_error
        return Completion("ok", usage=Usage(3, 2))


async def attempt_all(provider: Timed, endpoint: Endpoint, model: Scope, calls: int) -> None:
    request = CompletionRequest(model=MODEL, messages=())

    async def one(delay: float) -> None:
        await asyncio.sleep(delay)  # the first call leaves first
        with contextlib.suppress(TransientProviderError):
            await gate(provider, endpoint, model, CallEntry.of(request)).complete(request)

    await asyncio.gather(*(one(0.01 * bool(n)) for n in range(calls)))


@pytest.mark.asyncio
async def test_calls_queued_for_a_slot_do_not_gather_rate_tokens_and_leave_in_a_burst():
    """The rpm bucket was taken before the slot: calls waiting for the slot banked tokens, then left together."""
    provider = Timed(first_s=0.5)
    endpoint = Endpoint("k", "p", Scope("p", RateLimits(concurrency=1, rpm=240)), CircuitBreaker(10))  # 4 a second
    await attempt_all(provider, endpoint, Scope("p/m", RateLimits()), calls=10)
    most = max(sum(1 for t in provider.sent if start <= t < start + 0.2) for start in provider.sent)
    assert most <= 4  # the bucket's second's worth, never the tokens of the half second spent waiting


@pytest.mark.asyncio
async def test_a_models_rate_holds_when_its_calls_queue_for_the_endpoints_slot():
    """The model's bucket was taken before the endpoint's slot: queued behind another model, its calls left at once."""
    provider = Timed(first_s=0.5)  # the other model's call holds the endpoint's one slot for half a second
    endpoint = Endpoint("k", "p", Scope("p", RateLimits(concurrency=1)), CircuitBreaker(10))
    other, limited = Scope("p/h", RateLimits()), Scope("p/f", RateLimits(rpm=240))  # 4 a second
    request = CompletionRequest(model=MODEL, messages=())

    async def one(scope: Scope, delay: float) -> None:
        await asyncio.sleep(delay)
        await gate(provider, endpoint, scope, CallEntry.of(request)).complete(request)

    await asyncio.gather(one(other, 0), *(one(limited, 0.01) for _ in range(10)))
    sent = provider.sent[1:]
    assert max(sum(1 for t in sent if start <= t < start + 0.2) for start in sent) <= 4


@pytest.mark.asyncio
async def test_a_429_holds_calls_already_waiting_for_a_slot():
    limited = TransientProviderError("slow down", status=429, retry_after=0.5)
    provider = Timed(first_s=0.05, first_error=limited)
    endpoint = Endpoint("k", "p", Scope("p", RateLimits(concurrency=1)), CircuitBreaker(10))
    await attempt_all(provider, endpoint, Scope("p/m", RateLimits()), calls=4)
    first, *others = provider.sent
    assert len(others) == 3 and min(others) >= first + 0.05 + 0.5 - 0.02  # none left during the pause


@pytest.mark.asyncio
async def test_an_attempt_without_an_answer_gives_its_tpm_estimate_back():
    """A 429 kept the estimate (prompt and max_tokens) taken: one refused call held the model for seconds."""
    scope = Scope("p/m", RateLimits(tpm=6000))  # 100 tokens in the bucket
    assert scope.tokens is not None
    endpoint = Endpoint("k", "p", Scope("p", RateLimits()), CircuitBreaker(10))
    request = CompletionRequest(model=replace(MODEL, params={"max_tokens": 60}), messages=())
    limited = TransientProviderError("slow down", status=429, retry_after=0.01)
    with pytest.raises(TransientProviderError):
        await gate(Counting(limited), endpoint, scope, CallEntry.of(request)).complete(request)
    assert scope.tokens.level == pytest.approx(scope.tokens.capacity)


@pytest.mark.asyncio
async def test_a_tpm_wait_ends_once_an_answer_gives_back_what_the_estimate_took():
    """The waiter slept its whole computed delay: tpm was paced on the estimate, not on the usage."""
    scope = Scope("p", RateLimits(tpm=6000))  # 100 tokens a second
    assert scope.tokens is not None
    scope.tokens.take(2000)  # a call in flight, estimated at 2000 (its max_tokens): 20 s of debt for the next
    waiting = asyncio.ensure_future(scope.wait_turn(100, CircuitBreaker(0), Reports()))
    await asyncio.sleep(0.1)
    scope.tokens.give_back(1980)  # it answered in 20 tokens
    await asyncio.wait_for(waiting, timeout=5.0)


def test_a_model_rate_limit_names_the_model_as_the_suite_does_or_as_provider_and_id():
    endpoint = Endpoint("k", "p", Scope("p", RateLimits()), CircuitBreaker(10))
    for limits in ({"m": {"rpm": 60.0}}, {"p:m": {"rpm": 60.0}}):
        runner = Runner(settings=RunnerSettings(model_limits=limits))
        scope = runner._model_scope(endpoint, CompletionRequest(model=MODEL, messages=()))
        assert scope.limits.rpm == 60.0, limits


def test_two_models_of_one_id_keep_their_own_limits():
    """The first of them set the limits of both: the second's rpm was dropped in silence."""
    endpoint = Endpoint("k", "p", Scope("p", RateLimits()), CircuitBreaker(10))
    runner = Runner(settings=RunnerSettings())
    cold, hot = replace(MODEL, name="cold"), replace(MODEL, name="hot", rpm=60.0)
    assert runner._model_scope(endpoint, CompletionRequest(model=cold, messages=())).limits.rpm is None
    assert runner._model_scope(endpoint, CompletionRequest(model=hot, messages=())).limits.rpm == 60.0


# --- prices, the call log and the budget -------------------------------------------------------------


def model_on(provider: ProviderSpec, model_id: str, pricing: Pricing | None = None) -> ModelSpec:
    return ModelSpec(name=model_id, provider=provider, id=model_id, label=model_id, pricing=pricing)


def test_suite_pricing_wins_over_the_price_library():
    cost = call_cost(model_on(PRESETS["openai"], "gpt-4o-mini", Pricing(1.0, 2.0)), Usage(1_000_000, 500_000))
    assert cost == Cost(2.0, "suite")


def test_well_known_models_are_priced_by_genai_prices_offline():
    cost = call_cost(model_on(PRESETS["openai"], "gpt-4o-mini"), Usage(1_000_000, 1_000_000))
    assert cost.usd == pytest.approx(0.15 + 0.60) and cost.source.startswith("genai-prices ")
    assert call_cost(model_on(PRESETS["anthropic"], "claude-sonnet-4-5"), Usage(1000, 0)).usd > 0


def test_unknown_price_says_so_and_offline_calls_cost_nothing_to_say():
    cost = call_cost(model_on(PRESETS["vllm"], "my-finetune"), Usage(10, 5))
    assert cost.usd is None and "no known price for 'my-finetune' at http://localhost:8000/v1" in (cost.note or "")
    assert call_cost(model_on(PRESETS["echo"], "echo"), Usage(10, 5)) == Cost(None)
    assert call_cost(model_on(PRESETS["openai"], "gpt-4o"), Usage()) == Cost(None)


def test_sum_of_costs_is_unknown_when_one_priced_call_is_missing():
    assert add_costs([Cost(1.0, "suite"), Cost(0.5, "genai-prices 1")]) == Cost(1.5, "genai-prices 1, suite")
    assert add_costs([Cost(1.0, "suite"), Cost(None, note="no price")]) == Cost(None, note="no price")
    assert add_costs([]) == Cost(None)


def test_call_log_keeps_judges_apart_and_names_the_failed_call():
    log = CallLog()
    judge = CompletionRequest(model=MODEL, messages=(), purpose="judge", turn=1)
    done = log.start(CompletionRequest(model=MODEL, messages=()))
    done.attempts, done.completion = 2, Completion("a", usage=Usage(5, 1), finish_reason="stop", request_id="r1")
    failed = log.start(judge)
    failed.attempts, failed.error = 3, TransientProviderError("down", status=503)
    assert log.failed_call() is failed
    assert log.judge_usage() == {"input_tokens": None, "output_tokens": None, "cost_usd": None, "calls": 1,
                                 "attempts": 3}
    first, second = log.to_list()
    assert first["finish_reason"] == "stop" and first["response_id"] == "r1" and first["attempts"] == 2
    assert second["error"] == {"kind": "http_503", "type": "TransientProviderError", "message": "down", "status": 503}


def test_a_dollar_budget_ends_at_a_paid_endpoints_first_call_without_a_price():
    budget = SessionBudget(usd=5.0, tokens=None)
    budget.add(Cost(None, note="no known price for 'llama' at http://127.0.0.1:8000/v1 (a local server)", local=True),
               Usage(5, 5))
    assert budget.exhausted() is None  # a server of one's own has no price to count, and is not stopped
    budget.add(Cost(None, note="no known price for 'gpt-9' at https://api.example.com/v1"), Usage(5, 5))
    assert budget.exhausted() == (
        "the session budget of $5 cannot count calls without a price: no known price for 'gpt-9' at "
        "https://api.example.com/v1 (or bound the run with --bench-budget-tokens; --bench-budget-usd)")
    tokens_only = SessionBudget(usd=None, tokens=100)
    tokens_only.add(Cost(None, note="no known price"), Usage(5, 5))
    assert tokens_only.exhausted() is None  # a token budget counts every call


def test_budget_counts_dollars_and_tokens_and_names_unpriced_calls():
    budget = SessionBudget(usd=1.0, tokens=None)
    budget.add(Cost(0.6, "suite"), Usage(10, 10))
    budget.add(Cost(None, note="no price", local=True), Usage(5, 5))
    assert budget.exhausted() is None
    budget.add(Cost(0.5, "suite"), Usage(1, 1))
    assert budget.exhausted() == "the session budget of $1 is spent ($1.1000; 1 calls had no price; --bench-budget-usd)"
    tokens = SessionBudget(tokens=20)
    tokens.add(Cost(None), Usage(15, None))
    assert tokens.exhausted() is None
    tokens.add(Cost(None), Usage(None, 5))
    assert tokens.spent_tokens == 20 and "20 tokens is spent" in (tokens.exhausted() or "")


def test_a_workers_budget_says_it_is_its_share_of_the_sessions():
    """Under -n 2 a budget of 100 tokens read "the session budget of 50 tokens is spent"."""
    budget = SessionBudget(tokens=50, processes=2)
    budget.add(Cost(None, local=True), Usage(40, 16))
    assert budget.exhausted() == ("this worker's share of the session budget (50 tokens, one of 2 equal shares) is "
                                  "spent (56; --bench-budget-tokens)")


def test_a_local_servers_own_models_do_not_load_the_price_table():
    """0.18 s of import, in the loop's thread at a run's first answer: it held the first round's answers back."""
    code = (
        "import sys\n"
        "from bench_plugin.core.chat import Usage\n"
        "from bench_plugin.core.endpoints import ModelSpec, ProviderSpec\n"
        "from bench_plugin.calls.pricing import call_cost\n"
        "local = ProviderSpec('local', 'openai_compatible', 'http://127.0.0.1:8000/v1')\n"
        "for model_id in ('bench-model', 'llama3.2', 'Qwen/Qwen2.5-7B-Instruct', 'mistral:7b'):\n"
        "    assert call_cost(ModelSpec(name='m', provider=local, id=model_id, label='m'), Usage(3, 2)).local\n"
        "print('genai_prices.data_snapshot' in sys.modules)\n"
    )
    loaded = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    assert loaded.strip() == "False"


def test_local_servers_price_only_models_their_makers_alone_serve_and_providers_without_url_use_their_default():
    for url in ("http://127.0.0.1:8000/v1", "http://gpu-box:8000/v1", "http://10.0.0.7/v1"):
        local = ProviderSpec("local", "openai_compatible", url)
        # models a server of one's own runs itself: an Ollama tag, open weights, a name no price table knows
        for model_id in ("deepseek-r1:7b", "openai/gpt-oss-20b", "google/gemma-3-27b-it", "deepseek-chat", "llama"):
            cost = call_cost(model_on(local, model_id), Usage(10, 5))
            assert cost.usd is None and cost.local and "(a local server)" in (cost.note or "")
        # a proxy (LiteLLM, a gateway) to a paid API: its price, so that a dollar budget holds
        for model_id in ("gpt-4o-mini", "anthropic/claude-sonnet-4-5", "gemini-2.5-pro"):
            cost = call_cost(model_on(local, model_id), Usage(1000, 0))
            assert cost.usd and not cost.local and "price, through a proxy" in (cost.source or "")
        assert call_cost(model_on(local, "gpt-4o-mini"), Usage(1000, 0)).usd == call_cost(
            model_on(ProviderSpec("openai", "openai"), "gpt-4o-mini"), Usage(1000, 0)).usd
    anthropic = ProviderSpec("mine", "anthropic")  # no base_url: api.anthropic.com
    assert call_cost(model_on(anthropic, "claude-sonnet-4-5"), Usage(1000, 0)).usd


def test_a_case_gives_its_place_to_the_next_when_a_call_of_its_waits() -> None:
    async def scenario() -> None:
        places = CasePlaces(1)
        let_go: list[int] = []
        places.on_let_go = lambda: let_go.append(places.waiting)
        first, second = places.slot(), places.slot()
        await first.take()
        taking = asyncio.ensure_future(second.take())
        await asyncio.sleep(0)
        assert not taking.done(), "one place: the second case waits"
        first.let_go()
        await taking
        assert (first.held, second.held, places.waiting, let_go) == (False, True, 1, [1])
        first.end()  # it went on without a place, and ends
        second.end()
        assert places.waiting == 0 and not places.free.locked()

    asyncio.run(scenario())


def test_a_case_that_gave_its_place_up_takes_one_again_to_work_ahead_of_cases_not_started() -> None:
    async def scenario() -> None:
        places = CasePlaces(1)
        older, newer = places.slot(), places.slot()
        await older.take()
        older.let_go()  # a call of its waited
        await newer.take()
        latest = places.slot()
        starting = asyncio.ensure_future(latest.take())
        working: list[str] = []

        async def work() -> None:
            await older.take_again()
            working.append("older")

        again = asyncio.ensure_future(work())
        await asyncio.sleep(0)
        assert (working, places.waiting) == ([], 1), "no place free: it waits"
        newer.end()
        await again
        assert (working, older.held, places.waiting, starting.done()) == (["older"], True, 0, False)
        older.end()
        await starting  # then the case not started yet
        latest.end()
        assert not places.free.locked()

    asyncio.run(scenario())


def test_a_case_waiting_for_a_place_to_run_a_command_is_shown_waiting_until_it_has_one() -> None:
    async def scenario() -> None:
        status = RunStatus()
        places = CasePlaces(1)
        places.report_wait = status.waiting_for_place
        older, newer, third = places.slot(), places.slot(), places.slot()
        await older.take()
        older.let_go()  # a call of its waited
        await newer.take()
        again = asyncio.ensure_future(older.take_again())
        await asyncio.sleep(0)
        assert status.line(3).endswith("1 waiting for a place to run a command")
        newer.let_go()
        await again
        assert status.place_waits == 0 and "waiting" not in status.line(3)
        cancelled = asyncio.ensure_future(newer.take_again())  # a case whose time ran out while it waited
        await asyncio.sleep(0)
        assert status.place_waits == 1
        cancelled.cancel()
        with contextlib.suppress(asyncio.CancelledError):
            await cancelled
        assert status.place_waits == 0
        older.end()
        await third.take()
        third.let_go()
        await third.take_again()  # a free place: taken at once, nothing shown
        assert status.place_waits == 0
        third.end()
        newer.end()

    asyncio.run(scenario())


def test_a_case_that_ends_while_it_waits_leaves_the_count() -> None:
    places = CasePlaces(2)
    slot = places.slot()
    asyncio.run(slot.take())
    slot.let_go()
    slot.let_go()  # a second call of the case waits too: counted once
    assert places.waiting == 1
    slot.end()
    assert places.waiting == 0 and places.free._value == 2


@pytest.mark.asyncio
async def test_a_slot_let_go_goes_to_the_oldest_cases_waiter_then_to_the_first_come():
    """A case's later call (its judge, its next turn) queued behind the first calls of every case started after it."""
    slots = RankedSlots(1)
    served: list[str] = []

    async def call(name: str, rank: int) -> None:
        await slots.acquire(rank)
        served.append(name)
        await asyncio.sleep(0)
        slots.release()

    await slots.acquire(0)  # held: everyone below waits
    waiting = [asyncio.ensure_future(call(name, rank))
               for name, rank in [("case 5", 5), ("case 3", 3), ("case 3 again", 3), ("case 1's judge", 1)]]
    await asyncio.sleep(0)
    assert slots.locked() and slots.ahead_of(3) == 3, "case 1's and both of case 3's go before another of case 3"
    slots.release()
    await asyncio.gather(*waiting)
    assert served == ["case 1's judge", "case 3", "case 3 again", "case 5"]
    assert not slots.locked()


@pytest.mark.asyncio
async def test_a_waiter_cancelled_as_its_slot_came_passes_it_on():
    slots = RankedSlots(1)
    await slots.acquire(0)
    first = asyncio.ensure_future(slots.acquire(1))
    second = asyncio.ensure_future(slots.acquire(2))
    quitter = asyncio.ensure_future(slots.acquire(0))  # cancelled before its turn: skipped
    await asyncio.sleep(0)
    quitter.cancel()
    slots.release()  # handed to ``first``, which is cancelled before it runs
    first.cancel()
    await asyncio.gather(first, quitter, return_exceptions=True)
    await asyncio.wait_for(second, timeout=1)  # the slot went on to it
    assert slots.locked() and slots.ahead_of(math.inf) == 0
    slots.release()
    assert not slots.locked()


@pytest.mark.asyncio
async def test_a_call_queued_for_a_bucket_says_how_many_are_ahead_and_when_its_turn_comes():
    """Four calls behind 30/min said '0 s left' each: the wait of the first, not theirs; now each counts those ahead."""
    scope = Scope("p/m", RateLimits(rpm=30))
    scope.take(0)  # the bucket (one request's worth) is empty: the next leaves in 2 s
    reports = Reports()
    async with contextlib.AsyncExitStack() as holder:
        await scope.queue(holder, 0, reports)  # the first holds the turn
        waiting = [asyncio.ensure_future(_queued(scope, reports)) for _ in range(3)]
        await asyncio.sleep(0.01)
        assert [why for why, _ in reports.waits] == ["rpm limit 30/min, queued"] * 3  # one group on the line
        assert [round(seconds) for _, seconds in reports.waits] == [4, 6, 8]
        for task in waiting:
            task.cancel()
        await asyncio.gather(*waiting, return_exceptions=True)
    assert scope.turn is not None and scope.turn.ahead_of(math.inf) == 0, "the cancelled left the queue"


async def _queued(scope: Scope, reports: Reports) -> None:
    async with contextlib.AsyncExitStack() as held:
        await scope.queue(held, 0, reports)
