"""The OpenAI chat-completions wire format, spoken by OpenAI, OpenRouter, vLLM, Ollama and many more."""

from __future__ import annotations

import json
import re
from typing import Any, TypeGuard

from bench_plugin.core.chat import (
    Completion,
    CompletionRequest,
    EmbeddingRequest,
    Embeddings,
    Message,
    ResponseSchema,
    ToolCall,
    ToolDefinition,
)
from bench_plugin.core.endpoints import ProviderSpec
from bench_plugin.core.media import MediaPart, audio_format, data_url, part_base64
from bench_plugin.providers.http import (
    BodyError,
    HttpPool,
    api_key_from_env,
    malformed,
    merge_headers,
    post_json,
)
from bench_plugin.providers.interface import (
    BaseProvider,
    answered_by_tool,
    media_data,
    merge_params,
    optional_str,
    read_usage,
    require_text,
    structured_form,
)
from bench_plugin.providers.openai_stream import OpenAIStream
from bench_plugin.providers.streaming import stream_completion, wants_stream

DEFAULT_BASE_URL = "https://api.openai.com/v1"
_VALID_NAME = re.compile(r"^[a-zA-Z0-9_-]{1,64}$")
# a reply cut short or handed to tools may legitimately carry no text
_EMPTY_CONTENT_REASONS = frozenset({"tool_calls", "length", "content_filter"})
"""Why an answer may come without content: a tool call, the token limit, or (OpenAI, Azure) a content filter.
The model's outcome, not a broken body: retried, it would be paid for again and filed as infrastructure."""


class OpenAICompatProvider(BaseProvider):
    """One attempt at ``POST {base_url}/chat/completions``; retries belong to the runner (``providers/retry.py``).

    Args:
        spec: the endpoint; ``base_url`` includes the version, e.g. ``http://127.0.0.1:8000/v1``.
        http: the runner's client pool.
    """

    def __init__(self, spec: ProviderSpec, http: HttpPool) -> None:
        super().__init__(spec)
        self._http = http
        self._base_url = (spec.base_url or DEFAULT_BASE_URL).rstrip("/")

    def connection_key(self) -> str:
        """The normalised base URL, so calls to one server share a pool and a rate limit."""
        return self._base_url

    async def complete(self, request: CompletionRequest) -> Completion:
        """Send the request to ``/chat/completions`` once and translate the reply; failures raise ProviderError."""
        api_key = api_key_from_env(self.spec)
        secrets = (api_key,) if api_key else ()
        if wants_stream(self.spec, request):
            return await stream_completion(
                self._http, f"{self._base_url}/chat/completions", json_body=build_stream_body(request),
                headers=self._headers(request, api_key), spec=self.spec, key=self.connection_key(), secrets=secrets,
                assembler=OpenAIStream(body_error))
        data, latency = await post_json(
            self._http,
            f"{self._base_url}/chat/completions",
            json_body=build_body(request),
            headers=self._headers(request, api_key),
            timeout_s=self.spec.timeout_s,
            key=self.connection_key(),
            secrets=secrets,
            body_error=body_error,
            max_bytes=self.spec.max_response_bytes,
        )
        return answered_by_tool(parse_completion(data, latency), _answer_function_name(request))

    async def embed(self, request: EmbeddingRequest) -> Embeddings:
        """Send the texts to ``/embeddings`` once and read one vector per text; failures raise ProviderError."""
        api_key = api_key_from_env(self.spec)
        secrets = (api_key,) if api_key else ()
        data, latency = await post_json(
            self._http,
            f"{self._base_url}/embeddings",
            json_body=build_embedding_body(request),
            headers=self._headers(request, api_key),
            timeout_s=self.spec.timeout_s,
            key=self.connection_key(),
            secrets=secrets,
            body_error=body_error,
            max_bytes=self.spec.max_response_bytes,
        )
        return parse_embeddings(data, len(request.texts), latency)

    def _headers(self, request: CompletionRequest | EmbeddingRequest, api_key: str | None) -> dict[str, str]:
        auth = {"Authorization": f"Bearer {api_key}"} if api_key else {}
        return merge_headers(auth, self.spec.headers, request.model.headers)


