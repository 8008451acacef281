"""The tool_calls scorer: argument matchers, pairing in any order or in order, F1 over calls, evidence."""

from __future__ import annotations

import asyncio
import json
import re
from typing import Any

import pytest

from bench_plugin.core.chat import Message, ToolCall, ToolDefinition
from bench_plugin.core.errors import CaseError
from bench_plugin.scoring.context import ComponentScore, ScoringContext
from bench_plugin.scoring.tool_calls.alignment import pair_any_order, pair_in_order
from bench_plugin.scoring.tool_calls.matchers import parse_matcher
from bench_plugin.scoring.tool_calls.scorer import ToolCallsScorer, figures
from bench_plugin.suite.spec import CaseSpec, CompositeSpec, ScorerSpec

WEATHER = ToolDefinition("get_weather", "Weather.", {
    "type": "object", "properties": {"city": {"type": "string"}, "unit": {"enum": ["celsius", "fahrenheit"]}},
    "required": ["city"]})
TIME = ToolDefinition("get_time", "Time.", {"type": "object", "properties": {"zone": {"type": "string"}}})


def case(tools: tuple[ToolDefinition, ...] = (WEATHER, TIME)) -> CaseSpec:
    return CaseSpec(suite="s", path="s.yaml", task="t", model_name="m", model=None, run=1, messages=(),
                    scorers=(), composite=CompositeSpec(), pass_threshold=None, variables={}, functions=tools)


def scorer(**options: Any) -> ToolCallsScorer:
    return ToolCallsScorer.parse(ScorerSpec("calls", "tool_calls", options, key="scorers[0]", line=11))


async def _never(request: Any) -> Any:
    raise AssertionError("no model call")


def score(parsed: ToolCallsScorer, *calls: tuple[str, Any], spec: CaseSpec | None = None) -> ComponentScore:
    made = tuple(ToolCall(f"c{i}", name, json.dumps(args) if not isinstance(args, str) else args)
                 for i, (name, args) in enumerate(calls))
    reply = Message("assistant", "", tool_calls=made)
    context = ScoringContext(spec or case(), "", (Message("user", "q"), reply), _never)
    return asyncio.run(parsed.score(context))


@pytest.mark.parametrize(("written", "value", "held"), [
    ("Paris", "Paris", True),
    ("Paris", "paris", False),
    (1, 1.0, True),
    (True, 1, False),
    ({"one_of": ["celsius", "c"]}, "c", True),
    ({"regex": "^Par"}, "Paris", True),
    ({"regex": "^Par"}, "Lyon", False),
    ({"approx": 3.5, "tolerance": 0.1}, 3.55, True),
    ({"approx": 3.5, "tolerance": 0.1}, 3.7, False),
    ({"approx": 3.5}, "3.5", False),
    ({"schema": {"type": "integer", "minimum": 1}}, 2, True),
    ({"schema": {"type": "integer", "minimum": 1}}, 0, False),
    ({"subset": {"a": 1}}, {"a": 1, "b": 2}, True),
    ({"subset": [1, 3]}, [3, 2, 1], True),
    ({"subset": {"a": 1}}, {"b": 2}, False),
    ({"equals": {"regex": "x"}}, {"regex": "x"}, True),
    ({"city": "Paris"}, {"city": "Paris"}, True),  # a mapping that is no matcher is a value
])
def test_each_matcher_compares_one_argument(written: Any, value: Any, held: bool) -> None:
    assert parse_matcher(written, "expected[0].arguments.x").check(value)[0] is held


@pytest.mark.parametrize(("written", "message"), [
    ({"regex": "("}, "expected[0].arguments.x.regex '(' does not compile"),
    ({"schema": {"type": "nope"}}, "expected[0].arguments.x.schema is not a valid JSON Schema"),
    ({"approx": "x"}, "approx and tolerance must be numbers"),
    ({"one_of": []}, "one_of must be a list"),
])
def test_a_bad_matcher_names_its_place(written: Any, message: str) -> None:
    with pytest.raises(ValueError, match=re.escape(message)):
        parse_matcher(written, "expected[0].arguments.x")


