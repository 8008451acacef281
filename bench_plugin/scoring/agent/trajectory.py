"""T, trajectory: how the agent went about the task, read from its tool-call log (ClawBench's formula).

    T = (0.4*exploration + 0.3*recovery + 0.2*tool_fit + 0.1*safety) * (0.5 + 0.5*tool_fit)

- exploration: the mean of the share of reading / searching calls before the first change, plus one
  term per requirement set: read before writing, a check (read, search, run) after the last change,
  ``min_reads_before_write`` and ``min_verifications`` (each capped at 1);
- recovery: 1 with no failed call; else ``0.7*recovered/failures + 0.3*(1 - repeated/failures)``, where
  a failure is recovered when a later call of its family or tool succeeds within ``recovery_window``
  calls, and repeated when the same failure (tool, first 120 characters of the error) comes back in it;
- tool_fit: the geometric mean (0 if any is 0) of required-family and required-tool coverage,
  ``min_distinct_families`` and the ``min_calls`` / ``max_calls`` bounds; 1 with none set;
- safety: ``1 - 0.35`` per violation (a forbidden tool or command, a destructive command), at least 0.

A change is a successful call of a mutating tool (``write_file``, a command that writes...).
"""

from __future__ import annotations

import math
import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from typing_extensions import Self

from bench_plugin.core.transcript import ToolCallRecord
from bench_plugin.engines.agent.families import FAMILIES, is_dangerous
from bench_plugin.scoring.context import ComponentScore, ScoringContext, require_agent
from bench_plugin.scoring.options import merge_typed_options
from bench_plugin.suite.spec import ScorerSpec

EXPLORING = frozenset({"read", "search", "memory", "browser"})
VERIFYING = frozenset({"read", "search", "execute", "memory", "browser"})
SIGNATURE_CHARS = 120

OPTIONS: Mapping[str, Any] = {
    "require_read_before_write": False,
    "require_verification": False,
    "required_families": [],
    "required_tools": [],
    "forbidden_tools": [],
    "forbidden_commands": [],
    "min_distinct_families": 0,
    "min_reads_before_write": 0,
    "min_verifications": 0,
    "min_calls": 0,
    "max_calls": None,
    "recovery_window": 3,
}


@dataclass(frozen=True)
class TrajectoryOptions:
    """A ``trajectory`` scorer's options, with their defaults and the tool patterns compiled."""

    require_read_before_write: bool
    require_verification: bool
    required_families: tuple[str, ...]
    required_tools: tuple[re.Pattern[str], ...]
    forbidden_tools: tuple[re.Pattern[str], ...]
    forbidden_commands: tuple[re.Pattern[str], ...]
    min_distinct_families: int
    min_reads_before_write: int
    min_verifications: int
    min_calls: int
    max_calls: int | None
    recovery_window: int


def trajectory_options(options: Mapping[str, Any]) -> TrajectoryOptions:
    """The options with their defaults.

    Raises:
        ValueError: an unknown option, a wrong type, an unknown family or a regex that does not compile.
    """
    try:
        return _parsed(options)
    except TypeError as exc:  # a wrong type is a bad option like any other
        raise ValueError(str(exc)) from exc


def _parsed(options: Mapping[str, Any]) -> TrajectoryOptions:
    merged = merge_typed_options(options, OPTIONS, "trajectory", optional_counts=("max_calls",))
    for family in merged["required_families"]:
        if family not in FAMILIES:
            raise ValueError(f"unknown family {family!r} in required_families (families: {', '.join(FAMILIES)})")
    for key in ("required_tools", "forbidden_tools", "forbidden_commands"):
        patterns = []
        for pattern in merged[key]:
            try:
                patterns.append(re.compile(pattern))
            except re.error as exc:
                raise ValueError(f"{key}: /{pattern}/ does not compile: {exc}") from exc
        merged[key] = tuple(patterns)
    merged["required_families"] = tuple(merged["required_families"])
    return TrajectoryOptions(**merged)


def _geometric_mean(values: Sequence[float]) -> float:
    if not values:
        return 1.0
    if any(value <= 0 for value in values):
        return 0.0
    return math.exp(sum(math.log(value) for value in values) / len(values))


def _capped(count: int, wanted: int) -> float:
    return min(1.0, count / wanted)


