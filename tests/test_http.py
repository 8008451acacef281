"""HTTP mechanics: redaction, Retry-After, the key lookup, retries and the client pool."""

from __future__ import annotations

import asyncio
import random
import socket
import uuid
from email.utils import formatdate

import pytest

from bench_plugin.calls.retry import complete_with_retries
from bench_plugin.core.chat import Completion, CompletionRequest
from bench_plugin.core.endpoints import ModelSpec, ProviderSpec
from bench_plugin.core.errors import AuthError, ProviderError, TransientProviderError
from bench_plugin.providers.http import (
    HttpPool,
    api_key_from_env,
    log_redaction,
    merge_headers,
    post_json,
    redact,
)
from bench_plugin.providers.interface import BaseProvider
from bench_plugin.providers.retry_headers import parse_reset, parse_retry_after, retry_wait_of

KEY = "sk-test-0123456789abcdefghij"


# --- redact -------------------------------------------------------------------------------------------


def test_redact_replaces_every_occurrence_of_a_secret():
    assert redact(f"key {KEY} and again {KEY}", [KEY]) == "key [REDACTED] and again [REDACTED]"


@pytest.mark.parametrize("echo", [KEY[:8], KEY[:15], KEY[-8:], KEY[-12:]])
def test_redact_replaces_partial_echoes_of_eight_characters_or_more(echo):
    assert echo not in redact(f"Incorrect API key provided: {echo}****", [KEY])


def test_redact_keeps_short_fragments_and_other_text():
    assert redact(f"{KEY[:7]} ok", [KEY]) == f"{KEY[:7]} ok"


def test_redact_handles_several_secrets_empty_ones_and_a_lone_string():
    other = "another-secret-value"
    assert redact(f"{KEY} {other}", [KEY, "", other]) == "[REDACTED] [REDACTED]"
    assert redact(f"x {KEY} y", KEY) == "x [REDACTED] y"
    assert redact("nothing to hide", []) == "nothing to hide"


# --- parse_retry_after --------------------------------------------------------------------------------


@pytest.mark.parametrize(("value", "expected"), [("2", 2.0), ("0.5", 0.5), ("0", 0.0), ("-3", 0.0)])
def test_retry_after_seconds(value, expected):
    assert parse_retry_after(value) == expected


def test_retry_after_http_date_is_relative_to_now():
    now = 1_700_000_000.0
    assert parse_retry_after(formatdate(now + 30, usegmt=True), now=now) == pytest.approx(30)
    assert parse_retry_after(formatdate(now - 30, usegmt=True), now=now) == 0.0


@pytest.mark.parametrize("value", [None, "", "soon", "nan", "inf"])
def test_retry_after_unreadable_is_none(value):
    assert parse_retry_after(value) is None


# --- api_key_from_env ---------------------------------------------------------------------------------


def test_api_key_is_read_at_call_time(monkeypatch):
    spec = ProviderSpec("p", "openai_compatible", api_key_env="BENCH_TEST_KEY")
    monkeypatch.setenv("BENCH_TEST_KEY", KEY)

    assert api_key_from_env(spec) == KEY
    assert api_key_from_env(ProviderSpec("local", "openai_compatible")) is None


@pytest.mark.parametrize("value", ["sk-caf\u00e9-1234", "sk-12\u200b34", "sk-1234\nX-Other: 1"])
def test_a_key_no_header_can_carry_is_an_auth_error_that_does_not_quote_it(monkeypatch, value):
    """It failed every case as an internal error (UnicodeEncodeError), with a traceback in results.jsonl."""
    monkeypatch.setenv("BENCH_TEST_KEY", value)
    with pytest.raises(AuthError, match="BENCH_TEST_KEY holds a character an HTTP header cannot carry") as info:
        api_key_from_env(ProviderSpec("p", "openai_compatible", api_key_env="BENCH_TEST_KEY"))
    assert "sk-" not in str(info.value) and info.value.kind == "auth"


@pytest.mark.parametrize("value", [None, "", "   "])
def test_missing_api_key_is_an_auth_error_naming_the_variable(monkeypatch, value):
    if value is not None:
        monkeypatch.setenv("BENCH_TEST_KEY", value)
    spec = ProviderSpec("p", "openai_compatible", api_key_env="BENCH_TEST_KEY")

    with pytest.raises(AuthError, match="environment variable BENCH_TEST_KEY is not set") as info:
        api_key_from_env(spec)
    assert info.value.kind == "auth"


