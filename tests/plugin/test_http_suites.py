"""Suites against a real HTTP server on 127.0.0.1: outcomes, retries, keys, parameters on the wire."""

from __future__ import annotations

import json
import uuid
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.mock.server import MockServer

SECRET = "sk-test-0123456789abcdefSECRET"
# these suites send BENCH_TEST_KEY to the loopback server they declare, which a suite may only do with the
# user's leave (tests/plugin/test_key_allowlist.py)
ALLOW_KEY = ("--bench-allow-key-env", "BENCH_TEST_KEY")


def http_suite(server: MockServer, models: dict[str, str], *, extra: str = "", retries: int = 1) -> str:
    model_lines = "".join(f"  {name}: {{provider: local, id: {model_id}, temperature: 0.3, max_tokens: 64}}\n"
                          for name, model_id in models.items())
    return (
        "providers:\n"
        f"  local: {{type: openai_compatible, base_url: '{server.openai_base_url}', api_key_env: BENCH_TEST_KEY,"
        f" timeout: 0.5, max_retries: {retries}, headers: {{X-Title: bench}}}}\n"
        "models:\n" + model_lines +
        "tasks:\n  - {id: greet, system: Be brief., prompt: 'Say hello to Ada'}\n"
        "scorers:\n  - {type: contains, value: Ada}\n" + extra
    )


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def records(pytester: pytest.Pytester) -> list[dict[str, Any]]:
    path = pytester.path / "bench-results" / "results.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def requests_for(server: MockServer, model_id: str) -> list[dict[str, Any]]:
    return [r for r in server.requests if r["model"] == model_id]


