"""A case's scorers with their per-case values: each scorer's ``vars`` and a templated ``threshold``, rendered.

Rendering happens at expansion, so a template that fails is the case's problem (found by
``bench validate``) and scoring only reads values. The scorers themselves are still parsed
once per spec at collection (``scoring/bind.py``); a rendered threshold gives a spec per value.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from bench_plugin.core.frozen import freeze_fields
from bench_plugin.suite.spec import ScorerSpec
from bench_plugin.suite.templates import TemplateRenderer
from bench_plugin.suite.thresholds import render_threshold


@dataclass(frozen=True)
class ScorerValues:
    """The scorers of one case, thresholds rendered, and the variables each scorer adds (by name)."""

    scorers: tuple[ScorerSpec, ...]
    variables: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)

    def __post_init__(self) -> None:
        freeze_fields(self, "variables")


def render_scorer_values(
    renderer: TemplateRenderer, scorers: tuple[ScorerSpec, ...], variables: Mapping[str, Any], path: str
) -> ScorerValues:
    """Render each scorer's ``vars`` (in order, each seeing the case variables and the ones before it) and threshold.

    A scorer's vars are what its templates see over the case variables; its ``threshold`` template
    sees those too.

    Raises:
        CaseError: at the scorer's ``vars.NAME`` or ``threshold``, for a template that fails or a
            threshold that is not a number from 0 to 1.
    """
    if not any(scorer.vars or scorer.threshold_template is not None for scorer in scorers):
        return ScorerValues(scorers)
    rendered: list[ScorerSpec] = []
    added: dict[str, dict[str, Any]] = {}
    for scorer in scorers:
        own = _own_vars(renderer, scorer, variables)
        if own:
            added[scorer.name] = own
        rendered.append(_with_threshold(renderer, scorer, {**variables, **own}, path))
    return ScorerValues(tuple(rendered), added)


def _own_vars(renderer: TemplateRenderer, scorer: ScorerSpec, variables: Mapping[str, Any]) -> dict[str, Any]:
    """The scorer's ``vars``, in order, each seeing the case variables and the ones before it."""
    own: dict[str, Any] = {}
    for spec in scorer.vars:
        own[spec.name] = renderer.evaluate(spec.source, {**variables, **own}, key=spec.key, line=spec.line)
    return own


def _with_threshold(renderer: TemplateRenderer, scorer: ScorerSpec, scope: dict[str, Any], path: str) -> ScorerSpec:
    """The scorer with its threshold template rendered for the case (as it is without one)."""
    if scorer.threshold_template is None:
        return scorer
    threshold = render_threshold(renderer, scorer.threshold_template, scope, path=path,
                                 key=f"{scorer.key}.threshold", line=scorer.line)
    return replace(scorer, threshold=threshold, threshold_template=None)
