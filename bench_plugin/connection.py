"""The transport under the runner's HTTP calls: httpcore's HTTP/1.1 over asyncio's own sockets.

httpx's default transport reaches its sockets through anyio, which puts a cancel scope and a timer
around every read and write and polls the socket before each reuse. At thousands of calls a run that
layer was a third of httpx's CPU per call (this 2-core machine, loopback: 0.61 ms a call with anyio,
0.39 ms here). This module keeps httpcore (HTTP/1.1, TLS, keep-alive, pooling) and puts it straight on
asyncio's transports: a read waits on a future with one timer; a write hands the bytes to the transport
and waits only when asyncio asks it to (flow control); an idle connection is reusable unless the server
closed it or sent something unasked, which the protocol already knows.

It is an ``httpx.AsyncBaseTransport``: requests and responses stay httpx's own, and every failure
surfaces as the httpx exception httpx's own transport raises for it.
"""

from __future__ import annotations

import asyncio
import contextlib
import ssl
from collections.abc import AsyncIterator, Iterable, Iterator
from typing import Any

import httpcore
import httpx

_EXCEPTIONS: dict[type[Exception], type[httpx.HTTPError]] = {
    httpcore.TimeoutException: httpx.TimeoutException,
    httpcore.ConnectTimeout: httpx.ConnectTimeout,
    httpcore.ReadTimeout: httpx.ReadTimeout,
    httpcore.WriteTimeout: httpx.WriteTimeout,
    httpcore.PoolTimeout: httpx.PoolTimeout,
    httpcore.NetworkError: httpx.NetworkError,
    httpcore.ConnectError: httpx.ConnectError,
    httpcore.ReadError: httpx.ReadError,
    httpcore.WriteError: httpx.WriteError,
    httpcore.ProxyError: httpx.ProxyError,
    httpcore.UnsupportedProtocol: httpx.UnsupportedProtocol,
    httpcore.ProtocolError: httpx.ProtocolError,
    httpcore.LocalProtocolError: httpx.LocalProtocolError,
    httpcore.RemoteProtocolError: httpx.RemoteProtocolError,
}
_EXTRA_INFO = {"ssl_object": "ssl_object", "client_addr": "sockname", "server_addr": "peername", "socket": "socket"}
"""httpcore's names for a stream's facts -> asyncio's names for them on a transport."""
_READ_BUFFER_LIMIT = 1 << 20  # stop reading the socket while this much is unread (a huge answer)


@contextlib.contextmanager
def _as_httpx_errors() -> Iterator[None]:
    """Raise httpcore's errors as the most specific httpx error, as httpx's own transport does."""
    try:
        yield
    except Exception as exc:
        for kind in type(exc).__mro__:
            mapped = _EXCEPTIONS.get(kind)
            if mapped is not None:
                raise mapped(str(exc)) from exc
        raise


class AsyncioTransport(httpx.AsyncBaseTransport):
    """One keep-alive connection to a server (the pool's unit), HTTP/1.1, certificates checked by ``ssl_context``."""

    def __init__(self, ssl_context: ssl.SSLContext) -> None:
        self._pool = httpcore.AsyncConnectionPool(
            ssl_context=ssl_context,
            max_connections=1,
            max_keepalive_connections=1,
            network_backend=AsyncioBackend(),
        )

    async def handle_async_request(self, request: httpx.Request) -> httpx.Response:
        """Send ``request`` and return the response with its body still to read."""
        assert isinstance(request.stream, httpx.AsyncByteStream)
        url = request.url
        core_request = httpcore.Request(
            method=request.method,
            url=httpcore.URL(scheme=url.raw_scheme, host=url.raw_host, port=url.port, target=url.raw_path),
            headers=request.headers.raw,
            content=request.stream,
            extensions=request.extensions,
        )
        with _as_httpx_errors():
            response = await self._pool.handle_async_request(core_request)
        assert not isinstance(response.stream, Iterable)
        return httpx.Response(
            status_code=response.status,
            headers=response.headers,
            stream=_ResponseStream(response.stream),
            extensions=response.extensions,
        )

    async def aclose(self) -> None:
        """Close the connection."""
        await self._pool.aclose()


class _ResponseStream(httpx.AsyncByteStream):
    def __init__(self, stream: Any) -> None:
        self._stream = stream

    async def __aiter__(self) -> AsyncIterator[bytes]:
        with _as_httpx_errors():
            async for part in self._stream:
                yield part

    async def aclose(self) -> None:
        with _as_httpx_errors():
            await self._stream.aclose()


class AsyncioBackend(httpcore.AsyncNetworkBackend):
    """Opens TCP connections with ``loop.create_connection`` (which also sets ``TCP_NODELAY``)."""

    async def connect_tcp(
        self,
        host: str,
        port: int,
        timeout: float | None = None,
        local_address: str | None = None,
        socket_options: Iterable[Any] | None = None,
    ) -> httpcore.AsyncNetworkStream:
        """Connect, or raise ``ConnectTimeout`` / ``ConnectError``."""
        loop = asyncio.get_running_loop()
        local = (local_address, 0) if local_address else None
        try:
            # happy eyeballs, as anyio connects: a host whose IPv6 route is dead still connects over IPv4
            transport, protocol = await asyncio.wait_for(
                loop.create_connection(_Protocol, host, port, local_addr=local, happy_eyeballs_delay=0.25), timeout
            )
        except asyncio.TimeoutError as exc:
            raise httpcore.ConnectTimeout(f"connecting to {host}:{port} took over {timeout} s") from exc
        except OSError as exc:
            raise httpcore.ConnectError(str(exc)) from exc
        sock = transport.get_extra_info("socket")
        for option in socket_options or ():
            sock.setsockopt(*option)
        return AsyncioStream(transport, protocol)

    async def sleep(self, seconds: float) -> None:
        """Wait without blocking the loop."""
        await asyncio.sleep(seconds)


