"""Conversation tasks expand into multi_turn cases whose turns are checked but not yet rendered."""

from __future__ import annotations

from pathlib import Path

from bench_plugin.core.chat import Message
from bench_plugin.suite.build import BuildOptions, build_suite
from bench_plugin.suite.expand import ExpandOptions, expand_suite
from bench_plugin.suite.loader import load_suite_text
from bench_plugin.suite.sources import TemplateSpec
from bench_plugin.suite.spec import CaseSpec


def expand(text: str, tmp_path: Path) -> list[CaseSpec]:
    path = tmp_path / "demo.yaml"
    path.write_text(text)
    loaded = load_suite_text(text, path=path, display_path="suites/demo.yaml")
    return expand_suite(build_suite(loaded, BuildOptions()), ExpandOptions())


SUITE = """\
models:
  a: {provider: echo}
system: Be brief.
tasks:
  - id: single
    prompt: Hi
  - id: chat
    turns:
      - "Name a city in {{ country }}."
      - content: "Why {{ answers[-1] }}?"
        when: {regex: "(?i)paris", not_contains: sorry}
    vars: {country: France}
  - id: staged
    phases:
      - turns: [One]
      - system: "Phase {{ phase }}"
        turns: [Two]
"""


def test_the_engine_follows_the_kind_of_task(tmp_path: Path) -> None:
    engines = {case.task: case.engine for case in expand(SUITE, tmp_path)}
    assert engines == {"single": "single_turn", "chat": "turns", "staged": "turns"}


def test_turns_keep_their_source_line_and_gate_and_the_prompt_keeps_only_the_system(tmp_path: Path) -> None:
    chat = expand(SUITE, tmp_path)[1]
    assert chat.messages == (Message("system", "Be brief."),)
    assert chat.turns is not None
    (phase,) = chat.turns.phases
    first, second = phase.turns
    assert first.content == TemplateSpec("Name a city in {{ country }}.", key="tasks[1].turns[0]", line=8)
    assert second.content.key == "tasks[1].turns[1].content" and second.content.line == 9
    assert second.when == {"regex": "(?i)paris", "not_contains": "sorry"}


def test_phases_keep_their_own_system_templates(tmp_path: Path) -> None:
    staged = expand(SUITE, tmp_path)[2]
    assert staged.turns is not None
    first, second = staged.turns.phases
    assert first.system is None and second.system is not None and second.system.source == "Phase {{ phase }}"
    assert [turn.content.source for phase in (first, second) for turn in phase.turns] == ["One", "Two"]


def test_turns_from_one_expression_are_sent_as_they_are(tmp_path: Path) -> None:
    suite = (
        "models:\n  a: {provider: echo}\nvariables:\n  qs: ['Use {braces}', 'Then {{ this }}']\n"
        "tasks:\n  - id: t\n    turns: '{{ qs }}'\n"
    )
    (case,) = expand(suite, tmp_path)
    assert case.problem is None and case.turns is not None
    turns = case.turns.phases[0].turns
    assert [(t.content.source, t.content.literal) for t in turns] == [("Use {braces}", True), ("Then {{ this }}", True)]


def test_a_broken_turn_fails_its_case_before_any_call(tmp_path: Path) -> None:
    suite = "models:\n  a: {provider: echo}\ntasks:\n  - id: t\n    turns:\n      - ok\n      - '{% if %}'\n"
    (case,) = expand(suite, tmp_path)
    assert case.problem is not None
    assert str(case.problem).startswith("suites/demo.yaml:7: tasks[0].turns[1]: template error")
