"""Both HTTP providers against the real mock server on loopback."""

from __future__ import annotations

import uuid
from collections.abc import AsyncIterator
from typing import Any

import pytest
import pytest_asyncio

from bench_plugin.calls.retry import complete_with_retries
from bench_plugin.core.chat import CompletionRequest, Message
from bench_plugin.core.endpoints import ModelSpec, ProviderSpec
from bench_plugin.core.errors import AuthError, ProviderError, TransientProviderError
from bench_plugin.mock.server import MockServer
from bench_plugin.providers.anthropic import AnthropicProvider
from bench_plugin.providers.http import HttpPool
from bench_plugin.providers.openai_compat import OpenAICompatProvider

KEY = "sk-test-abcdefghijklmnopqrstuvwxyz0123"
KEY_ENV = "BENCH_TEST_API_KEY"


@pytest_asyncio.fixture
async def pool() -> AsyncIterator[HttpPool]:
    pool = HttpPool(size=4)
    yield pool
    await pool.aclose()


@pytest.fixture
def model_id() -> str:
    """A model name no other test uses, so rules on the shared server do not collide."""
    return f"prov-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def api_key(monkeypatch: pytest.MonkeyPatch) -> str:
    monkeypatch.setenv(KEY_ENV, KEY)
    return KEY


def openai_spec(server: MockServer, **overrides: Any) -> ProviderSpec:
    fields: dict[str, Any] = {
        "base_url": server.openai_base_url + "/",
        "api_key_env": KEY_ENV,
        "timeout_s": 5,
    }
    return ProviderSpec("mock-openai", "openai_compatible", **{**fields, **overrides})


def anthropic_spec(server: MockServer, **overrides: Any) -> ProviderSpec:
    fields: dict[str, Any] = {"base_url": server.url, "api_key_env": KEY_ENV, "timeout_s": 5}
    return ProviderSpec("mock-anthropic", "anthropic", **{**fields, **overrides})


def make_request(
    spec: ProviderSpec,
    model_id: str,
    *messages: Message,
    params: dict[str, Any] | None = None,
    model_params: dict[str, Any] | None = None,
    headers: dict[str, str] | None = None,
) -> CompletionRequest:
    """A request for ``model_id``; ``params`` come with the call, ``model_params`` from the suite's model."""
    model_spec = ModelSpec(
        name=model_id,
        provider=spec,
        id=model_id,
        label=model_id,
        params=model_params or {},
        headers=headers or {},
    )
    return CompletionRequest(
        model=model_spec,
        messages=messages or (Message("user", "What is two plus two?"),),
        params=params or {},
    )


def sent_to(server: MockServer, model_id: str) -> list[dict[str, Any]]:
    return [r for r in server.requests if r["model"] == model_id]


# --- OpenAI-compatible --------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_openai_answer_usage_and_latency_are_read(mock_server, pool, model_id, api_key):
    mock_server.add_rule({"model": model_id, "reply": "four", "delay": 0.05})
    provider = OpenAICompatProvider(openai_spec(mock_server), pool)

    completion = await provider.complete(make_request(provider.spec, model_id))

    assert completion.text == "four"
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (5, 1)
    assert completion.latency_s >= 0.05
    assert completion.finish_reason == "stop"
    assert completion.request_id and completion.request_id.startswith("chatcmpl-")
    assert provider.connection_key() == mock_server.openai_base_url


@pytest.mark.asyncio
async def test_openai_sends_auth_and_custom_headers(mock_server, pool, model_id, api_key):
    spec = openai_spec(mock_server, headers={"X-Team": "spec", "X-Shared": "spec"})
    provider = OpenAICompatProvider(spec, pool)

    await provider.complete(make_request(spec, model_id, headers={"x-shared": "model"}))

    [sent] = sent_to(mock_server, model_id)
    assert sent["path"] == "/v1/chat/completions"
    assert sent["headers"]["authorization"] == f"Bearer {KEY}"
    assert sent["headers"]["x-team"] == "spec"
    assert sent["headers"]["x-shared"] == "model"


