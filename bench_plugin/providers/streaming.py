"""One streamed attempt: POST, read the server-sent events as they come, time them, and assemble the answer.

A provider with ``stream: true`` (or a run under ``--bench-stream``) sends its request here instead of
``http.post_json``; the wire format's own assembler (``openai_stream.py``, ``anthropic_stream.py``) turns
its events into a ``Completion``. The stream is bounded like any answer: at most ``max_response_bytes``
of events, and the attempt's whole deadline (``timeout``), first byte to last.

Retries happen only before the first byte. A failure before the stream's first byte (a timeout, a
refused connection, a 429 or a 5xx) is what it is without streaming, retried alike. Once a byte of
the stream has arrived, any failure (the connection dropped, the deadline, an ``error`` event, an
event that is not the format's) ends the call: ``kind`` ``stream_cut`` (or ``stream_error`` for an
error event, with the status its type names), never retried, since a second attempt would pay for the
tokens again and its timing would not be the first's.
"""

from __future__ import annotations

import asyncio
import dataclasses
import functools
import json
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

import httpx

from bench_plugin.core.chat import Completion, CompletionRequest
from bench_plugin.core.endpoints import ProviderSpec
from bench_plugin.core.errors import ProviderError, TransientProviderError
from bench_plugin.core.json_bounds import BoundsError, loads_bounded
from bench_plugin.core.text_safety import log_line
from bench_plugin.providers.http import (
    BodyError,
    HttpPool,
    TooLarge,
    attempt_errors,
    body_within,
    log_redaction,
    malformed,
    parsed_url,
    raise_for_status,
    redact,
    redacted,
    request_timeouts,
)
from bench_plugin.providers.sse import EventParser, ServerEvent, StreamFormatError

STREAM_CUT = "stream_cut"
"""The ``kind`` of a failure after the stream's first byte: not retried."""
STREAM_ERROR = "stream_error"
"""The ``kind`` of an ``error`` event in the stream: not retried either."""


def wants_stream(spec: ProviderSpec, request: CompletionRequest) -> bool:
    """Whether this call streams: the model's ``stream`` when it says, else its provider's."""
    model_says = request.model.stream
    return spec.stream if model_says is None else model_says


class StreamEventError(Exception):
    """The stream sent an error event: ``error`` holds its status and message, as a 2xx body's error would."""

    def __init__(self, error: BodyError) -> None:
        super().__init__(error.message)
        self.error = error


class Assembler(Protocol):
    """What one wire format's events add up to."""

    def feed(self, event: ServerEvent) -> bool:
        """Take one event; True when it carried a token (text, or a piece of a tool call).

        Raises:
            StreamEventError: an error event.
            ProviderError: an event that is not the format's (``kind="malformed"``).
        """
        ...

    def finished(self) -> bool:
        """Whether the events so far make a whole answer (OpenAI's ``[DONE]``, Anthropic's ``message_stop``)."""
        ...

    def completion(self) -> Completion:
        """The answer the events made, without timing."""
        ...


@dataclass
class StreamClock:
    """When the attempt started, and when its first byte, first token and last token arrived (perf_counter)."""

    started: float
    first_byte: float | None = None
    first_token: float | None = None
    last_token: float | None = None
    token_events: int = 0

    def token(self) -> None:
        """Note an event that carried a token, now."""
        now = time.perf_counter()
        if self.first_token is None:
            self.first_token = now
        self.last_token = now
        self.token_events += 1

    def timed(self, completion: Completion, ended: float) -> Completion:
        """``completion`` with its latency (to ``ended``), ``ttft_s``, ``tokens_per_s`` and ``itl_s``.

        The token rate is the decode rate: the tokens after the first over the time from the first to the
        last (the server's count of output tokens when it gave one, else the token events). The inter-token
        latency is the mean gap between token events. Each is None when the stream gave too few tokens.
        """
        latency = ended - self.started
        if self.first_token is None or self.last_token is None:
            return dataclasses.replace(completion, latency_s=latency)
        span = self.last_token - self.first_token
        counted = completion.usage.output_tokens
        tokens = counted if counted is not None and counted > 0 else self.token_events
        gaps = self.token_events - 1
        return dataclasses.replace(
            completion, latency_s=latency, ttft_s=self.first_token - self.started,
            tokens_per_s=(tokens - 1) / span if span > 0 and tokens > 1 else None,
            itl_s=span / gaps if gaps > 0 else None,
        )


async def stream_completion(
    pool: HttpPool,
    url: str,
    *,
    json_body: Mapping[str, Any],
    headers: Mapping[str, str],
    spec: ProviderSpec,
    key: str,
    secrets: Iterable[str],
    assembler: Assembler,
) -> Completion:
    """POST ``json_body`` asking for an event stream and return the assembled answer with its timing.

    ``spec`` gives the bounds: ``timeout_s`` for each phase and the whole attempt, ``max_response_bytes``
    for the events in all. ``latency_s`` runs to the stream's last byte.

    Raises:
        TransientProviderError: before the stream's first byte, as ``post_json`` (timeout, connection, 429, 5xx).
        AuthError: 401 or 403.
        ProviderError: any other non-2xx answer; ``kind="stream_cut"`` or ``"stream_error"`` after the first
            byte (see the module's docstring); ``"too_large"`` past ``max_response_bytes``.
    """
    secrets = tuple(secrets)
    log_redaction().add_secrets(secrets)
    timeout_s, max_bytes = spec.timeout_s, spec.max_response_bytes
    async with pool.lend(key) as slot:
        clock = StreamClock(time.perf_counter())
        failure = functools.partial(_failure, clock, secrets=secrets)
        with attempt_errors("POST", url, timeout_s, max_bytes, secrets, failure, answer="a stream"):
            async with asyncio.timeout(timeout_s):
                await _read_stream(slot, url, json_body, headers, timeout_s, max_bytes, assembler, clock, secrets)
        ended = time.perf_counter()
    return clock.timed(_without_keys(assembler.completion(), secrets), ended)


