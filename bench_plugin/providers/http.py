"""HTTP mechanics shared by every HTTP provider: pooled clients, one POST, retries, key redaction in errors and logs."""

from __future__ import annotations

import asyncio
import functools
import json
import logging
import os
import re
import ssl
import threading
import time
from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Mapping
from contextlib import asynccontextmanager, contextmanager
from dataclasses import dataclass
from typing import Any, cast

import httpx

from bench_plugin.core.endpoints import ProviderSpec
from bench_plugin.core.errors import AuthError, ProviderError, TransientProviderError
from bench_plugin.core.json_bounds import BoundsError, loads_bounded
from bench_plugin.core.text_safety import log_line
from bench_plugin.providers.connection import AsyncioTransport
from bench_plugin.providers.retry_headers import retry_wait_of

logger = logging.getLogger("bench_plugin.http")  # the name users filter on, kept when the module moved

REDACTED = "[REDACTED]"
MAX_RESPONSE_BYTES = ProviderSpec.max_response_bytes  # 16 MB unless a provider says otherwise
_EXCERPT_CHARS = 300
_MIN_ECHO_CHARS = 8
# 408 and 409 are retried by the official OpenAI and Anthropic SDKs too.
_TRANSIENT_4XX = frozenset({408, 409, 429})
SECRET_HEADERS = ("authorization", "proxy-authorization", "x-api-key", "api-key", "x-goog-api-key")
# every logger whose records can carry a request's or a response's headers, or an exception quoting them
# (httpcore's trace logs response headers whole and h11's "Illegal header value b'Bearer ...'")
REDACTED_LOGGERS = (
    "httpx", "httpcore", "httpcore.connection", "httpcore.http11", "httpcore.http2", "httpcore.proxy",
    "httpcore.socks", "hpack", "hpack.hpack", "hpack.table", "h2", "h11", "asyncio", "bench_plugin",
    "bench_plugin.http",
)
_HEADER_NAMES = "|".join(re.escape(name) for name in SECRET_HEADERS)
# (b'Authorization', b'Bearer ...') as httpcore logs headers, or 'x-api-key': '...' as a dict shows them
_QUOTED_HEADER = re.compile(rf"""(?i)(['"](?:{_HEADER_NAMES})['"]\s*[,:]\s*b?)(['"])((?:\\.|(?!\2).)*)\2""")
# Authorization: Bearer ... as a line of text shows it, up to a quote, a comma or a space after the token
_HEADER_LINE = re.compile(rf"""(?i)\b((?:{_HEADER_NAMES})\s*[:=]\s*)((?:(?:bearer|basic|token)\s+)?[^\s'",;]+)""")


def allow_open_files(connections: int) -> str | None:
    """Let this process hold ``connections`` sockets besides its files, raising its soft limit toward the hard one.

    macOS starts a process at 256 open files, some Linux setups at 1024: at ``--bench-concurrency 400`` the
    sockets took them all, and results.jsonl could not be opened. Room is made for two endpoints' connections
    (a model's and a judge's, each kept open between calls) and the files of the run. Returns why the run
    cannot go on, when even the hard limit leaves too little; None otherwise (and where there is no such limit).
    """
    try:
        import resource  # start-up: Unix only
    except ImportError:
        return None
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    wanted = 2 * connections + 256
    if soft == resource.RLIM_INFINITY or soft >= wanted:
        return None
    target = wanted if hard == resource.RLIM_INFINITY else min(wanted, hard)
    if target > soft:
        try:
            resource.setrlimit(resource.RLIMIT_NOFILE, (target, hard))
            soft = target
        except (ValueError, OSError):  # a system cap below the hard limit (macOS: kern.maxfilesperproc)
            pass
    if soft < connections + 64:
        return (f"--bench-concurrency {connections} needs about {connections + 64} open files (a socket per call in "
                f"flight), and this process may open {soft} (ulimit -n): raise that limit or lower the concurrency")
    return None


