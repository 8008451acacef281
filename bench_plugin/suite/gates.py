"""Turn gates: whether a scripted turn is sent, decided on the model's last answer."""

from __future__ import annotations

import re
from collections.abc import Callable, Mapping
from typing import NamedTuple

from bench_plugin.core.frozen import type_name

GATE_KINDS = ("regex", "not_regex", "contains", "not_contains")
"""The keys of ``when:``; every key given must hold for the turn to be sent."""


def check_gate(when: Mapping[str, str]) -> None:
    """Check a gate before anything runs.

    Raises:
        ValueError: for an unknown kind or a regex that does not compile.
        TypeError: for a value that is not a string.
    """
    for kind, pattern in when.items():
        if kind not in GATE_KINDS:
            raise ValueError(f"unknown gate {kind!r}; choose from: {', '.join(GATE_KINDS)}")
        if not isinstance(pattern, str):
            raise TypeError(f"{kind} must be a string, got {type_name(pattern)}")
        if kind.endswith("regex"):
            _check_regex(kind, pattern)


def _check_regex(kind: str, pattern: str) -> None:
    try:
        re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"{kind} /{pattern}/ does not compile: {exc}") from exc


def evaluate_gate(when: Mapping[str, str], text: str) -> tuple[bool, str]:
    """Whether every condition of ``when`` holds on ``text`` (the last answer).

    Returns:
        ``(held, reason)``; the reason names the first condition that failed, and is empty when
        the gate held (an empty ``when`` always holds).

    Example:
        >>> evaluate_gate({"regex": "(?i)yes"}, "No.")
        (False, 'regex /(?i)yes/ did not match the last answer')
    """
    for kind, pattern in when.items():
        condition = _CONDITIONS.get(kind)
        if condition is not None and not condition.holds(pattern, text):
            return False, condition.failure.format(pattern=pattern)
    return True, ""


class _Condition(NamedTuple):
    holds: Callable[[str, str], bool]  # (pattern, text) -> whether the condition holds
    failure: str  # the reason when it does not, with {pattern}


def _matches(pattern: str, text: str) -> bool:
    return re.search(pattern, text) is not None


def _does_not_match(pattern: str, text: str) -> bool:
    return re.search(pattern, text) is None


def _contains(pattern: str, text: str) -> bool:
    return pattern in text


def _does_not_contain(pattern: str, text: str) -> bool:
    return pattern not in text


_CONDITIONS = {
    "regex": _Condition(_matches, "regex /{pattern}/ did not match the last answer"),
    "not_regex": _Condition(_does_not_match, "not_regex /{pattern}/ matched the last answer"),
    "contains": _Condition(_contains, "the last answer does not contain {pattern!r}"),
    "not_contains": _Condition(_does_not_contain, "the last answer contains {pattern!r}"),
}
