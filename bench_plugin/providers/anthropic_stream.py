"""The Anthropic Messages event stream (``stream: true``).

``message_start`` carries the id and the input tokens; each content block opens with
``content_block_start`` (a ``text`` block, or a ``tool_use`` block with its id and name) and grows by
``content_block_delta`` events (``text_delta``; ``input_json_delta``: a piece of the tool's arguments as
JSON text; ``thinking_delta``: reasoning, counted as tokens but not kept); ``message_delta`` carries the
stop reason and the output tokens, ``message_stop`` ends the stream. ``ping`` keeps it alive; an
``error`` event (``overloaded_error`` and the like) ends it.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any

from bench_plugin.core.chat import Completion, ToolCall, Usage
from bench_plugin.providers.http import BodyError, malformed
from bench_plugin.providers.interface import optional_int, optional_str, require_text
from bench_plugin.providers.sse import ServerEvent
from bench_plugin.providers.streaming import StreamEventError, event_object

_TOKEN_DELTAS = {"text_delta": "text", "input_json_delta": "partial_json", "thinking_delta": "thinking"}
"""The deltas that carry generated tokens, and the field holding them."""


@dataclass
class _Block:
    kind: str
    id: str | None = None
    name: str = ""
    parts: list[str] = field(default_factory=list)


class AnthropicStream:
    """Adds up the events of one streamed message (an ``Assembler`` of ``streaming.py``).

    Args:
        find_error: the error an ``error`` event holds (``anthropic.body_error``).
    """

    def __init__(self, find_error: Callable[[dict[str, Any]], BodyError | None]) -> None:
        self._find_error = find_error
        self._blocks: dict[int, _Block] = {}
        self._request_id: str | None = None
        self._input_tokens: int | None = None
        self._output_tokens: int | None = None
        self._stop_reason: str | None = None
        self._stopped = False

    def feed(self, event: ServerEvent) -> bool:
        """Take one event; True when it was a delta carrying text, thinking or a piece of a tool's input."""
        data = event_object(event.data)
        kind = data.get("type", event.event)
        if kind == "error":
            found = self._find_error({**data, "type": "error"})
            raise StreamEventError(found or BodyError(500, "an error event"))
        handler = _HANDLERS.get(str(kind))
        return handler(self, data) if handler is not None else False  # ping, and types added later

    def finished(self) -> bool:
        """``message_stop`` came."""
        return self._stopped

    def completion(self) -> Completion:
        """The text blocks joined, the tool_use blocks as tool calls, in block order, with the usage."""
        ordered = [self._blocks[index] for index in sorted(self._blocks)]
        return Completion(
            text="".join("".join(block.parts) for block in ordered if block.kind == "text"),
            usage=Usage(self._input_tokens, self._output_tokens),
            finish_reason=self._stop_reason,
            request_id=self._request_id,
            tool_calls=tuple(_tool_call(i, block) for i, block in enumerate(ordered) if block.kind == "tool_use"),
        )

    def _message_start(self, data: dict[str, Any]) -> bool:
        message = data.get("message")
        if not isinstance(message, dict):
            raise malformed("message_start without a message")
        self._request_id = optional_str(message.get("id"), "message.id")
        usage = _object(message.get("usage"))
        self._input_tokens = optional_int(usage.get("input_tokens"), "message.usage.input_tokens")
        return False

    def _block_start(self, data: dict[str, Any]) -> bool:
        block = data.get("content_block")
        if not isinstance(block, dict):
            raise malformed("content_block_start without a content_block")
        kind = str(block.get("type", ""))
        self._blocks[_index(data)] = _Block(kind, optional_str(block.get("id"), "content_block.id"),
                                            optional_str(block.get("name"), "content_block.name") or "")
        return False

    def _block_delta(self, data: dict[str, Any]) -> bool:
        delta = data.get("delta")
        if not isinstance(delta, dict):
            raise malformed("content_block_delta without a delta")
        name = _TOKEN_DELTAS.get(str(delta.get("type")))
        if name is None:
            return False  # signature_delta, citations: no tokens of the answer
        piece = require_text(delta.get(name), f"delta.{name}")
        block = self._blocks.setdefault(_index(data), _Block("text" if name == "text" else "tool_use"))
        if name != "thinking":
            block.parts.append(piece)
        return bool(piece)

    def _message_delta(self, data: dict[str, Any]) -> bool:
        delta = _object(data.get("delta"))
        self._stop_reason = optional_str(delta.get("stop_reason"), "delta.stop_reason") or self._stop_reason
        usage = _object(data.get("usage"))
        self._output_tokens = optional_int(usage.get("output_tokens"), "usage.output_tokens") or self._output_tokens
        return False

    def _message_stop(self, data: dict[str, Any]) -> bool:
        self._stopped = True
        return False


_HANDLERS = {
    "message_start": AnthropicStream._message_start,
    "content_block_start": AnthropicStream._block_start,
    "content_block_delta": AnthropicStream._block_delta,
    "message_delta": AnthropicStream._message_delta,
    "message_stop": AnthropicStream._message_stop,
}


def _object(value: Any) -> dict[str, Any]:
    """An optional object of an event: itself, or empty when absent or not an object."""
    return value if isinstance(value, dict) else {}


def _index(data: dict[str, Any]) -> int:
    index = data.get("index", 0)
    if not isinstance(index, int) or isinstance(index, bool) or not 0 <= index < 1024:
        raise malformed(f"a content block index of {index!r}")
    return index


def _tool_call(index: int, block: _Block) -> ToolCall:
    if not block.name:
        raise malformed(f"the streamed tool_use block {index} has no name")
    return ToolCall(id=block.id or f"toolu_{index}", name=block.name, arguments="".join(block.parts) or "{}")