class HttpPool:
    """Connections that live in the runner's event loop and are reused across cases.

    Each connection key (a base URL) gets a LIFO stack of one-connection transports (``connection.py``),
    created lazily up to ``size``. All of them share one ``ssl.SSLContext``, which is most of what a
    connection costs to build. This layout measured fastest (see ``design/pytest-concurrency.md``).
    ``post_json`` sends through the transport itself: the client layer (cookies, auth and redirect
    machinery we do not use) was a third of httpx's CPU per call. Extension providers borrow an
    ``httpx.AsyncClient`` over the same transports with ``client``.
    """

    def __init__(self, size: int = 16) -> None:
        log_redaction()
        self.size = max(1, size)
        self._ssl_context: ssl.SSLContext | None = None  # made on the first https connection (_context_for)
        self._idle: dict[str, list[_Slot]] = {}
        self._slots: dict[str, asyncio.Semaphore] = {}
        self._made: list[_Slot] = []
        self._closed = False

    @asynccontextmanager
    async def client(self, key: str) -> AsyncIterator[httpx.AsyncClient]:
        """Lend a client for ``key``, waiting while ``size`` of them are busy."""
        async with self.lend(key) as slot:
            yield slot.client

    @asynccontextmanager
    async def lend(self, key: str) -> AsyncIterator[_Slot]:
        """One connection of ``key``, ours until the block ends (``post_json``, ``streaming.py``)."""
        if self._closed:
            raise RuntimeError("HttpPool is closed")
        async with self._slots.setdefault(key, asyncio.Semaphore(self.size)):
            idle = self._idle.setdefault(key, [])
            slot = idle.pop() if idle else self._new_slot(key)
            try:
                yield slot
            finally:
                if not self._closed:  # aclose() already closed every connection, lent or not
                    idle.append(slot)

    async def aclose(self) -> None:
        """Close every connection; call it in the loop that used them."""
        self._closed = True
        made, self._made = self._made, []
        self._idle.clear()
        for slot in made:
            await slot.client.aclose()  # closes its transport too

    def _new_slot(self, key: str) -> _Slot:
        transport = AsyncioTransport(self._context_for(key))
        # trust_env=False: no proxies or .netrc from the environment
        client = httpx.AsyncClient(transport=transport, trust_env=False, follow_redirects=False)
        slot = _Slot(transport, client)
        self._made.append(slot)
        return slot

    def _context_for(self, key: str) -> ssl.SSLContext:
        """The shared verifying context; a plain-http key (its base URL) gets an empty one it never uses.

        Loading the CA bundle takes ~35 ms, which a run against a local server need not pay at start-up.
        """
        if key.startswith("http://"):
            return _PLAIN_HTTP_CONTEXT
        if self._ssl_context is None:
            # trust_env=True here only reads SSL_CERT_FILE / SSL_CERT_DIR; proxies stay off (see _new_slot).
            self._ssl_context = httpx.create_ssl_context()
        return self._ssl_context


_PLAIN_HTTP_CONTEXT = ssl.SSLContext(ssl.PROTOCOL_TLS_CLIENT)  # http:// keys need a context, never certificates


class _Slot:
    """One pooled connection: the transport ``post_json`` sends through, and a client over it for extensions."""

    __slots__ = ("client", "default_headers", "transport")

    def __init__(self, transport: AsyncioTransport, client: httpx.AsyncClient) -> None:
        self.transport = transport
        self.client = client
        # what httpx's client would add (Accept, Accept-Encoding, Connection, User-Agent) and our JSON body's type
        self.default_headers = {name.lower(): value for name, value in client.headers.items()}
        self.default_headers["content-type"] = "application/json"


