"""Scoring one case: every scorer at once, then the composite and the pass/fail verdict."""

from __future__ import annotations

import dataclasses
import itertools
from functools import partial

from bench_plugin.core.errors import JudgeError
from bench_plugin.scoring.bind import CaseScoring
from bench_plugin.scoring.composite import CompositeResult
from bench_plugin.scoring.context import ComponentScore, Scorer, ScoreSet, ScoringContext
from bench_plugin.scoring.gather import gather_all
from bench_plugin.scoring.pass_rule import apply_thresholds, decide_pass
from bench_plugin.scoring.per_turn import score_per_turn
from bench_plugin.suite.spec import CaseSpec


async def before_case(case: CaseSpec, scoring: CaseScoring) -> None:
    """What the case's scorers need of the machine, checked before its model is called (``PreparesCase``).

    Raises:
        SandboxError: a scorer runs programs and no sandbox it may use works here (the case is skipped).
    """
    for scorer in scoring.scorers:
        prepare = getattr(scorer, "before_case", None)  # through WithVariables too
        if prepare is not None:
            await prepare(case)


async def _score_component(scorer: Scorer, context: ScoringContext) -> ComponentScore:
    name = scorer.spec.name
    try:
        component = await scorer.score(context)
    except JudgeError as exc:  # a third-party grader that could not decide: unscored, not failed
        return ComponentScore(name=name, value=None, error=str(exc), detail="unscored")
    return component if component.name == name else dataclasses.replace(component, name=name)


async def _score_scorer(scorer: Scorer, context: ScoringContext) -> list[ComponentScore]:
    if scorer.spec.per_turn:
        return await score_per_turn(scorer.spec.name, context, partial(_score_component, scorer))
    return [await _score_component(scorer, context)]


def _unscored_reason(missing: tuple[str, ...], components: tuple[ComponentScore, ...], detail: str) -> str:
    errors = {component.name: component.error for component in components}
    if not missing:
        return detail
    return "; ".join(f"{name}: {errors.get(name) or 'no value'}" for name in missing)


async def score_case(context: ScoringContext, scoring: CaseScoring) -> ScoreSet:
    """Run every scorer of the case concurrently, then combine them.

    Args:
        context: the case and what its model said.
        scoring: the case's scorers and composite, bound at collection (``ScoringBinder.bind``):
            nothing is parsed or compiled here.

    Returns:
        The components in suite order (a ``per_turn`` scorer's mean followed by its turns), the
        composite and ``passed``: by the scorers' own pass rules and, when the suite or task sets
        one, ``composite >= pass_threshold`` (``scoring/pass_rule.py``).
        A case with no scorers passes with composite None. When the composite cannot be computed
        (an unscored component under ``on_missing: unscored``...) composite and passed are None and
        ``unscored_reason`` says why.

    Raises:
        CaseError: for what only scoring can find wrong (a template that fails to render).
        ProviderError: when a judge call fails; the first failure in scorer order is raised, after
            the other scorers have finished (no call is left running).
    """
    case = context.case
    if not scoring.scorers:
        return ScoreSet((), None, True, case.pass_threshold, composite_detail="no scorers")
    outcomes = await gather_all(_score_scorer(scorer, context) for scorer in scoring.scorers)
    thresholds = _thresholds(scoring)
    components = apply_thresholds(list(itertools.chain.from_iterable(outcomes)), thresholds)
    result = scoring.composite.evaluate({component.name: component.value for component in components})
    if result.value is None:
        reason = _unscored_reason(result.missing, components, result.detail)
        return ScoreSet(components, None, None, case.pass_threshold, result.detail, unscored_reason=reason)
    return _decided(components, result, result.value, case.pass_threshold, thresholds, scoring.composite.referenced)


def _thresholds(scoring: CaseScoring) -> dict[str, float]:
    """The scorers' ``threshold:`` by component name (the scorers that have one)."""
    return {scorer.spec.name: scorer.spec.threshold for scorer in scoring.scorers if scorer.spec.threshold is not None}


def _decided(
    components: tuple[ComponentScore, ...],
    result: CompositeResult,
    composite: float,
    pass_threshold: float | None,
    thresholds: dict[str, float],
    referenced: tuple[str, ...],
) -> ScoreSet:
    """The scored case with its pass rule applied (unscored when a threshold cannot be decided)."""
    decision = decide_pass(components, composite, pass_threshold, thresholds, referenced, result.dropped)
    if decision.passed is None:  # a threshold whose component has no value: unscored, out of the averages
        return ScoreSet(components, None, None, pass_threshold, result.detail,
                        unscored_reason=decision.unscored_reason, pass_detail=decision.detail)
    # with pass_threshold and no scorer threshold the composite alone decides: its reason is case.py's
    detail = decision.detail if pass_threshold is None or thresholds else ""
    return ScoreSet(components, composite, decision.passed, pass_threshold, result.detail,
                    unscored_reason=decision.unscored_reason, pass_detail=detail, dropped=result.why_dropped)
