"""A judge scorer's ``parse:`` rule: where in the judge's reply the score is read (``[[N]]``, regex, JSON field...).

Judges and candidates wrap what we want in prose and code fences, so every rule here looks in
the places models actually put things. Parse rules are a table of kinds (``regex``,
``json_field``...) so that new ones (markdown-table cells, per-category scores) are one entry more.
A rule finds the score as written (a captured text, a JSON value, a cell); the scorer's
``verdict:`` (``verdict_maps.py``) makes it a score: a number by default, or a label's score
(``GRADE: C`` -> 1). A rule is compiled once, when its scorer is parsed, into a ``ParseRule``
(patterns compiled, paths split) that reads every reply; what it reads is a ``RuleReading``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Protocol

from bench_plugin.core.errors import JudgeError
from bench_plugin.core.json_text import PathStep, iter_json_objects, parse_json_path, walk_json_path
from bench_plugin.scoring.judge.markdown_table import TableRule, cell_number, parse_table_rule
from bench_plugin.scoring.judge.verdict_maps import LabelVerdict, VerdictMap, label_rule
from bench_plugin.scoring.options import check_known_keys

_DOUBLE_BRACKETS = re.compile(r"\[\[\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+))\s*\]\]")
# a signed decimal as the rent benchmark's master scorer reads it: "-0.5", "+1", "0.25"
_SIGNED_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")
NUMBER_POSITIONS = ("first", "last")
FALLBACK = "fallback"  # any rule may name a rule to try when it reads nothing


def _as_number(value: Any, what: str) -> float:
    if isinstance(value, bool):
        raise JudgeError(f"{what} is {json.dumps(value)}, not a number "
                         "(verdict: true_false or pass_fail reads true/false as 1/0)")
    if not isinstance(value, (int, float, str)):
        raise JudgeError(f"{what} is {json.dumps(value)}, not a number")
    try:
        number = float(value.strip() if isinstance(value, str) else value)
    except ValueError:
        raise JudgeError(f"{what} is {value!r}, not a number") from None
    if not math.isfinite(number):
        raise JudgeError(f"{what} is {value!r}, not a finite number")
    return number


@dataclass(frozen=True)
class Found:
    """What a rule found in the reply, before it is a score: a captured text, a JSON value, a cell.

    ``what`` names it in messages (``field 'pass'``); ``number`` reads it as a number when the
    scorer's verdict is a number (a table cell's first number, ``**92**/100`` -> 92).
    """

    value: Any
    what: str
    number: Callable[[Any, str], float] = _as_number


class RuleKind(Protocol):
    """One compiled kind of rule: finds the score, as written, in a judge's reply."""

    def find(self, text: str, candidate: Sequence[str]) -> Found:
        """The score as written; ``candidate`` names the row a table rule without ``row`` reads.

        Raises:
            JudgeError: when nothing can be found; the message says what was looked for.
        """
        ...


@dataclass(frozen=True)
class DoubleBrackets:
    """No rule: the first ``[[N]]``, as in MT-Bench's ``Rating: [[8.5]]``."""

    def find(self, text: str, candidate: Sequence[str]) -> Found:
        """Raises: JudgeError when the reply has no ``[[N]]``."""
        match = _DOUBLE_BRACKETS.search(text)
        if match is None:
            raise JudgeError(f"no [[N]] rating in the reply ({len(text)} chars)")
        return Found(match.group(1), "the [[N]] rating")


@dataclass(frozen=True)
class RegexRule:
    """``{regex: PATTERN, group: N}``: the first match (group 1 when the pattern has groups, else all of it)."""

    pattern: re.Pattern[str]
    group: int | str

    def find(self, text: str, candidate: Sequence[str]) -> Found:
        """Raises: JudgeError when nothing matches or the group is empty."""
        pattern, group = self.pattern, self.group
        match = pattern.search(text)
        if match is None:
            raise JudgeError(f"no match for /{pattern.pattern}/ in the reply ({len(text)} chars)")
        captured = match.group(group)
        if captured is None:
            raise JudgeError(f"/{pattern.pattern}/ matched, but group {group} captured nothing")
        return Found(captured, f"the text matched by group {group} of /{pattern.pattern}/")


@dataclass(frozen=True)
class JsonFieldRule:
    """``{json_field: "a.b"}``: the field of the reply, a fenced block or an embedded object."""

    path: str
    steps: tuple[PathStep, ...]

    def find(self, text: str, candidate: Sequence[str]) -> Found:
        """Raises: JudgeError when no JSON object has the field."""
        seen = 0
        last_problem = ""
        for found in iter_json_objects(text):
            seen += 1
            try:
                value = walk_json_path(found, self.steps)
            except LookupError as exc:
                last_problem = f"; {exc}"
                continue
            return Found(value, f"field {self.path!r}")
        if not seen:
            raise JudgeError(f"no JSON object in the reply ({len(text)} chars)")
        raise JudgeError(f"no JSON object in the reply has the field {self.path!r}{last_problem}")


