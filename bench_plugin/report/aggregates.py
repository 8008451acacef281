"""Aggregates a suite declares (``aggregates:``), computed from its records: pure functions.

Counting rules: ``count`` counts every record of a row, whatever its status (infrastructure errors
included); everything else uses only scored records (passed or failed), and a record that lacks a
field a figure needs (an unscored component, a variable a slice names) is left out of that figure.

Example, the rent benchmark's landlord uplift: over a model's scored landlord records, the mean of
``1{stance = pos} - P(stance = pos | neutral records with the same amount and relationship)``, the
neutral rate pooled over every model (or per model), 0 for a key with no neutral record.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any, TypeGuard

from bench_plugin.report.statistics.plain import mean
from bench_plugin.results.record import FAILED, PASSED, CaseRecord
from bench_plugin.suite.aggregates.spec import (
    RECORD_FIELDS,
    AggregateSpec,
    Baseline,
    BinSet,
    Column,
    Condition,
    Table,
    as_text,
)

Value = float | int | None


def compute_aggregates(spec: AggregateSpec, records: Sequence[CaseRecord]) -> list[dict[str, Any]]:
    """Every table of ``spec`` over the records of one suite, as plain data for summary.json.

    Returns:
        A list of ``{"name", "title", "csv", "by", "columns", "counts", "rows"}``: ``columns`` the
        headers after ``by``, ``counts`` the names of integer columns, ``rows`` lists of the by-values
        (as text) then the figures (None where there is no value), sorted by the by-values.
    """
    return [compute_table(table, spec.bins, records) for table in spec.tables]


def compute_table(table: Table, bins: Mapping[str, BinSet], records: Sequence[CaseRecord]) -> dict[str, Any]:
    """One aggregate table; see ``compute_aggregates``. Baselines read all of ``records``."""
    groups = _group_records(table.by, bins, records)
    rows = [[*key, *_row_figures(table, groups[key], records, bins)] for key in sorted(groups, key=_sort_key)]
    if table.sort is not None:
        rows = sort_rows(rows, _column_names(table).index(table.sort.column), descending=table.sort.descending)
    return {
        "name": table.name,
        "title": table.title,
        "csv": table.csv,
        "by": list(table.by),
        "columns": [column.name for column in table.columns],
        "counts": [column.name for column in table.columns if column.is_count],
        "rows": rows,
    }


def _row_figures(
    table: Table, records: Sequence[CaseRecord], everything: Sequence[CaseRecord], bins: Mapping[str, BinSet]
) -> list[Value]:
    """A row's figures, a column each."""
    return [column_value(column, records, everything, bins) for column in table.columns]


def _group_records(
    by: Sequence[str], bins: Mapping[str, BinSet], records: Sequence[CaseRecord]
) -> dict[tuple[str | None, ...], list[CaseRecord]]:
    """The records by their values of the ``by`` fields, as text (None: absent)."""
    groups: dict[tuple[str | None, ...], list[CaseRecord]] = {}
    for record in records:
        key = tuple(_text_or_none(field_value(record, name, bins)) for name in by)
        groups.setdefault(key, []).append(record)
    return groups


def _column_names(table: Table) -> list[str]:
    """Every column of the table's rows: the ``by`` fields, then the figures."""
    return [*table.by, *(column.name for column in table.columns)]


def sort_rows(rows: list[list[Any]], index: int, *, descending: bool) -> list[list[Any]]:
    """Rows ordered by cell ``index`` (numbers numerically, then text), rows without a value last.

    Ties keep their order (by the by-values). MT-Bench's table: by overall score, best first.
    """
    present = [row for row in rows if row[index] is not None]
    missing = [row for row in rows if row[index] is None]
    # sorted() stays stable with reverse=True: equal rows keep their by-order
    ordered = sorted(present, key=lambda row: _sort_key((_text_or_none(row[index]),)), reverse=descending)
    return [*ordered, *missing]


def column_value(
    column: Column, records: Sequence[CaseRecord], everything: Sequence[CaseRecord], bins: Mapping[str, BinSet]
) -> Value:
    """One cell: the column's figure over the row's ``records`` (baselines over ``everything``)."""
    in_slice = _in_slice(records, column.where, bins)
    if column.fn == "count":
        return len(in_slice)
    figure = _SCORED_FIGURES.get(column.fn)
    if figure is None:
        raise ValueError(f"unknown aggregate fn {column.fn!r}")
    return figure(column, [record for record in in_slice if is_scored(record)], everything, bins)


def _in_slice(records: Sequence[CaseRecord], where: Condition, bins: Mapping[str, BinSet]) -> list[CaseRecord]:
    return [record for record in records if matches(record, where, bins)]


def _count_scored(
    column: Column, scored: Sequence[CaseRecord], everything: Sequence[CaseRecord], bins: Mapping[str, BinSet]
) -> Value:
    return len(scored)


def _mean_of(
    column: Column, scored: Sequence[CaseRecord], everything: Sequence[CaseRecord], bins: Mapping[str, BinSet]
) -> Value:
    assert column.of is not None  # the spec gives ``mean`` its component
    return mean(component_raw(record, column.of) for record in scored)


def _rate_of(
    column: Column, scored: Sequence[CaseRecord], everything: Sequence[CaseRecord], bins: Mapping[str, BinSet]
) -> Value:
    return event_rate(scored, column.event, bins)


def _uplift_of(
    column: Column, scored: Sequence[CaseRecord], everything: Sequence[CaseRecord], bins: Mapping[str, BinSet]
) -> Value:
    assert column.baseline is not None  # the spec gives ``uplift`` its baseline
    return uplift(scored, column.event, column.baseline, everything, bins)


