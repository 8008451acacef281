"""Whether a scored case passes: the scorers' own pass rules, and the composite's ``pass_threshold``.

A component has a pass rule when its scorer carries a ``threshold:`` (its value must reach it) or
gives a verdict of its own (``passed``: a check, an agent's completion, a built-in grader's
C or pass). A scorer that gives only a number (a plain judge, ``trajectory``, a ``python``
function's number, a scorer of a project's own) measures the case and decides nothing until it is
given a threshold: one rule for every kind, so adding a measure never fails cases silently.

- **No ``pass_threshold``** (the default): the case passes when every counted rule holds. Own
  verdicts and the implicit 1 count for the components the composite uses; thresholds always
  count. A judged score without a threshold measures the case but does not decide it, so a
  judge-only suite passes every scored case until a judge is given a ``threshold``.
- **``pass_threshold: T``**: the composite must reach T (as before), and every ``threshold:`` too.
  Own verdicts are then left to the composite, as they always were.

A component dropped from the composite (a closed gate, ``on_missing: renormalize``) decides
nothing. A threshold whose component has no value cannot be decided, and the case is unscored.
"""

from __future__ import annotations

import dataclasses
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass

from bench_plugin.scoring.context import ComponentScore

_SHOWN = 3  # failing rules named in the reason


@dataclass(frozen=True)
class PassDecision:
    """``passed`` (None: a rule could not be decided, ``unscored_reason`` says which) and the reason's text."""

    passed: bool | None
    detail: str
    unscored_reason: str | None = None


def apply_thresholds(
    components: Sequence[ComponentScore], thresholds: Mapping[str, float]
) -> tuple[ComponentScore, ...]:
    """The components with their scorers' ``threshold:`` applied to ``passed``.

    A component passes its threshold when its value reaches it and its scorer's own verdict (if
    any) is not a fail: a grader that says ``pass: false`` with a score of 0.9 fails (promptfoo's
    rule). Per-turn components (``J.t1``) keep theirs: the threshold is the mean's.
    """
    out = []
    for component in components:
        threshold = thresholds.get(component.name) if component.turn is None else None
        out.append(component if threshold is None else _held_to(component, threshold))
    return tuple(out)


def _held_to(component: ComponentScore, threshold: float) -> ComponentScore:
    """The component with ``passed`` by its threshold (and its own verdict), the threshold in ``extra``."""
    passed = None if component.value is None else component.passed is not False and component.value >= threshold
    return dataclasses.replace(component, passed=passed, extra={**component.extra, "threshold": threshold})


def _failure(component: ComponentScore, threshold: float | None) -> str:
    if threshold is not None and component.value is not None and component.value < threshold:
        return f"{component.name} {component.value:.4g} < {threshold:g}"
    return f"{component.name}" + (f" ({component.detail})" if component.detail else "")


def _success(component: ComponentScore, threshold: float | None) -> str:
    return f"{component.name} >= {threshold:g}" if threshold is not None else component.name


def decide_pass(
    components: Sequence[ComponentScore],
    composite: float,
    pass_threshold: float | None,
    thresholds: Mapping[str, float],
    referenced: Collection[str],
    dropped: Collection[str] = (),
) -> PassDecision:
    """Whether a case whose composite is ``composite`` passes.

    Args:
        components: every component, thresholds applied (``apply_thresholds``).
        composite: the case's composite (not None: an unscored case has no pass rule to apply).
        pass_threshold: the suite's or task's ``pass_threshold``; None for the default rule.
        thresholds: the scorers' ``threshold:`` by component name.
        referenced: the components the composite's formula names (all of them for the mean).
        dropped: those it dropped (a closed gate, an unscored term under ``on_missing: renormalize``).

    Returns:
        The decision; ``detail`` names the rules, ``failed: C (...), J 0.5 < 0.7`` when some failed.
    """
    ruled = [component for component in components
             if _counts(component, pass_threshold, thresholds, referenced, dropped)]
    unruled = _unruled(ruled, composite, pass_threshold)
    if unruled is not None:
        return unruled
    failed = [component for component in ruled if component.passed is False]
    passed, head = _head(composite, pass_threshold, rules_held=not failed)
    return PassDecision(passed, _detail(head, passed, failed, ruled, pass_threshold is not None, thresholds))


def _unruled(ruled: Sequence[ComponentScore], composite: float, pass_threshold: float | None) -> PassDecision | None:
    """The decision when the rules cannot decide, or there are none to; None when they decide.

    A counted rule with no value leaves the case unscored; with no rule and no ``pass_threshold``
    the case passes.
    """
    undecided = [component.name for component in ruled if component.passed is None]
    if undecided:
        reason = "; ".join(f"{name} is unscored, so its threshold cannot be decided" for name in undecided)
        return PassDecision(None, f"pass rule of {', '.join(undecided)} not decided", reason)
    if pass_threshold is None and not ruled:
        return PassDecision(True, f"score {composite:.4f} (no scorer has a pass rule: give one a threshold)")
    return None


def _detail(
    head: str,
    passed: bool,
    failed: Sequence[ComponentScore],
    ruled: Sequence[ComponentScore],
    composite_ruled: bool,
    thresholds: Mapping[str, float],
) -> str:
    """The decision's text: the failed rules, else the rules that held (none when only the composite decided)."""
    if failed:
        return f"{head}; failed: {_failures(failed, thresholds)}"
    if composite_ruled and not any(component.name in thresholds for component in ruled):
        return head
    held = ", ".join(_success(component, thresholds.get(component.name)) for component in ruled)
    # "passed" when the case did; under a composite that fell short the rules merely held
    return f"{head}; {'passed' if passed else 'held'}: {held}"


def _counts(
    component: ComponentScore,
    pass_threshold: float | None,
    thresholds: Mapping[str, float],
    referenced: Collection[str],
    dropped: Collection[str],
) -> bool:
    """Whether the component's rule counts in the case's decision."""
    if component.turn is not None or component.name in dropped:
        return False  # a closed gate or a renormalised term decides nothing
    if component.name in thresholds:
        return True  # a threshold counts even for a component the formula leaves out
    # a verdict of its own; a bare number only measures
    return pass_threshold is None and component.name in referenced and component.passed is not None


def _head(composite: float, pass_threshold: float | None, rules_held: bool) -> tuple[bool, str]:
    """Whether the case passes, and the decision's first words: the score (and the composite's threshold)."""
    if pass_threshold is None:
        return rules_held, f"score {composite:.4f}"
    reached = composite >= pass_threshold
    return reached and rules_held, f"score {composite:.4f} {'>=' if reached else '<'} threshold {pass_threshold:g}"


def _failures(failed: Sequence[ComponentScore], thresholds: Mapping[str, float]) -> str:
    shown = ", ".join(_failure(component, thresholds.get(component.name)) for component in failed[:_SHOWN])
    more = f" (+{len(failed) - _SHOWN} more)" if len(failed) > _SHOWN else ""
    return f"{shown}{more}"
