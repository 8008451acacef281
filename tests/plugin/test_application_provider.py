"""``type: application`` against the mock server's application route on 127.0.0.1.

As the model under test, as a judge and as a conversation participant; its templates and paths checked at
collection; its keys kept out of every file; retries on 429/5xx; bodies it cannot read.
"""

from __future__ import annotations

import json
import re
import shutil
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.mock.server import MockServer

KEY = "app-key-" + "Z" * 8 + "LEAKMARK0123456789"
ALLOW = ("--bench-allow-key-env", "BENCH_TEST_APP_KEY")
REPO = Path(__file__).resolve().parents[2]


def provider(server: MockServer, *, request: str = "", response: str = "", extra: str = "") -> str:
    request = request or (
        "      path: /app/ask\n"
        "      headers: {X-App-Key: '{{ env.BENCH_TEST_APP_KEY }}', X-Empty: ''}\n"
        "      body:\n"
        "        query: '{{ prompt }}'\n"
        "        model: '{{ model.id }}'\n"
        "        session: 'case-{{ vars.city | default(\"none\") }}'\n"
        "        temperature: '{{ params.temperature | default(none) }}'\n"
        "        history: '{{ messages }}'\n"
    )
    response = response or (
        "      output: result.answer\n"
        "      input_tokens: meta.tokens.prompt\n"
        "      output_tokens: meta.tokens.completion\n"
    )
    return (
        "providers:\n"
        "  app:\n"
        "    type: application\n"
        f"    base_url: '{server.url}'\n"
        "    env: [BENCH_TEST_APP_KEY]\n"
        "    timeout: 2\n"
        "    max_retries: 2\n"
        f"{extra}"
        "    request:\n" + request +
        "    response:\n" + response
    )


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def records(pytester: pytest.Pytester) -> list[dict[str, Any]]:
    path = pytester.path / "bench-results" / "results.jsonl"
    return [json.loads(line) for line in path.read_text().splitlines()]


def sent(server: MockServer, model_id: str) -> list[dict[str, Any]]:
    return [r for r in server.requests if r["model"] == model_id and r["path"] == "/app/ask"]


def candidate_suite(server: MockServer, model_id: str, **kwargs: str) -> str:
    return provider(server, **kwargs) + (
        f"models:\n  rag: {{provider: app, id: {model_id}, temperature: 0.25}}\n"
        "tasks:\n  - {id: capital, vars: {city: Paris}, system: Answer briefly., prompt: 'What is the capital "
        "of France?'}\n"
        "scorers:\n  - {type: contains, value: Paris}\n"
    )


