"""The runner's own transport (``connection.py``) at its edges.

Big bodies both ways, a server that hangs up mid-answer, one that never answers, one that is not there (each
failure as the error httpx would raise), and the protocol's flow control, driven by hand.
"""

from __future__ import annotations

import asyncio
import socket
import threading
from collections.abc import Iterator

import httpcore
import httpx
import pytest

from bench_plugin import connection
from bench_plugin.errors import TransientProviderError
from bench_plugin.http import HttpPool, post_json
from bench_plugin.mock.server import MockServer


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


class _FakeTransport:
    """Records what the protocol asks of its transport."""

    def __init__(self) -> None:
        self.calls: list[str] = []

    def pause_reading(self) -> None:
        self.calls.append("pause_reading")

    def resume_reading(self) -> None:
        self.calls.append("resume_reading")


def test_a_reader_that_falls_behind_pauses_the_socket_until_it_catches_up(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(connection, "_READ_BUFFER_LIMIT", 100)
    protocol = connection._Protocol()
    transport = _FakeTransport()
    protocol.transport = transport  # type: ignore[assignment]
    protocol.data_received(b"a" * 80)
    assert transport.calls == []
    protocol.data_received(b"b" * 80)
    assert transport.calls == ["pause_reading"]
    assert protocol.take(100) == b"a" * 80 + b"b" * 20  # 60 left: over half the limit, still paused
    assert transport.calls == ["pause_reading"]
    assert protocol.take(20) == b"b" * 20  # 40 left: reading resumes
    assert transport.calls == ["pause_reading", "resume_reading"]
    assert protocol.take(100) == b"b" * 40


def test_a_full_write_buffer_waits_for_the_drain_and_times_out_when_it_never_comes() -> None:
    async def run() -> None:
        protocol = connection._Protocol()
        protocol.pause_writing()
        waiting = asyncio.ensure_future(protocol.wait_drained(5))
        await asyncio.sleep(0.01)
        assert not waiting.done()
        protocol.resume_writing()
        await waiting
        protocol.pause_writing()
        with pytest.raises(httpcore.WriteTimeout):
            await protocol.wait_drained(0.05)

    asyncio.run(run())


def test_a_lost_connection_wakes_a_waiting_reader_with_the_error() -> None:
    async def run() -> None:
        protocol = connection._Protocol()
        stream = connection.AsyncioStream(_FakeTransport(), protocol)  # type: ignore[arg-type]
        reading = asyncio.ensure_future(stream.read(10, timeout=5))
        await asyncio.sleep(0.01)
        protocol.connection_lost(ConnectionResetError("reset by peer"))
        with pytest.raises(httpcore.ReadError, match="reset by peer"):
            await reading
        assert stream.get_extra_info("is_readable") is True  # an idle connection like this is not reused

    asyncio.run(run())
