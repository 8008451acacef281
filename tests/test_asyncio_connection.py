"""The runner's own transport (``connection.py``) at its edges.

Big bodies both ways, a server that hangs up mid-answer, one that never answers, one that is not there (each
failure as the error httpx would raise), and the protocol's flow control, driven by hand.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator

import httpx
import pytest

from bench_plugin.core.errors import TransientProviderError
from bench_plugin.mock.server import MockServer
from bench_plugin.providers import connection
from bench_plugin.providers.http import HttpPool, post_json


def _ask(url: str, content: str = "hi", timeout_s: float = 10) -> dict[str, object]:
    async def run() -> dict[str, object]:
        pool = HttpPool(size=1)
        try:
            body, _ = await post_json(pool, url, json_body={"model": "m", "messages": [
                {"role": "user", "content": content}]}, headers={}, timeout_s=timeout_s, key=url)
            return body
        finally:
            await pool.aclose()

    return asyncio.run(run())


def test_bodies_of_megabytes_go_and_come_back_whole() -> None:
    """A 3 MB prompt and a 2 MB answer, each whole (on loopback the kernel takes them without flow control)."""
    answer = "y" * 2_000_000
    with MockServer(rules=[{"model": "m", "reply": answer}]) as server:
        body = _ask(f"{server.openai_base_url}/chat/completions", content="x" * 3_000_000)
        assert body["choices"][0]["message"]["content"] == answer  # type: ignore[index]
        assert len(server.requests[0]["body"]["messages"][0]["content"]) == 3_000_000


@pytest.fixture
def raw_server() -> Iterator[tuple[str, list[bytes]]]:
    """A loopback server that reads one request and sends what the test put in ``replies`` (then hangs up)."""
    replies: list[bytes] = []
    listener = socket.create_server(("127.0.0.1", 0))
    stop = threading.Event()

    def serve() -> None:
        listener.settimeout(0.2)
        while not stop.is_set():
            try:
                conn, _ = listener.accept()
            except OSError:
                continue
            with conn:
                conn.settimeout(5)
                conn.recv(65536)
                reply = replies.pop(0) if replies else b""
                if reply == b"<silence>":
                    stop.wait(3)
                    continue
                conn.sendall(reply)

    thread = threading.Thread(target=serve, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{listener.getsockname()[1]}/v1/chat/completions", replies
    finally:
        stop.set()
        thread.join(timeout=5)
        listener.close()


def test_a_server_that_hangs_up_mid_answer_is_a_connection_failure(raw_server: tuple[str, list[bytes]]) -> None:
    url, replies = raw_server
    replies.append(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000\r\n\r\n{\"id\": ")
    with pytest.raises(TransientProviderError) as failure:
        _ask(url)
    assert failure.value.kind == "connection"
    assert "RemoteProtocolError" in str(failure.value) or "ReadError" in str(failure.value)


def test_a_server_that_never_answers_times_out(raw_server: tuple[str, list[bytes]]) -> None:
    url, replies = raw_server
    replies.append(b"<silence>")
    with pytest.raises(TransientProviderError) as failure:
        _ask(url, timeout_s=0.3)
    assert failure.value.kind == "timeout"


def test_nobody_listening_is_a_connect_error() -> None:
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]
    with pytest.raises(TransientProviderError) as failure:
        _ask(f"http://127.0.0.1:{port}/v1/chat/completions")
    assert failure.value.kind == "connection"
    assert "ConnectError" in str(failure.value)


def test_failures_surface_as_the_httpx_exceptions_of_httpx_own_transport() -> None:
    """What an extension provider sees through ``HttpPool.client``: httpx's own exception types."""
    with socket.create_server(("127.0.0.1", 0)) as taken:
        port = taken.getsockname()[1]

    async def run() -> None:
        pool = HttpPool(size=1)
        try:
            async with pool.client("k") as client:
                with pytest.raises(httpx.ConnectError):
                    await client.get(f"http://127.0.0.1:{port}/")
        finally:
            await pool.aclose()

    asyncio.run(run())


