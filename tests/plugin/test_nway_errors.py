"""Mistakes in a conversation point at the YAML.

Schema and static errors stop collection with file:line, problems of one case (an unknown model, a bad
template file) fail that case alone.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest

BASE = """\
models:
  a: {provider: scripted, script: [{reply: hi}]}
  b: {provider: scripted, default: false, script: [{reply: yo}]}
tasks:
  - id: talk
    conversation:
      mode: MODE
      participants: [{}, {model: b}]
      max_turns: 2
"""


def pattern(text: str) -> str:
    """An fnmatch pattern for a line containing ``text`` (its brackets taken literally)."""
    return "*" + re.sub(r"([][?])", r"[\1]", text.lstrip("*")) + "*"


def collection_error(pytester: pytest.Pytester, suite: str) -> pytest.RunResult:
    pytester.makefile(".yaml", **{"suites/bad": suite})
    result = pytester.runpytest("suites")
    result.assert_outcomes(errors=1)
    return result


@pytest.mark.parametrize(
    ("extra", "expected"),
    [
        ("      max_turn: 3\n",
         ["suites/bad.yaml:10: tasks[0].conversation.max_turn: unknown key 'max_turn'",
          "*hint: did you mean 'max_turns'?"]),
        ("      commands:\n        hush: {action: silence}\n",
         [("suites/bad.yaml:11: tasks[0].conversation.commands.hush.action: expected one of set_temperature, "
           "append_system, mute, invite, got 'silence'")]),
        ("      commands:\n        temp:\n          action: set_temperature\n          range: [2, 0]\n",
         ["suites/bad.yaml:13: tasks[0].conversation.commands.temp.range: range [2, 0] must go from low to high"]),
        ("      commands:\n        hush:\n          action: mute\n          range: [0, 1]\n",
         ["suites/bad.yaml:13: tasks[0].conversation.commands.hush.range: option 'range' does not apply to action mute",
          "*hint: options of mute: action, hide, notice, max_uses"]),
        ("      commands:\n        add: {action: invite}\n",
         ["suites/bad.yaml:11: tasks[0].conversation.commands.add: action invite needs 'models'"]),
        ("      seed: hello\n",
         ["suites/bad.yaml:10: tasks[0].conversation.seed: 'seed' applies only to mode: shared",
          "*> 10 |       seed: hello",
          "*hint: in broadcast mode each participant starts from its own context:"]),
        ("      stop_sequences: ^C^C\n",
         ["suites/bad.yaml:10: tasks[0].conversation.stop_sequences: expected a list, got '^C^C'"]),
    ],
)
def test_bad_conversation_keys_stop_collection_with_file_and_line(
    pytester: pytest.Pytester, extra: str, expected: list[str]
) -> None:
    result = collection_error(pytester, BASE.replace("MODE", "broadcast") + extra)
    result.stdout.fnmatch_lines([pattern(line) for line in expected])


def test_shared_conversations_take_no_template_and_no_context(pytester: pytest.Pytester) -> None:
    suite = BASE.replace("MODE", "shared").replace(
        "[{}, {model: b}]", "[{context: [{role: user, content: x}]}, {model: b}]"
    )
    result = collection_error(pytester, suite)
    result.stdout.fnmatch_lines([pattern("suites/bad.yaml:8: tasks[0].conversation.participants[0].context: "
                                         "'context' applies only to mode: broadcast")])


def test_a_conversation_needs_two_participants_and_a_number_of_rounds(pytester: pytest.Pytester) -> None:
    suite = BASE.replace("MODE", "shared").replace("[{}, {model: b}]", "[{}]")
    collection_error(pytester, suite).stdout.fnmatch_lines(
        [pattern("suites/bad.yaml:8: tasks[0].conversation.participants: expected at least 2 items, got a list of 1")]
    )
    suite = BASE.replace("MODE", "shared").replace("      max_turns: 2\n", "")
    collection_error(pytester, suite).stdout.fnmatch_lines(
        [pattern("suites/bad.yaml:6: tasks[0].conversation: missing required key 'max_turns'")]
    )


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        (("{model: b}", "{model: bee}"),
         ("suites/bad.yaml:8: tasks[0].conversation.participants[1].model: unknown model 'bee'; "
          "models of this suite: a, b")),
        (("{model: b}", "{model: '{{ others[0] }}'}"),
         ("suites/bad.yaml:8: tasks[0].conversation.participants[1].model: this conversation seats 2 models (the "
          "model under test, others[0]), and the run has 1: a")),
        (("[{}, {model: b}]", "[{name: X}, {model: b, name: X}]"),
         ("suites/bad.yaml:8: tasks[0].conversation.participants[1].name: two participants are named 'X' "
          "(participants 1 and 2)")),
        (("      max_turns: 2\n", "      max_turns: 2\n      order: [AI-1, AI-9]\n"),
         "suites/bad.yaml:10: tasks[0].conversation.order[1]: unknown speaker 'AI-9'"),
        (("      max_turns: 2\n", "      max_turns: 2\n      template: missing.jsonl\n"),
         "suites/bad.yaml:10: tasks[0].conversation.template: cannot read missing.jsonl: No such file or directory"),
        (("      max_turns: 2\n", "      max_turns: 2\n      template: ../bad.yaml\n"),
         "suites/bad.yaml:10: tasks[0].conversation.template: ../bad.yaml is outside the suite's folder"),
    ],
)
def test_a_problem_of_one_case_fails_that_case_with_its_line(
    pytester: pytest.Pytester, change: tuple[str, str], expected: str
) -> None:
    suite = BASE.replace("MODE", "broadcast").replace(*change)
    suite += "  - {id: fine, prompt: hello}\n"
    pytester.makefile(".yaml", **{"suites/bad": suite})
    result = pytester.runpytest("suites")
    result.assert_outcomes(passed=1, failed=1)
    result.stdout.fnmatch_lines([pattern(expected)])


@pytest.mark.parametrize(
    ("lines", "expected"),
    [
        ('{"system_prompt": "x", "context": []}\n',
         "template: one.jsonl has 1 participant lines but the conversation has 2 participants"),
        ('{"system_prompt": "x"}\nnot json\n', "template: one.jsonl:2: invalid JSON: Expecting value"),
        ('{"system_prompt": "x", "context": [{"role": "system", "content": "y"}]}\n{}\n',
         "template: one.jsonl:1: context[0]: expected {\"role\": \"user\" or \"assistant\", \"content\": text}"),
        ('{"system_prompt": "I am {lm1_actor}, you are {lm3_actor}"}\n{}\n',
         "template: placeholder {lm3_actor} names participant 3, but there is no such participant"),
        ('{"system_prompt": "{lm1_colour}"}\n{}\n',
         "template: unknown placeholder {lm1_colour}: participants have actor, company, model"),
    ],
)
def test_a_bad_template_file_fails_its_cases_with_the_file_line(
    pytester: pytest.Pytester, lines: str, expected: str
) -> None:
    (pytester.path / "suites").mkdir()
    (pytester.path / "suites" / "one.jsonl").write_text(lines)
    suite = BASE.replace("MODE", "broadcast") + "      template: one.jsonl\n"
    pytester.makefile(".yaml", **{"suites/bad": suite})
    result = pytester.runpytest("suites")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([pattern(f"suites/bad.yaml:10: tasks[0].conversation.{expected}")])


def test_a_three_seat_conversation_with_one_model_says_how_many_it_needs(pytester: pytest.Pytester) -> None:
    """``pytest suites/backrooms --bench-models vllm:M`` said "list object has no element 0" for every case."""
    bundled = Path(__file__).resolve().parents[2] / "suites" / "backrooms" / "backrooms.yaml"
    pytester.makefile(".yaml", **{"suites/backrooms": bundled.read_text(encoding="utf-8")})
    result = pytester.runpytest("suites", "-p", "no:cacheprovider", "--bench-models", "vllm:M")
    result.assert_outcomes(failed=1)
    result.stdout.fnmatch_lines([
        pattern("conversation.participants[1].model: this conversation seats 3 models (the model under test, "
                "others[0], others[1]), and the run has 1: vllm:M"),
        pattern("hint: name 3 models with --bench-models (comma-separated); each takes seat 1 in its cases"),
    ])
