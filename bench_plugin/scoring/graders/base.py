"""What the built-in graders share: a judge asked with our prompt, and a verdict that passes or fails.

A grader is an ``llm_judge`` whose prompt, verdict map and scale are ours: the suite writes one line
(``- {type: model_graded_qa}``) and may still override the prompt. Without ``judge:`` the model under
test grades its own answer, as inspect's model-graded scorers do by default; naming a judge (one
under the suite's ``judges:``) is the usual choice for a real benchmark.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bench_plugin.core.errors import CaseError
from bench_plugin.scoring.context import ComponentScore, ScoringContext
from bench_plugin.scoring.judge.llm_judge import OPTION_KEYS, JudgeScorer
from bench_plugin.scoring.judge.prompt import JudgeTemplate
from bench_plugin.scoring.options import check_option_names
from bench_plugin.suite.spec import CaseSpec, ScorerSpec

# what every grader takes; each adds its own (partial_credit, criteria, scores...)
GRADER_KEYS = ("judge", "reference", "target", "prompt", "prompt_file", "system", "system_file")


def users_prompt(options: Mapping[str, Any]) -> bool:
    """Whether the user gives the whole prompt (``prompt`` or ``prompt_file``) in place of the grader's."""
    return "prompt" in options or "prompt_file" in options


def grader_judge(
    spec: ScorerSpec,
    owner: str,
    allowed: tuple[str, ...],
    prompt: str,
    settings: Mapping[str, Any],
    *,
    shown_as: str = "prompt",
) -> JudgeScorer:
    """The judge scorer a grader asks with: the user's options over the grader's own prompt and settings.

    Args:
        spec: the grader's spec (its options are the user's).
        owner: the grader's type, for messages (``model_graded_qa``).
        allowed: the options the grader takes.
        prompt: the grader's prompt template, used unless the user gives ``prompt`` or ``prompt_file``.
        settings: ``llm_judge`` options the grader fixes (``verdict``, ``scale``, ``parse``).
        shown_as: the option a template error in ``prompt`` is reported at (``criteria`` when the
            user's criteria are part of it).

    Raises:
        ValueError: an unknown option (with a did-you-mean) or one ``llm_judge`` rejects.
    """
    check_option_names(spec.options, allowed, owner)
    options: dict[str, Any] = {key: value for key, value in spec.options.items() if key in GRADER_KEYS}
    graders_prompt = not users_prompt(options)
    if graders_prompt:
        options["prompt"] = prompt
    judge = JudgeScorer.from_options(spec, {**options, **settings}, owner=owner, allowed=OPTION_KEYS,
                                     judge_optional=True)
    if graders_prompt and shown_as != "prompt":
        asking = dataclasses.replace(judge.prompt, prompt=JudgeTemplate(shown_as, prompt))
        judge = dataclasses.replace(judge, prompt=asking)
    return judge


def require_reference(judge: JudgeScorer, context: ScoringContext, owner: str) -> None:
    """Raises: CaseError at ``KEY.reference`` when the case has no reference to grade against."""
    reference = judge.prompt.variables(context).get("reference")
    if reference is None or (isinstance(reference, str) and not reference.strip()):
        spec = judge.spec
        raise CaseError(
            f"{owner} grades against a reference, and this case has none",
            path=context.case.path, line=spec.line, key=f"{spec.key}.reference",
            hint="give reference: (a template such as '{{ answer_key }}') or a case variable named reference",
        )


@dataclass(frozen=True)
class Grader:
    """A built-in grader: a judge asked with our prompt, whose verdict also passes or fails the component.

    ``pass_at``: a verdict (on the judge's scale) at or above it passes; None when the grader gives
    a score only (MT-Bench). The scorer's ``threshold`` replaces it: a grade is a score, and the
    threshold says which scores pass (``threshold: 0.5`` lets a P pass). ``needs_reference``: a case
    with no reference fails alone.
    """

    spec: ScorerSpec
    judge: JudgeScorer
    pass_at: float | None = None
    needs_reference: bool = False

    def named_judges(self) -> tuple[tuple[str, str], ...]:
        """The judge it names (``CallsJudges``); none when the model under test grades."""
        return self.judge.named_judges()

    def check_case(self, case: CaseSpec) -> None:
        """Raises: CaseError when the named judge is not under the suite's ``judges:``."""
        self.judge.check_case(case)

    async def score(self, context: ScoringContext) -> ComponentScore:
        """Ask the judge and read its verdict; ``passed`` is the grader's own verdict.

        Raises:
            CaseError: no reference (when one is needed), an unknown judge, a template that fails.
            ProviderError: when the judge call fails.
        """
        if self.needs_reference:
            require_reference(self.judge, context, self.spec.type)
        component = await self.judge.score(context)
        if self.pass_at is None or self.spec.threshold is not None or component.value is None or component.raw is None:
            return component
        return dataclasses.replace(component, passed=component.raw >= self.pass_at)
