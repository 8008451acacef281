"""Deterministic checks (contains, regex, equals, JSON, length, numeric), each a scorer type.

Every check is one row of ``CHECK_TYPES``: a function from (text, options) to (passed, evidence),
the option keys with their defaults, and the options that may hold ``{{ templates }}``. One
``CheckScorer`` class (``check_scorer.py``) turns any row into a scorer, so adding a check is adding
a row.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from functools import partial
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, best_match

from bench_plugin.json_text import (
    fenced_blocks,
    format_json_path,
    json_equal,
    load_json,
    parse_json_path,
    walk_json_path,
)
from bench_plugin.scoring.checks.scorer import TARGETS, CheckScorer, CheckType, Options, Outcome

# TARGETS is re-exported because judge.py imports it from here
__all__ = ["CHECK_SCORERS", "CHECK_TYPES", "TARGETS"]

_NUMBER = re.compile(
    r"(?<![\w.])[-+\u2212]?(?:(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?"
)


def _quote(text: str, limit: int = 60) -> str:
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def _number(value: float) -> str:
    return format(value, ".10g")


def _flags(options: Options, *names: str) -> str:
    on = [name for name in names if options.get(name)]
    return f" ({', '.join(on)})" if on else ""


def _strings(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [str(item) for item in items]


def _find(text: str, needle: str, ignore_case: bool) -> int:
    match = re.search(re.escape(needle), text, re.IGNORECASE if ignore_case else 0)
    return -1 if match is None else match.start()


# ----------------------------------------------------------------------------- check functions


def _run_substrings(text: str, options: Options, *, wanted: bool) -> Outcome:
    """``contains`` (wanted=True) and ``not_contains``: each value must be found (or absent)."""
    needles = _strings(options["value"])
    starts = {needle: _find(text, needle, options["ignore_case"]) for needle in needles}
    satisfied = [(start >= 0) == wanted for start in starts.values()]
    passed = all(satisfied) if options["mode"] == "all" else any(satisfied)
    listed = ", ".join(map(_quote, needles))
    single = len(needles) == 1
    if single:
        claim = f"{'' if wanted else 'not '}to contain {listed}"
    elif options["mode"] == "all":
        claim = f"to contain {'all' if wanted else 'none'} of {listed}"
    else:
        claim = f"to contain any of {listed}" if wanted else f"at least one of {listed} to be absent"

    def located(needle: str) -> str:
        start = starts[needle]
        near = "" if wanted else f": {_quote(text[max(0, start - 20) : start + len(needle) + 20])}"
        return f"{'' if single else _quote(needle) + ' '}at char {start}{near}"

    found = [located(needle) for needle in needles if starts[needle] >= 0]
    missing = ", ".join(_quote(needle) for needle in needles if starts[needle] < 0)
    evidence = [f"found {', '.join(found)}"] if found else []
    if missing:
        evidence.append(f"{'' if single else missing + ' '}not found in {len(text)} chars")
    return passed, f"expected {claim}{_flags(options, 'ignore_case')} — {'; '.join(evidence)}"


def _regex_flags(options: Options) -> int:
    flags = 0
    for name, flag in (("ignore_case", re.IGNORECASE), ("multiline", re.MULTILINE), ("dotall", re.DOTALL)):
        if options[name]:
            flags |= flag
    return flags


def _run_regex(text: str, options: Options) -> Outcome:
    pattern = re.compile(options["pattern"], _regex_flags(options))
    match = pattern.fullmatch(text) if options["full_match"] else pattern.search(text)
    flags = _flags(options, "ignore_case", "multiline", "dotall", "full_match")
    if match is None:
        return False, f"expected a match for /{pattern.pattern}/{flags} — no match in {len(text)} chars"
    found = f"matched {_quote(match.group(0))} at char {match.start()}"
    return True, f"expected a match for /{pattern.pattern}/{flags} — {found}"


def _run_equals(text: str, options: Options) -> Outcome:
    expected, got = str(options["value"]), text
    if options["strip"]:
        expected, got = expected.strip(), got.strip()
    same = expected.casefold() == got.casefold() if options["ignore_case"] else expected == got
    flags = _flags(options, "ignore_case", "strip")
    evidence = "equal" if same else f"got {_quote(got)} ({len(got)} chars)"
    return same, f"expected {_quote(expected)}{flags} — {evidence}"


def _source_of(text: str, options: Options) -> str:
    return " (from a fenced block)" if options["extract"] and fenced_blocks(text) else ""


def _run_json_valid(text: str, options: Options) -> Outcome:
    try:
        data = load_json(text, extract=options["extract"])
    except ValueError as exc:
        return False, f"expected valid JSON — {exc}"
    return True, f"expected valid JSON — got a JSON {type(data).__name__}{_source_of(text, options)}"


def _run_json_schema(text: str, options: Options) -> Outcome:
    try:
        data = load_json(text, extract=options["extract"])
    except ValueError as exc:
        return False, f"expected JSON matching the schema — {exc}"
    validator = Draft202012Validator(options["schema"], format_checker=Draft202012Validator.FORMAT_CHECKER)
    errors = list(validator.iter_errors(data))
    if not errors:
        return True, f"expected JSON matching the schema — it matches{_source_of(text, options)}"
    worst = best_match(errors)
    more = f" ({len(errors) - 1} more error{'s' if len(errors) > 2 else ''})" if len(errors) > 1 else ""
    where = format_json_path(list(worst.absolute_path))
    return False, f"expected JSON matching the schema — {where}: {worst.message}{more}"


def _run_json_path(text: str, options: Options) -> Outcome:
    steps = parse_json_path(options["path"])
    where = format_json_path(steps)
    try:
        found = walk_json_path(load_json(text, extract=options["extract"]), steps)
    except (ValueError, LookupError) as exc:
        return False, f"expected {where} in the JSON — {exc}"
    shown = _quote(json.dumps(found, ensure_ascii=False))
    if "equals" not in options:
        return True, f"expected {where} in the JSON — found {shown}"
    wanted = json.dumps(options["equals"], ensure_ascii=False)
    same = json_equal(found, options["equals"])
    return same, f"expected {where} = {_quote(wanted)} — {'equal' if same else f'got {shown}'}"


_MEASURES: dict[str, Callable[[str], int]] = {
    "chars": len,
    "words": lambda text: len(text.split()),
    "lines": lambda text: len(text.splitlines()),
}


def _run_length(text: str, options: Options) -> Outcome:
    size = _MEASURES[options["unit"]](text)
    low, high = options.get("min"), options.get("max")
    bounds = " and ".join(
        phrase for bound, phrase in ((low, f"at least {low}"), (high, f"at most {high}")) if bound is not None
    )
    verdict = "ok"
    if low is not None and size < low:
        verdict = "too short"
    elif high is not None and size > high:
        verdict = "too long"
    return verdict == "ok", f"expected {bounds} {options['unit']} — {size} {options['unit']}, {verdict}"


def _to_float(value: Any) -> float:
    if isinstance(value, bool):
        raise TypeError(f"expected a number, got {value!r}")
    return float(str(value).replace(",", "").replace("\u2212", "-").strip())


def _run_numeric(text: str, options: Options) -> Outcome:
    expected = _to_float(options["value"])
    allowed = max(options["tolerance"], (options.get("relative_tolerance") or 0.0) * abs(expected))
    wanted = f"{_number(expected)}" + (f" ± {_number(allowed)}" if allowed else "")
    numbers = _NUMBER.findall(text)
    if not numbers:
        return False, f"expected {wanted} — no number in {len(text)} chars"
    picked = numbers[0] if options["pick"] == "first" else numbers[-1]
    got = _to_float(picked)
    off = abs(got - expected)
    # the slack absorbs float representation (0.1 + 0.2), not the model's rounding
    passed = off <= allowed or math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-12)
    which = f"{options['pick']} of {len(numbers)} numbers" if len(numbers) > 1 else "the only number"
    verdict = "within tolerance" if passed else f"off by {_number(off)}"
    return passed, f"expected {wanted} — read {_number(got)} ({which}), {verdict}"


# ----------------------------------------------------------------------------- option checks


def _check_value_strings(options: Options) -> None:
    value = options["value"]
    if isinstance(value, list):
        if not value:
            raise ValueError("value is an empty list; give at least one string")
        if any(isinstance(item, (dict, list)) for item in value):
            raise TypeError("value must be a string or a list of strings")
    elif isinstance(value, (dict, type(None))):
        raise TypeError("value must be a string or a list of strings")
    if any(needle == "" for needle in _strings(value)):
        raise ValueError("value contains an empty string, which every text contains")


def _check_regex(options: Options) -> None:
    if not isinstance(options["pattern"], str):
        raise TypeError(f"pattern must be a string, got {type(options['pattern']).__name__}")
    try:
        re.compile(options["pattern"], _regex_flags(options))
    except re.error as exc:
        raise ValueError(f"pattern /{options['pattern']}/ does not compile: {exc}") from exc


def _check_equals(options: Options) -> None:
    if isinstance(options["value"], (dict, list)) or options["value"] is None:
        raise ValueError("value must be a string or a number; use json_path to compare JSON values")


def _check_schema(options: Options) -> None:
    if not isinstance(options["schema"], Mapping):
        raise TypeError("schema must be a JSON Schema object (a mapping)")
    try:
        Draft202012Validator.check_schema(options["schema"])
    except SchemaError as exc:
        raise ValueError(f"schema is not a valid JSON Schema (2020-12): {exc.message}") from exc


def _check_path(options: Options) -> None:
    if not isinstance(options["path"], str):
        raise TypeError("path must be a string such as $.a.b[0].c")
    parse_json_path(options["path"])


def _check_length(options: Options) -> None:
    low, high = options.get("min"), options.get("max")
    if low is None and high is None:
        raise ValueError("length needs min, max or both")
    for name, bound in (("min", low), ("max", high)):
        if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int) or bound < 0):
            raise ValueError(f"{name} must be a whole number >= 0, got {bound!r}")
    if low is not None and high is not None and low > high:
        raise ValueError(f"min ({low}) is greater than max ({high}); no text can pass")


def _check_numeric(options: Options) -> None:
    try:
        _to_float(options["value"])
    except (TypeError, ValueError):
        raise ValueError(f"value must be a number, got {options['value']!r}") from None
    for name in ("tolerance", "relative_tolerance"):
        bound = options.get(name)
        if bound is not None and (
            isinstance(bound, bool) or not isinstance(bound, (int, float)) or bound < 0
        ):
            raise ValueError(f"{name} must be a number >= 0, got {bound!r}")


# ----------------------------------------------------------------------------- the table


_SUBSTRING = {"mode": "all", "ignore_case": False}
_REGEX = {"ignore_case": False, "multiline": False, "dotall": False, "full_match": False}

CHECK_TYPES: dict[str, CheckType] = {
    "contains": CheckType(
        partial(_run_substrings, wanted=True),
        ("value",),
        _SUBSTRING,
        choices={"mode": ("all", "any")},
        templated=("value",),
        check=_check_value_strings,
    ),
    "not_contains": CheckType(
        partial(_run_substrings, wanted=False),
        ("value",),
        _SUBSTRING,
        choices={"mode": ("all", "any")},
        templated=("value",),
        check=_check_value_strings,
    ),
    "regex": CheckType(_run_regex, ("pattern",), _REGEX, templated=("pattern",), check=_check_regex),
    "equals": CheckType(
        _run_equals,
        ("value",),
        {"ignore_case": False, "strip": True},
        templated=("value",),
        check=_check_equals,
    ),
    "json_valid": CheckType(_run_json_valid, (), {"extract": True}),
    "json_schema": CheckType(_run_json_schema, ("schema",), {"extract": True}, check=_check_schema),
    "json_path": CheckType(
        _run_json_path,
        ("path",),
        {"extract": True},
        optional=("equals",),
        templated=("path", "equals"),
        check=_check_path,
    ),
    "length": CheckType(
        _run_length,
        (),
        {"unit": "chars"},
        optional=("min", "max"),
        choices={"unit": tuple(_MEASURES)},
        templated=("min", "max"),
        check=_check_length,
    ),
    "numeric": CheckType(
        _run_numeric,
        ("value",),
        {"tolerance": 0.0, "pick": "last"},
        optional=("relative_tolerance",),
        choices={"pick": ("first", "last")},
        templated=("value", "tolerance", "relative_tolerance"),
        check=_check_numeric,
    ),
}


CHECK_SCORERS: dict[str, CheckScorer] = {name: CheckScorer(name, kind) for name, kind in CHECK_TYPES.items()}
"""Every built-in check, ready to register by type name."""