async def post_json(
    pool: HttpPool,
    url: str,
    *,
    json_body: Mapping[str, Any],
    headers: Mapping[str, str],
    timeout_s: float,
    key: str,
    secrets: Iterable[str] = (),
    body_error: Callable[[dict[str, Any]], BodyError | None] | None = None,
    max_bytes: int = MAX_RESPONSE_BYTES,
) -> tuple[dict[str, Any], float]:
    """POST ``json_body`` and return the JSON object answered, with the latency in seconds.

    ``timeout_s`` bounds each phase (connect, write, every read), as httpx timeouts do, and the whole attempt:
    a body dripped a byte at a time fails as ``timeout`` too. An answer longer than ``max_bytes`` is refused as
    it arrives (``kind="too_large"``, not retried); one nested too deep or with a number out of range
    (``core/json_bounds.py``) is malformed. The latency excludes time spent waiting for a free client.
    ``body_error`` finds an error object inside a 2xx body (``BodyError``): it is raised as the error of the
    status it names, waiting what the response's headers ask. An answer that quotes the call's key (a server
    echoing its headers) has it replaced with ``[REDACTED]``.

    Raises:
        TransientProviderError: timeout, connection failure, 408/409/429, 5xx, or a 2xx body that is
            not a JSON object (``kind="malformed"``).
        AuthError: 401 or 403.
        ProviderError: any other non-2xx answer, or a URL httpx cannot use.
    """
    secrets = tuple(secrets)
    log_redaction().add_secrets(secrets)  # before httpx can log a header or an error quoting the key
    async with pool.lend(key) as slot:
        started = time.perf_counter()
        with attempt_errors("POST", url, timeout_s, max_bytes, secrets):
            async with asyncio.timeout(timeout_s):  # the attempt in all, not only each read
                response = await _send(slot, url, json_body, headers, timeout_s, max_bytes)
        latency = time.perf_counter() - started
    raise_for_status(response, secrets)
    data = _parse_json_object(response, secrets)
    found = body_error(data) if body_error is not None else None
    if found is not None:
        raise found.error(response.headers, secrets)
    return data, latency


Transient = Callable[[str, str], ProviderError]
"""Makes the error of a timeout or a broken connection from its message and kind (a stream's differs after its
first byte: ``streaming.py``)."""


@contextmanager
def attempt_errors(method: str, url: str, timeout_s: float, max_bytes: int, secrets: tuple[str, ...],
                   transient: Transient | None = None, answer: str = "an answer") -> Iterator[None]:
    """What httpx raises during one attempt, as our errors: one wording for every kind of request, keys redacted."""
    where = f"{method} {url}"
    retried = transient or (lambda message, kind: TransientProviderError(redacted(message, secrets), kind=kind))
    try:
        yield
    except (httpx.TimeoutException, TimeoutError) as exc:
        raise retried(f"timed out after {timeout_s:g} s: {where}", "timeout") from exc
    except TooLarge as exc:
        message = f"{answer} longer than {max_bytes:,} bytes (the provider's max_response_bytes): {where}"
        raise ProviderError(redacted(message, secrets), kind="too_large") from exc
    except (httpx.UnsupportedProtocol, httpx.InvalidURL) as exc:
        raise ProviderError(redacted(f"unusable URL {url}: {exc}", secrets), kind="connection") from exc
    except httpx.TransportError as exc:
        raise retried(f"connection failed: {where}: {type(exc).__name__}: {exc}", "connection") from exc


@dataclass(frozen=True)
class BodyError:
    """An error object a server sent inside a 2xx body (OpenRouter, LiteLLM, Anthropic's ``type: error``).

    ``status``: the HTTP status it names (None: an upstream failure worth retrying); ``message``: its text, as sent.
    """

    status: int | None
    message: str

    def error(self, headers: Mapping[str, str], secrets: tuple[str, ...]) -> ProviderError:
        """The error to raise: the message on one line, escaped and without keys; the wait the headers ask."""
        text = _excerpt(f"error in a 200 response: {self.message}")
        message = redacted(text, secrets)
        if self.status is None:
            return TransientProviderError(message, kind="error_payload", retry_after=retry_wait_of(headers, 503))
        return error_for_status(self.status, message, retry_wait_of(headers, self.status))


class TooLarge(Exception):
    """The answer grew past the provider's ``max_response_bytes``: the rest is not read."""


