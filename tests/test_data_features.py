"""Data features: what a dataset row and a scorer can bring to a case.

Messages from a dataset field, fromjson, row_index, scorer vars and definitions, row scorers, templated thresholds.
"""

from __future__ import annotations

import json
import re
from pathlib import Path

import pytest
from suite_expansion import build_error, expand

from bench_plugin.core.errors import CaseError
from bench_plugin.scoring.bind import ScoringBinder, WithVariables
from bench_plugin.scoring.judge.prompt import judge_names
from bench_plugin.scoring.registry import SCORER_TYPES
from bench_plugin.suite.messages import messages_from_data
from bench_plugin.suite.row_scorers import parse_shorthand
from bench_plugin.suite.schema import suite_schema
from bench_plugin.suite.templates import TemplateRenderer

MODELS = "models:\n  a: {provider: echo}\n"
CHATS = "\n".join(json.dumps(row) for row in [
    {"id": "q1", "messages": [{"role": "system", "content": "Be brief."}, {"role": "user", "content": "Hi {{ x }}"}],
     "threshold": 0.5},
    {"id": "q2", "messages": [{"role": "user", "content": "Second", "name": "ada", "source": "input"}],
     "threshold": "0.75"},
]) + "\n"


# --- messages from data -------------------------------------------------------------------------------------------

def test_messages_from_a_dataset_field_are_sent_as_written(tmp_path: Path) -> None:
    text = MODELS + "tasks:\n  - id: 'c-{{ id }}'\n    dataset: {file: chats.jsonl}\n    messages: '{{ messages }}'\n"
    first, second = expand(text, tmp_path, {"chats.jsonl": CHATS})
    assert [(m.role, m.content) for m in first.messages] == [("system", "Be brief."), ("user", "Hi {{ x }}")]
    assert [(m.role, m.content, m.name) for m in second.messages] == [("user", "Second", "ada")]


def test_a_tasks_system_beside_messages_is_sent_after_their_own_system_messages(tmp_path: Path) -> None:
    """inspect_ai's ``system_message`` ports as a task's ``system:``: it is sent, never dropped; the suite's is not."""
    text = MODELS + ("system: The suite's, for prompts only.\n"
                     "tasks:\n  - id: 'c-{{ id }}'\n    dataset: {file: chats.jsonl}\n    messages: '{{ messages }}'\n"
                     "    system: 'Reply to {{ id }} in one word.'\n"
                     "  - id: plain\n    messages: [{role: user, content: Hi}]\n")
    first, second, plain = expand(text, tmp_path, {"chats.jsonl": CHATS})
    assert [(m.role, m.content) for m in first.messages] == [
        ("system", "Be brief."), ("system", "Reply to q1 in one word."), ("user", "Hi {{ x }}")]
    assert [(m.role, m.content) for m in second.messages] == [
        ("system", "Reply to q2 in one word."), ("user", "Second")]
    assert [(m.role, m.content) for m in plain.messages] == [("user", "Hi")]


def test_messages_from_json_text_with_fromjson(tmp_path: Path) -> None:
    csv = 'q,chat\nq1,"[{""role"": ""user"", ""content"": ""From CSV""}]"\n'
    text = MODELS + "tasks:\n  - id: '{{ q }}'\n    dataset: {file: rows.csv}\n    messages: '{{ chat | fromjson }}'\n"
    (case,) = expand(text, tmp_path, {"rows.csv": csv})
    assert [(m.role, m.content) for m in case.messages] == [("user", "From CSV")]


@pytest.mark.parametrize(("value", "expected"), [
    ("not json", "expected chat messages, got text that is not JSON"),
    ([], "expected a list of chat messages, got an empty list"),
    ({"role": "user"}, "expected a list of chat messages, got dict"),
    ([{"role": "tool", "content": "x"}], "message 0: role 'tool' is not one of system, user, assistant"),
    ([{"role": "user", "content": [3]}], "message 0: content part 0: a content part is int"),
    ([{"role": "user", "content": 3}], "message 0: content is int, expected text or a list of parts"),
    (["hi"], "message 0 is str, expected a mapping with role and content"),
])
def test_bad_chat_data_names_what_is_wrong(value: object, expected: str) -> None:
    with pytest.raises(CaseError) as info:
        messages_from_data(value, path="suites/demo.yaml", key="tasks[0].messages", line=3)
    assert str(info.value).startswith(f"suites/demo.yaml:4: tasks[0].messages: {expected}")


