"""A quality gate's verdict over a suite's records: per model its figure (or drop) and outcome, then the gate's."""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass

from bench_plugin.report.quality_gates.baseline import BaselineError
from bench_plugin.report.quality_gates.figures import CaseValue, case_value, in_scope, present
from bench_plugin.report.quality_gates.relative import INCONCLUSIVE, REGRESSED, Drop, paired_drops
from bench_plugin.results.record import CaseRecord
from bench_plugin.suite.quality_gates import QualityGateSpec

HELD, BROKEN, SKIPPED = "held", "broken", "skipped"  # a gate's outcome: pytest's passed, failed, skipped
NO_DATA = "no data"  # a model with no case the figure counts (or, for a relative gate, none in the baseline)


@dataclass(frozen=True)
class ModelFigure:
    """One model's part of a gate: ``value`` is the figure (absolute) or the drop (relative), over ``cases``.

    ``outcome``: ``held`` / ``broken`` (absolute), ``regressed`` / ``unchanged`` / ``inconclusive`` (relative),
    or ``no data``; ``text`` says it in a line.
    """

    model: str
    value: float | None
    cases: int
    outcome: str
    text: str


@dataclass(frozen=True)
class GateVerdict:
    """The gate's outcome (``held``, ``broken``, ``skipped``), why in one line, and each model's part."""

    gate: QualityGateSpec
    outcome: str
    reason: str
    models: tuple[ModelFigure, ...] = ()

    def lines(self) -> list[str]:
        """The reason, then a line per model: what the failure message and the terminal summary show."""
        return [self.reason, *(f"  {figure.model}: {figure.text}" for figure in self.models)]


def judge_gate(
    gate: QualityGateSpec, records: Iterable[CaseRecord],
    baseline: Mapping[str, CaseRecord] | BaselineError | None = None,
) -> GateVerdict:
    """The verdict of ``gate`` over one suite's records (and, for a relative gate, the baseline's by node id).

    A gate with no case to read is skipped (``-k`` left its cases out); a relative gate without a baseline is
    skipped too, and one whose baseline cannot be read is broken with the reason.
    """
    scoped = in_scope(gate, records)
    value = case_value(gate)
    if gate.relative:
        return _relative(gate, value, scoped, baseline)
    figures = tuple(_absolute(gate, model, value, cases) for model, cases in scoped.items())
    return _overall(gate, figures, [figure for figure in figures if figure.outcome == BROKEN])


def _absolute(gate: QualityGateSpec, model: str, value: CaseValue, cases: Sequence[CaseRecord]) -> ModelFigure:
    values = present([value(record) for record in cases])
    if not values:
        return ModelFigure(model, None, 0, NO_DATA, f"no case counts in {gate.measured}")
    figure = sum(values) / len(values)
    outcome = HELD if gate.holds(figure) else BROKEN
    bound = _broken_bound(gate, figure) if outcome == BROKEN else "holds"
    return ModelFigure(model, figure, len(values), outcome,
                       f"{gate.measured} = {figure:.4g} over {len(values)} cases: {bound}")


def _broken_bound(gate: QualityGateSpec, figure: float) -> str:
    if gate.minimum is not None and figure < gate.minimum:
        return f"below {gate.minimum:g}"
    return f"above {gate.maximum:g}"


def _relative(
    gate: QualityGateSpec, value: CaseValue, scoped: Mapping[str, Sequence[CaseRecord]],
    baseline: Mapping[str, CaseRecord] | BaselineError | None,
) -> GateVerdict:
    if baseline is None:
        return GateVerdict(gate, SKIPPED, "no baseline to compare with: pass --bench-baseline (a results.jsonl, an "
                                          "output folder or a named run)")
    if isinstance(baseline, BaselineError):
        return GateVerdict(gate, BROKEN, str(baseline))
    drops = paired_drops(gate, value, scoped, baseline)
    figures = tuple(_drop_figure(gate, model, drop) for model, drop in drops.items())
    failing = _failing(gate, figures)
    return _overall(gate, figures, [figure for figure in figures if figure.outcome in failing])


def _failing(gate: QualityGateSpec, figures: Sequence[ModelFigure]) -> set[str]:
    """What breaks a relative gate: a regression, an inconclusive model when the gate says so, and no data.

    No data breaks it only when cases ran and not one matches the baseline's: another suite version.
    """
    failing = {REGRESSED, INCONCLUSIVE} if gate.on_inconclusive == "fail" else {REGRESSED}
    if figures and all(figure.outcome == NO_DATA for figure in figures):
        failing.add(NO_DATA)
    return failing


def _drop_figure(gate: QualityGateSpec, model: str, drop: Drop | None) -> ModelFigure:
    if drop is None:
        return ModelFigure(model, None, 0, NO_DATA, "no case matches the baseline's (node id, with a value on both)")
    text = (f"drop {drop.drop:+.4f} [{drop.low:+.4f}, {drop.high:+.4f}] at {gate.confidence:.0%}, p (Holm) "
            f"{drop.p_holm:.3g}, {drop.paired} paired cases in {drop.units} clusters: {drop.verdict} "
            f"(margin {gate.max_drop:g})")
    return ModelFigure(model, drop.drop, drop.paired, drop.verdict, text)


def _overall(gate: QualityGateSpec, figures: tuple[ModelFigure, ...], failing: list[ModelFigure]) -> GateVerdict:
    """Broken when a model fails it; skipped when no model had a case to read; else held."""
    if failing:
        names = ", ".join(figure.model for figure in failing)
        return GateVerdict(gate, BROKEN, f"{gate.label} broken for {names}", figures)
    if all(figure.outcome == NO_DATA for figure in figures):
        return GateVerdict(gate, SKIPPED, f"{gate.label}: no case of this suite to read (none ran, or none counts)",
                           figures)
    return GateVerdict(gate, HELD, f"{gate.label} holds", figures)
