"""The transport under the runner's HTTP calls: HTTP/1.1 on asyncio's sockets, answers parsed by llhttp.

A run makes thousands of small JSON POSTs; at that rate the HTTP layer's own CPU is what limits a
process (its two threads share one GIL). httpx's default stack spends about 0.6 ms of CPU a call on
this 2-core machine: its pool, httpcore's connection state and h11's pure-Python parser. Here a call
writes its request in one piece and ``httptools`` (the C parser of Node's llhttp, as uvicorn uses it)
reads the answer as it arrives, so the HTTP work is a fraction of that.

It is an ``httpx.AsyncBaseTransport`` (httpx's extension point for transports): requests and responses
stay httpx's own (headers, content decoding, ``raise_for_status``), extension providers use it through
an ``httpx.AsyncClient``, and every failure is the httpx exception httpx's own transport raises for it.
Each transport keeps one connection (the pool's unit, see ``HttpPool``).
"""

from __future__ import annotations

import asyncio
import re
import ssl
from collections import deque
from collections.abc import AsyncIterator

import httptools
import httpx

_READ_BUFFER_LIMIT = 1 << 20  # stop reading the socket while this much of an answer is unread
_KEEP_ALIVE_S = 5.0  # as httpx's pool: an idle connection older than this is not reused (servers close them)
_HAPPY_EYEBALLS_S = 0.25  # as anyio connects: a host whose IPv6 route is dead still connects over IPv4
_TOKEN = re.compile(rb"[!#$%&'*+\-.^_`|~0-9A-Za-z]+")
_UNSAFE_VALUE = re.compile(rb"[\r\n\x00]")
_DEFAULT_PORTS = {b"http": 80, b"https": 443}