@pytest.mark.asyncio
async def test_openai_sends_no_authorization_without_a_key(mock_server, pool, model_id):
    spec = openai_spec(mock_server, api_key_env=None)

    await OpenAICompatProvider(spec, pool).complete(make_request(spec, model_id))

    assert "authorization" not in sent_to(mock_server, model_id)[0]["headers"]


@pytest.mark.asyncio
async def test_openai_body_merges_params_and_maps_messages(mock_server, pool, model_id, api_key):
    spec = openai_spec(mock_server)
    request = make_request(
        spec,
        model_id,
        Message("system", "Be brief."),
        Message("user", "Hi", name="alice"),
        Message("assistant", "Hello", name="not a valid name!"),
        Message("user", "Again"),
        params={"max_tokens": 20, "seed": None},
        model_params={"temperature": 0.2, "max_tokens": 100, "seed": 7},
    )

    await OpenAICompatProvider(spec, pool).complete(request)

    body = sent_to(mock_server, model_id)[0]["body"]
    assert body["model"] == model_id
    assert (body["temperature"], body["max_tokens"]) == (0.2, 20)
    assert "seed" not in body
    assert body["messages"] == [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "Hi", "name": "alice"},
        {"role": "assistant", "content": "Hello"},
        {"role": "user", "content": "Again"},
    ]


@pytest.mark.asyncio
async def test_openai_429_with_retry_after_is_retried_then_succeeds(mock_server, pool, model_id, api_key):
    mock_server.add_rule({"model": model_id, "status": 429, "retry_after": 1, "times": 2})
    provider = OpenAICompatProvider(openai_spec(mock_server), pool)
    delays: list[float] = []

    async def record_sleep(delay: float) -> None:
        delays.append(delay)

    completion = await complete_with_retries(
        provider, make_request(provider.spec, model_id), max_retries=2, sleep=record_sleep
    )

    assert completion.text == "echo: What is two plus two?"
    assert completion.attempts == 3
    assert len(delays) == 2
    assert all(1 <= delay <= 1.1 for delay in delays)


@pytest.mark.asyncio
async def test_openai_5xx_is_transient_and_gives_up_after_max_retries(mock_server, pool, model_id, api_key):
    mock_server.add_rule({"model": model_id, "status": 503, "error": "upstream unavailable"})
    provider = OpenAICompatProvider(openai_spec(mock_server), pool)

    async def no_sleep(delay: float) -> None:
        return None

    with pytest.raises(TransientProviderError) as info:
        await complete_with_retries(
            provider, make_request(provider.spec, model_id), max_retries=1, sleep=no_sleep
        )

    assert info.value.status == 503
    assert "upstream unavailable" in str(info.value)
    assert "gave up after 2 attempts" in str(info.value)
    assert len(sent_to(mock_server, model_id)) == 2


@pytest.mark.asyncio
async def test_openai_client_timeout_is_transient(mock_server, pool, model_id, api_key):
    mock_server.add_rule({"model": model_id, "delay": 1})
    provider = OpenAICompatProvider(openai_spec(mock_server, timeout_s=0.2), pool)

    with pytest.raises(TransientProviderError) as info:
        await provider.complete(make_request(provider.spec, model_id))

    assert info.value.kind == "timeout"


@pytest.mark.asyncio
@pytest.mark.parametrize(
    "body",
    [
        "<html>502 Bad Gateway</html>",
        {"choices": []},
        {"choices": [{"message": {"content": None}, "finish_reason": "stop"}]},
        {"choices": [{"message": {"content": "x"}}], "usage": {"prompt_tokens": "many"}},
    ],
    ids=["html", "no-choices", "null-content", "bad-usage"],
)
async def test_openai_malformed_body_is_transient(mock_server, pool, model_id, api_key, body):
    mock_server.add_rule({"model": model_id, "body": body})
    provider = OpenAICompatProvider(openai_spec(mock_server), pool)

    with pytest.raises(TransientProviderError, match="malformed response") as info:
        await provider.complete(make_request(provider.spec, model_id))

    assert info.value.kind == "malformed"


