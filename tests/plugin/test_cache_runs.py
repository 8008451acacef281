"""The response cache end to end: a second run replays every HTTP call; each --bench-cache mode keeps its word."""

from __future__ import annotations

import json
import sqlite3
import uuid
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.mock.server import MockServer

MARKER_KEY = "sk-cache-marker-7f3a9c1e5b2d4680"
ALLOW_KEY = ("--bench-allow-key-env", "BENCH_TEST_CACHE_KEY")
COMMON = ("suites", "-p", "no:cacheprovider", "-p", "no:randomly", "--bench-html", "off", *ALLOW_KEY)


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def cached_suite(server: MockServer, model_id: str, judge_id: str, countries: int = 2) -> str:
    """A model and an llm_judge, both over HTTP (with a key and a header), over ``countries`` cases."""
    names = ", ".join(f"C{n}" for n in range(countries))
    return f"""\
providers:
  mock:
    type: openai_compatible
    base_url: '{server.openai_base_url}'
    api_key_env: BENCH_TEST_CACHE_KEY
    headers: {{X-Title: cache-test}}
models:
  m: {{provider: mock, id: {model_id}, temperature: 0.7, max_tokens: 32}}
judges:
  grader: {{provider: mock, id: {judge_id}}}
matrix:
  country: [{names}]
tasks:
  - id: "t-{{{{ country }}}}"
    prompt: "Name {{{{ country }}}}"
scorers:
  - {{name: C, type: contains, value: "{{{{ country }}}}"}}
  - {{name: J, type: llm_judge, judge: grader, prompt: "Rate {{{{ answer }}}}", scale: [1, 10]}}
composite: "0.5*C + 0.5*J"
pass_threshold: 0.5
"""


@pytest.fixture
def models(pytester: pytest.Pytester, mock_server: MockServer, monkeypatch: pytest.MonkeyPatch) -> tuple[str, str]:
    """A suite of two cases (a model call and a judge call each) whose models no other test uses."""
    monkeypatch.setenv("BENCH_TEST_CACHE_KEY", MARKER_KEY)
    model_id, judge_id = unique("cached"), unique("cache-judge")
    mock_server.add_rule({"model": judge_id, "reply": "Rating: [[7]]"})
    pytester.makefile(".yaml", **{"suites/cached": cached_suite(mock_server, model_id, judge_id)})
    return model_id, judge_id


def sent(server: MockServer, *model_ids: str) -> int:
    return sum(1 for request in server.requests if request["model"] in model_ids)


def records(pytester: pytest.Pytester, output: str = "bench-results") -> list[dict[str, Any]]:
    lines = (pytester.path / output / "results.jsonl").read_text().splitlines()
    return sorted((json.loads(line) for line in lines), key=lambda r: r["nodeid"])


def cache_uses(found: list[dict[str, Any]]) -> list[str | None]:
    return [entry.get("cache") for record in found for entry in record["call_log"]]


def stored(folder: Path) -> list[tuple[str, str, str]]:
    """(key, provider, model) of every stored answer."""
    with sqlite3.connect(folder / "responses.sqlite3") as db:
        return sorted(db.execute("SELECT key, provider, model FROM responses").fetchall())


def test_second_run_makes_no_request_and_replays_the_same_scores(
    pytester: pytest.Pytester, mock_server: MockServer, models: tuple[str, str]
) -> None:
    model_id, judge_id = models
    first = pytester.runpytest(*COMMON, "--bench-cache", "on", "--bench-output", "first")
    first.assert_outcomes(passed=2)
    first.stdout.fnmatch_lines(["response cache: 0 hits, 4 misses"])
    assert sent(mock_server, model_id, judge_id) == 4

    second = pytester.runpytest(*COMMON, "--bench-cache", "on", "--bench-output", "second")
    second.assert_outcomes(passed=2)
    second.stdout.fnmatch_lines(["response cache: 4 hits, 0 misses"])
    assert sent(mock_server, model_id, judge_id) == 4  # not one more request

    before, after = records(pytester, "first"), records(pytester, "second")
    assert [r["scores"] for r in after] == [r["scores"] for r in before]
    assert [r["response"] for r in after] == [r["response"] for r in before]
    assert [r["response_id"] for r in after] == [r["response_id"] for r in before]
    assert [r["usage"]["input_tokens"] for r in after] == [r["usage"]["input_tokens"] for r in before]
    assert cache_uses(before) == ["miss"] * 4 and cache_uses(after) == ["hit"] * 4
    # an answer from the cache costs nothing this run, and no attempt was made for it
    assert all(entry["cost_usd"] == 0 and entry["attempts"] == 0 for r in after for entry in r["call_log"])
    assert all(r["usage"]["cost_usd"] == 0 and r["usage"]["cost_source"] == "cache" for r in after)
    assert all(r["usage"]["judge"]["cost_usd"] == 0 for r in after)
    summary = json.loads((pytester.path / "second" / "summary.json").read_text())
    assert summary["cache"] == {"hits": 4, "misses": 0, "refreshed": 0}
    assert "Response cache: 4 hits, 0 misses (" in (pytester.path / "second" / "report.md").read_text()


