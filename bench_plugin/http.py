"""HTTP mechanics shared by every HTTP provider: pooled clients, one POST, retries, key redaction."""

from __future__ import annotations

import asyncio
import dataclasses
import email.utils
import json
import logging
import math
import os
import random
import re
import ssl
import time
from collections.abc import AsyncIterator, Awaitable, Callable, Iterable, Mapping
from contextlib import asynccontextmanager
from typing import Any

import httpx

from bench_plugin.chat import Completion, CompletionRequest
from bench_plugin.endpoints import ProviderSpec
from bench_plugin.errors import AuthError, ProviderError, TransientProviderError
from bench_plugin.providers.interface import Provider, malformed

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
    """The error for an HTTP status, or a status named inside a response body: transient for
    408/409/429/5xx, ``AuthError`` for 401/403, a plain ``ProviderError`` (not retried) otherwise."""
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
    """The server's error message when the body has the usual ``{"error": {"message"}}`` shape,
    otherwise the start of the body; whitespace collapsed, at most ~300 characters."""
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


async def complete_with_retries(
    provider: Provider,
    request: CompletionRequest,
    *,
    max_retries: int,
    base_delay: float = 0.5,
    max_delay: float = 20.0,
    sleep: Callable[[float], Awaitable[Any]] = asyncio.sleep,
    rng: random.Random | None = None,
) -> Completion:
    """Call ``provider.complete`` until it answers, retrying what ``provider.should_retry`` allows.

    Waits the server's ``Retry-After`` when the error carries one (up to a 60 s ceiling; a longer
    request, such as an exhausted daily quota, gives up at once), otherwise exponential backoff
    ``min(max_delay, base_delay * 2.0**retry)`` plus up to 25 % jitter.

    Returns:
        The completion with ``attempts`` set to the number of calls made.

    Raises:
        ProviderError: the last error, of the same type, status and kind, its message saying how many
            attempts were made. Errors that are not retryable propagate at once, unchanged.
    """
    rng = rng or random.Random()
    attempt = 0
    while True:
        attempt += 1
        try:
            completion = await provider.complete(request)
        except Exception as exc:  # CancelledError is a BaseException and passes through
            if not provider.should_retry(exc):
                raise
            delay = _retry_delay(exc, attempt - 1, base_delay, max_delay, rng)
            if attempt > max_retries or delay is None:
                final = _gave_up(exc, attempt)
                if final is exc:
                    raise
                raise final from exc
            logger.info("retrying %s in %.2f s after attempt %d: %s", provider.spec.name, delay, attempt, exc)
            await sleep(delay)
            continue
        return dataclasses.replace(completion, attempts=attempt)


def _retry_delay(
    exc: Exception, retry: int, base_delay: float, max_delay: float, rng: random.Random
) -> float | None:
    """Seconds to wait before retry number ``retry`` (0-based), or None when waiting is pointless."""
    server_wait: float | None = getattr(exc, "retry_after", None)
    if isinstance(server_wait, (int, float)):
        if server_wait > RETRY_AFTER_CEILING_S:
            return None
        # a little jitter so cases rejected together do not all come back in the same instant
        return server_wait + rng.uniform(0, min(1.0, 0.1 * server_wait))
    backoff = min(max_delay, base_delay * 2.0**retry)
    return backoff + rng.uniform(0, 0.25 * backoff)


def _gave_up(exc: Exception, attempts: int) -> Exception:
    """A copy of ``exc`` (same type, status, kind) whose message counts the attempts."""
    if not isinstance(exc, ProviderError):
        return exc
    note = f"gave up after {attempts} attempt{'s' if attempts != 1 else ''}"
    if exc.retry_after is not None and exc.retry_after > RETRY_AFTER_CEILING_S:
        note += f"; the server asked to wait {exc.retry_after:.0f} s"
    try:
        return type(exc)(
            f"{exc.message} ({note})", status=exc.status, retry_after=exc.retry_after, kind=exc.kind
        )
    except TypeError:  # a subclass with its own constructor: keep it as it was
        return exc
