"""End-to-end tests: shared suite texts importable, and an ini for pytester's inner runs."""

from __future__ import annotations

import asyncio
import sys
from pathlib import Path
from typing import TYPE_CHECKING

import httpx
import pytest

if TYPE_CHECKING:
    from bench_plugin.mock.server import MockServer

sys.path.insert(0, str(Path(__file__).parent))


@pytest.fixture(autouse=True)
def inner_ini(pytester: pytest.Pytester) -> None:
    """Inner runs read no ini of ours; settle pytest-asyncio's loop scope so it does not warn.

    The response cache is off: tests that run a suite twice and count the mock server's requests must see
    every call (the cache's own tests, ``test_cache_runs.py``, turn it on).
    """
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\naddopts = --bench-cache off\n")


@pytest.fixture(scope="session", autouse=True)
def warm_http_imports(mock_server: MockServer) -> None:
    """Make one real request before any pytester run.

    pytester's in-process runs drop modules first imported during a run. httpcore imports its
    HTTP/1.1 and network-backend modules lazily on the first request; re-imported in a later run,
    their exception classes no longer match httpx's mapping table, and raw httpcore errors escape.
    """

    async def one_request() -> None:
        async with httpx.AsyncClient(trust_env=False) as client:
            await client.get(f"{mock_server.url}/health")

    asyncio.run(one_request())
