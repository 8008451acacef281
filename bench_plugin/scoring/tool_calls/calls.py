"""Expected calls as a ``tool_calls`` scorer writes them, the model's calls, and one pair of them compared."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from bench_plugin.core.chat import ToolDefinition
from bench_plugin.core.json_bounds import loads_bounded
from bench_plugin.scoring.tool_calls.matchers import Matcher, parse_matcher, shown


@dataclass(frozen=True)
class ExpectedCall:
    """A call the model should make: the tool's name and a matcher per argument."""

    name: str
    arguments: Mapping[str, Matcher]


@dataclass(frozen=True)
class ActualCall:
    """A call the model made: ``arguments`` parsed (None when they are not a JSON object: ``problem`` says so)."""

    name: str
    arguments: Mapping[str, Any] | None
    problem: str | None = None

    def to_dict(self) -> dict[str, Any]:
        """Plain data, as the component's evidence keeps it."""
        return {"name": self.name, "arguments": dict(self.arguments) if self.arguments is not None else None,
                "valid": self.problem is None, "problem": self.problem}


@dataclass(frozen=True)
class PairResult:
    """An expected call against an actual one: whether it matches, and each argument's evidence."""

    matched: bool
    arguments: Mapping[str, Mapping[str, Any]]
    note: str = ""
    same_tool: bool = True

    @property
    def passes(self) -> int:
        """How many arguments are as expected."""
        return sum(1 for found in self.arguments.values() if found["passed"])


def parse_expected(raw: Any) -> tuple[ExpectedCall, ...]:
    """``expected:``: a list of ``{name, arguments}`` (``[]``: no call expected).

    Raises:
        ValueError: naming the entry that is wrong.
    """
    if not isinstance(raw, list):
        raise ValueError("expected must be a list of calls {name, arguments} ([] when no call is expected)")
    return tuple(_expected(entry, f"expected[{index}]") for index, entry in enumerate(raw))


def _expected(entry: Any, where: str) -> ExpectedCall:
    if not isinstance(entry, Mapping) or not isinstance(entry.get("name"), str):
        raise ValueError(f"{where} must be a mapping with a name: (the tool) and arguments:")
    unknown = sorted(set(entry) - {"name", "arguments"})
    if unknown:
        raise ValueError(f"{where} has unknown key(s) {', '.join(unknown)}; a call takes name and arguments")
    arguments = entry.get("arguments") or {}
    if not isinstance(arguments, Mapping):
        raise ValueError(f"{where}.arguments must be a mapping of argument name to value or matcher")
    return ExpectedCall(entry["name"], {str(key): parse_matcher(value, f"{where}.arguments.{key}")
                                        for key, value in arguments.items()})


def actual_call(name: str, arguments: Any, tools: Mapping[str, ToolDefinition]) -> ActualCall:
    """The model's call, its arguments read (JSON text or data) and checked against its tool's ``parameters``."""
    if isinstance(arguments, str):
        try:
            arguments = loads_bounded(arguments)  # the model's text: its depth and numbers are bounded
        except ValueError:
            return ActualCall(name, None, f"its arguments are not JSON: {shown(arguments)}")
    if not isinstance(arguments, Mapping):
        return ActualCall(name, None, f"its arguments are not a JSON object: {shown(arguments)}")
    return ActualCall(name, arguments, _schema_problem(name, arguments, tools))


def _schema_problem(name: str, arguments: Mapping[str, Any], tools: Mapping[str, ToolDefinition]) -> str | None:
    tool = tools.get(name)
    if tool is None:
        return f"no tool is named {name!r} (tools: {', '.join(tools) or 'none'})"
    errors = list(Draft202012Validator(dict(tool.parameters)).iter_errors(dict(arguments)))
    if not errors:
        return None
    return f"its arguments do not match {name}'s parameters: {best_match(errors).message[:120]}"


def compare(expected: ExpectedCall, actual: ActualCall, *, extra_arguments: str, validate: bool) -> PairResult:
    """Whether ``actual`` is the ``expected`` call, with each argument's evidence.

    The same tool, every argument as expected, no argument more (unless ``extra_arguments: allow``), and (with
    ``validate``) arguments valid for the tool's ``parameters``.
    """
    if actual.name != expected.name:
        return PairResult(False, {}, f"calls {actual.name}, not {expected.name}", same_tool=False)
    if actual.arguments is None:
        return PairResult(False, {}, actual.problem or "")
    found = _arguments(expected, actual.arguments, forbid_extra=extra_arguments == "forbid")
    invalid = validate and actual.problem is not None
    return PairResult(not invalid and all(item["passed"] for item in found.values()), found,
                      actual.problem or "" if invalid else "")


def _arguments(expected: ExpectedCall, arguments: Mapping[str, Any], *, forbid_extra: bool) -> dict[str, Any]:
    """Each expected argument's evidence, and (when they are forbidden) each argument more as a failure."""
    found = {name: _argument(matcher, arguments, name) for name, matcher in expected.arguments.items()}
    if forbid_extra:
        found.update({name: {"passed": False, "detail": f"not expected (got {shown(value)})"}
                      for name, value in arguments.items() if name not in expected.arguments})
    return found


def _argument(matcher: Matcher, arguments: Mapping[str, Any], name: str) -> dict[str, Any]:
    if name not in arguments:
        return {"passed": matcher.optional, "detail": "left out (optional)" if matcher.optional else "missing"}
    passed, detail = matcher.check(arguments[name])
    return {"passed": passed, "detail": detail}

