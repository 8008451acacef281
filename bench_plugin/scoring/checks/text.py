"""Checks of plain text: contains, not_contains, regex, equals, length and numeric."""

from __future__ import annotations

import functools
import math
import operator
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from types import MappingProxyType
from typing import Any, ClassVar

from typing_extensions import Self, override

from bench_plugin.scoring.checks.scorer import Check, Options, Outcome, flags
from bench_plugin.suite.spec import ScorerSpec

_NUMBER = re.compile(
    r"(?<![\w.])[-+\u2212]?(?:(?:\d{1,3}(?:,\d{3})+(?!\d)|\d+)(?:\.\d+)?|\.\d+)(?:[eE][-+]?\d+)?"
)
MEASURES: dict[str, Callable[[str], int]] = {
    "chars": len,
    "words": lambda text: len(text.split()),
    "lines": lambda text: len(text.splitlines()),
}


def quote(text: str, limit: int = 60) -> str:
    """``repr`` of ``text``, cut to ``limit`` characters, for evidence."""
    return repr(text if len(text) <= limit else text[: limit - 1] + "…")


def _number(value: float) -> str:
    return format(value, ".10g")


def _strings(value: Any) -> list[str]:
    items = value if isinstance(value, list) else [value]
    return [str(item) for item in items]


def _to_float(value: Any) -> float:
    if isinstance(value, bool):
        raise TypeError(f"expected a number, got {value!r}")
    return float(str(value).replace(",", "").replace("\u2212", "-").strip())


def _check_value_shape(value: Any) -> None:
    """Raises: TypeError, ValueError unless ``value`` is a text (a number) or a non-empty list of them."""
    if not isinstance(value, list):
        if isinstance(value, (dict, type(None))):
            raise TypeError("value must be a string or a list of strings")
        return
    if not value:
        raise ValueError("value is an empty list; give at least one string")
    if any(isinstance(item, (dict, list)) for item in value):
        raise TypeError("value must be a string or a list of strings")


def _value_strings(value: Any) -> tuple[str, ...]:
    _check_value_shape(value)
    needles = _strings(value)
    if any(needle == "" for needle in needles):
        raise ValueError("value contains an empty string, which every text contains")
    return tuple(needles)


_REGEX_FLAGS = {"ignore_case": re.IGNORECASE, "multiline": re.MULTILINE, "dotall": re.DOTALL}
_SUBSTRING = MappingProxyType({"mode": "all", "ignore_case": False})


@dataclass(frozen=True)
class Contains(Check):
    """``contains``: each value (or, with ``mode: any``, one of them) is found in the text."""

    needles: tuple[str, ...]
    mode: str
    ignore_case: bool

    WANTED: ClassVar[bool] = True
    REQUIRED = ("value",)
    DEFAULTS = _SUBSTRING
    CHOICES = MappingProxyType({"mode": ("all", "any")})
    TEMPLATED = ("value",)

    @classmethod
    @override
    def build(cls, spec: ScorerSpec, options: Options) -> Self:
        return cls(spec, options["target"], _value_strings(options["value"]), options["mode"], options["ignore_case"])

    def _find(self, text: str, needle: str) -> int:
        if not self.ignore_case:  # a templated needle differs in every case: no pattern to compile (and evict)
            return text.find(needle)
        match = re.search(re.escape(needle), text, re.IGNORECASE)
        return -1 if match is None else match.start()

    @override
    def run(self, text: str) -> Outcome:
        starts = {needle: self._find(text, needle) for needle in self.needles}
        satisfied = [(start >= 0) == self.WANTED for start in starts.values()]
        passed = all(satisfied) if self.mode == "all" else any(satisfied)
        return passed, f"expected {self._claim()}{flags(ignore_case=self.ignore_case)} — {self._evidence(text, starts)}"

    def _claim(self) -> str:
        """What the check expected: ``to contain 'a'``, ``to contain none of 'a', 'b'``..."""
        wanted, listed = self.WANTED, ", ".join(map(quote, self.needles))
        if len(self.needles) == 1:
            return f"{'' if wanted else 'not '}to contain {listed}"
        if self.mode == "all":
            return f"to contain {'all' if wanted else 'none'} of {listed}"
        return f"to contain any of {listed}" if wanted else f"at least one of {listed} to be absent"

    def _evidence(self, text: str, starts: Mapping[str, int]) -> str:
        """Where each value was found (with the text around it, when it should not be), and which were not."""
        found = [needle for needle in self.needles if starts[needle] >= 0]
        missing = [needle for needle in self.needles if starts[needle] < 0]
        evidence = [self._found(text, found, starts)] if found else []
        if missing:
            evidence.append(self._not_found(missing, text))
        return "; ".join(evidence)

    def _found(self, text: str, found: Sequence[str], starts: Mapping[str, int]) -> str:
        """``found 'a' at char 3, 'b' at char 9`` (with the text around each, when it should be absent)."""
        return f"found {', '.join(self._located(text, needle, starts[needle]) for needle in found)}"

    def _not_found(self, missing: Sequence[str], text: str) -> str:
        """``'a', 'b' not found in 120 chars`` (the value goes unnamed when it is the only one)."""
        named = "" if len(self.needles) == 1 else ", ".join(quote(needle) for needle in missing) + " "
        return f"{named}not found in {len(text)} chars"

    def _located(self, text: str, needle: str, start: int) -> str:
        near = "" if self.WANTED else f": {quote(text[max(0, start - 20) : start + len(needle) + 20])}"
        return f"{'' if len(self.needles) == 1 else quote(needle) + ' '}at char {start}{near}"


