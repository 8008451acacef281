"""Calls over TLS through the runner's own transport (``connection.py``): certificates checked, answers read.

The mock server answers over TLS with a certificate made here for 127.0.0.1 by the ``openssl`` command
(skipped where there is none). The client trusts it only through ``SSL_CERT_FILE``, as a user behind a
corporate CA would.
"""

from __future__ import annotations

import asyncio
import shutil
import ssl
import subprocess
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.core.errors import TransientProviderError
from bench_plugin.mock.server import MockServer
from bench_plugin.providers.connection import AsyncioTransport
from bench_plugin.providers.http import HttpPool, post_json

pytestmark = pytest.mark.skipif(shutil.which("openssl") is None, reason="needs the openssl command to make a cert")


@pytest.fixture(scope="module")
def certificate(tmp_path_factory: pytest.TempPathFactory) -> tuple[Path, Path]:
    folder = tmp_path_factory.mktemp("tls")
    cert, key = folder / "cert.pem", folder / "key.pem"
    subprocess.run(
        ["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "1", "-subj", "/CN=127.0.0.1",
         "-addext", "subjectAltName=IP:127.0.0.1", "-keyout", str(key), "-out", str(cert)],
        check=True, capture_output=True,
    )
    return cert, key


@pytest.fixture
def tls_server(certificate: tuple[Path, Path]) -> Iterator[MockServer]:
    context = ssl.create_default_context(ssl.Purpose.CLIENT_AUTH)
    context.load_cert_chain(*certificate)
    with MockServer(rules=[{"model": "m", "reply": "over TLS"}], ssl_context=context) as server:
        yield server


async def _ask(base_url: str, times: int = 1) -> list[dict[str, object]]:
    pool = HttpPool(size=2)
    try:
        answers = []
        for _ in range(times):
            body, _ = await post_json(
                pool, f"{base_url}/chat/completions", json_body={"model": "m", "messages": [
                    {"role": "user", "content": "hi"}]}, headers={}, timeout_s=10, key=base_url,
            )
            answers.append(body)
        return answers
    finally:
        await pool.aclose()


def test_a_trusted_certificate_gives_the_answer_and_the_connection_is_kept(
    tls_server: MockServer, certificate: tuple[Path, Path], monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("SSL_CERT_FILE", str(certificate[0]))
    connects = []
    real_connect = AsyncioTransport._connect

    async def counted(self: AsyncioTransport, *args: Any, **kwargs: Any) -> Any:
        connects.append(args)
        return await real_connect(self, *args, **kwargs)

    monkeypatch.setattr(AsyncioTransport, "_connect", counted)
    answers = asyncio.run(_ask(tls_server.openai_base_url, times=3))
    assert [a["choices"][0]["message"]["content"] for a in answers] == ["over TLS"] * 3  # type: ignore[index]
    assert tls_server.openai_base_url.startswith("https://")
    assert len(tls_server.requests) == 3
    assert len(connects) == 1  # one connection, handshaken once, carried all three


def test_an_untrusted_certificate_is_a_connection_failure(
    tls_server: MockServer, monkeypatch: pytest.MonkeyPatch, tmp_path: Path
) -> None:
    monkeypatch.delenv("SSL_CERT_FILE", raising=False)
    monkeypatch.delenv("SSL_CERT_DIR", raising=False)
    with pytest.raises(TransientProviderError) as failure:
        asyncio.run(_ask(tls_server.openai_base_url))
    assert failure.value.kind == "connection"
    assert "CERTIFICATE_VERIFY_FAILED" in str(failure.value)
    assert tls_server.requests == []  # nothing was sent to a server we could not verify
