"""The Anthropic Messages API wire format."""

from __future__ import annotations

import json
from typing import Any

from bench_plugin.core.chat import Completion, CompletionRequest, Message, ResponseSchema, ToolCall, ToolDefinition
from bench_plugin.core.endpoints import ProviderSpec
from bench_plugin.core.errors import ProviderError
from bench_plugin.core.media import MediaPart, part_base64
from bench_plugin.providers.anthropic_stream import AnthropicStream
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
from bench_plugin.providers.streaming import stream_completion, wants_stream

DEFAULT_BASE_URL = "https://api.anthropic.com"
API_VERSION = "2023-06-01"
DEFAULT_MAX_TOKENS = 1024
# The API wants the conversation to open with a user turn; this stands in when it does not.
CONVERSATION_START = "(conversation start)"
# the HTTP status Anthropic documents for each error type
_ERROR_STATUS = {
    "invalid_request_error": 400,
    "authentication_error": 401,
    "permission_error": 403,
    "not_found_error": 404,
    "request_too_large": 413,
    "rate_limit_error": 429,
    "api_error": 500,
    "timeout_error": 504,
    "overloaded_error": 529,
}


class AnthropicProvider(BaseProvider):
    """One attempt at ``POST {base_url}/v1/messages``; retries belong to the runner (``providers/retry.py``).

    Args:
        spec: the endpoint; ``base_url`` defaults to ``https://api.anthropic.com`` and may end in ``/v1``.
        http: the runner's client pool.
    """

    def __init__(self, spec: ProviderSpec, http: HttpPool) -> None:
        super().__init__(spec)
        self._http = http
        self._base_url = (spec.base_url or DEFAULT_BASE_URL).rstrip("/")

    def connection_key(self) -> str:
        """The normalised base URL, so calls to one Anthropic endpoint share a pool and a rate limit."""
        return self._base_url

    @property
    def url(self) -> str:
        """The messages endpoint, without doubling a ``/v1`` already in ``base_url``."""
        versioned = self._base_url if self._base_url.endswith("/v1") else f"{self._base_url}/v1"
        return f"{versioned}/messages"

    async def complete(self, request: CompletionRequest) -> Completion:
        """Send the request to the Messages API once and translate the reply; failures raise ProviderError."""
        api_key = api_key_from_env(self.spec)
        secrets = (api_key,) if api_key else ()
        if wants_stream(self.spec, request):
            return await stream_completion(
                self._http, self.url, json_body={**build_body(request), "stream": True},
                headers=self._headers(request, api_key), spec=self.spec, key=self.connection_key(), secrets=secrets,
                assembler=AnthropicStream(body_error))
        data, latency = await post_json(
            self._http,
            self.url,
            json_body=build_body(request),
            headers=self._headers(request, api_key),
            timeout_s=self.spec.timeout_s,
            key=self.connection_key(),
            secrets=secrets,
            body_error=body_error,
            max_bytes=self.spec.max_response_bytes,
        )
        return parse_completion(data, latency, answer_tool=_answer_tool_name(request))

    def _headers(self, request: CompletionRequest, api_key: str | None) -> dict[str, str]:
        fixed = {"anthropic-version": API_VERSION, "content-type": "application/json"}
        if api_key:
            fixed["x-api-key"] = api_key
        return merge_headers(fixed, self.spec.headers, request.model.headers)


def build_body(request: CompletionRequest) -> dict[str, Any]:
    """The request body: model params overridden by call params (None dropped), ``stop`` renamed.

    System messages become the top-level ``system`` string, joined by blank lines.
    """
    params = _params(request)
    system = "\n\n".join(m.content for m in request.messages if m.role == "system" and m.content)
    body: dict[str, Any] = {**params, "model": request.model.id, "messages": wire_messages(request.messages)}
    if system:
        body["system"] = system
    if request.tools:
        body["tools"] = [wire_tool(tool) for tool in request.tools]
    form = structured_form(request, "tool")
    if form is not None:
        assert request.response_schema is not None, "structured_form is None without a schema"
        body.update(answer_tool(request.response_schema, body.get("tools", [])) if form == "tool"
                    else native_format(request.response_schema))
    return body


