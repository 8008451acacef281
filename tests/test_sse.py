"""The event-stream framing (providers/sse.py) and what each wire format's events add up to."""

from __future__ import annotations

import json
from typing import Any

import pytest

from bench_plugin.core.errors import ProviderError
from bench_plugin.providers.anthropic import body_error as anthropic_error
from bench_plugin.providers.anthropic_stream import AnthropicStream
from bench_plugin.providers.openai_compat import body_error as openai_error
from bench_plugin.providers.openai_stream import OpenAIStream
from bench_plugin.providers.sse import EventParser, ServerEvent, StreamFormatError
from bench_plugin.providers.streaming import StreamEventError


def events_of(*pieces: bytes) -> list[ServerEvent]:
    parser = EventParser(max_line_bytes=64)
    found = [event for piece in pieces for event in parser.feed(piece)]
    return found + parser.close()


def test_events_split_anywhere_come_out_whole() -> None:
    body = b"event: a\r\ndata: one\r\ndata: two\r\n\r\n: keep-alive\n\nid: 7\nretry: 10\ndata:three\n\n"
    whole = events_of(body)
    assert whole == [ServerEvent("a", "one\ntwo"), ServerEvent("message", "three")]
    for cut in range(1, len(body)):
        assert events_of(body[:cut], body[cut:]) == whole


def test_the_last_event_without_its_blank_line_still_counts() -> None:
    assert events_of(b"data: [DONE]") == [ServerEvent("message", "[DONE]")]


def test_a_line_without_end_longer_than_the_bound_is_refused() -> None:
    with pytest.raises(StreamFormatError, match="longer than 64 bytes"):
        events_of(b"data: " + b"x" * 100)


def test_bytes_that_are_not_utf8_are_refused() -> None:
    with pytest.raises(StreamFormatError, match="not UTF-8"):
        events_of(b"data: \xff\xfe\n\n")


def feed_all(assembler: Any, events: list[tuple[str, Any]]) -> list[bool]:
    return [assembler.feed(ServerEvent(name, data if isinstance(data, str) else json.dumps(data)))
            for name, data in events]


def openai_chunk(delta: dict[str, Any], finish: str | None = None) -> dict[str, Any]:
    return {"id": "c1", "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]}


def test_openai_chunks_add_up_to_text_tool_calls_finish_reason_and_usage() -> None:
    stream = OpenAIStream(openai_error)
    tokens = feed_all(stream, [
        ("message", openai_chunk({"role": "assistant", "content": ""})),
        ("message", openai_chunk({"content": "Hel"})),
        ("message", openai_chunk({"content": "lo"})),
        ("message", openai_chunk({"tool_calls": [{"index": 0, "id": "call_9", "function": {"name": "get",
                                                                                         "arguments": ""}}]})),
        ("message", openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '{"city": '}}]})),
        ("message", openai_chunk({"tool_calls": [{"index": 0, "function": {"arguments": '"Oslo"}'}}]})),
        ("message", openai_chunk({}, "tool_calls")),
        ("message", {"id": "c1", "choices": [], "usage": {"prompt_tokens": 7, "completion_tokens": 5}}),
        ("message", "[DONE]"),
    ])
    assert tokens == [False, True, True, True, True, True, False, False, False]
    assert stream.finished()
    answer = stream.completion()
    assert answer.text == "Hello" and answer.finish_reason == "tool_calls" and answer.request_id == "c1"
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (7, 5)
    assert [(c.id, c.name, json.loads(c.arguments)) for c in answer.tool_calls] == [("call_9", "get", {"city": "Oslo"})]


def test_an_error_chunk_is_an_error_event_with_its_status() -> None:
    stream = OpenAIStream(openai_error)
    with pytest.raises(StreamEventError) as caught:
        feed_all(stream, [("message", {"error": {"message": "overloaded", "code": 503}})])
    assert caught.value.error.status == 503


@pytest.mark.parametrize("data", ["{not json", "[1, 2]", json.dumps(openai_chunk({"content": 3}))])
def test_an_openai_chunk_that_is_not_the_format_is_malformed(data: str) -> None:
    with pytest.raises(ProviderError, match="malformed"):
        OpenAIStream(openai_error).feed(ServerEvent("message", data))


