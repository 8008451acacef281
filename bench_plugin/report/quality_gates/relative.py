"""A relative gate: how much worse each model did than in the baseline run, case by case, and whether that is real.

Cases are paired by node id (suite file, task, variant, model and run); the paired difference and its p-value
come from ``report.statistics.paired_difference`` with the case's cluster (``cluster:``, by default its task)
as the resampling unit, and the p-values of a gate's models are Holm-adjusted together.

A model ``regressed`` when its drop is significant (adjusted p at most ``1 - confidence``) and larger than the
gate's ``max_drop``; ``unchanged`` when the interval excludes a drop that large (an improvement included);
``inconclusive`` when the data can do neither.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from bench_plugin.report.quality_gates.figures import CaseValue
from bench_plugin.results.record import CaseRecord
from bench_plugin.suite.quality_gates import LOWER_IS_BETTER, QualityGateSpec

if TYPE_CHECKING:
    from bench_plugin.report.statistics import PairedDifference

REGRESSED, UNCHANGED, INCONCLUSIVE = "regressed", "unchanged", "inconclusive"


@dataclass(frozen=True)
class Drop:
    """One model's change against the baseline, on the gate's figure, signed so that a positive ``drop`` is worse.

    ``low`` and ``high`` bound the drop at the gate's confidence; ``p_holm`` is adjusted over the gate's models.
    ``paired`` counts the cases both runs have a value for, ``units`` their clusters.
    """

    drop: float
    low: float
    high: float
    p_value: float
    p_holm: float
    paired: int
    units: int
    verdict: str


def paired_drops(
    gate: QualityGateSpec, value: CaseValue, current: Mapping[str, Sequence[CaseRecord]],
    baseline: Mapping[str, CaseRecord],
) -> dict[str, Drop | None]:
    """Per model of ``current`` (model -> its cases), its drop against ``baseline`` (node id -> record).

    None for a model no case of which is in the baseline with a value on both sides.
    """
    # start-up: numpy, only in a session that judges a relative gate (the plugin loads this room in every run)
    from bench_plugin.report.statistics import holm_adjust

    sign = -1.0 if gate.figure in LOWER_IS_BETTER else 1.0
    compared = {model: _difference(gate, value, records, baseline) for model, records in current.items()}
    tested = [model for model, found in compared.items() if found is not None]
    adjusted = holm_adjust([compared[model].p_value for model in tested])  # type: ignore[union-attr]
    holm = {model: p for model, p in zip(tested, adjusted, strict=True)}
    drops: dict[str, Drop | None] = {}
    for model, found in compared.items():
        drops[model] = None if found is None else _drop(gate, found, sign, holm[model] or 1.0)
    return drops


def _difference(
    gate: QualityGateSpec, value: CaseValue, records: Sequence[CaseRecord], baseline: Mapping[str, CaseRecord]
) -> PairedDifference | None:
    from bench_plugin.report.statistics import paired_difference  # start-up: see paired_drops

    matched = [(record, baseline[record.nodeid]) for record in records if record.nodeid in baseline]
    if not matched:
        return None
    return paired_difference(
        [value(now) for now, _ in matched], [value(before) for _, before in matched],
        clusters=[now.cluster or now.task for now, _ in matched], confidence=gate.confidence, seed=0,
    )


def _drop(gate: QualityGateSpec, found: PairedDifference, sign: float, p_holm: float) -> Drop:
    """The worse-ward change (``-sign * (current - baseline)``) and the verdict of the rule above."""
    # + 0.0: no drop reads as 0, not -0
    ends = sorted((-sign * found.ci_low + 0.0, -sign * found.ci_high + 0.0))
    drop = -sign * found.mean_diff + 0.0
    limit = gate.max_drop or 0.0
    if p_holm <= 1.0 - gate.confidence and drop > limit:
        verdict = REGRESSED
    elif ends[1] <= limit:  # NaN (one cluster) compares False: never unchanged on no evidence
        verdict = UNCHANGED
    else:
        verdict = INCONCLUSIVE
    return Drop(drop, ends[0], ends[1], found.p_value, p_holm, found.n, found.n_clusters, verdict)