async def _read_stream(
    slot: Any, url: str, json_body: Mapping[str, Any], headers: Mapping[str, str], timeout_s: float, max_bytes: int,
    assembler: Assembler, clock: StreamClock, secrets: tuple[str, ...],
) -> None:
    """Send the request and feed every event to ``assembler``, noting the first byte and each token."""
    request = _request(slot, url, json_body, headers, timeout_s)
    response = await slot.transport.handle_async_request(request)
    response.request = request
    try:
        if not 200 <= response.status_code < 300:
            response._content = await body_within(response, max_bytes)  # what aread() sets, bounded
            raise_for_status(response, secrets)
        await _feed(response, max_bytes, assembler, clock, secrets)
    finally:
        await response.aclose()


async def _feed(
    response: httpx.Response, max_bytes: int, assembler: Assembler, clock: StreamClock, secrets: tuple[str, ...]
) -> None:
    """Read the events of a 2xx answer; every problem found in them is final (``stream_cut``)."""
    kind = response.headers.get("content-type", "")
    if not kind.startswith("text/event-stream"):  # a server that ignored ``stream``, or a proxy's page
        body = (await body_within(response, max_bytes))[:_EXCERPT_BYTES].decode("utf-8", "replace")
        message = f"expected an event stream (text/event-stream), got {kind or 'no content type'}: {body}"
        raise ProviderError(redacted(log_line(" ".join(message.split())), secrets) + _NOT_RETRIED, kind=STREAM_CUT)
    parser, size = EventParser(), 0
    try:
        async for piece in response.aiter_bytes():
            if clock.first_byte is None:
                clock.first_byte = time.perf_counter()
            size += len(piece)
            if size > max_bytes:
                raise TooLarge
            _take(parser.feed(piece), assembler, clock)
        _take(parser.close(), assembler, clock)
    except StreamEventError as exc:
        raise _event_error(exc.error, secrets) from exc
    except (StreamFormatError, ProviderError) as exc:
        message = exc.message if isinstance(exc, ProviderError) else f"malformed event stream: {exc}"
        raise ProviderError(redacted(message, secrets) + _NOT_RETRIED, kind=STREAM_CUT) from exc
    if not assembler.finished():
        raise ProviderError("the stream ended before its last event" + _NOT_RETRIED, kind=STREAM_CUT)


_NOT_RETRIED = " (after the stream's first byte: not retried)"
_EXCERPT_BYTES = 300


def _without_keys(answer: Completion, secrets: tuple[str, ...]) -> Completion:
    """The answer with the call's key replaced by ``[REDACTED]`` where it quotes it (as ``post_json`` does)."""
    texts = [answer.text, *(call.arguments for call in answer.tool_calls)]
    if not any(_quotes(text, secret) for text in texts for secret in secrets):
        return answer
    calls = tuple(dataclasses.replace(call, arguments=redact(call.arguments, secrets)) for call in answer.tool_calls)
    return dataclasses.replace(answer, text=redact(answer.text, secrets), tool_calls=calls)


def _quotes(text: str, secret: str) -> bool:
    """Whether ``text`` may quote ``secret``: its first or last 8 characters (the fragments ``redact`` replaces)."""
    return bool(secret) and (secret[:8] in text or secret[-8:] in text)


def _take(events: list[ServerEvent], assembler: Assembler, clock: StreamClock) -> None:
    for event in events:
        if assembler.feed(event):
            clock.token()


def _event_error(error: BodyError, secrets: tuple[str, ...]) -> ProviderError:
    """An ``error`` event as a final error of the status its type names (a 429 still pauses the model)."""
    found = error.error({}, secrets)
    return ProviderError(f"{found.message} (an error event in the stream: not retried)", status=found.status,
                         retry_after=found.retry_after, kind=STREAM_ERROR)


def event_object(data: str) -> dict[str, Any]:
    """One event's JSON object, bounded like any body (``json_bounds``); anything else is a malformed answer."""
    try:
        value = loads_bounded(data)
    except (json.JSONDecodeError, BoundsError) as exc:
        raise malformed(f"an event that is not JSON we read: {exc}") from exc
    if not isinstance(value, dict):
        raise malformed(f"an event that is {type(value).__name__}, expected a JSON object")
    return value

def _failure(clock: StreamClock, message: str, kind: str, secrets: tuple[str, ...]) -> ProviderError:
    """A timeout or a broken connection: retried as usual before the stream's first byte, final after it."""
    text = redacted(message, secrets)
    if clock.first_byte is None:
        return TransientProviderError(text, kind=kind)
    return ProviderError(f"{text}{_NOT_RETRIED}", kind=STREAM_CUT)


def _request(slot: Any, url: str, json_body: Mapping[str, Any], headers: Mapping[str, str],
             timeout_s: float) -> httpx.Request:
    """The POST as ``http.post_json`` sends it (compact UTF-8 JSON, no NaN), asking for an event stream."""
    body = json.dumps(json_body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
    merged = dict(slot.default_headers)
    merged["accept"] = "text/event-stream"
    merged["accept-encoding"] = "identity"  # each event as it is sent, not held back by a compressor
    for name, value in headers.items():
        merged[name.lower()] = value
    return httpx.Request("POST", parsed_url(url), content=body, headers=merged,
                         extensions={"timeout": request_timeouts(timeout_s)})