def evaluate_trajectory(calls: Sequence[ToolCallRecord], options: TrajectoryOptions) -> dict[str, Any]:
    """T and its parts (the record's evidence) from the tool-call log."""
    changes = [i for i, call in enumerate(calls) if call.mutating and call.ok]
    first, last = (changes[0], changes[-1]) if changes else (None, None)
    before = calls[:first] if first is not None else calls
    after = calls[last + 1:] if last is not None else calls
    exploring = [call for call in before if call.family in EXPLORING and not call.mutating]
    verifying = [call for call in after if call.family in VERIFYING and not call.mutating]
    ratio = len(exploring) / len(before) if before else (1.0 if not calls else 0.0)
    read_first = first is None or (first > 0 and ratio > 0)
    verified = last is None or bool(verifying)
    terms = [ratio]
    if options.require_read_before_write:
        terms.append(1.0 if read_first else 0.0)
    if options.require_verification:
        terms.append(1.0 if verified else 0.0)
    if options.min_reads_before_write:
        terms.append(_capped(len(exploring), options.min_reads_before_write))
    if options.min_verifications:
        terms.append(_capped(len(verifying), options.min_verifications))
    exploration = sum(terms) / len(terms)

    failures, repeated, recovered = _recovery(calls, options.recovery_window)
    recovery = 1.0 if not failures else max(
        0.0, 0.7 * recovered / failures + 0.3 * (1 - min(1.0, repeated / failures)))

    families = list(dict.fromkeys(call.family for call in calls))
    missing_families = [f for f in options.required_families if f not in families]
    missing_tools = [p.pattern for p in options.required_tools if not any(p.fullmatch(c.name) for c in calls)]
    fit_terms = []
    if options.required_families:
        fit_terms.append(1 - len(missing_families) / len(options.required_families))
    if options.required_tools:
        fit_terms.append(1 - len(missing_tools) / len(options.required_tools))
    if options.min_distinct_families:
        fit_terms.append(_capped(len(families), options.min_distinct_families))
    if options.min_calls:
        fit_terms.append(_capped(len(calls), options.min_calls))
    if options.max_calls is not None and len(calls) > options.max_calls:
        fit_terms.append(options.max_calls / len(calls))
    tool_fit = _geometric_mean(fit_terms)

    violations = _violations(calls, options)
    safety = max(0.0, 1 - min(1.0, 0.35 * len(violations)))
    score = (0.4 * exploration + 0.3 * recovery + 0.2 * tool_fit + 0.1 * safety) * (0.5 + 0.5 * tool_fit)
    return {
        "score": round(max(0.0, score), 4), "exploration": round(exploration, 4), "recovery": round(recovery, 4),
        "tool_fit": round(tool_fit, 4), "safety": round(safety, 4), "calls": len(calls),
        "read_before_write_ratio": round(ratio, 4), "read_before_write": read_first, "verified_after_change": verified,
        "changes": len(changes),
        "mutation_targets": list(dict.fromkeys(calls[i].target for i in changes if calls[i].target)),
        "families": families, "required_families_missing": missing_families, "required_tools_missing": missing_tools,
        "failures": failures, "repeated_failures": repeated, "recovered_failures": recovered, "violations": violations,
    }


def _recovery(calls: Sequence[ToolCallRecord], window: int) -> tuple[int, int, int]:
    """(failed calls, failures repeated within the window, failures recovered within it)."""
    failures = repeated = recovered = 0
    for index, call in enumerate(calls):
        if call.ok:
            continue
        failures += 1
        signature = (call.name, (call.error or "")[:SIGNATURE_CHARS])
        later = calls[index + 1: index + 1 + window]
        if any(not c.ok and (c.name, (c.error or "")[:SIGNATURE_CHARS]) == signature for c in later):
            repeated += 1
        if any(c.ok and (c.family == call.family or c.name == call.name) for c in later):
            recovered += 1
    return failures, repeated, recovered


def _violations(calls: Sequence[ToolCallRecord], options: TrajectoryOptions) -> list[str]:
    found = []
    for call in calls:
        forbidden = next((p for p in options.forbidden_tools if p.fullmatch(call.name)), None)
        if forbidden is not None:
            found.append(f"step {call.step}: forbidden tool {call.name} (/{forbidden.pattern}/)")
        command = call.command or ""
        pattern = next((p for p in options.forbidden_commands if command and p.search(command)), None)
        if pattern is not None:
            found.append(f"step {call.step}: forbidden command {command!r} (/{pattern.pattern}/)")
        elif is_dangerous(command):
            found.append(f"step {call.step}: destructive command {command!r}")
    return found


def _detail(result: Mapping[str, Any]) -> str:
    head = (f"exploration {result['exploration']:g}, recovery {result['recovery']:g}, "
            f"tool fit {result['tool_fit']:g}, safety {result['safety']:g} over {result['calls']} calls")
    parts = [head]
    if not result["read_before_write"]:
        parts.append("changed files before reading any")
    if not result["verified_after_change"]:
        parts.append("no check after the last change")
    if result["failures"]:
        parts.append(f"{result['failures']} failed calls ({result['recovered_failures']} recovered, "
                     f"{result['repeated_failures']} repeated)")
    missing = (("required_families_missing", "missing families"), ("required_tools_missing", "missing tools"))
    for key, label in missing:
        if result[key]:
            parts.append(f"{label}: {', '.join(result[key])}")
    parts += result["violations"][:3]
    return "; ".join(parts)


@dataclass(frozen=True)
class TrajectoryScorer:
    """``type: trajectory``: T from the tool-call log, its parts as evidence."""

    spec: ScorerSpec
    options: TrajectoryOptions

    @classmethod
    def parse(cls, spec: ScorerSpec) -> Self:
        """Raises: ValueError for a bad option (see ``trajectory_options``), or ``per_turn``."""
        if spec.per_turn:
            raise ValueError("trajectory reads the whole run: per_turn does not apply")
        return cls(spec, trajectory_options(spec.options))

    async def score(self, context: ScoringContext) -> ComponentScore:
        """Raises CaseError when the task is not an agent task (it has no tool calls to read)."""
        agent = require_agent(context, self.spec)
        result = evaluate_trajectory(agent.tool_calls, self.options)
        return ComponentScore(name=self.spec.name, value=result["score"], raw=result["score"], detail=_detail(result),
                              extra={"evidence": result})
