"""Faults on the wire, end to end: every case ends scored or classified, retries count, partial work is kept.

The mock server injects 429s (with Retry-After), 500s, timeouts and malformed bodies at random (seeded);
the circuit breaker, --bench-fail-fast, the proxies' retry headers and the partial transcripts of
multi-turn cases, conversations and agent runs are checked on records and on the server's request log.
"""

from __future__ import annotations

import json
import uuid
from collections import Counter
from collections.abc import Iterator
from typing import Any

import pytest

from bench_plugin.mock.server import MockServer

CASES = 500


@pytest.fixture
def server() -> Iterator[MockServer]:
    """A server of the test's own, its random faults seeded."""
    with MockServer(seed=20260124) as server:
        yield server


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def records(pytester: pytest.Pytester, output: str = "bench-results") -> list[dict[str, Any]]:
    lines = (pytester.path / output / "results.jsonl").read_text().splitlines()
    return [json.loads(line) for line in lines]


def sent(server: MockServer, model_id: str) -> int:
    return sum(1 for request in server.requests if request["model"] == model_id)


def number_suite(server: MockServer, model_id: str, judge_id: str, *, timeout: float, retries: int) -> str:
    return f"""\
providers:
  mock: {{type: openai_compatible, base_url: '{server.openai_base_url}', timeout: {timeout}, max_retries: {retries}}}
models:
  m: {{provider: mock, id: {model_id}}}
judges:
  grader: {{provider: mock, id: {judge_id}}}
tasks:
  - id: "n-{{{{ n }}}}"
    dataset: {{file: numbers.jsonl}}
    prompt: "Say {{{{ n }}}}"
scorers:
  - {{name: C, type: contains, value: "{{{{ n }}}}"}}
  - {{name: F, type: contains, value: "5"}}
  - {{name: J, type: llm_judge, judge: grader, prompt: "Rate {{{{ answer }}}}", scale: [1, 10]}}
composite: "0.5*C + 0.3*F + 0.2*J"
pass_threshold: 0.9
"""


def fault_rules(model_id: str) -> list[dict[str, Any]]:
    """10 % 429 with Retry-After, 5 % 500, 2 % timeouts, 2 % malformed bodies (each share of all requests)."""
    return [
        {"model": model_id, "probability": 0.10, "status": 429, "retry_after": "0.05"},
        {"model": model_id, "probability": 0.05 / 0.90, "status": 500},
        # far past the client's 1 s, so that a starved event loop still sees a timeout, not a late answer
        {"model": model_id, "probability": 0.02 / 0.85, "delay": 30.0},
        {"model": model_id, "probability": 0.02 / 0.83, "body": "<html>502 Bad Gateway</html>"},
    ]


@pytest.mark.slow
def test_faulty_run_scores_or_classifies_every_case_like_a_clean_run(
    pytester: pytest.Pytester, server: MockServer
) -> None:
    model_id, judge_id = unique("faulty"), unique("judge")
    pytester.makefile(".jsonl", **{"suites/numbers": "\n".join(json.dumps({"n": n}) for n in range(CASES))})
    pytester.makefile(".yaml", **{"suites/numbers": number_suite(server, model_id, judge_id, timeout=1.0, retries=6)})
    judge_reply = {"model": judge_id, "reply": "Rating: [[8]]"}
    server.add_rule(judge_reply)
    args = ("suites", "-p", "no:cacheprovider", "--bench-concurrency", "32", "--bench-html", "off", "--tb=no", "-rN")

    clean = pytester.runpytest(*args, "--bench-output", "clean")
    with_five = sum("5" in str(n) for n in range(CASES))  # F passes: the composite reaches the threshold
    clean.assert_outcomes(passed=with_five, failed=CASES - with_five)
    expected = {r["nodeid"]: r["composite"] for r in records(pytester, "clean")}

    server.reset()
    for rule in [*fault_rules(model_id), *fault_rules(judge_id), judge_reply]:
        server.add_rule(rule)
    faulty = pytester.runpytest(*args, "--bench-output", "faulty")
    found = records(pytester, "faulty")

    outcomes = faulty.parseoutcomes()
    assert sum(outcomes.get(key, 0) for key in ("passed", "failed", "errors")) == CASES
    assert len(found) == CASES and {r["nodeid"] for r in found} == set(expected)  # none lost, none twice
    statuses = Counter(r["status"] for r in found)
    assert set(statuses) <= {"passed", "failed", "error"}
    scored = [r for r in found if r["status"] != "error"]
    assert scored and all(r["composite"] == expected[r["nodeid"]] for r in scored)
    assert all(r["error"]["kind"] in ("http_429", "http_500", "timeout", "malformed") for r in found
               if r["status"] == "error")
    # every request the server saw is an attempt some record counts, the judges' included
    candidate_attempts = sum(r["usage"]["attempts"] for r in found)
    judge_attempts = sum(r["usage"]["judge"]["attempts"] for r in found)
    assert candidate_attempts == sent(server, model_id) > CASES
    assert judge_attempts == sent(server, judge_id) > len(scored)
    assert sum(entry["attempts"] for r in found for entry in r["call_log"]) == candidate_attempts + judge_attempts
    retried = [r for r in found if r["usage"]["attempts"] > 1]
    assert len(retried) > CASES // 20


