"""HTTP mechanics shared by every HTTP provider: pooled clients, one POST, retries, key redaction."""

from __future__ import annotations

import asyncio
import email.utils
import json
import logging
import math
import os
import re
import ssl
import time
from collections.abc import AsyncIterator, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx

from bench_plugin.endpoints import ProviderSpec
from bench_plugin.errors import AuthError, ProviderError, TransientProviderError

logger = logging.getLogger(__name__)

REDACTED = "[REDACTED]"
RETRY_AFTER_CEILING_S = 60.0
_EXCERPT_CHARS = 300
_MIN_ECHO_CHARS = 8
# 408 and 409 are retried by the official OpenAI and Anthropic SDKs too.
_TRANSIENT_4XX = frozenset({408, 409, 429})


class HttpPool:
    """Clients that live in the runner's event loop and are reused across cases.

    Each connection key (a base URL) gets a LIFO stack of one-connection ``httpx.AsyncClient``s, created
    lazily up to ``size``. All of them share one ``ssl.SSLContext``, which is most of what a client
    costs to build. This layout measured fastest (see ``design/pytest-concurrency.md``).
    """

    def __init__(self, size: int = 16) -> None:
        self.size = max(1, size)
        # trust_env=True here only reads SSL_CERT_FILE / SSL_CERT_DIR; proxies stay off (see _new_client).
        self._ssl_context: ssl.SSLContext = httpx.create_ssl_context()
        self._idle: dict[str, list[httpx.AsyncClient]] = {}
        self._slots: dict[str, asyncio.Semaphore] = {}
        self._clients: list[httpx.AsyncClient] = []
        self._closed = False

    @asynccontextmanager
    async def client(self, key: str) -> AsyncIterator[httpx.AsyncClient]:
        """Lend a client for ``key``, waiting while ``size`` of them are busy."""
        if self._closed:
            raise RuntimeError("HttpPool is closed")
        async with self._slots.setdefault(key, asyncio.Semaphore(self.size)):
            idle = self._idle.setdefault(key, [])
            client = idle.pop() if idle else self._new_client()
            try:
                yield client
            finally:
                if not self._closed:  # aclose() already closed every client, lent or not
                    idle.append(client)

    async def aclose(self) -> None:
        """Close every client; call it in the loop that used them."""
        self._closed = True
        clients, self._clients = self._clients, []
        self._idle.clear()
        for client in clients:
            await client.aclose()

    def _new_client(self) -> httpx.AsyncClient:
        client = httpx.AsyncClient(
            verify=self._ssl_context,
            limits=httpx.Limits(max_connections=1, max_keepalive_connections=1),
            trust_env=False,  # no proxies or .netrc from the environment
            follow_redirects=False,
        )
        self._clients.append(client)
        return client


async def post_json(
    pool: HttpPool,
    url: str,
    *,
    json_body: Mapping[str, Any],
    headers: Mapping[str, str],
    timeout_s: float,
    key: str,
    secrets: Iterable[str] = (),
) -> tuple[dict[str, Any], float]:
    """POST ``json_body`` and return the JSON object answered, with the latency in seconds.

    ``timeout_s`` bounds each phase (connect, write, every read), as httpx timeouts do. The latency
    excludes time spent waiting for a free client.

    Raises:
        TransientProviderError: timeout, connection failure, 408/409/429, 5xx, or a 2xx body that is
            not a JSON object (``kind="malformed"``).
        AuthError: 401 or 403.
        ProviderError: any other non-2xx answer, or a URL httpx cannot use.
    """
    secrets = tuple(secrets)
    async with pool.client(key) as client:
        started = time.perf_counter()
        try:
            response = await client.post(url, json=json_body, headers=dict(headers), timeout=timeout_s)
        except httpx.TimeoutException as exc:
            message = f"timed out after {timeout_s:g} s: POST {url}"
            raise TransientProviderError(redact(message, secrets), kind="timeout") from exc
        except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
            message = f"unusable URL {url}: {exc}"
            raise ProviderError(redact(message, secrets), kind="connection") from exc
        except httpx.TransportError as exc:
            message = f"connection failed: POST {url}: {type(exc).__name__}: {exc}"
            raise TransientProviderError(redact(message, secrets), kind="connection") from exc
        latency = time.perf_counter() - started
    _raise_for_status(response, secrets)
    return _parse_json_object(response, secrets), latency


