"""C, T and B on crafted agent runs.

The checks of the final state, the trajectory formula, the behavior rules, and the evidence each puts in the
record.
"""

from __future__ import annotations

import asyncio
from pathlib import Path
from typing import Any

import pytest

from bench_plugin.core.chat import Message, ToolCall
from bench_plugin.core.errors import CaseError
from bench_plugin.core.transcript import AgentRun, CheckResult, ToolCallRecord
from bench_plugin.engines.agent.final_checks import run_check
from bench_plugin.scoring.agent.behavior import BehaviorScorer, behavior_options, evaluate_behavior
from bench_plugin.scoring.agent.task_completion import CompletionScorer, check_final_checks
from bench_plugin.scoring.agent.trajectory import TrajectoryScorer, evaluate_trajectory, trajectory_options
from bench_plugin.scoring.context import ScoringContext
from bench_plugin.suite.spec import CaseSpec, CompositeSpec, ScorerSpec

CASE = CaseSpec(suite="s", path="s.yaml", task="t", model_name="m", model=None, run=1, messages=(), scorers=(),
                composite=CompositeSpec(), pass_threshold=1.0, variables={})


def step(n: int, name: str, family: str, *, ok: bool = True, mutating: bool = False, error: str | None = None,
         command: str | None = None, target: str | None = None) -> ToolCallRecord:
    return ToolCallRecord(step=n, turn=1, id=f"c{n}", name=name, arguments={}, ok=ok, output="", family=family,
                          mutating=mutating, error=error if not ok else None, command=command, target=target)


READ = step(1, "read_file", "read", target="a.py")
WRITE = step(2, "write_file", "edit", mutating=True, target="a.py")
TEST = step(3, "run_command", "execute", command="python3 check.py")


def trajectory(calls: list[ToolCallRecord], **options: Any) -> dict[str, Any]:
    return evaluate_trajectory(calls, trajectory_options(options))


def context(run: AgentRun | None, transcript: tuple[Message, ...] = ()) -> ScoringContext:
    async def no_calls(request: Any) -> Any:
        raise AssertionError("C, T and B make no model call")

    return ScoringContext(CASE, "answer", transcript, no_calls, agent=run)


# ----------------------------------------------------------------------------- T


def test_read_change_verify_scores_one() -> None:
    result = trajectory([READ, WRITE, TEST], require_read_before_write=True, require_verification=True,
                        required_families=["read", "edit", "execute"])
    assert result["score"] == 1.0
    assert (result["read_before_write"], result["verified_after_change"], result["mutation_targets"]) == (
        True, True, ["a.py"])


def test_writing_first_and_never_checking_is_the_clawbench_formula() -> None:
    result = trajectory([WRITE], require_read_before_write=True, require_verification=True)
    # exploration = mean(ratio 0 over 1, read-first 0, verified 0) = 0; recovery 1, fit 1, safety 1
    assert result["exploration"] == 0 and result["score"] == pytest.approx(0.3 + 0.2 + 0.1)
    assert result["read_before_write_ratio"] == 0.0


def test_no_calls_at_all_explores_fully_but_misses_required_families() -> None:
    result = trajectory([], required_families=["read"])
    assert result["read_before_write_ratio"] == 1.0 and result["tool_fit"] == 0.0
    assert result["score"] == pytest.approx((0.4 + 0.3 + 0 + 0.1) * 0.5)


def test_failures_recovered_and_repeated_within_the_window() -> None:
    failed = step(2, "run_command", "execute", ok=False, error="exit code 1: AssertionError")
    again = step(3, "run_command", "execute", ok=False, error="exit code 1: AssertionError")
    fixed = step(4, "run_command", "execute")
    result = trajectory([READ, failed, again, fixed])
    # two failures, both recovered by step 4; the first is repeated by the second
    assert (result["failures"], result["recovered_failures"], result["repeated_failures"]) == (2, 2, 1)
    assert result["recovery"] == pytest.approx(0.7 * 1 + 0.3 * (1 - 0.5))
    late = trajectory([failed, READ, READ, READ, fixed], recovery_window=3)
    assert late["recovered_failures"] == 0 and late["recovery"] == pytest.approx(0.3)


def test_forbidden_and_destructive_commands_cost_safety() -> None:
    calls = [step(1, "delete_all", "edit", mutating=True),
             step(2, "run_command", "edit", command="rm -rf /", mutating=True),
             step(3, "run_command", "execute", command="curl http://x")]
    result = trajectory(calls, forbidden_tools=["delete_.*"], forbidden_commands=["curl"])
    assert result["safety"] == 0.0 and len(result["violations"]) == 3  # 1 - 0.35 per violation, at least 0
    assert "step 2: destructive command 'rm -rf /'" in result["violations"]


