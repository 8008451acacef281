"""Turn gates: whether a scripted turn is sent, decided on the model's last answer."""

from __future__ import annotations

import re
from collections.abc import Mapping

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
        if kind == "regex" and re.search(pattern, text) is None:
            return False, f"regex /{pattern}/ did not match the last answer"
        if kind == "not_regex" and re.search(pattern, text) is not None:
            return False, f"not_regex /{pattern}/ matched the last answer"
        if kind == "contains" and pattern not in text:
            return False, f"the last answer does not contain {pattern!r}"
        if kind == "not_contains" and pattern in text:
            return False, f"the last answer contains {pattern!r}"
    return True, ""