_SCORED_FIGURES: dict[
    str, Callable[[Column, Sequence[CaseRecord], Sequence[CaseRecord], Mapping[str, BinSet]], Value]
] = {"count_scored": _count_scored, "mean": _mean_of, "rate": _rate_of, "uplift": _uplift_of}
"""The figures over a row's scored records in the column's slice, by ``fn``; ``count`` counts every record."""


def event_rate(records: Sequence[CaseRecord], event: Condition, bins: Mapping[str, BinSet]) -> float | None:
    """Share of ``records`` where ``event`` holds, among those where it can be decided."""
    outcomes = [holds(record, event, bins) for record in records]
    decided = [outcome for outcome in outcomes if outcome is not None]
    return sum(decided) / len(decided) if decided else None


def uplift(
    records: Sequence[CaseRecord],
    event: Condition,
    baseline: Baseline,
    everything: Sequence[CaseRecord],
    bins: Mapping[str, BinSet],
) -> float | None:
    """Mean over ``records`` of ``1{event} - baseline rate of the event for the record's key``.

    The baseline rates come from the scored records of ``everything`` in ``baseline.where``, per
    value of ``baseline.key`` (and of ``model`` when ``per_model``); a key value with no baseline
    record has rate 0, so there the uplift is the plain event rate.
    """
    rates = baseline_rates(everything, event, baseline, bins)
    terms: list[float | None] = []
    for record in records:
        outcome, key = holds(record, event, bins), key_of(record, baseline.fields, bins)
        if outcome is not None and key is not None:
            terms.append(float(outcome) - rates.get(key, 0.0))
    return mean(terms)


def baseline_rates(
    records: Sequence[CaseRecord], event: Condition, baseline: Baseline, bins: Mapping[str, BinSet]
) -> dict[tuple[str, ...], float]:
    """Event rate of the baseline slice for each key value found there."""
    counts: dict[tuple[str, ...], list[int]] = {}
    for record in records:
        found = _baseline_outcome(record, event, baseline, bins)
        if found is not None:
            tally = counts.setdefault(found[1], [0, 0])
            tally[0] += int(found[0])
            tally[1] += 1
    return {key: hits / total for key, (hits, total) in counts.items()}


def _baseline_outcome(
    record: CaseRecord, event: Condition, baseline: Baseline, bins: Mapping[str, BinSet]
) -> tuple[bool, tuple[str, ...]] | None:
    """Whether the event held on a scored record of the baseline slice, and the record's key; None when unknown."""
    if not (is_scored(record) and matches(record, baseline.where, bins)):
        return None
    outcome, key = holds(record, event, bins), key_of(record, baseline.fields, bins)
    return None if outcome is None or key is None else (outcome, key)


def is_scored(record: CaseRecord) -> bool:
    """Passed or failed: the case has a composite. Unscored, errors, invalid and skipped do not."""
    return record.status in (PASSED, FAILED)


def component_raw(record: CaseRecord, name: str) -> float | None:
    """A scored component's raw value (its verdict on the scorer's own scale), else its value."""
    component = record.components.get(name) or {}
    value, raw = component.get("value"), component.get("raw")
    if not _is_number(value):
        return None
    return float(raw) if _is_number(raw) else float(value)


def field_value(record: CaseRecord, name: str, bins: Mapping[str, BinSet]) -> Any:
    """A record's field: a bin label, a record field (model, task...), a mapping tag, a variable; None if absent."""
    if name in bins:
        return _bin_label(record, bins[name])
    if name in RECORD_FIELDS:
        return getattr(record, name)
    tagged = _tag_value(record, name)
    return tagged if tagged is not None else record.variables.get(name)


def _bin_label(record: CaseRecord, binset: BinSet) -> str | None:
    """The label of the bin a scored record's component falls in; None for an unscored one."""
    raw = component_raw(record, binset.of) if is_scored(record) else None
    return None if raw is None else binset.label_of(raw)


def _tag_value(record: CaseRecord, name: str) -> str | None:
    """The value of the record's first ``name=value`` tag; None without one."""
    for tag in record.tags:
        key, sep, value = tag.partition("=")
        if sep and key == name:
            return value
    return None


def holds(record: CaseRecord, condition: Condition, bins: Mapping[str, BinSet]) -> bool | None:
    """Whether every field of ``condition`` has one of its values; None when a field is absent."""
    for name, accepted in condition.items():
        value = field_value(record, name, bins)
        if value is None:
            return None
        if as_text(value) not in accepted:
            return False
    return True


def matches(record: CaseRecord, condition: Condition, bins: Mapping[str, BinSet]) -> bool:
    """Whether the record is in the slice; a record without one of its fields is not."""
    return holds(record, condition, bins) is True


def key_of(record: CaseRecord, names: Sequence[str], bins: Mapping[str, BinSet]) -> tuple[str, ...] | None:
    """The record's values of ``names`` as text, the key a baseline pools by; None when one is missing."""
    values = [field_value(record, name, bins) for name in names]
    return None if any(value is None for value in values) else tuple(as_text(value) for value in values)


def _text_or_none(value: Any) -> str | None:
    return None if value is None else as_text(value)


def _sort_key(key: tuple[str | None, ...]) -> tuple[tuple[int, float, str], ...]:
    """Numbers in numeric order, then text, then missing values."""

    def part(value: str | None) -> tuple[int, float, str]:
        if value is None:
            return (2, 0.0, "")
        try:
            return (0, float(value), value)
        except ValueError:
            return (1, 0.0, value)

    return tuple(part(value) for value in key)


def _is_number(value: Any) -> TypeGuard[float]:
    return isinstance(value, (int, float)) and not isinstance(value, bool)
