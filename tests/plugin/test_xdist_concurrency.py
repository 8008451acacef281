"""Under pytest -n 2 each worker runs its share of the cases concurrently, each case once, with the same results."""

from __future__ import annotations

import bisect
import collections
import json
import re
import threading
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.mock.server import MockServer

DELAY_S = 0.1  # every answer waits this long after the request is recorded
VOLATILE = {"latency_s", "duration_s", "started_at", "elapsed_s", "mean_latency_s", "timestamp", "response_id"}
SECONDS = re.compile(r"\b\d+\.\d+ s\b")  # latency cells of report.md


class CountingServer:
    """The mock server, with the arrival time of every request (it records requests as they arrive)."""

    def __init__(self, server: MockServer) -> None:
        self.server = server
        self.arrivals: list[float] = []
        self._lock = threading.Lock()
        record = server.record

        def timed(*args: Any, **kwargs: Any) -> None:
            with self._lock:
                self.arrivals.append(time.monotonic())
            record(*args, **kwargs)

        server.record = timed  # type: ignore[method-assign]

    def reset(self) -> None:
        self.server.reset()
        self.server.add_rule({"delay": DELAY_S})
        self.arrivals.clear()

    def peak_in_flight(self) -> int:
        """A lower bound of the requests the server held at once.

        Each request is held at least DELAY_S after it arrives, so all that arrived within DELAY_S
        before one arrival were still there when it came.
        """
        times = sorted(self.arrivals)
        return max((i + 1 - bisect.bisect_right(times, t - DELAY_S) for i, t in enumerate(times)), default=0)

    def calls_per_case(self) -> collections.Counter[tuple[str, str]]:
        """(model, prompt) -> how many completion requests the server got for it.

        A worker stopped mid-send (``-x``) leaves a body cut short, which the server keeps as text:
        it is counted under ``("?", "?")``.
        """
        return collections.Counter(
            (r["model"], r["body"]["messages"][-1]["content"]) if isinstance(r["body"], dict) else ("?", "?")
            for r in self.server.requests if r["path"].endswith("/chat/completions")
        )


@pytest.fixture(scope="module")
def counting_server() -> Iterator[CountingServer]:
    with MockServer() as server:
        yield CountingServer(server)


def suite_text(base_url: str, cases: int) -> str:
    """``cases`` cases over two models; a case passes when its answer contains a 1."""
    return (
        "providers:\n"
        f"  mock: {{type: openai_compatible, base_url: '{base_url}', timeout: 30, max_retries: 0}}\n"
        "models:\n  a: {provider: mock, id: xdist-a}\n  b: {provider: mock, id: xdist-b}\n"
        f"matrix:\n  n: {list(range(cases // 2))}\n"
        "tasks:\n  - {id: 'case-{{ n }}', prompt: 'Say {{ n }}'}\n"
        "scorers:\n  - {type: contains, value: '1'}\n"
    )


def without_timing(value: Any) -> Any:
    if isinstance(value, dict):
        return {k: without_timing(v) for k, v in value.items() if k not in VOLATILE}
    if isinstance(value, list):
        return [without_timing(v) for v in value]
    return value


def outputs(folder: Path) -> tuple[list[Any], Any, str]:
    """results.jsonl, summary.json and report.md, without wall-clock figures."""
    results = [without_timing(json.loads(line)) for line in (folder / "results.jsonl").read_text().splitlines()]
    summary = without_timing(json.loads((folder / "summary.json").read_text()))
    return results, summary, SECONDS.sub("- s", (folder / "report.md").read_text())


def run(pytester: pytest.Pytester, *args: str) -> pytest.RunResult:
    return pytester.runpytest_subprocess("suites", "-p", "no:cacheprovider", "-p", "no:randomly",
                                         "--bench-html", "off", *args)


@pytest.mark.slow
def test_two_workers_run_their_shares_concurrently_once_each_with_the_same_results(
    pytester: pytest.Pytester, counting_server: CountingServer
) -> None:
    pytester.makefile(".yaml", **{"suites/many": suite_text(counting_server.server.openai_base_url, 200)})
    counting_server.reset()
    run(pytester, "--bench-concurrency", "16", "--bench-output", "single").assert_outcomes(passed=38, failed=162)
    counting_server.reset()
    result = run(pytester, "-n", "2", "--bench-concurrency", "8", "--bench-output", "xdist")
    result.assert_outcomes(passed=38, failed=162)
    calls = counting_server.calls_per_case()
    assert len(calls) == 200 and set(calls.values()) == {1}  # every case called, none twice
    assert counting_server.peak_in_flight() > 2  # default --dist load: at most one per worker
    assert outputs(pytester.path / "xdist") == outputs(pytester.path / "single")


@pytest.mark.slow
def test_an_explicit_dist_mode_is_kept_and_gives_the_same_results(
    pytester: pytest.Pytester, counting_server: CountingServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    pytester.makefile(".yaml", **{"suites/many": suite_text(counting_server.server.openai_base_url, 20)})
    counting_server.reset()
    run(pytester, "--bench-output", "single").assert_outcomes(passed=2, failed=18)
    for name, args, addopts in (("load", ["--dist", "load"], ""), ("loadfile", ["--dist", "loadfile"], ""),
                                ("addopts", [], "--dist=load")):
        monkeypatch.setenv("PYTEST_ADDOPTS", addopts)
        counting_server.reset()
        result = run(pytester, "-n", "2", *args, "-v", "--bench-output", name)
        result.assert_outcomes(passed=2, failed=18)
        xdist_own = "LoadFileScheduling" if name == "loadfile" else "LoadScheduling"
        result.stdout.fnmatch_lines([f"*scheduling tests via {xdist_own}*"])
        assert set(counting_server.calls_per_case().values()) == {1}
        assert outputs(pytester.path / name) == outputs(pytester.path / "single")


@pytest.mark.slow
def test_ordinary_tests_in_the_same_run_still_run_once(
    pytester: pytest.Pytester, counting_server: CountingServer
) -> None:
    pytester.makefile(".yaml", **{"suites/many": suite_text(counting_server.server.openai_base_url, 40)})
    pytester.makepyfile(test_plain="\n".join(f"def test_{i}():\n    assert {i} < 5\n" for i in range(8)))
    counting_server.reset()
    result = pytester.runpytest_subprocess("suites", "test_plain.py", "-p", "no:cacheprovider", "-n", "2", "-v")
    result.assert_outcomes(passed=22 + 5, failed=18 + 3)
    result.stdout.fnmatch_lines(["*scheduling tests via BenchScheduling*"])
    assert len(counting_server.calls_per_case()) == 40 and set(counting_server.calls_per_case().values()) == {1}


@pytest.mark.slow
def test_exitfirst_stops_both_workers_long_before_their_shares_are_done(
    pytester: pytest.Pytester, counting_server: CountingServer
) -> None:
    pytester.makefile(".yaml", **{"suites/many": suite_text(counting_server.server.openai_base_url, 400)})
    counting_server.reset()
    result = run(pytester, "-n", "2", "--bench-concurrency", "2", "-x")
    assert result.ret in (pytest.ExitCode.TESTS_FAILED, pytest.ExitCode.INTERRUPTED)  # xdist: interrupted
    result.stdout.fnmatch_lines(["*stopping after 1 failures*"])
    # each worker keeps only a window queued and started ahead: a few dozen calls, not 400
    assert sum(counting_server.calls_per_case().values()) < 200
