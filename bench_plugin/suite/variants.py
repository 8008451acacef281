"""A TaskSpec -> its variants: one per matrix combination and dataset row, with variables, id and tags."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping
from dataclasses import dataclass
from typing import Any

from bench_plugin.errors import CaseError
from bench_plugin.frozen import freeze_fields
from bench_plugin.suite.datasets import select_rows
from bench_plugin.suite.spec import SuiteSpec, TaskSpec, safe_id
from bench_plugin.suite.templates import TemplateRenderer


@dataclass(frozen=True)
class Variant:
    """One variant of a task: its rendered id, variables and tags, or the problem its cases fail with."""

    task_id: str
    variables: Mapping[str, Any]
    tags: tuple[str, ...] = ()
    problem: CaseError | None = None

    def __post_init__(self) -> None:
        freeze_fields(self, "variables")


def task_variants(task: TaskSpec, suite: SuiteSpec, renderer: TemplateRenderer) -> Iterator[Variant]:
    """One variant per matrix combination (suite grid x task grid) and dataset row, in that order.

    A variant whose id, variables or tags do not render gets a fallback id (``tasks-3-2``) and the
    problem; a dataset that cannot be read gives one variant with the problem, at ``dataset:``.
    """
    grid = task.grid
    combos = [dict(zip(grid, values, strict=True)) for values in itertools.product(*grid.values())] if grid else [{}]
    rows: list[dict[str, Any]] = [{}]
    if task.dataset is not None:
        try:
            rows = select_rows(task.dataset, suite.data_dir, renderer, suite.variables, suite.folders)
        except CaseError as exc:
            located = exc.located(suite.path, task.dataset.line, task.dataset.key)
            yield Variant(fallback_id(task), {}, problem=located)
            return
    for number, (combo, row) in enumerate(itertools.product(combos, rows), 1):
        try:
            variables = _variables(task, suite, renderer, combo, row)
            task_id = safe_id(task.id.render(renderer, variables))
        except CaseError as exc:
            yield Variant(f"{fallback_id(task)}-{number}", {**combo, **row}, problem=exc)
            continue
        try:
            tags = tuple(f"{tag.name}={tag.value.render(renderer, variables)}" if tag.name is not None
                         else tag.value.render(renderer, variables) for tag in task.tags)
        except CaseError as exc:
            yield Variant(task_id, variables, problem=exc)
            continue
        yield Variant(task_id, variables, tags)


def _variables(
    task: TaskSpec, suite: SuiteSpec, renderer: TemplateRenderer, combo: Mapping[str, Any], row: Mapping[str, Any]
) -> dict[str, Any]:
    """Layered in order: suite variables, grid values, dataset row, then ``task.derived`` one by one."""
    variables: dict[str, Any] = {**suite.variables, **combo, **row}
    for spec in task.derived:
        variables[spec.name] = renderer.evaluate(spec.source, variables, key=spec.key, line=spec.line)
    return variables


def fallback_id(task: TaskSpec) -> str:
    """The id of a task whose id template cannot be rendered: the id itself, or ``tasks-<index>``."""
    raw_id = task.id.source
    return safe_id(raw_id) if "{" not in raw_id else f"tasks-{task.index}"
