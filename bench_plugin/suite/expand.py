"""SuiteSpec -> CaseSpec[]: tasks x variants (matrix, dataset) x models x runs.

Pure and deterministic (YAML order, no sets, no environment), because every xdist worker expands
the same suite on its own and must arrive at the same items in the same order.
"""

from __future__ import annotations

import itertools
import re
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from bench_plugin.chat import Message
from bench_plugin.endpoints import PRESETS, ModelSpec
from bench_plugin.errors import CaseError, SuiteError
from bench_plugin.suite.agent.build import build_agent, is_agent
from bench_plugin.suite.agent.spec import AgentSpec
from bench_plugin.suite.build import adhoc_model, build_composite, build_scorers
from bench_plugin.suite.conversation.build import build_conversation, is_conversation
from bench_plugin.suite.conversation.spec import ConversationSpec
from bench_plugin.suite.datasets import load_dataset, row_variables
from bench_plugin.suite.loader import LoadedSuite, format_key_path
from bench_plugin.suite.spec import CaseSpec, ScorerSpec, SuiteSpec, TurnsSpec
from bench_plugin.suite.templates import TemplateRenderer
from bench_plugin.suite.turns import build_turns, has_turns

_UNSAFE_ID = re.compile(r"[^\w.:@+=,/-]+")


@dataclass(frozen=True)
class ExpandOptions:
    """``models``: names from --bench-models (suite names or provider:model); ``runs``: --bench-runs."""

    models: tuple[str, ...] | None = None
    runs: int | None = None


@dataclass(frozen=True)
class _Variant:
    task_id: str
    variables: Mapping[str, Any]
    problem: CaseError | None = None


def expand_suite(suite: SuiteSpec, loaded: LoadedSuite, options: ExpandOptions | None = None) -> list[CaseSpec]:
    """Every case of the suite, in YAML order: task, then variant, then model, then run.

    Raises:
        SuiteError: when two cases would get the same id (shown as a table with the fix).
    """
    options = options or ExpandOptions()
    renderer = TemplateRenderer(suite.root, suite.path)
    models = select_models(suite, options.models)
    cases: list[CaseSpec] = []
    for index, task in enumerate(suite.tasks):
        cases.extend(_expand_task(suite, loaded, renderer, index, task, models, options))
    _check_unique_ids(suite, loaded, cases)
    return [replace(case, index=i) for i, case in enumerate(cases)]


def select_models(suite: SuiteSpec, names: Sequence[str] | None) -> list[tuple[str, ModelSpec | None]]:
    """The (name, spec) pairs to run; spec is None for a model that cannot run (its cases fail).

    A name the suite does not declare is taken as ``provider:model-id``; names that are neither are
    left out here (the plugin reports names that matched no suite at all).
    """
    chosen = list(names) if names is not None else list(suite.default_models)
    selected: list[tuple[str, ModelSpec | None]] = []
    for name in chosen:
        if name in suite.models:
            selected.append((name, suite.models[name]))
        elif name in suite.model_problems:
            selected.append((name, None))
        else:
            model = adhoc_model(name, {**PRESETS, **suite.providers}, suite.model_defaults)
            if model is not None:
                selected.append((name, model))
    return selected


def _expand_task(
    suite: SuiteSpec,
    loaded: LoadedSuite,
    renderer: TemplateRenderer,
    index: int,
    task: Mapping[str, Any],
    models: list[tuple[str, ModelSpec | None]],
    options: ExpandOptions,
) -> Iterator[CaseSpec]:
    base = ("tasks", index)
    line = loaded.lines.line_of(base)
    reserved = tuple(scorer.name for scorer in suite.scorers)
    scorers = _merge_scorers(suite.scorers, build_scorers(loaded, task.get("scorers", []), (*base, "scorers"), reserved))
    composite = build_composite(loaded, task["composite"], (*base, "composite")) if "composite" in task else suite.composite
    threshold = float(task.get("pass_threshold", suite.pass_threshold))
    runs = options.runs or int(task.get("runs", suite.runs))
    wanted = task.get("models")
    for unknown in [name for name in wanted or [] if name not in suite.models and name not in suite.model_problems]:
        key = (*base, "models")
        yield _unknown_task_model(suite, loaded, task, index, unknown, key, scorers, composite, threshold)
    for variant in _variants(suite, loaded, renderer, index, task):
        try:
            tags = _tags(renderer, task, variant, loaded, base)
        except CaseError as exc:
            tags, variant = (), replace(variant, problem=variant.problem or exc)
        for model_name, model in models:
            if wanted is not None and model_name not in wanted:
                continue
            problem = variant.problem or (suite.model_problems.get(model_name) if model is None else None)
            messages: tuple[Message, ...] = ()
            turns: TurnsSpec | None = None
            conversation: ConversationSpec | None = None
            agent: AgentSpec | None = None
            if problem is None and model is not None:
                try:
                    if is_conversation(task):  # its participants' prompts are its prompt
                        selected = [name for name, _ in models if wanted is None or name in wanted]
                        conversation = build_conversation(task, base, loaded, renderer, _scope(variant, model), suite, model, selected)
                    else:
                        messages = _messages(suite, loaded, renderer, base, task, variant, model)
                    if has_turns(task):
                        scope = _scope(variant, model)
                        turns = build_turns(task, base, loaded, renderer, scope)
                    if is_agent(task):
                        agent = build_agent(task, base, loaded, renderer)
                except CaseError as exc:
                    problem = exc
            for run in range(1, (1 if problem else runs) + 1):
                case = CaseSpec(
                    suite=suite.name,
                    path=suite.path,
                    task=variant.task_id,
                    model_name=model_name,
                    model=model,
                    run=run,
                    messages=messages,
                    scorers=scorers,
                    composite=composite,
                    pass_threshold=threshold,
                    variables=variant.variables,
                    tags=tags,
                    judges=suite.judges,
                    models=suite.models,
                    templates=renderer,
                    suite_dir=suite.root,
                    line=line,
                    problem=problem,
                    engine=_engine(task),
                    turns=turns,
                    conversation=conversation,
                    agent=agent,
                )
                yield _with_scoring_checked(case, suite)


