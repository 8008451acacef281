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
    unknown = next((family for family in merged["required_families"] if family not in FAMILIES), None)
    if unknown is not None:
        raise ValueError(f"unknown family {unknown!r} in required_families (families: {', '.join(FAMILIES)})")
    for key in ("required_tools", "forbidden_tools", "forbidden_commands"):
        merged[key] = tuple(_compiled(key, pattern) for pattern in merged[key])
    merged["required_families"] = tuple(merged["required_families"])
    return TrajectoryOptions(**merged)


def _compiled(key: str, pattern: str) -> re.Pattern[str]:
    """Raises: ValueError naming the option of a regex that does not compile."""
    try:
        return re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"{key}: /{pattern}/ does not compile: {exc}") from exc


def _geometric_mean(values: Sequence[float]) -> float:
    if not values:
        return 1.0
    if any(value <= 0 for value in values):
        return 0.0
    return math.exp(sum(math.log(value) for value in values) / len(values))


def _capped(count: int, wanted: int) -> float:
    return min(1.0, count / wanted)


@dataclass(frozen=True)
class _Exploration:
    """What the agent read before its first change and checked after its last, as one score."""

    score: float
    ratio: float
    read_first: bool
    verified: bool


@dataclass(frozen=True)
class _ToolFit:
    """How well the tools used fit the required families, tools and call counts, as one score."""

    score: float
    families: list[str]
    missing_families: list[str]
    missing_tools: list[str]


def evaluate_trajectory(calls: Sequence[ToolCallRecord], options: TrajectoryOptions) -> dict[str, Any]:
    """T and its parts (the record's evidence) from the tool-call log."""
    changes = [i for i, call in enumerate(calls) if call.mutating and call.ok]
    explored = _exploration(calls, changes, options)
    failures, repeated, recovered = _recovery(calls, options.recovery_window)
    recovery = _recovery_score(failures, repeated, recovered)
    fit = _tool_fit(calls, options)
    violations = _violations(calls, options)
    safety = max(0.0, 1 - min(1.0, 0.35 * len(violations)))
    score = (0.4 * explored.score + 0.3 * recovery + 0.2 * fit.score + 0.1 * safety) * (0.5 + 0.5 * fit.score)
    return {
        "score": round(max(0.0, score), 4), "exploration": round(explored.score, 4), "recovery": round(recovery, 4),
        "tool_fit": round(fit.score, 4), "safety": round(safety, 4), "calls": len(calls),
        "read_before_write_ratio": round(explored.ratio, 4), "read_before_write": explored.read_first,
        "verified_after_change": explored.verified,
        "changes": len(changes),
        "mutation_targets": list(dict.fromkeys(calls[i].target for i in changes if calls[i].target)),
        "families": fit.families, "required_families_missing": fit.missing_families,
        "required_tools_missing": fit.missing_tools,
        "failures": failures, "repeated_failures": repeated, "recovered_failures": recovered, "violations": violations,
    }


def _looking(calls: Sequence[ToolCallRecord], families: frozenset[str]) -> int:
    """How many of the calls look (read, search...) without changing anything."""
    return sum(1 for call in calls if call.family in families and not call.mutating)


def _exploration(calls: Sequence[ToolCallRecord], changes: Sequence[int], options: TrajectoryOptions) -> _Exploration:
    before, after = _around_changes(calls, changes)
    reads, checks = _looking(before, EXPLORING), _looking(after, VERIFYING)
    # nothing before the first change: 1 for an agent that made no call at all, else 0
    ratio = reads / len(before) if before else float(not calls)
    read_first = not changes or (changes[0] > 0 and ratio > 0)
    verified = not changes or checks > 0
    terms = [ratio, *_exploration_terms(options, read_first, verified, reads, checks)]
    return _Exploration(sum(terms) / len(terms), ratio, read_first, verified)


def _around_changes(
    calls: Sequence[ToolCallRecord], changes: Sequence[int]
) -> tuple[Sequence[ToolCallRecord], Sequence[ToolCallRecord]]:
    """The calls before the first change and after the last (all of them, both times, with no change)."""
    if not changes:
        return calls, calls
    return calls[:changes[0]], calls[changes[-1] + 1:]


def _exploration_terms(
    options: TrajectoryOptions, read_first: bool, verified: bool, reads: int, checks: int
) -> list[float]:
    """One term per exploration requirement the options set."""
    terms = []
    if options.require_read_before_write:
        terms.append(float(read_first))
    if options.require_verification:
        terms.append(float(verified))
    if options.min_reads_before_write:
        terms.append(_capped(reads, options.min_reads_before_write))
    if options.min_verifications:
        terms.append(_capped(checks, options.min_verifications))
    return terms


def _recovery_score(failures: int, repeated: int, recovered: int) -> float:
    if not failures:
        return 1.0
    return max(0.0, 0.7 * recovered / failures + 0.3 * (1 - min(1.0, repeated / failures)))


