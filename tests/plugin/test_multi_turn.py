"""Scripted multi-turn conversations end to end: history, templates, gates, phases, thinking, per-turn judging."""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from bench_plugin.mock.server import MockServer


def records(pytester: pytest.Pytester) -> dict[str, dict[str, Any]]:
    path = pytester.path / "bench-results" / "results.jsonl"
    return {(r := json.loads(line))["nodeid"].split("::")[1]: r for line in path.read_text().splitlines()}


def mock_model(server: MockServer, *rules: dict[str, Any]) -> tuple[str, str]:
    """A model id of its own on the mock server, and the providers: block that reaches it."""
    model_id = f"mt-{uuid.uuid4().hex[:8]}"
    for rule in rules:
        server.add_rule({"model": model_id, **rule})
    return model_id, f"providers:\n  local: {{type: openai_compatible, base_url: '{server.openai_base_url}'}}\n"


def sent_messages(server: MockServer, model_id: str) -> list[list[dict[str, Any]]]:
    return [r["body"]["messages"] for r in server.requests if r["model"] == model_id]


def test_model_sees_the_whole_history_with_its_raw_replies(pytester: pytest.Pytester, mock_server: MockServer) -> None:
    model_id, providers = mock_model(mock_server, {"match": "city", "reply": "<think>pick one</think> Paris"})
    suite = providers + (
        f"models:\n  m: {{provider: local, id: {model_id}, thinking: true}}\n"
        "tasks:\n"
        "  - id: chat\n"
        "    system: Be brief.\n"
        "    turns:\n"
        "      - Name a city.\n"
        "      - 'Why {{ answers[0] }}?'\n"
        "scorers:\n  - {type: equals, value: 'echo: Why Paris?'}\n"
    )
    pytester.makefile(".yaml", **{"suites/chat": suite})
    pytester.runpytest("suites").assert_outcomes(passed=1)
    first, second = sent_messages(mock_server, model_id)
    assert first == [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Name a city."}]
    assert second == [
        *first,
        {"role": "assistant", "content": "<think>pick one</think> Paris"},
        {"role": "user", "content": "Why Paris?"},
    ]
    record = records(pytester)["chat[m-run1]"]
    assert record["response"] == "echo: Why Paris?"
    assert record["usage"]["calls"] == 2
    turn1, turn2 = record["turns"]
    assert (turn1["raw"], turn1["answer"], turn1["thinking"], turn1["format_valid"]) == (
        "<think>pick one</think> Paris", "Paris", "pick one", True
    )
    assert (turn2["user"], turn2["answer"], turn2["format_valid"], turn2["call"]) == (
        "Why Paris?", "echo: Why Paris?", False, 2
    )
    assert turn2["input_tokens"] > 0 and turn2["latency_s"] > 0


def test_turn_templates_see_earlier_answers_and_the_turn_number(pytester: pytest.Pytester) -> None:
    suite = (
        "models:\n  bot:\n    provider: scripted\n    thinking: true\n"
        "    script:\n      - {reply: ['<think>a</think>first', 'second', 'third']}\n"
        "tasks:\n"
        "  - id: recall\n"
        "    vars: {topic: tea}\n"
        "    turns:\n"
        "      - 'About {{ topic }}.'\n"
        "      - 'More.'\n"
        "      - 'Turn {{ turn }} of {{ model.name }}: {{ answers | join(\"+\") }} / {{ raw_answers | join(\"+\") }}'\n"
    )
    pytester.makefile(".yaml", **{"suites/recall": suite})
    pytester.runpytest("suites").assert_outcomes(passed=1)
    record = records(pytester)["recall[bot-run1]"]
    assert [t["user"] for t in record["turns"]] == [
        "About tea.", "More.", "Turn 3 of bot: first+second / <think>a</think>first+second"
    ]
    assert [m["role"] for m in record["transcript"]] == ["user", "assistant"] * 3
    assert record["messages"] == []  # no system prompt: the turns are rendered as the conversation goes


GATED = """\
models:
  agreeable:
    provider: scripted
    script: [{reply: "Yes, go on."}]
  stubborn:
    provider: scripted
    script: [{reply: "No."}]
tasks:
  - id: gated
    turns:
      - Shall I continue?
      - content: Then tell me more.
        when: {regex: "(?i)^yes"}
      - content: Why not?
        when: {not_regex: "(?i)^yes", not_contains: "Yes"}
"""


def test_a_gated_turn_is_sent_only_when_its_condition_holds_on_the_last_answer(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/gated": GATED})
    pytester.runpytest("suites").assert_outcomes(passed=2)
    found = records(pytester)
    agreeable, stubborn = found["gated[agreeable-run1]"], found["gated[stubborn-run1]"]
    assert [t["skipped"] for t in agreeable["turns"]] == [False, False, True]
    assert agreeable["turns"][2]["skip_reason"] == "not_regex /(?i)^yes/ matched the last answer"
    assert [t["skipped"] for t in stubborn["turns"]] == [False, True, False]
    assert stubborn["turns"][1]["skip_reason"] == "regex /(?i)^yes/ did not match the last answer"
    third = stubborn["turns"][2]
    assert (third["index"], third["call"], third["user"], third["answer"]) == (3, 2, "Why not?", "No.")
    assert [m["content"] for m in stubborn["transcript"] if m["role"] == "user"] == ["Shall I continue?", "Why not?"]
    assert agreeable["usage"]["calls"] == stubborn["usage"]["calls"] == 2


def test_phases_start_fresh_conversations_that_keep_the_answers(
    pytester: pytest.Pytester, mock_server: MockServer
) -> None:
    model_id, providers = mock_model(mock_server)
    suite = providers + (
        f"models:\n  m: {{provider: local, id: {model_id}}}\n"
        "tasks:\n"
        "  - id: staged\n"
        "    system: You take notes.\n"
        "    phases:\n"
        "      - turns: [Remember 42., Repeat it.]\n"
        "      - system: 'You recall. Earlier answers: {{ answers | length }}'\n"
        "        turns: ['Earlier you said: {{ answers[0] }}']\n"
        "      - turns: [Last.]\n"
    )
    pytester.makefile(".yaml", **{"suites/staged": suite})
    pytester.runpytest("suites").assert_outcomes(passed=1)
    calls = sent_messages(mock_server, model_id)
    assert len(calls) == 4
    assert calls[1][0] == {"role": "system", "content": "You take notes."} and len(calls[1]) == 4
    assert calls[2] == [
        {"role": "system", "content": "You recall. Earlier answers: 2"},
        {"role": "user", "content": "Earlier you said: echo: Remember 42."},
    ]
    assert calls[3] == [{"role": "system", "content": "You take notes."}, {"role": "user", "content": "Last."}]
    record = records(pytester)["staged[m-run1]"]
    assert [(t["index"], t["phase"], t["call"]) for t in record["turns"]] == [
        (1, 1, 1), (2, 1, 2), (3, 2, 3), (4, 3, 4),
    ]
    assert [m["role"] for m in record["transcript"]].count("system") == 3


THINKING = """\
defaults:
  thinking:
    tags: [["<think>", "</think>"], ["<reasoning>", "</reasoning>"]]
models:
  thinker:
    provider: scripted
    script:
      - {task: valid, reply: "<THINK> 6 times 7 </think>\\n42"}
      - {task: other-tags, reply: "<reasoning>6*7</reasoning> 42"}
      - {task: two-pairs, reply: "<think>a</think><think>b</think>42"}
      - {task: missing, reply: "42"}
  plain:
    provider: scripted
    thinking: false
    script: [{reply: "<think>x</think>42"}]
tasks:
  - {id: valid, models: [thinker], prompt: "6 * 7?"}
  - {id: other-tags, models: [thinker], prompt: "6 * 7?"}
  - {id: two-pairs, models: [thinker], prompt: "6 * 7?"}
  - {id: missing, models: [thinker], prompt: "6 * 7?"}
  - {id: untouched, models: [plain], prompt: "6 * 7?"}
scorers:
  - {name: A, type: equals, value: "42"}
  - {name: R, type: regex, pattern: "42$", target: raw}
"""


def test_thinking_tags_are_split_from_the_answer_scorers_see(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/thinking": THINKING})
    pytester.runpytest("suites").assert_outcomes(passed=3, failed=2)
    found = {key.split("[")[0]: record for key, record in records(pytester).items()}
    summary = {task: (r["status"], r["response"], r["turns"][0]["thinking"], r["turns"][0]["format_valid"])
               for task, r in found.items()}
    assert summary == {
        "valid": ("passed", "42", "6 times 7", True),
        "other-tags": ("passed", "42", "6*7", True),
        "two-pairs": ("failed", "<think>a</think><think>b</think>42", None, False),
        "missing": ("passed", "42", None, False),
        "untouched": ("failed", "<think>x</think>42", None, None),
    }
    assert found["valid"]["transcript"][-1]["content"] == "<THINK> 6 times 7 </think>\n42"  # history keeps it raw
    report = (pytester.path / "bench-results" / "report.md").read_text()
    assert "| thinker | 50.0% |" in report  # 2 of the 4 checked replies had exactly one pair


PER_TURN = """\
models:
  bot:
    provider: scripted
    script: [{reply: ["Paris", "Berlin"]}]
  stuck:
    provider: scripted
    script: [{reply: "Paris"}]
judges:
  grader:
    provider: scripted
    script:
      - regex: "Reference: (.*)\\nAnswer: (.*)"
        reply: "{% if groups[1] == groups[2] %}[[10]]{% else %}[[1]]{% endif %} for: {{ last_user }}"
tasks:
  - id: capitals
    turns: ["Capital of France?", "Capital of Germany?"]
scorers:
  - name: J
    type: llm_judge
    judge: grader
    per_turn: true
    reference: [Paris, Bonn]
    prompt: "{{ context }}\\nQuestion {{ turn }}: {{ question }}\\nReference: {{ reference }}\\nAnswer: {{ answer }}"
  - name: K
    type: llm_judge
    judge: grader
    per_turn: true
    reference: "{{ ['Paris', 'Berlin'][turn - 1] }}"
    prompt: "Reference: {{ reference }}\\nAnswer: {{ answer }}"
  - {name: C, type: contains, value: Berlin}
composite: "0.4*J + 0.4*K + 0.2*C"
pass_threshold: 0.5
"""


def test_per_turn_judging_with_references_per_turn_and_turn_means_in_the_report(pytester: pytest.Pytester) -> None:
    pytester.makefile(".yaml", **{"suites/per_turn": PER_TURN})
    pytester.runpytest("suites").assert_outcomes(passed=1, failed=1)
    record = records(pytester)["capitals[bot-run1]"]
    components = {c["name"]: c for c in record["scores"]["components"]}
    assert list(components) == ["J", "J.t1", "J.t2", "K", "K.t1", "K.t2", "C"]
    assert [components[n]["value"] for n in ("J", "J.t1", "J.t2", "K", "K.t1", "K.t2")] == [
        0.5, 1.0, 0.0, 1.0, 1.0, 1.0,
    ]
    assert (components["J.t2"]["turn"], components["J.t2"]["scorer"]) == (2, "J")
    assert record["composite"] == pytest.approx(0.4 * 0.5 + 0.4 * 1.0 + 0.2)
    assert [t["scores"] for t in record["turns"]] == [{"J": 1.0, "K": 1.0}, {"J": 0.0, "K": 1.0}]
    # turn 2 is judged as turn 2, with turn 1 as context and its own reference
    assert components["J.t2"]["judge_output"] == (
        "[[1]] for: User: Capital of France?\nAssistant: Paris\nQuestion 2: Capital of Germany?\n"
        "Reference: Bonn\nAnswer: Berlin"
    )
    assert components["J.t1"]["judge_output"].startswith(
        "[[10]] for: \nQuestion 1: Capital of France?\nReference: Paris"
    )
    report = (pytester.path / "bench-results" / "report.md").read_text()
    assert "| Model | Cases | Pass rate | Mean score | J | K | C |" in report.replace("\\", "")
    assert "### Turns" in report
    assert "| bot | J | 1.0000 | 0.0000 |" in report
    assert "| bot | K | 1.0000 | 1.0000 |" in report
    assert "| stuck | K | 1.0000 | 0.0000 |" in report


def test_a_misspelt_turn_key_points_at_its_line(pytester: pytest.Pytester) -> None:
    suite = "models:\n  m: {provider: echo}\ntasks:\n  - id: t\n    turns:\n      - Hello\n      - contnet: World\n"
    pytester.makefile(".yaml", **{"suites/typo": suite})
    result = pytester.runpytest("suites")
    result.assert_outcomes(errors=1)
    result.stdout.fnmatch_lines([
        "suites/typo.yaml:7: tasks[[]0[]].turns[[]1[]].contnet: unknown key 'contnet'",
        "*> 7 |       - contnet: World",
        "*hint: did you mean 'content'?",
    ])


def test_a_bad_gate_or_turn_template_fails_its_case_alone_at_its_line(pytester: pytest.Pytester) -> None:
    suite = (
        "models:\n  m: {provider: echo}\n"
        "tasks:\n"
        "  - id: bad-gate\n    turns:\n      - Hello\n      - {content: World, when: {regex: '('}}\n"
        "  - id: bad-name\n    turns:\n      - Hello\n      - 'World {{ nmae }}'\n"
        "  - id: fine\n    turns: [Hello]\n"
    )
    pytester.makefile(".yaml", **{"suites/broken": suite})
    result = pytester.runpytest("suites")
    result.assert_outcomes(passed=1, failed=2)
    result.stdout.fnmatch_lines([
        "suites/broken.yaml:7: tasks[[]0[]].turns[[]1[]].when: regex /(/ does not compile*",
        "suites/broken.yaml:11: tasks[[]1[]].turns[[]1[]]: template error: 'nmae' is undefined",
    ])