async def _send(
    slot: _Slot, url: str, json_body: Mapping[str, Any], headers: Mapping[str, str], timeout_s: float,
    max_bytes: int,
) -> httpx.Response:
    """POST through the slot's transport, as ``client.post(url, json=..., timeout=...)`` would, body read whole.

    Raises:
        TooLarge: the body (as decoded: a compressed one counts its expanded size) is longer than ``max_bytes``.
    """
    # the body as httpx encodes ``json=``: compact, UTF-8, no NaN
    body = json.dumps(json_body, ensure_ascii=False, separators=(",", ":"), allow_nan=False).encode("utf-8")
    merged = dict(slot.default_headers)
    for name, value in headers.items():
        merged[name.lower()] = value
    request = httpx.Request("POST", parsed_url(url), content=body, headers=merged,
                            extensions={"timeout": request_timeouts(timeout_s)})
    response = await slot.transport.handle_async_request(request)
    response.request = request
    try:
        response._content = await body_within(response, max_bytes)  # what aread() sets, read in bounded pieces
    finally:
        await response.aclose()
    return response


async def body_within(response: httpx.Response, max_bytes: int) -> bytes:
    """The body, read piece by piece and given up as soon as it passes ``max_bytes`` (memory stays near it)."""
    declared = response.headers.get("content-length", "")
    if declared.isdigit() and int(declared) > max_bytes:
        raise TooLarge
    pieces: list[bytes] = []
    size = 0
    async for piece in response.aiter_bytes():
        size += len(piece)
        if size > max_bytes:
            raise TooLarge
        pieces.append(piece)
    return b"".join(pieces)


@functools.lru_cache(maxsize=256)
def parsed_url(url: str) -> httpx.URL:
    """A run calls a handful of URLs thousands of times: parse each once (httpx.URL is immutable)."""
    return httpx.URL(url)


@functools.lru_cache(maxsize=64)
def request_timeouts(timeout_s: float) -> dict[str, float | None]:
    """The per-phase timeouts httpx's client would put on a request with ``timeout=timeout_s``."""
    return httpx.Timeout(timeout_s).as_dict()


def error_for_status(status: int, message: str, retry_after: float | None = None) -> ProviderError:
    """The error for an HTTP status, or a status named inside a response body.

    Transient for 408/409/429/5xx, ``AuthError`` for 401/403, a plain ``ProviderError`` (not retried) otherwise.
    """
    if status in _TRANSIENT_4XX or status >= 500:
        return TransientProviderError(message, status=status, retry_after=retry_after)
    if status in (401, 403):
        return AuthError(message, status=status)
    return ProviderError(message, status=status)


def raise_for_status(response: httpx.Response, secrets: tuple[str, ...]) -> None:
    """Raise the error of a non-2xx answer (``error_for_status``), its text without keys; a 2xx passes."""
    status = response.status_code
    if 200 <= status < 300:
        return
    message = f"HTTP {status} from {response.request.url}: {_error_excerpt(response.text)}"
    if 300 <= status < 400:  # redirects are not followed: a moved endpoint is a configuration problem
        message += f" (redirected to {log_line(response.headers.get('location', '?'))}; use that as base_url)"
    raise error_for_status(status, redacted(message, secrets), retry_wait_of(response.headers, status))


def _parse_json_object(response: httpx.Response, secrets: tuple[str, ...]) -> dict[str, Any]:
    try:
        if any(_echoes(response.content, secret) for secret in secrets):
            body = loads_bounded(redact(response.text, secrets))  # the key quoted back never reaches a record
        else:
            body = loads_bounded(response.content)
    except (json.JSONDecodeError, UnicodeDecodeError) as exc:
        raise malformed(redacted(f"body is not JSON: {_error_excerpt(response.text)}", secrets)) from exc
    except BoundsError as exc:  # 100,000 levels deep, a 400-digit token count
        raise malformed(redacted(f"body is JSON we do not read: {exc}", secrets)) from exc
    if not isinstance(body, dict):
        raise malformed(f"expected a JSON object, got {type(body).__name__}")
    return body


def _echoes(content: bytes, secret: str) -> bool:
    """Whether ``content`` may quote ``secret``: its first or last ``_MIN_ECHO_CHARS`` characters (as ``redact``)."""
    if len(secret) < _MIN_ECHO_CHARS:
        return secret.encode() in content
    return secret[:_MIN_ECHO_CHARS].encode() in content or secret[-_MIN_ECHO_CHARS:].encode() in content


