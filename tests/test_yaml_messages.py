"""Messages in the house style: a YAML syntax error, a value YAML reads as something else, a formula typo."""

from __future__ import annotations

from pathlib import Path

import pytest

from bench_plugin.core.errors import SuiteError
from bench_plugin.scoring.checks.json_checks import JsonValid
from bench_plugin.scoring.checks.text import Equals
from bench_plugin.scoring.formula import compile_expression
from bench_plugin.suite.build import build_suite
from bench_plugin.suite.expand import expand_suite
from bench_plugin.suite.loader import load_suite_text
from bench_plugin.suite.schema import check_against_schema
from bench_plugin.suite.spec import ScorerSpec


def refused(text: str) -> str:
    with pytest.raises(SuiteError) as info:
        loaded = load_suite_text(text, path=Path("suites/demo.yaml"), display_path="suites/demo.yaml")
        check_against_schema(loaded)
    return str(info.value)


# ----------------------------------------------------------------------------- YAML syntax


def test_unquoted_colon_in_a_value_names_line_column_key_and_the_quoted_fix() -> None:
    message = refused("models:\n  bot: {provider: echo}\ntasks:\n  - id: hello\n    prompt: Hello: world\n")
    assert message.splitlines() == [
        "suites/demo.yaml:5:18: tasks[0].prompt: a value holds ': ' (a colon and a space), which YAML reads as "
        "the start of another key",
        "  > 5 |     prompt: Hello: world",
        "      |                  ^",
        '  hint: put the whole value in quotes: prompt: "Hello: world"',
    ]
    assert "mapping values are not allowed here" not in message


def test_a_tab_is_shown_and_named() -> None:
    message = refused("models:\n  bot:\n  \tprovider: echo\n")
    assert message.startswith("suites/demo.yaml:3:3: models.bot: a tab character: YAML indents with spaces")
    assert "  > 3 |   →provider: echo\n      |   ^" in message
    assert "hint: replace the tab (shown as →) with spaces" in message


def test_bad_indentation_points_at_the_line_and_the_block_it_breaks() -> None:
    message = refused("models:\n  bot:\n    provider: echo\n   id: x\n")
    assert message.startswith("suites/demo.yaml:4:4: models: this line's indentation does not line up with the "
                              "keys of the block that starts at line 2")
    assert "hint: keys of one mapping start in the same column" in message


def test_an_unclosed_quote_points_where_it_opened() -> None:
    message = refused('tasks:\n  - id: a\n    prompt: "hello\n  - id: b\n')
    assert message.startswith("suites/demo.yaml:3:13: tasks[0].prompt: this quote is never closed")
    assert '  > 3 |     prompt: "hello\n      |             ^' in message


def test_an_unclosed_bracket_points_where_it_opened() -> None:
    message = refused("tasks:\n  - id: a\n    tags: [a, b\n    prompt: x\n")
    assert message.startswith("suites/demo.yaml:3:11: tasks[0].tags: this '[' is never closed with ']'")


def test_text_after_a_closing_quote_explains_doubled_quotes() -> None:
    message = refused("tasks:\n  - id: a\n    prompt: 'it's here'\n")
    assert "text after the closing quote" in message and "'it''s'" in message


@pytest.mark.parametrize(("value", "char"), [("@user hi", "@"), ("*bold*", "*"), ("`code`", "`")])
def test_a_value_starting_with_a_reserved_character_says_to_quote_it(value: str, char: str) -> None:
    message = refused(f"tasks:\n  - id: a\n    prompt: {value}\n")
    assert f"suites/demo.yaml:3:13: tasks[0].prompt: an unquoted value cannot start with '{char}'" in message
    assert f'hint: put the whole value in quotes: prompt: "{value}"' in message


def test_a_dash_without_a_space_is_named() -> None:
    message = refused("tasks:\n  - id: a\n    prompt: x\n  -id: b\n")
    assert "a '-' without a space after it: YAML reads '-id:' as text" in message


def test_a_control_character_gets_its_line_and_column() -> None:
    message = refused("models:\n  a: {provider: echo}\x07\n")
    assert message.startswith("suites/demo.yaml:2:22: invalid YAML: the file holds the character #x0007")


def test_an_unknown_tag_names_the_key() -> None:
    assert refused("models:\n  a: !foo x\n").startswith(
        "suites/demo.yaml:2:6: models.a: YAML tags (!name) are not used in suites")


# ----------------------------------------------------------------------------- values YAML reads as non-text


SUITE = "models:\n  bot: {provider: echo}\ntasks:\n  - id: a\n"


def test_yes_where_text_is_expected_says_what_yaml_read_and_to_quote_it() -> None:
    message = refused(SUITE + "    prompt: Yes\n")
    assert message.splitlines() == [
        "suites/demo.yaml:5: tasks[0].prompt: expected a string, got Yes, which YAML reads as the boolean true",
        "  > 5 |     prompt: Yes",
        '  hint: quote it to keep it as text: prompt: "Yes"',
    ]


def test_a_number_id_says_to_quote_it() -> None:
    message = refused("models:\n  bot: {provider: echo}\ntasks:\n  - id: 1.0\n    prompt: x\n")
    assert message.startswith("suites/demo.yaml:4: tasks[0].id: expected a string, got 1.0, which YAML reads as "
                              "a number")
    assert 'hint: quote it to keep it as text: id: "1.0"' in message