def _tool_fit(calls: Sequence[ToolCallRecord], options: TrajectoryOptions) -> _ToolFit:
    families = list(dict.fromkeys(call.family for call in calls))
    missing_families = [f for f in options.required_families if f not in families]
    missing_tools = _missing_tools(calls, options.required_tools)
    terms = [*_coverage_terms(options, missing_families, missing_tools), *_count_terms(options, families, calls)]
    return _ToolFit(_geometric_mean(terms), families, missing_families, missing_tools)


def _missing_tools(calls: Sequence[ToolCallRecord], required: Sequence[re.Pattern[str]]) -> list[str]:
    """The required tool patterns no call's tool matches."""
    return [pattern.pattern for pattern in required if not any(pattern.fullmatch(call.name) for call in calls)]


def _coverage_terms(options: TrajectoryOptions, missing_families: list[str], missing_tools: list[str]) -> list[float]:
    """The share of required families and of required tools the agent used (when some are required)."""
    terms = []
    if options.required_families:
        terms.append(1 - len(missing_families) / len(options.required_families))
    if options.required_tools:
        terms.append(1 - len(missing_tools) / len(options.required_tools))
    return terms


def _count_terms(options: TrajectoryOptions, families: list[str], calls: Sequence[ToolCallRecord]) -> list[float]:
    """The ``min_distinct_families``, ``min_calls`` and ``max_calls`` bounds, each as a share of 1."""
    terms = []
    if options.min_distinct_families:
        terms.append(_capped(len(families), options.min_distinct_families))
    if options.min_calls:
        terms.append(_capped(len(calls), options.min_calls))
    if options.max_calls is not None and len(calls) > options.max_calls:
        terms.append(options.max_calls / len(calls))
    return terms


def _signature(call: ToolCallRecord) -> tuple[str, str]:
    """What makes two failures the same failure: the tool and the start of its error."""
    return call.name, (call.error or "")[:SIGNATURE_CHARS]


def _repeats(failure: ToolCallRecord, later: Sequence[ToolCallRecord]) -> bool:
    return any(not call.ok and _signature(call) == _signature(failure) for call in later)


def _recovers(failure: ToolCallRecord, later: Sequence[ToolCallRecord]) -> bool:
    return any(call.ok and (call.family == failure.family or call.name == failure.name) for call in later)


def _recovery(calls: Sequence[ToolCallRecord], window: int) -> tuple[int, int, int]:
    """(failed calls, failures repeated within the window, failures recovered within it)."""
    failures = repeated = recovered = 0
    for index, call in enumerate(calls):
        if call.ok:
            continue
        later = calls[index + 1: index + 1 + window]
        failures += 1
        repeated += _repeats(call, later)
        recovered += _recovers(call, later)
    return failures, repeated, recovered


def _violations(calls: Sequence[ToolCallRecord], options: TrajectoryOptions) -> list[str]:
    found = []
    for call in calls:
        found += _tool_violations(call, options) + _command_violations(call, options)
    return found


def _tool_violations(call: ToolCallRecord, options: TrajectoryOptions) -> list[str]:
    forbidden = next((p for p in options.forbidden_tools if p.fullmatch(call.name)), None)
    return [] if forbidden is None else [f"step {call.step}: forbidden tool {call.name} (/{forbidden.pattern}/)"]


def _forbidding(command: str, patterns: Sequence[re.Pattern[str]]) -> re.Pattern[str] | None:
    """The first forbidden-command pattern found in the command (none for no command)."""
    if not command:
        return None
    return next((pattern for pattern in patterns if pattern.search(command)), None)


def _command_violations(call: ToolCallRecord, options: TrajectoryOptions) -> list[str]:
    command = call.command or ""
    pattern = _forbidding(command, options.forbidden_commands)
    if pattern is not None:
        return [f"step {call.step}: forbidden command {command!r} (/{pattern.pattern}/)"]
    if is_dangerous(command):
        return [f"step {call.step}: destructive command {command!r}"]
    return []


def _detail(result: Mapping[str, Any]) -> str:
    head = (f"exploration {result['exploration']:g}, recovery {result['recovery']:g}, "
            f"tool fit {result['tool_fit']:g}, safety {result['safety']:g} over {result['calls']} calls")
    parts = [head, *_lapses(result)]
    if result["failures"]:
        parts.append(f"{result['failures']} failed calls ({result['recovered_failures']} recovered, "
                     f"{result['repeated_failures']} repeated)")
    missing = (("required_families_missing", "missing families"), ("required_tools_missing", "missing tools"))
    parts += [f"{label}: {', '.join(result[key])}" for key, label in missing if result[key]]
    parts += result["violations"][:3]
    return "; ".join(parts)


def _lapses(result: Mapping[str, Any]) -> list[str]:
    """Changes made before reading, or not checked after."""
    lapses = []
    if not result["read_before_write"]:
        lapses.append("changed files before reading any")
    if not result["verified_after_change"]:
        lapses.append("no check after the last change")
    return lapses


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
