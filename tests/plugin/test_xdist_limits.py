"""Under pytest -n N the workers keep to a provider's and a model's limits together: each to an equal share."""

from __future__ import annotations

import bisect
import threading
import time
from collections.abc import Iterator
from typing import Any

import pytest

from bench_plugin.calls.rate_limits import RateLimits, shared_by
from bench_plugin.mock.server import MockServer
from bench_plugin.plugin.options.calls import read_call_settings

RPM = 120  # two requests a second, for all workers together
WINDOW_S = 4.0


def test_each_of_n_processes_keeps_to_an_equal_share():
    assert shared_by(RateLimits(concurrency=5, rpm=30, tpm=9000), 2) == RateLimits(concurrency=2, rpm=15, tpm=4500)
    assert shared_by(RateLimits(concurrency=1, rpm=None, tpm=None), 3) == RateLimits(concurrency=1)  # at least one call
    assert shared_by(RateLimits(), 4) == RateLimits()
    limits = RateLimits(concurrency=3, rpm=10)
    assert shared_by(limits, 1) is limits


def test_a_worker_knows_how_many_processes_share_the_limits(pytester: pytest.Pytester) -> None:
    config = pytester.parseconfig("--bench-rate-limit", "mock:rpm=30")
    assert read_call_settings(config).processes == 1
    config.workerinput = {"workerid": "gw0", "workercount": 3}  # type: ignore[attr-defined]
    settings = read_call_settings(config)
    assert settings.processes == 3
    assert settings.provider_limits == {"mock": {"rpm": 30}}  # the share is taken where the limits are built


class ArrivalServer:
    """The mock server, with the arrival time of every request to one model."""

    def __init__(self, server: MockServer) -> None:
        self.server = server
        self.arrivals: list[float] = []
        self._lock = threading.Lock()
        record = server.record

        def timed(method: str, path: str, headers: Any, body: Any) -> None:
            if isinstance(body, dict) and str(body.get("model", "")).startswith("paced-"):
                with self._lock:
                    self.arrivals.append(time.monotonic())
            record(method, path, headers, body)

        server.record = timed  # type: ignore[method-assign]

    def most_in_any_window(self, seconds: float) -> int:
        """The most requests that arrived within any ``seconds`` (a window starting at an arrival)."""
        times = sorted(self.arrivals)
        return max((bisect.bisect_left(times, t + seconds) - i for i, t in enumerate(times)), default=0)


@pytest.fixture
def arrival_server() -> Iterator[ArrivalServer]:
    with MockServer() as server:
        yield ArrivalServer(server)


def paced_suite(base_url: str, cases: int) -> str:
    return (
        "providers:\n"
        f"  mock: {{type: openai_compatible, base_url: '{base_url}', timeout: 30, rpm: {RPM}}}\n"
        "models:\n  m: {provider: mock, id: paced-m}\n"
        f"matrix:\n  n: {list(range(cases))}\n"
        "tasks:\n  - {id: 'case-{{ n }}', prompt: 'Say {{ n }} to Ada'}\n"
        "scorers:\n  - {type: contains, value: Ada}\n"
    )


@pytest.mark.slow
def test_two_workers_together_stay_within_a_providers_rpm(
    pytester: pytest.Pytester, arrival_server: ArrivalServer
) -> None:
    pytester.makefile(".yaml", **{"suites/paced": paced_suite(arrival_server.server.openai_base_url, 20)})
    result = pytester.runpytest_subprocess("suites", "-p", "no:cacheprovider", "-p", "no:randomly", "-n", "2",
                                           "--bench-html", "off")
    result.assert_outcomes(passed=20)
    assert len(arrival_server.arrivals) == 20
    # each worker paces 1 request a second (60 rpm, its half) after a first one at once: at most 2 x (1 + 4)
    # in any 4 s; one more each for the network's jitter. Each pacing 120 rpm alone, they would send ~18.
    allowed = int(2 * (1 + RPM / 60 / 2 * WINDOW_S)) + 2
    assert arrival_server.most_in_any_window(WINDOW_S) <= allowed