@dataclass(frozen=True)
class NotContains(Contains):
    """``not_contains``: no value (or, with ``mode: any``, not every one) is found in the text."""

    WANTED: ClassVar[bool] = False


@dataclass(frozen=True)
class Regex(Check):
    """``regex``: the pattern is found in the text (or, with ``full_match``, matches all of it)."""

    pattern: re.Pattern[str]
    ignore_case: bool
    multiline: bool
    dotall: bool
    full_match: bool

    REQUIRED = ("pattern",)
    DEFAULTS = MappingProxyType({"ignore_case": False, "multiline": False, "dotall": False, "full_match": False})
    TEMPLATED = ("pattern",)

    @classmethod
    @override
    def build(cls, spec: ScorerSpec, options: Options) -> Self:
        source = options["pattern"]
        if not isinstance(source, str):
            raise TypeError(f"pattern must be a string, got {type(source).__name__}")
        on = {name: bool(options[name]) for name in _REGEX_FLAGS}
        mode = functools.reduce(operator.or_, (flag for name, flag in _REGEX_FLAGS.items() if on[name]), 0)
        try:
            pattern = re.compile(source, mode)
        except re.error as exc:
            raise ValueError(f"pattern /{source}/ does not compile: {exc}") from exc
        return cls(spec, options["target"], pattern, full_match=options["full_match"], **on)

    @override
    def run(self, text: str) -> Outcome:
        pattern = self.pattern
        match = pattern.fullmatch(text) if self.full_match else pattern.search(text)
        shown = flags(ignore_case=self.ignore_case, multiline=self.multiline, dotall=self.dotall,
                      full_match=self.full_match)
        if match is None:
            return False, f"expected a match for /{pattern.pattern}/{shown} — no match in {len(text)} chars"
        found = f"matched {quote(match.group(0))} at char {match.start()}"
        return True, f"expected a match for /{pattern.pattern}/{shown} — {found}"


@dataclass(frozen=True)
class Equals(Check):
    """``equals``: the text is the value (stripped of outer space unless ``strip: false``)."""

    value: str
    ignore_case: bool
    strip: bool

    REQUIRED = ("value",)
    DEFAULTS = MappingProxyType({"ignore_case": False, "strip": True})
    TEMPLATED = ("value",)

    @classmethod
    @override
    def build(cls, spec: ScorerSpec, options: Options) -> Self:
        if isinstance(options["value"], (dict, list)) or options["value"] is None:
            raise ValueError("value must be a string or a number; use json_path to compare JSON values")
        return cls(spec, options["target"], str(options["value"]), options["ignore_case"], options["strip"])

    @override
    def run(self, text: str) -> Outcome:
        expected, got = self.value, text
        if self.strip:
            expected, got = expected.strip(), got.strip()
        same = self._same(expected, got)
        evidence = ("equal" if same else f"got {quote(got)} ({len(got)} chars)") + self._default_decided(same, text)
        return same, f"expected {quote(expected)}{flags(ignore_case=self.ignore_case, strip=self.strip)} — {evidence}"

    def _default_decided(self, same: bool, text: str) -> str:
        """Says so when a default decided it: the normalising ``strip: true``, the strict ``ignore_case: false``."""
        if same and self._stripping_mattered(text):
            return " once whitespace at both ends is stripped (strip: true, the default)"
        if not same and not self.ignore_case and self._same_ignoring_case(text):
            return ", which differs only in case (ignore_case: false, the default)"
        return ""

    def _stripping_mattered(self, text: str) -> bool:
        """Whether the text equals the value only once both are stripped."""
        return self.strip and not self._same(self.value, text)

    def _same_ignoring_case(self, text: str) -> bool:
        expected, got = (self.value.strip(), text.strip()) if self.strip else (self.value, text)
        return expected.casefold() == got.casefold()

    def _same(self, expected: str, got: str) -> bool:
        return expected.casefold() == got.casefold() if self.ignore_case else expected == got