def _client_call(url: str, **kwargs: object) -> httpx.Response:
    """One request through ``HttpPool.client``, as an extension provider makes it; the body read whole."""

    async def run() -> httpx.Response:
        pool = HttpPool(size=1)
        try:
            async with pool.client("k") as client:
                response = await client.post(url, content=b"{}", **kwargs)  # type: ignore[arg-type]
                await response.aread()
                return response
        finally:
            await pool.aclose()

    return asyncio.run(run())


def test_a_chunked_answer_is_put_back_together(raw_server: tuple[str, list[bytes]]) -> None:
    url, replies = raw_server
    replies.append(b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n"
                   b"7\r\n{\"id\": \r\n4\r\n\"x\"}\r\n0\r\n\r\n")
    assert _ask(url) == {"id": "x"}


def test_an_answer_without_length_ends_with_the_connection(raw_server: tuple[str, list[bytes]]) -> None:
    url, replies = raw_server
    replies.append(b"HTTP/1.0 200 OK\r\nContent-Type: application/json\r\n\r\n{\"id\": \"until-close\"}")
    assert _ask(url) == {"id": "until-close"}


def test_an_informational_answer_before_the_real_one_is_skipped(raw_server: tuple[str, list[bytes]]) -> None:
    url, replies = raw_server
    replies.append(b"HTTP/1.1 100 Continue\r\n\r\n"
                   b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\n{\"a\": 1}")
    assert _ask(url) == {"a": 1}


def test_a_malformed_answer_is_a_protocol_error(raw_server: tuple[str, list[bytes]]) -> None:
    url, replies = raw_server
    replies.append(b"HTTP/1.1 two hundred\r\n\r\n")
    with pytest.raises(TransientProviderError) as failure:
        _ask(url)
    assert failure.value.kind == "connection"
    assert "RemoteProtocolError" in str(failure.value)


def test_answers_that_close_the_connection_are_not_sent_on_again(raw_server: tuple[str, list[bytes]]) -> None:
    """The raw server hangs up after each answer: every call needs (and gets) a connection of its own."""
    url, replies = raw_server
    for n in range(3):
        replies.append(b"HTTP/1.1 200 OK\r\nContent-Length: 8\r\nConnection: close\r\n\r\n{\"a\": %d}" % n)

    async def run() -> list[dict[str, object]]:
        pool = HttpPool(size=1)
        try:
            return [(await post_json(pool, url, json_body={}, headers={}, timeout_s=5, key=url))[0] for _ in range(3)]
        finally:
            await pool.aclose()

    assert asyncio.run(run()) == [{"a": 0}, {"a": 1}, {"a": 2}]


def test_a_kept_alive_connection_carries_every_call(monkeypatch: pytest.MonkeyPatch) -> None:
    connects = []
    real_connect = connection.AsyncioTransport._connect

    async def counted(self: connection.AsyncioTransport, *args: object) -> connection._Connection:
        connects.append(args)
        return await real_connect(self, *args)  # type: ignore[arg-type]

    monkeypatch.setattr(connection.AsyncioTransport, "_connect", counted)
    with MockServer(rules=[{"model": "m", "reply": "kept"}]) as server:
        url = f"{server.openai_base_url}/chat/completions"
        assert [_ask(url) for _ in range(1)]  # a pool per call: one connection each
        assert len(connects) == 1

        async def run() -> None:
            pool = HttpPool(size=1)
            try:
                for _ in range(4):
                    await post_json(pool, url, json_body={"model": "m", "messages": []}, headers={}, timeout_s=5,
                                    key=url)
            finally:
                await pool.aclose()

        asyncio.run(run())
        assert len(connects) == 2  # four calls, one more connection


def test_a_header_value_that_would_start_a_header_of_its_own_is_refused(raw_server: tuple[str, list[bytes]]) -> None:
    url, _ = raw_server
    with pytest.raises(httpx.LocalProtocolError, match="Illegal header value"):
        _client_call(url, headers={"x-api-key": "sk-1\r\nX-Injected: 1"})


def test_an_extension_client_gets_status_headers_and_body(raw_server: tuple[str, list[bytes]]) -> None:
    url, replies = raw_server
    replies.append(b"HTTP/1.1 418 I'm a teapot\r\nX-Kind: tea\r\nContent-Length: 3\r\n\r\nhot")
    response = _client_call(url)
    assert (response.status_code, response.reason_phrase, response.headers["x-kind"]) == (418, "I'm a teapot", "tea")
    assert response.content == b"hot"
    assert response.http_version == "HTTP/1.1"


class _FakeTransport:
    """Records what the connection asks of its socket."""

    def __init__(self) -> None:
        self.calls: list[str] = []
        self.written = b""

    def pause_reading(self) -> None:
        self.calls.append("pause_reading")

    def resume_reading(self) -> None:
        self.calls.append("resume_reading")

    def write(self, data: bytes) -> None:
        self.written += data

    def is_closing(self) -> bool:
        return False

    def close(self) -> None:
        self.calls.append("close")


def _connected() -> tuple[connection._Connection, _FakeTransport]:
    socket_ = _FakeTransport()
    conn = connection._Connection(asyncio.get_running_loop())
    conn.connection_made(socket_)  # type: ignore[arg-type]
    return conn, socket_


def test_a_reader_that_falls_behind_pauses_the_socket_until_it_catches_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connection, "_READ_BUFFER_LIMIT", 100)

    async def run() -> None:
        conn, socket_ = _connected()
        await conn.send(b"POST / HTTP/1.1\r\n\r\n", b"", False, 5)
        conn.data_received(b"HTTP/1.1 200 OK\r\nContent-Length: 200\r\n\r\n" + b"a" * 80)
        assert socket_.calls == []
        conn.data_received(b"b" * 80)
        assert socket_.calls == ["pause_reading"]
        assert await conn.read_body(5) == b"a" * 80  # 80 left: over half the limit, still paused
        assert socket_.calls == ["pause_reading"]
        assert await conn.read_body(5) == b"b" * 80  # nothing left: reading resumes
        assert socket_.calls == ["pause_reading", "resume_reading"]
        conn.data_received(b"c" * 40)
        assert await conn.read_body(5) == b"c" * 40
        assert await conn.read_body(5) == b""
        assert conn.done and conn.reusable()

    asyncio.run(run())