def test_bad_chat_row_fails_its_case_alone(tmp_path: Path) -> None:
    rows = '{"m": [{"role": "user", "content": "ok"}]}\n{"m": "nope"}\n'
    text = MODELS + "tasks:\n  - id: 'r{{ row_index }}'\n    dataset: {file: d.jsonl}\n    messages: '{{ m }}'\n"
    good, bad = expand(text, tmp_path, {"d.jsonl": rows})
    assert good.problem is None
    assert "tasks[0].messages: expected chat messages, got text that is not JSON" in str(bad.problem)


# --- fromjson ------------------------------------------------------------------------------------------------------

def test_fromjson_parses_text_and_reports_bad_json() -> None:
    renderer = TemplateRenderer(None)
    assert renderer.evaluate("{{ '{\"a\": [1, 2]}' | fromjson }}", {}) == {"a": [1, 2]}
    with pytest.raises(CaseError, match=r"fromjson: invalid JSON: Expecting value \(line 1, column 1\)"):
        renderer.render("{{ 'nope' | fromjson }}", {}, key="k")
    with pytest.raises(CaseError, match="fromjson reads text, got int"):
        renderer.render("{{ 3 | fromjson }}", {}, key="k")


def test_fromjson_is_bounded_like_every_filter() -> None:
    renderer = TemplateRenderer(None)
    with pytest.raises(CaseError, match="template error"):  # over the template limits: refused, not parsed
        renderer.render("{{ ('[' ~ '1,' * 99999 ~ '1]') | fromjson | length }}", {"x": 1}, key="k")
    with pytest.raises(CaseError, match="nested too deeply"):
        renderer.render("{{ ('[' * 50000 ~ ']' * 50000) | fromjson }}", {}, key="k")


# --- row_index -----------------------------------------------------------------------------------------------------

def test_row_index_counts_rows_of_the_file_before_the_filter(tmp_path: Path) -> None:
    csv = "q\nfirst\nsecond\nthird\n"
    text = MODELS + ("tasks:\n  - id: 'row-{{ row_index }}'\n    dataset: {file: q.csv, filter: \"q != 'second'\"}\n"
                     "    prompt: '{{ q }}'\n")
    assert [case.task for case in expand(text, tmp_path, {"q.csv": csv})] == ["row-0", "row-2"]


def test_a_row_index_column_wins(tmp_path: Path) -> None:
    text = MODELS + "tasks:\n  - id: 'r{{ row_index }}'\n    dataset: {file: q.csv}\n    prompt: x\n"
    assert [case.task for case in expand(text, tmp_path, {"q.csv": "row_index\n7\n"})] == ["r7"]


# --- scorer vars and definitions -----------------------------------------------------------------------------------

JUDGED = MODELS + """\
judges:
  grader: {provider: scripted, script: [{reply: "[[5]]"}]}
scorer_definitions:
  criterion:
    type: llm_judge
    judge: grader
    prompt: "Rate {{ criterion }} of {{ answer }} ({{ level }})"
    vars: {level: strict}
tasks:
  - id: t
    prompt: hi
    vars: {base: 3}
    scorers:
      - {use: criterion, vars: {criterion: clarity}}
      - {use: criterion, vars: {criterion: "{{ 'tone' }}", level: "{{ base * 2 }}"}}
      - {name: own, type: contains, value: "{{ word }}", vars: {word: hi}}
"""


def test_use_merges_the_definition_and_names_after_it(tmp_path: Path) -> None:
    (case,) = expand(JUDGED, tmp_path)
    assert [(s.name, s.type) for s in case.scorers] == [
        ("criterion", "llm_judge"), ("criterion_2", "llm_judge"), ("own", "contains")]
    assert case.scorers[0].options["judge"] == "grader"
    assert "vars" not in case.scorers[0].options and "use" not in case.scorers[0].options


def test_scorer_vars_are_rendered_per_case_and_merged_with_the_definitions(tmp_path: Path) -> None:
    (case,) = expand(JUDGED, tmp_path)
    assert case.scorer_vars == {
        "criterion": {"level": "strict", "criterion": "clarity"},
        "criterion_2": {"level": 6, "criterion": "tone"},
        "own": {"word": "hi"},
    }
    assert "criterion" not in case.variables