def test_merge_headers_later_layers_win_whatever_the_case():
    merged = merge_headers({"Authorization": "a", "X-One": "1"}, {"authorization": "b"}, {})

    assert {k.lower(): v for k, v in merged.items()} == {"authorization": "b", "x-one": "1"}


# --- complete_with_retries ----------------------------------------------------------------------------


class ScriptedFailures(BaseProvider):
    """Raises the scripted errors in turn, then answers."""

    def __init__(self, *outcomes: BaseException) -> None:
        super().__init__(ProviderSpec("scripted-failures", "test"))
        self.outcomes = list(outcomes)
        self.calls = 0

    async def complete(self, request: CompletionRequest) -> Completion:
        self.calls += 1
        if self.outcomes:
            raise self.outcomes.pop(0)
        return Completion(text="done")


class SleepRecorder:
    def __init__(self) -> None:
        self.delays: list[float] = []

    async def __call__(self, delay: float) -> None:
        self.delays.append(delay)


REQUEST = CompletionRequest(
    model=ModelSpec(name="m", provider=ProviderSpec("p", "test"), id="m", label="m"), messages=()
)


@pytest.mark.asyncio
async def test_transient_errors_are_retried_with_growing_backoff():
    provider = ScriptedFailures(TransientProviderError("boom", status=503), TransientProviderError("again"))
    sleep = SleepRecorder()

    completion = await complete_with_retries(
        provider, REQUEST, max_retries=2, base_delay=0.5, sleep=sleep, rng=random.Random(1)
    )

    assert completion.text == "done"
    assert completion.attempts == 3
    assert 0.5 <= sleep.delays[0] <= 0.625
    assert 1.0 <= sleep.delays[1] <= 1.25


@pytest.mark.asyncio
async def test_backoff_is_capped_at_max_delay():
    provider = ScriptedFailures(*[TransientProviderError("x") for _ in range(6)])
    sleep = SleepRecorder()

    await complete_with_retries(provider, REQUEST, max_retries=6, base_delay=1, max_delay=4, sleep=sleep)

    assert max(sleep.delays) <= 4 * 1.25
    assert sleep.delays[-1] >= 4


@pytest.mark.asyncio
async def test_retry_after_is_respected():
    provider = ScriptedFailures(TransientProviderError("slow down", status=429, retry_after=30))
    sleep = SleepRecorder()

    completion = await complete_with_retries(provider, REQUEST, max_retries=1, max_delay=5, sleep=sleep)

    assert completion.attempts == 2
    assert 30 <= sleep.delays[0] <= 31


@pytest.mark.asyncio
async def test_retry_after_beyond_the_ceiling_gives_up_at_once():
    provider = ScriptedFailures(TransientProviderError("quota", status=429, retry_after=3600))
    sleep = SleepRecorder()

    with pytest.raises(TransientProviderError, match="asked to wait 3600 s") as info:
        await complete_with_retries(provider, REQUEST, max_retries=3, sleep=sleep)
    assert sleep.delays == []
    assert info.value.status == 429


@pytest.mark.asyncio
async def test_gives_up_after_max_retries_keeping_type_status_and_kind():
    errors = [TransientProviderError("upstream down", status=503) for _ in range(3)]
    provider = ScriptedFailures(*errors)

    with pytest.raises(TransientProviderError) as info:
        await complete_with_retries(provider, REQUEST, max_retries=2, sleep=SleepRecorder())

    assert provider.calls == 3
    assert "gave up after 3 attempts" in str(info.value)
    assert "upstream down" in str(info.value)
    assert (info.value.status, info.value.kind) == (503, "http_503")
    assert info.value.__cause__ is errors[-1]


@pytest.mark.asyncio
async def test_no_retries_still_says_one_attempt():
    provider = ScriptedFailures(TransientProviderError("t", kind="timeout"))

    with pytest.raises(TransientProviderError, match="gave up after 1 attempt\\)") as info:
        await complete_with_retries(provider, REQUEST, max_retries=0, sleep=SleepRecorder())
    assert info.value.kind == "timeout"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "error", [AuthError("bad key", status=401), ProviderError("bad request", status=400), ValueError("bug")]
)
async def test_errors_that_are_not_transient_are_not_retried(error):
    provider = ScriptedFailures(error)
    sleep = SleepRecorder()

    with pytest.raises(type(error)) as info:
        await complete_with_retries(provider, REQUEST, max_retries=3, sleep=sleep)

    assert info.value is error
    assert provider.calls == 1
    assert sleep.delays == []


