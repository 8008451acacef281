"""A TaskSpec -> its variants: one per matrix combination, dataset row and prompt, with variables, id and tags."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

import jinja2
from jinja2 import meta

from bench_plugin.core.errors import CaseError
from bench_plugin.core.frozen import freeze_fields
from bench_plugin.suite.clusters import render_cluster
from bench_plugin.suite.datasets import ROW_INDEX, select_rows
from bench_plugin.suite.row_scorers import row_scorers
from bench_plugin.suite.spec import PromptSpec, ScorerSpec, SuiteSpec, TaskSpec, safe_id
from bench_plugin.suite.templates import TemplateRenderer

#: The variable and the tag that name a case's prompt variant (``prompts:``).
PROMPT_VARIABLE = "prompt_id"
PROMPT_TAG = "prompt"


@dataclass(frozen=True)
class Variant:
    """One variant of a task: its rendered id, variables and tags, or the problem its cases fail with.

    ``prompt`` is the prompt variant it sends (None: the task's own prompt); ``scorers`` are the
    scorers its dataset row carries (``suite/row_scorers.py``), added after the task's.
    """

    task_id: str
    variables: Mapping[str, Any]
    tags: tuple[str, ...] = ()
    problem: CaseError | None = None
    prompt: PromptSpec | None = None
    scorers: tuple[ScorerSpec, ...] = ()
    cluster: str = ""  # what its cases belong with for the statistics (suite/clusters.py)

    def __post_init__(self) -> None:
        freeze_fields(self, "variables")


def task_variants(task: TaskSpec, suite: SuiteSpec, renderer: TemplateRenderer) -> Iterator[Variant]:
    """One variant per matrix combination (suite grid x task grid), dataset row and prompt, in that order.

    A prompt variant's id is the task's with ``-<prompt id>`` added (``capital-terse``), unless the
    id template already uses ``prompt_id``; it is tagged ``prompt=<prompt id>``, a dimension of the
    report's breakdowns. A variant whose id, variables or tags do not render gets a fallback id
    (``tasks-3-2``) and the problem; a dataset that cannot be read gives one variant with the problem, a split
    prompt file one variant per task variant (``PromptSpec.problem``).
    """
    prompts: list[PromptSpec | None] = list(task.prompts) if task.prompts is not None else [None]
    combos = _combos(task.grid)
    rows = _rows(task, suite, renderer)
    if isinstance(rows, CaseError):
        yield Variant(fallback_id(task), {}, problem=rows)
        return
    carried = [_row_scorers(task, suite, row) for row in rows]
    suffix = task.prompts is not None and not _id_uses_prompt(renderer.env, task.id.source)
    number = 0
    for combo, (row, scorers) in itertools.product(combos, zip(rows, carried, strict=True)):
        for prompt in prompts:
            number += 1
            yield _variant(task, suite, renderer, combo, row, prompt, scorers, number, suffix)


def _combos(grid: Mapping[str, Sequence[Any]]) -> list[dict[str, Any]]:
    """Every combination of the matrix's values, in YAML order (one empty one without a matrix)."""
    if not grid:
        return [{}]
    return [dict(zip(grid, values, strict=True)) for values in itertools.product(*grid.values())]


def _rows(task: TaskSpec, suite: SuiteSpec, renderer: TemplateRenderer) -> list[dict[str, Any]] | CaseError:
    """The variables of the dataset rows the task runs (one empty row without a dataset), or why they cannot be read."""
    if task.dataset is None:
        return [{}]
    try:
        return select_rows(task.dataset, suite.data_dir, renderer, suite.variables, suite.folders)
    except CaseError as exc:
        return exc.located(suite.path, task.dataset.line, task.dataset.key)


def _variant(
    task: TaskSpec, suite: SuiteSpec, renderer: TemplateRenderer, combo: Mapping[str, Any], row: Mapping[str, Any],
    prompt: PromptSpec | None, scorers: tuple[ScorerSpec, ...] | CaseError, number: int, suffix: bool,
) -> Variant:
    layer = _layer(combo, row, prompt)
    try:
        variables = _variables(task, suite, renderer, layer)
        base_id = safe_id(task.id.render(renderer, variables))
        cluster = render_cluster(renderer, task.cluster, variables, base_id)  # before a prompt's suffix
        task_id = f"{base_id}-{prompt.id}" if suffix and prompt is not None else base_id
    except CaseError as exc:
        return Variant(f"{fallback_id(task)}-{number}", layer, problem=exc, prompt=prompt)
    try:
        tags = _tags(task, renderer, variables, prompt)
    except CaseError as exc:
        return Variant(task_id, variables, problem=exc, prompt=prompt)
    if prompt is not None and prompt.problem is not None:  # a split prompt file that cannot be read
        return Variant(task_id, variables, tags, problem=prompt.problem, prompt=prompt)
    if isinstance(scorers, CaseError):
        return Variant(task_id, variables, tags, problem=scorers, prompt=prompt)
    return Variant(task_id, variables, tags, prompt=prompt, scorers=scorers, cluster=cluster)


def _layer(combo: Mapping[str, Any], row: Mapping[str, Any], prompt: PromptSpec | None) -> dict[str, Any]:
    """What a variant sets over the suite's variables: its matrix values, its dataset row, its prompt's id."""
    return {**combo, **row, **({PROMPT_VARIABLE: prompt.id} if prompt is not None else {})}


def _tags(
    task: TaskSpec, renderer: TemplateRenderer, variables: Mapping[str, Any], prompt: PromptSpec | None
) -> tuple[str, ...]:
    """The task's tags rendered (``name=value`` for a named one), then ``prompt=<prompt id>`` for a prompt variant."""
    tags = tuple(f"{tag.name}={tag.value.render(renderer, variables)}" if tag.name is not None
                 else tag.value.render(renderer, variables) for tag in task.tags)
    return (*tags, f"{PROMPT_TAG}={prompt.id}") if prompt is not None else tags


def _row_scorers(task: TaskSpec, suite: SuiteSpec, row: Mapping[str, Any]) -> tuple[ScorerSpec, ...] | CaseError:
    """The scorers a dataset row carries (none without a dataset), or why they cannot be read."""
    if task.dataset is None or "row" not in row:
        return ()
    taken = [scorer.name for scorer in task.scorers]
    try:
        return row_scorers(task.dataset, row["row"], row[ROW_INDEX], taken, suite.path)
    except CaseError as exc:
        return exc


def _id_uses_prompt(env: jinja2.Environment, source: str) -> bool:
    """Whether the id template names the prompt itself (``"{{ prompt_id }}-{{ qid }}"``): then nothing is added."""
    if "{" not in source:
        return False
    try:
        return PROMPT_VARIABLE in meta.find_undeclared_variables(env.parse(source))
    except jinja2.TemplateSyntaxError:
        return False  # rendering the id reports it


def _variables(
    task: TaskSpec, suite: SuiteSpec, renderer: TemplateRenderer, layer: Mapping[str, Any]
) -> dict[str, Any]:
    """Layered in order: suite variables, grid values, dataset row, prompt id, then ``task.derived`` one by one."""
    variables: dict[str, Any] = {**suite.variables, **layer}
    for spec in task.derived:
        variables[spec.name] = renderer.evaluate(spec.source, variables, key=spec.key, line=spec.line)
    return variables


def fallback_id(task: TaskSpec) -> str:
    """The id of a task whose id template cannot be rendered: the id itself, or ``tasks-<index>``."""
    raw_id = task.id.source
    return safe_id(raw_id) if "{" not in raw_id else f"tasks-{task.index}"