def build_body(request: CompletionRequest) -> dict[str, Any]:
    """The request body: model params overridden by call params, None values dropped.

    ``model`` and ``messages`` cannot be overridden by params.
    """
    body = merge_params(request)
    body["model"] = request.model.id
    body["messages"] = [wire_message(message) for message in request.messages]
    if request.tools:
        body["tools"] = [wire_tool(tool) for tool in request.tools]
    form = structured_form(request, "native")
    if form is not None:
        assert request.response_schema is not None, "structured_form is None without a schema"
        body.update(_answer_function(request.response_schema, body.get("tools", [])) if form == "tool"
                    else {"response_format": wire_response_format(request.response_schema)})
    return body


def build_stream_body(request: CompletionRequest) -> dict[str, Any]:
    """The request body asking for an event stream that ends with the usage (``openai_stream.py`` reads it)."""
    return {**build_body(request), "stream": True, "stream_options": {"include_usage": True}}


def wire_response_format(schema: ResponseSchema) -> dict[str, Any]:
    """``output_schema:`` as OpenAI's structured outputs take it (vLLM, Ollama and llama.cpp read it too)."""
    return {"type": "json_schema",
            "json_schema": {"name": schema.name, "schema": dict(schema.schema), "strict": schema.strict}}


def _answer_function_name(request: CompletionRequest) -> str | None:
    """The function whose arguments are the answer, when ``output_schema:`` went as a forced function call."""
    schema = request.response_schema
    return schema.name if schema is not None and structured_form(request, "native") == "tool" else None


def _answer_function(schema: ResponseSchema, tools: list[dict[str, Any]]) -> dict[str, Any]:
    """``structured_output: tool``: a function the model must call, whose arguments are the answer.

    For servers that take tools but not ``response_format``.
    """
    function = wire_tool(ToolDefinition(schema.name, "Give your answer as this function's arguments.", schema.schema))
    return {"tools": [*tools, function], "tool_choice": {"type": "function", "function": {"name": schema.name}}}


def wire_tool(tool: ToolDefinition) -> dict[str, Any]:
    """A tool offered for function calling."""
    return {
        "type": "function",
        "function": {"name": tool.name, "description": tool.description, "parameters": dict(tool.parameters)},
    }


def wire_message(message: Message) -> dict[str, Any]:
    """One message; ``name`` only where OpenAI accepts it, since a bad name fails the whole call."""
    if message.role == "tool":
        return {"role": "tool", "tool_call_id": message.tool_call_id or "", "content": message.content}
    content = content_parts(message) if message.parts else message.content
    out: dict[str, Any] = {"role": message.role, "content": content}
    if _takes_name(message):
        out["name"] = message.name
    if message.tool_calls:
        out["content"] = message.content or None  # a reply that only calls tools has no text
        out["tool_calls"] = [wire_tool_call(call) for call in message.tool_calls]
    return out


def content_parts(message: Message) -> list[dict[str, Any]]:
    """A message with images or audio: its text, then ``image_url`` and ``input_audio`` parts (files as data)."""
    text = [{"type": "text", "text": message.content}] if message.content else []
    return [*text, *(_wire_part(part) for part in message.parts)]


def _wire_part(part: MediaPart) -> dict[str, Any]:
    if part.kind == "audio":
        return {"type": "input_audio", "input_audio": {"data": media_data(part_base64, part),
                                                       "format": audio_format(part)}}
    return {"type": "image_url", "image_url": {"url": media_data(data_url, part)}}


def _takes_name(message: Message) -> bool:
    """A user's or assistant's ``name`` that OpenAI's name rule accepts."""
    name = message.name
    return name is not None and message.role in ("user", "assistant") and _VALID_NAME.match(name) is not None


def wire_tool_call(call: ToolCall) -> dict[str, Any]:
    """One function call of an assistant's message."""
    return {"id": call.id, "type": "function", "function": {"name": call.name, "arguments": call.arguments}}