def _answer_tool_name(request: CompletionRequest) -> str | None:
    """The tool whose input is the answer, when ``output_schema:`` went as a forced tool."""
    schema = request.response_schema
    return schema.name if schema is not None and structured_form(request, "tool") == "tool" else None


def native_format(schema: ResponseSchema) -> dict[str, Any]:
    """``output_schema:`` in Anthropic's own form (``structured_output: native``; Claude 4.5 and later).

    The answer's text is then the JSON.
    """
    return {"output_config": {"format": {"type": "json_schema", "schema": dict(schema.schema)}}}


def answer_tool(schema: ResponseSchema, tools: list[dict[str, Any]]) -> dict[str, Any]:
    """``output_schema:`` as a tool the model must call, whose input is the answer (``tool_choice``: that tool).

    The default: every Claude model that takes tools takes this form, unlike the newer ``output_config.format``
    (``native_format``); the input is read back as the answer by ``parse_completion``. Anthropic does not force a
    tool under extended thinking.
    """
    tool = {"name": schema.name, "description": "Give your answer as this tool's input: it is the reply.",
            "input_schema": dict(schema.schema)}
    return {"tools": [*tools, tool], "tool_choice": {"type": "tool", "name": schema.name}}


def _params(request: CompletionRequest) -> dict[str, Any]:
    """The merged params under this API's names: ``stop`` as ``stop_sequences``, ``max_tokens`` always set."""
    params = merge_params(request)
    stop = params.pop("stop", None)
    if stop is not None:
        params["stop_sequences"] = [stop] if isinstance(stop, str) else list(stop)
    params.setdefault("max_tokens", DEFAULT_MAX_TOKENS)
    return params


def wire_tool(tool: ToolDefinition) -> dict[str, Any]:
    """A tool the model may call."""
    return {"name": tool.name, "description": tool.description, "input_schema": dict(tool.parameters)}


def wire_messages(messages: tuple[Message, ...]) -> list[dict[str, Any]]:
    """User and assistant turns, strictly alternating and opening with a user turn, as the API requires.

    Consecutive turns of one role are merged with a blank line between them. ``name`` has no place in
    this format and is left off (speaker labels are applied before, by the engine). A conversation that
    opens with the assistant, or has no turns at all, gets a ``(conversation start)`` user turn first.
    Tool use: an assistant's tool calls become ``tool_use`` blocks and ``tool`` messages become
    ``tool_result`` blocks of the next user turn; a turn with only text stays a plain string.

    Raises:
        ProviderError: a role other than system, user, assistant or tool.
    """
    turns: list[dict[str, Any]] = []
    for message in messages:
        if message.role != "system":
            _add_to_turns(turns, _turn_role(message), _blocks(message))
    if not turns or turns[0]["role"] != "user":
        turns.insert(0, {"role": "user", "content": [{"type": "text", "text": CONVERSATION_START}]})
    return [_collapse(turn) for turn in turns]


def _turn_role(message: Message) -> str:
    """The role of the turn a message goes in: a tool result is the user's."""
    if message.role not in ("user", "assistant", "tool"):
        raise ProviderError(
            f"the Anthropic API has no {message.role!r} role (only user, assistant and tool results)"
        )
    return "user" if message.role == "tool" else message.role


def _add_to_turns(turns: list[dict[str, Any]], role: str, blocks: list[dict[str, Any]]) -> None:
    """Append the blocks to the last turn when it has the same role, else as a new turn."""
    if turns and turns[-1]["role"] == role:
        turns[-1]["content"].extend(blocks)
    else:
        turns.append({"role": role, "content": blocks})


