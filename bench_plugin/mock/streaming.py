"""The mock server's event streams: a completion body told as server-sent events, paced like a real server.

A request with ``"stream": true`` gets its answer as OpenAI ``chat.completion.chunk`` events (ending with a
usage chunk and ``[DONE]``) or Anthropic's event stream (``message_start`` ... ``message_stop``). The first
event leaves with the headers; the first token follows ``ttft`` seconds later and the others at
``tokens_per_s`` (one word, or one piece of a tool's arguments, per token event), so a test can compare
what the client measured with what the server was told. ``stream_drop_after: N`` hangs up after N tokens;
``stream_error_after: N`` sends an error event after N tokens.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterator, Mapping
from dataclasses import dataclass, replace
from typing import Any

_WORD = re.compile(r"\s*\S+")
_ARGUMENT_PIECES = 3  # a tool's arguments arrive in about this many pieces


@dataclass(frozen=True)
class StreamPace:
    """How an answer streams: ``ttft_s`` to the first token, then ``tokens_per_s`` (None: no wait between them)."""

    ttft_s: float = 0.0
    tokens_per_s: float | None = None
    drop_after: int | None = None
    error_after: int | None = None

    def for_rule(self, rule: Mapping[str, Any]) -> StreamPace:
        """This pace with a rule's ``ttft``, ``tokens_per_s``, ``stream_drop_after`` and ``stream_error_after``."""
        return replace(
            self,
            ttft_s=float(rule.get("ttft", self.ttft_s)),
            tokens_per_s=float(rule["tokens_per_s"]) if "tokens_per_s" in rule else self.tokens_per_s,
            drop_after=rule.get("stream_drop_after", self.drop_after),
            error_after=rule.get("stream_error_after", self.error_after),
        )

    def token_at(self, index: int) -> float:
        """Seconds after the headers when token ``index`` (0-based) leaves."""
        gap = 1.0 / self.tokens_per_s if self.tokens_per_s else 0.0
        return self.ttft_s + index * gap


@dataclass(frozen=True)
class TimedEvent:
    """One event's bytes and when it leaves, in seconds after the answer's headers."""

    at: float
    data: bytes


@dataclass(frozen=True)
class EventStream:
    """The events of one answer; ``drop``: hang up after the last one, without ending the body."""

    events: tuple[TimedEvent, ...]
    drop: bool = False


def stream_events(route: str, completion: Mapping[str, Any], pace: StreamPace) -> EventStream:
    """``completion`` (a body in ``route``'s format) as paced events, cut as ``pace`` says."""
    steps = _anthropic_steps(completion) if route == "anthropic" else _openai_steps(completion)
    timed: list[TimedEvent] = []
    tokens, at = 0, 0.0
    for is_token, data in steps:
        if is_token and tokens in (pace.drop_after, pace.error_after):
            break
        if is_token:
            at = pace.token_at(tokens)
            tokens += 1
        timed.append(TimedEvent(at, data))
    else:
        return EventStream(tuple(timed))
    if tokens == pace.error_after:
        timed.append(TimedEvent(at, _error_event(route)))
        return EventStream(tuple(timed))
    return EventStream(tuple(timed), drop=True)


def _sse(payload: Any, event: str | None = None) -> bytes:
    head = f"event: {event}\n" if event else ""
    data = payload if isinstance(payload, str) else json.dumps(payload)
    return f"{head}data: {data}\n\n".encode()


def _words(text: str) -> list[str]:
    return _WORD.findall(text) if text else []


def _pieces(text: str) -> list[str]:
    size = max(1, -(-len(text) // _ARGUMENT_PIECES))
    return [text[i:i + size] for i in range(0, len(text), size)] or [""]


def _openai_steps(body: Mapping[str, Any]) -> Iterator[tuple[bool, bytes]]:
    """(is a token, event) of a chat completion: the role first, then words and tool-call pieces, then the end."""
    choice = body["choices"][0]
    head = {key: body[key] for key in ("id", "created", "model")} | {"object": "chat.completion.chunk"}

    def chunk(delta: dict[str, Any], finish: str | None = None) -> bytes:
        return _sse({**head, "choices": [{"index": 0, "delta": delta, "finish_reason": finish}]})

    yield False, chunk({"role": "assistant", "content": ""})
    yield False, b": the mock keeps the stream alive\n\n"
    for word in _words(choice["message"].get("content") or ""):
        yield True, chunk({"content": word})
    for index, call in enumerate(choice["message"].get("tool_calls") or ()):
        function = call["function"]
        yield True, chunk({"tool_calls": [{"index": index, "id": call["id"], "type": "function",
                                           "function": {"name": function["name"], "arguments": ""}}]})
        for piece in _pieces(function["arguments"]):
            yield True, chunk({"tool_calls": [{"index": index, "function": {"arguments": piece}}]})
    yield False, chunk({}, choice["finish_reason"])
    yield False, _sse({**head, "choices": [], "usage": body["usage"]})
    yield False, _sse("[DONE]")


def _anthropic_steps(body: Mapping[str, Any]) -> Iterator[tuple[bool, bytes]]:
    """(is a token, event) of a message: message_start, each block's start, deltas and stop, then the end."""
    usage = body["usage"]
    start = {**body, "content": [], "stop_reason": None, "usage": {**usage, "output_tokens": 1}}
    yield False, _sse({"type": "message_start", "message": start}, "message_start")
    yield False, _sse({"type": "ping"}, "ping")
    for index, block in enumerate(body["content"]):
        yield from _anthropic_block(index, block)
    end = {"type": "message_delta", "delta": {"stop_reason": body["stop_reason"], "stop_sequence": None},
           "usage": {"output_tokens": usage["output_tokens"]}}
    yield False, _sse(end, "message_delta")
    yield False, _sse({"type": "message_stop"}, "message_stop")


def _anthropic_block(index: int, block: Mapping[str, Any]) -> Iterator[tuple[bool, bytes]]:
    opened: dict[str, Any]
    if block["type"] == "text":
        opened, kind, field, pieces = {"type": "text", "text": ""}, "text_delta", "text", _words(block["text"])
    else:
        opened = {"type": "tool_use", "id": block["id"], "name": block["name"], "input": {}}
        kind, field, pieces = "input_json_delta", "partial_json", _pieces(json.dumps(block["input"]))
    yield False, _sse({"type": "content_block_start", "index": index, "content_block": opened}, "content_block_start")
    for piece in pieces:
        delta = {"type": "content_block_delta", "index": index, "delta": {"type": kind, field: piece}}
        yield True, _sse(delta, "content_block_delta")
    yield False, _sse({"type": "content_block_stop", "index": index}, "content_block_stop")


def _error_event(route: str) -> bytes:
    if route == "anthropic":
        return _sse({"type": "error", "error": {"type": "overloaded_error", "message": "mock overloaded"}}, "error")
    return _sse({"error": {"message": "mock error in the stream", "type": "server_error", "code": 500}})