class _Protocol(asyncio.Protocol):
    """Keeps what the server sent until the connection's reader asks for it."""

    def __init__(self) -> None:
        self.buffer = bytearray()
        self.closed = False  # the server closed its side, or the connection was lost
        self.error: Exception | None = None
        self.transport: asyncio.Transport | None = None
        self._reader: asyncio.Future[None] | None = None
        self._drained: asyncio.Future[None] | None = None
        self._paused = False

    def connection_made(self, transport: asyncio.BaseTransport) -> None:
        assert isinstance(transport, asyncio.Transport)
        self.transport = transport

    def data_received(self, data: bytes) -> None:
        self.buffer += data
        if len(self.buffer) > _READ_BUFFER_LIMIT and self.transport is not None and not self._paused:
            self._paused = True
            self.transport.pause_reading()
        self._wake()

    def eof_received(self) -> bool:
        self.closed = True
        self._wake()
        return False  # close our side too

    def connection_lost(self, exc: Exception | None) -> None:
        self.closed = True
        self.error = exc
        self._wake()
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)

    def pause_writing(self) -> None:
        self._drained = asyncio.get_running_loop().create_future()

    def resume_writing(self) -> None:
        if self._drained is not None and not self._drained.done():
            self._drained.set_result(None)
        self._drained = None

    def take(self, max_bytes: int) -> bytes:
        data = bytes(self.buffer[:max_bytes])
        del self.buffer[:max_bytes]
        if self._paused and len(self.buffer) <= _READ_BUFFER_LIMIT // 2 and self.transport is not None:
            self._paused = False
            self.transport.resume_reading()
        return data

    async def wait_readable(self, timeout: float | None) -> None:
        """Until data or the end of the connection arrives; ``ReadTimeout`` after ``timeout`` seconds."""
        loop = asyncio.get_running_loop()
        reader = self._reader = loop.create_future()
        timer = loop.call_later(timeout, _expire, reader, timeout) if timeout is not None else None
        try:
            await reader
        finally:
            self._reader = None
            if timer is not None:
                timer.cancel()

    async def wait_drained(self, timeout: float | None) -> None:
        drained = self._drained
        if drained is None:
            return
        try:
            await asyncio.wait_for(asyncio.shield(drained), timeout)
        except asyncio.TimeoutError as exc:
            raise httpcore.WriteTimeout(f"the server took no data for {timeout} s") from exc

    def _wake(self) -> None:
        if self._reader is not None and not self._reader.done():
            self._reader.set_result(None)


def _expire(reader: asyncio.Future[None], timeout: float) -> None:
    if not reader.done():
        reader.set_exception(httpcore.ReadTimeout(f"no data for {timeout} s"))


class AsyncioStream(httpcore.AsyncNetworkStream):
    """One connection's byte stream, as httpcore's HTTP/1.1 connection uses it."""

    def __init__(self, transport: asyncio.Transport, protocol: _Protocol) -> None:
        self._transport = transport
        self._protocol = protocol

    async def read(self, max_bytes: int, timeout: float | None = None) -> bytes:
        """Up to ``max_bytes`` of what the server sent; ``b""`` once it closed the connection."""
        protocol = self._protocol
        if not protocol.buffer and not protocol.closed:
            await protocol.wait_readable(timeout)
        if protocol.buffer:
            return protocol.take(max_bytes)
        if protocol.error is not None:
            raise httpcore.ReadError(str(protocol.error) or type(protocol.error).__name__)
        return b""

    async def write(self, buffer: bytes, timeout: float | None = None) -> None:
        """Hand ``buffer`` to the transport; wait only while asyncio's write buffer is full."""
        if not buffer:
            return
        if self._transport.is_closing() or self._protocol.closed:
            raise httpcore.WriteError("the connection is closed")
        self._transport.write(buffer)
        await self._protocol.wait_drained(timeout)

    async def aclose(self) -> None:
        """Close the connection (without waiting for the server)."""
        self._transport.close()

    async def start_tls(
        self, ssl_context: ssl.SSLContext, server_hostname: str | None = None, timeout: float | None = None
    ) -> httpcore.AsyncNetworkStream:
        """Upgrade to TLS; ``ConnectTimeout`` / ``ConnectError`` when the handshake does not complete."""
        loop = asyncio.get_running_loop()
        try:
            upgraded = await asyncio.wait_for(
                loop.start_tls(self._transport, self._protocol, ssl_context, server_hostname=server_hostname),
                timeout,
            )
        except asyncio.TimeoutError as exc:
            self._transport.close()
            raise httpcore.ConnectTimeout(f"the TLS handshake took over {timeout} s") from exc
        except (OSError, ssl.SSLError, ConnectionError) as exc:
            self._transport.close()
            raise httpcore.ConnectError(str(exc)) from exc
        assert upgraded is not None
        self._protocol.transport = upgraded
        return AsyncioStream(upgraded, self._protocol)

    def get_extra_info(self, info: str) -> Any:
        """What httpcore asks of a stream: the TLS object, addresses, the socket, and whether it is readable."""
        if info == "is_readable":  # asked of an idle connection: readable means closed, or data nobody asked for
            return self._protocol.closed or bool(self._protocol.buffer)
        name = _EXTRA_INFO.get(info)
        return self._transport.get_extra_info(name) if name is not None else None
