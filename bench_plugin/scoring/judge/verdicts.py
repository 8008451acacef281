"""Reading a judge's verdict out of its reply: a table of rule kinds (``[[N]]``, regex, JSON field...).

Judges and candidates wrap what we want in prose and code fences, so every reader here looks in
the places models actually put things. Verdict rules are a table of kinds (``regex``,
``json_field``...) so that new ones (markdown-table cells, per-category scores) are one entry more.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any

from bench_plugin.errors import JudgeError
from bench_plugin.json_text import iter_json_objects, parse_json_path, walk_json_path
from bench_plugin.scoring.judge.markdown_table import check_table_rule, read_table_cell

_DOUBLE_BRACKETS = re.compile(r"\[\[\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+))\s*\]\]")
# a signed decimal as the rent benchmark's master scorer reads it: "-0.5", "+1", "0.25"
_SIGNED_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")
NUMBER_POSITIONS = ("first", "last")
FALLBACK = "fallback"  # any rule may name a rule to try when it reads nothing


# ----------------------------------------------------------------------------- JSON in text


# ----------------------------------------------------------------------------- paths into JSON


# ----------------------------------------------------------------------------- judge verdicts


@dataclass(frozen=True)
class VerdictRule:
    """One kind of verdict rule: how to read the number, and which extra keys the rule may have."""

    read: Callable[[str, Mapping[str, Any]], float]
    check: Callable[[Mapping[str, Any]], None]
    extra_keys: frozenset[str] = frozenset()


def _as_number(value: Any, what: str) -> float:
    if isinstance(value, bool) or not isinstance(value, (int, float, str)):
        raise JudgeError(f"{what} is {json.dumps(value)}, not a number")
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except ValueError:
        raise JudgeError(f"{what} is {value!r}, not a number") from None
    if not math.isfinite(number):
        raise JudgeError(f"{what} is {value!r}, not a finite number")
    return number


def _read_double_brackets(text: str, rule: Mapping[str, Any]) -> float:
    match = _DOUBLE_BRACKETS.search(text)
    if match is None:
        raise JudgeError(f"no [[N]] rating in the reply ({len(text)} chars)")
    return _as_number(match.group(1), "the [[N]] rating")


def _read_regex(text: str, rule: Mapping[str, Any]) -> float:
    pattern = re.compile(rule["regex"])
    match = pattern.search(text)
    if match is None:
        raise JudgeError(f"no match for /{pattern.pattern}/ in the reply ({len(text)} chars)")
    group = rule.get("group", 1 if pattern.groups else 0)
    captured = match.group(group)
    if captured is None:
        raise JudgeError(f"/{pattern.pattern}/ matched, but group {group} captured nothing")
    return _as_number(captured, f"the text matched by group {group} of /{pattern.pattern}/")


def _read_json_field(text: str, rule: Mapping[str, Any]) -> float:
    steps = parse_json_path(rule["json_field"])
    seen = 0
    last_problem = ""
    for candidate in iter_json_objects(text):
        seen += 1
        try:
            value = walk_json_path(candidate, steps)
        except LookupError as exc:
            last_problem = f"; {exc}"
            continue
        return _as_number(value, f"field {rule['json_field']!r}")
    if not seen:
        raise JudgeError(f"no JSON object in the reply ({len(text)} chars)")
    raise JudgeError(f"no JSON object in the reply has the field {rule['json_field']!r}{last_problem}")


def _read_number(text: str, rule: Mapping[str, Any]) -> float:
    matches = list(_SIGNED_NUMBER.finditer(text.strip()))
    if not matches:
        shown = text.strip()[:40]
        raise JudgeError(f"no number in the reply ({len(text)} chars: {shown!r})")
    which = rule["number"]
    return _as_number((matches[0] if which == "first" else matches[-1]).group(0), f"the {which} number")


def _check_number(rule: Mapping[str, Any]) -> None:
    if rule["number"] not in NUMBER_POSITIONS:
        raise ValueError(f"parse.number must be one of {', '.join(NUMBER_POSITIONS)}, got {rule['number']!r}")


def _check_regex(rule: Mapping[str, Any]) -> None:
    pattern = rule["regex"]
    if not isinstance(pattern, str):
        raise TypeError(f"parse.regex must be a string, got {type(pattern).__name__}")
    try:
        compiled = re.compile(pattern)
    except re.error as exc:
        raise ValueError(f"parse.regex /{pattern}/ does not compile: {exc}") from exc
    group = rule.get("group")
    if group is None:
        return
    if isinstance(group, bool) or not isinstance(group, (int, str)):
        raise TypeError(f"parse.group must be a group number or name, got {group!r}")
    if isinstance(group, int) and not 0 <= group <= compiled.groups:
        raise ValueError(f"parse.group is {group} but /{pattern}/ has {compiled.groups} group(s)")
    if isinstance(group, str) and group not in compiled.groupindex:
        raise ValueError(f"parse.group {group!r} is not a named group of /{pattern}/")


def _check_json_field(rule: Mapping[str, Any]) -> None:
    field_path = rule["json_field"]
    if not isinstance(field_path, str) or not field_path.strip():
        raise ValueError(f"parse.json_field must be a field path such as 'score', got {field_path!r}")
    parse_json_path(field_path)


def _check_nothing(rule: Mapping[str, Any]) -> None:
    return None


DEFAULT_RULE = VerdictRule(read=_read_double_brackets, check=_check_nothing)

VERDICT_RULES: dict[str, VerdictRule] = {
    "regex": VerdictRule(read=_read_regex, check=_check_regex, extra_keys=frozenset({"group"})),
    "json_field": VerdictRule(read=_read_json_field, check=_check_json_field),
    "number": VerdictRule(read=_read_number, check=_check_number),
    # the row may be left out: llm_judge then reads the candidate's row (scoring/reading.py)
    "table": VerdictRule(read=read_table_cell, check=lambda rule: check_table_rule(rule["table"], needs_row=False)),
}
"""Rule kinds by the key that names them: ``{regex: ...}``, ``{json_field: ...}``, ``{number: first}``,
``{table: {column, row, key_column, after}}``."""


def _rule_kind(rule: Mapping[str, Any] | None) -> VerdictRule:
    if not rule or set(rule) == {FALLBACK}:
        return DEFAULT_RULE
    kinds = [key for key in rule if key in VERDICT_RULES]
    if len(kinds) != 1:
        found = "both " + " and ".join(kinds) if kinds else "none"
        raise ValueError(f"a parse rule needs exactly one of {', '.join(VERDICT_RULES)}; found {found}")
    kind = VERDICT_RULES[kinds[0]]
    unknown = sorted(set(rule) - {kinds[0], FALLBACK} - kind.extra_keys)
    if unknown:
        allowed = ", ".join(sorted({kinds[0], *kind.extra_keys, FALLBACK}))
        raise ValueError(
            f"parse rule has unknown key(s) {', '.join(unknown)}; a {kinds[0]} rule takes {allowed}"
        )
    return kind


def check_verdict_rule(rule: Mapping[str, Any] | None) -> None:
    """Check a parse rule before any judge is called.

    Raises:
        ValueError: for an unknown kind, unknown keys, a regex that does not compile, a bad group.
    """
    if rule is not None and not isinstance(rule, Mapping):
        raise ValueError(f"parse must be a mapping such as {{regex: '...'}}, got {type(rule).__name__}")
    _rule_kind(rule).check(rule or {})
    if rule and FALLBACK in rule:
        if not isinstance(rule[FALLBACK], Mapping):
            raise ValueError(f"parse.fallback must be a parse rule such as {{regex: '...'}}, got {rule[FALLBACK]!r}")
        check_verdict_rule(rule[FALLBACK])


def parse_verdict(text: str, rule: Mapping[str, Any] | None = None) -> float:
    """Read the number a judge gave.

    Args:
        text: the judge's full reply.
        rule: ``{regex: PATTERN, group: N}`` (first match; group 1 when the pattern has groups,
            else the whole match), ``{json_field: "a.b"}`` (the reply, a fenced block or an embedded
            object), ``{number: first}`` (the first signed number such as ``-0.5`` or ``+1``; ``last``
            for the last), or None/empty for the first ``[[N]]``, as in MT-Bench's ``Rating: [[8.5]]``.
            Any rule may add ``fallback: RULE``, tried when the rule reads nothing: MT-Bench reads
            ``[[N]]`` and falls back to ``[N]`` (``{fallback: {regex: '\\[(\\d+\\.?\\d*)\\]'}}``).

    Returns:
        The verdict on the judge's own scale.

    Raises:
        JudgeError: when no verdict can be read; the message says what was looked for.
        ValueError: when the rule itself is malformed (``check_verdict_rule`` catches this earlier).
    """
    kind = _rule_kind(rule)
    try:
        return kind.read(text, rule or {})
    except JudgeError as exc:
        if not rule or FALLBACK not in rule:
            raise
        try:
            return parse_verdict(text, rule[FALLBACK])
        except JudgeError as fallback_exc:
            raise JudgeError(f"{exc}; fallback: {fallback_exc}") from fallback_exc
