"""Reading values out of model replies: a judge's verdict, JSON inside prose, a path into JSON.

Judges and candidates wrap what we want in prose and code fences, so every reader here looks in
the places models actually put things. Verdict rules are a table of kinds (``regex``,
``json_field``...) so that new ones (markdown-table cells, per-category scores) are one entry more.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench_plugin.errors import JudgeError
from bench_plugin.scoring.judge.markdown_table import check_table_rule, read_table_cell

PathStep = str | int

_FENCED = re.compile(r"```[ \t]*(?:json)?[ \t]*\r?\n(.*?)```", re.IGNORECASE | re.DOTALL)
_DOUBLE_BRACKETS = re.compile(r"\[\[\s*([-+]?(?:\d+(?:\.\d*)?|\.\d+))\s*\]\]")
_PATH_TOKEN = re.compile(
    r"""\.?(?P<name>[^.\[\]'"]+)|\[(?P<index>-?\d+)\]|\[(?P<quote>['"])(?P<key>.*?)(?P=quote)\]"""
)
# a signed decimal as the rent benchmark's master scorer reads it: "-0.5", "+1", "0.25"
_SIGNED_NUMBER = re.compile(r"[+-]?\d+(?:\.\d+)?")
NUMBER_POSITIONS = ("first", "last")
FALLBACK = "fallback"  # any rule may name a rule to try when it reads nothing
_MAX_EMBEDDED_ATTEMPTS = 200  # a reply full of braces must not cost seconds of decoding


# ----------------------------------------------------------------------------- JSON in text


def fenced_blocks(text: str) -> list[str]:
    """The contents of the ```json and plain ``` fenced blocks in ``text``, in order."""
    return [block.strip() for block in _FENCED.findall(text)]


def load_json(text: str, *, extract: bool = True) -> Any:
    """Parse ``text`` as JSON, or the first fenced block in it when ``extract`` is set.

    Raises:
        ValueError: with the decoder's message and where it stopped.
    """
    blocks = fenced_blocks(text) if extract else []
    source = blocks[0] if blocks else text.strip()
    try:
        return json.loads(source)
    except json.JSONDecodeError as exc:
        where = "the fenced block" if blocks else "the text"
        raise ValueError(
            f"{where} is not valid JSON: {exc.msg} at line {exc.lineno} column {exc.colno}"
        ) from exc


def iter_json_objects(text: str) -> Iterator[Any]:
    """Yield JSON values found in a reply: the whole reply, fenced blocks, then embedded ``{...}``."""
    for source in (text.strip(), *fenced_blocks(text)):
        try:
            yield json.loads(source)
        except json.JSONDecodeError:
            pass
    decoder = json.JSONDecoder()
    start = text.find("{")
    attempts = 0
    while start != -1 and attempts < _MAX_EMBEDDED_ATTEMPTS:
        attempts += 1
        try:
            value, end = decoder.raw_decode(text, start)
        except json.JSONDecodeError:
            start = text.find("{", start + 1)
            continue
        yield value
        start = text.find("{", end)


# ----------------------------------------------------------------------------- paths into JSON


def parse_json_path(path: str) -> tuple[PathStep, ...]:
    """Split ``$.a.b[0].c`` (or ``a.b.0.c``, or ``$['odd key']``) into steps.

    Raises:
        ValueError: naming the character where the path stops making sense.
    """
    rest = path.strip().removeprefix("$")
    steps: list[PathStep] = []
    position = 0
    while position < len(rest):
        match = _PATH_TOKEN.match(rest, position)
        if match is None or match.end() == position:
            raise ValueError(f"path {path!r} is not understood at {rest[position:]!r}; write e.g. $.a.b[0].c")
        if match.group("name") is not None:
            steps.append(match.group("name"))
        elif match.group("index") is not None:
            steps.append(int(match.group("index")))
        else:
            steps.append(match.group("key"))
        position = match.end()
    return tuple(steps)


def format_json_path(steps: Sequence[PathStep]) -> str:
    """Write steps back in ``$.a.b[0]`` form, for messages."""
    parts = ["$"]
    for step in steps:
        parts.append(f"[{step}]" if isinstance(step, int) else f".{step}")
    return "".join(parts)


def walk_json_path(data: Any, steps: Sequence[PathStep]) -> Any:
    """Follow ``steps`` into ``data``. A digit step indexes a list and keys an object.

    Raises:
        LookupError: saying which step failed and what was there instead.
    """
    current = data
    for depth, step in enumerate(steps):
        where = format_json_path(steps[:depth]) or "$"
        if isinstance(current, list):
            index = step if isinstance(step, int) else int(step) if re.fullmatch(r"-?\d+", step) else None
            if index is None:
                raise LookupError(f"{where} is a list, so {step!r} cannot index it")
            if not -len(current) <= index < len(current):
                raise LookupError(f"{where} has {len(current)} items, no index {index}")
            current = current[index]
        elif isinstance(current, dict):
            key = str(step)
            if key not in current:
                raise LookupError(
                    f"{where} has no key {key!r} (keys: {', '.join(map(repr, current)) or 'none'})"
                )
            current = current[key]
        else:
            # a path that meets a scalar is a miss like any other, so LookupError rather than TypeError
            raise LookupError(f"{where} is {json.dumps(current)}, not an object or list")  # noqa: TRY004
    return current


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


def validate_rule(rule: Mapping[str, Any] | None) -> None:
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
        validate_rule(rule[FALLBACK])


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
        ValueError: when the rule itself is malformed (``validate_rule`` catches this earlier).
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
