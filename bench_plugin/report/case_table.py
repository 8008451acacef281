"""A suite's cases as arrays for the statistics: one row per record, plus one per case a model has no record for.

Every section that needs intervals (leaderboard, breakdowns, paired differences) adds its figures as
columns over these rows (``Columns``); ``estimate`` then takes each figure's t interval over the suite's
units (``statistics.cluster_means``). A unit is the case's declared cluster, else a case (a task and run),
or a task when some task ran more than once: repeats of a task are not independent evidence. All models
share the units.
"""

from __future__ import annotations

from collections.abc import Collection, Hashable, Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench_plugin.report.case_data import CaseKey, case_keys, runs_repeat, score_of
from bench_plugin.report.statistics import FloatArray, IntArray, cluster_means, figure_bounds, unit_codes, unit_labels
from bench_plugin.results.record import CaseRecord
from bench_plugin.suite.spec import parse_case_nodeid, safe_id

CaseCell = tuple[str, str, int]
"""A model's case: (model, task, run)."""


@dataclass(frozen=True)
class CaseTable:
    """The rows of one suite.

    Attributes:
        records: per row, its record, or None for a case the model has no record for (never run,
            or lost from a shard): it counts only in the coverage-normalised score, as 0.
        models: per row, the model.
        keys: per row, the case key (task, run).
        scores: per row, the composite of a scored case; NaN otherwise.
        units: per row, its resampling unit.
        n_units: how many units the suite has.
        clustered: whether units are tasks (runs repeat) rather than cases.
        model_order: the models, first seen first.
        labels: model -> its display label.
        expected: how many cases a model was expected to finish (the suite's distinct case keys; in a
            session of a selection, the most any model was selected for).
        expected_of: model -> how many cases it was expected to finish.
        path: the suite's path (seeds the resampling).
        model_rows: model -> its row indices.
        components: per row, ``record.components`` (read once: the property builds a dict per call).
    """

    records: tuple[CaseRecord | None, ...]
    models: tuple[str, ...]
    keys: tuple[CaseKey, ...]
    scores: FloatArray
    units: IntArray
    n_units: int
    clustered: bool
    model_order: tuple[str, ...]
    labels: dict[str, str]
    expected: int
    expected_of: dict[str, int]
    path: str
    model_rows: dict[str, IntArray]
    components: tuple[Mapping[str, Mapping[str, Any]], ...]

    def rows_of(self, model: str) -> IntArray:
        """The row indices of ``model``."""
        return self.model_rows[model]


def build_case_table(
    path: str, records: Sequence[CaseRecord], unfinished: Collection[CaseCell] | None = None
) -> CaseTable:
    """The rows of one suite's records (see ``CaseTable``), with a row for each case a model lacks.

    A model lacks a case another model has (a paired design: every model on every case), or, when the
    session's selection is known, a case it was selected for and has no record of (``unfinished``): in a
    shard or a ``-k`` selection, the cases of other shards are not missing.
    """
    keys = case_keys(records)
    model_order = tuple(dict.fromkeys(record.model for record in records))
    lacking, expected_of = _lacking_rows(records, model_order, keys, unfinished)
    rows = [(record, record.model, (record.task, record.run)) for record in records] + lacking
    clustered = runs_repeat(records)
    units, n_units = unit_codes(unit_labels(rows, clustered))
    return CaseTable(
        records=tuple(record for record, _, _ in rows),
        models=tuple(model for _, model, _ in rows),
        keys=tuple(key for _, _, key in rows),
        scores=_scores(rows),
        units=units,
        n_units=n_units,
        clustered=clustered,
        model_order=model_order,
        labels=_labels(records),
        expected=len(keys) if unfinished is None else max(expected_of.values(), default=0),
        expected_of=expected_of,
        path=path,
        model_rows=_model_rows(rows, model_order),
        components=_components(rows),
    )


_Row = tuple[CaseRecord | None, str, CaseKey]
"""A row of the table as it is built: its record (None: a case the model lacks), its model, its case key."""


