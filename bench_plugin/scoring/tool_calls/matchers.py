"""How one argument of an expected tool call is compared with the model's: a value, or a matcher mapping.

A plain value must be equal (JSON equality: ``1`` is ``1.0``, ``true`` is not ``1``). A mapping whose keys are a
matcher's says how else: ``{one_of: [...]}``, ``{regex: ...}``, ``{approx: 3.5, tolerance: 0.01}``,
``{schema: {...}}`` (a JSON Schema), ``{subset: {...}}`` (an object holding at least these keys, or a list
holding these items); any of them may add ``optional: true`` (the argument may be left out). To compare an
object that looks like a matcher literally, write ``{equals: {...}}``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import Any, Protocol

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError, best_match

from bench_plugin.core.json_text import json_equal
from bench_plugin.scoring.options import is_number

_SHOWN = 80


def shown(value: Any) -> str:
    """A value for evidence: its JSON, cut short."""
    text = json.dumps(value, ensure_ascii=False, default=str)
    return text if len(text) <= _SHOWN else text[:_SHOWN] + "..."


class Matcher(Protocol):
    """One argument's expectation."""

    @property
    def optional(self) -> bool:
        """Whether the argument may be left out."""
        ...

    def check(self, value: Any) -> tuple[bool, str]:
        """Whether ``value`` (the model's argument) is what was expected, and the evidence."""
        ...


@dataclass(frozen=True)
class Equals:
    """The argument equals a value (JSON equality)."""

    expected: Any
    optional: bool = False

    def check(self, value: Any) -> tuple[bool, str]:
        """Whether ``value`` is as expected, and the evidence."""
        same = json_equal(value, self.expected)
        return same, f"= {shown(self.expected)}" if same else f"expected {shown(self.expected)}, got {shown(value)}"


@dataclass(frozen=True)
class OneOf:
    """``one_of``: the argument equals one of the values (BFCL's possible answers)."""

    choices: tuple[Any, ...]
    optional: bool = False

    def check(self, value: Any) -> tuple[bool, str]:
        """Whether ``value`` is as expected, and the evidence."""
        held = any(json_equal(value, choice) for choice in self.choices)
        wanted = f"one of {shown(list(self.choices))}"
        return held, f"{shown(value)} is {wanted}" if held else f"expected {wanted}, got {shown(value)}"


@dataclass(frozen=True)
class Regex:
    """``regex``: the argument (a string, or the JSON text of another value) holds a match."""

    pattern: re.Pattern[str]
    optional: bool = False

    def check(self, value: Any) -> tuple[bool, str]:
        """Whether ``value`` is as expected, and the evidence."""
        text = value if isinstance(value, str) else json.dumps(value, ensure_ascii=False)
        held = self.pattern.search(text) is not None
        return held, f"{shown(value)} {'matches' if held else 'does not match'} /{self.pattern.pattern}/"


@dataclass(frozen=True)
class Approx:
    """``approx``: the argument is a number within ``tolerance`` of the target."""

    target: float
    tolerance: float
    optional: bool = False

    def check(self, value: Any) -> tuple[bool, str]:
        """Whether ``value`` is as expected, and the evidence."""
        wanted = f"{self.target:g} ± {self.tolerance:g}"
        if not is_number(value):
            return False, f"expected a number {wanted}, got {shown(value)}"
        held = math.isfinite(value) and abs(value - self.target) <= self.tolerance
        return held, f"{value:g} {'is within' if held else 'is not within'} {wanted}"


@dataclass(frozen=True)
class Schema:
    """``schema``: the argument matches a JSON Schema."""

    validator: Draft202012Validator
    optional: bool = False

    def check(self, value: Any) -> tuple[bool, str]:
        """Whether ``value`` is as expected, and the evidence."""
        errors = list(self.validator.iter_errors(value))
        if not errors:
            return True, f"{shown(value)} matches the schema"
        return False, f"{shown(value)} does not match the schema: {best_match(errors).message[:_SHOWN]}"


