"""Scorer types by name: the built-ins, a project's own (conftest.py), and other packages' entry points.

A scorer type has ``parse(spec) -> Scorer`` (``scoring/context.py``); a class with a ``parse``
classmethod is the usual shape. Scorers written to the older protocol, ``validate(spec)`` and
``score(spec, context)``, still work: ``adapt`` wraps them. A plain function is a code scorer
(``scoring/code.py``): ``function(output, context)`` returning true/false, a number or a verdict.
"""

from __future__ import annotations

import inspect
from dataclasses import dataclass
from typing import Protocol, cast

from bench_plugin.core.registry import Registry
from bench_plugin.scoring.context import ComponentScore, Scorer, ScorerType, ScoringContext
from bench_plugin.suite.spec import CaseSpec, ScorerSpec

ENTRY_POINT_GROUP = "bench_plugin.scorers"

BUILTIN_SCORERS: dict[str, str] = {
    "contains": "bench_plugin.scoring.checks.text:Contains",
    "not_contains": "bench_plugin.scoring.checks.text:NotContains",
    "regex": "bench_plugin.scoring.checks.text:Regex",
    "equals": "bench_plugin.scoring.checks.text:Equals",
    "json_valid": "bench_plugin.scoring.checks.json_checks:JsonValid",
    "json_schema": "bench_plugin.scoring.checks.json_checks:JsonSchema",
    "json_path": "bench_plugin.scoring.checks.json_checks:JsonPath",
    "length": "bench_plugin.scoring.checks.text:Length",
    "numeric": "bench_plugin.scoring.checks.text:Numeric",
    "llm_judge": "bench_plugin.scoring.judge.llm_judge:JudgeScorer",
    "llm_judge_panel": "bench_plugin.scoring.judge.panel:PanelScorer",
    "llm_judge_pairwise": "bench_plugin.scoring.judge.pairwise:PairwiseScorer",
    # built-in graders: our prompts, one line of YAML each (scoring/graders/)
    "model_graded_qa": "bench_plugin.scoring.graders.model_graded:ModelGradedQA",
    "model_graded_fact": "bench_plugin.scoring.graders.model_graded:ModelGradedFact",
    "llm_rubric": "bench_plugin.scoring.graders.llm_rubric:LlmRubric",
    "factuality": "bench_plugin.scoring.graders.factuality:Factuality",
    "mt_bench": "bench_plugin.scoring.graders.mt_bench:MtBench",
    "mt_bench_pairwise": "bench_plugin.scoring.graders.mt_bench:MtBenchPairwise",
    "completion": "bench_plugin.scoring.agent.task_completion:CompletionScorer",  # agent tasks: C, T, B
    "trajectory": "bench_plugin.scoring.agent.trajectory:TrajectoryScorer",
    "behavior": "bench_plugin.scoring.agent.behavior:BehaviorScorer",
    # a function that grades, and embedding similarity (guide section 12)
    "python": "bench_plugin.scoring.code:PythonScorer",
    "similar": "bench_plugin.scoring.similarity:SimilarScorer",
    # the answer's code run against tests in the sandbox (guide section 36)
    "runs_tests": "bench_plugin.scoring.runs_tests.scorer:RunsTests",
    # the calls of a task with tools against the expected ones (guide section 35)
    "tool_calls": "bench_plugin.scoring.tool_calls.scorer:ToolCallsScorer",
}
"""Every built-in ``type:``, in the documented order, as ``module:attribute`` (imported when named)."""


class OldScorer(Protocol):
    """The protocol scorers were written to before options were parsed once: one object per type."""

    def validate(self, spec: ScorerSpec) -> None:
        """Check the options; raise ValueError."""
        ...

    async def score(self, spec: ScorerSpec, context: ScoringContext) -> ComponentScore:
        """Score one case with the options of ``spec``."""
        ...


@dataclass(frozen=True)
class OldScorerBound:
    """An ``OldScorer`` with the spec it validated: scores by passing the spec along."""

    spec: ScorerSpec
    scorer: OldScorer

    async def score(self, context: ScoringContext) -> ComponentScore:
        """The old scorer's score, given the spec."""
        return await self.scorer.score(self.spec, context)

    def check_case(self, case: CaseSpec) -> None:
        """Raises: CaseError, when the old scorer has a ``check_case(spec, case)`` that does."""
        check = getattr(self.scorer, "check_case", None)
        if callable(check):
            check(self.spec, case)


@dataclass(frozen=True)
class OldScorerType:
    """The scorer type of an ``OldScorer``: its ``validate`` is the parse."""

    scorer: OldScorer

    def parse(self, spec: ScorerSpec) -> Scorer:
        """Raises: whatever the old scorer's ``validate`` raises (ValueError for a bad option)."""
        self.scorer.validate(spec)
        return OldScorerBound(spec, self.scorer)


def _is_parse_class(value: type) -> bool:
    return isinstance(inspect.getattr_static(value, "parse", None), (classmethod, staticmethod))


def _instance(cls: type) -> object:
    """A scorer class without a parse classmethod, made without arguments."""
    try:
        return cls()
    except TypeError as exc:
        raise TypeError(f"scorer type {cls.__name__} has no parse classmethod and cannot be made "
                        f"without arguments: {exc}") from exc


def _is_old_scorer(value: object) -> bool:
    """The older protocol: ``validate(spec)`` and ``score(spec, context)``."""
    return callable(getattr(value, "validate", None)) and callable(getattr(value, "score", None))


def _is_function(value: object) -> bool:
    return inspect.isfunction(value) or inspect.ismethod(value)


def adapt(value: object) -> ScorerType:
    """Make a scorer type of what a registry source gives.

    Args:
        value: a scorer type (an object, or a class, with ``parse(spec)``), a class to instantiate
            without arguments, an object with the older ``validate(spec)`` and
            ``score(spec, context)``, which is wrapped, or a function, which is a code scorer.

    Raises:
        TypeError: ``value`` has none of these shapes.
    """
    if isinstance(value, type):
        if _is_parse_class(value):
            return cast(ScorerType, value)
        value = _instance(value)
    if callable(getattr(value, "parse", None)):
        return cast(ScorerType, value)
    if _is_old_scorer(value):
        return OldScorerType(cast(OldScorer, value))
    if _is_function(value):
        from bench_plugin.scoring.code import FunctionScorerType  # start-up: only a project's own function scorers

        return FunctionScorerType.of(value)
    raise TypeError(f"a scorer type needs parse(spec) (or validate(spec) and score(spec, context)), "
                    f"and {type(value).__name__} has neither")


SCORER_TYPES: Registry[ScorerType] = Registry(
    "scorer type", ENTRY_POINT_GROUP, BUILTIN_SCORERS, adapt, label="valid types"
)
"""The built-in scorer types and installed packages'; a project's catalog adds its conftest's."""


def scorer_types() -> list[str]:
    """Every valid ``type:``: the built-ins in their documented order, then the others sorted."""
    return SCORER_TYPES.names()


def get_scorer(type_name: str) -> object:
    """The implementation registered as ``type_name``, as written (an old-protocol scorer unwrapped).

    Raises:
        UnknownName: an unknown type (the message lists the valid ones and a did-you-mean) or an
            entry point that fails to load.
    """
    found = SCORER_TYPES.get(type_name)
    return found.scorer if isinstance(found, OldScorerType) else found