def http_suite(server: MockServer, model_id: str, *, retries: int = 3, extra: str = "") -> str:
    return f"""\
providers:
  mock: {{type: openai_compatible, base_url: '{server.openai_base_url}', timeout: 5, max_retries: {retries}}}
models:
  m: {{provider: mock, id: {model_id}}}
tasks:
  - {{id: greet, prompt: 'Say hello to Ada'}}
scorers:
  - {{type: contains, value: Ada}}
{extra}"""


def test_errored_case_records_every_attempt_the_server_saw(pytester: pytest.Pytester, server: MockServer) -> None:
    model_id = unique("down")
    server.add_rule({"model": model_id, "status": 503})
    pytester.makefile(".yaml", **{"suites/http": http_suite(server, model_id, retries=2)})
    pytester.runpytest("suites", "-p", "no:cacheprovider").assert_outcomes(errors=1)
    (record,) = records(pytester)
    assert sent(server, model_id) == 3
    assert record["usage"]["attempts"] == 3 and record["usage"]["calls"] == 1
    assert record["error"]["attempts"] == 3
    assert record["error"]["call"] == {"purpose": "candidate", "model": "m", "turn": 1, "index": 1}
    assert record["call_log"][0]["error"]["kind"] == "http_503"


@pytest.mark.parametrize(
    "headers",
    [
        {"llm_provider-retry-after": "0.2"},
        {"retry-after-ms": "200"},
        {"x-ratelimit-remaining-requests": "0", "x-ratelimit-reset-requests": "200ms"},
        {"anthropic-ratelimit-requests-remaining": "0", "anthropic-ratelimit-requests-reset": "0.2"},
    ],
    ids=["litellm-proxy", "retry-after-ms", "openai-reset", "anthropic-reset"],
)
def test_retry_headers_of_proxies_and_rate_limits_are_honoured(
    pytester: pytest.Pytester, server: MockServer, headers: dict[str, str]
) -> None:
    model_id = unique("limited")
    server.add_rule({"model": model_id, "status": 429, "headers": headers, "times": 1})
    pytester.makefile(".yaml", **{"suites/http": http_suite(server, model_id, retries=0)})
    pytester.runpytest("suites", "-p", "no:cacheprovider").assert_outcomes(passed=1)
    (record,) = records(pytester)
    assert record["usage"]["attempts"] == 2  # a rate limit is waited out even with max_retries: 0
    assert record["finish_reason"] == "stop" and record["response_id"].startswith("chatcmpl-mock-")


def test_circuit_breaker_ends_a_failing_providers_cases_at_once(
    pytester: pytest.Pytester, server: MockServer
) -> None:
    model_id = unique("broken")
    server.add_rule({"model": model_id, "status": 500})
    pytester.makefile(".yaml", **{"suites/http": http_suite(server, model_id, retries=3)})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-runs", "30", "--bench-concurrency", "2",
                                "--bench-circuit-breaker", "4")
    result.assert_outcomes(errors=30)
    kinds = Counter(r["error"]["kind"] for r in records(pytester))
    assert kinds["circuit_open"] >= 25 and set(kinds) <= {"circuit_open", "http_500"}
    assert sent(server, model_id) < 4 + 2 * 4  # the threshold, plus what was in flight when it opened
    opened = next(r for r in records(pytester) if r["error"]["kind"] == "circuit_open")
    assert "4 consecutive infrastructure failures" in opened["error"]["message"]


