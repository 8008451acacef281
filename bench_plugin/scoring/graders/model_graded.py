"""``model_graded_qa`` and ``model_graded_fact``: letter grades against a reference, as inspect_ai's scorers give.

The grader answers ``GRADE: C`` (correct) or ``GRADE: I`` (incorrect), and with
``partial_credit: true`` also ``GRADE: P`` (partly correct): C scores 1, P 0.5, I 0, and only C
passes (give the scorer ``threshold: 0.5`` to let P pass too). The prompts are our own words.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from typing_extensions import Self

from bench_plugin.scoring.graders.base import GRADER_KEYS, Grader, grader_judge, users_prompt
from bench_plugin.scoring.options import check_flag
from bench_plugin.suite.spec import ScorerSpec

MODEL_GRADED_KEYS = (*GRADER_KEYS, "partial_credit", "instructions")
INSTRUCTIONS_SLOT = "@@INSTRUCTIONS@@"

QA_PROMPT = f"""\
You are checking whether an answer to a question is correct, using a reference answer as the key.

[Question]
{{{{ question }}}}

[Reference answer]
{{{{ reference }}}}

[Answer to grade]
{{{{ answer }}}}

[How to grade]
{INSTRUCTIONS_SLOT}"""

QA_INSTRUCTIONS = (
    "Compare what the answer says with the reference answer. Judge the substance only: wording, length, "
    "tone and extra detail that does not contradict the reference do not matter; a wrong or missing key "
    "fact does."
)

FACT_PROMPT = f"""\
You are checking whether an answer states a given fact.

[Question]
{{{{ question }}}}

[Fact]
{{{{ reference }}}}

[Answer to check]
{{{{ answer }}}}

[How to grade]
{INSTRUCTIONS_SLOT}"""

FACT_INSTRUCTIONS = (
    "Decide whether the answer contains the fact above, in any words. It may say more than the fact, "
    "but it must not contradict it."
)


# when each grade is given: C, P (under partial credit), I
QA_GRADES = ("the answer is correct", "it is partly correct (right in part, or incomplete)", "it is not")
FACT_GRADES = ("the answer states the fact", "it states only part of it", "it does not")


def grade_line(partial_credit: bool, grades: tuple[str, str, str] = QA_GRADES) -> str:
    """How the grader is asked to conclude: the GRADE line, with P only under partial credit."""
    correct, partly, wrong = grades
    middle = f"GRADE: P if {partly}, " if partial_credit else ""
    return (" Explain your reasoning in a few sentences, then end with a line of its own: "
            f"GRADE: C if {correct}, {middle}or GRADE: I if {wrong}.")


def grade_map(partial_credit: bool) -> dict[str, float]:
    """The letters (and the words they stand for) a grade may be written as, and their scores."""
    grades = {"C": 1.0, "I": 0.0, "correct": 1.0, "incorrect": 0.0}
    return {**grades, "P": 0.5, "partial": 0.5} if partial_credit else grades


def _own_instructions(options: Mapping[str, Any]) -> str | None:
    """``instructions:`` in place of the grader's own (not with a whole prompt of the user's)."""
    own = options.get("instructions")
    if own is None:
        return None
    if not isinstance(own, str):
        raise ValueError(f"instructions must be a template (text), got {own!r}")
    if users_prompt(options):
        raise ValueError("instructions replace the grading part of the grader's prompt; with prompt or "
                         "prompt_file the whole prompt is yours: drop instructions")
    return own


def _parse(spec: ScorerSpec, owner: str, template: str, instructions: str, grades: tuple[str, str, str]) -> Grader:
    options = spec.options
    partial = check_flag("partial_credit", options.get("partial_credit", False))
    own = _own_instructions(options)
    guidance = own if own is not None else instructions + grade_line(partial, grades)
    settings = {"verdict": {"map": grade_map(partial)}, "scale": [0, 1]}
    judge = grader_judge(spec, owner, MODEL_GRADED_KEYS, template.replace(INSTRUCTIONS_SLOT, guidance), settings,
                         shown_as="instructions" if own is not None else "prompt")
    return Grader(spec, judge, pass_at=1.0, needs_reference=True)


@dataclass(frozen=True)
class ModelGradedQA(Grader):
    """``type: model_graded_qa``: is the answer correct, given the reference? C / (P /) I."""

    @classmethod
    def parse(cls, spec: ScorerSpec) -> Self:
        """Raises: ValueError for an unknown option or a bad value, naming it."""
        found = _parse(spec, "model_graded_qa", QA_PROMPT, QA_INSTRUCTIONS, QA_GRADES)
        return cls(found.spec, found.judge, found.pass_at, found.needs_reference)


@dataclass(frozen=True)
class ModelGradedFact(Grader):
    """``type: model_graded_fact``: does the answer state the fact (the reference)? C / (P /) I."""

    @classmethod
    def parse(cls, spec: ScorerSpec) -> Self:
        """Raises: ValueError for an unknown option or a bad value, naming it."""
        found = _parse(spec, "model_graded_fact", FACT_PROMPT, FACT_INSTRUCTIONS, FACT_GRADES)
        return cls(found.spec, found.judge, found.pass_at, found.needs_reference)