@dataclass(frozen=True)
class Length(Check):
    """``length``: the text has at least ``min`` and at most ``max`` chars, words or lines."""

    unit: str
    low: int | None
    high: int | None

    DEFAULTS = MappingProxyType({"unit": "chars"})
    OPTIONAL = ("min", "max")
    CHOICES = MappingProxyType({"unit": tuple(MEASURES)})
    TEMPLATED = ("min", "max")

    @classmethod
    @override
    def build(cls, spec: ScorerSpec, options: Options) -> Self:
        low, high = options.get("min"), options.get("max")
        if low is None and high is None:
            raise ValueError("length needs min, max or both")
        _check_bound("min", low)
        _check_bound("max", high)
        if low is not None and high is not None and low > high:
            raise ValueError(f"min ({low}) is greater than max ({high}); no text can pass")
        return cls(spec, options["target"], options["unit"], low, high)

    @override
    def run(self, text: str) -> Outcome:
        size = MEASURES[self.unit](text)
        low, high = self.low, self.high
        bounds = " and ".join(
            phrase for bound, phrase in ((low, f"at least {low}"), (high, f"at most {high}")) if bound is not None
        )
        verdict = self._verdict(size)
        return verdict == "ok", f"expected {bounds} {self.unit} — {size} {self.unit}, {verdict}"

    def _verdict(self, size: int) -> str:
        if self.low is not None and size < self.low:
            return "too short"
        if self.high is not None and size > self.high:
            return "too long"
        return "ok"


def _check_bound(name: str, bound: Any) -> None:
    """Raises: ValueError when a length bound is not a whole number >= 0."""
    if bound is not None and (isinstance(bound, bool) or not isinstance(bound, int) or bound < 0):
        raise ValueError(f"{name} must be a whole number >= 0, got {bound!r}")


@dataclass(frozen=True)
class Numeric(Check):
    """``numeric``: the first or last number in the text is the value, within a tolerance."""

    expected: float
    tolerance: float
    relative_tolerance: float | None
    pick: str

    REQUIRED = ("value",)
    DEFAULTS = MappingProxyType({"tolerance": 0.0, "pick": "last"})
    OPTIONAL = ("relative_tolerance",)
    CHOICES = MappingProxyType({"pick": ("first", "last")})
    TEMPLATED = ("value", "tolerance", "relative_tolerance")

    @classmethod
    @override
    def build(cls, spec: ScorerSpec, options: Options) -> Self:
        try:
            expected = _to_float(options["value"])
        except (TypeError, ValueError):
            raise ValueError(f"value must be a number, got {options['value']!r}") from None
        tolerance = _tolerance("tolerance", options.get("tolerance"))
        relative = _tolerance("relative_tolerance", options.get("relative_tolerance"))
        return cls(spec, options["target"], expected, tolerance or 0.0, relative, options["pick"])

    @override
    def run(self, text: str) -> Outcome:
        expected = self.expected
        allowed = max(self.tolerance, (self.relative_tolerance or 0.0) * abs(expected))
        wanted = _number(expected) + _plus_minus(allowed)
        numbers = _NUMBER.findall(text)
        if not numbers:
            return False, f"expected {wanted} — no number in {len(text)} chars"
        got = _to_float(numbers[0] if self.pick == "first" else numbers[-1])
        off = abs(got - expected)
        # the slack absorbs float representation (0.1 + 0.2), not the model's rounding
        passed = off <= allowed or math.isclose(got, expected, rel_tol=1e-9, abs_tol=1e-12)
        verdict = "within tolerance" if passed else f"off by {_number(off)}"
        return passed, f"expected {wanted} — read {_number(got)} ({self._which(len(numbers))}), {verdict}"

    def _which(self, count: int) -> str:
        """Which number of the text was read: ``last of 3 numbers``, ``the only number``."""
        return f"{self.pick} of {count} numbers" if count > 1 else "the only number"


def _plus_minus(allowed: float) -> str:
    """`` ± 0.5`` for a tolerance, nothing without one."""
    return f" ± {_number(allowed)}" if allowed else ""


def _tolerance(name: str, bound: Any) -> float | None:
    """A tolerance option: a number >= 0 (a template renders as text and is read as a number), or None."""
    if bound is None:
        return None
    try:  # templated ("{{ slack }}"): rendered as text, read as value is
        read = _to_float(bound)
    except (TypeError, ValueError):
        read = math.nan
    if not 0 <= read < math.inf:
        raise ValueError(f"{name} must be a number >= 0, got {bound!r}")
    return read