def _lacking_rows(
    records: Sequence[CaseRecord], models: Sequence[str], keys: Sequence[CaseKey],
    unfinished: Collection[CaseCell] | None,
) -> tuple[list[_Row], dict[str, int]]:
    """A row for each case a model lacks, and how many cases each model was expected to finish."""
    have: dict[str, set[CaseKey]] = {}
    for record in records:
        have.setdefault(record.model, set()).add((record.task, record.run))
    rows: list[_Row] = []
    expected_of: dict[str, int] = {}
    for model in models:
        lacking = [key for key in _wanted(model, keys, unfinished) if key not in have[model]]
        rows += [(None, model, key) for key in lacking]
        expected_of[model] = len(have[model]) + len(lacking)
    return rows, expected_of


def _wanted(model: str, keys: Sequence[CaseKey], unfinished: Collection[CaseCell] | None) -> Sequence[CaseKey]:
    """The cases ``model`` was expected to finish: every case, or those it was selected for."""
    if unfinished is None:
        return keys
    return [(task, run) for name, task, run in unfinished if name == model]


def _labels(records: Sequence[CaseRecord]) -> dict[str, str]:
    """Model -> the display label of its first record."""
    labels: dict[str, str] = {}
    for record in records:
        labels.setdefault(record.model, record.model_label or record.model)
    return labels


def _scores(rows: Sequence[_Row]) -> FloatArray:
    return np.array([math_nan(None if record is None else score_of(record)) for record, _, _ in rows],
                    dtype=np.float64)


def _components(rows: Sequence[_Row]) -> tuple[Mapping[str, Mapping[str, Any]], ...]:
    """Each row's components, read once (none for a case the model lacks)."""
    return tuple({} if record is None else record.components for record, _, _ in rows)


def _model_rows(rows: Sequence[_Row], models: Sequence[str]) -> dict[str, IntArray]:
    found: dict[str, list[int]] = {model: [] for model in models}
    for row, (_, model, _) in enumerate(rows):
        found[model].append(row)
    return {model: np.array(indices, dtype=np.int64) for model, indices in found.items()}


def unfinished_cells(nodeids: Iterable[str], records: Sequence[CaseRecord]) -> dict[str, list[CaseCell]]:
    """Suite path -> the cases a session selected that have no record (it was stopped), as cells of its models.

    A case's node id is ``path::task[model-runN]`` with the model's name made safe for an id (``safe_id``);
    the records give the names back. A node id of a model with no record (none finished) is left out.
    """
    names: dict[tuple[str, str], str] = {}
    for record in records:
        names.setdefault((record.path, safe_id(record.model)), record.model)
    finished = {record.nodeid for record in records}
    cells: dict[str, list[CaseCell]] = {}
    for nodeid in nodeids:
        found = None if nodeid in finished else _cell_of(nodeid, names)
        if found is not None:
            cells.setdefault(found[0], []).append(found[1])
    return cells


def _cell_of(nodeid: str, names: Mapping[tuple[str, str], str]) -> tuple[str, CaseCell] | None:
    """A case's suite path and cell, from its node id; None when no record names its model."""
    parsed = parse_case_nodeid(nodeid)
    if parsed is None or (model := names.get((parsed[0], parsed[2]))) is None:
        return None
    return parsed[0], (model, parsed[1], parsed[3])


def math_nan(value: float | None) -> float:
    """None as NaN, for arrays."""
    return float("nan") if value is None else float(value)


class Columns:
    """Figures to estimate, each a column over a ``CaseTable``'s rows, named by any hashable key."""

    def __init__(self, table: CaseTable) -> None:
        """Start with no column."""
        self.table = table
        self.keys: list[Hashable] = []
        self.values: list[FloatArray] = []

    def add(self, key: Hashable, rows: IntArray, values: FloatArray) -> None:
        """A column with ``values`` at ``rows`` and no value (NaN) elsewhere."""
        column = np.full(len(self.table.records), np.nan)
        column[rows] = values
        self.keys.append(key)
        self.values.append(column)

    def estimate(self) -> dict[Hashable, dict[str, Any] | None]:
        """Every column's mean, standard error and 95% interval over the suite's units (``statistics.intervals``)."""
        if not self.keys:
            return {}
        matrix = np.column_stack(self.values)
        found = cluster_means(matrix, self.table.units, self.table.n_units,
                              bounds=[figure_bounds(key) for key in self.keys])
        return dict(zip(self.keys, found, strict=True))