def test_an_application_is_the_model_under_test(
    pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCH_TEST_APP_KEY", KEY)
    model_id = unique("rag")
    mock_server.add_rule({"model": model_id, "path": "application", "match": r"capital of (\w+)",
                          "reply": r"Paris is the capital of \1."})
    pytester.makefile(".yaml", **{"suites/app": candidate_suite(mock_server, model_id)})
    pytester.runpytest("suites", "-p", "no:cacheprovider", *ALLOW).assert_outcomes(passed=1)
    (request,) = sent(mock_server, model_id)
    body = request["body"]
    assert body["query"] == "What is the capital of France?" and body["session"] == "case-Paris"
    assert body["temperature"] == 0.25  # one {{ expression }} keeps its type
    assert [m["role"] for m in body["history"]] == ["system", "user"]
    assert request["headers"]["x-app-key"] == KEY and "x-empty" not in request["headers"]
    assert request["headers"]["content-type"] == "application/json"
    (record,) = records(pytester)
    assert record["response"] == "Paris is the capital of France."
    assert (record["call_log"][0]["input_tokens"], record["call_log"][0]["output_tokens"]) == (6, 6)


def test_a_second_run_answers_from_the_cache_and_variables_are_part_of_the_key(
    pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCH_TEST_APP_KEY", KEY)
    model_id = unique("cached")
    suite = provider(mock_server) + (
        f"models:\n  rag: {{provider: app, id: {model_id}}}\n"
        "tasks:\n  - {id: a, vars: {city: Paris}, prompt: Same question}\n"
        "  - {id: b, vars: {city: Rome}, prompt: Same question}\n"
        "scorers:\n  - {type: contains, value: echo}\n"
    )
    pytester.makefile(".yaml", **{"suites/app": suite})
    on = ("--bench-cache", "on")
    pytester.runpytest("suites", "-p", "no:cacheprovider", *ALLOW, *on).assert_outcomes(passed=2)
    assert len(sent(mock_server, model_id)) == 2  # the same messages, other variables: two calls
    pytester.runpytest("suites", "-p", "no:cacheprovider", *ALLOW, *on).assert_outcomes(passed=2)
    assert len(sent(mock_server, model_id)) == 2
    assert all(r["call_log"][0]["cache"] == "hit" for r in records(pytester))


def test_get_with_a_query_and_a_text_body_are_sent_as_written(
    pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCH_TEST_APP_KEY", KEY)
    health = provider(mock_server, request="      method: get\n      path: /health\n      query: {q: '{{ prompt }}'}\n",
                      response="      template: 'server says {{ json.status }} ({{ status }})'\n")
    pytester.makefile(".yaml", **{"suites/health": health + (
        "models:\n  probe: {provider: app}\n"
        "tasks:\n  - {id: up, prompt: are you there}\n"
        "scorers:\n  - {type: equals, value: server says ok (200)}\n")})
    text = provider(mock_server, request="      path: /app/ask\n      body: '{{ prompt }} (as text)'\n",
                    response="      output: result.answer\n")
    pytester.makefile(".yaml", **{"suites/text": text + (
        "models:\n  plain: {provider: app}\n"
        "tasks:\n  - {id: ask, prompt: plain words}\n"
        "scorers:\n  - {type: equals, value: 'echo: plain words (as text)'}\n")})
    pytester.runpytest("suites", "-p", "no:cacheprovider", *ALLOW).assert_outcomes(passed=2)
    probe = [r for r in mock_server.requests if r["method"] == "GET" and r["path"] == "/health"]
    assert probe


def test_an_application_judges(
    pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCH_TEST_APP_KEY", KEY)
    judge_id = unique("grader")
    mock_server.add_rule({"model": judge_id, "path": "application", "reply": "Fine answer. Rating: [[9]]"})
    suite = provider(mock_server) + (
        "models:\n  sim: {provider: scripted, script: [{reply: Bonjour Ada}]}\n"
        f"judges:\n  grader: {{provider: app, id: {judge_id}}}\n"
        "tasks:\n  - {id: greet, prompt: Greet Ada in French}\n"
        "scorers:\n  - {name: J, type: llm_judge, judge: grader, prompt: 'Rate this answer: {{ answer }}'}\n"
    )
    pytester.makefile(".yaml", **{"suites/app": suite})
    pytester.runpytest("suites", "-p", "no:cacheprovider", *ALLOW).assert_outcomes(passed=1)
    (request,) = sent(mock_server, judge_id)
    assert "Bonjour Ada" in request["body"]["query"]
    (record,) = records(pytester)
    assert record["usage"]["judge"]["calls"] == 1


def test_an_application_takes_a_seat_in_a_conversation(
    pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCH_TEST_APP_KEY", KEY)
    seat_id = unique("seat")
    mock_server.add_rule({"model": seat_id, "path": "application", "match": r"round (\d)", "reply": r"App heard \1"})
    suite = provider(mock_server) + (
        "models:\n"
        "  sim: {provider: scripted, script: [{reply: 'round {{ round }} from the explorer'}]}\n"
        f"  helper: {{provider: app, id: {seat_id}, default: false}}\n"
        "tasks:\n  - id: talk\n    conversation:\n      mode: broadcast\n"
        "      participants: [{name: Explorer}, {name: Helper, model: helper}]\n      max_turns: 2\n"
        "    prompt: unused\n"
        "    scorers: [{type: contains, value: 'Helper: App heard 2'}]\n"
    )
    pytester.makefile(".yaml", **{"suites/app": suite.replace("    prompt: unused\n", "")})
    pytester.runpytest("suites", "-p", "no:cacheprovider", *ALLOW).assert_outcomes(passed=1)
    assert [r["body"]["query"] for r in sent(mock_server, seat_id)] == ["round 1 from the explorer",
                                                                        "round 2 from the explorer"]


def test_429_and_5xx_are_retried(
    pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCH_TEST_APP_KEY", KEY)
    model_id = unique("flaky")
    mock_server.add_rule({"model": model_id, "path": "application", "status": 429, "retry_after": 0, "times": 1})
    mock_server.add_rule({"model": model_id, "path": "application", "status": 503, "times": 1})
    mock_server.add_rule({"model": model_id, "path": "application", "reply": "Paris"})
    pytester.makefile(".yaml", **{"suites/app": candidate_suite(mock_server, model_id)})
    pytester.runpytest("suites", "-p", "no:cacheprovider", *ALLOW).assert_outcomes(passed=1)
    assert len(sent(mock_server, model_id)) == 3
    (record,) = records(pytester)
    assert record["usage"]["attempts"] == 3


@pytest.mark.parametrize(
    ("rule", "response", "expected"),
    [
        ({"body": "<html>Bad gateway</html>"}, "", "malformed response: the application's answer is not JSON"),
        ({"reply": "fine"}, "      output: result.missing\n",
         "malformed response: response path $.result.missing finds nothing: $.result has no key 'missing'"),
        ({"body": {"result": {"answer": "x"}, "meta": {"tokens": {"prompt": "many", "completion": 1}}}}, "",
         "response path $.meta.tokens.prompt is \"many\", expected a token count"),
    ],
    ids=["not-json", "path-finds-nothing", "count-not-a-number"],
)
def test_an_answer_it_cannot_read_is_an_infrastructure_error(
    pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch,
    rule: dict[str, Any], response: str, expected: str,
) -> None:
    monkeypatch.setenv("BENCH_TEST_APP_KEY", KEY)
    model_id = unique("broken")
    mock_server.add_rule({"model": model_id, "path": "application", **rule})
    suite = candidate_suite(mock_server, model_id, response=response).replace("max_retries: 2", "max_retries: 0")
    pytester.makefile(".yaml", **{"suites/app": suite})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", *ALLOW)
    result.assert_outcomes(errors=1)
    (record,) = records(pytester)
    assert record["error"]["kind"] == "malformed" and expected in record["error"]["message"]


def test_the_key_reaches_no_file_nor_the_terminal(
    pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("BENCH_TEST_APP_KEY", KEY)
    ok_id, failing_id = unique("echoing"), unique("failing")
    echoed = {"X-Echo": KEY}
    mock_server.add_rule({"model": ok_id, "path": "application", "reply": f"Paris, says key {KEY}", "headers": echoed})
    mock_server.add_rule({"model": failing_id, "path": "application", "status": 500, "error": f"bad key {KEY}"})
    suite = provider(mock_server, extra="").replace("max_retries: 2", "max_retries: 0") + (
        f"models:\n  ok: {{provider: app, id: {ok_id}}}\n  failing: {{provider: app, id: {failing_id}}}\n"
        "tasks:\n  - {id: capital, prompt: 'The capital of France, with key {{ \"x\" }}?'}\n"
        "scorers:\n  - {type: contains, value: Paris}\n"
    )
    pytester.makefile(".yaml", **{"suites/app": suite})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", *ALLOW, "--log-level", "DEBUG",
                                "--junitxml", "junit.xml", "--bench-cache", "on")
    result.assert_outcomes(passed=1, errors=1)
    assert any("[REDACTED]" in r["response"] for r in records(pytester))
    marker = b"LEAKMARK0123456789"
    assert marker not in "\n".join(result.outlines + result.errlines).encode()
    for path in pytester.path.rglob("*"):
        if path.is_file():
            assert marker not in _bytes_of(path), path


def _bytes_of(path: Path) -> bytes:
    data = path.read_bytes()
    if data.startswith(b"SQLite format 3\0"):
        connection = sqlite3.connect(f"file:{path}?mode=ro", uri=True)
        try:
            tables = [name for (name,) in connection.execute("SELECT name FROM sqlite_master WHERE type='table'")]
            data += repr([row for t in tables for row in connection.execute(f'SELECT * FROM "{t}"')]).encode()
        finally:
            connection.close()
    return data


def pattern(text: str) -> str:
    return "*" + re.sub(r"([][?])", r"[\1]", text) + "*"


@pytest.mark.parametrize(
    ("request_yaml", "response_yaml", "expected"),
    [
        ("      body: {query: '{{ prompt '}\n", "", "suites/app.yaml:7: providers.app.request.body.query: template "
         "error: unexpected end of template"),
        ("      body: {query: '{{ promt }}'}\n", "", "suites/app.yaml:7: providers.app.request.body.query: template "
         "error: 'promt' is undefined"),
        ("      headers: {X-Key: '{{ env.HOME }}'}\n", "", "suites/app.yaml:7: providers.app.request.headers.X-Key: "
         "the template reads env.HOME, which the provider's env: does not list"),
        ("      path: 'app/ask'\n", "", "suites/app.yaml:7: providers.app.request.path: path 'app/ask' must start "
         "with /"),
        ("      path: /app/ask\n", "      output: result..answer\n",
         "suites/app.yaml:9: providers.app.response.output: path 'result..answer' is not understood"),
        ("      path: /app/ask\n", "      template: '{{ jsn.answer }}'\n", "suites/app.yaml:9: "
         "providers.app.response.template: template error: 'jsn' is undefined"),
    ],
    ids=["syntax", "unknown-name", "env-not-listed", "relative-path", "bad-json-path", "response-name"],
)
def test_a_bad_template_or_path_fails_its_cases_at_its_line(
    pytester: pytest.Pytester, request_yaml: str, response_yaml: str, expected: str
) -> None:
    suite = (
        "providers:\n"
        "  app:\n"
        "    type: application\n"
        "    base_url: http://127.0.0.1:9\n"
        "    env: [BENCH_TEST_APP_KEY]\n"
        "models:\n  rag: {provider: app}\n  sim: {provider: scripted, script: [{reply: hi}]}\n"
        "tasks:\n  - {id: t, prompt: hi}\n"
        "x:\n"
    ).replace("models:", "    request:\n" + request_yaml + "    response:\n" + (response_yaml or
                                                                                  "      output: a\n") + "models:")
    suite = suite.replace("x:\n", "scorers:\n  - {type: contains, value: hi}\n")
    pytester.makefile(".yaml", **{"suites/app": suite})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", *ALLOW)
    result.assert_outcomes(passed=1, failed=1)  # the scripted model's case runs; no call was made for the other
    result.stdout.fnmatch_lines([pattern(expected)])


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("method: POST", "method: FETCH"), "providers.app.request.method"),
        (("base_url: http://127.0.0.1:9", "base_url: ftp://127.0.0.1:9"), "providers.app.base_url"),
    ],
    ids=["method", "scheme"],
)
def test_an_unknown_method_or_scheme_stops_collection_at_its_line(
    pytester: pytest.Pytester, change: tuple[str, str], expected: str
) -> None:
    suite = (
        "providers:\n  app:\n    type: application\n    base_url: http://127.0.0.1:9\n"
        "    request: {method: POST, path: /x}\n"
        "models:\n  rag: {provider: app}\n"
        "tasks:\n  - {id: t, prompt: hi}\n"
        "scorers:\n  - {type: contains, value: hi}\n"
    ).replace(*change)
    pytester.makefile(".yaml", **{"suites/app": suite})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([pattern(f"suites/app.yaml:*{expected}*")])


def test_a_key_variable_the_user_does_not_allow_fails_its_cases(pytester: pytest.Pytester) -> None:
    suite = (
        "providers:\n  app:\n    type: application\n    base_url: http://127.0.0.1:9\n    env: [BENCH_TEST_APP_KEY]\n"
        "    request: {headers: {X-Key: '{{ env.BENCH_TEST_APP_KEY }}'}}\n"
        "models:\n  rag: {provider: app}\n"
        "tasks:\n  - {id: t, prompt: hi}\n"
        "scorers:\n  - {type: contains, value: hi}\n"
    )
    pytester.makefile(".yaml", **{"suites/app": suite})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        pattern("suites/app.yaml:5: providers.app.env[0]: the suite would send the environment variable "
                "BENCH_TEST_APP_KEY to http://127.0.0.1:9"),
    ])


def test_the_world_seat_runs_offline_and_the_transcript_keeps_what_the_world_answered(
    pytester: pytest.Pytester,
) -> None:
    shutil.copytree(REPO / "suites" / "universal_backrooms", pytester.path / "suites" / "universal_backrooms")
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "-k", "world")
    result.assert_outcomes(passed=1)
    (record,) = records(pytester)
    said = [(e.get("speaker"), e["content"]) for e in record["conversation"]["entries"] if e["kind"] == "message"]
    assert said[:2] == [("Sim 1", "ls"), ("World 2", "README.txt\njournal/\nmap.txt")]
    assert said[-1] == ("World 2", 'Note created: note-70c7b976 "room 7"')