def test_a_misspelt_model_ends_its_own_cases_and_the_endpoints_other_models_go_on(
    pytester: pytest.Pytester, server: MockServer
) -> None:
    typo, good = unique("typo"), unique("good")
    server.add_rule({"model": typo, "status": 404, "error": f"The model `{typo}` does not exist"})
    suite = http_suite(server, typo).replace("models:\n", f"models:\n  g: {{provider: mock, id: {good}}}\n")
    pytester.makefile(".yaml", **{"suites/http": suite})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-runs", "30", "--bench-concurrency", "2",
                                "--bench-circuit-breaker", "4")
    result.assert_outcomes(errors=30, passed=30)
    kinds = Counter(r["error"]["kind"] for r in records(pytester) if r["model"] == "m")
    assert kinds["circuit_open"] >= 25 and set(kinds) <= {"circuit_open", "http_404"}
    assert sent(server, typo) < 4 + 2 * 4 and sent(server, good) == 30
    opened = next(r for r in records(pytester) if r["error"] and r["error"]["kind"] == "circuit_open")
    assert f"/{typo}: no more calls: 4 consecutive" in opened["error"]["message"]


def test_an_errored_case_is_reported_without_formatting_a_traceback(
    pytester: pytest.Pytester, server: MockServer
) -> None:
    """For an exception raised in setup, pytest reads every frame's source: 50 ms a case, for a message we replace."""
    model_id = unique("down")
    server.add_rule({"model": model_id, "status": 500})
    pytester.makeconftest("""
        import _pytest._code.code as code

        READ = []
        original = code.TracebackEntry.getsource

        def getsource(self, *args, **kwargs):
            READ.append(self)
            return original(self, *args, **kwargs)

        code.TracebackEntry.getsource = getsource

        def pytest_terminal_summary(terminalreporter):
            terminalreporter.write_line(f"source read for {len(READ)} frames")
    """)
    pytester.makefile(".yaml", **{"suites/http": http_suite(server, model_id, retries=0)})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-runs", "3")
    result.assert_outcomes(errors=3)
    result.stdout.fnmatch_lines(["*HTTP 500*", "*(infrastructure failure, not a model failure: re-run this case)",
                                 "source read for 0 frames"])


def test_fail_fast_stops_retrying_429_and_ends_the_providers_cases(
    pytester: pytest.Pytester, server: MockServer, mock_server: MockServer
) -> None:
    model_id, other_id = unique("limited"), unique("fine")
    server.add_rule({"model": model_id, "status": 429, "retry_after": "1"})
    suite = http_suite(server, model_id)
    other = f"  other: {{type: openai_compatible, base_url: '{mock_server.openai_base_url}'}}\n"
    suite = suite.replace("models:\n", f"{other}models:\n  o: {{provider: other, id: {other_id}}}\n")
    pytester.makefile(".yaml", **{"suites/http": suite})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-runs", "10", "--bench-concurrency", "2",
                                "--bench-fail-fast")
    result.assert_outcomes(errors=10, passed=10)
    kinds = Counter(r["error"]["kind"] for r in records(pytester) if r["model"] == "m")
    assert kinds["http_429"] >= 1 and kinds["http_429"] + kinds["fail_fast"] == 10
    assert sent(server, model_id) <= 2  # no retries, and nothing after the first 429s
    assert sent(mock_server, other_id) == 10  # another endpoint is not affected