@dataclass(frozen=True)
class NumberRule:
    """``{number: first}`` (or ``last``): a signed number such as ``-0.5`` or ``+1``."""

    position: str

    def find(self, text: str, candidate: Sequence[str]) -> Found:
        """Raises: JudgeError when the reply has no number."""
        matches = list(_SIGNED_NUMBER.finditer(text.strip()))
        if not matches:
            shown = text.strip()[:40]
            raise JudgeError(f"no number in the reply ({len(text)} chars: {shown!r})")
        which = self.position
        return Found((matches[0] if which == "first" else matches[-1]).group(0), f"the {which} number")


@dataclass(frozen=True)
class TableCellRule:
    """``{table: {column, row, key_column, after}}``: one cell; without ``row``, the candidate's."""

    table: TableRule

    def find(self, text: str, candidate: Sequence[str]) -> Found:
        """Raises: JudgeError when the table or the row cannot be found."""
        cell, what = self.table.cell_text(text, candidate)
        return Found(cell, what, cell_number)


@dataclass(frozen=True)
class GradeLineRule:
    """A verdict map without a ``parse:`` rule: the label of a ``GRADE: X`` line (``verdict_maps.py``)."""

    rule: LabelVerdict

    def find(self, text: str, candidate: Sequence[str]) -> Found:
        """Raises: JudgeError when no line names one of the labels."""
        return Found(self.rule.find(text), "the grade")


def _parse_regex(rule: Mapping[str, Any]) -> RegexRule:
    source = rule["regex"]
    if not isinstance(source, str):
        raise TypeError(f"parse.regex must be a string, got {type(source).__name__}")
    try:
        compiled = re.compile(source)
    except re.error as exc:
        raise ValueError(f"parse.regex /{source}/ does not compile: {exc}") from exc
    return RegexRule(compiled, _group(rule.get("group"), compiled))


def _group(group: Any, pattern: re.Pattern[str]) -> int | str:
    """``parse.group``, a group of the pattern; without one, group 1 when it has groups, else the whole match."""
    if group is None:
        return 1 if pattern.groups else 0
    if isinstance(group, bool) or not isinstance(group, (int, str)):
        raise TypeError(f"parse.group must be a group number or name, got {group!r}")
    if isinstance(group, str):
        if group not in pattern.groupindex:
            raise ValueError(f"parse.group {group!r} is not a named group of /{pattern.pattern}/")
    elif not 0 <= group <= pattern.groups:
        raise ValueError(f"parse.group is {group} but /{pattern.pattern}/ has {pattern.groups} group(s)")
    return group


def _parse_json_field(rule: Mapping[str, Any]) -> JsonFieldRule:
    field_path = rule["json_field"]
    if not isinstance(field_path, str) or not field_path.strip():
        raise ValueError(f"parse.json_field must be a field path such as 'score', got {field_path!r}")
    return JsonFieldRule(field_path, parse_json_path(field_path))


def _parse_number(rule: Mapping[str, Any]) -> NumberRule:
    if rule["number"] not in NUMBER_POSITIONS:
        raise ValueError(f"parse.number must be one of {', '.join(NUMBER_POSITIONS)}, got {rule['number']!r}")
    return NumberRule(rule["number"])


@dataclass(frozen=True)
class KindEntry:
    """One kind of parse rule in the table: how to parse it, and which extra keys it may have."""

    parse: Callable[[Mapping[str, Any]], RuleKind]
    extra_keys: frozenset[str] = frozenset()


RULE_KINDS: dict[str, KindEntry] = {
    "regex": KindEntry(parse=_parse_regex, extra_keys=frozenset({"group"})),
    "json_field": KindEntry(parse=_parse_json_field),
    "number": KindEntry(parse=_parse_number),
    # the row may be left out: llm_judge then reads the candidate's row (judge_reply.py)
    "table": KindEntry(parse=lambda rule: TableCellRule(parse_table_rule(rule["table"], needs_row=False))),
}
"""Rule kinds by the key that names them: ``{regex: ...}``, ``{json_field: ...}``, ``{number: first}``,
``{table: {column, row, key_column, after}}``."""


@dataclass(frozen=True)
class RuleReading:
    """What a rule read from a reply: the score on the judge's scale, and the label it was written as (maps only)."""

    score: float
    label: str | None = None