def test_yes_in_a_variable_is_refused_though_any_value_is_allowed_there() -> None:
    message = refused(SUITE + "    prompt: '{{ body }}'\n    vars: {body: Yes}\n")
    assert message.startswith("suites/demo.yaml:6: tasks[0].vars.body: 'Yes' was read as the boolean true, not as "
                              "text (YAML 1.1 reads yes/no/on/off as booleans)")
    assert 'quote it to keep it as text: body: "Yes"; for a boolean write true' in message


def test_base_60_and_octal_numbers_in_text_are_refused() -> None:
    assert "'1:30' was read as the number 90" in refused(SUITE + "    prompt: x\n    vars: {t: 1:30}\n")
    assert "'0123' was read as the number 83" in refused(SUITE + "    prompt: x\n    vars: {z: 0123}\n")


@pytest.mark.parametrize("written", [".nan", ".inf", ".NaN"])
def test_a_number_that_is_not_finite_is_refused(written: str) -> None:
    """The schema takes NaN for a number: ``timeout: .nan`` failed every call, and bench validate said nothing."""
    providers = f"providers:\n  p: {{type: openai_compatible, timeout: {written}}}\n"
    message = refused(providers + SUITE.replace("{provider: echo}", "{provider: p}") + "    prompt: x\n")
    assert message.startswith(f"suites/demo.yaml:2: providers.p.timeout: expected a finite number, got {written}")


def test_a_password_in_a_base_url_is_refused_without_quoting_it() -> None:
    """Reports print a provider's URL (``no known price for ... at URL``): its password went into every one."""
    providers = "providers:\n  p: {type: openai_compatible, base_url: 'http://svc:pw-MARK@127.0.0.1:8000/v1'}\n"
    message = refused(providers + SUITE.replace("{provider: echo}", "{provider: p}") + "    prompt: x\n")
    assert message.splitlines()[0] == (
        "suites/demo.yaml:2: providers.p.base_url: expected an http:// or https:// URL without user:password@")
    assert "api_key_env" in message


def test_yes_where_only_a_boolean_fits_and_plain_numbers_pass() -> None:
    text = SUITE + "    prompt: x\n    vars: {n: 12, t: true}\n    scorers: [{type: json_valid, extract: yes}]\n"
    loaded = load_suite_text(text, path=Path("suites/demo.yaml"), display_path="suites/demo.yaml")
    check_against_schema(loaded)  # no error


def test_an_empty_value_hints_at_empty_text() -> None:
    message = refused(SUITE + "    prompt:\n")
    assert "expected a string, got nothing (null)" in message
    assert 'a key with no value is null in YAML; write "" for empty text' in message


# ----------------------------------------------------------------------------- keys and formulas


def test_duplicate_task_id_names_the_second_tasks_id() -> None:
    text = "models:\n  bot: {provider: echo}\ntasks:\n  - {id: a, prompt: x}\n  - id: a\n    prompt: y\n"
    loaded = load_suite_text(text, path=Path("suites/demo.yaml"), display_path="suites/demo.yaml")
    with pytest.raises(SuiteError) as info:
        expand_suite(build_suite(loaded))
    assert str(info.value).startswith("suites/demo.yaml:5: tasks[1].id: 1 case id(s) are not unique")


@pytest.mark.parametrize(
    ("formula", "message", "column"),
    [
        ("0.4*C + 0.3 T", "no operator between '0.3' and 'T' (write 0.3*T)", 12),
        ("0.4*C + 0.3T", "'0.3T' glues a number to a name (write 0.3*T)", 11),
        ("(0.4*C + T", "this '(' is never closed", 0),
        ("0.4*C + T)", "this ')' closes no '('", 9),
        ("0.4*C +", "the formula ends with '+': a term is missing after it", 6),
        ("0.4*C = 1", "a single '=' is not allowed (compare with ==); use numbers, component names, + - * /, "
                      "parentheses and min/max/abs", 6),
    ],
)
def test_formula_typo_is_said_in_words_with_a_caret(formula: str, message: str, column: int) -> None:
    with pytest.raises(ValueError) as info:
        compile_expression(formula, "formula", ["C", "T"], condition=False)
    assert str(info.value).splitlines() == [f"formula {formula!r}: {message}", f"    {formula}",
                                            "    " + " " * column + "^"]
    assert "invalid decimal literal" not in str(info.value)


def test_a_comma_for_a_decimal_point_is_named() -> None:
    with pytest.raises(ValueError, match="comma outside min"):
        compile_expression("0,4*C", "formula", ["C"], condition=False)


# ----------------------------------------------------------------------------- normalisation shown in evidence


def spec(kind: str) -> ScorerSpec:
    return ScorerSpec(name="E", type=kind, options={}, key="scorers[0]")


def test_equals_evidence_says_when_stripping_decided() -> None:
    check = Equals(spec("equals"), "response", "Paris", ignore_case=False, strip=True)
    passed, detail = check.run("  Paris\n")
    assert passed and "once whitespace at both ends is stripped (strip: true, the default)" in detail
    passed, detail = check.run("PARIS")
    assert not passed and "differs only in case (ignore_case: false, the default)" in detail


def test_json_valid_evidence_says_the_fenced_block_was_read() -> None:
    check = JsonValid(spec("json_valid"), "response", extract=True)
    assert "(from a fenced block, extract: true)" in check.run('```json\n{"a": 1}\n```')[1]
    assert "(from a fenced block, extract: true)" in check.run("```json\n{nope}\n```")[1]


def test_a_number_as_a_key_is_no_trouble_for_the_check() -> None:
    message = refused(SUITE + "    prompt: x\n    vars: {1: yes}\n")
    assert "tasks[0].vars.1: 'yes' was read as the boolean true" in message