def test_multi_turn_failure_keeps_the_turns_answered_before(pytester: pytest.Pytester, server: MockServer) -> None:
    model_id = unique("turns")
    server.add_rule({"model": model_id, "match": "third", "status": 400, "error": "context too long"})
    suite = http_suite(server, model_id).replace(
        "  - {id: greet, prompt: 'Say hello to Ada'}",
        "  - {id: talk, turns: ['Say first', 'Say second', 'Say third']}",
    )
    pytester.makefile(".yaml", **{"suites/http": suite})
    pytester.runpytest("suites", "-p", "no:cacheprovider").assert_outcomes(errors=1)
    (record,) = records(pytester)
    assert record["error"]["partial"] is True and record["error"]["call"]["turn"] == 3
    assert [t["answer"] for t in record["turns"]] == ["echo: Say first", "echo: Say second"]
    assert [m["role"] for m in record["transcript"]] == ["user", "assistant", "user", "assistant", "user"]
    assert record["response"] == "echo: Say second"
    assert record["usage"]["calls"] == 3 and "context too long" in record["reason"]


def test_conversation_failure_keeps_the_log_and_says_whose_call_failed(
    pytester: pytest.Pytester, server: MockServer
) -> None:
    a_id, b_id = unique("alice"), unique("bob")
    server.add_rule({"model": b_id, "every": 2, "status": 400, "error": "refused"})
    pytester.makefile(".yaml", **{"suites/talk": f"""\
providers:
  mock: {{type: openai_compatible, base_url: '{server.openai_base_url}', max_retries: 0}}
models:
  a: {{provider: mock, id: {a_id}}}
  b: {{provider: mock, id: {b_id}, default: false}}
tasks:
  - id: talk
    conversation: {{mode: shared, seed: Hello, participants: [{{name: A}}, {{name: B, model: b}}], max_turns: 3}}
"""})
    pytester.runpytest("suites", "-p", "no:cacheprovider").assert_outcomes(errors=1)
    (record,) = records(pytester)
    assert record["error"]["partial"] is True and record["error"]["call"]["model"] == "b"
    entries = record["conversation"]["entries"]
    assert [e["speaker"] for e in entries if e["kind"] == "message"] == ["A", "B", "A"]
    assert entries[-1]["event"] == "error" and "refused" in entries[-1]["content"]
    assert record["conversation"]["ended"] is None
    assert len(record["turns"]) == 2  # the model under test answered twice
    # the reason the terminal, report.md and summary.json show names the call, and the partner's is not a's
    assert record["reason"].endswith("(call 4, b's turn 2; what was said before it is kept)"), record["reason"]
    assert record["usage"]["calls"] == 2


def test_a_template_failing_mid_conversation_keeps_what_was_said_and_counts_the_calls_paid_for(
    pytester: pytest.Pytester,
) -> None:
    """A field no collection check can see (``me.name`` is set after the invite's name renders) fails at run time."""
    pytester.makefile(".yaml", **{"suites/talk": """\
models:
  bot: {provider: scripted, script: [{reply: "Hi. !add_ai guest \\"a poet\\""}]}
  guest: {provider: echo, default: false}
tasks:
  - id: talk
    conversation:
      mode: shared
      seed: hello
      max_turns: 2
      participants: [{name: A}, {name: B}]
      commands: {add_ai: {action: invite, models: [guest], name: "{{ me.name }}"}}
"""})
    pytester.runpytest("suites", "-p", "no:cacheprovider").assert_outcomes(failed=1)
    (record,) = records(pytester)
    assert record["status"] == "invalid" and "add_ai.name: template error" in record["reason"]
    assert record["error"]["partial"] is True
    assert [e["kind"] for e in record["conversation"]["entries"]] == ["seed", "message"]
    assert record["conversation"]["entries"][1]["content"] == 'Hi. !add_ai guest "a poet"'
    assert record["usage"]["calls"] == 1 and record["usage"]["attempts"] == 1
    assert len(record["call_log"]) == 1