@dataclass(frozen=True)
class Subset:
    """``subset``: the argument holds at least these keys or items."""

    expected: Any
    optional: bool = False

    def check(self, value: Any) -> tuple[bool, str]:
        """Whether ``value`` is as expected, and the evidence."""
        held = contains(value, self.expected)
        return held, f"{shown(value)} {'holds' if held else 'does not hold'} {shown(self.expected)}"


def contains(value: Any, expected: Any) -> bool:
    """An object holding at least ``expected``'s keys (each contained), a list holding each item, else equal."""
    if isinstance(expected, Mapping):
        return isinstance(value, Mapping) and all(key in value and contains(value[key], item)
                                                  for key, item in expected.items())
    if isinstance(expected, list):
        return isinstance(value, list) and all(any(contains(have, item) for have in value) for item in expected)
    return json_equal(value, expected)


MATCHER_KEYS = ("equals", "one_of", "regex", "approx", "schema", "subset")
_WITH = {"approx": ("tolerance",)}


def is_matcher(value: Any) -> bool:
    """Whether a mapping is written as a matcher: one matcher key, with its own options and ``optional``."""
    if not isinstance(value, Mapping):
        return False
    kinds = [key for key in value if key in MATCHER_KEYS]
    if len(kinds) != 1:
        return False
    allowed = {kinds[0], "optional", *_WITH.get(kinds[0], ())}
    return set(value) <= allowed


def parse_matcher(value: Any, where: str) -> Matcher:
    """The matcher of one expected argument.

    Raises:
        ValueError: naming ``where`` (``expected[0].arguments.city``): a regex that does not compile, a
            schema that is not one, a tolerance that is not a number.
    """
    if not is_matcher(value):
        return Equals(value)
    optional = value.get("optional", False)
    if not isinstance(optional, bool):
        raise ValueError(f"{where}.optional must be true or false")
    kind = next(key for key in value if key in MATCHER_KEYS)
    return _PARSERS[kind](value, where, optional)


def _one_of(value: Mapping[str, Any], where: str, optional: bool) -> Matcher:
    choices = value["one_of"]
    if not isinstance(choices, list) or not choices:
        raise ValueError(f"{where}.one_of must be a list of the values that are right")
    return OneOf(tuple(choices), optional)


def _regex(value: Mapping[str, Any], where: str, optional: bool) -> Matcher:
    try:
        return Regex(re.compile(str(value["regex"])), optional)
    except re.error as exc:
        raise ValueError(f"{where}.regex {value['regex']!r} does not compile: {exc.msg}") from None


def _approx(value: Mapping[str, Any], where: str, optional: bool) -> Matcher:
    target, tolerance = value["approx"], value.get("tolerance", 0)
    if not is_number(target) or not is_number(tolerance) or tolerance < 0:
        raise ValueError(f"{where}: approx and tolerance must be numbers (tolerance at least 0)")
    return Approx(float(target), float(tolerance), optional)


def _schema(value: Mapping[str, Any], where: str, optional: bool) -> Matcher:
    schema = value["schema"]
    if not isinstance(schema, (Mapping, bool)):
        raise ValueError(f"{where}.schema must be a JSON Schema (a mapping)")
    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise ValueError(f"{where}.schema is not a valid JSON Schema (2020-12): {exc.message}") from None
    return Schema(Draft202012Validator(schema), optional)


def _equals(value: Mapping[str, Any], where: str, optional: bool) -> Matcher:
    return Equals(value["equals"], optional)


def _subset(value: Mapping[str, Any], where: str, optional: bool) -> Matcher:
    return Subset(value["subset"], optional)


_PARSERS: dict[str, Callable[[Mapping[str, Any], str, bool], Matcher]] = {
    "equals": _equals, "one_of": _one_of, "regex": _regex, "approx": _approx, "schema": _schema, "subset": _subset,
}
