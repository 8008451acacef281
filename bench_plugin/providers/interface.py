"""What every provider speaks: one async ``complete`` plus small policy methods with defaults."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any, Protocol, runtime_checkable

from bench_plugin.core.chat import Completion, CompletionRequest, EmbeddingRequest, Embeddings, Message, Usage
from bench_plugin.core.endpoints import ModelSpec, ProviderSpec
from bench_plugin.core.errors import CaseError, ProviderError, TransientProviderError
from bench_plugin.core.json_bounds import loads_bounded
from bench_plugin.core.media import MediaError, MediaPart
from bench_plugin.providers.http import HttpPool, malformed
from bench_plugin.suite.templates import render_standalone


@runtime_checkable
class Provider(Protocol):
    """A translator for one wire format (or an offline source of answers)."""

    spec: ProviderSpec

    async def complete(self, request: CompletionRequest) -> Completion:
        """Make one attempt at the call; retries belong to the caller."""
        ...

    def should_retry(self, exc: BaseException) -> bool:
        """Whether ``exc`` from ``complete`` is worth another attempt."""
        ...

    def connection_key(self) -> str:
        """The scope shared by rate limits and connection pools (e.g. the base URL)."""
        ...

    def max_concurrency(self) -> int | None:
        """An upper bound on calls in flight to this provider, or None for the runner's default."""
        ...

    async def aclose(self) -> None:
        """Release clients; called once, inside the runner's event loop."""
        ...


@runtime_checkable
class EmbeddingProvider(Protocol):
    """A provider that can also turn texts into vectors (``similar`` scorers call it through the runner).

    Optional: a provider without ``embed`` still runs every other scorer; naming it as an
    ``embedding_model`` fails the case with a message that says so.
    """

    async def embed(self, request: EmbeddingRequest) -> Embeddings:
        """Make one attempt at embedding ``request.texts``; retries belong to the caller."""
        ...


class BaseProvider:
    """Defaults for the policy methods, so a provider only has to write ``complete``."""

    def __init__(self, spec: ProviderSpec, http: HttpPool | None = None) -> None:
        self.spec = spec
        self.http = http

    async def complete(self, request: CompletionRequest) -> Completion:  # pragma: no cover - abstract
        """Make one attempt at the call; every provider writes its own."""
        raise NotImplementedError

    def should_retry(self, exc: BaseException) -> bool:
        """Retry only failures marked transient (``TransientProviderError``); the rest would fail again."""
        return isinstance(exc, TransientProviderError)

    def connection_key(self) -> str:
        """The base URL, or the provider's type and name for one without a URL (offline providers)."""
        return self.spec.base_url or f"{self.spec.type}:{self.spec.name}"

    def max_concurrency(self) -> int | None:
        """The provider's ``concurrency`` setting, if any."""
        return self.spec.concurrency

    async def aclose(self) -> None:
        """Nothing to release: the HTTP pool belongs to the runner."""
        return None


def apply_system_policy(messages: tuple[Message, ...], model: ModelSpec) -> tuple[Message, ...]:
    """Rewrite system messages for models that take no system role.

    ``native`` leaves them alone; ``drop`` removes them; ``fold`` joins them and prepends the result,
    through the model's ``system_fold_template``, to the first user message (or adds a user message
    when there is none), the way some harnesses talk to models without a system role.
    """
    if model.system_prompt == "native":
        return messages
    system_text = "\n\n".join(m.content for m in messages if m.role == "system" and m.content)
    rest = [m for m in messages if m.role != "system"]
    if model.system_prompt == "drop" or not system_text:
        return tuple(rest)
    return _fold(rest, render_standalone(model.system_fold_template, {"system": system_text}))


def _fold(messages: list[Message], prefix: str) -> tuple[Message, ...]:
    """``prefix`` put before the first user message, or a user message of its own at the end when there is none."""
    for index, message in enumerate(messages):
        if message.role == "user":
            folded = Message(role="user", content=prefix + message.content, name=message.name, parts=message.parts)
            return (*messages[:index], folded, *messages[index + 1:])
    return (*messages, Message(role="user", content=prefix.rstrip()))


def merge_params(request: CompletionRequest) -> dict[str, Any]:
    """The model's params overridden by the call's; a None value drops the param from the request."""
    return {
        key: value for key, value in {**request.model.params, **request.params}.items() if value is not None
    }


STRUCTURED_OUTPUT = "structured_output"
"""The model option that says how ``output_schema:`` is asked for: ``native`` or ``tool`` (a forced tool)."""


def structured_form(request: CompletionRequest, default: str) -> str | None:
    """How this call asks for its ``output_schema:``: the model's ``structured_output``, else ``default``.

    None when the call has no schema.
    """
    if request.response_schema is None:
        return None
    return str(request.model.options.get(STRUCTURED_OUTPUT, default))


def answered_by_tool(completion: Completion, tool: str | None) -> Completion:
    """The answer of a call whose ``output_schema:`` went as the forced tool ``tool``.

    That tool's input is the answer (its data ``parsed``, its JSON the text), not a tool call. Unchanged when the
    model did not call it (or ``tool`` is None).
    """
    answer = next((call for call in completion.tool_calls if call.name == tool), None)
    if answer is None:
        return completion
    try:  # arguments the model wrote as text (OpenAI) may not parse: the text then says why the answer fails
        parsed = loads_bounded(answer.arguments)
    except ValueError:
        parsed = None
    return replace(completion, text=answer.arguments, parsed=parsed,
                   tool_calls=tuple(call for call in completion.tool_calls if call is not answer))


def require_text(value: Any, what: str) -> str:
    """Check a field of a response body is a string, or raise a retryable bad-body error."""
    if not isinstance(value, str):
        raise malformed(f"{what} is {type(value).__name__}, expected a string")
    return value


def optional_str(value: Any, what: str) -> str | None:
    """A response field that may be absent (None) but must be a string when present."""
    return None if value is None else require_text(value, what)


def optional_int(value: Any, what: str) -> int | None:
    """A response field that may be absent (None) but must be an integer when present."""
    if value is None or (isinstance(value, int) and not isinstance(value, bool)):
        return value
    raise malformed(f"{what} is {type(value).__name__}, expected an integer")


def read_usage(data: Mapping[str, Any], input_key: str, output_key: str) -> Usage:
    """Token counts from the body's ``usage`` object under the wire format's names.

    A missing ``usage`` (or one that is not an object) counts nothing; a count present must be an integer.
    """
    usage = data.get("usage")
    if not isinstance(usage, dict):
        usage = {}
    return Usage(
        input_tokens=optional_int(usage.get(input_key), f"usage.{input_key}"),
        output_tokens=optional_int(usage.get(output_key), f"usage.{output_key}"),
    )


__all__ = [
    "BaseProvider",
    "Completion",
    "CompletionRequest",
    "EmbeddingProvider",
    "Provider",
    "ProviderError",
    "Usage",
    "answered_by_tool",
    "apply_system_policy",
    "merge_params",
    "optional_int",
    "optional_str",
    "read_usage",
    "require_text",
    "structured_form",
]


def media_data(encode: Callable[[MediaPart], str], part: MediaPart) -> str:
    """``encode(part)`` (``data_url``, ``part_base64``): a file that changed or went since collection fails its case.

    Raises:
        CaseError: naming the file and what happened to it.
    """
    try:
        return encode(part)
    except MediaError as exc:
        raise CaseError(str(exc), hint="collect the suite again (its media are checked at collection)") from None