# what an error object's ``code`` or ``type`` means when it names no HTTP status (OpenAI, OpenRouter, vLLM)
_ERROR_NAME_STATUS = {
    "invalid_request_error": 400, "context_length_exceeded": 400, "bad_request": 400,
    "invalid_api_key": 401, "authentication_error": 401, "permission_denied": 403, "permission_error": 403,
    "insufficient_quota": 402, "model_not_found": 404, "not_found_error": 404,
    "rate_limit_exceeded": 429, "rate_limit_error": 429, "server_error": 500, "api_error": 500,
    "service_unavailable": 503, "overloaded": 529, "overloaded_error": 529, "timeout": 504,
}


def body_error(data: dict[str, Any]) -> BodyError | None:
    """Some gateways (OpenRouter, LiteLLM) answer 200 with ``{"error": {...}}``, at the top or in the first choice.

    A numeric ``code`` is taken as the HTTP status it names, a known ``code`` or ``type`` name as its status;
    any other error is an upstream failure worth retrying (``kind="error_payload"``).
    """
    error = _error_in(data)
    if not error:
        return None
    detail = error if isinstance(error, dict) else {"message": error}
    return BodyError(_error_status(detail), str(detail.get("message", detail)))


def _error_in(data: dict[str, Any]) -> Any:
    """The body's top-level ``error``, or else its first choice's."""
    error = data.get("error")
    if error:
        return error
    first = _first_choice(data)
    return first.get("error") if first is not None else error


def _first_choice(data: dict[str, Any]) -> dict[str, Any] | None:
    choices = data.get("choices")
    if isinstance(choices, list) and choices and isinstance(choices[0], dict):
        return choices[0]
    return None


def _error_status(detail: dict[str, Any]) -> int | None:
    """The HTTP status an error object names by number or by a known name; None for an upstream failure."""
    code = detail.get("code")
    if _is_numeric_code(code):
        return int(code)
    for name in (code, detail.get("type")):
        if isinstance(name, str) and name in _ERROR_NAME_STATUS:
            return _ERROR_NAME_STATUS[name]
    return None


def _is_numeric_code(code: Any) -> TypeGuard[int | str]:
    if isinstance(code, str):
        return code.isdigit()
    return isinstance(code, int) and not isinstance(code, bool)


def parse_completion(data: dict[str, Any], latency: float) -> Completion:
    """Read the first choice and the usage of a chat-completions response."""
    choice = _first_choice(data)
    if choice is None:
        raise malformed("choices is missing or empty")
    message = choice.get("message")
    if not isinstance(message, dict):
        raise malformed("choices[0].message is missing")
    finish_reason = optional_str(choice.get("finish_reason"), "choices[0].finish_reason")
    return Completion(
        text=_answer_text(message, finish_reason),
        usage=read_usage(data, "prompt_tokens", "completion_tokens"),
        latency_s=latency,
        finish_reason=finish_reason,
        request_id=optional_str(data.get("id"), "id"),
        tool_calls=read_tool_calls(message.get("tool_calls")),
        refusal=_refusal(message),
    )


def _refusal(message: dict[str, Any]) -> str | None:
    """OpenAI's structured outputs: the words of a model that declined (``message.refusal``), when it did."""
    refusal = message.get("refusal")
    return refusal if isinstance(refusal, str) and refusal else None


def _answer_text(message: dict[str, Any], finish_reason: str | None) -> str:
    """The message's content; a refusal's words, or "" when the finish reason explains a missing content."""
    content = message.get("content")
    if content is not None:
        return require_text(content, "choices[0].message.content")
    refusal = message.get("refusal")
    if isinstance(refusal, str):
        return refusal  # OpenAI's structured outputs: the model declined, in words
    if finish_reason in _EMPTY_CONTENT_REASONS or message.get("tool_calls"):
        return ""  # a forced function call (tool_choice naming one) ends with "stop" and no content
    raise malformed(f"choices[0].message.content is null (finish_reason {finish_reason!r})")