def _engine(task: Mapping[str, Any]) -> str:
    if is_conversation(task):
        return "conversation"
    if is_agent(task):
        return "agent"
    return "turns" if has_turns(task) else "single_turn"


def _variants(
    suite: SuiteSpec, loaded: LoadedSuite, renderer: TemplateRenderer, index: int, task: Mapping[str, Any]
) -> Iterator[_Variant]:
    """One variant per matrix combination (suite grid x task grid) and dataset row."""
    base = ("tasks", index)
    raw_id = str(task["id"])
    grid = {**suite.matrix, **task.get("matrix", {})}
    combos = [dict(zip(grid, values)) for values in itertools.product(*grid.values())] if grid else [{}]
    rows: list[dict[str, Any]] = [{}]
    if "dataset" in task:
        try:
            rows = _dataset_rows(suite, renderer, task["dataset"], loaded, base)
        except CaseError as exc:
            yield _Variant(_fallback_id(raw_id, index), {}, exc.located(suite.path, loaded.lines.line_of((*base, "dataset")), format_key_path((*base, "dataset"))))
            return
    for number, (combo, row) in enumerate(itertools.product(combos, rows), 1):
        try:
            variables = _variables(suite, loaded, renderer, base, task, combo, row)
            id_key = (*base, "id")
            task_id = _safe_id(renderer.render(raw_id, variables, key=format_key_path(id_key), line=loaded.lines.line_of(id_key)))
        except CaseError as exc:
            yield _Variant(f"{_fallback_id(raw_id, index)}-{number}", {**combo, **row}, exc)
            continue
        yield _Variant(task_id, variables)


def _variables(
    suite: SuiteSpec,
    loaded: LoadedSuite,
    renderer: TemplateRenderer,
    base: tuple[Any, ...],
    task: Mapping[str, Any],
    combo: Mapping[str, Any],
    row: Mapping[str, Any],
) -> dict[str, Any]:
    """Layered in order: suite variables, grid values, dataset row, suite derived, task vars, task derived."""
    variables: dict[str, Any] = {**suite.variables, **combo, **row}
    layers = (
        (suite.derived, ("derived",)),
        (task.get("vars", {}), (*base, "vars")),
        (task.get("derived", {}), (*base, "derived")),
    )
    for mapping, key_base in layers:
        for name, source in mapping.items():
            key = (*key_base, name)
            variables[name] = renderer.evaluate(source, variables, key=format_key_path(key), line=loaded.lines.line_of(key))
    return variables


def _dataset_rows(
    suite: SuiteSpec, renderer: TemplateRenderer, dataset: Mapping[str, Any], loaded: LoadedSuite, base: tuple[Any, ...]
) -> list[dict[str, Any]]:
    rows = load_dataset(suite.data_dir, dataset)
    selected: list[dict[str, Any]] = []
    key = (*base, "dataset", "filter")
    for row in rows:
        variables = row_variables(row, dataset.get("fields"))
        if "filter" in dataset:
            scope = {**suite.variables, **variables}
            if not renderer.expression(dataset["filter"], scope, key=format_key_path(key), line=loaded.lines.line_of(key)):
                continue
        selected.append(variables)
        if len(selected) == dataset.get("limit", -1):
            break
    return selected


def _messages(
    suite: SuiteSpec,
    loaded: LoadedSuite,
    renderer: TemplateRenderer,
    base: tuple[Any, ...],
    task: Mapping[str, Any],
    variant: _Variant,
    model: ModelSpec,
) -> tuple[Message, ...]:
    """The rendered prompt; templates also see ``model`` (name, id, label) and ``task_id``.

    For a task with scripted turns (``turns:``/``phases:``) only the system prompt: the engine renders the
    turns as the conversation reaches them.
    """
    scope = _scope(variant, model)

    def text(inline_key: str, file_key: str, entry: Mapping[str, Any], path: tuple[Any, ...]) -> str | None:
        if file_key in entry:
            key = (*path, file_key)
            return renderer.render_file(entry[file_key], scope, key=format_key_path(key), line=loaded.lines.line_of(key))
        if inline_key in entry:
            key = (*path, inline_key)
            return renderer.render(entry[inline_key], scope, key=format_key_path(key), line=loaded.lines.line_of(key))
        return None

    if "messages" in task:
        out = []
        for i, entry in enumerate(task["messages"]):
            content = text("content", "content_file", entry, (*base, "messages", i))
            out.append(Message(role=entry["role"], content=content or "", name=entry.get("name")))
        return tuple(out)
    system = text("system", "system_file", task, base)
    if system is None and suite.system is not None:
        system = renderer.render(suite.system, scope, key="system", line=loaded.lines.line_of(("system",)))
    head = (Message("system", system),) if system else ()
    if has_turns(task):
        return head
    user = text("prompt", "prompt_file", task, base) or ""
    return (*head, Message("user", user))