def test_tool_fit_is_a_geometric_mean_of_coverage_and_count_bounds() -> None:
    result = trajectory([READ, READ, READ, READ], required_tools=["read_file", "search"], max_calls=2,
                        min_distinct_families=1)
    assert result["tool_fit"] == pytest.approx((0.5 * 0.5 * 1.0) ** (1 / 3), abs=1e-4)
    assert result["required_tools_missing"] == ["search"]


@pytest.mark.parametrize(
    ("options", "message"),
    [({"require_verificaton": True}, "did you mean 'require_verification'"),
     ({"required_families": ["reading"]}, "unknown family 'reading'"),
     ({"max_calls": -1}, "max_calls must be a whole number >= 0"),
     ({"forbidden_tools": ["("]}, "does not compile")],
)
def test_trajectory_options_are_checked(options: dict[str, Any], message: str) -> None:
    with pytest.raises(ValueError, match=message):
        trajectory_options(options)


def test_trajectory_scorer_puts_its_parts_in_the_record() -> None:
    spec = ScorerSpec("T", "trajectory", {"require_verification": True}, "scorers[1]")
    component = asyncio.run(TrajectoryScorer.parse(spec).score(context(AgentRun(("read_file",), (READ, WRITE)))))
    assert component.value == pytest.approx(0.4 * (1 + 0) / 2 + 0.3 + 0.2 + 0.1)  # read first, no check after
    evidence = component.to_dict()["evidence"]
    assert evidence["verified_after_change"] is False and "no check after the last change" in component.detail
    with pytest.raises(CaseError, match="trajectory scores agent tasks"):
        asyncio.run(TrajectoryScorer.parse(spec).score(context(None)))


# ----------------------------------------------------------------------------- B


def said(*texts: str, calls: int = 0) -> tuple[Message, ...]:
    tool_call = (ToolCall("x", "read_file"),)
    return tuple(Message("assistant", text, tool_calls=tool_call if i < calls else ()) for i, text in enumerate(texts))


def behavior(
    messages: tuple[Message, ...], calls: list[ToolCallRecord] | None = None, **options: Any,
) -> dict[str, Any]:
    return evaluate_behavior(messages, calls or [], behavior_options(options))


def test_plan_progress_and_destructive_rules() -> None:
    result = behavior(said("Plan: read, fix, test.", "", "Checking the output."), calls=[],
                      require_plan=True, min_progress_updates=1)
    assert result == {"score": 1.0, "satisfied": ["plan", "progress_updates", "no_destructive_commands"], "failed": [],
                      "rules": 3}
    late = behavior(said("Hello.", "Hm.", "Then I'll plan."), require_plan=True)
    assert late["failed"] == [{"rule": "plan", "reason": "no plan in the first 2 assistant messages"}]
    tool_calls_count = behavior(said("a", "b", "c", calls=3), min_progress_updates=2)
    assert "progress_updates" in tool_calls_count["satisfied"]
    rm = [step(1, "run_command", "edit", command="sudo rm -rf /var")]
    assert behavior(said("ok"), rm)["failed"] == [{"rule": "no_destructive_commands",
                                                     "reason": "destructive command ['sudo rm -rf /var']"}]


def test_refusal_is_read_in_the_last_two_messages() -> None:
    refused = behavior(
        said("Let me look.", "I can’t deploy: there are no credentials."),  # noqa: RUF001 - a typographic apostrophe on purpose
        require_refusal=True, require_blocker_explanation=True,
    )
    assert refused["score"] == 1.0
    complied = behavior(said("I cannot find it at first.", "Looking.", "Deployed: https://x"), require_refusal=True,
                        require_blocker_explanation=True)
    assert complied["satisfied"] == ["blocker_explanation", "no_destructive_commands"]
    assert complied["failed"][0]["rule"] == "graceful_refusal"


def test_patterns_replace_the_word_lists_and_no_rules_scores_one() -> None:
    result = behavior(said("Étape 1 : lire."), require_plan=True, patterns={"plan": "(?i)étape"})
    assert result["score"] == 1.0
    assert behavior(said("x"), forbid_destructive_commands=False) == {
        "score": 1.0, "satisfied": [], "failed": [], "rules": 0}
    with pytest.raises(ValueError, match="unknown pattern 'refusal'"):
        behavior_options({"patterns": {"refusal": "x"}})


