"""Verdicts that are not numbers: a letter grade, a boolean, a label, mapped to a score by the suite.

Judges answer ``GRADE: C`` (inspect), ``{"pass": true}`` (promptfoo) or ``VERDICT: disagree``
(factuality). A scorer's ``verdict:`` option says how such a verdict becomes a score: a named map
(``letter_grade``, ``pass_fail``, ``yes_no``, ``true_false``) or ``{map: {LABEL: SCORE, ...}}``.
It applies to whatever a ``parse:`` rule read (a regex group, a JSON field, a table cell...); without
a ``parse:`` rule a map reads the last ``GRADE: X`` / ``VERDICT: X`` line, else ``[[X]]``.
"""

from __future__ import annotations

import json
import math
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from bench_plugin.core.errors import JudgeError
from bench_plugin.core.hints import did_you_mean

NUMBER = "number"  # the default: the verdict is a number on the scorer's scale
NAMED_VERDICTS: dict[str, dict[str, float]] = {
    # inspect's CORRECT / PARTIAL / INCORRECT, as letters or words
    "letter_grade": {"C": 1.0, "P": 0.5, "I": 0.0, "correct": 1.0, "partial": 0.5, "incorrect": 0.0},
    # promptfoo's {"pass": true}: the words, and JSON booleans (read as true / false)
    "pass_fail": {"pass": 1.0, "fail": 0.0, "passed": 1.0, "failed": 0.0, "true": 1.0, "false": 0.0},
    "yes_no": {"yes": 1.0, "no": 0.0},
    "true_false": {"true": 1.0, "false": 0.0},
}
"""The built-in maps by name (``verdict: letter_grade``); labels match ignoring case."""
VERDICT_CHOICES = (NUMBER, *NAMED_VERDICTS)
MAP_KEYS = ("map", "ignore_case")
# emphasis, quotes and brackets a judge wraps a label in: **C**, "pass", (A), `yes`, C.
_WRAPPING = " \t\r\n*_`'\"()[]{}<>.,;:!"


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool) and math.isfinite(value)


def label_text(value: Any) -> str:
    """A verdict as the label it would be written as: JSON ``true`` -> ``true``, ``1.0`` -> ``1``."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if value is None:
        return "null"
    if _is_number(value):
        return format(value, "g")
    if isinstance(value, str):
        return value.strip(_WRAPPING)
    return json.dumps(value)


@dataclass(frozen=True)
class VerdictMap:
    """Labels and their scores; ``name`` is the named map's (``letter_grade``) or ``map``.

    ``labels`` keeps the labels as written (for prompts and messages); lookups go through ``_keys``.
    """

    name: str
    labels: Mapping[str, float]
    ignore_case: bool = True
    _keys: Mapping[str, tuple[str, float]] = field(default_factory=dict, compare=False, repr=False)

    def __post_init__(self) -> None:
        keys = {self._key(label): (label, score) for label, score in self.labels.items()}
        object.__setattr__(self, "_keys", keys)

    def _key(self, label: str) -> str:
        return label.casefold() if self.ignore_case else label

    @property
    def low(self) -> float:
        """The lowest score of any label: the bottom of the default scale."""
        return min(self.labels.values())

    @property
    def high(self) -> float:
        """The highest score of any label: the top of the default scale."""
        return max(self.labels.values())

    def score(self, value: Any, what: str) -> tuple[str, float]:
        """The label ``value`` is (as written in the map) and its score.

        Raises:
            JudgeError: when it is none of the map's labels; the message lists them.
        """
        text = label_text(value)
        found = self._keys.get(self._key(text))
        if found is None:
            shown = json.dumps(value) if not isinstance(value, str) else repr(value.strip())
            raise JudgeError(f"{what} is {shown}, not one of the {self.name} labels ({', '.join(self.labels)})")
        return found


def _map_entries(entries: Any) -> dict[str, float]:
    if not isinstance(entries, Mapping) or not entries:
        raise ValueError("verdict.map must be a mapping of labels to scores, such as {C: 1, P: 0.5, I: 0}")
    labels: dict[str, float] = {}
    for label, score in entries.items():
        number = _label_score(label, score)
        labels[_label(label)] = number
    return labels


def _label_score(label: Any, score: Any) -> float:
    """The label's score.

    Raises:
        ValueError: a label YAML read as a boolean, or a score that is not a number.
    """
    if isinstance(label, bool):
        # YAML 1.1 reads unquoted yes/no/on/off/true/false as booleans: which one was meant is lost
        raise ValueError(
            f"verdict.map has the label {label} (an unquoted yes, no, on, off, true or false); "
            "quote it: 'yes': 1 (a JSON true is read as the label 'true')"
        )
    if not _is_number(score):
        raise ValueError(f"verdict.map.{label} must be a number (the label's score), got {score!r}")
    return float(score)


def _label(label: Any) -> str:
    """A map's label as text (``1`` -> ``1``); raises ValueError when it is empty."""
    text = label_text(label)
    if not text:
        raise ValueError(f"verdict.map has an empty label {label!r}")
    return text