def test_answers_from_the_cache_spend_none_of_the_budget(
    pytester: pytest.Pytester, mock_server: MockServer, models: tuple[str, str]
) -> None:
    pytester.runpytest(*COMMON, "--bench-cache", "on").assert_outcomes(passed=2)
    args = ("--bench-cache", "on", "--bench-concurrency", "1", "--bench-budget-tokens", "1")
    pytester.runpytest(*COMMON, *args).assert_outcomes(passed=2)  # asked again, the first case would spend it
    assert sent(mock_server, *models) == 4
    off = pytester.runpytest(*COMMON, "--bench-cache", "off", *args[2:])
    off.assert_outcomes(passed=1, skipped=1)  # the same budget, spent by the first case's calls


def test_no_api_key_or_header_reaches_the_cache(
    pytester: pytest.Pytester, mock_server: MockServer, models: tuple[str, str]
) -> None:
    pytester.runpytest(*COMMON, "--bench-cache", "on").assert_outcomes(passed=2)
    (request, *_) = [r for r in mock_server.requests if r["model"] == models[0]]
    assert request["headers"]["authorization"] == f"Bearer {MARKER_KEY}"  # the key was sent...
    files = [path for path in (pytester.path / ".bench-cache").iterdir() if path.is_file()]
    assert any(path.name == "responses.sqlite3" for path in files)
    for path in files:  # ...and is in no file of the cache (the database, its WAL, .gitignore)
        data = path.read_bytes()
        assert MARKER_KEY.encode() not in data and b"cache-test" not in data, path.name


def test_each_run_of_a_case_is_its_own_entry(
    pytester: pytest.Pytester, mock_server: MockServer, models: tuple[str, str]
) -> None:
    model_id, judge_id = models
    pytester.runpytest(*COMMON, "--bench-cache", "on", "--bench-runs", "2").assert_outcomes(passed=4)
    candidate = [r["body"]["messages"] for r in mock_server.requests if r["model"] == model_id]
    assert len(candidate) == 4  # two cases x two runs, the same prompt twice for each case
    assert len(stored(pytester.path / ".bench-cache")) == 8  # and judges' calls: every run kept apart

    pytester.runpytest(*COMMON, "--bench-cache", "on", "--bench-runs", "2").assert_outcomes(passed=4)
    assert sent(mock_server, model_id, judge_id) == 8  # every run replayed, none asked again
    runs = {(r["task"], r["run"]): r["response_id"] for r in records(pytester)}
    assert len(set(runs.values())) == 4  # run 1 and run 2 of a case replay their own answers


def test_read_mode_never_stores(pytester: pytest.Pytester, mock_server: MockServer, models: tuple[str, str]) -> None:
    result = pytester.runpytest(*COMMON, "--bench-cache", "read")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["response cache: 0 hits, 4 misses"])
    assert not (pytester.path / ".bench-cache").exists()

    pytester.runpytest(*COMMON, "--bench-cache", "on").assert_outcomes(passed=2)
    entries = stored(pytester.path / ".bench-cache")
    assert sent(mock_server, *models) == 8
    hits = pytester.runpytest(*COMMON, "--bench-cache", "read")
    hits.stdout.fnmatch_lines(["response cache: 4 hits, 0 misses"])
    assert sent(mock_server, *models) == 8
    with sqlite3.connect(pytester.path / ".bench-cache" / "responses.sqlite3") as db:
        assert db.execute("SELECT sum(hits) FROM responses").fetchone() == (0,)  # read: not even a hit count
    assert stored(pytester.path / ".bench-cache") == entries


