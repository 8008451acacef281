"""One HTTP request of any method and body through the runner's pool: what ``post_json`` does for a JSON POST.

An application (``type: application``) is asked in its own shape: a GET with a query, a text body, a PUT.
It goes through the same pooled connections, the same bounds (the whole attempt within ``timeout_s``, the
answer within ``max_bytes`` as it arrives) and the same translation of failures into the error tree, with
the call's keys kept out of every message and out of an answer that quotes them. It borrows the pieces of
``http.py`` rather than copying them: one reading of a body, one status policy, one redaction.
"""

from __future__ import annotations

import asyncio
import time
from collections.abc import Iterable, Mapping
from dataclasses import dataclass

import httpx

from bench_plugin.providers.http import (
    MAX_RESPONSE_BYTES,
    HttpPool,
    _echoes,
    _Slot,
    attempt_errors,
    body_within,
    log_redaction,
    raise_for_status,
    redact,
    request_timeouts,
)


@dataclass(frozen=True)
class OutgoingRequest:
    """A request as rendered: ``content`` is the body's bytes (empty: no body), ``headers`` the call's own."""

    method: str
    url: str
    headers: Mapping[str, str]
    content: bytes = b""
    params: tuple[tuple[str, str], ...] = ()


@dataclass(frozen=True)
class Answer:
    """What the application answered: its status, its body as text (keys quoted back replaced) and the latency."""

    status: int
    text: str
    latency_s: float


async def send_request(
    pool: HttpPool,
    outgoing: OutgoingRequest,
    *,
    timeout_s: float,
    key: str,
    secrets: Iterable[str] = (),
    max_bytes: int = MAX_RESPONSE_BYTES,
) -> Answer:
    """Send ``outgoing`` once and return the 2xx answer.

    Raises:
        TransientProviderError: timeout, connection failure, 408/409/429, 5xx.
        AuthError: 401 or 403.
        ProviderError: any other non-2xx answer, an answer longer than ``max_bytes``, a URL httpx cannot use.
    """
    secrets = tuple(secrets)
    log_redaction().add_secrets(secrets)  # before httpx can log a header or an error quoting a key
    async with pool.lend(key) as slot:
        started = time.perf_counter()
        with attempt_errors(outgoing.method, outgoing.url, timeout_s, max_bytes, secrets):
            async with asyncio.timeout(timeout_s):  # the attempt in all, not only each read
                response = await _exchange(slot, outgoing, timeout_s, max_bytes)
        latency = time.perf_counter() - started
    raise_for_status(response, secrets)
    return Answer(response.status_code, _text_without(response, secrets), latency)


def _text_without(response: httpx.Response, secrets: tuple[str, ...]) -> str:
    """The body's text; a key the application quotes back (echoing its headers) never reaches a record."""
    text = response.content.decode(response.encoding or "utf-8", errors="replace")
    if any(_echoes(response.content, secret) for secret in secrets):
        return redact(text, secrets)
    return text


async def _exchange(slot: _Slot, outgoing: OutgoingRequest, timeout_s: float, max_bytes: int) -> httpx.Response:
    """Send through the slot's transport, the body read whole and bounded (as ``post_json``'s ``_send``)."""
    headers = {name: value for name, value in slot.default_headers.items() if name != "content-type"}
    headers.update((name.lower(), value) for name, value in outgoing.headers.items())
    url = httpx.URL(outgoing.url, params=outgoing.params) if outgoing.params else httpx.URL(outgoing.url)
    request = httpx.Request(outgoing.method, url, content=outgoing.content or None, headers=headers,
                            extensions={"timeout": request_timeouts(timeout_s)})
    response = await slot.transport.handle_async_request(request)
    response.request = request
    try:
        response._content = await body_within(response, max_bytes)
    finally:
        await response.aclose()
    return response
