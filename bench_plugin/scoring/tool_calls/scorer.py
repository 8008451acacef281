"""``tool_calls``: the model's tool calls against the expected ones; the value is F1 over calls.

A model call pairs with an expected call when it names the same tool and every argument is as expected (each by
value or matcher: ``matchers.py``), with no argument more unless ``extra_arguments: allow``, and, with ``validate``
(the default), arguments valid for the tool's ``parameters``. Pairs are found in any order (parallel calls) or,
with ``order: strict``, in the written order. precision = paired / calls made, recall = paired / calls expected,
and the value is their F1 (1.0 when no call is expected and none is made; 0 when a call is made and none is).
The evidence keeps each expected call's arguments, passed or not and why, and each call made.
Without ``expected``, the value is the share of calls that name a declared tool with valid arguments (0 with
no call): promptfoo's ``is-valid-openai-tools-call``.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from typing_extensions import Self

from bench_plugin.core.chat import ToolDefinition
from bench_plugin.core.errors import CaseError
from bench_plugin.scoring.checks.scorer import has_markup
from bench_plugin.scoring.context import ComponentScore, ScoringContext
from bench_plugin.scoring.options import check_choice, check_flag, check_option_names
from bench_plugin.scoring.tool_calls.alignment import pair_any_order, pair_in_order
from bench_plugin.scoring.tool_calls.calls import (
    ActualCall,
    ExpectedCall,
    PairResult,
    actual_call,
    compare,
    parse_expected,
)
from bench_plugin.suite.spec import CaseSpec, ScorerSpec

OPTIONS = ("expected", "order", "extra_arguments", "validate")


@dataclass(frozen=True)
class ToolCallsScorer:
    """A ``tool_calls`` scorer with its options read: ``expected`` parsed once unless it holds templates."""

    spec: ScorerSpec
    expected: tuple[ExpectedCall, ...] | None
    templated: bool
    order: str
    extra_arguments: str
    validate: bool

    @classmethod
    def parse(cls, spec: ScorerSpec) -> Self:
        """Raises: ValueError naming the option that is wrong."""
        options = spec.options
        check_option_names(options, OPTIONS, "tool_calls")
        raw = options.get("expected")
        templated = has_markup(raw)
        expected = parse_expected(raw) if "expected" in options and not templated else None
        return cls(spec, expected, templated, check_choice("order", options.get("order", "any"), ("any", "strict")),
                   check_choice("extra_arguments", options.get("extra_arguments", "forbid"), ("forbid", "allow")),
                   check_flag("validate", options.get("validate", True)))

    def check_case(self, case: CaseSpec) -> None:
        """The task declares tools, and every expected call names one of them (rendered for the case when templated).

        Raises:
            CaseError: at the scorer's line, before any call.
        """
        if not declared_tools(case):
            raise self.error(case, "tool_calls scores the calls of a task with tools: (type: function tools, or an "
                             "agent's)", "declare the tools the model may call under the task's tools:")
        self._expected(case)

    def error(self, case: CaseSpec, message: str, hint: str | None = None, *, key: str | None = None) -> CaseError:
        """A problem of the suite, at the scorer's line."""
        return CaseError(message, path=case.path, line=self.spec.line, key=key or self.spec.key, hint=hint)

    async def score(self, context: ScoringContext) -> ComponentScore:
        """F1 of the calls made against the expected ones, with each call's evidence."""
        tools = declared_tools(context.case)
        made = tuple(actual_call(name, arguments, tools) for name, arguments in calls_made(context))
        expected = self._expected(context.case)
        if expected is None:
            return self._validity(made)
        return self._against(expected, made)

    def _expected(self, case: CaseSpec) -> tuple[ExpectedCall, ...] | None:
        """The expected calls (rendered for the case when they hold templates), each naming a declared tool."""
        expected = self._rendered(case) if self.templated else self.expected
        tools = declared_tools(case)
        for index, call in enumerate(expected or ()):
            if call.name not in tools:
                raise self.error(case, f"expected[{index}] calls {call.name!r}, which the task does not declare "
                                 f"(tools: {', '.join(tools)})", "name one of the task's tools, or add it under tools:",
                                 key=f"{self.spec.key}.expected[{index}].name")
        return expected

    def _rendered(self, case: CaseSpec) -> tuple[ExpectedCall, ...]:
        rendered = _render(self.spec.options["expected"], case, f"{self.spec.key}.expected", self.spec.line)
        try:
            return parse_expected(rendered)
        except ValueError as exc:
            raise self.error(case, f"{exc} (once rendered)") from None

    def _validity(self, made: Sequence[ActualCall]) -> ComponentScore:
        valid = sum(1 for call in made if call.problem is None)
        value = valid / len(made) if made else 0.0
        problems = "; ".join(f"{call.name}: {call.problem}" for call in made if call.problem)
        detail = f"{valid} of {len(made)} calls valid" + (f" ({problems})" if problems else "") if made \
            else "expected tool calls, got none"
        return ComponentScore(self.spec.name, value, raw=value, passed=bool(made) and valid == len(made),
                              detail=detail, extra={"tool_calls": {"made": [call.to_dict() for call in made]}})

    def _against(self, expected: Sequence[ExpectedCall], made: Sequence[ActualCall]) -> ComponentScore:
        results = [[compare(call, act, extra_arguments=self.extra_arguments, validate=self.validate) for act in made]
                   for call in expected]
        matches = [[result.matched for result in row] for row in results]
        pairs = pair_in_order(matches) if self.order == "strict" else pair_any_order(matches)
        precision, recall, f1 = figures(len(pairs), len(expected), len(made))
        evidence = [_expected_evidence(call, results[i], pairs.get(i)) for i, call in enumerate(expected)]
        extra = {"tool_calls": {"precision": precision, "recall": recall, "f1": f1, "order": self.order,
                                "expected": evidence, "made": [call.to_dict() for call in made]}}
        return ComponentScore(self.spec.name, f1, raw=f1, passed=f1 == 1.0,
                              detail=_detail(precision, recall, f1, len(pairs), expected, made, evidence), extra=extra)