def test_undefined_variable_in_scorer_vars_fails_the_case_at_its_key(tmp_path: Path) -> None:
    text = MODELS + ("tasks:\n  - id: t\n    prompt: hi\n    scorers:\n"
                     "      - {type: contains, value: x, vars: {w: '{{ nope }}'}}\n")
    (case,) = expand(text, tmp_path)
    assert str(case.problem).startswith("suites/demo.yaml:7: tasks[0].scorers[0].vars.w: template error: "
                                        "'nope' is undefined")


def test_unknown_definition_suggests_the_close_one(tmp_path: Path) -> None:
    message = build_error(JUDGED.replace("{use: criterion, vars: {criterion: clarity}}", "{use: critrion}"), tmp_path)
    assert "tasks[0].scorers[0].use: unknown scorer definition 'critrion'" in message
    assert "did you mean 'criterion'?" in message


def test_use_with_type_is_refused(tmp_path: Path) -> None:
    message = build_error(JUDGED.replace("{use: criterion, vars: {criterion: clarity}}",
                                         "{use: criterion, type: contains}"), tmp_path)
    assert "tasks[0].scorers[0].type: give type in the definition, not beside use:" in message


def test_merged_entry_is_checked_by_the_schema(tmp_path: Path) -> None:
    message = build_error(JUDGED.replace("{use: criterion, vars: {criterion: clarity}}",
                                         "{use: criterion, valeu: 3}"), tmp_path)
    assert "tasks[0].scorers[0].valeu: unknown key 'valeu'" in message


def test_every_scorer_type_takes_vars_and_use() -> None:
    """A scorer type's schema branch lists its keys: each must accept the keys every scorer takes."""
    for branch in suite_schema()["$defs"]["scorer"]["allOf"]:
        properties = branch.get("then", {}).get("properties")
        if properties is not None:
            assert {"vars", "use"} <= set(properties), branch["if"]


def test_definition_needs_a_type(tmp_path: Path) -> None:
    message = build_error(JUDGED.replace("    type: llm_judge\n", ""), tmp_path)
    assert "scorer_definitions.criterion: missing required key 'type'" in message


# --- scorers carried by a dataset row ------------------------------------------------------------------------------

@pytest.mark.parametrize(("text", "expected"), [
    ("contains: Paris", {"type": "contains", "value": "Paris"}),
    ("icontains: paris", {"type": "contains", "value": "paris", "ignore_case": True}),
    ("not-contains: Lyon", {"type": "not_contains", "value": "Lyon"}),
    ("contains-any: a, b", {"type": "contains", "value": ["a", "b"], "mode": "any"}),
    ("regex: ^4$", {"type": "regex", "pattern": "^4$"}),
    ("starts-with: 4.", {"type": "regex", "pattern": "^4\\."}),
    ("is-json", {"type": "json_valid", "extract": False}),
    ("Paris", {"type": "equals", "value": "Paris"}),
    ("Answer: 4", {"type": "equals", "value": "Answer: 4"}),
])
def test_promptfoo_shorthand(text: str, expected: dict[str, object]) -> None:
    assert parse_shorthand(text) == expected


@pytest.mark.parametrize(("text", "expected"), [
    ("contians: Paris", "unknown shorthand 'contians' (did you mean 'contains'?)"),
    ("llm-rubric: is polite", "'llm-rubric' has no shorthand here"),
    ("similar(0.8): Paris", "'similar' has no shorthand here"),
    ("regex", "'regex' needs a value"),
])
def test_shorthand_mistakes_are_errors(text: str, expected: str) -> None:
    with pytest.raises(ValueError, match=re.escape(expected)):
        parse_shorthand(text)


ROWS = "\n".join(json.dumps(row) for row in [
    {"q": "France", "assert": [{"type": "contains", "value": "Paris"}, "icontains: france"]},
    {"q": "Japan", "assert": "contains: Tokyo", "__expected": "Japan"},
    {"q": "Peru"},
]) + "\n"


def test_rows_carry_their_scorers_after_the_tasks(tmp_path: Path) -> None:
    text = MODELS + ("tasks:\n  - id: '{{ q }}'\n    dataset: {file: rows.jsonl, scorers: assert}\n"
                     "    prompt: '{{ q }}'\n"
                     "    scorers: [{type: length, max: 100}, {name: contains, type: length, min: 1}]\n")
    france, japan, peru = expand(text, tmp_path, {"rows.jsonl": ROWS})
    assert [(s.name, s.type, dict(s.options)) for s in france.scorers[2:]] == [
        ("contains_2", "contains", {"value": "Paris"}),
        ("contains_3", "contains", {"value": "france", "ignore_case": True}),
    ]
    assert [(s.name, s.type) for s in japan.scorers[2:]] == [("equals", "equals"), ("contains_2", "contains")]
    assert peru.problem is None and peru.scorers == france.scorers[:2]
    assert france.scorers[2].key == "tasks[0].dataset (row 0, assert[0])"
    assert "__expected" not in japan.variables


