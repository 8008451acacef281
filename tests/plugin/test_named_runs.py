"""Named runs: resume without calling finished cases again, retry errors, start over, --lf, and re-judging."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.cli import main
from bench_plugin.mock.server import MockServer

NO_CACHE = ("-p", "no:cacheprovider")
CACHE_ON = ("--bench-cache", "on")  # the tests' ini turns the response cache off; its terminal line needs it


def unique(prefix: str) -> str:
    return f"{prefix}-{uuid.uuid4().hex[:8]}"


def requests_for(server: MockServer, *model_ids: str) -> int:
    return sum(1 for r in server.requests if r.get("model") in model_ids)


def run_records(pytester: pytest.Pytester, run: str | None = "r") -> dict[str, dict[str, Any]]:
    folder = pytester.path / "bench-results" / ("runs" if run else "") / (run or "")
    lines = (folder / "results.jsonl").read_text().splitlines()
    records = [json.loads(line) for line in lines]
    assert len({r["nodeid"] for r in records}) == len(records), "one record per case"
    return {r["nodeid"].split("::")[1]: r for r in records}


def two_model_suite(server: MockServer, good: str, broken: str, tasks: int = 2) -> str:
    task_lines = "".join(f"  - {{id: t{i}, prompt: 'Say hello {i}'}}\n" for i in range(tasks))
    return (
        f"providers:\n  mock: {{type: openai_compatible, base_url: '{server.openai_base_url}', max_retries: 0}}\n"
        f"models:\n  good: {{provider: mock, id: {good}}}\n  broken: {{provider: mock, id: {broken}}}\n"
        f"tasks:\n{task_lines}"
        "scorers:\n  - {type: contains, value: hello}\n"
    )


def test_resumed_run_reports_finished_cases_without_calling_a_model(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    good, broken = unique("good"), unique("other")
    pytester.makefile(".yaml", **{"suites/demo": two_model_suite(mock_server, good, broken)})
    pytester.runpytest("suites", "--bench-run", "r", *NO_CACHE, *CACHE_ON).assert_outcomes(passed=4)
    assert requests_for(mock_server, good, broken) == 4
    first = run_records(pytester)

    result = pytester.runpytest("suites", "--bench-run", "r", *NO_CACHE, *CACHE_ON)
    result.assert_outcomes(passed=4)
    result.stdout.fnmatch_lines(["*4 cases reused from run r*"])
    assert "response cache:" not in result.stdout.str(), "reused cases made no call this session"
    assert requests_for(mock_server, good, broken) == 4, "a finished case was sent to a model again"
    assert run_records(pytester) == first
    assert (pytester.path / "bench-results" / "runs" / "r" / "report.md").exists()


def test_a_reused_failure_fails_again_with_its_reason(pytester: pytest.Pytester, mock_server: MockServer) -> None:
    model = unique("m")
    pytester.makefile(".yaml", **{"suites/demo": (
        f"providers:\n  mock: {{type: openai_compatible, base_url: '{mock_server.openai_base_url}'}}\n"
        f"models:\n  m: {{provider: mock, id: {model}}}\n"
        "tasks:\n  - {id: t, prompt: hello}\n"
        "scorers:\n  - {type: contains, value: goodbye}\n"
    )})
    pytester.runpytest("suites", "--bench-run", "r", *NO_CACHE).assert_outcomes(failed=1)
    result = pytester.runpytest("suites", "--bench-run", "r", *NO_CACHE)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*expected to contain 'goodbye'*", "*1 case reused from run r*"])
    assert requests_for(mock_server, model) == 1


def test_retry_errors_runs_only_the_infrastructure_errors_again(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    good, broken = unique("good"), unique("broken")
    mock_server.add_rule({"model": broken, "status": 500, "times": 2})  # its two cases fail once each
    pytester.makefile(".yaml", **{"suites/demo": two_model_suite(mock_server, good, broken)})
    pytester.runpytest("suites", "--bench-run", "r", *NO_CACHE, *CACHE_ON).assert_outcomes(passed=2, errors=2)
    assert (requests_for(mock_server, good), requests_for(mock_server, broken)) == (2, 2)

    # resumed without the flag: errors count as finished and are reported again
    pytester.runpytest("suites", "--bench-run", "r", *NO_CACHE, *CACHE_ON).assert_outcomes(passed=2, errors=2)
    assert (requests_for(mock_server, good), requests_for(mock_server, broken)) == (2, 2)

    result = pytester.runpytest("suites", "--bench-run", "r", "--bench-retry-errors", *NO_CACHE, *CACHE_ON)
    result.assert_outcomes(passed=4)
    # the cache line counts this session's calls: the two retried, not the two reused
    result.stdout.fnmatch_lines(["response cache: 0 hits, 2 misses", "*2 cases reused from run r*"])
    assert (requests_for(mock_server, good), requests_for(mock_server, broken)) == (2, 4)
    records = run_records(pytester)
    assert sorted(r["status"] for r in records.values()) == ["passed"] * 4


def test_fresh_starts_the_run_over(pytester: pytest.Pytester, mock_server: MockServer) -> None:
    good, other = unique("good"), unique("other")
    pytester.makefile(".yaml", **{"suites/demo": two_model_suite(mock_server, good, other)})
    pytester.runpytest("suites", "--bench-run", "r", *NO_CACHE).assert_outcomes(passed=4)
    result = pytester.runpytest("suites", "--bench-run", "r", "--bench-fresh", "-k", "good", *NO_CACHE)
    result.assert_outcomes(passed=2, deselected=2)
    assert requests_for(mock_server, good, other) == 6
    assert sorted(run_records(pytester)) == ["t0[good-run1]", "t1[good-run1]"], "the earlier records are gone"


def test_a_run_keeps_the_cases_a_session_did_not_select(pytester: pytest.Pytester, mock_server: MockServer) -> None:
    good, other = unique("good"), unique("other")
    pytester.makefile(".yaml", **{"suites/demo": two_model_suite(mock_server, good, other)})
    pytester.runpytest("suites", "--bench-run", "r", "-k", "good", *NO_CACHE).assert_outcomes(passed=2, deselected=2)
    result = pytester.runpytest("suites", "--bench-run", "r", "-k", "broken", *NO_CACHE)
    result.assert_outcomes(passed=2, deselected=2)
    result.stdout.fnmatch_lines(["*results.jsonl also keeps 2 earlier cases this session did not select*"])
    records = run_records(pytester)
    assert list(records) == ["t0[good-run1]", "t0[broken-run1]", "t1[good-run1]", "t1[broken-run1]"]
    summary = json.loads((pytester.path / "bench-results" / "runs" / "r" / "summary.json").read_text())
    assert "4" in json.dumps(summary)  # the reports are written from every case of the run


def test_a_changed_prompt_is_run_again(pytester: pytest.Pytester, mock_server: MockServer) -> None:
    good, other = unique("good"), unique("other")
    pytester.makefile(".yaml", **{"suites/demo": two_model_suite(mock_server, good, other)})
    pytester.runpytest("suites", "--bench-run", "r", *NO_CACHE).assert_outcomes(passed=4)
    edited = two_model_suite(mock_server, good, other).replace("Say hello 1", "Say hello 1 again")
    pytester.makefile(".yaml", **{"suites/demo": edited})
    pytester.runpytest("suites", "--bench-run", "r", *NO_CACHE).assert_outcomes(passed=4)
    assert requests_for(mock_server, good, other) == 6  # t1 of both models, whose prompt changed
    assert run_records(pytester)["t1[good-run1]"]["response"] == "echo: Say hello 1 again"


def test_last_failed_keeps_the_results_of_the_cases_it_does_not_run(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    good, broken = unique("good"), unique("broken")
    mock_server.add_rule({"model": broken, "status": 500, "times": 2})
    pytester.makefile(".yaml", **{"suites/demo": two_model_suite(mock_server, good, broken)})
    pytester.runpytest("suites").assert_outcomes(passed=2, errors=2)
    result = pytester.runpytest("suites", "--lf")
    result.assert_outcomes(passed=2)
    result.stdout.fnmatch_lines(["*results.jsonl also keeps 2 earlier cases this session did not select*"])
    assert (requests_for(mock_server, good), requests_for(mock_server, broken)) == (2, 4)
    records = run_records(pytester, run=None)
    assert len(records) == 4 and {r["status"] for r in records.values()} == {"passed"}


def test_option_mistakes_are_usage_errors(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/demo": "models:\n  m: {provider: echo}\ntasks:\n  - {id: t, prompt: hi}\n"})
    result = pytester.runpytest("suites", "--bench-fresh")
    result.stderr.fnmatch_lines(["*--bench-fresh applies to a named run: add --bench-run NAME*"])
    result = pytester.runpytest("suites", "--bench-run", "../up")
    result.stderr.fnmatch_lines(["*--bench-run: expected a name of letters, digits*"])
    result = pytester.runpytest("suites", "--bench-rejudge")
    result.stderr.fnmatch_lines(["*--bench-rejudge: no stored results to re-judge*results.jsonl does not exist*"])
    result = pytester.runpytest("suites", "--bench-run", "r", "--bench-rejudge", "--bench-fresh")
    result.stderr.fnmatch_lines(["*cannot be combined with --bench-fresh*"])


def test_a_corrupt_run_files_lines_are_set_aside_naming_each_and_the_run_goes_on(pytester: pytest.Pytester) -> None:
    """Such a file stopped the run with a usage error; its lines now go to results.rejected.jsonl (issue 29)."""
    pytester.makefile(".yaml", **{"suites/demo": "models:\n  m: {provider: echo}\ntasks:\n  - {id: t, prompt: hi}\n"})
    folder = pytester.path / "bench-results" / "runs" / "r"
    folder.mkdir(parents=True)
    (folder / "results.jsonl").write_text('{"nodeid": "x"\n{"nodeid": "y"}\n')
    result = pytester.runpytest("suites", "--bench-run", "r")
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["warning: *results.jsonl:1: not valid JSON*; that line is left out",
                                 "warning: *results.jsonl:2: incomplete case record*; that line is left out",
                                 "2 records left out: *moved as they were to *results.rejected.jsonl*"])
    assert (folder / "results.rejected.jsonl").read_text() == '{"nodeid": "x"\n{"nodeid": "y"}\n'
    assert list(run_records(pytester)) == ["t[m-run1]"]


# -- re-judging --------------------------------------------------------------------------------------------


def judged_suite(server: MockServer, model: str, verdict: int, body: str, *, per_turn: bool = False,
                 extra_models: str = "", extra_scorers: str = "") -> str:
    """A suite whose scripted judge gives ``verdict`` out of 10; 8 passes, 3 fails."""
    flag = ", per_turn: true" if per_turn else ""
    return (
        f"providers:\n  mock: {{type: openai_compatible, base_url: '{server.openai_base_url}', max_retries: 0}}\n"
        f"models:\n  m: {{provider: mock, id: {model}}}\n{extra_models}"
        f"judges:\n  grader:\n    provider: scripted\n    script:\n      - {{reply: 'Rating: [[{verdict}]]'}}\n"
        f"{body}"
        "scorers:\n"
        f"  - {{name: J, type: llm_judge, judge: grader{flag},"
        " prompt: 'Grade: {{ answer }} in {{ transcript }}'}\n"
        f"{extra_scorers}"
        "pass_threshold: 0.5\n"
    )


SINGLE = "tasks:\n  - {id: t, prompt: hello}\n"
TURNS = "tasks:\n  - id: t\n    system: Be brief.\n    turns: [first question, 'second: {{ answers[0] }}']\n"


@pytest.mark.parametrize(("body", "per_turn"), [(SINGLE, False), (TURNS, True)], ids=["single", "turns"])
def test_rejudge_scores_stored_transcripts_again_without_calling_the_model(
    pytester: pytest.Pytester, mock_server: MockServer, body: str, per_turn: bool
) -> None:
    model = unique("m")
    pytester.makefile(".yaml", **{"suites/demo": judged_suite(mock_server, model, 8, body, per_turn=per_turn)})
    pytester.runpytest("suites", "--bench-run", "r", *NO_CACHE, *CACHE_ON).assert_outcomes(passed=1)
    calls = requests_for(mock_server, model)
    before = run_records(pytester)["t[m-run1]"]
    assert {c.get("cache") for c in before["call_log"] if c["purpose"] != "judge"} == {"miss"}

    pytester.makefile(".yaml", **{"suites/demo": judged_suite(mock_server, model, 3, body, per_turn=per_turn)})
    result = pytester.runpytest("suites", "--bench-run", "r", "--bench-rejudge", *NO_CACHE, *CACHE_ON)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*1 case re-judged from stored transcripts*"])
    assert requests_for(mock_server, model) == calls, "re-judging called the model under test"
    # the stored calls are not this session's, and its judge is offline
    assert "response cache:" not in result.stdout.str()
    after = run_records(pytester)["t[m-run1]"]
    assert after["composite"] < before["composite"] and after["status"] == "failed"
    assert after["transcript"] == before["transcript"] and after["usage"]["calls"] == before["usage"]["calls"]
    (earlier,) = after["judgments"]
    assert earlier["composite"] == before["composite"] and earlier["status"] == "passed"
    assert earlier["scores"] == before["scores"] and earlier["judged_at"] == before["started_at"]
    assert after["rejudged"]["at"] and after["rejudged"]["notes"] == []
    if per_turn:
        assert [t["scores"] for t in after["turns"]] == [{"J": pytest.approx(2 / 9)}] * 2
        # each turn's judge saw the conversation up to that turn, as in the run
        judged = [c for c in after["scores"]["components"] if c["name"] == "J.t2"]
        assert judged and before["turns"][1]["answer"] == after["turns"][1]["answer"]

    # a second re-judgment keeps the whole history
    pytester.makefile(".yaml", **{"suites/demo": judged_suite(mock_server, model, 9, body, per_turn=per_turn)})
    pytester.runpytest("suites", "--bench-run", "r", "--bench-rejudge", *NO_CACHE).assert_outcomes(passed=1)
    history = run_records(pytester)["t[m-run1]"]["judgments"]
    assert [j["status"] for j in history] == ["passed", "failed"]
    assert history[1]["judged_at"] == after["rejudged"]["at"]
    assert requests_for(mock_server, model) == calls


def run_judged_once(pytester: pytest.Pytester, mock_server: MockServer) -> str:
    """Run a one-case judged suite as run ``r``; its model's id."""
    model = unique("m")
    pytester.makefile(".yaml", **{"suites/demo": judged_suite(mock_server, model, 8, SINGLE)})
    pytester.runpytest("suites", "--bench-run", "r", *NO_CACHE).assert_outcomes(passed=1)
    return model