@pytest.mark.asyncio
@pytest.mark.parametrize("reason", ["length", "content_filter"])
async def test_openai_null_content_cut_short_is_an_empty_answer(mock_server, pool, model_id, api_key, reason):
    """The token limit, or a content filter (OpenAI, Azure): what the model did, not a broken body to pay again."""
    body = {"choices": [{"message": {"content": None}, "finish_reason": reason}]}
    mock_server.add_rule({"model": model_id, "body": body})
    provider = OpenAICompatProvider(openai_spec(mock_server), pool)

    completion = await provider.complete(make_request(provider.spec, model_id))

    assert (completion.text, completion.finish_reason) == ("", reason)
    assert completion.usage.input_tokens is None


@pytest.mark.asyncio
async def test_openai_refusal_without_content_is_the_answer(mock_server, pool, model_id, api_key):
    body = {"choices": [{"message": {"content": None, "refusal": "I can't help with that."}, "finish_reason": "stop"}]}
    mock_server.add_rule({"model": model_id, "body": body})
    provider = OpenAICompatProvider(openai_spec(mock_server), pool)

    completion = await provider.complete(make_request(provider.spec, model_id))
    assert (completion.text, completion.finish_reason) == ("I can't help with that.", "stop")


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("code", "error_type"),
    [(429, TransientProviderError), (502, TransientProviderError), (400, ProviderError)],
)
async def test_openai_error_inside_a_200_body_is_an_error(
    mock_server, pool, model_id, api_key, code, error_type
):
    mock_server.add_rule(
        {"model": model_id, "body": {"error": {"code": code, "message": "upstream said no"}}}
    )
    provider = OpenAICompatProvider(openai_spec(mock_server), pool)

    with pytest.raises(ProviderError, match="upstream said no") as info:
        await provider.complete(make_request(provider.spec, model_id))

    assert type(info.value) is error_type
    assert info.value.status == code


@pytest.mark.asyncio
async def test_openai_401_is_an_auth_error_without_the_key(mock_server, pool, model_id, api_key):
    mock_server.add_rule({"model": model_id, "status": 401})
    provider = OpenAICompatProvider(openai_spec(mock_server), pool)

    with pytest.raises(AuthError) as info:
        await complete_with_retries(provider, make_request(provider.spec, model_id), max_retries=3)

    assert info.value.status == 401
    assert "Incorrect API key provided: [REDACTED]" in str(info.value)
    assert KEY[:8] not in str(info.value)
    assert len(sent_to(mock_server, model_id)) == 1


@pytest.mark.asyncio
async def test_missing_key_variable_is_an_auth_error_and_sends_nothing(mock_server, pool, model_id):
    provider = OpenAICompatProvider(openai_spec(mock_server), pool)

    with pytest.raises(AuthError, match=f"environment variable {KEY_ENV} is not set"):
        await provider.complete(make_request(provider.spec, model_id))

    assert sent_to(mock_server, model_id) == []


@pytest.mark.asyncio
@pytest.mark.parametrize("provider_type", [OpenAICompatProvider, AnthropicProvider])
async def test_key_never_appears_in_an_error_even_when_echoed(
    mock_server, pool, model_id, api_key, provider_type
):
    echo = f"key {KEY} rejected; starts {KEY[:10]}, ends {KEY[-9:]}"
    mock_server.add_rule({"model": model_id, "status": 500, "error": echo, "times": 1})
    mock_server.add_rule({"model": model_id, "status": 400, "body": f"bad request for {KEY}", "times": 1})
    spec_of = openai_spec if provider_type is OpenAICompatProvider else anthropic_spec
    provider = provider_type(spec_of(mock_server), pool)
    request = make_request(provider.spec, model_id)

    messages = []
    for _ in range(2):
        with pytest.raises(ProviderError) as info:
            await complete_with_retries(provider, request, max_retries=0)
        messages.append(str(info.value) + repr(info.value) + str(info.value.args))

    assert all("[REDACTED]" in message for message in messages)
    for fragment in (KEY, KEY[:8], KEY[-8:]):
        assert not any(fragment in message for message in messages)


