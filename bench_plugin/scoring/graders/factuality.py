"""``factuality``: how an answer's facts relate to a reference answer's, as promptfoo's assertion sorts them.

The grader names one relation: ``subset``, ``superset``, ``same``, ``disagree`` or
``differs_immaterially``. Each has a score (1, except ``disagree``: 0; ``scores:`` changes them)
and the component passes when its score is above 0. The prompt is our own words.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from typing_extensions import Self

from bench_plugin.scoring.graders.base import GRADER_KEYS, Grader, grader_judge
from bench_plugin.scoring.options import is_number
from bench_plugin.suite.spec import ScorerSpec

FACTUALITY_KEYS = (*GRADER_KEYS, "scores")
DEFAULT_SCORES: dict[str, float] = {
    "subset": 1.0,
    "superset": 1.0,
    "same": 1.0,
    "disagree": 0.0,
    "differs_immaterially": 1.0,
}

FACTUALITY_PROMPT = """\
You are comparing the facts in an answer with those in an expert's reference answer.

[Question]
{{ question }}

[Reference answer]
{{ reference }}

[Answer to compare]
{{ answer }}

[How to compare]
Look at the facts only: style, grammar and punctuation do not matter. Decide which one of these \
describes the answer:
- subset: it gives some of the reference's facts, and nothing that contradicts them
- superset: it gives all of the reference's facts, and more that does not contradict them
- same: it gives the same facts as the reference
- disagree: it contradicts the reference on a fact
- differs_immaterially: it differs from the reference, but not in a way that matters to the facts
Explain briefly, then end with a line of its own: VERDICT: followed by exactly one of subset, \
superset, same, disagree, differs_immaterially."""


def parse_scores(value: object) -> dict[str, float]:
    """The relations' scores: the defaults, with the ``scores:`` option over them.

    Raises:
        ValueError: an unknown relation (naming the five) or a score that is not a number from 0 to 1.
    """
    if value is None:
        return dict(DEFAULT_SCORES)
    if not isinstance(value, Mapping):
        raise ValueError(f"scores must map relations to scores, such as {{subset: 0.5}}, got {value!r}")
    _check_scores(value)
    return {**DEFAULT_SCORES, **{str(key): float(score) for key, score in value.items()}}


def _check_scores(value: Mapping[object, object]) -> None:
    """Raises: ValueError naming the keys that are none of the five relations, else the first bad score."""
    unknown = sorted(str(key) for key in value if key not in DEFAULT_SCORES)
    if unknown:
        raise ValueError(f"scores has unknown relation(s) {', '.join(unknown)}; "
                         f"the relations are {', '.join(DEFAULT_SCORES)}")
    bad = next(((key, score) for key, score in value.items() if not _is_fraction(score)), None)
    if bad is not None:
        raise ValueError(f"scores.{bad[0]} must be a number from 0 to 1, got {bad[1]!r}")


def _is_fraction(score: object) -> bool:
    """A number from 0 to 1 (a boolean is not one)."""
    return is_number(score) and 0 <= score <= 1


@dataclass(frozen=True)
class Factuality(Grader):
    """``type: factuality``: the answer's facts against the reference's; passes unless the relation scores 0."""

    @classmethod
    def parse(cls, spec: ScorerSpec) -> Self:
        """Raises: ValueError for an unknown option, an unknown relation or a bad score, naming it."""
        scores = parse_scores(spec.options.get("scores"))
        settings = {"verdict": {"map": scores}, "scale": [0, 1]}
        judge = grader_judge(spec, "factuality", FACTUALITY_KEYS, FACTUALITY_PROMPT, settings)
        positive = [score for score in scores.values() if score > 0]
        return cls(spec, judge, pass_at=min(positive) if positive else None, needs_reference=True)
