"""The words every stage shares for talking to a model: messages, tools, one call and its answer.

Providers translate these to a wire format, engines build conversations from them, scorers read
them and judges make calls through ``CallModel``. This module imports nothing above the ground floor.
"""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Mapping
from dataclasses import dataclass, field
from typing import Any

from bench_plugin.core.endpoints import ModelSpec
from bench_plugin.core.media import MediaPart


@dataclass(frozen=True)
class ToolCall:
    """A tool call a model asked for. ``arguments`` is the JSON text the model wrote (it may not parse)."""

    id: str
    name: str
    arguments: str = "{}"

    def to_dict(self) -> dict[str, Any]:
        """Plain data, as records keep it."""
        return {"id": self.id, "name": self.name, "arguments": self.arguments}


@dataclass(frozen=True)
class ToolDefinition:
    """A tool as a request offers it to the model: a name, what it does, a JSON Schema of its arguments."""

    name: str
    description: str
    parameters: Mapping[str, Any] = field(default_factory=lambda: {"type": "object", "properties": {}})


@dataclass(frozen=True)
class ResponseSchema:
    """The JSON Schema an answer must match (a task's ``output_schema:``), as a request asks for it.

    ``name`` is what the wire formats call it (OpenAI's ``json_schema.name``, the forced Anthropic tool's
    name); ``strict`` asks the endpoint to hold the model to the schema (OpenAI's structured outputs).
    """

    name: str
    schema: Mapping[str, Any]
    strict: bool = False


@dataclass(frozen=True)
class Message:
    """One chat message. ``name`` is the speaker in multi-party conversations.

    Tool use: an ``assistant`` message may carry ``tool_calls``; a ``tool`` message answers the call
    ``tool_call_id`` (its ``name`` is the tool's).
    ``parts`` are the images and audio that go with the text (``core/media.py``); records keep their references.
    """

    role: str
    content: str
    name: str | None = None
    tool_calls: tuple[ToolCall, ...] = ()
    tool_call_id: str | None = None
    parts: tuple[MediaPart, ...] = ()

    def to_dict(self) -> dict[str, Any]:
        """Plain data, as records keep it."""
        out: dict[str, Any] = {"role": self.role, "content": self.content}
        if self.name is not None:
            out["name"] = self.name
        if self.tool_calls:
            out["tool_calls"] = [call.to_dict() for call in self.tool_calls]
        if self.tool_call_id is not None:
            out["tool_call_id"] = self.tool_call_id
        if self.parts:
            out["parts"] = [part.reference() for part in self.parts]
        return out


@dataclass(frozen=True)
class Usage:
    """Token counts as the endpoint reported them; None when it did not say."""

    input_tokens: int | None = None
    output_tokens: int | None = None


@dataclass(frozen=True)
class CompletionRequest:
    """One call to one model.

    ``task``, ``run``, ``turn`` (1-based index of this call in the conversation) and the case's
    ``variables`` identify the call for offline providers; HTTP providers ignore them. ``purpose`` is
    ``candidate`` or ``judge``. ``tools`` are the tools the model may call (an agent task's, or a single-turn
    task's function tools). ``response_schema``: the answer must be JSON matching it (``output_schema:``).
    """

    model: ModelSpec
    messages: tuple[Message, ...]
    params: Mapping[str, Any] = field(default_factory=dict)
    task: str = ""
    run: int = 1
    turn: int = 1
    purpose: str = "candidate"
    variables: Mapping[str, Any] = field(default_factory=dict)
    tools: tuple[ToolDefinition, ...] = ()
    response_schema: ResponseSchema | None = None


@dataclass(frozen=True)
class Completion:
    """A model's answer and what it cost. ``latency_s`` is wall time of the successful attempt.

    ``tool_calls`` are the tools the model asked to call (the text may then be empty). ``cached``: the
    answer came from the response cache (``cache.py``): no attempt was made and it costs nothing this run.

    A streamed answer (``stream: true``, ``providers/streaming.py``) also says how it arrived: ``ttft_s``, the
    seconds from sending the request to its first token; ``tokens_per_s``, the output tokens after the first
    over the time from the first token to the last; ``itl_s``, the mean gap between two token events. None
    when the answer did not stream, or came from the cache (a hit carries no timing).

    ``parsed``: the answer as JSON when the wire format gave it as data (Anthropic's forced answer tool), None
    otherwise (the text is then read as JSON). ``refusal``: the model declined to answer, in its words (OpenAI's
    ``refusal``, Anthropic's ``refusal`` stop reason); None when it did not.
    """

    text: str
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    finish_reason: str | None = None
    request_id: str | None = None
    attempts: int = 1
    tool_calls: tuple[ToolCall, ...] = ()
    cached: bool = False
    ttft_s: float | None = None
    tokens_per_s: float | None = None
    itl_s: float | None = None
    parsed: Any = None
    refusal: str | None = None


CallModel = Callable[[CompletionRequest], Awaitable[Completion]]


@dataclass(frozen=True)
class EmbeddingRequest:
    """One call that turns texts into vectors (an OpenAI-compatible ``/v1/embeddings``), made for a scorer.

    ``purpose`` is ``judge``: an embedding call grades an answer, so it counts with the judges' calls
    (``usage.judge`` and the ``call_log`` of the record). ``task`` and ``run`` name the case.
    """

    model: ModelSpec
    texts: tuple[str, ...]
    task: str = ""
    run: int = 1
    purpose: str = "judge"


@dataclass(frozen=True)
class Embeddings:
    """One vector per text of the request, in its order, and what the call cost."""

    vectors: tuple[tuple[float, ...], ...]
    usage: Usage = field(default_factory=Usage)
    latency_s: float = 0.0
    request_id: str | None = None
    attempts: int = 1


EmbedTexts = Callable[[EmbeddingRequest], Awaitable[Embeddings]]
"""How scorers embed texts: the runner's embedding call, with its limits, retries and call log."""
