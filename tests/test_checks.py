"""Deterministic checks: each type's verdict and evidence, option validation, templated options."""

from __future__ import annotations

import asyncio
from typing import Any

import pytest

from bench_plugin.core.chat import Completion, CompletionRequest, Message
from bench_plugin.core.errors import CaseError
from bench_plugin.scoring.context import ComponentScore, ScoringContext
from bench_plugin.scoring.registry import SCORER_TYPES
from bench_plugin.suite.spec import CaseSpec, CompositeSpec, ScorerSpec
from bench_plugin.suite.templates import TemplateRenderer


def make_case(variables: dict[str, Any] | None = None) -> CaseSpec:
    return CaseSpec(
        suite="demo",
        path="suites/demo.yaml",
        task="capital",
        model_name="m",
        model=None,
        run=1,
        messages=(Message("user", "What is the capital of France?"),),
        scorers=(),
        composite=CompositeSpec(),
        pass_threshold=1.0,
        variables=variables or {},
        templates=TemplateRenderer(None),
    )


async def _no_calls(request: CompletionRequest) -> Completion:
    raise AssertionError("checks must not call models")


def run_check(
    type_name: str, response: str, variables: dict[str, Any] | None = None, **options: Any
) -> ComponentScore:
    spec = ScorerSpec(name="check", type=type_name, options=options, key="tasks[0].scorers[0]", line=11)
    scorer = SCORER_TYPES.get(type_name).parse(spec)
    context = ScoringContext(
        case=make_case(variables),
        response=response,
        transcript=(Message("assistant", response),),
        call_model=_no_calls,
    )
    return asyncio.run(scorer.score(context))


def validation_error(type_name: str, **options: Any) -> str:
    spec = ScorerSpec(name="check", type=type_name, options=options, key="scorers[0]")
    with pytest.raises(ValueError) as info:
        SCORER_TYPES.get(type_name).parse(spec)
    return str(info.value)


# ----------------------------------------------------------------------------- contains


def test_contains_passes_with_value_one_and_says_where() -> None:
    score = run_check("contains", "The capital is Paris.", value="Paris")
    assert (score.value, score.passed) == (1.0, True)
    assert score.detail == "expected to contain 'Paris' — found at char 15"


def test_contains_miss_reports_length_and_flags() -> None:
    score = run_check("contains", "x" * 312, value="Paris", ignore_case=True)
    assert (score.value, score.passed) == (0.0, False)
    assert score.detail == "expected to contain 'Paris' (ignore_case) — not found in 312 chars"


def test_contains_is_case_sensitive_unless_ignore_case() -> None:
    assert run_check("contains", "paris", value="Paris").passed is False
    assert run_check("contains", "paris", value="Paris", ignore_case=True).passed is True


def test_contains_all_names_the_missing_values() -> None:
    score = run_check("contains", "Paris and Lyon", value=["Paris", "Nice", "Lyon"])
    assert score.passed is False
    assert score.detail == (
        "expected to contain all of 'Paris', 'Nice', 'Lyon' — found 'Paris' at char 0, 'Lyon' at char 10; "
        "'Nice' not found in 14 chars"
    )


def test_contains_any_passes_on_one_match() -> None:
    score = run_check("contains", "Lyon", value=["Paris", "Lyon"], mode="any")
    assert score.passed is True
    assert (
        score.detail == "expected to contain any of 'Paris', 'Lyon' — found 'Lyon' at char 0; "
        "'Paris' not found in 4 chars"
    )


def test_contains_renders_templated_value_with_case_variables() -> None:
    score = run_check("contains", "It is Paris.", variables={"capital": "Paris"}, value="{{ capital }}")
    assert score.passed is True
    assert "'Paris'" in score.detail


def test_contains_templated_number_is_compared_as_text() -> None:
    assert run_check("contains", "in 1969", variables={"year": 1969}, value="{{ year }}").passed is True


def test_contains_missing_variable_is_a_case_error_with_the_option_key() -> None:
    with pytest.raises(CaseError) as info:
        run_check("contains", "text", value="capital: {{ nope }}")
    assert info.value.key == "tasks[0].scorers[0].value"
    assert info.value.line == 11


# ----------------------------------------------------------------------------- not_contains


def test_not_contains_fails_and_quotes_the_context() -> None:
    score = run_check("not_contains", "I cannot help with that request.", value="cannot")
    assert score.passed is False
    expected = "expected not to contain 'cannot' — found at char 2: 'I cannot help with that requ'"
    assert score.detail == expected


def test_not_contains_passes_when_absent() -> None:
    score = run_check("not_contains", "Sure!", value="cannot")
    assert (score.value, score.detail) == (1.0, "expected not to contain 'cannot' — not found in 5 chars")


