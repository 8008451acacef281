"""Scoring one case: every scorer at once, then the composite and the pass/fail verdict."""

from __future__ import annotations

import asyncio
import dataclasses

from bench_plugin.errors import CaseError, JudgeError
from bench_plugin.scoring.composite import Composite, compile_composite
from bench_plugin.scoring.context import ComponentScore, Scorer, ScoreSet, ScoringContext
from bench_plugin.scoring.judge.llm_judge import judge_names
from bench_plugin.scoring.per_turn import score_per_turn
from bench_plugin.scoring.registry import get_scorer
from bench_plugin.suite.spec import CaseSpec, ScorerSpec


def _scorer_for(spec: ScorerSpec, case: CaseSpec) -> Scorer:
    try:
        return get_scorer(spec.type)
    except ValueError as exc:
        raise CaseError(str(exc), path=case.path, line=spec.line, key=f"{spec.key}.type") from exc


def _compile(case: CaseSpec) -> Composite:
    composite = case.composite
    try:
        return compile_composite(composite, [spec.name for spec in case.scorers])
    except ValueError as exc:
        raise CaseError(str(exc), path=case.path, line=composite.line, key=composite.key) from exc


def validate_case_scoring(case: CaseSpec) -> None:
    """Check a case's scorers and composite without calling anything.

    Checks that every scorer type exists and accepts its options, that scorer names are unique,
    that each judge a scorer names is under ``judges:``, and that the composite compiles.

    Raises:
        CaseError: located at the scorer's (or the composite's) line and key, so the case fails
            alone with a message that points into the YAML.
    """
    first_line: dict[str, int | None] = {}
    for spec in case.scorers:
        if spec.name in first_line:
            line = first_line[spec.name]
            where = f" (first at line {line + 1})" if line is not None else ""
            raise CaseError(
                f"scorer name {spec.name!r} is used twice{where}",
                path=case.path,
                line=spec.line,
                key=f"{spec.key}.name",
                hint="give each scorer its own name: the composite formula refers to scorers by name",
            )
        first_line[spec.name] = spec.line
        scorer = _scorer_for(spec, case)
        try:
            scorer.validate(spec)
        except (ValueError, TypeError) as exc:
            raise CaseError(f"{spec.type}: {exc}", path=case.path, line=spec.line, key=spec.key) from exc
        check_case = getattr(scorer, "check_case", None)
        if check_case is not None:  # what only the case can tell (a pairwise baseline among its models)
            check_case(spec, case)
        if getattr(scorer, "calls_judges", False):  # llm_judge, llm_judge_panel, llm_judge_pairwise
            for name in judge_names(spec):
                if name not in case.judges:
                    valid = ", ".join(case.judges) or "none are defined"
                    raise CaseError(
                        f"unknown judge {name!r} (judges: {valid})",
                        path=case.path,
                        line=spec.line,
                        key=f"{spec.key}.{_judge_key(spec, name)}",
                        hint="judges are declared under the suite's top-level judges: map",
                    )
    _compile(case)


def _judge_key(spec: ScorerSpec, name: str) -> str:
    """Where a scorer names a judge: ``judge``, a panel's ``judges[i]`` or ``consensus.judge``."""
    judges = spec.options.get("judges")
    if spec.options.get("judge") != name and isinstance(judges, list) and name in judges:
        return f"judges[{judges.index(name)}]"
    return "judge" if spec.options.get("judge") == name else "consensus.judge"


async def _score_component(spec: ScorerSpec, context: ScoringContext) -> ComponentScore:
    scorer = _scorer_for(spec, context.case)
    try:
        component = await scorer.score(spec, context)
    except JudgeError as exc:  # a third-party grader that could not decide: unscored, not failed
        return ComponentScore(name=spec.name, value=None, error=str(exc), detail="unscored")
    return component if component.name == spec.name else dataclasses.replace(component, name=spec.name)


async def _score_scorer(spec: ScorerSpec, context: ScoringContext) -> list[ComponentScore]:
    if spec.per_turn:
        return await score_per_turn(spec, context, _score_component)
    return [await _score_component(spec, context)]


def _unscored_reason(missing: tuple[str, ...], components: tuple[ComponentScore, ...], detail: str) -> str:
    errors = {component.name: component.error for component in components}
    if not missing:
        return detail
    return "; ".join(f"{name}: {errors.get(name) or 'no value'}" for name in missing)


async def score_case(context: ScoringContext) -> ScoreSet:
    """Run every scorer of the case concurrently, then combine them.

    Returns:
        The components in suite order (a ``per_turn`` scorer's mean followed by its turns), the
        composite and ``passed = composite >= pass_threshold``.
        A case with no scorers passes with composite None. When the composite cannot be computed
        (an unscored component under ``on_missing: unscored``...) composite and passed are None and
        ``unscored_reason`` says why.

    Raises:
        CaseError: for a scorer or composite the suite got wrong.
        ProviderError: when a judge call fails; the first failure in scorer order is raised, after
            the other scorers have finished (no call is left running).
    """
    case = context.case
    if not case.scorers:
        return ScoreSet((), None, True, case.pass_threshold, composite_detail="no scorers")
    composite = _compile(case)  # before any judge is called: a bad formula must not cost calls
    outcomes = await asyncio.gather(
        *(_score_scorer(spec, context) for spec in case.scorers), return_exceptions=True
    )
    for outcome in outcomes:
        if isinstance(outcome, BaseException):
            raise outcome
    components = tuple(component for outcome in outcomes if isinstance(outcome, list) for component in outcome)
    result = composite.evaluate({component.name: component.value for component in components})
    if result.value is None:
        reason = _unscored_reason(result.missing, components, result.detail)
        return ScoreSet(components, None, None, case.pass_threshold, result.detail, unscored_reason=reason)
    passed = result.value >= case.pass_threshold
    return ScoreSet(components, result.value, passed, case.pass_threshold, result.detail)