def _error_excerpt(text: str) -> str:
    """The server's error message, or the start of the body; whitespace collapsed, at most ~300 characters.

    The message is read from the usual ``{"error": {"message"}}`` shape when the body has it. It is the
    server's text, and it reaches logs, the terminal and reports: control characters (an ANSI escape, a
    bidirectional override) are shown escaped (``log_line``), never passed on.
    """
    try:
        error = json.loads(text).get("error")
        if isinstance(error, dict) and isinstance(error.get("message"), str):
            text = error["message"]
    except (ValueError, AttributeError):
        pass
    return _excerpt(text)


def _excerpt(text: str) -> str:
    """``text`` on one line, its control characters escaped (``log_line``), at most ~300 characters."""
    text = log_line(" ".join(text.split())) or "(empty body)"
    return text if len(text) <= _EXCERPT_CHARS else text[:_EXCERPT_CHARS] + "..."


def redacted(text: str, secrets: tuple[str, ...]) -> str:
    """An error's text without the call's keys, nor any other key this process sent (a proxy may quote one)."""
    return log_redaction().redact(redact(text, secrets))


def redact(text: str, secrets: Iterable[str]) -> str:
    """Replace each secret, and any prefix or suffix of it of 8+ characters, with ``[REDACTED]``.

    Partial echoes matter: servers often quote the start or end of a rejected key.

    Example:
        >>> redact("bad key sk-abcdefghijkl (sk-abcdefgh...)", ["sk-abcdefghijkl"])
        'bad key [REDACTED] ([REDACTED]...)'
    """
    if isinstance(secrets, str):  # a lone key would otherwise be taken character by character
        secrets = (secrets,)
    pattern = _secrets_pattern(secrets)
    return text if pattern is None else pattern.sub(REDACTED, text)


def _secrets_pattern(secrets: Iterable[str]) -> re.Pattern[str] | None:
    fragments: set[str] = set()
    for secret in secrets:
        if not secret:
            continue
        fragments.add(secret)
        for length in range(_MIN_ECHO_CHARS, len(secret)):
            fragments.update((secret[:length], secret[-length:]))
    if not fragments:
        return None
    # longest first, so a whole key is replaced once rather than piecewise
    return re.compile("|".join(re.escape(f) for f in sorted(fragments, key=len, reverse=True)))


def redact_headers(text: str) -> str:
    """Replace the value of every credential header (``SECRET_HEADERS``) that ``text`` quotes.

    Catches keys nobody registered: a header echoed by a proxy, or one a suite added under ``headers:``.

    Example:
        >>> redact_headers("[(b'X-Api-Key', b'k-123'), (b'Server', b'x')] Authorization: Bearer abc")
        "[(b'X-Api-Key', b'[REDACTED]'), (b'Server', b'x')] Authorization: [REDACTED]"
    """
    text = _QUOTED_HEADER.sub(lambda found: f"{found.group(1)}{found.group(2)}{REDACTED}{found.group(2)}", text)
    return _HEADER_LINE.sub(lambda found: found.group(1) + REDACTED, text)


class SecretLogFilter(logging.Filter):
    """Redacts the keys in use and every credential header from the records of the loggers it sits on.

    A filter on a logger runs before any handler sees the record, pytest's capture (junit.xml, report.html,
    the terminal's live log, ``--log-file``) included. It rewrites the record's message (``msg % args``),
    its formatted exception and its stack; the keys come from ``post_json``, before each request is sent.
    Keys shorter than 8 characters are not registered: they are no real key and would blank common words.
    """

    redacts_bench_secrets = True  # how a re-imported copy of this module finds the filter already installed

    def __init__(self) -> None:
        super().__init__()
        self._lock = threading.Lock()
        self._secrets: frozenset[str] = frozenset()
        self._pattern: re.Pattern[str] | None = None

    def add_secrets(self, secrets: Iterable[str]) -> None:
        """Redact these keys from now on, in every spelling a log may give them (repr, bytes repr, JSON)."""
        spellings = {form for secret in secrets if len(secret) >= _MIN_ECHO_CHARS for form in _spellings(secret)}
        if spellings <= self._secrets:
            return
        with self._lock:
            self._secrets = self._secrets | spellings
            self._pattern = _secrets_pattern(self._secrets)

    def redact(self, text: str) -> str:
        """``text`` without any registered key or credential header value."""
        pattern = self._pattern
        return redact_headers(text if pattern is None else pattern.sub(REDACTED, text))

    def filter(self, record: logging.LogRecord) -> bool:
        """Rewrite the record without secrets; never drops one."""
        try:
            message = record.getMessage()
        except Exception:  # a record whose args do not fit its message: logging reports it, unredacted text aside
            message = str(record.msg)
        record.msg, record.args = self.redact(message), ()
        if record.exc_info and not record.exc_text:
            record.exc_text = logging.Formatter().formatException(record.exc_info)
        if record.exc_text:
            record.exc_text = self.redact(record.exc_text)
        if record.stack_info:
            record.stack_info = self.redact(record.stack_info)
        return True