def test_a_cli_line_played_by_the_model_under_test_is_refused(pytester: pytest.Pytester) -> None:
    (pytester.path / "suites").mkdir()
    (pytester.path / "suites" / "world.jsonl").write_text('{"system_prompt": "explore"}\n{"cli": true}\n')
    suite = (
        "models:\n  sim: {provider: scripted, script: [{reply: ls}]}\n"
        "tasks:\n  - id: t\n    conversation:\n      mode: broadcast\n      template: world.jsonl\n"
        "      participants: [{name: A}, {name: B}]\n      max_turns: 1\n"
        "    scorers: [{type: contains, value: ls}]\n"
    )
    pytester.makefile(".yaml", **{"suites/world": suite})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([pattern("suites/world.yaml:*participants[1]: participant 2 sits on a cli line")])


@pytest.mark.parametrize(
    ("rule", "change", "kind"),
    [
        ({"delay": 1.5}, ("timeout: 2", "timeout: 0.3"), "timeout"),
        ({"reply": "x" * 5000}, ("timeout: 2", "timeout: 2\n    max_response_bytes: 1024"), "too_large"),
    ],
    ids=["slow", "too-long"],
)
def test_a_slow_or_endless_answer_is_bounded_like_any_provider(
    pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch,
    rule: dict[str, Any], change: tuple[str, str], kind: str,
) -> None:
    monkeypatch.setenv("BENCH_TEST_APP_KEY", KEY)
    model_id = unique("bounded")
    mock_server.add_rule({"model": model_id, "path": "application", **rule})
    suite = candidate_suite(mock_server, model_id).replace("max_retries: 2", "max_retries: 0").replace(*change)
    pytester.makefile(".yaml", **{"suites/app": suite})
    pytester.runpytest("suites", "-p", "no:cacheprovider", *ALLOW).assert_outcomes(errors=1)
    (record,) = records(pytester)
    assert record["error"]["kind"] == kind


def test_a_listed_key_variable_that_is_unset_is_an_auth_error(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    model_id = unique("nokey")
    pytester.makefile(".yaml", **{"suites/app": candidate_suite(mock_server, model_id)})
    pytester.runpytest("suites", "-p", "no:cacheprovider", *ALLOW).assert_outcomes(errors=1)
    (record,) = records(pytester)
    assert record["error"]["kind"] == "auth"
    expected = "environment variable BENCH_TEST_APP_KEY is not set (the env: of providers.app)"
    assert expected in record["error"]["message"]
    assert sent(mock_server, model_id) == []
