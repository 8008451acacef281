"""The OpenAI chat-completions event stream (``stream: true``), as vLLM, SGLang, llama.cpp and Ollama send it too.

Each ``data:`` event is a ``chat.completion.chunk``: the first choice's ``delta`` carries pieces of the
text and of each tool call (by ``index``: the id and name once, the arguments in pieces), the last one
its ``finish_reason``; with ``stream_options: {include_usage: true}`` a last chunk without choices
carries the usage; ``data: [DONE]`` ends the stream. A chunk holding ``error`` is an error event.
"""

from __future__ import annotations

import json
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench_plugin.core.chat import Completion, ToolCall
from bench_plugin.providers.http import BodyError, malformed
from bench_plugin.providers.interface import optional_str, read_usage, require_text
from bench_plugin.providers.sse import ServerEvent
from bench_plugin.providers.streaming import StreamEventError, event_object

_TOKEN_FIELDS = ("content", "reasoning_content", "reasoning")
"""Delta fields whose text counts as generated tokens (reasoning too: it is what the first token waits on)."""


@dataclass
class _ToolCallParts:
    id: str | None = None
    name: str = ""
    arguments: list[str] = field(default_factory=list)


class OpenAIStream:
    """Adds up the chunks of one streamed chat completion (an ``Assembler`` of ``streaming.py``).

    Args:
        find_error: the error object a chunk holds, if any (``openai_compat.body_error``).
    """

    def __init__(self, find_error: Callable[[dict[str, Any]], BodyError | None]) -> None:
        self._find_error = find_error
        self._text: list[str] = []
        self._calls: dict[int, _ToolCallParts] = {}
        self._finish_reason: str | None = None
        self._usage: dict[str, Any] = {}
        self._request_id: str | None = None
        self._done = False

    def feed(self, event: ServerEvent) -> bool:
        """Take one chunk; True when its delta carried text or a piece of a tool call."""
        if event.data.strip() == "[DONE]":
            self._done = True
            return False
        chunk = event_object(event.data)
        found = self._find_error(chunk)
        if found is not None:
            raise StreamEventError(found)
        self._request_id = self._request_id or optional_str(chunk.get("id"), "id")
        if isinstance(chunk.get("usage"), dict):
            self._usage = chunk
        choices = chunk.get("choices")
        if not isinstance(choices, list) or not choices:
            return False
        return self._choice(choices[0])

    def finished(self) -> bool:
        """``[DONE]`` came, or a finish reason (a server that closes the stream without ``[DONE]``)."""
        return self._done or self._finish_reason is not None

    def completion(self) -> Completion:
        """The text, the tool calls in ``index`` order, the finish reason and the usage of the last chunk."""
        return Completion(
            text="".join(self._text),
            usage=read_usage(self._usage, "prompt_tokens", "completion_tokens"),
            finish_reason=self._finish_reason,
            request_id=self._request_id,
            tool_calls=tuple(_tool_call(index, self._calls[index]) for index in sorted(self._calls)),
        )

    def _choice(self, choice: Any) -> bool:
        choice = _object(choice, "choices[0] of a chunk")
        reason = optional_str(choice.get("finish_reason"), "choices[0].finish_reason")
        self._finish_reason = reason or self._finish_reason
        delta = _object(choice.get("delta") or {}, "choices[0].delta of a chunk")
        content = delta.get("content")
        if content is not None:
            self._text.append(require_text(content, "choices[0].delta.content"))
        calls = delta.get("tool_calls") or []
        if not isinstance(calls, list):
            raise malformed("choices[0].delta.tool_calls is not a list")
        for position, piece in enumerate(calls):
            self._tool_call_piece(position, _object(piece, "a tool call's delta"))
        return bool(calls) or any(isinstance(delta.get(name), str) and delta[name] for name in _TOKEN_FIELDS)

    def _tool_call_piece(self, position: int, piece: dict[str, Any]) -> None:
        """One tool call's delta: its ``index`` says which call (the position in the list when absent)."""
        parts = self._calls.setdefault(_index(piece.get("index", position)), _ToolCallParts())
        parts.id = parts.id or optional_str(piece.get("id"), "tool_calls[].id")
        function = _object(piece.get("function") or {}, "a tool call's function")
        parts.name += optional_str(function.get("name"), "tool_calls[].function.name") or ""
        arguments = function.get("arguments")
        if arguments is not None:
            parts.arguments.append(arguments if isinstance(arguments, str) else json.dumps(arguments))


def _object(value: Any, what: str) -> dict[str, Any]:
    if not isinstance(value, dict):
        raise malformed(f"{what} is not an object")
    return value


def _index(index: Any) -> int:
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < 1024:
        raise malformed(f"a tool call's delta has index {index!r}")
    return index


def _tool_call(index: int, parts: _ToolCallParts) -> ToolCall:
    if not parts.name:
        raise malformed(f"the streamed tool call {index} has no name")
    return ToolCall(id=parts.id or f"call_{index + 1}", name=parts.name, arguments="".join(parts.arguments) or "{}")