def test_not_contains_all_requires_every_value_absent() -> None:
    score = run_check("not_contains", "sorry", value=["sorry", "cannot"])
    assert score.passed is False
    assert score.detail.startswith("expected to contain none of 'sorry', 'cannot' — found 'sorry' at")
    assert run_check("not_contains", "fine", value=["sorry", "cannot"]).passed is True


def test_not_contains_any_requires_one_value_absent() -> None:
    score = run_check("not_contains", "sorry", value=["sorry", "cannot"], mode="any")
    assert score.passed is True
    assert score.detail.startswith("expected at least one of 'sorry', 'cannot' to be absent — ")
    assert run_check("not_contains", "sorry, cannot", value=["sorry", "cannot"], mode="any").passed is False


# ----------------------------------------------------------------------------- regex


def test_regex_searches_anywhere_by_default() -> None:
    score = run_check("regex", "The answer is 42.", pattern=r"\d+")
    assert score.passed is True
    assert score.detail == r"expected a match for /\d+/ — matched '42' at char 14"


def test_regex_full_match_needs_the_whole_text() -> None:
    assert run_check("regex", "answer 42", pattern=r"\d+", full_match=True).passed is False
    assert run_check("regex", "42", pattern=r"\d+", full_match=True).passed is True


def test_regex_flags_apply() -> None:
    assert run_check("regex", "PARIS", pattern="paris", ignore_case=True).passed is True
    assert run_check("regex", "a\nb", pattern="^b$", multiline=True).passed is True
    assert run_check("regex", "a\nb", pattern="a.b", dotall=True).passed is True
    assert run_check("regex", "a\nb", pattern="a.b").passed is False


def test_regex_that_does_not_compile_is_rejected_at_validation() -> None:
    assert "does not compile" in validation_error("regex", pattern="(unclosed")


# ----------------------------------------------------------------------------- equals


def test_equals_strips_by_default() -> None:
    assert run_check("equals", "  Paris\n", value="Paris").passed is True


def test_equals_without_strip_is_exact() -> None:
    score = run_check("equals", "Paris\n", value="Paris", strip=False)
    assert score.passed is False
    assert "got 'Paris\\n'" in score.detail


def test_equals_ignore_case() -> None:
    assert run_check("equals", "paris", value="Paris", ignore_case=True).passed is True


def test_equals_number_value_compares_as_text() -> None:
    assert run_check("equals", "42", value=42).passed is True


# ----------------------------------------------------------------------------- JSON


def test_json_valid_takes_the_fenced_block() -> None:
    score = run_check("json_valid", 'Here you go:\n```json\n{"a": 1}\n```\nThanks')
    assert score.passed is True
    assert "from a fenced block" in score.detail


def test_json_valid_without_extract_parses_the_whole_text() -> None:
    assert run_check("json_valid", '```json\n{"a": 1}\n```', extract=False).passed is False


def test_json_valid_failure_gives_the_decoder_position() -> None:
    score = run_check("json_valid", '{"a": 1,}')
    assert score.passed is False
    assert "line 1 column" in score.detail


SCHEMA = {
    "type": "object",
    "required": ["name", "items"],
    "properties": {"name": {"type": "string"}, "items": {"type": "array", "items": {"type": "integer"}}},
}


def test_json_schema_passes_for_a_matching_document() -> None:
    assert run_check("json_schema", '{"name": "x", "items": [1, 2]}', schema=SCHEMA).passed is True


def test_json_schema_failure_names_the_failing_path() -> None:
    score = run_check("json_schema", '{"name": "x", "items": [1, "two"]}', schema=SCHEMA)
    assert score.passed is False
    assert "$.items[1]: 'two' is not of type 'integer'" in score.detail


def test_json_schema_invalid_schema_is_rejected_at_validation() -> None:
    assert "not a valid JSON Schema" in validation_error("json_schema", schema={"type": "nonsense"})


def test_json_path_equals_reads_nested_values() -> None:
    text = '{"a": {"b": [{"c": 3}]}}'
    assert run_check("json_path", text, path="$.a.b[0].c", equals=3).passed is True
    assert run_check("json_path", text, path="a.b.0.c", equals=3).passed is True


def test_json_path_mismatch_shows_found_value() -> None:
    score = run_check("json_path", '{"a": {"b": 4}}', path="$.a.b", equals=3)
    assert score.passed is False
    assert score.detail == "expected $.a.b = '3' — got '4'"


def test_json_path_true_is_not_one() -> None:
    assert run_check("json_path", '{"ok": true}', path="ok", equals=1).passed is False
    assert run_check("json_path", '{"ok": true}', path="ok", equals=True).passed is True


def test_json_path_missing_key_names_the_keys_present() -> None:
    score = run_check("json_path", '{"a": {"x": 1}}', path="$.a.b", equals=1)
    assert score.passed is False
    assert "$.a has no key 'b' (keys: 'x')" in score.detail