def test_write_mode_never_reads_and_refreshes_every_answer(
    pytester: pytest.Pytester, mock_server: MockServer, models: tuple[str, str]
) -> None:
    pytester.runpytest(*COMMON, "--bench-cache", "on", "--bench-output", "first").assert_outcomes(passed=2)
    entries = stored(pytester.path / ".bench-cache")

    result = pytester.runpytest(*COMMON, "--bench-cache", "write", "--bench-output", "refreshed")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["response cache: 0 hits, 0 misses, 4 refreshed"])
    assert sent(mock_server, *models) == 8  # every call made again
    assert stored(pytester.path / ".bench-cache") == entries  # stored over the same keys

    pytester.runpytest(*COMMON, "--bench-cache", "on", "--bench-output", "replayed").assert_outcomes(passed=2)
    assert sent(mock_server, *models) == 8
    refreshed, replayed = records(pytester, "refreshed"), records(pytester, "replayed")
    assert [r["response_id"] for r in replayed] == [r["response_id"] for r in refreshed]  # the newer answers
    assert [r["response_id"] for r in replayed] != [r["response_id"] for r in records(pytester, "first")]


def test_identical_calls_of_different_cases_are_answered_once_and_replayed_as_recorded(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    """Two models' identical answers meet the same judge call; a judge at temperature 1 answered them apart.

    The cache kept one of the two answers, and a re-run replayed it for both cases: one case's scores changed.
    Now the second identical call gets the first's answer, in flight or stored, and a re-run replays the records.
    """
    judge_id = unique("coin-judge")
    mock_server.add_rule({"model": judge_id, "probability": 0.5, "reply": "Rating: [[2]]"})
    mock_server.add_rule({"model": judge_id, "reply": "Rating: [[9]]"})
    pytester.makefile(".yaml", **{"suites/same": f"""\
providers:
  mock: {{type: openai_compatible, base_url: '{mock_server.openai_base_url}'}}
models:
  a: {{provider: scripted, script: [{{reply: Paris.}}]}}
  b: {{provider: scripted, script: [{{reply: Paris.}}]}}
judges:
  grader: {{provider: mock, id: {judge_id}, temperature: 1}}
tasks:
  - {{id: capital, prompt: "Capital of France?"}}
  - {{id: capital-again, prompt: "Capital of France?"}}
scorers:
  - {{name: J, type: llm_judge, judge: grader, prompt: "Rate {{{{ answer }}}}", scale: [1, 10]}}
"""})
    for output in ("first", "second", "third"):
        result = pytester.runpytest(*COMMON, "--bench-cache", "on", "--bench-runs", "3", "--bench-output", output)
        outcomes = result.parseoutcomes()
        assert outcomes.get("passed", 0) + outcomes.get("failed", 0) == 12, result.stdout.str()
    assert sent(mock_server, judge_id) == 3  # one call per run index, shared by four cases each
    first = records(pytester, "first")
    assert sorted(use for use in cache_uses(first) if use) == ["hit"] * 9 + ["miss"] * 3  # scripted: no cache
    verdicts = {r["nodeid"]: r["composite"] for r in first}
    assert len({verdicts[n] for n in verdicts if n.endswith("-run1]")}) == 1  # four cases, one judgment
    for output in ("second", "third"):
        assert {r["nodeid"]: r["composite"] for r in records(pytester, output)} == verdicts


def test_off_mode_neither_reads_nor_stores(
    pytester: pytest.Pytester, mock_server: MockServer, models: tuple[str, str]
) -> None:
    pytester.runpytest(*COMMON, "--bench-cache", "on").assert_outcomes(passed=2)
    entries = stored(pytester.path / ".bench-cache")
    result = pytester.runpytest(*COMMON, "--bench-cache", "off")
    result.assert_outcomes(passed=2)
    assert sent(mock_server, *models) == 8
    assert "response cache" not in result.stdout.str()
    assert all("cache" not in entry for r in records(pytester) for entry in r["call_log"])
    assert stored(pytester.path / ".bench-cache") == entries


def test_failed_calls_are_not_stored(pytester: pytest.Pytester, mock_server: MockServer) -> None:
    model_id = unique("cache-down")
    mock_server.add_rule({"model": model_id, "status": 500, "times": 1})
    pytester.makefile(".yaml", **{"suites/down": f"""\
providers:
  mock: {{type: openai_compatible, base_url: '{mock_server.openai_base_url}', max_retries: 0}}
models:
  m: {{provider: mock, id: {model_id}}}
tasks:
  - {{id: greet, prompt: Say hello}}
scorers:
  - {{type: contains, value: hello}}
"""})
    failed = pytester.runpytest(*COMMON, "--bench-cache", "on")
    failed.assert_outcomes(errors=1)
    failed.stdout.fnmatch_lines(["response cache: 0 hits, 1 miss"])
    pytester.runpytest(*COMMON, "--bench-cache", "on").assert_outcomes(passed=1)  # asked again: now it answers
    assert sent(mock_server, model_id) == 2
    pytester.runpytest(*COMMON, "--bench-cache", "on").assert_outcomes(passed=1)
    assert sent(mock_server, model_id) == 2


def test_a_cache_that_cannot_be_used_is_said_at_the_start_and_in_the_summary(
    pytester: pytest.Pytester, mock_server: MockServer, models: tuple[str, str]
) -> None:
    """It was logged only: the line "0 hits, 4 misses" looked like a cold cache, and every run paid again."""
    folder = pytester.path / ".bench-cache"
    folder.mkdir()
    (folder / "responses.sqlite3").write_bytes(b"not a database" * 1000)
    result = pytester.runpytest(*COMMON, "--bench-cache", "on")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines([
        "bench_plugin: WARNING: response cache: cannot read */responses.sqlite3 (file is not a database); "
        "the run goes on without it",
        "*",
        "response cache: cannot read */responses.sqlite3 (file is not a database); the run went on without it",
    ])


def test_offline_providers_are_not_cached(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/offline": """\
models:
  parrot: {provider: echo}
tasks:
  - {id: greet, prompt: Say hello}
scorers:
  - {type: contains, value: hello}
"""})
    result = pytester.runpytest(*COMMON, "--bench-cache", "on")
    result.assert_outcomes(passed=1)
    assert "response cache" not in result.stdout.str()
    assert not (pytester.path / ".bench-cache").exists()
    assert "cache" not in json.loads((pytester.path / "bench-results" / "summary.json").read_text())


def test_cache_is_on_by_default_in_a_folder_of_its_own_choosing(
    pytester: pytest.Pytester, mock_server: MockServer, models: tuple[str, str]
) -> None:
    pytester.makeini("[pytest]\nasyncio_default_fixture_loop_scope = function\n")  # no --bench-cache in addopts
    pytester.runpytest(*COMMON).assert_outcomes(passed=2)
    assert (pytester.path / ".bench-cache" / ".gitignore").read_text().splitlines()[-1] == "*"
    pytester.runpytest(*COMMON, "--bench-cache-dir", "elsewhere").assert_outcomes(passed=2)
    assert sent(mock_server, *models) == 8  # a new folder: nothing stored there yet
    assert len(stored(pytester.path / "elsewhere")) == 4
    pytester.runpytest(*COMMON).assert_outcomes(passed=2)
    assert sent(mock_server, *models) == 8


def test_a_bad_cache_mode_is_a_usage_error(pytester: pytest.Pytester) -> None:
    result = pytester.runpytest("--bench-cache", "sometimes")
    assert result.ret == pytest.ExitCode.USAGE_ERROR
    result.stderr.fnmatch_lines(["*--bench-cache: invalid choice: 'sometimes' (choose from *off*read*write*on*)"])


@pytest.mark.slow
def test_four_xdist_workers_share_one_cache_consistently(pytester: pytest.Pytester, mock_server: MockServer,
                                                          monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setenv("BENCH_TEST_CACHE_KEY", MARKER_KEY)
    model_id, judge_id = unique("xdist-cached"), unique("xdist-judge")
    mock_server.add_rule({"model": judge_id, "reply": "Rating: [[7]]"})
    pytester.makefile(".yaml", **{"suites/cached": cached_suite(mock_server, model_id, judge_id, countries=30)})
    args = (*COMMON, "--bench-cache", "on", "-n", "4", "--bench-runs", "2", "--bench-concurrency", "8")

    first = pytester.runpytest_subprocess(*args, "--bench-output", "first")
    first.assert_outcomes(passed=60)
    first.stdout.fnmatch_lines(["response cache: 0 hits, 120 misses"])
    assert sent(mock_server, model_id, judge_id) == 120
    entries = stored(pytester.path / ".bench-cache")
    assert len(entries) == 120 and len({key for key, _, _ in entries}) == 120  # each call once
    with sqlite3.connect(pytester.path / ".bench-cache" / "responses.sqlite3") as db:
        assert db.execute("PRAGMA integrity_check").fetchone() == ("ok",)
        assert db.execute("PRAGMA journal_mode").fetchone() == ("wal",)

    second = pytester.runpytest_subprocess(*args, "--bench-output", "second")
    second.assert_outcomes(passed=60)
    second.stdout.fnmatch_lines(["response cache: 120 hits, 0 misses"])
    assert sent(mock_server, model_id, judge_id) == 120
    assert stored(pytester.path / ".bench-cache") == entries
    before, after = records(pytester, "first"), records(pytester, "second")
    assert [(r["nodeid"], r["response"], r["scores"]) for r in after] == \
           [(r["nodeid"], r["response"], r["scores"]) for r in before]