def test_bad_options_are_refused_when_parsed() -> None:
    with pytest.raises(ValueError, match="order must be one of any, strict"):
        scorer(expected=[], order="sometimes")
    with pytest.raises(ValueError, match="unknown option 'expect'"):
        scorer(expect=[])
    with pytest.raises(ValueError, match=r"expected\[0\] must be a mapping with a name"):
        scorer(expected=["get_weather"])


def test_one_right_call_scores_one_with_each_arguments_evidence() -> None:
    found = score(scorer(expected=[{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}]),
                  ("get_weather", {"city": "Paris", "unit": "celsius"}))
    assert (found.value, found.passed) == (1.0, True)
    evidence = found.extra["tool_calls"]
    assert evidence["expected"][0]["made"] == 0
    assert evidence["expected"][0]["arguments"]["city"] == {"passed": True, "detail": '= "Paris"'}
    assert (evidence["precision"], evidence["recall"], evidence["f1"]) == (1.0, 1.0, 1.0)


def test_a_wrong_argument_is_named_in_the_detail_and_the_evidence() -> None:
    found = score(scorer(expected=[{"name": "get_weather", "arguments": {"city": "Paris", "unit": "celsius"}}]),
                  ("get_weather", {"city": "Paris", "unit": "fahrenheit"}))
    assert (found.value, found.passed) == (0.0, False)
    assert 'unit expected "celsius", got "fahrenheit"' in found.detail
    entry = found.extra["tool_calls"]["expected"][0]
    assert entry["made"] is None and entry["closest"] == 0
    assert entry["arguments"]["unit"]["passed"] is False and entry["arguments"]["city"]["passed"] is True


def test_parallel_calls_pair_in_any_order_and_f1_counts_the_missing_one() -> None:
    expected = [{"name": "get_weather", "arguments": {"city": city}} for city in ("Tokyo", "Lima", "Oslo")]
    found = score(scorer(expected=expected, extra_arguments="allow"),
                  ("get_weather", {"city": "Lima"}), ("get_weather", {"city": "Tokyo", "unit": "celsius"}),
                  ("get_time", {"zone": "UTC"}))
    evidence = found.extra["tool_calls"]
    assert (evidence["precision"], evidence["recall"]) == (round(2 / 3, 4), round(2 / 3, 4))
    assert found.value == pytest.approx(2 / 3, abs=1e-4)
    assert [entry["made"] for entry in evidence["expected"]] == [1, 0, None]
    assert "get_weather not made (city expected \"Oslo\", got" in found.detail


def test_extra_arguments_are_refused_unless_allowed() -> None:
    expected = [{"name": "get_weather", "arguments": {"city": "Lima"}}]
    made = ("get_weather", {"city": "Lima", "unit": "celsius"})
    refused = score(scorer(expected=expected), made)
    assert refused.value == 0.0
    assert refused.extra["tool_calls"]["expected"][0]["arguments"]["unit"]["detail"].startswith("not expected")
    assert score(scorer(expected=expected, extra_arguments="allow"), made).value == 1.0


def test_an_optional_argument_may_be_left_out_and_a_required_one_may_not() -> None:
    expected = [{"name": "get_weather", "arguments": {"city": "Lima", "unit": {"equals": "celsius", "optional": True}}}]
    assert score(scorer(expected=expected), ("get_weather", {"city": "Lima"})).value == 1.0
    missing = score(scorer(expected=[{"name": "get_weather", "arguments": {"city": "Lima"}}]), ("get_weather", {}))
    assert missing.extra["tool_calls"]["expected"][0]["arguments"]["city"] == {"passed": False, "detail": "missing"}


def test_strict_order_pairs_only_calls_in_the_written_order() -> None:
    expected = [{"name": "get_time", "arguments": {}}, {"name": "get_weather", "arguments": {"city": "Lima"}}]
    made = (("get_weather", {"city": "Lima"}), ("get_time", {}))
    assert score(scorer(expected=expected), *made).value == 1.0
    ordered = score(scorer(expected=expected, order="strict"), *made)
    assert ordered.value == 0.5
    assert "made, but not in the expected order" in ordered.detail


