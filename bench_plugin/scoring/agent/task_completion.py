"""C, completion: deterministic checks of an agent's final workspace and answer; C = passed / total.

Each entry of ``checks:`` is one assertion about one subject: a ``file`` of the workspace (exists,
contains, matches, JSON equals...), the final ``answer``, or a ``command`` run in the workspace (exit
code, output). The agent engine runs them on the final workspace before removing it
(``verify_completion``); the scorer reads the results. With no checks, C = 1.0 (as in ClawBench).
"""

from __future__ import annotations

import re
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from typing_extensions import Self

from bench_plugin.core.hints import did_you_mean
from bench_plugin.core.transcript import CheckResult
from bench_plugin.engines.agent.final_checks import CONDITIONS
from bench_plugin.scoring.context import ComponentScore, ScoringContext, require_agent
from bench_plugin.scoring.options import check_option_names
from bench_plugin.suite.spec import CaseSpec, ScorerSpec

_SHOWN_FAILURES = 3


def check_final_checks(options: Mapping[str, Any]) -> None:
    """Check a ``completion`` scorer's options.

    Raises:
        ValueError: naming the check and what is wrong with it.
    """
    try:
        _check_final_checks(options)
    except TypeError as exc:  # the Scorer protocol promises ValueError
        raise ValueError(str(exc)) from exc


def _check_final_checks(options: Mapping[str, Any]) -> None:
    check_option_names(options, ("checks",), "completion")
    checks = options.get("checks")
    if not isinstance(checks, list):
        raise TypeError("completion needs checks: a list of {file: PATH, ...}, {answer: true, ...} or {command: ...}")
    for index, check in enumerate(checks):
        try:
            _check_one(check)
        except (TypeError, ValueError) as exc:
            raise type(exc)(f"checks[{index}]: {exc}") from exc


def _check_one(check: Any) -> None:
    if not isinstance(check, Mapping):
        raise TypeError(f"expected a mapping, got {check!r}")
    subjects = [subject for subject in CONDITIONS if subject in check]
    if len(subjects) != 1:
        raise ValueError("give exactly one of file:, answer: or command:")
    _check_keys(check, subjects[0])
    for key in ("matches", "stdout_matches"):
        _check_pattern(key, check.get(key))


def _check_keys(check: Mapping[str, Any], subject: str) -> None:
    """Raises: ValueError for a key that does not apply to the check's subject (with a did-you-mean)."""
    allowed = ("name", subject, *CONDITIONS[subject])
    key = next((key for key in check if key not in allowed), None)
    if key is not None:
        guess = did_you_mean(key, allowed)
        hint = f"; {guess}" if guess else ""
        raise ValueError(f"{key!r} does not apply to a {subject} check{hint} (keys: {', '.join(allowed)})")


def _check_pattern(key: str, pattern: Any) -> None:
    """Raises: ValueError for a regex that does not compile (a template is checked once rendered)."""
    if not isinstance(pattern, str) or "{{" in pattern:
        return
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"{key} /{pattern}/ does not compile: {exc}") from exc


@dataclass(frozen=True)
class CompletionScorer:
    """``type: completion``: the share of its checks that held on the final state.

    The agent engine runs the checks (it renders them with the case's variables); the scorer only
    reads their results, so its parse checks that they are well formed and keeps nothing else.
    """

    spec: ScorerSpec

    @classmethod
    def parse(cls, spec: ScorerSpec) -> Self:
        """Raises: ValueError for a check that is not well formed, or ``per_turn``."""
        if spec.per_turn:
            raise ValueError("completion checks the final state: per_turn does not apply")
        check_final_checks(spec.options)
        return cls(spec)

    def check_case(self, case: CaseSpec) -> None:
        """Find before any call a template in a check that would fail once the agent has run.

        The engine renders the checks with ``case``'s variables (and this scorer's ``vars:``, which ``case`` holds
        here): a name that is neither fails the case now, with the scorer's line and the option's key.

        Raises:
            CaseError: at ``KEY.checks[i].OPTION``, for a template that does not parse or reads a name nothing defines.
        """
        if case.templates is None:
            return
        for index, check in enumerate(self.spec.options.get("checks") or []):
            for path, text in _templates(check, f"{self.spec.key}.checks[{index}]"):
                case.templates.check(text, key=path, line=self.spec.line, known=case.variables)

    async def score(self, context: ScoringContext) -> ComponentScore:
        """Raises CaseError when the task is not an agent task (it has no workspace to check)."""
        spec = self.spec
        checks = require_agent(context, spec).checks.get(spec.name, ())
        passed = sum(1 for check in checks if check.passed)
        value = passed / len(checks) if checks else 1.0
        failed = _failed(checks)
        evidence = {"passed": passed, "total": len(checks), "checks": [check.to_dict() for check in checks]}
        return ComponentScore(name=spec.name, value=round(value, 6), raw=value, passed=not failed,
                              detail=_detail(passed, len(checks), failed), extra={"evidence": evidence})


def _failed(checks: Sequence[CheckResult]) -> list[str]:
    """``name: what went wrong`` of each check that did not hold."""
    return [f"{check.name}: {check.detail}" for check in checks if not check.passed]


def _detail(passed: int, total: int, failed: list[str]) -> str:
    """``2/3 checks passed; failed: ...`` (``no checks`` when there are none)."""
    return (f"{passed}/{total} checks passed" if total else "no checks") + _failures(failed)


def _failures(failed: list[str]) -> str:
    """``; failed: a: ...; b: ... (+2 more)``, or nothing when every check held."""
    if not failed:
        return ""
    more = f" (+{len(failed) - _SHOWN_FAILURES} more)" if len(failed) > _SHOWN_FAILURES else ""
    return "; failed: " + "; ".join(failed[:_SHOWN_FAILURES]) + more


def _templates(value: Any, key: str) -> list[tuple[str, str]]:
    """``(key, text)`` of every string in a check that the engine renders (``engines/agent/final_checks.py``)."""
    if isinstance(value, str):
        return [(key, value)] if "{{" in value or "{%" in value else []
    return [found for item_key, item in _items(value, key) for found in _templates(item, item_key)]


def _items(value: Any, key: str) -> list[tuple[str, Any]]:
    """The entries of a mapping (``KEY.name``) or a list (``KEY[i]``) with their keys; none for a scalar."""
    if isinstance(value, Mapping):
        return [(f"{key}.{name}", item) for name, item in value.items()]
    if isinstance(value, list):
        return [(f"{key}[{index}]", item) for index, item in enumerate(value)]
    return []