def test_a_full_write_buffer_waits_for_the_drain_and_times_out_when_it_never_comes() -> None:
    async def run() -> None:
        conn, socket_ = _connected()
        conn.pause_writing()
        sending = asyncio.ensure_future(conn.send(b"POST / HTTP/1.1\r\n\r\n", b"x", False, 5))
        await asyncio.sleep(0.01)
        assert not sending.done()
        conn.resume_writing()
        await sending
        assert socket_.written == b"POST / HTTP/1.1\r\n\r\nx"
        conn.pause_writing()
        with pytest.raises(httpx.WriteTimeout):
            await conn.send(b"POST / HTTP/1.1\r\n\r\n", b"", False, 0.05)

    asyncio.run(run())


def test_a_lost_connection_wakes_a_waiting_reader_with_the_error() -> None:
    async def run() -> None:
        conn, _ = _connected()
        await conn.send(b"POST / HTTP/1.1\r\n\r\n", b"", False, 5)
        reading = asyncio.ensure_future(conn.read_head(5))
        await asyncio.sleep(0.01)
        conn.connection_lost(ConnectionResetError("reset by peer"))
        with pytest.raises(httpx.ReadError, match="reset by peer"):
            await reading
        assert not conn.reusable()

    asyncio.run(run())


def test_bytes_nobody_asked_for_make_an_idle_connection_unusable() -> None:
    async def run() -> None:
        conn, _ = _connected()
        await conn.send(b"POST / HTTP/1.1\r\n\r\n", b"", False, 5)
        conn.data_received(b"HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nok")
        assert await conn.read_head(5) == (200, b"OK", [(b"Content-Length", b"2")])
        assert await conn.read_body(5) == b"ok"
        assert conn.reusable()
        conn.data_received(b"HTTP/1.1 200 OK\r\n")  # the server speaks out of turn
        assert not conn.reusable()

    asyncio.run(run())