def figures(paired: int, expected: int, made: int) -> tuple[float, float, float]:
    """precision, recall and F1 over calls; no call expected and none made is a perfect answer."""
    if expected == 0 and made == 0:
        return 1.0, 1.0, 1.0
    precision = paired / made if made else 1.0
    recall = paired / expected if expected else 1.0
    f1 = 2 * precision * recall / (precision + recall) if paired else 0.0
    return round(precision, 4), round(recall, 4), round(f1, 4)


def declared_tools(case: CaseSpec) -> dict[str, ToolDefinition]:
    """The tools the case offers the model, by name: its function tools, or its agent's."""
    if case.functions:
        return {tool.name: tool for tool in case.functions}
    if case.agent is not None:
        return {tool.name: tool.definition for tool in case.agent.tools}
    return {}


def calls_made(context: ScoringContext) -> list[tuple[str, Any]]:
    """(name, arguments) of every call the model made: an agent's run, else the tool calls of its replies."""
    if context.agent is not None:
        return [(call.name, call.arguments) for call in context.agent.tool_calls]
    return [(call.name, call.arguments) for message in context.transcript if message.role == "assistant"
            for call in message.tool_calls]


def _render(value: Any, case: CaseSpec, key: str, line: int | None) -> Any:
    assert case.templates is not None
    if isinstance(value, list):
        return [_render(item, case, key, line) for item in value]
    if isinstance(value, Mapping):
        return {name: _render(item, case, key, line) for name, item in value.items()}
    return case.templates.evaluate(value, case.variables, key=key, line=line)


def _expected_evidence(call: ExpectedCall, row: Sequence[PairResult], paired: int | None) -> dict[str, Any]:
    """The paired call's arguments, or those of the closest call to the same tool (or why none is close)."""
    if paired is not None:
        return {"name": call.name, "made": paired, "arguments": dict(row[paired].arguments)}
    same_tool = [(result.passes, index) for index, result in enumerate(row) if result.same_tool]
    if not same_tool:
        return {"name": call.name, "made": None, "arguments": {}, "note": "no call to this tool"}
    _, closest = max(same_tool)
    note = "made, but not in the expected order" if row[closest].matched else row[closest].note
    return {"name": call.name, "made": None, "closest": closest, "arguments": dict(row[closest].arguments),
            **({"note": note} if note else {})}


def _detail(precision: float, recall: float, f1: float, paired: int, expected: Sequence[ExpectedCall],
            made: Sequence[ActualCall], evidence: Sequence[Mapping[str, Any]]) -> str:
    if not expected:
        return "no call expected, none made" if not made else \
            f"no call expected, {len(made)} made ({', '.join(call.name for call in made)})"
    head = (f"F1 {f1:g} (precision {precision:g}: {paired} of {len(made)} calls made were expected; "
            f"recall {recall:g}: {paired} of {len(expected)} expected calls made)")
    missed = [_missed(entry) for entry in evidence if entry["made"] is None]
    return head + (": " + "; ".join(missed) if missed else "")


def _missed(entry: Mapping[str, Any]) -> str:
    wrong = [f"{name} {found['detail']}" for name, found in entry["arguments"].items() if not found["passed"]]
    why = ", ".join([*wrong, *([entry["note"]] if entry.get("note") else [])]) or "no matching call"
    return f"{entry['name']} not made ({why})"
