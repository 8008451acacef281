"""Bounds of a run: the session budget (dollars, tokens), the per-case wall budget, the per-call timeout, prices."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from bench_plugin.mock.server import MockServer


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def records(pytester: pytest.Pytester) -> list[dict[str, Any]]:
    lines = (pytester.path / "bench-results" / "results.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def sent(server: MockServer, model_id: str) -> int:
    return sum(1 for request in server.requests if request["model"] == model_id)


def suite(server: MockServer, model_id: str, *, model_extra: str = "", task: str = "prompt: 'Say hello to Ada'",
          timeout: float = 5) -> str:
    return f"""\
providers:
  mock: {{type: openai_compatible, base_url: '{server.openai_base_url}', timeout: {timeout}, max_retries: 0}}
models:
  m: {{provider: mock, id: {model_id}{model_extra}}}
tasks:
  - {{id: greet, {task}}}
scorers:
  - {{type: contains, value: Ada}}
"""


DOLLAR_A_TOKEN = ", pricing: {input_per_mtok: 1000000, output_per_mtok: 1000000}"


def priced_suite(pytester: pytest.Pytester, server: MockServer) -> str:
    """Write a suite whose model costs a dollar a token; return its model id."""
    model_id = unique("priced")
    pytester.makefile(".yaml", **{"suites/budget": suite(server, model_id, model_extra=DOLLAR_A_TOKEN)})
    return model_id


def test_spent_dollar_budget_starts_no_new_case_and_reports_the_rest_as_not_run(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    model_id = priced_suite(pytester, mock_server)
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-runs", "5", "--bench-concurrency", "1",
                                "--bench-budget-usd", "5", "-rs")
    result.assert_outcomes(passed=1, skipped=4)
    result.stdout.fnmatch_lines(["*not run: the session budget of $5 is spent*--bench-budget-usd*"])
    found = records(pytester)
    assert len(found) == 5 and sent(mock_server, model_id) == 1
    ran, *not_run = sorted(found, key=lambda r: r["status"] != "passed")
    assert ran["usage"]["cost_usd"] > 5 and ran["usage"]["cost_source"] == "suite"
    assert all(r["status"] == "skipped" and r["error"]["kind"] == "budget" for r in not_run)
    # the files say why, as the terminal does (report.md said only "4 skipped")
    summary = json.loads((pytester.path / "bench-results" / "summary.json").read_text())
    assert summary["budget"]["not_run"] == 4 and "the session budget of $5 is spent" in summary["budget"]["reason"]
    report = (pytester.path / "bench-results" / "report.md").read_text()
    assert "**4 cases were not run**: a budget was spent. The first refused: the session budget of $5 is spent" \
        in report and "(spent when it was refused; cases already running finished after it)." in report
    assert summary["budget"]["budgets"] == 1


def test_spent_token_budget_starts_no_new_case(pytester: pytest.Pytester, mock_server: MockServer) -> None:
    model_id = unique("tokens")
    pytester.makefile(".yaml", **{"suites/budget": suite(mock_server, model_id)})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-runs", "3", "--bench-concurrency", "1",
                                "--bench-budget-tokens", "1")
    result.assert_outcomes(passed=1, skipped=2)
    assert sent(mock_server, model_id) == 1
    reasons = {r["reason"] for r in records(pytester) if r["status"] == "skipped"}
    assert len(reasons) == 1 and "tokens is spent" in reasons.pop()


def test_case_wall_budget_ends_a_slow_case_keeping_the_turns_answered(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    model_id = unique("slow")
    mock_server.add_rule({"model": model_id, "match": "second", "delay": 5})
    task = "turns: ['Say first to Ada', 'Say second to Ada']"
    pytester.makefile(".yaml", **{"suites/budget": suite(mock_server, model_id, task=task, timeout=30)})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-case-timeout", "0.5")
    result.assert_outcomes(errors=1)
    (record,) = records(pytester)
    assert record["error"]["kind"] == "case_timeout" and record["error"]["partial"] is True
    assert "wall budget of 0.5 s" in record["reason"]
    assert [t["answer"] for t in record["turns"]] == ["echo: Say first to Ada"]


def test_call_timeout_option_overrides_the_suites(pytester: pytest.Pytester, mock_server: MockServer) -> None:
    model_id = unique("late")
    mock_server.add_rule({"model": model_id, "delay": 2})
    pytester.makefile(".yaml", **{"suites/budget": suite(mock_server, model_id, timeout=30)})
    pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-timeout", "0.2").assert_outcomes(errors=1)
    (record,) = records(pytester)
    assert record["error"]["kind"] == "timeout" and "timed out after 0.2 s" in record["reason"]


def test_limit_option_overrides_the_suites_retries(pytester: pytest.Pytester, mock_server: MockServer) -> None:
    model_id = unique("flaky")
    mock_server.add_rule({"model": model_id, "status": 502, "times": 2})
    pytester.makefile(".yaml", **{"suites/budget": suite(mock_server, model_id)})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-rate-limit", "mock:max_retries=2,rpm=600")
    result.assert_outcomes(passed=1)
    (record,) = records(pytester)
    assert record["usage"]["attempts"] == 3


def test_a_model_without_a_known_price_says_so(pytester: pytest.Pytester, mock_server: MockServer) -> None:
    model_id = unique("unpriced")
    pytester.makefile(".yaml", **{"suites/budget": suite(mock_server, model_id)})
    pytester.runpytest("suites", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    (record,) = records(pytester)
    assert record["usage"]["cost_usd"] is None and record["usage"]["input_tokens"] > 0
    assert f"no known price for '{model_id}'" in record["usage"]["cost_note"]
    assert "declare pricing:" in record["call_log"][0]["cost_note"]


def test_a_dollar_budget_stops_at_a_paid_endpoint_it_cannot_price(
    pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    model_id = unique("new-model")
    # the mock server taken for a paid API (not loopback) that serves a model the price table does not know
    monkeypatch.setattr("bench_plugin.calls.pricing._is_local", lambda base_url: False)  # pytester runs in this process
    pytester.makefile(".yaml", **{"suites/budget": suite(mock_server, model_id)})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-runs", "4", "--bench-concurrency", "1",
                                "--bench-budget-usd", "5", "-rs")
    result.assert_outcomes(passed=1, skipped=3)
    assert sent(mock_server, model_id) == 1
    result.stdout.fnmatch_lines([f"*not run: the session budget of $5 cannot count calls without a price: no known "
                                 f"price for '{model_id}' at {mock_server.openai_base_url}; declare pricing: for the "
                                 "model in the suite (or bound the run with --bench-budget-tokens*"])
    # without a dollar budget nothing stops: the price is only unknown
    pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-runs", "4", "--bench-cache", "off",
                       "--bench-budget-tokens", "1000").assert_outcomes(passed=4)


def test_a_paid_model_behind_a_local_proxy_is_priced_and_bounded_by_the_dollar_budget(
    pytester: pytest.Pytester
) -> None:
    """A LiteLLM proxy on this machine: a model only OpenAI serves costs what OpenAI charges, budget and all."""
    with MockServer() as proxy:  # its own server: the model id is a real one, counted on this server alone
        pytester.makefile(".yaml", **{"suites/budget": suite(proxy, "gpt-4o-mini")})
        result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-runs", "4", "--bench-concurrency",
                                    "1", "--bench-budget-usd", "0.000001", "-rs")
        result.assert_outcomes(passed=1, skipped=3)
        assert sent(proxy, "gpt-4o-mini") == 1
    (ran,) = [r for r in records(pytester) if r["status"] == "passed"]
    assert ran["usage"]["cost_usd"] > 0 and "openai's price, through a proxy" in ran["usage"]["cost_source"]
    result.stdout.fnmatch_lines(["*not run: the session budget of $1e-06 is spent*"])


def test_a_cost_that_leaves_cases_out_says_so_in_every_report_and_under_the_budget(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    model_id = unique("unpriced")
    pytester.makefile(".yaml", **{"suites/budget": suite(mock_server, model_id)})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-runs", "2", "--bench-budget-usd", "5")
    result.assert_outcomes(passed=2)
    why = f"no known price for '{model_id}' at {mock_server.openai_base_url} (a local server)"
    # the dollar budget bounded nothing: the terminal says which cases it could not count, and why
    result.stdout.fnmatch_lines([
        f"budget m  2 cases: 2 passed; mean 1.0000; cost unknown (2 of 2 cases without a price: {why}*)",
        f"budget: $0.0000 of $5 spent (--bench-budget-usd); 2 cases had calls without a price, not counted: {why}*",
    ])
    output = pytester.path / "bench-results"
    (row,) = json.loads((output / "summary.json").read_text())["suites"][0]["models"]
    assert row["cost_usd"] is None and row["cost_known_cases"] == 0 and row["judge_cost_missing"] is None
    assert row["cost_missing"]["cases"] == 2 and row["cost_missing"]["note"].startswith(why)
    # a dash in the Cost column is not left to pass for a free run
    sentence = f"Cost of m leaves out 2 of 2 cases, whose calls have no price: {why}"
    assert sentence in (output / "report.md").read_text()
    assert sentence.replace("'", "&#x27;") in (output / "dashboard.html").read_text()


def test_a_priced_run_shows_its_cost_and_the_budget_this_session_spent(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    model_id = priced_suite(pytester, mock_server)
    first = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-run", "r", "--bench-budget-usd", "500",
                               "--bench-budget-tokens", "1000")
    first.assert_outcomes(passed=1)
    (record,) = records_of(pytester, "r")
    usd, tokens = record["usage"]["cost_usd"], record["usage"]["input_tokens"] + record["usage"]["output_tokens"]
    first.stdout.fnmatch_lines([f"budget m  1 case: 1 passed; mean 1.0000; cost ${usd:.4f}",
                                f"budget: ${usd:.4f} of $500 spent (--bench-budget-usd)",
                                f"budget: {tokens} of 1000 tokens used (--bench-budget-tokens)"])
    summary = json.loads((pytester.path / "bench-results" / "runs" / "r" / "summary.json").read_text())
    assert summary["suites"][0]["models"][0]["cost_missing"] is None
    # the same named run again: its case is reused, not paid for again, and this session spent nothing
    again = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-run", "r", "--bench-budget-usd", "500",
                               "--bench-budget-tokens", "1000")
    again.assert_outcomes(passed=1)
    again.stdout.fnmatch_lines([f"budget m  1 case: 1 passed; mean 1.0000; cost ${usd:.4f}",
                                "budget: $0.0000 of $500 spent (--bench-budget-usd)",
                                "budget: 0 of 1000 tokens used (--bench-budget-tokens)"])
    assert sent(mock_server, model_id) == 1


def records_of(pytester: pytest.Pytester, run: str) -> list[dict[str, Any]]:
    lines = (pytester.path / "bench-results" / "runs" / run / "results.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bench-rate-limit", "openai"], "--bench-rate-limit: expected NAME:KEY=VALUE*"),
        (["--bench-rate-limit", "openai:rpm=0"],
         "--bench-rate-limit: 'openai:rpm=0': rpm expects a number > 0, got '0'"),
        (["--bench-rate-limit", "openai:speed=2"],
         "--bench-rate-limit: 'openai:speed=2': expected KEY=VALUE with KEY one of*"),
        (["--bench-rate-limit", "openai:concurrency=1.5"], "*concurrency expects a whole number > 0*"),
        (["--bench-model-rate-limit", "openai:gpt-4o:timeout=3"],
         "--bench-model-rate-limit: *KEY one of concurrency, rpm, tpm*"),
        (["--bench-budget-usd", "0"], "--bench-budget-usd: expected a number > 0, got 0.0"),
        (["--bench-budget-tokens", "0"], "--bench-budget-tokens: expected a whole number >= 1, got 0"),
        (["--bench-circuit-breaker", "-1"], "--bench-circuit-breaker: expected a whole number >= 0, got -1"),
        (["--bench-case-timeout", "-2"], "--bench-case-timeout: expected a number > 0, got -2.0"),
    ],
)
def test_bad_call_options_are_usage_errors(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    result = pytester.runpytest(*args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([f"*{message}"])


def test_model_limit_accepts_a_provider_model_name(pytester: pytest.Pytester, mock_server: MockServer) -> None:
    model_id = unique("named")
    pytester.makefile(".yaml", **{"suites/budget": suite(mock_server, model_id)})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider",
                                "--bench-model-rate-limit", "m:concurrency=1,tpm=6000",
                                "--bench-model-rate-limit", f"mock:{model_id}:rpm=600")
    result.assert_outcomes(passed=1)