@dataclass(frozen=True)
class ParseRule:
    """A compiled ``parse:`` rule: its kind, the rule tried when it reads nothing (``fallback:``), the scorer's map.

    ``labels`` is None when the verdict is a number (``verdict: number``, the default).
    """

    kind: RuleKind
    fallback: ParseRule | None = None
    labels: VerdictMap | None = None

    def read(self, text: str, candidate: Sequence[str] = ()) -> float:
        """The score on the judge's own scale (a label's score under a map).

        Raises:
            JudgeError: when neither the rule nor its fallback reads one; the message names both.
        """
        return self.reading(text, candidate).score

    def reading(self, text: str, candidate: Sequence[str] = ()) -> RuleReading:
        """The score and, under a map, the label it was written as.

        A rule whose find is not a number (or not one of the map's labels) counts as reading
        nothing, so its fallback is tried.

        Raises:
            JudgeError: when neither the rule nor its fallback reads one; the message names both.
        """
        try:
            return self._convert(self.kind.find(text, candidate))
        except JudgeError as exc:
            if self.fallback is None:
                raise
            try:
                return self.fallback.reading(text, candidate)
            except JudgeError as fallback_exc:
                raise JudgeError(f"{exc}; fallback: {fallback_exc}") from fallback_exc

    def _convert(self, found: Found) -> RuleReading:
        if self.labels is None:
            return RuleReading(found.number(found.value, found.what))
        label, score = self.labels.score(found.value, found.what)
        return RuleReading(score, label)


def _rule_kind(rule: Mapping[str, Any], labels: VerdictMap | None) -> RuleKind:
    if not rule or set(rule) == {FALLBACK}:
        return DoubleBrackets() if labels is None else GradeLineRule(label_rule(labels))
    name = _kind_name(rule)
    kind = RULE_KINDS[name]
    check_known_keys(rule, sorted({name, *kind.extra_keys, FALLBACK}), "parse rule", taker=f"a {name} rule")
    return kind.parse(rule)


def _kind_name(rule: Mapping[str, Any]) -> str:
    """The one key of the rule that names its kind (``regex``, ``json_field``...)."""
    kinds = [key for key in rule if key in RULE_KINDS]
    if len(kinds) != 1:
        found = "both " + " and ".join(kinds) if kinds else "none"
        raise ValueError(f"a parse rule needs exactly one of {', '.join(RULE_KINDS)}; found {found}")
    return kinds[0]


def compile_parse_rule(rule: Mapping[str, Any] | None, labels: VerdictMap | None = None) -> ParseRule:
    r"""Read a ``parse:`` rule once, before any judge is called.

    Args:
        rule: ``{regex: PATTERN, group: N}`` (first match; group 1 when the pattern has groups,
            else the whole match), ``{json_field: "a.b"}`` (the reply, a fenced block or an embedded
            object), ``{number: first}`` (the first signed number such as ``-0.5`` or ``+1``; ``last``
            for the last), ``{table: {...}}`` (a cell of a markdown table) or None/empty for the
            first ``[[N]]``, as in MT-Bench's ``Rating: [[8.5]]``. Any rule may add
            ``fallback: RULE``, tried when the rule reads nothing: MT-Bench reads ``[[N]]`` and falls
            back to ``[N]`` (``{fallback: {regex: '\[(\d+\.?\d*)\]'}}``).
        labels: the scorer's ``verdict:`` map (``parse_verdict_map``): what the rule finds is looked
            up as a label; without a rule, the last ``GRADE: X`` / ``VERDICT: X`` is read. None: the
            verdict is a number.

    Raises:
        ValueError: for an unknown kind, unknown keys, a regex that does not compile, a bad group.
        TypeError: for a value of the wrong type (a regex that is not text).
    """
    if rule is not None and not isinstance(rule, Mapping):
        raise ValueError(f"parse must be a mapping such as {{regex: '...'}}, got {type(rule).__name__}")
    kind = _rule_kind(rule or {}, labels)
    if not rule or FALLBACK not in rule:
        return ParseRule(kind, labels=labels)
    if not isinstance(rule[FALLBACK], Mapping):
        raise ValueError(f"parse.fallback must be a parse rule such as {{regex: '...'}}, got {rule[FALLBACK]!r}")
    return ParseRule(kind, compile_parse_rule(rule[FALLBACK], labels), labels)


def read_with_rule(text: str, rule: Mapping[str, Any] | None = None, labels: VerdictMap | None = None) -> float:
    """Read the score a judge gave, by a rule written as in a suite (see ``compile_parse_rule``).

    Scorers parse their rule once and call ``ParseRule.read``; this is for one-off readings
    (a recorded judgement checked against its score).

    Raises:
        JudgeError: when no verdict can be read; the message says what was looked for.
        ValueError: when the rule itself is malformed.
    """
    return compile_parse_rule(rule, labels).read(text)