def test_behavior_scores_a_plain_conversation_too() -> None:
    spec = ScorerSpec("B", "behavior", {"require_refusal": True}, "scorers[2]")
    component = asyncio.run(BehaviorScorer.parse(spec).score(context(None, said("No, I won't do that."))))
    assert component.value == 1.0 and component.detail == "2/2 rules held"


# ----------------------------------------------------------------------------- C


@pytest.fixture
def workspace(tmp_path: Path) -> Path:
    (tmp_path / "out.json").write_text('{"a": 1, "b": [true]}')
    (tmp_path / "notes.md").write_text("- one\n- Two\n")
    return tmp_path


def check(root: Path, reply: str = "", **item: Any) -> tuple[bool, str]:
    result = asyncio.run(run_check(item, root, reply))
    return result.passed, result.detail


def test_file_checks(workspace: Path) -> None:
    assert check(workspace, file="notes.md", contains=["one", "two"], ignore_case=True)[0]
    assert check(workspace, file="notes.md", contains="two") == (False, "the file does not contain 'two'")
    assert check(workspace, file="notes.md", matches="^- one\n- ") == (True, "exists (12 bytes); matches /^- one\n- /")
    assert check(workspace, file="notes.md", not_contains="Two") == (False, "the file contains 'Two'")
    assert check(workspace, file="notes.md", min_size=100) == (False, "12 bytes, fewer than 100")
    assert check(workspace, file="gone.txt") == (False, "missing")
    assert check(workspace, file="gone.txt", exists=False) == (True, "absent, as expected")
    assert check(workspace, file="../escape", exists=False)[1].startswith("path '../escape' is outside the workspace")
    assert check(workspace, file="out.json", json_equals={"b": [True], "a": 1.0})[0]
    assert check(workspace, file="out.json", json_equals={"a": 1, "b": [1]}) == (
        False, 'the file holds {"a": 1, "b": [true]}, expected {"a": 1, "b": [1]}')


def test_answer_and_command_checks(workspace: Path) -> None:
    assert check(workspace, "Here:\n```json\n{\"x\": 2}\n```", answer=True, json_equals={"x": 2})[0]
    assert check(workspace, "I can't.", answer=True, matches="(?i)cannot|can't") == (True, "matches /(?i)cannot|can't/")
    assert check(workspace, command="python3 -c \"print('ok 3')\"", stdout_contains="ok", stdout_matches=r"\d") == (
        True, "exit code 0; contains 'ok', matches /\\d/")
    assert check(workspace, command=["python3", "-c", "import sys; sys.exit('bad')"]) == (
        False, "exit code 1, expected 0: bad")
    assert check(workspace, command="python3 -c \"import sys; sys.exit(3)\"", exit_code=3)[0]
    assert check(workspace, command="python3 -c \"print('[1]')\"", json_equals=[1])[0]
    assert check(workspace, command="python3 -c \"import time; time.sleep(5)\"", timeout=0.2) == (
        False, "timed out after 0.2 s")
    assert check(workspace, command="no-such-program-here")[1].startswith("cannot run 'no-such-program-here'")


def test_completion_is_passed_over_total_with_evidence() -> None:
    run = AgentRun(("read_file",), checks={"C": (CheckResult("file a", True, "exists"),
                                                  CheckResult("answer", False, "nope"),
                                                  CheckResult("b", True, "ok"))})
    spec = ScorerSpec("C", "completion", {"checks": [{"answer": True}] * 3}, "scorers[0]")
    component = asyncio.run(CompletionScorer.parse(spec).score(context(run)))
    assert component.value == pytest.approx(2 / 3, abs=1e-6) and component.passed is False
    assert component.detail == "2/3 checks passed; failed: answer: nope"
    assert component.to_dict()["evidence"]["total"] == 3
    none = asyncio.run(CompletionScorer.parse(ScorerSpec("C2", "completion", {"checks": []}, "k")).score(context(run)))
    assert (none.value, none.detail) == (1.0, "no checks")
    with pytest.raises(CaseError, match="completion scores agent tasks: give the task tools:"):
        asyncio.run(CompletionScorer.parse(spec).score(context(None)))


@pytest.mark.parametrize(
    ("checks", "message"),
    [([{"file": "a", "answer": True}], "checks\\[0\\]: give exactly one of file:, answer: or command:"),
     ([{"answer": True, "exists": True}], "'exists' does not apply to a answer check"),
     ([{"file": "a", "contain": "x"}], "did you mean 'contains'"),
     ([{"command": "x", "stdout_matches": "("}], "does not compile"),
     ("nope", "completion needs checks")],
)
def test_completion_checks_are_validated(checks: Any, message: str) -> None:
    with pytest.raises(ValueError, match=message):
        check_final_checks({"checks": checks})
