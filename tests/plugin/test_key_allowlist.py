"""A suite sends only the key variables the user allows: built-in keys to their own hosts, others by name."""

from __future__ import annotations

import uuid
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.cli import main
from bench_plugin.mock.server import MockServer

SECRET = "unrelated-secret-123"  # what the test server received


def keyed_suite(url: str, model_id: str, variable: str = "UNRELATED_SECRET", provider: str = "local") -> str:
    return (
        f"providers:\n  {provider}: {{type: openai_compatible, base_url: '{url}', api_key_env: {variable}}}\n"
        f"models:\n  m: {{provider: {provider}, id: {model_id}}}\n"
        "tasks:\n  - {id: greet, prompt: 'Say hello to Ada'}\n"
        "scorers:\n  - {type: contains, value: Ada}\n"
    )


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def requests_for(server: MockServer, model_id: str) -> list[dict[str, Any]]:
    return [r for r in server.requests if r["model"] == model_id]


def secret_reached(server: MockServer, secret: str) -> bool:
    return any(secret in str(r["headers"]) for r in server.requests)


def test_a_suite_cannot_send_any_variable_to_its_own_server(
    pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    secret = unique(SECRET)  # the server is shared: this test's own secret
    monkeypatch.setenv("UNRELATED_SECRET", secret)
    model_id = unique("exfil")
    pytester.makefile(".yaml", **{"suites/keyed": keyed_suite(mock_server.openai_base_url, model_id)})
    result = pytester.runpytest("suites")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        "*suites/keyed.yaml:2: providers.local.api_key_env: the suite would send the environment variable "
        "UNRELATED_SECRET to http://127.0.0.1:*; a suite may only send key variables you allow",
        "*hint: if you trust this suite with UNRELATED_SECRET, allow it with --bench-allow-key-env UNRELATED_SECRET "
        "(or list it under the ini option bench_allow_key_env)",
    ])
    assert requests_for(mock_server, model_id) == [] and not secret_reached(mock_server, secret)


def test_the_user_allows_a_variable_with_the_option(
    pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UNRELATED_SECRET", SECRET)
    model_id = unique("allowed")
    pytester.makefile(".yaml", **{"suites/keyed": keyed_suite(mock_server.openai_base_url, model_id)})
    pytester.runpytest("suites", "--bench-allow-key-env", "UNRELATED_SECRET").assert_outcomes(passed=1)
    (request,) = requests_for(mock_server, model_id)
    assert request["headers"]["authorization"] == f"Bearer {SECRET}"


def test_the_user_allows_a_variable_in_the_ini_file(
    pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("UNRELATED_SECRET", SECRET)
    model_id = unique("ini")
    pytester.makeini(
        "[pytest]\nasyncio_default_fixture_loop_scope = function\nbench_allow_key_env = OTHER UNRELATED_SECRET\n"
    )
    pytester.makefile(".yaml", **{"suites/keyed": keyed_suite(mock_server.openai_base_url, model_id)})
    pytester.runpytest("suites").assert_outcomes(passed=1)
    (request,) = requests_for(mock_server, model_id)
    assert request["headers"]["authorization"] == f"Bearer {SECRET}"


def test_a_built_in_key_goes_only_where_the_user_points_it(
    pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("OPENAI_API_KEY", SECRET)
    model_id = unique("preset-key")
    url = mock_server.openai_base_url
    pytester.makefile(".yaml", **{"suites/keyed": keyed_suite(url, model_id, "OPENAI_API_KEY")})
    refused = pytester.runpytest("suites")
    refused.assert_outcomes(failed=1)
    refused.stdout.fnmatch_lines([
        f"*providers.local.api_key_env: OPENAI_API_KEY is the key of api.openai.com, and the suite would send it to "
        f"{url}",
        f"*hint: to send it there, give the URL yourself (--bench-base-url local={url}) or allow the variable with "
        "--bench-allow-key-env OPENAI_API_KEY*",
    ])
    assert requests_for(mock_server, model_id) == []
    pytester.runpytest("suites", "--bench-base-url", f"local={url}").assert_outcomes(passed=1)
    (request,) = requests_for(mock_server, model_id)
    assert request["headers"]["authorization"] == f"Bearer {SECRET}"


def test_a_suite_that_takes_over_a_built_in_name_cannot_take_its_key(
    pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """``--bench-models openai:...`` must not send OPENAI_API_KEY to a server the suite chose."""
    secret = unique(SECRET)
    monkeypatch.setenv("OPENAI_API_KEY", secret)
    model_id = unique("takeover")
    suite = keyed_suite(mock_server.openai_base_url, "unused", "OPENAI_API_KEY", provider="openai")
    pytester.makefile(".yaml", **{"suites/keyed": suite})
    result = pytester.runpytest("suites", "--bench-models", f"openai:{model_id}")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*suites/keyed.yaml:2: providers.openai.api_key_env: OPENAI_API_KEY is the key of "
                                 "api.openai.com*"])
    assert requests_for(mock_server, model_id) == [] and not secret_reached(mock_server, secret)


def test_bench_validate_reports_a_key_problem_before_any_call(
    tmp_path: Path, mock_server: MockServer, capsys: pytest.CaptureFixture[str]
) -> None:
    (tmp_path / "keyed.yaml").write_text(keyed_suite(mock_server.openai_base_url, unique("validate")))
    assert main(["validate", str(tmp_path)]) == 1
    err = capsys.readouterr().err
    assert ("keyed.yaml:2: providers.local.api_key_env: the suite would send the environment variable "
            "UNRELATED_SECRET") in err


def test_a_bad_variable_name_is_a_usage_error(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/echo": "models:\n  a: {provider: echo}\ntasks:\n  - {id: t, prompt: x}\n"})
    result = pytester.runpytest("suites", "--bench-allow-key-env", "NOT A NAME")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--bench-allow-key-env: expected an environment variable name such as MY_API_KEY, "
                                 "got 'NOT A NAME'*"])