def _spellings(secret: str) -> set[str]:
    """The forms a log shows a key in: as is, in a ``repr``, a bytes ``repr``, JSON, and each escaped again."""
    forms = {secret, repr(secret)[1:-1], repr(secret.encode("utf-8", "backslashreplace"))[2:-1],
             json.dumps(secret)[1:-1]}
    return forms | {form.replace("\\", "\\\\") for form in forms if "\\" in form}


def log_redaction() -> SecretLogFilter:
    """The process's one ``SecretLogFilter``, installed on every logger of ``REDACTED_LOGGERS`` on first use.

    A logger's filters see only the records logged on that very logger (not its children's), hence the
    list. pytester drops and re-imports modules between in-process runs: the filter already on the
    loggers is found and reused, so the keys a later run registers still reach it.
    """
    global _redaction
    # every request comes here: when the filter is still on every logger, that is all (looking the loggers up
    # by name each time was a third of our own CPU per call); a logger is never replaced, only its filters
    if _redaction is not None and all(_redaction[0] in logger.filters for logger in _redaction[1]):
        return _redaction[0]
    anchor = logging.getLogger(REDACTED_LOGGERS[0])
    installed = next((f for f in anchor.filters if getattr(f, "redacts_bench_secrets", False)), None)
    shared = cast(SecretLogFilter, installed) if installed is not None else SecretLogFilter()
    loggers = tuple(logging.getLogger(name) for name in REDACTED_LOGGERS)
    for logger in loggers:
        if not any(getattr(f, "redacts_bench_secrets", False) for f in logger.filters):
            logger.addFilter(shared)
    _redaction = (shared, loggers) if all(shared in logger.filters for logger in loggers) else None
    return shared


_redaction: tuple[SecretLogFilter, tuple[logging.Logger, ...]] | None = None  # the filter and its loggers


def api_key_from_env(spec: ProviderSpec) -> str | None:
    """Read the provider's key from the environment at call time; None when it uses no key.

    Raises:
        AuthError: ``api_key_env`` names a variable that is unset or empty, or holds what no HTTP header can
            carry (a character outside ASCII, a line break: a paste gone wrong).
    """
    name = spec.api_key_env
    if not name:
        return None
    value = os.environ.get(name, "").strip()
    if not value:
        raise AuthError(f"environment variable {name} is not set", kind="auth")
    if not value.isascii() or not value.isprintable():
        where = next(i for i, c in enumerate(value) if not c.isascii() or not c.isprintable())
        raise AuthError(f"environment variable {name} holds a character an HTTP header cannot carry (character "
                        f"{where + 1} of {len(value)}, not printable ASCII): check how the key was copied", kind="auth")
    return value


def merge_headers(*layers: Mapping[str, str]) -> dict[str, str]:
    """Merge header mappings, later layers winning regardless of the case of names; names come out lower-case."""
    merged: dict[str, str] = {}
    for layer in layers:
        for name, value in layer.items():
            merged[name.lower()] = value
    return merged


def malformed(what: str) -> TransientProviderError:
    """A retryable error for a response body that does not have the shape of the wire format."""
    return TransientProviderError(f"malformed response: {what}", kind="malformed")
