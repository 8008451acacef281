"""``llm_rubric``: a judge checks the answer against criteria in plain words and replies {reason, pass, score}.

The shape of promptfoo's ``llm-rubric``: the value is ``score`` (0 to 1; without one, 1 for a pass
and 0 for a fail), and the component passes when ``pass`` is true (and, with the scorer's
``threshold``, when the score reaches it too). ``pass`` may be a JSON boolean or the words
true/false, pass/fail, yes/no. Named ``llm_rubric`` because ``rubric:`` is already an
``llm_judge`` option (scored categories, ``judge/rubric.py``). The prompt is our own words.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from typing_extensions import Self

from bench_plugin.core.chat import Completion
from bench_plugin.core.endpoints import ModelSpec
from bench_plugin.core.errors import JudgeError
from bench_plugin.core.json_text import iter_json_objects
from bench_plugin.scoring.context import ComponentScore, ScoringContext
from bench_plugin.scoring.graders.base import GRADER_KEYS, grader_judge, users_prompt
from bench_plugin.scoring.judge.llm_judge import JudgeScorer
from bench_plugin.scoring.judge.usage import completion_usage
from bench_plugin.scoring.judge.verdict_maps import NAMED_VERDICTS, VerdictMap
from bench_plugin.scoring.options import is_number
from bench_plugin.suite.spec import CaseSpec, ScorerSpec

LLM_RUBRIC_KEYS = (*GRADER_KEYS, "criteria")
CRITERIA_SLOT = "@@CRITERIA@@"
_PASS_WORDS = VerdictMap("pass", {**NAMED_VERDICTS["pass_fail"], **NAMED_VERDICTS["yes_no"]})
_REASON_SHOWN = 200  # characters of the reason in the detail; the record keeps it whole

LLM_RUBRIC_PROMPT = f"""\
You are checking an output against a rubric.

[Output]
{{{{ answer }}}}

[Rubric]
{CRITERIA_SLOT}

Decide whether the output meets the rubric, and how well on a scale from 0.0 (not at all) to 1.0 \
(fully). Reply with a JSON object and nothing else:
{{"reason": "<one or two sentences>", "pass": <true or false>, "score": <a number from 0.0 to 1.0>}}"""


@dataclass(frozen=True)
class RubricReading:
    """What was read from a judge's JSON reply: ``passed``, ``score`` (None where it gave none), ``reason``."""

    passed: bool | None
    score: float | None
    reason: str


def read_rubric_reply(text: str) -> RubricReading:
    """The first JSON object of the reply that has ``pass`` or ``score``.

    Raises:
        JudgeError: no such object, a ``pass`` that is not a yes/no word or boolean, a ``score``
            that is not a number from 0 to 1.
    """
    found = next((found for found in iter_json_objects(text) if _gives_verdict(found)), None)
    if found is None:
        raise JudgeError(f"no JSON object with 'pass' or 'score' in the reply ({len(text)} chars)")
    passed = _passed(found.get("pass"))
    score = _score(found.get("score"))
    if passed is None and score is None:
        raise JudgeError("the JSON object gives neither pass nor score (both are null)")
    return RubricReading(passed, score, _reason(found.get("reason")))


def _passed(passed: Any) -> bool | None:
    """``pass`` as a boolean: a JSON boolean or the words true/false, pass/fail, yes/no (None: not given)."""
    return None if passed is None else _PASS_WORDS.score(passed, "field 'pass'")[1] == 1


def _reason(reason: Any) -> str:
    """The reason as text (empty when there is none)."""
    return "" if reason is None else str(reason)


def _gives_verdict(found: Any) -> bool:
    return isinstance(found, Mapping) and bool({"pass", "score"} & set(found))


def _score(score: Any) -> float | None:
    """Raises: JudgeError for a score that is not a number from 0 to 1."""
    if score is None:
        return None
    if not is_number(score):
        raise JudgeError(f"field 'score' is {score!r}, not a number")
    if not 0 <= score <= 1:
        raise JudgeError(f"field 'score' is {score:g}, outside [0, 1]")
    return float(score)


@dataclass(frozen=True)
class LlmRubric:
    """``type: llm_rubric``: {reason, pass, score} from a judge given the ``criteria``."""

    spec: ScorerSpec
    judge: JudgeScorer  # its prompt; the reply is read here, not by its parse rule

    @classmethod
    def parse(cls, spec: ScorerSpec) -> Self:
        """Raises: ValueError for an unknown option, or criteria missing or not text."""
        prompt = LLM_RUBRIC_PROMPT.replace(CRITERIA_SLOT, _criteria(spec.options))
        judge = grader_judge(spec, "llm_rubric", LLM_RUBRIC_KEYS, prompt, {"scale": [0, 1]}, shown_as="criteria")
        return cls(spec, judge)

    def named_judges(self) -> tuple[tuple[str, str], ...]:
        """The judge it names (``CallsJudges``); none when the model under test grades."""
        return self.judge.named_judges()

    def check_case(self, case: CaseSpec) -> None:
        """Raises: CaseError when the named judge is not under the suite's ``judges:``."""
        self.judge.check_case(case)

    async def score(self, context: ScoringContext) -> ComponentScore:
        """Ask the judge and read its JSON; a reply without one leaves the component unscored.

        Raises:
            CaseError: an unknown judge or a template that fails. ProviderError: when the call fails.
        """
        model = self.judge.prompt.model(context)
        completion = await self.judge.prompt.call(context, model)
        return self.read(model, completion)

    def read(self, judge: ModelSpec, completion: Completion) -> ComponentScore:
        """The component a judge's reply gives: value ``score``, ``passed`` from ``pass``, the reason kept."""
        common: dict[str, Any] = {"name": self.spec.name, "judge_output": completion.text,
                                  "usage": completion_usage(completion)}
        try:
            reading = read_rubric_reply(completion.text)
        except JudgeError as exc:
            return ComponentScore(value=None, detail=f"judge {judge.label}: no verdict",
                                  error=f"could not read a verdict from the judge reply: {exc}", **common)
        value = reading.score if reading.passed is None or reading.score is not None else float(reading.passed)
        return ComponentScore(value=value, raw=value, passed=reading.passed, detail=_detail(judge, reading),
                              extra={"reason": reading.reason}, **common)


def _criteria(options: Mapping[str, Any]) -> str:
    """``criteria:``, which the grader's prompt needs (and a prompt of the user's does not take)."""
    criteria = options.get("criteria")
    if users_prompt(options):
        if criteria is not None:
            raise ValueError("criteria go into the grader's prompt; with prompt or prompt_file the whole prompt is "
                             "yours: drop criteria")
        return ""
    if not isinstance(criteria, str) or not criteria.strip():
        raise ValueError("llm_rubric needs criteria: what the output must do, in plain words (a template)")
    return criteria


def _detail(judge: ModelSpec, reading: RubricReading) -> str:
    """``judge J: pass, score 0.8: the reason`` (the reason cut short)."""
    verdict = "no pass field" if reading.passed is None else "pass" if reading.passed else "fail"
    reason = reading.reason if len(reading.reason) <= _REASON_SHOWN else reading.reason[:_REASON_SHOWN] + "..."
    shown = f"judge {judge.label}: {verdict}" + ("" if reading.score is None else f", score {reading.score:g}")
    return shown + (f": {reason}" if reason else "")