def error_for_status(status: int, message: str, retry_after: float | None = None) -> ProviderError:
    """The error for an HTTP status, or a status named inside a response body.

    Transient for 408/409/429/5xx, ``AuthError`` for 401/403, a plain ``ProviderError`` (not retried) otherwise.
    """
    if status in _TRANSIENT_4XX or status >= 500:
        return TransientProviderError(message, status=status, retry_after=retry_after)
    if status in (401, 403):
        return AuthError(message, status=status)
    return ProviderError(message, status=status)


def _raise_for_status(response: httpx.Response, secrets: tuple[str, ...]) -> None:
    status = response.status_code
    if 200 <= status < 300:
        return
    message = f"HTTP {status} from {response.request.url}: {_error_excerpt(response.text)}"
    if 300 <= status < 400:  # redirects are not followed: a moved endpoint is a configuration problem
        message += f" (redirected to {response.headers.get('location', '?')}; use that as base_url)"
    raise error_for_status(status, redact(message, secrets), _retry_after_of(response.headers))


def _parse_json_object(response: httpx.Response, secrets: tuple[str, ...]) -> dict[str, Any]:
    try:
        body = response.json()
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise malformed(redact(f"body is not JSON: {_error_excerpt(response.text)}", secrets)) from exc
    if not isinstance(body, dict):
        raise malformed(f"expected a JSON object, got {type(body).__name__}")
    return body


def _error_excerpt(text: str) -> str:
    """The server's error message, or the start of the body; whitespace collapsed, at most ~300 characters.

    The message is read from the usual ``{"error": {"message"}}`` shape when the body has it.
    """
    try:
        error = json.loads(text).get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            text = error["message"]
    except (ValueError, AttributeError):
        pass
    text = " ".join(text.split()) or "(empty body)"
    return text if len(text) <= _EXCERPT_CHARS else text[:_EXCERPT_CHARS] + "..."


def redact(text: str, secrets: Iterable[str]) -> str:
    """Replace each secret, and any prefix or suffix of it of 8+ characters, with ``[REDACTED]``.

    Partial echoes matter: servers often quote the start or end of a rejected key.

    Example:
        >>> redact("bad key sk-abcdefghijkl (sk-abcdefgh...)", ["sk-abcdefghijkl"])
        'bad key [REDACTED] ([REDACTED]...)'
    """
    if isinstance(secrets, str):  # a lone key would otherwise be taken character by character
        secrets = (secrets,)
    fragments: set[str] = set()
    for secret in secrets:
        if not secret:
            continue
        fragments.add(secret)
        for length in range(_MIN_ECHO_CHARS, len(secret)):
            fragments.update((secret[:length], secret[-length:]))
    if not fragments:
        return text
    # longest first, so a whole key is replaced once rather than piecewise
    pattern = "|".join(re.escape(f) for f in sorted(fragments, key=len, reverse=True))
    return re.sub(pattern, REDACTED, text)


def api_key_from_env(spec: ProviderSpec) -> str | None:
    """Read the provider's key from the environment at call time; None when it uses no key.

    Raises:
        AuthError: ``api_key_env`` names a variable that is unset or empty.
    """
    name = spec.api_key_env
    if not name:
        return None
    value = os.environ.get(name, "").strip()
    if not value:
        raise AuthError(f"environment variable {name} is not set", kind="auth")
    return value


def parse_retry_after(value: str | None, now: float | None = None) -> float | None:
    """Seconds to wait from a ``Retry-After`` value (delay seconds or an HTTP-date); None if unreadable."""
    if value is None or not value.strip():
        return None
    try:
        seconds = float(value)
    except ValueError:
        try:
            when = email.utils.parsedate_to_datetime(value)
        except (TypeError, ValueError):
            return None
        seconds = when.timestamp() - (time.time() if now is None else now)
    return max(0.0, seconds) if math.isfinite(seconds) else None


def _retry_after_of(headers: httpx.Headers) -> float | None:
    """The server's requested wait; ``retry-after-ms`` (OpenAI) is more precise, so it wins."""
    milliseconds = parse_retry_after(headers.get("retry-after-ms"))
    if milliseconds is not None:
        return milliseconds / 1000
    return parse_retry_after(headers.get("retry-after"))


def merge_headers(*layers: Mapping[str, str]) -> dict[str, str]:
    """Merge header mappings, later layers winning regardless of the case of names."""
    merged = httpx.Headers()
    for layer in layers:
        merged.update(layer)
    return dict(merged.items())


def malformed(what: str) -> TransientProviderError:
    """A retryable error for a response body that does not have the shape of the wire format."""
    return TransientProviderError(f"malformed response: {what}", kind="malformed")