@pytest.mark.asyncio
async def test_openai_dropped_connection_is_transient(mock_server, pool, model_id, api_key):
    mock_server.add_rule({"model": model_id, "drop": True})
    provider = OpenAICompatProvider(openai_spec(mock_server), pool)

    with pytest.raises(TransientProviderError) as info:
        await provider.complete(make_request(provider.spec, model_id))

    assert info.value.kind == "connection"


# --- Anthropic ----------------------------------------------------------------------------------------


@pytest.mark.asyncio
async def test_anthropic_answer_usage_and_headers(mock_server, pool, model_id, api_key):
    mock_server.add_rule({"model": model_id, "reply": "four"})
    spec = anthropic_spec(mock_server, headers={"anthropic-beta": "x"})
    provider = AnthropicProvider(spec, pool)

    completion = await provider.complete(make_request(spec, model_id, headers={"X-Model": "m"}))

    assert completion.text == "four"
    assert (completion.usage.input_tokens, completion.usage.output_tokens) == (5, 1)
    assert completion.finish_reason == "end_turn"
    assert completion.latency_s > 0
    [sent] = sent_to(mock_server, model_id)
    assert sent["path"] == "/v1/messages"
    assert sent["headers"]["x-api-key"] == KEY
    assert sent["headers"]["anthropic-version"] == "2023-06-01"
    assert sent["headers"]["content-type"] == "application/json"
    assert (sent["headers"]["anthropic-beta"], sent["headers"]["x-model"]) == ("x", "m")
    assert "authorization" not in sent["headers"]


@pytest.mark.asyncio
async def test_anthropic_body_moves_system_out_and_merges_turns(mock_server, pool, model_id, api_key):
    spec = anthropic_spec(mock_server, base_url=mock_server.url + "/v1/")
    request = make_request(
        spec,
        model_id,
        Message("system", "Be brief."),
        Message("assistant", "I greet first."),
        Message("system", "Be kind."),
        Message("user", "Hi"),
        Message("user", "Still there?", name="bob"),
        params={"stop": "END", "top_k": None},
        model_params={"temperature": 0.3, "top_k": 5},
    )

    await AnthropicProvider(spec, pool).complete(request)

    [sent] = sent_to(mock_server, model_id)
    assert sent["path"] == "/v1/messages"
    body = sent["body"]
    assert body["system"] == "Be brief.\n\nBe kind."
    assert body["messages"] == [
        {"role": "user", "content": "(conversation start)"},
        {"role": "assistant", "content": "I greet first."},
        {"role": "user", "content": "Hi\n\nStill there?"},
    ]
    assert (body["max_tokens"], body["temperature"], body["stop_sequences"]) == (1024, 0.3, ["END"])
    assert "top_k" not in body and "stop" not in body


@pytest.mark.asyncio
async def test_anthropic_max_tokens_param_and_no_system(mock_server, pool, model_id, api_key):
    spec = anthropic_spec(mock_server)

    await AnthropicProvider(spec, pool).complete(make_request(spec, model_id, params={"max_tokens": 64}))

    body = sent_to(mock_server, model_id)[0]["body"]
    assert body["max_tokens"] == 64
    assert "system" not in body


@pytest.mark.asyncio
async def test_anthropic_rejects_roles_it_does_not_have(pool, model_id, api_key, mock_server):
    spec = anthropic_spec(mock_server)

    with pytest.raises(ProviderError, match="'function'"):  # tool results are 'tool' messages
        await AnthropicProvider(spec, pool).complete(make_request(spec, model_id, Message("function", "42")))


@pytest.mark.asyncio
async def test_anthropic_overloaded_529_is_retried(mock_server, pool, model_id, api_key):
    mock_server.add_rule({"model": model_id, "status": 529, "error": "Overloaded", "times": 1})
    provider = AnthropicProvider(anthropic_spec(mock_server), pool)

    async def no_sleep(delay: float) -> None:
        return None

    completion = await complete_with_retries(
        provider, make_request(provider.spec, model_id), max_retries=2, sleep=no_sleep
    )

    assert completion.attempts == 2