@pytest.mark.asyncio
async def test_cancellation_propagates_untouched():
    provider = ScriptedFailures(asyncio.CancelledError())

    with pytest.raises(asyncio.CancelledError):
        await complete_with_retries(provider, REQUEST, max_retries=3, sleep=SleepRecorder())
    assert provider.calls == 1


@pytest.mark.asyncio
async def test_cancellation_during_backoff_stops_retrying():
    provider = ScriptedFailures(TransientProviderError("x"), TransientProviderError("x"))
    task = asyncio.ensure_future(complete_with_retries(provider, REQUEST, max_retries=3, base_delay=10))
    await asyncio.sleep(0.01)

    task.cancel()

    with pytest.raises(asyncio.CancelledError):
        await task
    assert provider.calls == 1


# --- HttpPool and post_json ---------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_pool_reuses_one_client_per_key_and_closes_them():
    pool = HttpPool(size=4)
    async with pool.client("a") as first:
        pass
    async with pool.client("a") as again, pool.client("b") as other:
        pass

    await pool.aclose()

    assert again is first
    assert other is not first
    assert first.is_closed and other.is_closed
    with pytest.raises(RuntimeError, match="closed"):
        async with pool.client("a"):
            pass


@pytest.mark.asyncio
async def test_pool_lends_at_most_size_clients_per_key():
    pool = HttpPool(size=2)
    busy = 0
    most_busy = 0

    async def borrow() -> None:
        nonlocal busy, most_busy
        async with pool.client("k"):
            busy += 1
            most_busy = max(most_busy, busy)
            await asyncio.sleep(0.01)
            busy -= 1

    await asyncio.gather(*(borrow() for _ in range(6)))
    created = len(pool._made)
    await pool.aclose()

    assert most_busy == 2
    assert created == 2


@pytest.fixture
def model() -> str:
    return f"http-{uuid.uuid4().hex[:10]}"


async def post(server, model: str, pool: HttpPool, secrets: tuple[str, ...] = ()) -> tuple[dict, float]:
    return await post_json(
        pool,
        f"{server.openai_base_url}/chat/completions",
        json_body={"model": model, "messages": [{"role": "user", "content": "hi"}]},
        headers={},
        timeout_s=2,
        key=server.openai_base_url,
        secrets=secrets,
    )


@pytest.mark.asyncio
async def test_post_json_returns_the_body_and_latency(mock_server, model):
    mock_server.add_rule({"model": model, "delay": 0.05})
    pool = HttpPool()
    try:
        body, latency = await post(mock_server, model, pool)
    finally:
        await pool.aclose()

    assert body["choices"][0]["message"]["content"] == "echo: hi"
    assert latency >= 0.05


@pytest.mark.asyncio
async def test_retry_after_ms_wins_over_retry_after(mock_server, model):
    mock_server.add_rule(
        {"model": model, "status": 429, "retry_after": 9, "headers": {"retry-after-ms": 250}}
    )
    pool = HttpPool()
    try:
        with pytest.raises(TransientProviderError) as info:
            await post(mock_server, model, pool)
    finally:
        await pool.aclose()

    assert info.value.retry_after == 0.25


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("rule", "error_type", "status", "kind"),
    [
        ({"status": 404}, ProviderError, 404, "http_404"),
        ({"status": 408}, TransientProviderError, 408, "http_408"),
        ({"status": 403}, AuthError, 403, "http_403"),
        ({"body": "[1, 2]"}, TransientProviderError, None, "malformed"),
        ({"body": ""}, TransientProviderError, None, "malformed"),
        ({"drop": True}, TransientProviderError, None, "connection"),
    ],
    ids=["404", "408", "403", "json-list", "empty-body", "dropped"],
)
async def test_post_json_translates_failures(mock_server, model, rule, error_type, status, kind):
    mock_server.add_rule({"model": model, **rule})
    pool = HttpPool()
    try:
        with pytest.raises(ProviderError) as info:
            await post(mock_server, model, pool)
    finally:
        await pool.aclose()

    assert type(info.value) is error_type
    assert (info.value.status, info.value.kind) == (status, kind)