def anthropic_events(*blocks: tuple[str, Any]) -> list[tuple[str, Any]]:
    start = {"type": "message_start", "message": {"id": "msg_1", "usage": {"input_tokens": 9, "output_tokens": 1}}}
    return [("message_start", start), ("ping", {"type": "ping"}), *blocks]


def test_anthropic_events_add_up_to_text_tool_use_stop_reason_and_usage() -> None:
    stream = AnthropicStream(anthropic_error)
    tokens = feed_all(stream, anthropic_events(
        ("content_block_start", {"type": "content_block_start", "index": 0,
                                 "content_block": {"type": "text", "text": ""}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "text_delta", "text": "Let me look."}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 0}),
        ("content_block_start", {"type": "content_block_start", "index": 1,
                                 "content_block": {"type": "tool_use", "id": "toolu_1", "name": "get", "input": {}}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 1,
                                 "delta": {"type": "input_json_delta", "partial_json": '{"city":'}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 1,
                                 "delta": {"type": "input_json_delta", "partial_json": ' "Oslo"}'}}),
        ("content_block_stop", {"type": "content_block_stop", "index": 1}),
        ("message_delta", {"type": "message_delta", "delta": {"stop_reason": "tool_use"},
                           "usage": {"output_tokens": 12}}),
    ))
    assert tokens == [False, False, False, True, False, False, True, True, False, False]
    assert not stream.finished()
    feed_all(stream, [("message_stop", {"type": "message_stop"})])
    answer = stream.completion()
    assert stream.finished() and answer.text == "Let me look." and answer.finish_reason == "tool_use"
    assert (answer.usage.input_tokens, answer.usage.output_tokens, answer.request_id) == (9, 12, "msg_1")
    calls = [(c.id, c.name, json.loads(c.arguments)) for c in answer.tool_calls]
    assert calls == [("toolu_1", "get", {"city": "Oslo"})]


def test_an_anthropic_error_event_carries_the_status_of_its_type() -> None:
    stream = AnthropicStream(anthropic_error)
    with pytest.raises(StreamEventError) as caught:
        feed_all(stream, anthropic_events(("error", {"type": "error", "error": {"type": "overloaded_error",
                                                                               "message": "Overloaded"}})))
    assert caught.value.error.status == 529 and "Overloaded" in caught.value.error.message


def test_a_thinking_delta_counts_as_a_token_but_not_as_text() -> None:
    stream = AnthropicStream(anthropic_error)
    tokens = feed_all(stream, anthropic_events(
        ("content_block_start", {"type": "content_block_start", "index": 0, "content_block": {"type": "thinking"}}),
        ("content_block_delta", {"type": "content_block_delta", "index": 0,
                                 "delta": {"type": "thinking_delta", "thinking": "hmm"}}),
    ))
    assert tokens[-1] is True and stream.completion().text == ""


@pytest.mark.parametrize("event", [
    {"type": "content_block_delta", "index": -1, "delta": {"type": "text_delta", "text": "x"}},
    {"type": "content_block_delta", "index": 0, "delta": {"type": "text_delta", "text": 5}},
    {"type": "message_start"},
])
def test_an_anthropic_event_that_is_not_the_format_is_malformed(event: dict[str, Any]) -> None:
    with pytest.raises(ProviderError, match="malformed"):
        AnthropicStream(anthropic_error).feed(ServerEvent(event["type"], json.dumps(event)))


@pytest.mark.parametrize("data", [
    '{"choices": [], "usage": {"completion_tokens": 123456789012345678901234567890}}',
    '{"choices": [], "usage": {"completion_tokens": 1e400}}', '{"choices": [], "x": NaN}',
    "[" * 80 + "]" * 80, '{"id": "' + "x" * 70_000 + '", "deep": ' + "[" * 80 + "]" * 80 + "}",
])
def test_an_event_beyond_the_json_bounds_is_malformed(data: str) -> None:
    with pytest.raises(ProviderError, match="malformed"):
        OpenAIStream(openai_error).feed(ServerEvent("message", data))
