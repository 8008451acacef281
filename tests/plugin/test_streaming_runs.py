"""Streaming and load steps end to end: timing in the call log and the reports, none on a cache hit, steps in order.

A suite's calls stream, their timing reaches the call log and the reports, a cache hit carries none, and load steps
run one after the other with their own cap on cases in flight.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from bench_plugin.mock.server import MockServer

COMMON = ("suites", "-p", "no:cacheprovider", "-p", "no:randomly", "--bench-html", "off")


def suite(server: MockServer, model_id: str, *, stream: str = "stream: true", load: str = "", cases: int = 3) -> str:
    names = ", ".join(f"c{n}" for n in range(cases))
    return f"""\
providers:
  local: {{type: openai_compatible, base_url: '{server.openai_base_url}', {stream}}}
models:
  m: {{provider: local, id: {model_id}}}
{load}
matrix:
  n: [{names}]
tasks:
  - id: "t-{{{{ n }}}}"
    prompt: "say {{{{ n }}}} one two three four five"
scorers:
  - {{type: contains, value: echo}}
"""


def records(pytester: pytest.Pytester, output: str = "bench-results") -> list[dict[str, Any]]:
    lines = (pytester.path / output / "results.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def summary_of(pytester: pytest.Pytester, output: str = "bench-results") -> dict[str, Any]:
    suites: list[dict[str, Any]] = json.loads((pytester.path / output / "summary.json").read_text())["suites"]
    return suites[0]


@pytest.fixture
def model_id() -> str:
    """A model no other test uses: each test adds its rules for it (the first rule that matches applies)."""
    return f"streamed-{uuid.uuid4().hex[:8]}"


def test_streamed_calls_keep_their_timing_and_a_cache_hit_none(
    pytester: pytest.Pytester, mock_server: MockServer, model_id: str
) -> None:
    mock_server.add_rule({"model": model_id, "ttft": 0.05, "tokens_per_s": 100})
    pytester.makefile(".yaml", **{"suites/streamed": suite(mock_server, model_id)})
    cache = ("--bench-cache", "on", "--bench-cache-dir", str(pytester.path / "cache"))
    first_run = pytester.runpytest(*COMMON, *cache, "--bench-output", "first")
    first_run.assert_outcomes(passed=3)
    first_run.stdout.fnmatch_lines(["*3 cases: 3 passed; mean 1.0000*; TTFT p50 0.* s, p99 0.* s, * tokens/s"])
    pytester.runpytest(*COMMON, *cache, "--bench-output", "second").assert_outcomes(passed=3)

    first = [entry for record in records(pytester, "first") for entry in record["call_log"]]
    assert all(entry["cache"] == "miss" and entry["ttft_s"] >= 0.04 and entry["tokens_per_s"] > 0 for entry in first)
    second = [entry for record in records(pytester, "second") for entry in record["call_log"]]
    assert all(entry["cache"] == "hit" and "ttft_s" not in entry and "tokens_per_s" not in entry for entry in second)

    [row] = summary_of(pytester, "first")["latency"]["models"]
    assert row["model"] == "m" and row["streamed"] == 3
    assert 0.04 <= row["ttft_s"]["p50"] <= row["ttft_s"]["p90"] <= row["ttft_s"]["p99"]
    assert row["latency_s"]["p50"] >= row["ttft_s"]["p50"]
    report = (pytester.path / "first" / "report.md").read_text()
    assert "### Latency" in report and "| m | 3 |" in report
    assert 'data-section="latency"' in (pytester.path / "first" / "dashboard.html").read_text()
    assert "latency" not in summary_of(pytester, "second")  # only cache hits: nothing was timed


def test_bench_stream_turns_streaming_on_for_every_provider(
    pytester: pytest.Pytester, mock_server: MockServer, model_id: str
) -> None:
    pytester.makefile(".yaml", **{"suites/plain": suite(mock_server, model_id, stream="timeout: 10")})
    pytester.runpytest(*COMMON).assert_outcomes(passed=3)
    pytester.runpytest(*COMMON, "--bench-stream", "--bench-output", "streamed").assert_outcomes(passed=3)

    asked = [r["body"].get("stream") for r in mock_server.requests if r["model"] == model_id]
    assert asked == [None] * 3 + [True] * 3
    assert all("ttft_s" in entry for record in records(pytester, "streamed") for entry in record["call_log"])
    assert "latency" not in summary_of(pytester)


def overlap(intervals: list[tuple[float, float]]) -> int:
    """The most intervals open at one instant."""
    edges = sorted([(start, 1) for start, _ in intervals] + [(end, -1) for _, end in intervals])
    most = now = 0
    for _, change in edges:
        now += change
        most = max(most, now)
    return most


def test_load_steps_run_one_after_another_each_with_its_cases_in_flight(
    pytester: pytest.Pytester, mock_server: MockServer, model_id: str
) -> None:
    mock_server.add_rule({"model": model_id, "delay": 0.2})
    load = "load:\n  in_flight: [1, 3]"
    pytester.makefile(".yaml", **{"suites/steps": suite(mock_server, model_id, load=load, cases=6)})
    result = pytester.runpytest(*COMMON, "--bench-concurrency", "2", "-v")
    result.assert_outcomes(passed=12)
    result.stdout.fnmatch_lines(["*t-c0?m-run1-in_flight1? PASSED*", "*t-c5?m-run1-in_flight3? PASSED*"])

    found = records(pytester)
    steps = {step: [(r["load"]["started"], r["load"]["ended"]) for r in found if r["load"]["step"] == step]
             for step in ("in_flight=1", "in_flight=3")}
    assert overlap(steps["in_flight=1"]) == 1
    assert overlap(steps["in_flight=3"]) == 3  # over --bench-concurrency 2: the step raised it
    assert max(end for _, end in steps["in_flight=1"]) <= min(start for start, _ in steps["in_flight=3"])

    rows = summary_of(pytester)["latency"]["steps"]
    assert [(row["step"], row["cases"], row["errors"]) for row in rows] == [("in_flight=1", 6, 0),
                                                                            ("in_flight=3", 6, 0)]
    assert rows[1]["cases_per_s"] > rows[0]["cases_per_s"] > 0
    assert "### Load steps" in (pytester.path / "bench-results" / "report.md").read_text()


def test_bench_load_overrides_the_suite_and_counts_errors(
    pytester: pytest.Pytester, mock_server: MockServer, model_id: str
) -> None:
    mock_server.add_rule({"model": model_id, "match": "c1 ", "status": 400})
    pytester.makefile(".yaml", **{"suites/rated": suite(mock_server, model_id, load="load: {in_flight: [2]}")})
    result = pytester.runpytest(*COMMON, "--bench-load", "rate=20,40")
    result.assert_outcomes(passed=4, errors=2)

    rows = summary_of(pytester)["latency"]["steps"]
    assert [(row["step"], row["cases"], row["errors"]) for row in rows] == [("rate=20/s", 3, 1), ("rate=40/s", 3, 1)]


@pytest.mark.parametrize("value", ["in_flight=0", "speed=3", "rate=fast", "in_flight=1.5"])
def test_a_bad_bench_load_is_a_usage_error(pytester: pytest.Pytester, value: str) -> None:
    pytester.makefile(".yaml", **{"suites/x": "models: {m: {provider: echo}}\ntasks: [{id: t, prompt: hi}]\n"})
    result = pytester.runpytest(*COMMON, "--bench-load", value)
    result.stderr.fnmatch_lines(["*--bench-load: *expected*"])
    assert result.ret == pytest.ExitCode.USAGE_ERROR


def test_a_bad_load_key_points_at_its_line(pytester: pytest.Pytester) -> None:
    text = "models: {m: {provider: echo}}\nload:\n  in_flight: [8, -1]\ntasks: [{id: t, prompt: hi}]\n"
    pytester.makefile(".yaml", **{"suites/x": text})
    result = pytester.runpytest(*COMMON)
    result.stdout.fnmatch_lines(["*x.yaml:3: load.in_flight?1?: expected a number >= 1, got -1*"])


def test_a_call_answered_by_an_identical_one_in_flight_carries_no_timing(
    pytester: pytest.Pytester, mock_server: MockServer, model_id: str
) -> None:
    mock_server.add_rule({"model": model_id, "ttft": 0.3})
    text = suite(mock_server, model_id).replace('prompt: "say {{ n }} one two three four five"', 'prompt: "same"')
    pytester.makefile(".yaml", **{"suites/twins": text.replace("contains, value: echo", "contains, value: same")})
    cache = ("--bench-cache", "on", "--bench-cache-dir", str(pytester.path / "cache"))
    pytester.runpytest(*COMMON, *cache).assert_outcomes(passed=3)

    entries = sorted((entry for record in records(pytester) for entry in record["call_log"]), key=lambda e: e["cache"])
    assert [entry["cache"] for entry in entries] == ["hit", "hit", "miss"]
    assert ["ttft_s" in entry for entry in entries] == [False, False, True]
    assert sum(1 for r in mock_server.requests if r["model"] == model_id) == 1


@pytest.mark.parametrize("workers", [[], ["-n", "2"]])
def test_load_steps_split_by_xdist_are_named_in_a_warning(pytester: pytest.Pytester, workers: list[str]) -> None:
    """Each worker would keep its own steps and caps: the figures per step would be a worker's, not the step's."""
    text = ("models: {m: {provider: echo}}\nload:\n  in_flight: [1, 2]\n"
            "tasks: [{id: a, prompt: hi}, {id: b, prompt: yo}]\n")
    pytester.makefile(".yaml", **{"suites/steps": text})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", *workers)
    result.assert_outcomes(passed=4)
    warned = "load steps under pytest-xdist" in result.stdout.str()
    assert warned == bool(workers), result.stdout.str()
