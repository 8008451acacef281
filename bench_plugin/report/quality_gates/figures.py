"""Each case's value of a gate's figure, and the cases a gate reads (its model and tag)."""

from __future__ import annotations

from collections.abc import Callable, Iterable, Sequence

from bench_plugin.report.case_data import number
from bench_plugin.results.record import ERROR, FAILED, PASSED, CaseRecord
from bench_plugin.suite.quality_gates import ERROR_RATE, EVERY_MODEL, MEAN, PASS_RATE, QualityGateSpec

CaseValue = Callable[[CaseRecord], float | None]


def case_value(gate: QualityGateSpec) -> CaseValue:
    """How one case counts in the gate's figure: None leaves it out (an unscored case is never a zero)."""
    if gate.figure == MEAN and gate.component is not None:
        name = gate.component
        return lambda record: number(record.components.get(name, {}).get("value")) if _scored(record) else None
    return _VALUES[gate.figure]


def _scored(record: CaseRecord) -> bool:
    return record.status in (PASSED, FAILED)


def _composite(record: CaseRecord) -> float | None:
    return record.composite if _scored(record) else None


def _passed(record: CaseRecord) -> float | None:
    return float(record.status == PASSED) if _scored(record) else None


def _errored(record: CaseRecord) -> float | None:
    return float(record.status == ERROR)


_VALUES: dict[str, CaseValue] = {MEAN: _composite, PASS_RATE: _passed, ERROR_RATE: _errored}


def in_scope(gate: QualityGateSpec, records: Iterable[CaseRecord]) -> dict[str, list[CaseRecord]]:
    """The gate's cases by model, models in first-seen order: one model, or each (``model: "*"``)."""
    by_model: dict[str, list[CaseRecord]] = {}
    for record in records:
        if gate.model not in (EVERY_MODEL, record.model) or (gate.tag is not None and gate.tag not in record.tags):
            continue
        by_model.setdefault(record.model, []).append(record)
    return by_model


def present(values: Sequence[float | None]) -> list[float]:
    """The values a figure averages (None and NaN left out)."""
    return [value for value in values if value is not None and value == value]
