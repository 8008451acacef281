"""Streamed answers from the loopback mock server (providers/streaming.py).

The timing measured is the one configured, the stream is bounded, and only failures before the first byte are retried.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from bench_plugin.calls.call_log import CallEntry, stream_timing
from bench_plugin.calls.retry import complete_with_retries
from bench_plugin.core.chat import Completion, CompletionRequest, Message
from bench_plugin.core.endpoints import ModelSpec, ProviderSpec
from bench_plugin.core.errors import ProviderError, TransientProviderError
from bench_plugin.mock.rules import compile_rule
from bench_plugin.mock.server import MockServer, parse_args
from bench_plugin.providers.anthropic import AnthropicProvider
from bench_plugin.providers.http import HttpPool
from bench_plugin.providers.interface import BaseProvider
from bench_plugin.providers.openai_compat import OpenAICompatProvider
from bench_plugin.providers.streaming import STREAM_CUT, STREAM_ERROR, wants_stream

FORMATS = ("openai", "anthropic")
WORDS = " ".join(f"w{i}" for i in range(12))


@pytest_asyncio.fixture
async def pool() -> AsyncIterator[HttpPool]:
    pool = HttpPool(size=4)
    yield pool
    await pool.aclose()


@pytest.fixture
def model_id() -> str:
    return f"stream-{uuid.uuid4().hex[:10]}"


def provider_for(kind: str, server: MockServer, pool: HttpPool, **overrides: Any) -> BaseProvider:
    fields: dict[str, Any] = {"timeout_s": 10, "stream": True, **overrides}
    if kind == "openai":
        return OpenAICompatProvider(ProviderSpec("s-openai", "openai_compatible", server.openai_base_url, **fields),
                                    pool)
    return AnthropicProvider(ProviderSpec("s-anthropic", "anthropic", server.url, **fields), pool)


def request(provider: BaseProvider, model_id: str, text: str = "hi", stream: bool | None = None) -> CompletionRequest:
    model = ModelSpec(model_id, provider.spec, model_id, model_id, stream=stream)
    return CompletionRequest(model, (Message("user", text),))


def requests_of(server: MockServer, model_id: str) -> list[dict[str, Any]]:
    return [r for r in server.requests if r["model"] == model_id]


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", FORMATS)
async def test_the_measured_ttft_and_token_rate_are_those_the_server_was_given(
    kind: str, mock_server: MockServer, pool: HttpPool, model_id: str
) -> None:
    # 0.4 s to the first token, then 20 tokens a second: wide tolerances, for a loaded 2-core machine
    mock_server.add_rule({"model": model_id, "reply": WORDS, "ttft": 0.4, "tokens_per_s": 20})
    provider = provider_for(kind, mock_server, pool)

    answer = await provider.complete(request(provider, model_id))

    assert answer.text == WORDS and answer.usage.output_tokens == 12
    assert answer.ttft_s is not None and 0.35 <= answer.ttft_s <= 1.5
    assert answer.tokens_per_s is not None and 10 <= answer.tokens_per_s <= 40
    assert answer.itl_s is not None and 0.025 <= answer.itl_s <= 0.1
    assert answer.latency_s >= answer.ttft_s + 11 * 0.04  # the stream's end, not its first token
    assert requests_of(mock_server, model_id)[0]["body"]["stream"] is True


@pytest.mark.asyncio
async def test_openai_asks_for_the_usage_in_the_stream(mock_server: MockServer, pool: HttpPool, model_id: str) -> None:
    provider = provider_for("openai", mock_server, pool)
    await provider.complete(request(provider, model_id))
    assert requests_of(mock_server, model_id)[0]["body"]["stream_options"] == {"include_usage": True}


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", FORMATS)
async def test_streamed_tool_calls_are_assembled(kind: str, mock_server: MockServer, pool: HttpPool,
                                                 model_id: str) -> None:
    mock_server.add_rule({"model": model_id, "tool_calls": [{"name": "lookup", "arguments": {"q": "a b c", "n": 3}}]})
    provider = provider_for(kind, mock_server, pool)

    answer = await provider.complete(request(provider, model_id))

    [call] = answer.tool_calls
    assert call.name == "lookup" and json.loads(call.arguments) == {"q": "a b c", "n": 3}
    assert answer.finish_reason in ("tool_calls", "tool_use") and answer.ttft_s is not None


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", FORMATS)
async def test_a_stream_dropped_midway_is_final_and_not_retried(kind: str, mock_server: MockServer, pool: HttpPool,
                                                                model_id: str) -> None:
    mock_server.add_rule({"model": model_id, "reply": WORDS, "stream_drop_after": 3})
    provider = provider_for(kind, mock_server, pool)

    with pytest.raises(ProviderError) as caught:
        await complete_with_retries(provider, request(provider, model_id), max_retries=3, base_delay=0.01)

    assert caught.value.kind == STREAM_CUT and not isinstance(caught.value, TransientProviderError)
    assert "not retried" in caught.value.message
    assert len(requests_of(mock_server, model_id)) == 1


@pytest.mark.asyncio
@pytest.mark.parametrize(("kind", "status"), [("openai", 500), ("anthropic", 529)])
async def test_an_error_event_ends_the_call_with_its_status(kind: str, status: int, mock_server: MockServer,
                                                            pool: HttpPool, model_id: str) -> None:
    mock_server.add_rule({"model": model_id, "reply": WORDS, "stream_error_after": 2})
    provider = provider_for(kind, mock_server, pool)

    with pytest.raises(ProviderError) as caught:
        await complete_with_retries(provider, request(provider, model_id), max_retries=3, base_delay=0.01)

    assert (caught.value.kind, caught.value.status) == (STREAM_ERROR, status)
    assert len(requests_of(mock_server, model_id)) == 1


@pytest.mark.asyncio
@pytest.mark.parametrize("kind", FORMATS)
async def test_failures_before_the_first_byte_are_retried_as_usual(kind: str, mock_server: MockServer,
                                                                   pool: HttpPool, model_id: str) -> None:
    mock_server.add_rule({"model": model_id, "status": 503, "times": 1})
    mock_server.add_rule({"model": model_id, "drop": True, "times": 1})
    provider = provider_for(kind, mock_server, pool)

    answer = await complete_with_retries(provider, request(provider, model_id), max_retries=3, base_delay=0.01)

    assert answer.attempts == 3 and answer.text.startswith("echo:") and answer.ttft_s is not None


@pytest.mark.asyncio
async def test_a_stream_longer_than_max_response_bytes_is_refused(mock_server: MockServer, pool: HttpPool,
                                                                  model_id: str) -> None:
    mock_server.add_rule({"model": model_id, "reply": "word " * 2000})
    provider = provider_for("openai", mock_server, pool, max_response_bytes=4096)

    with pytest.raises(ProviderError) as caught:
        await provider.complete(request(provider, model_id))

    assert caught.value.kind == "too_large" and "max_response_bytes" in caught.value.message


@pytest.mark.asyncio
async def test_the_whole_stream_is_bounded_by_the_attempts_deadline(mock_server: MockServer, pool: HttpPool,
                                                                    model_id: str) -> None:
    # each token comes within a read timeout; the stream in all does not come within the attempt's
    mock_server.add_rule({"model": model_id, "reply": WORDS, "tokens_per_s": 4})
    provider = provider_for("openai", mock_server, pool, timeout_s=1.0)

    with pytest.raises(ProviderError) as caught:
        await provider.complete(request(provider, model_id))

    assert caught.value.kind == STREAM_CUT and "timed out" in caught.value.message


@pytest.mark.asyncio
@pytest.mark.parametrize("body", ["<html>Bad gateway</html>", {"choices": []}])
async def test_an_answer_that_is_no_event_stream_is_refused_in_words(body: Any, mock_server: MockServer,
                                                                     pool: HttpPool, model_id: str) -> None:
    mock_server.add_rule({"model": model_id, "body": body})
    provider = provider_for("openai", mock_server, pool)

    with pytest.raises(ProviderError) as caught:
        await provider.complete(request(provider, model_id))

    assert caught.value.kind == STREAM_CUT and "expected an event stream" in caught.value.message


@pytest.mark.asyncio
async def test_a_models_stream_false_wins_over_its_providers(mock_server: MockServer, pool: HttpPool,
                                                             model_id: str) -> None:
    provider = provider_for("anthropic", mock_server, pool)
    call = request(provider, model_id, stream=False)

    answer = await provider.complete(call)

    assert not wants_stream(provider.spec, call) and answer.ttft_s is None
    assert "stream" not in requests_of(mock_server, model_id)[0]["body"]


def test_a_cache_hit_carries_no_timing_in_the_call_log() -> None:
    timed = Completion("x", latency_s=1.0, ttft_s=0.2, tokens_per_s=50.0, itl_s=0.02)
    assert stream_timing(timed) == {"ttft_s": 0.2, "tokens_per_s": 50.0, "itl_s": 0.02}
    entry = CallEntry("candidate", "m", "p", 1, completion=Completion("x", ttft_s=0.2, cached=True), cache="hit")
    assert "ttft_s" not in entry.to_dict() and entry.to_dict()["cache"] == "hit"


def test_the_mock_servers_streaming_keys_are_checked() -> None:
    with pytest.raises(ValueError, match="rule ttft must be a number"):
        compile_rule({"ttft": "slow"})
    with pytest.raises(ValueError, match="stream_drop_after must be a whole number"):
        compile_rule({"stream_drop_after": -1})
    options = parse_args(["--ttft", "0.2", "--tokens-per-s", "50"])
    assert (options.ttft, options.tokens_per_s) == (0.2, 50.0)


@pytest.mark.asyncio
async def test_a_stream_quoting_the_calls_key_has_it_redacted(mock_server: MockServer, pool: HttpPool, model_id: str,
                                                              monkeypatch: pytest.MonkeyPatch) -> None:
    key = "sk-stream-abcdefghijklmnop0123456789"
    monkeypatch.setenv("BENCH_STREAM_KEY", key)
    mock_server.add_rule({"model": model_id, "reply": f"your key is {key} and ends {key[-10:]}",
                          "tool_calls": [{"name": "leak", "arguments": {"k": key}}]})
    provider = provider_for("openai", mock_server, pool, api_key_env="BENCH_STREAM_KEY")

    answer = await provider.complete(request(provider, model_id))

    assert key not in answer.text and key[-10:] not in answer.text and "[REDACTED]" in answer.text
    assert key not in answer.tool_calls[0].arguments