def read_tool_calls(value: Any) -> tuple[ToolCall, ...]:
    """``message.tool_calls``: function calls with their arguments as the JSON text the model wrote."""
    if value is None:
        return ()
    if not isinstance(value, list):
        raise malformed("choices[0].message.tool_calls is not a list")
    return tuple(_read_tool_call(index, entry) for index, entry in enumerate(value))


def _read_tool_call(index: int, entry: Any) -> ToolCall:
    function = entry.get("function") if isinstance(entry, dict) else None
    if not isinstance(function, dict):
        raise malformed(f"tool_calls[{index}].function is missing")
    return ToolCall(
        id=optional_str(entry.get("id"), f"tool_calls[{index}].id") or f"call_{index + 1}",
        name=require_text(function.get("name"), f"tool_calls[{index}].function.name"),
        arguments=_arguments_text(function.get("arguments")),
    )


def _arguments_text(arguments: Any) -> str:
    """The arguments as JSON text: some servers send the object itself (or nothing, read as ``{}``)."""
    if isinstance(arguments, str):
        return arguments
    return json.dumps(arguments if arguments is not None else {})


EMBEDDING_PARAMS = ("dimensions", "user")
"""The model params an embeddings request carries; chat params (temperature...) would be rejected."""


def build_embedding_body(request: EmbeddingRequest) -> dict[str, Any]:
    """``{"model", "input": [texts], "encoding_format": "float"}`` plus the model's ``dimensions`` / ``user``."""
    body = {key: request.model.params[key] for key in EMBEDDING_PARAMS if request.model.params.get(key) is not None}
    body.update(model=request.model.id, input=list(request.texts), encoding_format="float")
    return body


def parse_embeddings(data: dict[str, Any], count: int, latency: float) -> Embeddings:
    """One vector per text, put back in input order by each item's ``index``; all of one length."""
    vectors = _vectors_in_order(_embedding_items(data, count))
    lengths = {len(vector) for vector in vectors}
    if len(lengths) > 1:
        raise malformed(f"the embeddings have different lengths {sorted(lengths)}")
    return Embeddings(
        vectors=vectors,
        usage=read_usage(data, "prompt_tokens", "completion_tokens"),
        latency_s=latency,
        request_id=optional_str(data.get("id"), "id"),
    )


def _embedding_items(data: dict[str, Any], count: int) -> list[Any]:
    """The body's ``data`` list, which must hold one item per text."""
    items = data.get("data")
    if not isinstance(items, list) or len(items) != count:
        found = len(items) if isinstance(items, list) else "no"
        raise malformed(f"data holds {found} embeddings, expected {count}")
    return items


def _vectors_in_order(items: list[Any]) -> tuple[tuple[float, ...], ...]:
    """Each item's vector at its ``index``: every index is used once, so no place is left empty."""
    vectors: list[tuple[float, ...] | None] = [None] * len(items)
    for position, item in enumerate(items):
        index, vector = _read_embedding(position, item, vectors)
        vectors[index] = vector
    return tuple(vector for vector in vectors if vector is not None)


def _read_embedding(
    position: int, item: Any, vectors: list[tuple[float, ...] | None]
) -> tuple[int, tuple[float, ...]]:
    """The input index and vector of ``data[position]``; an index must be new and below ``len(vectors)``."""
    entry = item if isinstance(item, dict) else {}
    index = entry.get("index", position)
    if not _is_free_index(index, vectors):
        raise malformed(f"data[{position}].index is {index!r}, expected a new index below {len(vectors)}")
    vector = entry.get("embedding")
    if not _is_number_list(vector):
        raise malformed(f"data[{position}].embedding is not a list of numbers (ask for encoding_format float)")
    return index, tuple(float(x) for x in vector)


def _is_free_index(index: Any, vectors: list[tuple[float, ...] | None]) -> bool:
    return isinstance(index, int) and 0 <= index < len(vectors) and vectors[index] is None


def _is_number_list(value: Any) -> TypeGuard[list[float]]:
    return isinstance(value, list) and bool(value) and all(
        isinstance(x, (int, float)) and not isinstance(x, bool) for x in value
    )