def test_no_call_expected_scores_one_without_calls_and_zero_with_one() -> None:
    quiet = score(scorer(expected=[]))
    assert (quiet.value, quiet.passed, quiet.detail) == (1.0, True, "no call expected, none made")
    chatty = score(scorer(expected=[]), ("get_weather", {"city": "here"}))
    assert (chatty.value, chatty.passed) == (0.0, False)
    assert chatty.detail == "no call expected, 1 made (get_weather)"


def test_a_call_whose_arguments_break_the_tools_schema_does_not_pair_unless_validate_is_off() -> None:
    expected = [{"name": "get_weather", "arguments": {"city": "Lima", "unit": "kelvin"}}]
    made = ("get_weather", {"city": "Lima", "unit": "kelvin"})
    refused = score(scorer(expected=expected), made)
    assert refused.value == 0.0
    assert "do not match get_weather's parameters" in refused.extra["tool_calls"]["made"][0]["problem"]
    assert score(scorer(expected=expected, validate=False), made).value == 1.0


def test_arguments_that_are_not_json_are_a_call_that_cannot_pair() -> None:
    found = score(scorer(expected=[{"name": "get_weather", "arguments": {"city": "Lima"}}]),
                  ("get_weather", '{"city": "Li'))
    assert found.value == 0.0
    assert found.extra["tool_calls"]["made"][0]["valid"] is False


def test_without_expected_the_value_is_the_share_of_valid_calls() -> None:
    found = score(scorer(), ("get_weather", {"city": "Lima"}), ("get_weather", {"unit": "celsius"}),
                  ("launch", {}))
    assert found.value == pytest.approx(1 / 3)
    assert "no tool is named 'launch'" in found.detail
    assert score(scorer()).value == 0.0


def test_an_expected_call_to_an_undeclared_tool_is_a_problem_of_the_suite_at_the_scorers_line() -> None:
    parsed = scorer(expected=[{"name": "get_wether", "arguments": {}}])
    with pytest.raises(CaseError) as caught:
        parsed.check_case(case())
    assert caught.value.line == 11 and "expected[0].name" in str(caught.value.key)
    assert "'get_wether', which the task does not declare (tools: get_weather, get_time)" in str(caught.value)
    with pytest.raises(CaseError, match="tool_calls scores the calls of a task with tools"):
        scorer(expected=[]).check_case(case(tools=()))


def test_pairing_finds_the_most_pairs() -> None:
    # a greedy pass would give actual 0 to expected 0 and leave expected 1 without a pair
    assert pair_any_order([[True, True], [True, False]]) == {0: 1, 1: 0}
    assert pair_in_order([[False, True], [True, False]]) in ({0: 1}, {1: 0})
    assert pair_in_order([[True, False, False], [False, False, True]]) == {0: 0, 1: 2}
    assert pair_any_order([]) == {} and pair_in_order([[]]) == {}


@pytest.mark.parametrize(("paired", "expected", "made", "result"), [
    (0, 0, 0, (1.0, 1.0, 1.0)),
    (0, 0, 2, (0.0, 1.0, 0.0)),
    (0, 2, 0, (1.0, 0.0, 0.0)),
    (1, 2, 1, (1.0, 0.5, 0.6667)),
    (2, 2, 4, (0.5, 1.0, 0.6667)),
])
def test_f1_over_calls(paired: int, expected: int, made: int, result: tuple[float, float, float]) -> None:
    assert figures(paired, expected, made) == result


def test_arguments_nested_too_deep_are_a_call_that_cannot_pair_not_a_crash() -> None:
    deep = '{"city": ' + "[" * 100_000 + "]" * 100_000 + "}"
    found = score(scorer(expected=[{"name": "get_weather", "arguments": {"city": "Lima"}}]), ("get_weather", deep))
    assert found.value == 0.0 and found.extra["tool_calls"]["made"][0]["valid"] is False