@pytest.mark.asyncio
async def test_connection_refused_is_transient():
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    pool = HttpPool()
    try:
        with pytest.raises(TransientProviderError) as info:
            await post_json(
                pool, f"http://127.0.0.1:{port}/v1/x", json_body={}, headers={}, timeout_s=1, key="k"
            )
    finally:
        await pool.aclose()

    assert info.value.kind == "connection"
    assert isinstance(info.value.__cause__, Exception)


async def failed_post(server, model: str) -> str:
    """The message of the error a call with ``KEY`` ends in (the test's rule makes it fail)."""
    pool = HttpPool()
    try:
        with pytest.raises(TransientProviderError) as info:
            await post(server, model, pool, secrets=(KEY,))
    finally:
        await pool.aclose()
    return str(info.value)


@pytest.mark.asyncio
async def test_error_excerpt_is_short_and_redacted(mock_server, model):
    mock_server.add_rule({"model": model, "status": 500, "error": f"{KEY} " + "x" * 1000})
    message = await failed_post(mock_server, model)
    assert KEY[:8] not in message
    assert "[REDACTED]" in message
    assert len(message) < 500


@pytest.mark.asyncio
async def test_an_error_quoting_another_providers_key_is_redacted_too(mock_server, model):
    """A proxy that saw two keys quoted the other in its error: only the calling provider's was redacted."""
    other = f"sk-OTHER-{uuid.uuid4().hex}"
    log_redaction().add_secrets([other])  # sent earlier in the session, to another provider
    mock_server.add_rule({"model": model, "status": 502, "error": f"upstream refused {other}"})
    message = await failed_post(mock_server, model)
    assert other[:12] not in message and "[REDACTED]" in message


# --- retry_wait_of: every header that says how long to wait ---------------------------------------------


@pytest.mark.parametrize(
    ("headers", "expected"),
    [
        ({"Retry-After": "7"}, 7.0),
        ({"retry-after-ms": "250", "Retry-After": "7"}, 0.25),
        ({"llm_provider-retry-after": "60"}, 60.0),
        ({"llm_provider-retry-after-ms": "1500"}, 1.5),
        ({"Retry-After": "3", "llm_provider-retry-after": "60"}, 3.0),
        ({"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "6m0s",
          "x-ratelimit-remaining-tokens": "900", "x-ratelimit-reset-tokens": "20ms"}, 360.0),
        ({"x-ratelimit-reset-requests": "1s", "x-ratelimit-reset-tokens": "1m30.5s"}, 90.5),
        ({"llm_provider-x-ratelimit-remaining-tokens": "0", "llm_provider-x-ratelimit-reset-tokens": "2s"}, 2.0),
        ({"anthropic-ratelimit-tokens-remaining": "0", "anthropic-ratelimit-tokens-reset": "2023-11-14T22:13:50Z"},
         30.0),
        ({}, None),
    ],
)
def test_retry_wait_reads_retry_after_its_kin_and_the_rate_limit_resets(headers, expected):
    now = 1_700_000_000.0  # 2023-11-14T22:13:20Z
    wait = retry_wait_of(headers, 429, now=now)
    assert wait == (pytest.approx(expected) if expected is not None else None)


def test_retry_wait_reads_an_http_date():
    now = 1_700_000_000.0
    assert retry_wait_of({"Retry-After": formatdate(now + 12, usegmt=True)}, 503, now=now) == pytest.approx(12)


def test_rate_limit_resets_count_only_on_a_429():
    headers = {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "5s"}
    assert retry_wait_of(headers, 500) is None
    assert retry_wait_of(headers, 429) == 5.0


@pytest.mark.parametrize(
    ("value", "expected"),
    [("20ms", 0.02), ("1h2m3s", 3723.0), ("0.5", 0.5), ("2023-11-14T22:13:25+00:00", 5.0), ("soon", None), ("", None)],
)
def test_parse_reset_formats(value, expected):
    got = parse_reset(value, now=1_700_000_000.0)
    assert got == (pytest.approx(expected) if expected is not None else None)