@pytest.mark.asyncio
async def test_anthropic_error_body_message_is_quoted(mock_server, pool, model_id, api_key):
    mock_server.add_rule({"model": model_id, "status": 400, "error": "max_tokens: must be positive"})
    provider = AnthropicProvider(anthropic_spec(mock_server), pool)

    with pytest.raises(ProviderError, match="max_tokens: must be positive") as info:
        await provider.complete(make_request(provider.spec, model_id))

    assert type(info.value) is ProviderError
    assert info.value.status == 400


@pytest.mark.asyncio
async def test_anthropic_401_is_an_auth_error_without_the_key(mock_server, pool, model_id, api_key):
    mock_server.add_rule({"model": model_id, "status": 401})
    provider = AnthropicProvider(anthropic_spec(mock_server), pool)

    with pytest.raises(AuthError) as info:
        await provider.complete(make_request(provider.spec, model_id))

    assert KEY[:8] not in str(info.value)


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("body", "error_type"),
    [
        ({"type": "error", "error": {"type": "overloaded_error", "message": "busy"}}, TransientProviderError),
        ({"type": "error", "error": {"type": "invalid_request_error", "message": "no"}}, ProviderError),
        ({"type": "message", "content": "not a list"}, TransientProviderError),
        ("not json", TransientProviderError),
    ],
    ids=["overloaded-in-200", "invalid-in-200", "content-not-list", "not-json"],
)
async def test_anthropic_bad_200_bodies(mock_server, pool, model_id, api_key, body, error_type):
    mock_server.add_rule({"model": model_id, "body": body})
    provider = AnthropicProvider(anthropic_spec(mock_server), pool)

    with pytest.raises(ProviderError) as info:
        await provider.complete(make_request(provider.spec, model_id))

    assert type(info.value) is error_type


def test_anthropic_default_url_and_connection_key():
    provider = AnthropicProvider(ProviderSpec("a", "anthropic"), HttpPool())

    assert provider.url == "https://api.anthropic.com/v1/messages"
    assert provider.connection_key() == "https://api.anthropic.com"


# --- error payloads in a 200, retry headers, finish reason and response id ---------------------------------


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("error", "kind", "transient"),
    [
        ({"code": "rate_limit_exceeded", "message": "busy"}, "http_429", True),
        ({"type": "server_error", "message": "oops"}, "http_500", True),
        ({"code": "context_length_exceeded", "message": "too long"}, "http_400", False),
        ({"code": "mystery", "message": "upstream hiccup"}, "error_payload", True),
        ("provider returned error", "error_payload", True),
    ],
)
async def test_openai_named_error_codes_in_a_200_body(mock_server, pool, model_id, api_key, error, kind, transient):
    mock_server.add_rule({"model": model_id, "body": {"error": error}})
    provider = OpenAICompatProvider(openai_spec(mock_server), pool)

    with pytest.raises(ProviderError, match="error in a 200 response") as info:
        await provider.complete(make_request(provider.spec, model_id))

    assert info.value.kind == kind
    assert isinstance(info.value, TransientProviderError) is transient


@pytest.mark.asyncio
async def test_openai_error_inside_the_first_choice_is_an_error(mock_server, pool, model_id, api_key):
    choice = {"index": 0, "finish_reason": "error", "message": {"role": "assistant", "content": ""},
              "error": {"code": 502, "message": "upstream provider failed"}}
    mock_server.add_rule({"model": model_id, "body": {"id": "gen-1", "choices": [choice]}})
    provider = OpenAICompatProvider(openai_spec(mock_server), pool)

    with pytest.raises(TransientProviderError, match="upstream provider failed") as info:
        await provider.complete(make_request(provider.spec, model_id))
    assert info.value.status == 502


@pytest.mark.asyncio
@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_an_error_in_a_200_body_is_one_escaped_line_without_the_key(mock_server, pool, model_id, api_key, wire):
    """A server's text reaches the terminal and report.md: no escape sequence, no line of its own, no key."""
    text = f"boom \x1b[2J\x1b[31mRED\x1b[0m\nFAKE: 100 passed (key {KEY})"
    body = {"error": {"code": 500, "message": text}} if wire == "openai" else \
        {"type": "error", "error": {"type": "api_error", "message": text}}
    mock_server.add_rule({"model": model_id, "body": body})
    spec = openai_spec(mock_server) if wire == "openai" else anthropic_spec(mock_server)
    provider = OpenAICompatProvider(spec, pool) if wire == "openai" else AnthropicProvider(spec, pool)

    with pytest.raises(TransientProviderError) as info:
        await provider.complete(make_request(provider.spec, model_id))
    message = str(info.value)
    assert "\x1b" not in message and "\n" not in message and "RED" in message and "FAKE: 100 passed" in message
    assert KEY not in message and "[REDACTED]" in message