def test_rejudging_an_answer_to_a_prompt_since_changed_says_so(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    """The record said nothing: the answer to an older prompt was judged as if it answered the new one."""
    model = run_judged_once(pytester, mock_server)
    changed = judged_suite(mock_server, model, 8, SINGLE.replace("prompt: hello", "prompt: hello there"))
    pytester.makefile(".yaml", **{"suites/demo": changed})
    pytester.runpytest("suites", "--bench-run", "r", "--bench-rejudge", *NO_CACHE).assert_outcomes(passed=1)
    after = run_records(pytester)["t[m-run1]"]
    assert after["messages"][-1]["content"] == "hello"  # the answer was to this
    assert after["rejudged"]["notes"] == ["the suite's prompt changed since this answer was given: it was judged as "
                                          "the answer to the stored one (run the case again to judge an answer to "
                                          "the new one)"]


CONVERSATION = ("tasks:\n  - id: t\n    conversation: {mode: shared, seed: Hello, "
                "participants: [{name: A}, {name: B, model: b}], max_turns: 2}\n")


@pytest.mark.parametrize(("body", "edit"), [
    (TURNS, ("first question", "another question")),
    (CONVERSATION, ("seed: Hello", "seed: Goodbye")),
    (CONVERSATION, ("{name: B, model: b}", "{name: B, model: c}")),
], ids=["a-turn-reworded", "the-seed", "the-partner"])
def test_a_case_whose_turns_or_conversation_changed_runs_again_and_a_rejudge_says_so(
    pytester: pytest.Pytester, mock_server: MockServer, body: str, edit: tuple[str, str]
) -> None:
    """Their messages hold no question: the stored answers were reused for another one, and judged as its."""
    model, partner = unique("a"), unique("b")
    extra = (f"  b: {{provider: mock, id: {partner}, default: false}}\n"
             f"  c: {{provider: mock, id: {partner}x, default: false}}\n")
    pytester.makefile(".yaml", **{"suites/demo": judged_suite(mock_server, model, 8, body, extra_models=extra)})
    pytester.runpytest("suites", "--bench-run", "r", *NO_CACHE).assert_outcomes(passed=1)
    pytester.makefile(".yaml", **{"suites/demo": judged_suite(
        mock_server, model, 8, body.replace(*edit), extra_models=extra)})

    rejudged = pytester.runpytest("suites", "--bench-run", "r", "--bench-rejudge", *NO_CACHE)
    rejudged.assert_outcomes(passed=1)
    (note,) = run_records(pytester)["t[m-run1]"]["rejudged"]["notes"]
    what = "turns" if body == TURNS else "conversation"
    assert note.startswith(f"the suite's {what} changed since this answer was given")

    calls = requests_for(mock_server, model)
    resumed = pytester.runpytest("suites", "--bench-run", "r", *NO_CACHE)
    resumed.assert_outcomes(passed=1)
    assert "reused from run r" not in resumed.stdout.str()
    assert requests_for(mock_server, model) > calls, "the stored answers were reused for another question"
    again = pytester.runpytest("suites", "--bench-run", "r", *NO_CACHE)
    again.stdout.fnmatch_lines(["*1 case reused from run r*"])  # asked the same now: reused


def test_rejudged_turn_judges_see_what_the_model_was_sent(pytester: pytest.Pytester, mock_server: MockServer) -> None:
    model = unique("m")
    suite = judged_suite(mock_server, model, 8, TURNS, per_turn=True).replace(
        "prompt: 'Grade: {{ answer }} in {{ transcript }}'", "prompt: 'CTX {{ transcript }} END'").replace(
        "- {reply: 'Rating: [[8]]'}", "- {regex: '(?s)CTX (.*) END', reply: 'saw: {{ groups[1] }} Rating: [[8]]'}")
    pytester.makefile(".yaml", **{"suites/demo": suite})
    pytester.runpytest("suites", "--bench-run", "r", *NO_CACHE).assert_outcomes(passed=1)
    before = run_records(pytester)["t[m-run1]"]
    pytester.runpytest("suites", "--bench-run", "r", "--bench-rejudge", *NO_CACHE).assert_outcomes(passed=1)
    after = run_records(pytester)["t[m-run1]"]
    outputs = {}
    for name in ("J.t1", "J.t2"):
        (old,) = [c for c in before["scores"]["components"] if c["name"] == name]
        (new,) = [c for c in after["scores"]["components"] if c["name"] == name]
        assert new["judge_output"] == old["judge_output"]  # the judge was sent the same conversation
        outputs[name] = new["judge_output"]
    assert "system: Be brief." in outputs["J.t2"] and "first question" in outputs["J.t2"]
    assert "second" not in outputs["J.t1"]


def test_rejudge_a_model_to_model_conversation(pytester: pytest.Pytester, mock_server: MockServer) -> None:
    model, partner = unique("a"), unique("b")
    body = ("tasks:\n  - id: t\n    conversation: {mode: shared, seed: Hello, "
            "participants: [{name: A}, {name: B, model: b}], max_turns: 2}\n")
    extra = f"  b: {{provider: mock, id: {partner}, default: false}}\n"
    pytester.makefile(".yaml", **{"suites/demo": judged_suite(mock_server, model, 8, body, extra_models=extra)})
    pytester.runpytest("suites", "--bench-run", "r", *NO_CACHE).assert_outcomes(passed=1)
    calls = requests_for(mock_server, model, partner)
    before = run_records(pytester)["t[m-run1]"]
    assert before["conversation"] is not None
    pytester.makefile(".yaml", **{"suites/demo": judged_suite(mock_server, model, 3, body, extra_models=extra)})
    pytester.runpytest("suites", "--bench-run", "r", "--bench-rejudge", *NO_CACHE).assert_outcomes(failed=1)
    assert requests_for(mock_server, model, partner) == calls
    after = run_records(pytester)["t[m-run1]"]
    assert after["conversation"] == before["conversation"] and after["status"] == "failed"
    # the judge read the conversation as it did in the run: speakers' names and all
    (component,) = after["scores"]["components"]
    assert component["value"] == pytest.approx(2 / 9)


def test_rejudge_an_agent_run_keeps_its_workspace_checks_and_says_so(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    model = unique("agent")
    mock_server.add_rule({"model": model, "tool_result": "^wrote", "reply": "Done."})
    mock_server.add_rule({"model": model, "reply": "Writing.",
                          "tool_calls": [{"name": "write_file", "arguments": {"path": "note.md", "content": "hi"}}]})
    body = "tasks:\n  - id: t\n    prompt: Write note.md saying hi.\n    tools: [write_file]\n"
    checks = "  - {name: C, type: completion, checks: [{file: note.md, contains: hi}]}\ncomposite: '0.5*C + 0.5*J'\n"
    pytester.makefile(".yaml", **{"suites/demo": judged_suite(mock_server, model, 8, body, extra_scorers=checks)})
    pytester.runpytest("suites", "--bench-run", "r", *NO_CACHE).assert_outcomes(passed=1)
    calls = requests_for(mock_server, model)
    before = run_records(pytester)["t[m-run1]"]
    pytester.makefile(".yaml", **{"suites/demo": judged_suite(mock_server, model, 1, body, extra_scorers=checks)})
    pytester.runpytest("suites", "--bench-run", "r", "--bench-rejudge", *NO_CACHE).assert_outcomes(passed=1)
    assert requests_for(mock_server, model) == calls
    after = run_records(pytester)["t[m-run1]"]
    components = {c["name"]: c for c in after["scores"]["components"]}
    assert components["C"]["value"] == 1.0 and components["J"]["value"] == 0.0
    assert after["composite"] == 0.5 and after["agent"] == before["agent"]
    (note,) = after["rejudged"]["notes"]
    assert "checks are not run again (the workspace is gone)" in note

    # checks changed since the run: they cannot be re-judged without the workspace, and the case says so
    changed = checks.replace("[{file: note.md, contains: hi}]", "[{file: note.md, contains: hi}, {file: other.md}]")
    pytester.makefile(".yaml", **{"suites/demo": judged_suite(mock_server, model, 8, body, extra_scorers=changed)})
    result = pytester.runpytest("suites", "--bench-run", "r", "--bench-rejudge", *NO_CACHE)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*cannot re-judge C: its checks (2) are not the ones stored when the case ran (1)*"])
    assert requests_for(mock_server, model) == calls


def test_rejudge_of_a_case_without_a_transcript_is_an_error_naming_why(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    good, broken = unique("good"), unique("broken")
    mock_server.add_rule({"model": broken, "status": 500})
    pytester.makefile(".yaml", **{"suites/demo": two_model_suite(mock_server, good, broken, tasks=1)})
    pytester.runpytest("suites", "--bench-run", "r", "-k", "broken", *NO_CACHE).assert_outcomes(errors=1, deselected=1)
    result = pytester.runpytest("suites", "--bench-run", "r", "--bench-rejudge", *NO_CACHE)
    result.assert_outcomes(errors=2)
    result.stdout.fnmatch_lines([
        "*cannot re-judge: *results.jsonl has no record of this case; run it first (without --bench-rejudge)*",
        "*cannot re-judge: its stored record has no transcript (error: http_500*",
    ])
    result.stdout.fnmatch_lines(["*1 selected case could not be re-judged (ERROR above, saying why): its stored "
                                 "record kept as it was*"])
    assert "did not select" not in result.stdout.str()
    assert requests_for(mock_server, good) == 0


def test_a_suite_mistake_while_rejudging_keeps_the_transcript_to_judge_later(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    model = run_judged_once(pytester, mock_server)
    before = run_records(pytester)["t[m-run1]"]
    broken = judged_suite(mock_server, model, 8, SINGLE).replace("judge: grader,", "judge: nobody,")
    pytester.makefile(".yaml", **{"suites/demo": broken})
    result = pytester.runpytest("suites", "--bench-run", "r", "--bench-rejudge", *NO_CACHE)
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines(["*nobody*"])
    invalid = run_records(pytester)["t[m-run1]"]
    assert invalid["status"] == "invalid" and invalid["transcript"] == before["transcript"]
    pytester.makefile(".yaml", **{"suites/demo": judged_suite(mock_server, model, 3, SINGLE)})
    pytester.runpytest("suites", "--bench-run", "r", "--bench-rejudge", *NO_CACHE).assert_outcomes(failed=1)
    fixed = run_records(pytester)["t[m-run1]"]
    assert fixed["status"] == "failed" and [j["status"] for j in fixed["judgments"]] == ["passed", "invalid"]
    assert requests_for(mock_server, model) == 1


def test_rejudge_without_a_named_run_uses_the_output_folder(pytester: pytest.Pytester, mock_server: MockServer) -> None:
    model = unique("m")
    pytester.makefile(".yaml", **{"suites/demo": judged_suite(mock_server, model, 8, SINGLE)})
    pytester.runpytest("suites", *NO_CACHE).assert_outcomes(passed=1)
    pytester.makefile(".yaml", **{"suites/demo": judged_suite(mock_server, model, 3, SINGLE)})
    pytester.runpytest("suites", "--bench-rejudge", *NO_CACHE).assert_outcomes(failed=1)
    assert requests_for(mock_server, model) == 1
    (record,) = run_records(pytester, run=None).values()
    assert record["judgments"][0]["status"] == "passed"


# -- xdist ---------------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_resume_and_rejudge_under_xdist(pytester: pytest.Pytester, mock_server: MockServer) -> None:
    good, other = unique("good"), unique("other")
    suite = two_model_suite(mock_server, good, other, tasks=4)
    pytester.makefile(".yaml", **{"suites/demo": suite})
    # under xdist, deselection happens in the workers: the controller counts no deselected items
    pytester.runpytest("suites", "--bench-run", "r", "-k", "t0 or t1", "-n", "2", *NO_CACHE).assert_outcomes(passed=4)
    result = pytester.runpytest("suites", "--bench-run", "r", "-n", "2", *NO_CACHE)
    result.assert_outcomes(passed=8)
    result.stdout.fnmatch_lines(["*4 cases reused from run r*"])
    assert requests_for(mock_server, good, other) == 8
    records = run_records(pytester)
    assert len(records) == 8
    pytester.runpytest("suites", "--bench-run", "r", "--bench-rejudge", "-n", "2", *NO_CACHE).assert_outcomes(passed=8)
    assert requests_for(mock_server, good, other) == 8
    assert all(r["rejudged"] for r in run_records(pytester).values())


# -- a killed run ------------------------------------------------------------------------------------------


@pytest.mark.slow
def test_a_run_killed_halfway_resumes_without_calling_finished_cases_again(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    model = unique("slow")
    mock_server.add_rule({"model": model, "delay": 0.2})
    cases = 24
    tasks = "".join(f"  - {{id: t{i}, prompt: 'case {i}'}}\n" for i in range(cases))
    pytester.makefile(".yaml", **{"suites/slow": (
        f"providers:\n  local: {{type: openai_compatible, base_url: '{mock_server.openai_base_url}'}}\n"
        f"models:\n  m: {{provider: local, id: {model}}}\ntasks:\n{tasks}"
    )})
    results = pytester.path / "bench-results" / "runs" / "r" / "results.jsonl"
    command = [sys.executable, "-m", "pytest", "suites", "--bench-run", "r", "--bench-concurrency", "2", *NO_CACHE]
    process = subprocess.Popen(command, cwd=pytester.path, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and (not results.exists() or results.read_bytes().count(b"\n") < cases // 3):
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    finished = {json.loads(line)["nodeid"] for line in results.read_bytes().split(b"\n")[:-1]}
    assert cases // 3 <= len(finished) < cases, "the run was not killed halfway"

    resumed = subprocess.run(command, cwd=pytester.path, capture_output=True, text=True, timeout=120)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert f"{len(finished)} cases reused from run r" in resumed.stdout
    records = results_of(results)
    assert sorted(r["nodeid"] for r in records) == sorted(f"suites/slow.yaml::t{i}[m-run1]" for i in range(cases))
    assert all(r["status"] == "passed" for r in records)
    asked = Counter(r["body"]["messages"][-1]["content"] for r in mock_server.requests if r.get("model") == model)
    for nodeid in finished:
        number = nodeid.split("::t")[1].split("[")[0]
        assert asked[f"case {number}"] == 1, f"{nodeid} finished before the kill and was called again"
    assert set(asked) == {f"case {i}" for i in range(cases)}


def results_of(path: Path) -> list[dict[str, Any]]:
    return [json.loads(line) for line in path.read_text().splitlines()]


def slow_first_case_run(
    pytester: pytest.Pytester, mock_server: MockServer, cases: int
) -> tuple[list[str], Path, str]:
    """A named run whose first case waits 30 s for its answer while the others answer at once.

    Returns its command, its results file and its model's id.
    """
    model = unique("held")
    mock_server.add_rule({"model": model, "match": "^case 0$", "delay": 30})
    tasks = "".join(f"  - {{id: t{i}, prompt: 'case {i}'}}\n" for i in range(cases))
    pytester.makefile(".yaml", **{"suites/held": (
        f"providers:\n  local: {{type: openai_compatible, base_url: '{mock_server.openai_base_url}'}}\n"
        f"models:\n  m: {{provider: local, id: {model}}}\ntasks:\n{tasks}"
    )})
    command = [sys.executable, "-m", "pytest", "suites", "--bench-run", "r", "--bench-concurrency", "8", *NO_CACHE,
               "--bench-html", "off"]
    return command, pytester.path / "bench-results" / "runs" / "r" / "results.jsonl", model


def journaled(results: Path) -> int:
    """How many whole lines the journals beside ``results`` hold."""
    return sum(path.read_bytes().count(b"\n") for path in results.parent.glob("results.jsonl.*.journal"))


@pytest.mark.parametrize("stop", [signal.SIGKILL, signal.SIGTERM], ids=["SIGKILL", "SIGTERM"])
def test_cases_finished_ahead_of_a_slow_one_survive_a_stop(
    pytester: pytest.Pytester, mock_server: MockServer, stop: signal.Signals
) -> None:
    """Cases are reported in order: those finished behind a case waiting for its answer were lost to a kill.

    Each is in its process's journal the moment it finishes; SIGTERM records them at once, a killed run's next
    session takes them from the journal. Either way the resumed run calls none of them again.
    """
    command, results, model = slow_first_case_run(pytester, mock_server, cases=8)
    process = subprocess.Popen(command, cwd=pytester.path, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and journaled(results) < 7:
        time.sleep(0.02)
    assert journaled(results) == 7 and not results.exists()  # pytest still waits for the first case
    process.send_signal(stop)
    output, _ = process.communicate(timeout=30)
    if stop == signal.SIGTERM:
        assert "7 cases finished ahead of where pytest stopped: saved to run r too" in output, output
        assert len(results_of(results)) == 7  # its journals stay: an interrupted session's workers may add to them
        summary = json.loads((results.parent / "summary.json").read_text())
        (row,) = summary["suites"][0]["models"]
        assert (row["expected"], row["missing"]) == (8, 1)  # a first session: the case it did not finish counts
    asked = requests_for(mock_server, model)

    resumed = subprocess.run([*command, "-k", "not t0"], cwd=pytester.path, capture_output=True, text=True,
                             timeout=120)
    assert resumed.returncode == 0, resumed.stdout + resumed.stderr
    assert "7 cases reused from run r" in resumed.stdout
    assert requests_for(mock_server, model) == asked  # none of them called again
    assert sorted(r["nodeid"] for r in results_of(results)) == [f"suites/held.yaml::t{i}[m-run1]" for i in range(1, 8)]
    assert journaled(results) == 0


def test_a_fresh_start_forgets_the_runs_records_at_once(pytester: pytest.Pytester, mock_server: MockServer) -> None:
    """Left to the first reported case, a --bench-fresh session killed before it kept the old records."""
    command, results, model = slow_first_case_run(pytester, mock_server, cases=8)
    subprocess.run([*command, "-k", "not t0"], cwd=pytester.path, capture_output=True, timeout=120, check=True)
    assert len(results_of(results)) == 7
    process = subprocess.Popen([*command, "--bench-fresh"], cwd=pytester.path, stdout=subprocess.DEVNULL,
                               stderr=subprocess.DEVNULL)
    deadline = time.monotonic() + 60
    while time.monotonic() < deadline and journaled(results) < 7:
        time.sleep(0.02)
    process.send_signal(signal.SIGKILL)
    process.wait(timeout=30)
    assert not results.exists() and journaled(results) == 7  # the old records went as the session started
    asked = requests_for(mock_server, model)
    resumed = subprocess.run([*command, "-k", "not t0"], cwd=pytester.path, capture_output=True, text=True,
                             timeout=120)
    assert "7 cases reused from run r" in resumed.stdout and requests_for(mock_server, model) == asked



ECHO_SUITE = (
    "suite: s\nmodels:\n  m1: {provider: echo}\n  m2: {provider: echo}\n"
    "tasks:\n  - {id: keep, prompt: hello}\n  - {id: old-task, prompt: bye}\n"
    "scorers:\n  - {type: contains, value: hello}\n"
)


@pytest.mark.parametrize("xdist", [(), ("-n", "2")], ids=["one-process", "xdist"])
def test_a_task_removed_from_the_suite_leaves_the_reports_of_a_resumed_run(
    pytester: pytest.Pytester, xdist: tuple[str, ...]
) -> None:
    """Its earlier records describe a suite that is gone: the reports leave them out and say so; the file keeps them."""
    pytester.makefile(".yaml", **{"suites/demo": ECHO_SUITE})
    pytester.runpytest("suites", "--bench-run", "r", *NO_CACHE).assert_outcomes(passed=2, failed=2)
    pytester.makefile(".yaml", **{"suites/demo": ECHO_SUITE.replace("  - {id: old-task, prompt: bye}\n", "")})

    run = pytester.runpytest_subprocess if xdist else pytester.runpytest
    result = run("suites", "--bench-run", "r", "-k", "m1", *NO_CACHE, *xdist)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines([
        "*results.jsonl also keeps 1 earlier case this session did not select*",
        "*2 earlier cases of suites/demo.yaml left out of the reports: the suite no longer has task old-task "
        "(results.jsonl keeps them; --bench-fresh starts the run over)*",
    ])
    folder = pytester.path / "bench-results" / "runs" / "r"
    assert sorted(run_records(pytester)) == sorted(
        f"{task}[{model}-run1]" for task in ("keep", "old-task") for model in ("m1", "m2"))
    summary = json.loads((folder / "summary.json").read_text())
    assert summary["left_out"] == {"cases": 2, "tasks": {"suites/demo.yaml": {"old-task": 2}}}
    assert summary["totals"]["passed"] == 2 and summary["totals"].get("failed", 0) == 0  # m2's keep: selected before
    assert [row["task"] for row in summary["suites"][0]["tasks"]] == ["keep"]
    report = (folder / "report.md").read_text()
    assert "**2 earlier cases left out**: their suite no longer has their task (`suites/demo.yaml`: `old-task` (2))" \
        in report


def test_records_of_a_suite_not_collected_stay_in_the_reports(pytester: pytest.Pytester) -> None:
    """A session that reads one suite of the run judges no other suite's records."""
    pytester.makefile(".yaml", **{"suites/a": ECHO_SUITE, "suites/b": ECHO_SUITE.replace("suite: s", "suite: t")})
    pytester.runpytest("suites", "--bench-run", "r", *NO_CACHE).assert_outcomes(passed=4, failed=4)
    result = pytester.runpytest("suites/a.yaml", "--bench-run", "r", *NO_CACHE)
    result.assert_outcomes(passed=2, failed=2)
    assert "left out of the reports" not in result.stdout.str()
    summary = json.loads((pytester.path / "bench-results" / "runs" / "r" / "summary.json").read_text())
    assert "left_out" not in summary and summary["totals"]["passed"] == 4


ELO_SUITE = """\
models:
  alpha: {provider: scripted, script: [{reply: Paris}]}
  beta: {provider: scripted, script: [{contains: "b?", reply: Lyon}, {reply: Paris}]}
  gamma: {provider: scripted, script: [{contains: "a?", reply: Rome}, {reply: Paris}]}
tasks:
  - {id: a, prompt: "a?"}
  - {id: b, prompt: "b?"}
  - {id: c, prompt: "c?"}
scorers:
  - {name: C, type: contains, value: Paris}
leaderboard: {of: C, sessions: cases, dir: elo}
"""


def board(folder: Path) -> dict[str, Any]:
    data: dict[str, Any] = json.loads((folder / "elo" / "leaderboard.json").read_text())
    return data


@pytest.mark.parametrize("how", ["lf", "selections"])
def test_a_continued_run_replaces_its_leaderboard_sessions_instead_of_playing_them_twice(
    pytester: pytest.Pytester, how: str
) -> None:
    """--lf re-ran beta's failure, or a named run grew model by model: alpha's sessions were counted again."""
    pytester.makefile(".yaml", **{"suites/demo": ELO_SUITE})
    if how == "lf":
        pytester.runpytest("suites").assert_outcomes(passed=7, failed=2)
        result = pytester.runpytest("suites", "--lf")
        result.assert_outcomes(failed=2)
        folder = pytester.path / "bench-results"
    else:
        for models in ("alpha", "beta", "gamma"):
            pytester.runpytest("suites", "--bench-run", "r", "-k", models, *NO_CACHE)
        folder = pytester.path / "bench-results" / "runs" / "r"
    kept = board(folder)
    assert len(kept["sessions"]) == 3, [s["id"] for s in kept["sessions"]]
    assert {model: len(history) for model, history in kept["model_history"].items()} == dict.fromkeys(
        ("alpha", "beta", "gamma"), 3)
    rebuilt = pytester.path / "rebuilt"
    assert main(["report", str(folder / "results.jsonl"), "-o", str(rebuilt)]) == 0
    assert board(rebuilt)["elo_ratings"] == kept["elo_ratings"], "the run and a rebuild of it disagree"
    assert [s["scenario"] for s in board(rebuilt)["sessions"]] == [s["scenario"] for s in kept["sessions"]]


def test_a_reused_case_scored_by_earlier_scorers_says_so_until_it_is_rejudged(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    """A scorer added and the composite changed: the resumed run mixed old and new scoring in silence."""
    model = run_judged_once(pytester, mock_server)
    first = run_records(pytester)["t[m-run1]"]
    assert first["scored_by"]
    changed = judged_suite(mock_server, model, 8, SINGLE, extra_scorers="  - {name: L, type: length, max: 1000}\n")
    pytester.makefile(".yaml", **{"suites/demo": changed})
    result = pytester.runpytest("suites", "--bench-run", "r", *NO_CACHE)
    result.assert_outcomes(passed=1)
    result.stdout.fnmatch_lines(["*1 reused case was scored by other scorers, a composite or a threshold than the "
                                 "suite has now: its scores are the earlier ones (--bench-rejudge scores them again)*"])
    pytester.runpytest("suites", "--bench-run", "r", "--bench-rejudge", *NO_CACHE).assert_outcomes(passed=1)
    again = pytester.runpytest("suites", "--bench-run", "r", *NO_CACHE)
    assert "scored by other scorers" not in again.stdout.str()
    assert [c["name"] for c in run_records(pytester)["t[m-run1]"]["scores"]["components"]] == ["J", "L"]


SEEN_AT_START = """\
import json
from pathlib import Path


def pytest_sessionstart(session):
    results = Path("bench-results/runs/r/results.jsonl")
    ids = [json.loads(line)["nodeid"] for line in results.read_text().splitlines()]
    Path("seen.json").write_text(json.dumps(ids))
"""


def test_a_session_resuming_after_kills_sees_each_case_once_from_its_start(pytester: pytest.Pytester) -> None:
    """Two SIGKILLs in a row left 383 lines for 255 cases in results.jsonl until a session ran to its end."""
    pytester.makefile(".yaml", **{"suites/echo": "models:\n  m: {provider: echo}\ntasks:\n  - {id: t, prompt: hi}\n"})
    pytester.runpytest("suites", *NO_CACHE, "--bench-run", "r", "--bench-runs", "3").assert_outcomes(passed=3)
    results = pytester.path / "bench-results" / "runs" / "r" / "results.jsonl"
    lines = results.read_text().splitlines()
    results.write_text("\n".join([*lines, lines[0], lines[1], lines[0]]) + "\n")  # what killed sessions appended
    pytester.makeconftest(SEEN_AT_START)
    pytester.runpytest("suites", *NO_CACHE, "--bench-run", "r", "--bench-runs", "3").assert_outcomes(passed=3)
    seen = json.loads((pytester.path / "seen.json").read_text())
    assert sorted(seen) == sorted(json.loads(line)["nodeid"] for line in lines)  # each case once, as it started
    assert len(run_records(pytester)) == 3


TWO_SCORINGS = """
suite: mix
models:
  parrot: {provider: echo}
tasks:
  - {id: first, prompt: "Say hi to Ada"}
  - {id: second, prompt: "Say hi to Bob"}
scorers:
  - {type: contains, value: SCORED}
"""


@pytest.mark.parametrize("named", [False, True], ids=["default output", "named run"])
def test_rejudging_some_cases_after_a_scoring_change_says_the_means_mix_two_scorings(
    pytester: pytest.Pytester, named: bool
) -> None:
    """``--bench-rejudge -k first`` put the re-judged case and the other, scored the old way, in one mean, silently."""
    run = ["suites", "-p", "no:cacheprovider", "--bench-html", "off", *(["--bench-run", "n"] if named else [])]
    folder = pytester.path / "bench-results" / ("runs/n" if named else "")
    pytester.makefile(".yaml", **{"suites/mix": TWO_SCORINGS.replace("SCORED", "hi")})
    pytester.runpytest(*run).assert_outcomes(passed=2)
    pytester.makefile(".yaml", **{"suites/mix": TWO_SCORINGS.replace("SCORED", "Ada")})  # the scoring changed
    result = pytester.runpytest(*run, "--bench-rejudge", "-k", "first")
    result.assert_outcomes(passed=1, deselected=1)
    result.stdout.fnmatch_lines(["*1 record kept from before was not re-judged this time (-k, -m or --lf left it "
                                 "out) and was scored otherwise than the 1 re-judged*the means mix two scorings*"])
    assert json.loads((folder / "summary.json").read_text(encoding="utf-8"))["scored_apart"] == \
        {"rejudged": 1, "other": 1}
    assert "**Two scorings**: 1 record kept from before" in (folder / "report.md").read_text(encoding="utf-8")

    everything = pytester.runpytest(*run, "--bench-rejudge")  # every case scored the same way again
    everything.assert_outcomes(passed=1, failed=1)
    everything.stdout.no_fnmatch_line("*two scorings*")
    assert "scored_apart" not in json.loads((folder / "summary.json").read_text(encoding="utf-8"))
