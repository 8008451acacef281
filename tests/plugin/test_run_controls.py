"""Run controls: --bench-limit, --bench-model-arg, .env, the renamed rate-limit options, no packaging warning."""

from __future__ import annotations

import json
import os
import time
import uuid
from typing import Any

import pytest

from bench_plugin.mock.server import MockServer
from bench_plugin.plugin.options.controls import parse_model_args
from bench_plugin.plugin.options.first_cases import first_cases

GRID = """\
models:
  a: {provider: echo}
  b: {provider: echo}
matrix:
  n: [1, 2, 3, 4]
tasks:
  - id: "t{{ n }}"
    prompt: "hi {{ n }}"
"""


def selected(result: pytest.RunResult) -> list[str]:
    lines = [line for line in result.stdout.lines if "::" in line and "PASSED" in line]
    return sorted(line.split("::")[1].split(" ")[0] for line in lines)


def test_limit_runs_the_first_cases_of_each_suite_and_model_with_all_their_runs(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/grid": GRID})
    result = pytester.runpytest("suites", "-v", "-p", "no:randomly", "--bench-limit", "2", "--bench-runs", "2")
    result.assert_outcomes(passed=8, deselected=8)
    assert selected(result) == [f"t{n}[{m}-run{r}]" for n in (1, 2) for m in "ab" for r in (1, 2)]
    result.stdout.fnmatch_lines(["bench_plugin: first 2 cases per suite and model (--bench-limit)"])


def test_limit_counts_the_cases_left_after_k(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/grid": GRID})
    result = pytester.runpytest("suites", "-v", "--bench-limit", "1", "-k", "not t1")
    result.assert_outcomes(passed=2, deselected=6)
    assert selected(result) == ["t2[a-run1]", "t2[b-run1]"]


def test_limit_then_shards_split_the_same_cases(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/grid": GRID})
    first = selected(pytester.runpytest("suites", "-v", "--bench-limit", "3", "--bench-shard", "1/2"))
    second = selected(pytester.runpytest("suites", "-v", "--bench-limit", "3", "--bench-shard", "2/2"))
    assert sorted(first + second) == sorted(f"t{n}[{m}-run1]" for n in (1, 2, 3) for m in "ab")
    assert not set(first) & set(second)


@pytest.mark.slow
def test_limit_keeps_the_same_cases_under_xdist(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/grid": GRID})
    alone = pytester.runpytest("suites", "--bench-limit", "3", "-p", "no:cacheprovider")
    alone.assert_outcomes(passed=6, deselected=2)
    records = (pytester.path / "bench-results" / "results.jsonl").read_text()
    spread = pytester.runpytest("suites", "--bench-limit", "3", "-n", "2", "-p", "no:cacheprovider")
    spread.assert_outcomes(passed=6)
    nodeids = sorted(json.loads(line)["nodeid"] for line in records.splitlines())
    again = (pytester.path / "bench-results" / "results.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["nodeid"] for line in again) == nodeids


@pytest.mark.parametrize(
    ("args", "message"),
    [
        (["--bench-limit", "openai:rpm=500"], "*--bench-limit: expected a whole number of cases, got 'openai:rpm=500'; "
                                              "provider limits such as openai:rpm=500 are --bench-rate-limit*"),
        (["--bench-limit", "0"], "*--bench-limit: expected a whole number >= 1, got 0*"),
        (["--bench-model-limit", "m:rpm=5"], "*unrecognized arguments: --bench-model-limit*"),
        (["--bench-model-arg", "temprature=0"], "*--bench-model-arg: unknown key 'temprature'; did you mean "
                                                "'temperature'?*"),
        (["--bench-model-arg", "temperature=hot"], "*--bench-model-arg: temperature expects a number from 0 to 2, "
                                                   "got 'hot'*"),
        (["--bench-model-arg", "max_tokens=0.5"], "*max_tokens expects a whole number >= 1, got '0.5'*"),
        (["--bench-model-arg", "seed"], "*--bench-model-arg: expected KEY=VALUE such as temperature=0, got 'seed'*"),
        (["--bench-env-file", "missing.env"], "*--bench-env-file: no such file: *missing.env (give a file, or off)*"),
    ],
)
def test_bad_run_controls_are_usage_errors(pytester: pytest.Pytester, args: list[str], message: str) -> None:
    pytester.makefile(".yaml", **{"suites/grid": GRID})
    result = pytester.runpytest("suites", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])


def test_rate_limit_options_have_their_new_names(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/grid": GRID})
    result = pytester.runpytest("suites", "--bench-rate-limit", "echo:rpm=6000",
                                "--bench-model-rate-limit", "a:concurrency=2")
    result.assert_outcomes(passed=8)


@pytest.mark.parametrize(("args", "message"), [
    (["--bench-rate-limit", "ehco:rpm=60"], "*--bench-rate-limit: unknown provider(s) ehco; choose from:*echo*"),
    (["--bench-model-rate-limit", "c:rpm=60"],
     "*--bench-model-rate-limit: unknown model(s) c. Choose from the suites' models and judges (a, b) or their*"),
    (["--bench-rate-limit", "echo:rpm=5,rpm=10"], "*--bench-rate-limit: echo: rpm given twice; give each limit once*"),
    (["--bench-model-rate-limit", "echo:typo:rpm=60"], "*--bench-model-rate-limit: unknown model(s) echo:typo.*"),
    # each suite said "expected provider:model" of a value that is provider:model
    (["--bench-judge", "nosuch:m"], "*--bench-judge: unknown provider(s) nosuch; choose from:*echo*"),
])
def test_a_misspelt_name_in_a_rate_limit_is_a_usage_error(
    pytester: pytest.Pytester, args: list[str], message: str
) -> None:
    """Accepted in silence, the run went unthrottled while its author believed it limited."""
    pytester.makefile(".yaml", **{"suites/grid": GRID})
    result = pytester.runpytest("suites", *args)
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines([message])
    pytester.runpytest("suites", "--bench-model-rate-limit", "echo:a:rpm=6000").assert_outcomes(passed=8)


def bodies(server: MockServer, model_id: str) -> list[dict[str, Any]]:
    return [request["body"] for request in server.requests if request["model"] == model_id]


def test_model_args_reach_the_models_under_test_and_not_the_judges(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    candidate, judge = f"cand-{uuid.uuid4().hex[:8]}", f"judge-{uuid.uuid4().hex[:8]}"
    mock_server.add_rule({"model": judge, "reply": "Rating: [[8]]"})
    pytester.makefile(".yaml", **{"suites/args": f"""\
providers:
  mock: {{type: openai_compatible, base_url: '{mock_server.openai_base_url}', max_retries: 0}}
models:
  m: {{provider: mock, id: {candidate}, temperature: 0.7}}
judges:
  grader: {{provider: mock, id: {judge}, temperature: 0.1}}
tasks:
  - {{id: greet, prompt: hello}}
scorers:
  - {{name: J, type: llm_judge, judge: grader, prompt: "Rate [[N]]: {{{{ answer }}}}"}}
pass_threshold: 0
"""})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-model-arg", "temperature=0",
                                "--bench-model-arg", "seed=7", "--bench-model-arg", 'stop=["END"]')
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(['bench_plugin: model args temperature=0, seed=7, stop=["END"] (--bench-model-arg)'])
    (sent,) = bodies(mock_server, candidate)
    assert (sent["temperature"], sent["seed"], sent["stop"]) == (0, 7, ["END"])
    (judged,) = bodies(mock_server, judge)
    assert judged["temperature"] == 0.1 and "seed" not in judged and "stop" not in judged
    (record,) = map(json.loads, (pytester.path / "bench-results" / "results.jsonl").read_text().splitlines())
    assert record["model_params"] == {"temperature": 0, "seed": 7, "stop": ["END"]}  # how the figure was sampled


def test_model_args_apply_to_models_named_on_the_command_line(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    model_id = f"adhoc-{uuid.uuid4().hex[:8]}"
    pytester.makefile(".yaml", **{"suites/args": f"""\
providers:
  mock: {{type: openai_compatible, base_url: '{mock_server.openai_base_url}', max_retries: 0}}
models:
  unused: {{provider: echo}}
tasks:
  - {{id: greet, prompt: hello}}
"""})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-models", f"mock:{model_id}",
                                "--bench-model-arg", "max_tokens=12")
    result.assert_outcomes(passed=1)
    assert bodies(mock_server, model_id)[0]["max_tokens"] == 12


ENV_SUITE = """\
providers:
  mock: {{type: openai_compatible, base_url: '{url}', api_key_env: BENCH_ENV_KEY, max_retries: 0}}
models:
  m: {{provider: mock, id: {model_id}}}
tasks:
  - {{id: greet, prompt: hello}}
"""


@pytest.fixture
def env_names(monkeypatch: pytest.MonkeyPatch) -> None:
    """Whatever a run loads from .env into this process is removed afterwards."""
    for name in ("BENCH_ENV_KEY", "BENCH_ENV_OTHER"):
        monkeypatch.setenv(name, "placeholder")
        monkeypatch.delenv(name)  # undo restores "not set", even after the run sets it


@pytest.mark.usefixtures("env_names")
def test_env_file_in_the_rootdir_gives_keys_and_its_values_are_never_shown(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    model_id = f"env-{uuid.uuid4().hex[:8]}"
    pytester.makefile(".yaml", **{"suites/env": ENV_SUITE.format(url=mock_server.openai_base_url, model_id=model_id)})
    (pytester.path / ".env").write_text("BENCH_ENV_KEY=sk-from-dotenv-123\nBENCH_ENV_OTHER='x y'\n")
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-allow-key-env", "BENCH_ENV_KEY")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([f"bench_plugin: read {pytester.path / '.env'}: set BENCH_ENV_KEY, BENCH_ENV_OTHER"])
    assert bodies(mock_server, model_id)
    (request,) = [r for r in mock_server.requests if r["model"] == model_id]
    assert request["headers"]["authorization"] == "Bearer sk-from-dotenv-123"
    shown = result.stdout.str() + result.stderr.str()
    shown += "".join(path.read_text() for path in (pytester.path / "bench-results").rglob("*") if path.is_file())
    assert "sk-from-dotenv-123" not in shown


@pytest.mark.usefixtures("env_names")
def test_the_real_environment_wins_over_env_file(
    pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch
) -> None:
    model_id = f"env-{uuid.uuid4().hex[:8]}"
    monkeypatch.setenv("BENCH_ENV_KEY", "sk-real")
    pytester.makefile(".yaml", **{"suites/env": ENV_SUITE.format(url=mock_server.openai_base_url, model_id=model_id)})
    (pytester.path / ".env").write_text("BENCH_ENV_KEY=sk-from-dotenv\n")
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-allow-key-env", "BENCH_ENV_KEY")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*set nothing; kept BENCH_ENV_KEY (already set in the environment)"])
    (request,) = [r for r in mock_server.requests if r["model"] == model_id]
    assert request["headers"]["authorization"] == "Bearer sk-real"


@pytest.mark.usefixtures("env_names")
def test_env_file_off_or_elsewhere(pytester: pytest.Pytester, mock_server: MockServer) -> None:
    model_id = f"env-{uuid.uuid4().hex[:8]}"
    pytester.makefile(".yaml", **{"suites/env": ENV_SUITE.format(url=mock_server.openai_base_url, model_id=model_id)})
    (pytester.path / ".env").write_text("BENCH_ENV_KEY=sk-root\n")
    result = pytester.runpytest("suites", "--bench-env-file", "off", "--bench-allow-key-env", "BENCH_ENV_KEY")
    result.assert_outcomes(errors=1)  # no key: an infrastructure error before any request
    result.stdout.fnmatch_lines(["*auth: environment variable BENCH_ENV_KEY is not set*"])
    assert "BENCH_ENV_KEY" not in os.environ
    (pytester.path / "keys").mkdir()
    (pytester.path / "keys" / "ci.env").write_text("BENCH_ENV_KEY=sk-elsewhere\n")
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-env-file", "keys/ci.env",
                                "--bench-allow-key-env", "BENCH_ENV_KEY")
    result.assert_outcomes(passed=1)
    (request,) = [r for r in mock_server.requests if r["model"] == model_id]
    assert request["headers"]["authorization"] == "Bearer sk-elsewhere"


def test_a_users_run_shows_no_warning_from_our_packaging(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\n")  # a user's project: pytest-asyncio installed with .[dev], its scope not set
    pytester.makefile(".yaml", **{"suites/grid": GRID})
    result = pytester.runpytest_subprocess("suites", "-W", "error", "-p", "no:cacheprovider")
    result.assert_outcomes(passed=8)
    output = result.stdout.str() + result.stderr.str()
    assert "Warning" not in output and "warnings summary" not in output and "is unset" not in output


def test_a_users_own_asyncio_scope_still_wins(pytester: pytest.Pytester) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = module\n")
    pytester.makefile(".yaml", **{"suites/grid": GRID})
    result = pytester.runpytest("suites", "--co")
    result.stdout.fnmatch_lines(["*asyncio_default_fixture_loop_scope=module*"])


def test_results_hold_only_the_limited_cases(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/grid": GRID})
    result = pytester.runpytest("suites", "--bench-model-arg", "temperature=0", "--bench-limit", "1")
    result.assert_outcomes(passed=2, deselected=6)
    lines = (pytester.path / "bench-results" / "results.jsonl").read_text().splitlines()
    assert sorted(json.loads(line)["task"] for line in lines) == ["t1", "t1"]


def test_first_cases_keeps_whole_cases_per_suite_and_model() -> None:
    items = [("s1", "m", "t1", 1), ("s1", "m", "t1", 2), ("s1", "m", "t2", 1), ("s1", "n", "t2", 1),
             ("s2", "m", "t9", 1), ("s1", "m", "t3", 1), ("other", None, None, 0)]
    kept, dropped = first_cases(items, 1, lambda i: None if i[1] is None else (i[0], i[1], i[2]))
    assert kept == [("s1", "m", "t1", 1), ("s1", "m", "t1", 2), ("s1", "n", "t2", 1), ("s2", "m", "t9", 1),
                    ("other", None, None, 0)]
    assert dropped == [("s1", "m", "t2", 1), ("s1", "m", "t3", 1)]


def test_model_args_are_read_as_json_when_they_are_json() -> None:
    assert parse_model_args(["temperature=0.2", "max_tokens=100.0", "stop=END", "seed=3", "seed=4"]) == (
        ("temperature", 0.2), ("max_tokens", 100), ("stop", "END"), ("seed", 4))


def test_a_judge_is_limited_by_its_name(pytester: pytest.Pytester, mock_server: MockServer) -> None:
    """The guide says a model is named as in the suite: a judge's name was refused as unknown."""
    judge = f"judge-{uuid.uuid4().hex[:8]}"
    mock_server.add_rule({"model": judge, "reply": "Rating: [[8]]"})
    suite = (f"providers:\n  mock: {{type: openai_compatible, base_url: '{mock_server.openai_base_url}'}}\n"
             f"models:\n  m: {{provider: echo}}\njudges:\n  j: {{provider: mock, id: {judge}}}\n"
             "tasks:\n  - {id: t, prompt: hello}\n"
             "scorers:\n  - {name: J, type: llm_judge, judge: j, prompt: 'Grade {{ answer }}'}\n")
    pytester.makefile(".yaml", **{"suites/judged": suite})
    pytester.runpytest("suites", "--bench-model-rate-limit", "j:rpm=600").assert_outcomes(passed=1)


@pytest.mark.parametrize("limited", ["p1", "p2"])
def test_providers_sharing_a_server_keep_the_strictest_limit_whichever_is_called_first(
    pytester: pytest.Pytester, mock_server: MockServer, limited: str
) -> None:
    """A --bench-rate-limit on the provider called second was ignored: the first one called set the server's limits."""
    a, b = f"a-{uuid.uuid4().hex[:8]}", f"b-{uuid.uuid4().hex[:8]}"
    for model in (a, b):
        mock_server.add_rule({"model": model, "delay": 0.3})
    url = mock_server.openai_base_url
    pytester.makefile(".yaml", **{"suites/shared": f"""\
providers:
  p1: {{type: openai_compatible, base_url: '{url}', max_retries: 0}}
  p2: {{type: openai_compatible, base_url: '{url}/', max_retries: 0}}
models:
  a: {{provider: p1, id: {a}}}
  b: {{provider: p2, id: {b}}}
matrix:
  n: [1, 2, 3]
tasks:
  - {{id: 't{{{{ n }}}}', prompt: 'Say {{{{ n }}}}'}}
"""})
    started = time.monotonic()
    result = pytester.runpytest("suites", "--bench-concurrency", "8", "--bench-rate-limit", f"{limited}:concurrency=1")
    result.assert_outcomes(passed=6)
    assert time.monotonic() - started >= 6 * 0.3, "the six 0.3 s calls did not go one at a time"