def _scope(variant: _Variant, model: ModelSpec) -> dict[str, Any]:
    return {**variant.variables, "model": model.template_vars(),
            "task_id": variant.task_id}


def _tags(
    renderer: TemplateRenderer, task: Mapping[str, Any], variant: _Variant, loaded: LoadedSuite, base: tuple[Any, ...]
) -> tuple[str, ...]:
    """List tags as they are; mapping tags as ``key=value`` (values may be templates)."""
    raw = task.get("tags", [])
    if variant.problem:
        return ()
    key = format_key_path((*base, "tags"))
    line = loaded.lines.line_of((*base, "tags"))

    def text(value: Any) -> str:
        if isinstance(value, bool):
            return "true" if value else "false"
        return renderer.render(str(value), variant.variables, key=key, line=line)

    if isinstance(raw, Mapping):
        return tuple(f"{k}={text(v)}" for k, v in raw.items())
    return tuple(text(t) for t in raw)


def _unknown_task_model(
    suite: SuiteSpec,
    loaded: LoadedSuite,
    task: Mapping[str, Any],
    index: int,
    name: str,
    key: tuple[Any, ...],
    scorers: tuple[ScorerSpec, ...],
    composite: Any,
    threshold: float,
) -> CaseSpec:
    """A case that fails with the reason, rather than a typo in ``models:`` silently running nothing."""
    problem = CaseError(
        f"unknown model '{name}'",
        path=suite.path,
        line=loaded.lines.line_of(key),
        key=format_key_path(key),
        hint=f"models of this suite: {', '.join(suite.models) or 'none'}",
    )
    return CaseSpec(
        suite=suite.name, path=suite.path, task=_fallback_id(str(task["id"]), index), model_name=name, model=None,
        run=1, messages=(), scorers=scorers, composite=composite, pass_threshold=threshold, variables={},
        line=loaded.lines.line_of(("tasks", index)), problem=problem,
    )


def _merge_scorers(suite_scorers: tuple[ScorerSpec, ...], task_scorers: tuple[ScorerSpec, ...]) -> tuple[ScorerSpec, ...]:
    """Suite scorers then task scorers; a task scorer with a suite scorer's name replaces it in place."""
    by_name = {s.name: s for s in task_scorers}
    merged = [by_name.pop(s.name, s) for s in suite_scorers]
    return tuple(merged + [s for s in task_scorers if s.name in by_name])


def _with_scoring_checked(case: CaseSpec, suite: SuiteSpec) -> CaseSpec:
    if case.problem is not None:
        return case
    from bench_plugin.scoring.score import validate_case_scoring

    for scorer in case.scorers:
        judge = scorer.options.get("judge")
        if scorer.type == "llm_judge" and isinstance(judge, str) and judge in suite.judge_problems:
            return replace(case, problem=suite.judge_problems[judge])
    try:
        validate_case_scoring(case)
    except CaseError as exc:
        return replace(case, problem=exc)
    return case


def _safe_id(text: str) -> str:
    return _UNSAFE_ID.sub("-", text.strip()).strip("-") or "task"


def _fallback_id(raw_id: str, index: int) -> str:
    return _safe_id(raw_id) if "{" not in raw_id else f"tasks-{index}"


def _check_unique_ids(suite: SuiteSpec, loaded: LoadedSuite, cases: list[CaseSpec]) -> None:
    seen: dict[str, CaseSpec] = {}
    clashes: list[tuple[CaseSpec, CaseSpec]] = []
    for case in cases:
        first = seen.setdefault(case.case_id, case)
        if first is not case:
            clashes.append((first, case))
    if not clashes:
        return
    width = max(len(b.case_id) for _, b in clashes)
    rows = [
        f"  {b.case_id:<{width}}  line {(a.line or 0) + 1} and line {(b.line or 0) + 1}" for a, b in clashes[:10]
    ]
    more = [f"  ... and {len(clashes) - 10} more"] if len(clashes) > 10 else []
    raise SuiteError(
        f"{len(clashes)} case id(s) are not unique:\n" + "\n".join(rows + more),
        path=suite.path,
        line=clashes[0][1].line,
        key="tasks",
        hint="give each task a distinct id; with a matrix or dataset put a varying field in the id, "
        "e.g. id: \"landlord-{{ amount }}-{{ category }}\"",
    )