@pytest.mark.asyncio
@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_a_rate_limit_in_a_200_body_waits_what_the_headers_ask(mock_server, pool, model_id, api_key, wire):
    body = {"error": {"code": 429, "message": "slow down"}} if wire == "openai" else \
        {"type": "error", "error": {"type": "rate_limit_error", "message": "slow down"}}
    mock_server.add_rule({"model": model_id, "body": body, "headers": {"Retry-After": "3"}})
    spec = openai_spec(mock_server) if wire == "openai" else anthropic_spec(mock_server)
    provider = OpenAICompatProvider(spec, pool) if wire == "openai" else AnthropicProvider(spec, pool)

    with pytest.raises(TransientProviderError) as info:
        await provider.complete(make_request(provider.spec, model_id))
    assert info.value.kind == "http_429" and info.value.retry_after == pytest.approx(3.0)


@pytest.mark.asyncio
@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_an_answer_quoting_the_key_is_stored_without_it(mock_server, pool, model_id, api_key, wire):
    """A server that echoes the request's headers in its answer: the key must not reach a record or the cache."""
    mock_server.add_rule({"model": model_id, "reply": f"you sent Authorization: Bearer {KEY} and {KEY[:12]}..."})
    spec = openai_spec(mock_server) if wire == "openai" else anthropic_spec(mock_server)
    provider = OpenAICompatProvider(spec, pool) if wire == "openai" else AnthropicProvider(spec, pool)

    completion = await provider.complete(make_request(provider.spec, model_id))
    assert KEY[:8] not in completion.text
    assert completion.text == "you sent Authorization: Bearer [REDACTED] and [REDACTED]..."


@pytest.mark.asyncio
@pytest.mark.parametrize(
    ("headers", "wait"),
    [({"llm_provider-retry-after": "60"}, 60.0), ({"retry-after-ms": "1500"}, 1.5),
     ({"x-ratelimit-remaining-tokens": "0", "x-ratelimit-reset-tokens": "2m"}, 120.0)],
)
async def test_429_carries_the_wait_any_retry_header_asks_for(mock_server, pool, model_id, api_key, headers, wait):
    mock_server.add_rule({"model": model_id, "status": 429, "headers": headers})
    provider = OpenAICompatProvider(openai_spec(mock_server), pool)

    with pytest.raises(TransientProviderError) as info:
        await provider.complete(make_request(provider.spec, model_id))
    assert info.value.retry_after == pytest.approx(wait)


@pytest.mark.asyncio
async def test_anthropic_429_with_an_http_date_retry_after(mock_server, pool, model_id, api_key):
    mock_server.add_rule({"model": model_id, "status": 429, "retry_after_date": 30})
    provider = AnthropicProvider(anthropic_spec(mock_server), pool)

    with pytest.raises(TransientProviderError) as info:
        await provider.complete(make_request(provider.spec, model_id))
    assert info.value.kind == "http_429" and 25 <= (info.value.retry_after or 0) <= 31


@pytest.mark.asyncio
@pytest.mark.parametrize("wire", ["openai", "anthropic"])
async def test_finish_reason_and_response_id_are_read(mock_server, pool, model_id, api_key, wire):
    spec = openai_spec(mock_server) if wire == "openai" else anthropic_spec(mock_server)
    provider = OpenAICompatProvider(spec, pool) if wire == "openai" else AnthropicProvider(spec, pool)

    completion = await provider.complete(make_request(provider.spec, model_id))

    assert completion.finish_reason == ("stop" if wire == "openai" else "end_turn")
    prefix = "chatcmpl-mock-" if wire == "openai" else "msg_mock_"
    assert completion.request_id and completion.request_id.startswith(prefix)
