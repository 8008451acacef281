"""Breakdowns of each model's score by every dimension the tasks carry, found without an ``aggregates:`` declaration.

Dimensions, in this order:

- a ``key=value`` tag gives dimension ``key``; plain tags together give dimension ``tag`` (a case
  with two plain tags counts in both groups);
- a task variable whose values are short text, integers or booleans and group the tasks: 2 to
  ``MAX_GROUPS`` distinct values, one of them shared by two tasks or more (a variable that names
  each task is an id; the prompt variants of one task, ``prompts:``, count as one task; a row's
  ``row_index`` is never one);
- ``turn``: each turn of a per-turn scorer (its per-turn components, one dimension per scorer).

A dimension that splits the cases exactly as an earlier one does (a ``category`` variable beside a
``category=`` tag) is shown once. Each cell is a model's mean over its scored cases in the group (for
``turn``, the turn's component values), with a bootstrap interval from the suite's one resampling.
"""

from __future__ import annotations

from collections.abc import Hashable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import numpy as np

from bench_plugin.report.case_data import number
from bench_plugin.report.case_table import CaseTable, Columns, math_nan
from bench_plugin.report.statistics.core import FloatArray, IntArray
from bench_plugin.report.turns import is_turn_component
from bench_plugin.results.record import CaseRecord
from bench_plugin.suite.datasets import ROW_INDEX
from bench_plugin.suite.variants import PROMPT_VARIABLE

MAX_GROUPS = 20
MAX_VALUE_CHARS = 60


@dataclass(frozen=True)
class Dimension:
    """One way to split the cases: its name, where it comes from, its groups and each row's groups.

    Attributes:
        name: the tag key, the variable's name, ``tag`` or ``turn``.
        source: ``tag``, ``variable`` or ``turn``.
        groups: the group values, first seen first.
        members: per group, the rows in it.
        scorer: for ``turn``, the per-turn scorer whose components are the values.
    """

    name: str
    source: str
    groups: tuple[str, ...]
    members: Mapping[str, tuple[int, ...]]
    scorer: str | None = None


def find_dimensions(table: CaseTable) -> list[Dimension]:
    """Every dimension of the suite's cases with at least two groups; see the module docstring."""
    rows = [(row, record) for row, record in enumerate(table.records) if record is not None]
    found: list[Dimension] = []
    seen: set[frozenset[tuple[str, tuple[int, ...]]]] = set()

    def keep(name: str, source: str, members: dict[str, list[int]], scorer: str | None = None) -> None:
        if not 2 <= len(members) <= MAX_GROUPS:
            return
        partition = frozenset((value, tuple(group)) for value, group in members.items())
        if partition in seen:
            return
        seen.add(partition)
        found.append(Dimension(name, source, tuple(members), {k: tuple(v) for k, v in members.items()}, scorer))

    by_tag: dict[str, dict[str, list[int]]] = {}
    for row, record in rows:
        for tag in record.tags:
            key, sep, value = str(tag).partition("=")
            name, group = (key, value) if sep else ("tag", key)
            by_tag.setdefault(name, {}).setdefault(group, []).append(row)
    for name, members in by_tag.items():
        keep(name, "tag", members)
    task_of = [None if record is None else base_task(record) for record in table.records]
    # a row's place in its file (row_index) is no category, even when a matrix repeats the rows
    names = dict.fromkeys(name for _, record in rows for name in record.variables if name != ROW_INDEX)
    for name in names:
        grouped = _variable_groups(rows, name)
        # a variable whose every value belongs to one task names tasks: an id, not a dimension
        if grouped is not None and any(len({task_of[row] for row in group}) > 1 for group in grouped.values()):
            keep(name, "variable", grouped)
    for scorer, turns in _turn_groups(table).items():
        keep("turn", "turn", turns, scorer)
    return found


def base_task(record: CaseRecord) -> str:
    """The task a case belongs to with its prompt variant left out: ``cap-terse`` and ``cap-polite`` are one task.

    So a dataset field that names rows (a question id) stays an id when every row runs several prompts.
    """
    prompt = record.variables.get(PROMPT_VARIABLE)
    return record.task.removesuffix(f"-{prompt}") if isinstance(prompt, str) else record.task


def _variable_groups(rows: Sequence[tuple[int, CaseRecord]], name: str) -> dict[str, list[int]] | None:
    members: dict[str, list[int]] = {}
    for row, record in rows:
        value = record.variables.get(name)
        if value is None:
            continue
        # a float is a measurement (a price, a total), not a category
        if not isinstance(value, (str, int, bool)) or len(str(value)) > MAX_VALUE_CHARS:
            return None
        members.setdefault(str(value), []).append(row)
        if len(members) > MAX_GROUPS:
            return None
    return members


def _turn_groups(table: CaseTable) -> dict[str, dict[str, list[int]]]:
    scorers: dict[str, dict[str, list[int]]] = {}
    for row, components in enumerate(table.components):
        for component in components.values():
            if is_turn_component(component) and number(component.get("value")) is not None:
                scorers.setdefault(component["scorer"], {}).setdefault(str(component["turn"]), []).append(row)
    return {scorer: dict(sorted(turns.items(), key=lambda item: int(item[0]))) for scorer, turns in scorers.items()}


def add_breakdown_columns(columns: Columns, dimensions: Sequence[Dimension]) -> None:
    """Add ``("group", dimension index, group, model)`` for every group and model."""
    table = columns.table
    models = np.array(table.models, dtype=object)
    for position, dimension in enumerate(dimensions):
        for group in dimension.groups:
            rows = np.array(dimension.members[group], dtype=np.int64)
            if dimension.scorer is None:
                values = table.scores[rows]
            else:
                values = _turn_values(table, rows, dimension.scorer, group)
            for model in table.model_order:
                mine = models[rows] == model
                if mine.any():
                    columns.add(("group", position, group, model), rows[mine], values[mine])


def _turn_values(table: CaseTable, rows: IntArray, scorer: str, turn: str) -> FloatArray:
    """Per row, the value of ``scorer``'s component for ``turn``."""
    values = []
    for row in rows:
        found = None
        for component in table.components[row].values():
            if is_turn_component(component) and component["scorer"] == scorer and str(component["turn"]) == turn:
                found = number(component.get("value"))
        values.append(math_nan(found))
    return np.array(values, dtype=np.float64)


def breakdown_figures(
    table: CaseTable, dimensions: Sequence[Dimension], estimates: Mapping[Hashable, dict[str, Any] | None]
) -> list[dict[str, Any]]:
    """The section's data: ``[{"dimension", "source", "scorer", "groups": [{"value", "cases", "models"}]}]``.

    ``cases`` counts every case in the group (all statuses, all models); ``models`` maps each model
    to its estimate (``mean``, ``se``, ``ci_low``, ``ci_high``, ``n`` scored cases) or None.
    """
    out = []
    for position, dimension in enumerate(dimensions):
        groups = [
            {
                "value": group,
                "cases": len(dimension.members[group]),
                "models": {model: estimates.get(("group", position, group, model)) for model in table.model_order},
            }
            for group in dimension.groups
        ]
        out.append({"dimension": dimension.name, "source": dimension.source, "scorer": dimension.scorer,
                    "groups": groups})
    return out