class AsyncioTransport(httpx.AsyncBaseTransport):
    """One keep-alive HTTP/1.1 connection at a time; certificates checked by ``ssl_context``."""

    def __init__(self, ssl_context: ssl.SSLContext) -> None:
        self._ssl_context = ssl_context
        self._idle: _Connection | None = None
        self._idle_origin: tuple[bytes, bytes, int] | None = None

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` and return the response with its body still to read."""
        url = request.url
        scheme = url.raw_scheme
        port = url.port or _DEFAULT_PORTS.get(scheme)
        if port is None:
            raise httpx.UnsupportedProtocol(f"Request URL has an unsupported protocol '{scheme.decode()}://'.")
        if not url.raw_host:
            raise httpx.UnsupportedProtocol("Request URL is missing a host.")
        origin = (scheme, url.raw_host, port)
        timeouts = request.extensions.get("timeout", {})
        head = _request_head(request)
        body = await _request_body(request)
        connection = self._reusable(origin)
        if connection is None:
            connection = await self._connect(origin, timeouts.get("connect"))
        try:
            await connection.send(head, body, request.method == "HEAD", timeouts.get("write"))
            status, reason, headers = await connection.read_head(timeouts.get("read"))
        except BaseException:
            connection.close()
            raise
        return httpx.Response(
            status_code=status,
            headers=headers,
            stream=_Body(self, connection, origin, timeouts.get("read")),
            extensions={"http_version": connection.http_version, "reason_phrase": reason},
        )

    async def aclose(self) -> None:
        """Close the idle connection (one lent to a response closes with it)."""
        if self._idle is not None:
            self._idle.close()
            self._idle = None

    def _reusable(self, origin: tuple[bytes, bytes, int]) -> _Connection | None:
        idle, self._idle = self._idle, None
        if idle is None:
            return None
        if origin == self._idle_origin and idle.reusable():
            return idle
        idle.close()
        return None

    def _keep(self, connection: _Connection, origin: tuple[bytes, bytes, int]) -> None:
        """Take back a connection whose answer was read whole; a second one (concurrent requests) is closed."""
        if self._idle is None and connection.reusable():
            self._idle, self._idle_origin = connection, origin
        else:
            connection.close()

    async def _connect(self, origin: tuple[bytes, bytes, int], timeout: float | None) -> _Connection:
        """Open a connection (TLS for https), or raise ``ConnectTimeout`` / ``ConnectError``."""
        scheme, raw_host, port = origin
        host = raw_host.decode("ascii")
        loop = asyncio.get_running_loop()
        tls = self._ssl_context if scheme == b"https" else None
        try:
            _, connection = await asyncio.wait_for(
                loop.create_connection(
                    lambda: _Connection(loop), host, port, ssl=tls, server_hostname=host if tls else None,
                    happy_eyeballs_delay=_HAPPY_EYEBALLS_S,
                ),
                timeout,
            )
        except asyncio.TimeoutError as exc:
            raise httpx.ConnectTimeout(f"connecting to {host}:{port} took over {timeout} s") from exc
        except (OSError, ssl.SSLError) as exc:
            raise httpx.ConnectError(str(exc) or type(exc).__name__) from exc
        return connection


def _request_head(request: httpx.Request) -> bytes:
    """The request line and headers, refusing what would let a value start a header or a request of its own."""
    lines = [b"%s %s HTTP/1.1" % (request.method.encode("ascii"), request.url.raw_path)]
    for name, value in request.headers.raw:
        if _TOKEN.fullmatch(name) is None:
            raise httpx.LocalProtocolError(f"Illegal header name {name!r}")
        if _UNSAFE_VALUE.search(value) is not None:
            raise httpx.LocalProtocolError(f"Illegal header value for {name.decode('ascii')!r}")
        lines.append(name + b": " + value)
    lines.append(b"\r\n")
    return b"\r\n".join(lines)


async def _request_body(request: httpx.Request) -> bytes:
    """The body as sent: whole, or chunk-framed when httpx framed a streamed body with ``Transfer-Encoding``."""
    body = await request.aread()
    if "content-length" in request.headers or not body:
        return body
    return b"%x\r\n%s\r\n0\r\n\r\n" % (len(body), body)


class _Body(httpx.AsyncByteStream):
    """A response's body as it arrives; the connection goes back to its transport once the body was read whole."""

    def __init__(
        self, owner: AsyncioTransport, connection: _Connection, origin: tuple[bytes, bytes, int], timeout: float | None
    ) -> None:
        self._owner = owner
        self._connection = connection
        self._origin = origin
        self._timeout = timeout

    async def __aiter__(self) -> AsyncIterator[bytes]:
        connection = self._connection
        while True:
            part = await connection.read_body(self._timeout)
            if not part:
                return
            yield part

    async def aclose(self) -> None:
        if self._connection.done:
            self._owner._keep(self._connection, self._origin)
        else:  # closed before its end: what is left of the answer would be read as the next one
            self._connection.close()


class _Connection(asyncio.Protocol):
    """One socket: writes a request, and parses the answer with llhttp as the bytes come in."""

    def __init__(self, loop: asyncio.AbstractEventLoop) -> None:
        self._loop = loop
        self._transport: asyncio.Transport | None = None
        self._parser = httptools.HttpResponseParser(self)
        self._waiter: asyncio.Future[None] | None = None
        self._drained: asyncio.Future[None] | None = None
        self._asking = False  # a request was sent and its answer is not complete
        self._head_only = False  # the request was HEAD: the answer has no body, whatever its headers say
        self._informational = False  # the answer being parsed is a 1xx, to be skipped
        self._status = 0
        self._reason = b""
        self._headers: list[tuple[bytes, bytes]] = []
        self._has_head = False
        self._ends_at_close = False
        self._chunks: deque[bytes] = deque()
        self._buffered = 0
        self._paused = False
        self._closed = False  # the server closed its side, or the connection was lost or closed
        self._broken = False  # the server sent something nobody asked for
        self._error: Exception | None = None
        self._idle_since = 0.0
        self.done = False  # the answer to the last request was read whole
        self.http_version = b"HTTP/1.1"

    # --- the caller's side ---

    async def send(self, head: bytes, body: bytes, head_only: bool, timeout: float | None) -> None:
        """Write a request (in one piece); wait only while asyncio's write buffer is full."""
        transport = self._transport
        if transport is None or self._closed or transport.is_closing():
            raise httpx.WriteError("the connection is closed")
        self._asking, self._head_only, self.done = True, head_only, False
        self._status, self._reason, self._headers, self._has_head = 0, b"", [], False
        self._ends_at_close = self._informational = False
        if len(body) < 65536:  # the usual JSON body: one segment with the head
            transport.write(head + body)
        else:  # a large one is not copied to be joined
            transport.write(head)
            transport.write(body)
        drained = self._drained
        if drained is not None:
            try:
                await asyncio.wait_for(asyncio.shield(drained), timeout)
            except asyncio.TimeoutError as exc:
                raise httpx.WriteTimeout(f"the server took no data for {timeout} s") from exc

    async def read_head(self, timeout: float | None) -> tuple[int, bytes, list[tuple[bytes, bytes]]]:
        """The answer's status, reason phrase and headers."""
        while not self._has_head:
            if self._error is not None:
                raise self._error
            if self._closed:
                raise httpx.RemoteProtocolError("Server disconnected without sending a response.")
            await self._wait(timeout)
        return self._status, self._reason, self._headers

    async def read_body(self, timeout: float | None) -> bytes:
        """The next part of the body; ``b""`` at its end."""
        while True:
            if self._chunks:
                return self._take()
            if self.done:
                return b""
            if self._error is not None:
                raise self._error
            if self._closed:
                if self._ends_at_close:  # no length and not chunked: the body ends with the connection
                    self._finish()
                    return b""
                raise httpx.RemoteProtocolError("peer closed connection without sending complete message body")
            await self._wait(timeout)

    def reusable(self) -> bool:
        """Idle, kept alive by both sides, not closed or fed unasked bytes, and not idle for too long."""
        return (
            self.done and not self._closed and not self._broken and self._transport is not None
            and not self._transport.is_closing() and self._loop.time() - self._idle_since < _KEEP_ALIVE_S
        )

    def close(self) -> None:
        """Close the socket without waiting for the server."""
        self._closed = True
        if self._transport is not None:
            self._transport.close()

    async def _wait(self, timeout: float | None) -> None:
        """Until the parser or the socket has news; ``ReadTimeout`` after ``timeout`` seconds of silence."""
        waiter = self._waiter = self._loop.create_future()
        timer = self._loop.call_later(timeout, _expire, waiter, timeout) if timeout is not None else None
        try:
            await waiter
        finally:
            self._waiter = None
            if timer is not None:
                timer.cancel()

    def _take(self) -> bytes:
        part = self._chunks.popleft()
        self._buffered -= len(part)
        if self._paused and self._buffered <= _READ_BUFFER_LIMIT // 2 and self._transport is not None:
            self._paused = False
            self._transport.resume_reading()
        return part

    def _wake(self) -> None:
        if self._waiter is not None and not self._waiter.done():
            self._waiter.set_result(None)

    def _finish(self) -> None:
        self._asking = False
        self.done = True
        self._idle_since = self._loop.time()

    def _fail(self, error: Exception) -> None:
        self._error = error
        self.close()
        self._wake()

    # --- asyncio's side ---

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        self._transport = transport  # type: ignore[assignment]  # create_connection makes a stream transport

    def data_received(self, data: bytes) -> None:
        if not self._asking:  # a kept-alive connection must stay silent between requests
            self._broken = True
            return
        try:
            self._parser.feed_data(data)
        except httptools.HttpParserError as exc:
            self._fail(httpx.RemoteProtocolError(f"malformed HTTP answer: {exc}"))
            return
        if self._buffered > _READ_BUFFER_LIMIT and not self._paused and self._transport is not None:
            self._paused = True
            self._transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self._closed = True
        self._wake()
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self._closed = True
        if exc is not None and self._error is None and self._asking:
            self._error = httpx.ReadError(str(exc) or type(exc).__name__)
        self._wake()
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    def pause_writing(self) -> None:
        self._drained = self._loop.create_future()

    def resume_writing(self) -> None:
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        self._drained = None

    # --- llhttp's callbacks (httptools) ---

    def on_message_begin(self) -> None:
        if not self._asking:
            self._broken = True
        self._headers = []
        self._reason = b""

    def on_status(self, reason: bytes) -> None:
        self._reason += reason

    def on_header(self, name: bytes, value: bytes) -> None:
        self._headers.append((name, value))

    def on_headers_complete(self) -> None:
        status = self._parser.get_status_code()
        if status == 101 or self._parser.should_upgrade():
            self._fail(httpx.RemoteProtocolError("the server switched protocols, which HTTP/1.1 calls do not ask"))
            return
        if 100 <= status < 200:  # "100 Continue" and the like: the real answer follows
            self._informational = True
            self._reason = b""
            return
        self._status = status
        self._has_head = True
        self.http_version = b"HTTP/%s" % self._parser.get_http_version().encode("ascii")
        names = {name.lower() for name, _ in self._headers}
        self._ends_at_close = (
            b"content-length" not in names and b"transfer-encoding" not in names and status not in (204, 304)
        )
        if self._head_only:
            self._broken = True  # llhttp would wait for the body HEAD's headers announce: not reusable
            self._finish()

    def on_body(self, body: bytes) -> None:
        if self._asking:
            self._chunks.append(body)
            self._buffered += len(body)

    def on_message_complete(self) -> None:
        if self._informational:
            self._informational = False
            return
        if self._asking:
            self._finish()
            if not self._parser.should_keep_alive():
                self._broken = True


def _expire(waiter: asyncio.Future[None], timeout: float) -> None:
    if not waiter.done():
        waiter.set_exception(httpx.ReadTimeout(f"no data for {timeout} s"))