def test_json_path_without_equals_checks_presence() -> None:
    assert run_check("json_path", '{"a": null}', path="$.a").passed is True


def test_json_path_templated_equals_keeps_native_type() -> None:
    score = run_check("json_path", '{"n": [1, 2]}', variables={"want": [1, 2]}, path="n", equals="{{ want }}")
    assert score.passed is True


def test_json_path_bad_syntax_is_rejected_at_validation() -> None:
    assert "not understood" in validation_error("json_path", path="$.a[x", equals=1)


# ----------------------------------------------------------------------------- length


def test_length_counts_words_and_lines() -> None:
    assert run_check("length", "one two three", min=3, max=3, unit="words").passed is True
    assert run_check("length", "a\nb\nc", max=2, unit="lines").passed is False


def test_length_detail_says_too_short() -> None:
    score = run_check("length", "abc", min=10)
    assert score.detail == "expected at least 10 chars — 3 chars, too short"


def test_length_min_above_max_is_rejected_at_validation() -> None:
    assert "greater than max" in validation_error("length", min=5, max=2)


def test_length_without_bounds_is_rejected_at_validation() -> None:
    assert "needs min, max or both" in validation_error("length")


# ----------------------------------------------------------------------------- numeric


def test_numeric_picks_the_last_number_by_default() -> None:
    score = run_check("numeric", "3 apples plus 4 apples makes 7", value=7)
    assert score.passed is True
    assert "read 7 (last of 3 numbers)" in score.detail


def test_numeric_pick_first() -> None:
    assert run_check("numeric", "7 then 9", value=7, pick="first").passed is True


def test_numeric_reads_thousands_separators_and_signs() -> None:
    assert run_check("numeric", "The total is $1,234.50", value=1234.5).passed is True
    assert run_check("numeric", "It fell to -12.5 degrees", value=-12.5).passed is True


def test_numeric_hyphenated_range_is_not_a_negative_number() -> None:
    assert run_check("numeric", "between 10-20", value=20).passed is True


def test_numeric_tolerance_is_absolute() -> None:
    assert run_check("numeric", "3.14", value=3.1416, tolerance=0.01).passed is True
    score = run_check("numeric", "3.0", value=3.1416, tolerance=0.01)
    assert score.passed is False
    assert "off by 0.1416" in score.detail


def test_numeric_relative_tolerance_scales_with_the_value() -> None:
    assert run_check("numeric", "1010", value=1000, relative_tolerance=0.02).passed is True
    assert run_check("numeric", "1030", value=1000, relative_tolerance=0.02).passed is False


def test_numeric_tolerances_are_templated_as_the_guide_says() -> None:
    """The schema refused ``tolerance: "{{ slack }}"``, and the check refused the rendered text."""
    variables = {"slack": 0.5, "share": 0.02}
    assert run_check("numeric", "10.4", variables, value=10, tolerance="{{ slack }}").passed is True
    assert run_check("numeric", "10.6", variables, value=10, tolerance="{{ slack }}").passed is False
    assert run_check("numeric", "1010", variables, value=1000, relative_tolerance="{{ share }}").passed is True


def test_numeric_float_rounding_does_not_fail_an_exact_answer() -> None:
    assert run_check("numeric", "0.3", value="{{ 0.1 + 0.2 }}").passed is True


def test_numeric_no_number_fails_with_evidence() -> None:
    score = run_check("numeric", "no idea", value=5)
    assert (score.passed, score.detail) == (False, "expected 5 — no number in 7 chars")


def test_numeric_non_number_value_is_rejected_at_validation() -> None:
    assert "must be a number" in validation_error("numeric", value="lots")


# ----------------------------------------------------------------------------- common options


def test_unknown_option_suggests_the_close_one() -> None:
    message = validation_error("contains", value="x", ignorecase=True)
    assert "unknown option 'ignorecase'" in message
    assert "did you mean 'ignore_case'?" in message


def test_missing_required_option_is_named() -> None:
    assert "needs option(s) value" in validation_error("contains")


def test_non_boolean_flag_is_rejected() -> None:
    assert "ignore_case must be true or false" in validation_error("contains", value="x", ignore_case="yes")


def test_mode_outside_choices_is_rejected() -> None:
    assert "mode must be one of all, any" in validation_error("contains", value="x", mode="some")


def test_only_the_response_target_is_supported() -> None:
    assert "target must be one of response" in validation_error("contains", value="x", target="transcript")
    assert run_check("contains", "x", value="x", target="response").passed is True


def test_templated_regex_is_checked_after_rendering() -> None:
    spec = ScorerSpec(name="r", type="regex", options={"pattern": "{{ p }}"}, key="scorers[0]")
    SCORER_TYPES.get("regex").parse(spec)  # cannot know yet
    with pytest.raises(CaseError, match="does not compile"):
        run_check("regex", "x", variables={"p": "("}, pattern="{{ p }}")
