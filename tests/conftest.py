"""Shared fixtures: pytester, a clean environment, and the loopback mock server."""

from __future__ import annotations

import os
from collections.abc import Iterator
from typing import TYPE_CHECKING

import pytest
import scipy.stats  # noqa: F401  (the report imports it on first use, which may be inside a pytester run)

# pytester's in-process runs drop the modules first imported during a run; numpy and scipy refuse
# to be imported a second time in one process, so the report code that uses them loads here, once
import bench_plugin.report.write  # noqa: F401  (imports numpy)

if TYPE_CHECKING:
    from bench_plugin.mock.server import MockServer

pytest_plugins = ["pytester"]

_SECRET_PREFIXES = ("OPENAI_", "ANTHROPIC_", "OPENROUTER_", "BENCH_TEST_")
_PROXY_VARS = ("HTTP_PROXY", "HTTPS_PROXY", "ALL_PROXY", "http_proxy", "https_proxy", "all_proxy")


@pytest.fixture(autouse=True)
def clean_environment(monkeypatch: pytest.MonkeyPatch) -> None:
    """No real key or proxy may leak into a test; traffic stays on loopback."""
    for name in list(os.environ):
        if name.startswith(_SECRET_PREFIXES) or name in _PROXY_VARS:
            monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("NO_PROXY", "127.0.0.1,localhost")


@pytest.fixture(scope="session")
def mock_server() -> Iterator[MockServer]:
    """A real OpenAI/Anthropic-compatible HTTP server on 127.0.0.1, shared by the session.

    Tests add rules for their own model names (``server.add_rule``) so they do not disturb each other.
    """
    from bench_plugin.mock.server import MockServer

    with MockServer() as server:
        yield server