def test_bad_row_scorer_fails_that_row_alone(tmp_path: Path) -> None:
    rows = '{"q": 1, "assert": {"type": "contains", "valeu": "x"}}\n{"q": 2, "assert": "contians: x"}\n{"q": 3}\n'
    text = MODELS + "tasks:\n  - id: 'r{{ q }}'\n    dataset: {file: r.jsonl, scorers: assert}\n    prompt: x\n"
    first, second, third = expand(text, tmp_path, {"r.jsonl": rows})
    assert str(first.problem).startswith(
        "suites/demo.yaml:5: tasks[0].dataset (row 0, assert[0]): valeu: unknown key 'valeu'")
    assert "unknown shorthand 'contians' (did you mean 'contains'?)" in str(second.problem)
    assert third.problem is None


def test_expected_columns_of_a_csv(tmp_path: Path) -> None:
    csv = "q,__expected,__expected2\nFrance,contains: Paris,\n"
    text = MODELS + "tasks:\n  - id: '{{ q }}'\n    dataset: {file: q.csv}\n    prompt: x\n"
    (case,) = expand(text, tmp_path, {"q.csv": csv})
    assert [(s.name, dict(s.options)) for s in case.scorers] == [("contains", {"value": "Paris"})]


# --- templated thresholds ------------------------------------------------------------------------------------------

def test_pass_threshold_from_a_dataset_field(tmp_path: Path) -> None:
    text = MODELS + ("tasks:\n  - id: '{{ id }}'\n    dataset: {file: chats.jsonl}\n    messages: '{{ messages }}'\n"
                     "    pass_threshold: '{{ threshold }}'\n")
    assert [case.pass_threshold for case in expand(text, tmp_path, {"chats.jsonl": CHATS})] == [0.5, 0.75]


def test_scorer_threshold_template_is_rendered_into_the_spec(tmp_path: Path) -> None:
    text = MODELS + ("tasks:\n  - id: '{{ id }}'\n    dataset: {file: chats.jsonl}\n    prompt: x\n"
                     "    scorers:\n      - {type: contains, value: x, threshold: '{{ threshold }}'}\n")
    first, second = expand(text, tmp_path, {"chats.jsonl": CHATS})
    assert (first.scorers[0].threshold, first.scorers[0].threshold_template) == (0.5, None)
    assert second.scorers[0].threshold == 0.75


@pytest.mark.parametrize(("value", "expected"), [
    ("'{{ 2 }}'", "expected a number from 0 to 1, got 2"),
    ("'{{ \"high\" }}'", "expected a number from 0 to 1, got 'high'"),
    ("'{{ nope }}'", "template error: 'nope' is undefined"),
])
def test_bad_threshold_template_fails_the_case(tmp_path: Path, value: str, expected: str) -> None:
    text = MODELS + f"tasks:\n  - id: t\n    prompt: x\n    pass_threshold: {value}\n"
    (case,) = expand(text, tmp_path)
    assert str(case.problem).startswith(f"suites/demo.yaml:6: tasks[0].pass_threshold: {expected}")


def test_threshold_text_that_is_no_template_is_a_suite_error(tmp_path: Path) -> None:
    message = build_error(MODELS + "tasks:\n  - {id: t, prompt: hi}\npass_threshold: high\n", tmp_path)
    assert message.splitlines()[0] == "suites/demo.yaml:5: pass_threshold: expected a number, got 'high'"
    message = build_error(MODELS + "tasks:\n  - {id: t, prompt: hi, scorers: [{type: contains, value: x, "
                                   "threshold: high}]}\n", tmp_path)
    assert "tasks[0].scorers[0].threshold: expected a number, got 'high'" in message


def test_a_scorer_with_vars_still_says_which_judges_it_calls(tmp_path: Path) -> None:
    """The pass rule asks the bound scorers which ones are judges: the vars wrapper must not hide that."""
    (case,) = expand(JUDGED, tmp_path)
    scoring = ScoringBinder(SCORER_TYPES).bind(case)
    assert isinstance(scoring.scorers[0], WithVariables)
    assert judge_names(scoring.scorers[0]) == ["grader"]
    assert scoring.scorers[0].spec.name == "criterion"
