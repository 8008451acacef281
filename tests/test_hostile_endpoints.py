"""One hostile endpoint cannot stall or exhaust a session: a total deadline, a size limit, bounded JSON.

A raw loopback server (127.0.0.1 only) answers as a hostile endpoint would: a body dripped a byte at a
time, an answer larger than the limit (declared or not), a 100,000-deep body, a 400-digit token count.
"""

from __future__ import annotations

import asyncio
import json
from collections.abc import AsyncIterator, Awaitable, Callable

import pytest
import pytest_asyncio

from bench_plugin.core.errors import ProviderError
from bench_plugin.providers.http import HttpPool, post_json

Writer = Callable[[asyncio.StreamWriter], Awaitable[None]]


def head(length: int | None = None) -> bytes:
    size = f"Content-Length: {length}\r\n" if length is not None else "Connection: close\r\n"
    return f"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\n{size}\r\n".encode()


async def drip(writer: asyncio.StreamWriter) -> None:
    body = b'{"choices": []}'.ljust(217)
    writer.write(head(len(body)))
    for byte in body:
        writer.write(bytes([byte]))
        await writer.drain()
        await asyncio.sleep(0.3)


async def endless(writer: asyncio.StreamWriter) -> None:
    writer.write(head())  # no length: the body ends when the connection does
    piece = b" " * 65536
    for _ in range(4096):  # 256 MB if nobody stops reading
        writer.write(piece)
        await writer.drain()


async def declared_huge(writer: asyncio.StreamWriter) -> None:
    writer.write(head(300 * 1024 * 1024))
    await writer.drain()
    await asyncio.sleep(5)


def answering(body: bytes) -> Writer:
    async def write(writer: asyncio.StreamWriter) -> None:
        writer.write(head(len(body)) + body)
        await writer.drain()
    return write


@pytest_asyncio.fixture
async def serve() -> AsyncIterator[Callable[[Writer], Awaitable[str]]]:
    servers: list[asyncio.Server] = []

    async def start(answer: Writer) -> str:
        async def handle(reader: asyncio.StreamReader, writer: asyncio.StreamWriter) -> None:
            await reader.readuntil(b"\r\n\r\n")
            try:
                await answer(writer)
            except (ConnectionError, asyncio.CancelledError):
                pass
            finally:
                writer.close()

        server = await asyncio.start_server(handle, "127.0.0.1", 0)
        servers.append(server)
        return f"http://127.0.0.1:{server.sockets[0].getsockname()[1]}/v1/chat/completions"

    yield start
    for server in servers:
        server.close()


async def call(url: str, *, timeout_s: float = 5, max_bytes: int = 1024 * 1024) -> dict:
    pool = HttpPool()
    try:  # the outer bound only keeps a failing test from hanging: the call must end well before it
        body, _ = await asyncio.wait_for(post_json(pool, url, json_body={"model": "m"}, headers={},
                                                   timeout_s=timeout_s, key=url, max_bytes=max_bytes), 30)
        return body
    finally:
        await pool.aclose()


@pytest.mark.asyncio
async def test_a_body_dripped_a_byte_at_a_time_fails_as_a_timeout(serve) -> None:
    with pytest.raises(ProviderError) as caught:
        await call(await serve(drip), timeout_s=1)
    assert caught.value.kind == "timeout" and "timed out after 1 s" in caught.value.message


@pytest.mark.asyncio
@pytest.mark.parametrize("answer", [endless, declared_huge], ids=["streamed", "declared"])
async def test_an_answer_past_the_limit_is_refused_naming_it(serve, answer: Writer) -> None:
    with pytest.raises(ProviderError) as caught:
        await call(await serve(answer), max_bytes=1024 * 1024)
    assert caught.value.kind == "too_large"
    assert "longer than 1,048,576 bytes (the provider's max_response_bytes)" in caught.value.message


@pytest.mark.asyncio
@pytest.mark.parametrize(("body", "said"), [
    (b"[" * 100_000 + b"]" * 100_000, "nested deeper than 64"),
    (json.dumps({"choices": [], "usage": {"completion_tokens": 1}}).replace("1}", "1" + "0" * 400 + "}").encode(),
     "usage.completion_tokens: a whole number of 401 digits"),
])
async def test_a_body_out_of_bounds_is_malformed(serve, body: bytes, said: str) -> None:
    with pytest.raises(ProviderError) as caught:
        await call(await serve(answering(body)))
    assert caught.value.kind == "malformed" and said in caught.value.message


@pytest.mark.asyncio
async def test_an_answer_within_the_limit_is_read_whole(serve) -> None:
    body = {"choices": [{"message": {"content": "x" * 500_000}}]}
    assert await call(await serve(answering(json.dumps(body).encode())), max_bytes=1024 * 1024) == body