def _blocks(message: Message) -> list[dict[str, Any]]:
    if message.role == "tool":
        return [{"type": "tool_result", "tool_use_id": message.tool_call_id or "", "content": message.content}]
    # images before the text, as Anthropic advises
    blocks: list[dict[str, Any]] = [*(_media_block(part) for part in message.parts),
                                    {"type": "text", "text": message.content}]
    for call in message.tool_calls:
        blocks.append({"type": "tool_use", "id": call.id, "name": call.name, "input": _input(call)})
    return blocks


def _media_block(part: MediaPart) -> dict[str, Any]:
    """An ``image`` block (a URL, or the bytes as base64); audio has no block in this API.

    Raises:
        ProviderError: for audio (collection refuses it first: ``suite/media.refuse_audio``).
    """
    if part.kind != "image":
        raise ProviderError("the Anthropic API does not take audio input")
    if part.url is not None:
        return {"type": "image", "source": {"type": "url", "url": part.url}}
    return {"type": "image", "source": {"type": "base64", "media_type": part.media_type,
                                        "data": media_data(part_base64, part)}}


def _input(call: ToolCall) -> Any:
    """The arguments as an object; text that is not a JSON object is passed on under ``_raw``."""
    try:
        value = json.loads(call.arguments)
    except ValueError:
        return {"_raw": call.arguments}
    return value if isinstance(value, dict) else {"_raw": call.arguments}


def _collapse(turn: dict[str, Any]) -> dict[str, Any]:
    """A turn of text blocks only is sent as one string; otherwise its non-empty blocks."""
    blocks = turn["content"]
    if all(block["type"] == "text" for block in blocks):
        return {"role": turn["role"], "content": "\n\n".join(block["text"] for block in blocks)}
    kept = [block for block in blocks if block["type"] != "text" or block["text"]]
    return {"role": turn["role"], "content": kept}


def body_error(data: dict[str, Any]) -> BodyError | None:
    """An error object in a 2xx body (``{"type": "error", "error": {...}}``) is still an error."""
    if data.get("type") != "error":
        return None
    error = data.get("error")
    if not isinstance(error, dict):
        error = {}
    error_type = str(error.get("type", "unknown"))
    return BodyError(_ERROR_STATUS.get(error_type, 500), f"{error_type}: {error.get('message', '')!s}")


def parse_completion(data: dict[str, Any], latency: float, answer_tool: str | None = None) -> Completion:
    """Join the text blocks of a Messages response and read its usage.

    ``answer_tool``: the tool ``output_schema:`` was sent as (``answer_tool``); its input is the answer (``parsed``,
    and as JSON text the ``text``), not a tool call. A ``refusal`` stop reason is the model declining.
    """
    blocks = data.get("content")
    if not isinstance(blocks, list):
        raise malformed("content is missing or not a list")
    texts = [
        require_text(block.get("text"), f"content[{index}].text") for index, block in _typed(blocks, "text")
    ]
    calls = tuple(_read_tool_use(index, block) for index, block in _typed(blocks, "tool_use"))
    stop_reason = optional_str(data.get("stop_reason"), "stop_reason")
    text = "".join(texts)
    completion = Completion(
        text=text,
        usage=read_usage(data, "input_tokens", "output_tokens"),
        latency_s=latency,
        finish_reason=stop_reason,
        request_id=optional_str(data.get("id"), "id"),
        tool_calls=calls,
        refusal=(text or "(declined without words)") if stop_reason == "refusal" else None,
    )
    return answered_by_tool(completion, answer_tool)


def _typed(blocks: list[Any], kind: str) -> list[tuple[int, dict[str, Any]]]:
    """The content blocks of one ``type``, with their index in ``content``."""
    return [
        (index, block) for index, block in enumerate(blocks) if isinstance(block, dict) and block.get("type") == kind
    ]


def _read_tool_use(index: int, block: dict[str, Any]) -> ToolCall:
    arguments = block.get("input")
    return ToolCall(
        id=optional_str(block.get("id"), f"content[{index}].id") or f"toolu_{index}",
        name=require_text(block.get("name"), f"content[{index}].name"),
        arguments=json.dumps(arguments if arguments is not None else {}),
    )
