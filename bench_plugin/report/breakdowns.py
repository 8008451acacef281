"""Breakdowns of each model's score by every dimension the tasks carry, found without an ``aggregates:`` declaration.

Dimensions, in this order:

- a ``key=value`` tag gives dimension ``key``; plain tags together give dimension ``tag`` (a case
  with two plain tags counts in both groups);
- a task variable (in name order) whose values are short text, integers or booleans and group the tasks: 2 to
  ``MAX_GROUPS`` distinct values, one of them shared by two tasks or more (a variable that names
  each task is an id; the prompt variants of one task, ``prompts:``, count as one task; a row's
  ``row_index`` is never one);
- ``turn``: each turn of a per-turn scorer (its per-turn components, one dimension per scorer).

A dimension that splits the cases exactly as an earlier one does (a ``category`` variable beside a
``category=`` tag) is shown once. Each cell is a model's mean over its scored cases in the group (for
``turn``, the turn's component values), with a t interval over the suite's units (``case_table``).
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
    found = _Found()
    for name, members in _tag_groups(rows).items():
        found.keep(name, "tag", members)
    for name, members in _variable_dimensions(table, rows).items():
        found.keep(name, "variable", members)
    for scorer, turns in _turn_groups(table).items():
        found.keep("turn", "turn", turns, scorer)
    return found.dimensions


class _Found:
    """The dimensions found so far, each way of splitting the cases once (the first dimension that gives it)."""

    def __init__(self) -> None:
        self.dimensions: list[Dimension] = []
        self._seen: set[frozenset[tuple[str, tuple[int, ...]]]] = set()

    def keep(self, name: str, source: str, members: dict[str, list[int]], scorer: str | None = None) -> None:
        """Keep a dimension of 2 to ``MAX_GROUPS`` groups that splits the cases as no earlier one does."""
        if not 2 <= len(members) <= MAX_GROUPS:
            return
        partition = frozenset((value, tuple(group)) for value, group in members.items())
        if partition in self._seen:
            return
        self._seen.add(partition)
        self.dimensions.append(
            Dimension(name, source, tuple(members), {k: tuple(v) for k, v in members.items()}, scorer)
        )


def _tag_groups(rows: Sequence[tuple[int, CaseRecord]]) -> dict[str, dict[str, list[int]]]:
    """Dimension -> group -> rows, from the cases' tags."""
    by_tag: dict[str, dict[str, list[int]]] = {}
    for row, record in rows:
        for tag in record.tags:
            name, group = _tag_dimension(tag)
            by_tag.setdefault(name, {}).setdefault(group, []).append(row)
    return by_tag


def _tag_dimension(tag: Any) -> tuple[str, str]:
    """``key=value`` is group ``value`` of dimension ``key``; a plain tag is a group of dimension ``tag``."""
    key, sep, value = str(tag).partition("=")
    return (key, value) if sep else ("tag", key)


def _variable_dimensions(table: CaseTable, rows: Sequence[tuple[int, CaseRecord]]) -> dict[str, dict[str, list[int]]]:
    """Variable -> group -> rows, for the variables that group the tasks."""
    task_of = [None if record is None else base_task(record) for record in table.records]
    found = {}
    for name in _variable_names(rows):
        grouped = _variable_groups(rows, name)
        # a variable whose every value belongs to one task names tasks: an id, not a dimension
        if grouped is not None and _spans_tasks(grouped, task_of):
            found[name] = grouped
    return found


def _variable_names(rows: Sequence[tuple[int, CaseRecord]]) -> list[str]:
    """The cases' variables in name order.

    Not first seen first: a record's variables come in the suite's order during the run and sorted when read back
    from ``results.jsonl`` (its keys are written sorted), and the same records must give the same report.
    """
    # a row's place in its file (row_index) is no category, even when a matrix repeats the rows
    return sorted({name for _, record in rows for name in record.variables if name != ROW_INDEX})


def _spans_tasks(grouped: Mapping[str, list[int]], task_of: Sequence[str | None]) -> bool:
    """Whether some group holds rows of two tasks or more."""
    return any(len({task_of[row] for row in group}) > 1 for group in grouped.values())


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
            values = _group_values(table, dimension, rows, group)
            for model in table.model_order:
                mine = models[rows] == model
                if mine.any():
                    columns.add(("group", position, group, model), rows[mine], values[mine])


def _group_values(table: CaseTable, dimension: Dimension, rows: IntArray, group: str) -> FloatArray:
    """The values a group's rows give: their composites, or for ``turn`` the turn's component values."""
    if dimension.scorer is None:
        return table.scores[rows]
    return _turn_values(table, rows, dimension.scorer, group)


def _turn_values(table: CaseTable, rows: IntArray, scorer: str, turn: str) -> FloatArray:
    """Per row, the value of ``scorer``'s component for ``turn``."""
    values = [math_nan(_turn_value(table.components[row], scorer, turn)) for row in rows]
    return np.array(values, dtype=np.float64)


def _turn_value(components: Mapping[str, Mapping[str, Any]], scorer: str, turn: str) -> float | None:
    """The value of ``scorer``'s component for ``turn`` (the last, should there be two)."""
    found = None
    for component in components.values():
        if is_turn_component(component) and component["scorer"] == scorer and str(component["turn"]) == turn:
            found = number(component.get("value"))
    return found


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