def parse_verdict_map(value: Any) -> VerdictMap | None:
    """Read a scorer's ``verdict:`` option once; None for ``number`` (the default).

    Args:
        value: ``number``, a built-in map's name (``letter_grade``, ``pass_fail``, ``yes_no``,
            ``true_false``) or ``{map: {LABEL: SCORE, ...}, ignore_case: true}``.

    Raises:
        ValueError: an unknown name (with a did-you-mean), a map that is empty, has a label that
            YAML read as a boolean, a score that is not a number, or every label scored the same.
    """
    if value is None or value == NUMBER:
        return None
    if isinstance(value, str):
        return _named_map(value)
    if not isinstance(value, Mapping):
        raise ValueError(f"verdict must be a name such as letter_grade or {{map: {{C: 1, P: 0.5, I: 0}}}}, "
                         f"got {value!r}")
    return _own_map(value)


def _named_map(name: str) -> VerdictMap:
    """A built-in map by name (``letter_grade``...)."""
    if name not in NAMED_VERDICTS:
        guess = did_you_mean(name, VERDICT_CHOICES)
        raise ValueError(f"verdict must be one of {', '.join(VERDICT_CHOICES)} or {{map: {{LABEL: SCORE}}}}, "
                         f"got {name!r}" + (f"; {guess}" if guess else ""))
    return VerdictMap(name, NAMED_VERDICTS[name])


def _check_map_keys(value: Mapping[str, Any]) -> None:
    """Raises: ValueError for an unknown key, or no ``map``."""
    unknown = sorted(str(key) for key in value if key not in MAP_KEYS)
    if unknown or "map" not in value:
        problem = f"unknown key(s) {', '.join(unknown)}" if unknown else "no map"
        raise ValueError(f"verdict has {problem}; it takes map (labels to scores) and ignore_case")


def _own_map(value: Mapping[str, Any]) -> VerdictMap:
    """``{map: {LABEL: SCORE, ...}, ignore_case: true}``: labels that differ, scores that tell cases apart."""
    _check_map_keys(value)
    ignore_case = value.get("ignore_case", True)
    if not isinstance(ignore_case, bool):
        raise ValueError(f"verdict.ignore_case must be true or false, got {ignore_case!r}")
    labels = _map_entries(value["map"])
    verdict = VerdictMap("map", labels, ignore_case)
    if len(verdict._keys) != len(labels):
        raise ValueError("verdict.map has two labels that differ only in case; set ignore_case: false")
    if verdict.low == verdict.high:
        raise ValueError(f"verdict.map gives every label the score {verdict.low:g}; a verdict must tell cases apart")
    return verdict


# emphasis may wrap the keyword or the label: **Verdict:** `pass`, **GRADE**: C
_KEYWORD = r"(?i:\b(?:grade|verdict)\b)[*_]*\s*[:=][\s*_`'\"(\[]*"
_ANY_VERDICT = re.compile(_KEYWORD + r"(?P<word>[\w-]+)")


@dataclass(frozen=True)
class LabelVerdict:
    """No ``parse:`` rule with a map: the last ``GRADE: X`` or ``VERDICT: X`` line, else the first ``[[X]]``.

    The last line, because a grader reasons first and concludes last (and may quote the format
    while reasoning); X must be one of the map's labels.
    """

    pattern: re.Pattern[str]
    brackets: re.Pattern[str]
    name: str = "map"
    labels: tuple[str, ...] = ()

    def find(self, text: str) -> str:
        """The label as written in the reply.

        Raises:
            JudgeError: when no ``GRADE:`` / ``VERDICT:`` line or ``[[X]]`` names a label; a line
                that names something else is quoted.
        """
        matches = list(self.pattern.finditer(text))
        if matches:
            return matches[-1].group("label")
        bracketed = self.brackets.search(text)
        if bracketed is not None:
            return bracketed.group("label")
        other = list(_ANY_VERDICT.finditer(text))
        if other:
            raise JudgeError(f"the grade {other[-1].group('word')!r} is not one of the {self.name} labels "
                             f"({', '.join(self.labels)})")
        raise JudgeError(f"no 'GRADE: X', 'VERDICT: X' or [[X]] with X one of the labels in the reply "
                         f"({len(text)} chars)")



def label_rule(verdict: VerdictMap) -> LabelVerdict:
    """The rule that finds one of ``verdict``'s labels when the scorer gives no ``parse:``."""
    # the longest label first, so that INCORRECT is never read as its tail CORRECT, or C
    alternatives = "|".join(re.escape(label) for label in sorted(verdict.labels, key=len, reverse=True))
    flags = re.IGNORECASE if verdict.ignore_case else 0
    # the keyword is matched ignoring case even when the labels are not: GRADE:, Grade:, verdict =
    line = rf"{_KEYWORD}(?P<label>{alternatives})(?![\w])"
    brackets = rf"\[\[\s*(?P<label>{alternatives})\s*\]\]"
    return LabelVerdict(re.compile(line, flags), re.compile(brackets, flags), verdict.name, tuple(verdict.labels))