def test_answer_passes_and_parameters_reach_the_wire(
    pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCH_TEST_KEY", SECRET)
    model_id = unique("good")
    pytester.makefile(".yaml", **{"suites/http": http_suite(mock_server, {"good": model_id})})
    pytester.runpytest("suites", *ALLOW_KEY).assert_outcomes(passed=1)
    (request,) = requests_for(mock_server, model_id)
    assert request["headers"]["authorization"] == f"Bearer {SECRET}"
    assert request["headers"]["x-title"] == "bench"
    assert request["body"]["temperature"] == 0.3 and request["body"]["max_tokens"] == 64
    assert request["body"]["messages"][0] == {"role": "system", "content": "Be brief."}
    (record,) = records(pytester)
    assert record["response"] == "echo: Say hello to Ada"
    assert record["usage"]["input_tokens"] > 0 and record["usage"]["output_tokens"] > 0
    assert record["latency_s"] > 0


def test_http_500_is_an_infrastructure_error_not_a_failure(
    pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCH_TEST_KEY", SECRET)
    broken, good = unique("broken"), unique("good")
    mock_server.add_rule({"model": broken, "status": 500})
    pytester.makefile(".yaml", **{"suites/http": http_suite(mock_server, {"broken": broken, "good": good})})
    result = pytester.runpytest("suites", *ALLOW_KEY)
    result.assert_outcomes(passed=1, errors=1)
    result.stdout.fnmatch_lines(
        ["*http_500*gave up after 2 attempts*", "*infrastructure failure, not a model failure*"]
    )
    statuses = {r["model"]: (r["status"], (r["error"] or {}).get("kind")) for r in records(pytester)}
    assert statuses == {"broken": ("error", "http_500"), "good": ("passed", None)}


def test_429_with_retry_after_is_retried_then_passes(
    pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCH_TEST_KEY", SECRET)
    flaky = unique("flaky")
    mock_server.add_rule({"model": flaky, "status": 429, "retry_after": "0.2", "times": 1})
    pytester.makefile(".yaml", **{"suites/http": http_suite(mock_server, {"flaky": flaky})})
    pytester.runpytest("suites", *ALLOW_KEY).assert_outcomes(passed=1)
    assert len(requests_for(mock_server, flaky)) == 2
    (record,) = records(pytester)
    assert record["usage"]["attempts"] == 2


@pytest.mark.parametrize(
    ("rule", "kind"),
    [({"delay": 2.0}, "timeout"), ({"body": "<html>bad gateway</html>"}, "malformed"), ({"drop": True}, "connection")],
)
def test_transport_failures_are_errors_with_their_kind(
    pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch, rule: dict[str, Any], kind: str
) -> None:
    monkeypatch.setenv("BENCH_TEST_KEY", SECRET)
    model_id = unique(kind)
    mock_server.add_rule({"model": model_id, **rule})
    pytester.makefile(".yaml", **{"suites/http": http_suite(mock_server, {"m": model_id}, retries=0)})
    pytester.runpytest("suites", *ALLOW_KEY).assert_outcomes(errors=1)
    (record,) = records(pytester)
    assert (record["status"], record["error"]["kind"]) == ("error", kind)


def test_api_key_never_reaches_results_or_reports(
    pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCH_TEST_KEY", SECRET)
    denied, good = unique("denied"), unique("good")
    mock_server.add_rule({"model": denied, "status": 401})  # the server quotes the key it was sent
    pytester.makefile(".yaml", **{"suites/http": http_suite(mock_server, {"denied": denied, "good": good})})
    result = pytester.runpytest("suites", "--junitxml", "junit.xml", *ALLOW_KEY)
    result.assert_outcomes(passed=1, errors=1)
    assert SECRET not in result.stdout.str() + result.stderr.str()
    for path in [*Path(pytester.path, "bench-results").iterdir(), pytester.path / "junit.xml"]:
        assert SECRET not in path.read_text(errors="replace"), f"key leaked into {path.name}"
        assert SECRET[:12] not in path.read_text(errors="replace"), f"part of the key leaked into {path.name}"


def test_missing_key_variable_is_a_clear_error(pytester: pytest.Pytester, mock_server: MockServer) -> None:
    pytester.makefile(".yaml", **{"suites/http": http_suite(mock_server, {"m": unique("nokey")})})
    result = pytester.runpytest("suites", *ALLOW_KEY)
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines(["*environment variable BENCH_TEST_KEY is not set*"])


def test_anthropic_provider_end_to_end(
    pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCH_TEST_KEY", SECRET)
    model_id = unique("claude")
    suite = (
        f"providers:\n  claude: {{type: anthropic, base_url: '{mock_server.url}', api_key_env: BENCH_TEST_KEY}}\n"
        f"models:\n  c: {{provider: claude, id: {model_id}, max_tokens: 100}}\n"
        "tasks:\n  - {id: greet, system: Be brief., prompt: 'Say hello to Ada'}\n"
        "scorers:\n  - {type: contains, value: Ada}\n"
    )
    pytester.makefile(".yaml", **{"suites/http": suite})
    pytester.runpytest("suites", *ALLOW_KEY).assert_outcomes(passed=1)
    (request,) = requests_for(mock_server, model_id)
    assert request["path"] == "/v1/messages"
    assert request["headers"]["x-api-key"] == SECRET
    assert request["body"]["system"] == "Be brief."
    assert request["body"]["max_tokens"] == 100


def test_fold_system_prompt_for_models_without_a_system_role(
    pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCH_TEST_KEY", SECRET)
    model_id = unique("nosys")
    suite = http_suite(mock_server, {"m": model_id}).replace(
        "max_tokens: 64}",
        "max_tokens: 64, system_prompt: fold, system_fold_template: '<SYSTEM>{{ system }}</SYSTEM> '}",
    )
    pytester.makefile(".yaml", **{"suites/http": suite})
    pytester.runpytest("suites", *ALLOW_KEY).assert_outcomes(passed=1)
    (request,) = requests_for(mock_server, model_id)
    assert request["body"]["messages"] == [{"role": "user", "content": "<SYSTEM>Be brief.</SYSTEM> Say hello to Ada"}]


def test_bench_models_points_a_suite_at_another_endpoint(
    pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The same offline suite, run on a 'real' model by flags alone: no YAML change."""
    model_id = unique("served")
    suite = "models:\n  offline: {provider: echo}\ntasks:\n  - {id: greet, prompt: 'Say hello to Ada'}\n"
    pytester.makefile(".yaml", **{"suites/offline": suite})
    result = pytester.runpytest(
        "suites", "--bench-models", f"vllm:{model_id}", "--bench-base-url", f"vllm={mock_server.openai_base_url}"
    )
    result.assert_outcomes(passed=1)
    assert len(requests_for(mock_server, model_id)) == 1
    result.stdout.fnmatch_lines([f"*vllm:{model_id}*1 passed*"])


def test_concurrency_overlaps_slow_calls(
    pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Eight 0.3 s answers with 8 in flight take about one answer's time, not eight."""
    monkeypatch.setenv("BENCH_TEST_KEY", SECRET)
    model_id = unique("slow")
    mock_server.add_rule({"model": model_id, "delay": 0.3})
    suite = http_suite(mock_server, {"m": model_id}).replace("timeout: 0.5", "timeout: 5")
    pytester.makefile(".yaml", **{"suites/http": suite})
    pytester.runpytest("suites", "--bench-runs", "8", "--bench-concurrency", "8", *ALLOW_KEY).assert_outcomes(passed=8)
    started = sorted(r["started_at"] for r in records(pytester))
    durations = [r["duration_s"] for r in records(pytester)]
    assert all(d >= 0.3 for d in durations)
    assert started[0] == started[-1] or len(set(started)) <= 2, "cases did not start together"


@pytest.mark.parametrize("limit", ["pause", "rpm", "concurrency"])
def test_a_model_waiting_for_its_limits_does_not_hold_up_the_other_models(
    pytester: pytest.Pytester, mock_server: MockServer, limit: str
) -> None:
    """While one model waits out a 429's pause, a slow rpm or its one slot, the other model's cases all run.

    Its waiting cases kept their places among the cases in flight, and pytest waited on the first of them: the
    other model's cases started only as the slow model's went, one by one.
    """
    slow, fast = unique("slow"), unique("fast")
    slow_limits = {"pause": "", "rpm": ", rpm: 120", "concurrency": ", concurrency: 1"}[limit]
    if limit == "pause":
        mock_server.add_rule({"model": slow, "status": 429, "retry_after": 1.5, "times": 1})
    elif limit == "concurrency":
        mock_server.add_rule({"model": slow, "delay": 0.2})
    pytester.makefile(".yaml", **{"suites/two": (
        f"providers:\n  local: {{type: openai_compatible, base_url: '{mock_server.openai_base_url}', "
        "max_retries: 0}\n"
        f"models:\n  slow: {{provider: local, id: {slow}{slow_limits}}}\n  fast: {{provider: local, id: {fast}}}\n"
        "matrix:\n  n: [0, 1, 2, 3, 4, 5, 6, 7]\n"
        "tasks:\n  - {id: 'case-{{ n }}', prompt: 'Say {{ n }}'}\n"
        "scorers:\n  - {type: contains, value: Say}\n"
    )})
    before = len(mock_server.requests)
    pytester.runpytest("suites", "--bench-concurrency", "2").assert_outcomes(passed=16)
    arrived = [r["model"] for r in mock_server.requests[before:]]
    slow_calls = [i for i, model in enumerate(arrived) if model == slow]
    # the fast model's 8 calls all came before the slow one's third (its first after a 1.5 s pause, or after
    # two 0.5 s intervals of its rpm, or two 0.2 s answers one at a time)
    assert max(i for i, model in enumerate(arrived) if model == fast) < slow_calls[2], arrived


def test_a_cases_judge_goes_ahead_of_the_first_calls_of_later_cases(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    """Calls waiting for one endpoint's slot go oldest case first.

    First come, first served, every case's judge queued behind the first calls of all the cases started after it:
    six cases on one slot made six answers, then six verdicts, and no case finished before the seventh call.
    """
    model, judge = unique("m"), unique("judge")
    mock_server.add_rule({"model": model, "delay": 0.05})
    mock_server.add_rule({"model": judge, "delay": 0.05, "reply": "Score: 7"})
    pytester.makefile(".yaml", **{"suites/judged": (
        f"providers:\n  mock: {{type: openai_compatible, base_url: '{mock_server.openai_base_url}', "
        "max_retries: 0, concurrency: 1}\n"
        f"models:\n  m: {{provider: mock, id: {model}}}\n"
        f"judges:\n  j: {{provider: mock, id: {judge}}}\n"
        "matrix:\n  n: [1, 2, 3, 4, 5, 6]\n"
        "tasks:\n  - {id: 'q-{{ n }}', prompt: 'Question {{ n }}'}\n"
        "scorers:\n  - {name: J, type: llm_judge, judge: j, prompt: 'Rate: {{ answer }}',"
        " parse: {regex: 'Score: (\\d+)'}}\n"
        "pass_threshold: 0\n"
    )})
    before = len(mock_server.requests)
    pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-concurrency", "6").assert_outcomes(passed=6)
    arrived = [(r["model"], r["body"]["messages"][-1]["content"]) for r in mock_server.requests[before:]]
    first_verdict = next(i for i, (who, _) in enumerate(arrived) if who == judge)
    assert "Question 1" in arrived[first_verdict][1], arrived
    assert first_verdict < 3, arrived  # after case 1's answer and the call that took the slot meanwhile
    # every verdict comes before the answer of any case two or more after its own
    answers = [i for i, (who, _) in enumerate(arrived) if who == model]
    verdicts = [i for i, (who, _) in enumerate(arrived) if who == judge]
    assert all(verdict < answers[min(n + 2, 5)] or n >= 4 for n, verdict in enumerate(verdicts)), arrived


def test_a_case_with_parallel_judges_on_limited_models_does_not_stop_the_run(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    """A panel's two judges on limited models: the run stopped for good.

    One judge's call took the case's place back while the other's held a bucket's turn, behind cases that held
    places while queued for that turn.
    """
    model, judge = unique("m"), unique("judge")
    mock_server.add_rule({"model": judge, "reply": "Score: 7"})
    pytester.makefile(".yaml", **{"suites/panel": (
        f"providers:\n  mock: {{type: openai_compatible, base_url: '{mock_server.openai_base_url}', "
        "max_retries: 0}\n"
        f"models:\n  m: {{provider: mock, id: {model}}}\n"
        f"judges:\n  j1: {{provider: mock, id: {judge}, concurrency: 1}}\n"
        f"  j2: {{provider: mock, id: {judge}, rpm: 120}}\n"
        "matrix:\n  n: [1, 2, 3, 4, 5, 6, 7, 8, 9, 10]\n"
        "tasks:\n  - id: 'q-{{ n }}'\n    prompt: 'Question {{ n }}'\n    scorers:\n"
        "      - {name: P, type: llm_judge_panel, judges: [j1, j2], prompt: 'Rate: {{ answer }}',"
        " parse: {regex: 'Score: (\\d+)'}}\n"
        "pass_threshold: 0\n"
    )})
    result = pytester.runpytest_subprocess("suites", "-p", "no:cacheprovider", "--bench-concurrency", "3",
                                           timeout=60)
    result.assert_outcomes(passed=10)


def test_a_short_pause_does_not_starve_its_cases_past_their_wall_budget(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    """With --bench-case-timeout, a case keeps its place while it waits for a limit.

    Giving it up started cases ahead to wait out a 1 s pause, and then each waited for the others' calls: their
    budget ran out queuing.
    """
    model = unique("paused")
    mock_server.add_rule({"model": model, "status": 429, "retry_after": 1, "times": 1})
    mock_server.add_rule({"model": model, "delay": 0.3})
    rows = ", ".join(str(n) for n in range(20))
    pytester.makefile(".yaml", **{"suites/one": (
        f"providers:\n  mock: {{type: openai_compatible, base_url: '{mock_server.openai_base_url}', max_retries: 0}}\n"
        f"models:\n  a: {{provider: mock, id: {model}}}\n"
        f"matrix:\n  n: [{rows}]\n"
        "tasks:\n  - {id: 'q-{{ n }}', prompt: 'Q {{ n }}'}\n"
    )})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-concurrency", "2",
                                "--bench-case-timeout", "2.5")
    result.assert_outcomes(passed=20)
