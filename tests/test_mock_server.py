"""The mock LLM server: routes, wire formats, rules and its command line."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from collections.abc import Iterator
from email.utils import parsedate_to_datetime
from pathlib import Path
from typing import Any

import httpx
import pytest

from bench_plugin.mock.server import MockServer, load_rules, main, parse_args


@pytest.fixture
def model() -> str:
    """A model name no other test uses, so rules on the shared server do not collide."""
    return f"mock-{uuid.uuid4().hex[:10]}"


@pytest.fixture
def client() -> Iterator[httpx.Client]:
    with httpx.Client(trust_env=False, timeout=5) as client:
        yield client


def chat(client: httpx.Client, server: MockServer, model: str, text: str = "hello there") -> httpx.Response:
    body = {"model": model, "messages": [{"role": "user", "content": text}]}
    return client.post(f"{server.openai_base_url}/chat/completions", json=body)


def messages(client: httpx.Client, server: MockServer, model: str, **extra: Any) -> httpx.Response:
    body = {
        "model": model,
        "max_tokens": 10,
        "messages": [{"role": "user", "content": "hello there"}],
        **extra,
    }
    return client.post(f"{server.url}/v1/messages", json=body)


def test_openai_route_echoes_last_user_message_with_usage(mock_server, client, model):
    body = {
        "model": model,
        "messages": [
            {"role": "system", "content": "be brief"},
            {"role": "user", "content": "first question"},
            {"role": "assistant", "content": "first answer"},
            {"role": "user", "content": "second question here"},
        ],
    }
    response = client.post(f"{mock_server.openai_base_url}/chat/completions", json=body)

    assert response.status_code == 200
    data = response.json()
    assert data["object"] == "chat.completion"
    assert data["model"] == model
    assert data["id"] and isinstance(data["created"], int)
    assert data["choices"][0]["message"] == {"role": "assistant", "content": "echo: second question here"}
    assert data["choices"][0]["finish_reason"] == "stop"
    assert data["usage"] == {"prompt_tokens": 9, "completion_tokens": 4, "total_tokens": 13}


def test_anthropic_route_answers_in_messages_format(mock_server, client, model):
    response = messages(client, mock_server, model, system="be very brief")

    assert response.status_code == 200
    data = response.json()
    assert data["type"] == "message"
    assert data["role"] == "assistant"
    assert data["content"] == [{"type": "text", "text": "echo: hello there"}]
    assert data["stop_reason"] == "end_turn"
    assert data["usage"] == {"input_tokens": 5, "output_tokens": 3}


def test_models_and_health_routes(mock_server, client, model):
    mock_server.add_rule({"model": model, "reply": "x"})

    assert client.get(f"{mock_server.url}/health").json() == {"status": "ok"}
    listed = client.get(f"{mock_server.openai_base_url}/models").json()
    assert listed["object"] == "list"
    assert model in [entry["id"] for entry in listed["data"]]


@pytest.mark.parametrize(("method", "path"), [("GET", "/nope"), ("POST", "/v1/completions")])
def test_unknown_route_is_404_with_json_error(mock_server, client, method, path):
    response = client.request(method, f"{mock_server.url}{path}", json={} if method == "POST" else None)

    assert response.status_code == 404
    assert path in response.json()["error"]["message"]


def test_post_body_that_is_not_json_is_400(mock_server, client):
    response = client.post(f"{mock_server.openai_base_url}/chat/completions", content=b"not json")

    assert response.status_code == 400
    assert "error" in response.json()


def test_requests_are_recorded_with_lower_case_headers(mock_server, client, model):
    client.post(
        f"{mock_server.openai_base_url}/chat/completions",
        json={"model": model, "messages": []},
        headers={"X-Custom-Thing": "yes"},
    )

    [recorded] = [r for r in mock_server.requests if r["model"] == model]
    assert recorded["path"] == "/v1/chat/completions"
    assert recorded["method"] == "POST"
    assert recorded["headers"]["x-custom-thing"] == "yes"
    assert recorded["body"] == {"model": model, "messages": []}


def test_reply_rule_expands_match_groups(mock_server, client, model):
    mock_server.add_rule(
        {"model": model, "match": r"capital of (\w+)", "reply": r"The capital of \1 is Paris."}
    )

    matched = chat(client, mock_server, model, "what is the capital of France?")
    unmatched = chat(client, mock_server, model, "something else")

    assert matched.json()["choices"][0]["message"]["content"] == "The capital of France is Paris."
    assert unmatched.json()["choices"][0]["message"]["content"] == "echo: something else"


def test_rule_without_match_uses_reply_literally(mock_server, client, model):
    mock_server.add_rule({"model": model, "reply": r"backslash \1 stays"})

    assert (
        chat(client, mock_server, model).json()["choices"][0]["message"]["content"] == r"backslash \1 stays"
    )


def test_path_matcher_limits_a_rule_to_one_wire_format(mock_server, client, model):
    mock_server.add_rule({"model": model, "path": "anthropic", "reply": "from the rule"})

    assert messages(client, mock_server, model).json()["content"][0]["text"] == "from the rule"
    assert chat(client, mock_server, model).json()["choices"][0]["message"]["content"] == "echo: hello there"


def test_times_rule_fires_for_its_first_requests_then_is_skipped(mock_server, client, model):
    mock_server.add_rule({"model": model, "status": 429, "retry_after": 2, "times": 2})

    statuses = [chat(client, mock_server, model) for _ in range(3)]

    assert [r.status_code for r in statuses] == [429, 429, 200]
    assert statuses[0].headers["retry-after"] == "2"
    assert statuses[0].json()["error"]["type"] == "rate_limit_error"


def test_status_rule_answers_an_error_in_the_wire_format_of_the_route(mock_server, client, model):
    mock_server.add_rule({"model": model, "status": 529, "error": "Overloaded"})

    openai = chat(client, mock_server, model)
    anthropic = messages(client, mock_server, model)

    assert openai.status_code == anthropic.status_code == 529
    assert openai.json()["error"]["message"] == "Overloaded"
    assert anthropic.json() == {
        "type": "error",
        "error": {"type": "overloaded_error", "message": "Overloaded"},
    }


def test_401_error_quotes_the_credential_sent(mock_server, client, model):
    mock_server.add_rule({"model": model, "status": 401})

    response = client.post(
        f"{mock_server.openai_base_url}/chat/completions",
        json={"model": model, "messages": []},
        headers={"Authorization": "Bearer sk-test-1234"},
    )

    assert "sk-test-1234" in response.json()["error"]["message"]


def test_body_rule_returns_raw_text(mock_server, client, model):
    mock_server.add_rule({"model": model, "body": "<html>Bad gateway</html>"})
    mock_server.add_rule({"model": model + "-err", "body": "oops", "status": 502})

    assert chat(client, mock_server, model).status_code == 200
    assert chat(client, mock_server, model).text == "<html>Bad gateway</html>"
    assert chat(client, mock_server, model + "-err").status_code == 502


def test_headers_rule_adds_response_headers(mock_server, client, model):
    mock_server.add_rule({"model": model, "headers": {"retry-after-ms": 1500}})

    assert chat(client, mock_server, model).headers["retry-after-ms"] == "1500"


def test_delay_rule_slows_the_answer(mock_server, client, model):
    mock_server.add_rule({"model": model, "delay": 0.2})

    started = time.perf_counter()
    chat(client, mock_server, model)

    assert time.perf_counter() - started >= 0.2


def test_drop_rule_closes_the_connection_without_an_answer(mock_server, client, model):
    mock_server.add_rule({"model": model, "drop": True})

    with pytest.raises(httpx.RemoteProtocolError):
        chat(client, mock_server, model)


def test_bad_reply_template_answers_500(mock_server, client, model):
    mock_server.add_rule({"model": model, "match": "x", "reply": r"\3"})

    response = chat(client, mock_server, model, "x")

    assert response.status_code == 500
    assert "template" in response.json()["error"]["message"]


@pytest.mark.parametrize(
    "rule",
    [{"tims": 2}, {"path": "gemini"}, {"times": 0}, {"times": True}, {"delay": "1s"}, {"match": "("}],
)
def test_invalid_rules_are_rejected(rule):
    with pytest.raises(Exception, match=r"rule|unknown|missing|unbalanced|parenthesis"):
        MockServer(rules=[rule])


def test_reset_forgets_rules_and_requests(client):
    with MockServer(rules=[{"reply": "ruled"}]) as server:
        assert chat(client, server, "m").json()["choices"][0]["message"]["content"] == "ruled"
        server.reset()

        assert server.requests == []
        assert chat(client, server, "m").json()["choices"][0]["message"]["content"] == "echo: hello there"


def test_latency_applies_to_every_answer(client):
    with MockServer(latency=0.15) as server:
        started = time.perf_counter()
        chat(client, server, "m")

        assert time.perf_counter() - started >= 0.15


def test_url_needs_a_started_server():
    with pytest.raises(RuntimeError, match="not started"):
        _ = MockServer().url


def test_parse_args_reads_the_options():
    args = parse_args(["--port", "0", "--latency", "0.2", "--rules", "r.yaml", "--quiet"])

    assert (args.host, args.port, args.latency) == ("127.0.0.1", 0, 0.2)
    assert (args.rules, args.quiet) == ("r.yaml", True)
    assert parse_args([]).port == 8000


@pytest.mark.parametrize("suffix", [".yaml", ".json"])
def test_load_rules_reads_yaml_and_json(tmp_path: Path, suffix):
    rules = [{"model": "flaky", "status": 429, "times": 2}, {"match": "hi", "reply": "hello"}]
    path = tmp_path / f"rules{suffix}"
    yaml_text = "- {model: flaky, status: 429, times: 2}\n- {match: hi, reply: hello}\n"
    path.write_text(json.dumps(rules) if suffix == ".json" else yaml_text)

    assert load_rules(path) == rules


def test_main_rejects_a_rules_file_that_is_not_a_list(tmp_path: Path, capsys):
    path = tmp_path / "rules.yaml"
    path.write_text("model: flaky\n")

    assert main(["--port", "0", "--rules", str(path)]) == 2
    assert "expected a list of rules" in capsys.readouterr().err


def test_main_serves_until_interrupted(tmp_path: Path):
    rules = tmp_path / "rules.json"
    rules.write_text(json.dumps([{"model": "cli", "reply": "from the file"}]))
    process = subprocess.Popen(
        [sys.executable, "-m", "bench_plugin.mock", "--port", "0", "--quiet", "--rules", str(rules)],
        stdout=subprocess.PIPE,
        text=True,
        # Ctrl-C as a terminal gives it: a test run started in the background (cmd &) ignores SIGINT, as its children
        preexec_fn=lambda: signal.signal(signal.SIGINT, signal.SIG_DFL),
    )
    try:
        assert process.stdout is not None
        url = process.stdout.readline().split()[-1]
        with httpx.Client(trust_env=False, timeout=5) as client:
            body = {"model": "cli", "messages": [{"role": "user", "content": "hi"}]}
            answer = client.post(f"{url}/v1/chat/completions", json=body).json()
        assert answer["choices"][0]["message"]["content"] == "from the file"
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=10) == 0


# --- rules that fire on a share of the requests, and retry headers ------------------------------------


def test_every_rule_fires_on_every_nth_matching_request(mock_server, client, model):
    mock_server.add_rule({"model": model, "every": 3, "status": 500})
    statuses = [chat(client, mock_server, model).status_code for _ in range(7)]
    assert statuses == [200, 200, 500, 200, 200, 500, 200]


def test_probability_rules_fire_on_a_share_of_requests_repeatably_with_a_seed(client, model):
    def run() -> list[int]:
        with MockServer(seed=7, rules=[{"model": model, "probability": 0.3, "status": 503}]) as server:
            return [chat(client, server, model).status_code for _ in range(60)]

    first = run()
    assert first == run()
    assert 5 <= first.count(503) <= 35


@pytest.mark.parametrize(("probability", "status"), [(0, 200), (1, 429)])
def test_probability_zero_never_fires_and_one_always(mock_server, client, model, probability, status):
    mock_server.add_rule({"model": model, "probability": probability, "status": 429})
    assert {chat(client, mock_server, model).status_code for _ in range(5)} == {status}


def test_retry_after_date_is_an_http_date_that_far_ahead(mock_server, client, model):
    mock_server.add_rule({"model": model, "status": 429, "retry_after_date": 120})
    response = chat(client, mock_server, model)
    ahead = parsedate_to_datetime(response.headers["retry-after"]).timestamp() - time.time()
    assert response.status_code == 429 and 100 <= ahead <= 121


def test_proxy_retry_headers_go_through_headers(mock_server, client, model):
    mock_server.add_rule({"model": model, "status": 429, "headers": {"llm_provider-retry-after": "60"}})
    assert chat(client, mock_server, model).headers["llm_provider-retry-after"] == "60"


@pytest.mark.parametrize(
    "rule",
    [{"every": 0}, {"every": True}, {"probability": 1.5}, {"probability": "often"}, {"retry_after_date": "soon"}],
)
def test_invalid_share_rules_are_rejected(rule):
    with pytest.raises(ValueError, match="rule"):
        MockServer(rules=[rule])


def test_parse_args_reads_the_seed():
    assert parse_args(["--seed", "5"]).seed == 5
