"""Untrusted text that http.py and the providers log stays one line, with its control characters shown, not obeyed."""

from __future__ import annotations

import logging
import uuid
from typing import Any

import pytest

from bench_plugin.calls.retry import complete_with_retries
from bench_plugin.core import text_safety
from bench_plugin.core.chat import Completion, CompletionRequest
from bench_plugin.core.endpoints import ModelSpec, ProviderSpec
from bench_plugin.core.errors import ProviderError, TransientProviderError
from bench_plugin.providers.http import HttpPool, post_json
from bench_plugin.providers.interface import BaseProvider
from bench_plugin.report import escape

FORGED = "bad\x1b[2J\x1b[31m\nINFO fake line: all keys rotated\r\u202eevil\x00"
CONTROLS = ("\x1b", "\n", "\r", "\u202e", "\x00")


def test_report_escape_uses_the_ground_floor_helper() -> None:
    assert escape.log_line is text_safety.log_line


@pytest.mark.asyncio
async def test_a_server_error_body_cannot_forge_lines_or_drive_the_terminal(mock_server: Any) -> None:
    model = f"forge-{uuid.uuid4().hex[:10]}"
    mock_server.add_rule({"model": model, "status": 400, "error": FORGED})
    pool = HttpPool()
    try:
        with pytest.raises(ProviderError) as caught:
            await post_json(pool, f"{mock_server.openai_base_url}/chat/completions",
                            json_body={"model": model, "messages": [{"role": "user", "content": "hi"}]},
                            headers={}, timeout_s=5, key=mock_server.openai_base_url)
    finally:
        await pool.aclose()
    message = str(caught.value)
    assert not any(char in message for char in CONTROLS), repr(message)
    assert "bad\\x1b[2J\\x1b[31m INFO fake line: all keys rotated \\u202eevil\\x00" in message


class Failing(BaseProvider):
    """Fails once with an error quoting hostile text, then answers."""

    def __init__(self) -> None:
        super().__init__(ProviderSpec("prov\nINFO forged", "test"))
        self.failed = False

    async def complete(self, request: CompletionRequest) -> Completion:
        if not self.failed:
            self.failed = True
            raise TransientProviderError(f"HTTP 503: model {FORGED}", status=503)
        return Completion(text="ok")


@pytest.mark.asyncio
async def test_a_retry_log_line_stays_one_line(caplog: pytest.LogCaptureFixture) -> None:
    request = CompletionRequest(model=ModelSpec(name="m", provider=ProviderSpec("p", "test"), id="m", label="m"),
                                messages=())

    async def no_wait(delay: float) -> None:
        return None

    with caplog.at_level(logging.INFO, logger="bench_plugin.http"):
        await complete_with_retries(Failing(), request, max_retries=1, sleep=no_wait)
    [logged] = [r.getMessage() for r in caplog.records if r.getMessage().startswith("retrying")]
    assert not any(char in logged for char in CONTROLS), repr(logged)
    assert logged.startswith("retrying prov\\nINFO forged in ")
    assert "model bad\\x1b[2J\\x1b[31m\\nINFO fake line" in logged