def test_a_later_turn_failing_to_render_keeps_the_turns_answered_before(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/turns": """\
models:
  bot: {provider: echo}
variables:
  city: {name: Paris}
tasks:
  - id: talk
    turns: ['Say first', 'Say second', 'Say {{ city.nmae | upper }}']
"""})
    pytester.runpytest("suites", "-p", "no:cacheprovider").assert_outcomes(failed=1)
    (record,) = records(pytester)
    assert record["status"] == "invalid" and record["error"]["partial"] is True
    assert [t["answer"] for t in record["turns"]] == ["Say first", "Say second"]
    assert record["usage"]["calls"] == 2


def test_a_scripted_tool_failing_to_render_keeps_the_agents_steps(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/agent": """\
models:
  bot:
    provider: scripted
    script:
      - {tool_result: "wrote", tool_calls: [{name: look, arguments: {city: Oslo}}]}
      - {tool_calls: [{name: write_file, arguments: {path: a.txt, content: hi}}]}
variables:
  place: {name: Oslo}
tasks:
  - id: act
    prompt: go
    tools:
      - write_file
      - {type: scripted, name: look, responses: [{result: "{{ place.nmae | upper }}"}]}
"""})
    pytester.runpytest("suites", "-p", "no:cacheprovider").assert_outcomes(failed=1)
    (record,) = records(pytester)
    assert record["status"] == "invalid" and record["error"]["partial"] is True
    assert [call["name"] for call in record["agent"]["tool_calls"]] == ["write_file"]
    assert record["agent"]["budget"]["stopped"] == "error: a template of the suite failed"
    assert record["agent"]["files"] == [{"path": "a.txt", "size": 2, "text": "hi"}]
    assert record["usage"]["calls"] == 2


def test_agent_failure_keeps_the_tool_calls_and_the_workspace(pytester: pytest.Pytester, server: MockServer) -> None:
    model_id = unique("agent")
    server.add_rule({"model": model_id, "tool_result": "wrote", "status": 400, "error": "no more"})
    server.add_rule({"model": model_id, "reply": "Writing.",
                     "tool_calls": [{"name": "write_file", "arguments": {"path": "note.md", "content": "hi"}}]})
    pytester.makefile(".yaml", **{"suites/agent": f"""\
providers:
  mock: {{type: openai_compatible, base_url: '{server.openai_base_url}', max_retries: 0}}
models:
  agent: {{provider: mock, id: {model_id}}}
tasks:
  - id: note
    prompt: Write note.md saying hi.
    tools: [write_file]
    scorers:
      - {{name: C, type: completion, checks: [{{file: note.md, contains: hi}}]}}
"""})
    pytester.runpytest("suites", "-p", "no:cacheprovider").assert_outcomes(errors=1)
    (record,) = records(pytester)
    assert record["error"]["partial"] is True and record["error"]["call"]["turn"] == 2
    assert [c["name"] for c in record["agent"]["tool_calls"]] == ["write_file"]
    assert [f["path"] for f in record["agent"]["files"]] == ["note.md"]
    assert record["agent"]["budget"]["stopped"] == "error: a model call failed: http_400"
    assert [m["role"] for m in record["transcript"]] == ["user", "assistant", "tool"]


def refused_suite(server: MockServer, *models: str) -> str:
    entries = "".join(f"  {name}: {{provider: mock, id: {name}}}\n" for name in models)
    return (f"providers:\n  mock: {{type: openai_compatible, base_url: '{server.openai_base_url}', max_retries: 0}}\n"
            f"models:\n{entries}tasks:\n  - {{id: t, prompt: hi}}\n")


def test_a_refused_request_names_its_likely_cause_from_the_servers_answer(
    pytester: pytest.Pytester, server: MockServer
) -> None:
    """A 400 or 422 always said "fix the key, the model id or the suite", whatever the server had said."""
    long, strict, plain = unique("long"), unique("strict"), unique("plain")
    server.add_rule({"model": long, "status": 400, "error": "This model's maximum context length is 8 tokens. However, "
                                                             "your messages resulted in 12 tokens."})
    server.add_rule({"model": strict, "status": 422, "error": "Unexpected fields in the request"})
    server.add_rule({"model": plain, "status": 400, "error": "Bad request"})
    pytester.makefile(".yaml", **{"suites/refused": refused_suite(server, long, strict, plain)})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-model-arg", "top_k=40")
    result.assert_outcomes(errors=3)
    result.stdout.fnmatch_lines([
        "*the request was refused as sent; likely cause: the prompt does not fit the model's context (with "
        "max_tokens for the answer): shorten the prompt, lower max_tokens, or choose a model with a longer context)",
        "*the request was refused as sent; likely cause: the server does not take parameter 'top_k', which "
        "--bench-model-arg sent: leave it out for this model)",
        "*the request was refused as sent; fix the key, the model id or the suite before running it again)",
    ])
