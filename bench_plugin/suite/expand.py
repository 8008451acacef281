"""SuiteSpec -> CaseSpec[]: tasks x variants (matrix, dataset) x models x runs."""

from __future__ import annotations

import itertools
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field, replace
from typing import TYPE_CHECKING, Any, TypeVar

from bench_plugin.core.chat import Message, ResponseSchema, ToolDefinition
from bench_plugin.core.endpoints import PRESETS, ModelSpec
from bench_plugin.core.errors import CaseError, all_of
from bench_plugin.suite.agent.sandbox_choice import runs_programs
from bench_plugin.suite.agent.spec import AgentSpec
from bench_plugin.suite.load import LoadShape
from bench_plugin.suite.media import Where, refuse_audio, render_media, with_parts
from bench_plugin.suite.messages import render_messages
from bench_plugin.suite.models import adhoc_model
from bench_plugin.suite.scorer_values import render_scorer_values
from bench_plugin.suite.sources import TemplateSpec
from bench_plugin.suite.spec import CaseSpec, PromptSpec, ScorerSpec, SuiteSpec, TaskSpec, TurnsSpec
from bench_plugin.suite.templates import TemplateRenderer
from bench_plugin.suite.thresholds import render_threshold
from bench_plugin.suite.turns import build_turns
from bench_plugin.suite.unique_ids import check_unique_ids
from bench_plugin.suite.variants import Variant, fallback_id, task_variants

if TYPE_CHECKING:
    from bench_plugin.suite.conversation.spec import ConversationSpec

_Part = TypeVar("_Part")


@dataclass(frozen=True)
class ExpandOptions:
    """``models``: names from --bench-models (suite names or provider:model); ``runs``: --bench-runs.

    ``model_args`` (--bench-model-arg) are params for the models the cases run, over the suite's; judges keep theirs.
    ``load`` (--bench-load) runs the cases once per load step, over the suite's ``load:``.
    """

    models: tuple[str, ...] | None = None
    runs: int | None = None
    model_args: tuple[tuple[str, Any], ...] = ()
    load: LoadShape | None = None


@dataclass(frozen=True)
class _Parts:
    """What a case runs, rendered for its variant and model."""

    messages: tuple[Message, ...] = ()
    turns: TurnsSpec | None = None
    conversation: ConversationSpec | None = None
    agent: AgentSpec | None = None
    output_schema: ResponseSchema | None = None
    functions: tuple[ToolDefinition, ...] = ()


def expand_suite(suite: SuiteSpec, options: ExpandOptions | None = None) -> list[CaseSpec]:
    """Every case of the suite, in YAML order: task, then variant, then model, then run.

    Pure and deterministic (YAML order, no sets, no environment), because every xdist worker expands the same suite
    on its own and must arrive at the same items in the same order. Every task was built once (``suite/tasks.py``);
    here its templates are rendered for each variant and model.

    Raises:
        SuiteError: when two cases would get the same id (shown as a table with the fix: ``unique_ids.py``).
    """
    options = options or ExpandOptions()
    renderer = TemplateRenderer(suite.root, suite.path, allowed=suite.folders.allowed, media_limits=suite.media_limits)
    models = [(name, _with_args(model, options.model_args)) for name, model in select_models(suite, options.models)]
    cases: list[CaseSpec] = []
    indexes = itertools.count()  # each case's place in the list, given as it is made (not by copying each case)
    for task in suite.tasks:
        cases.extend(_expand_task(suite, renderer, task, models, options, indexes))
    check_unique_ids(suite, cases, renderer)
    shape = options.load or suite.load
    return cases if shape is None else in_load_steps(cases, shape)


def in_load_steps(cases: Sequence[CaseSpec], shape: LoadShape) -> list[CaseSpec]:
    """Every case once per step of ``shape``, step after step (a step's cases are its own items, in order)."""
    return [replace(case, load=step, index=number)
            for number, (step, case) in enumerate((step, case) for step in shape.steps for case in cases)]


def select_models(suite: SuiteSpec, names: Sequence[str] | None) -> list[tuple[str, ModelSpec | None]]:
    """The (name, spec) pairs to run; spec is None for a model that cannot run (its cases fail).

    A name the suite does not declare is taken as ``provider:model-id`` (None when its provider cannot
    be used: see ``model_problem``); names that are neither are left out here (the plugin reports names
    that matched no suite at all).
    """
    chosen = list(names) if names is not None else list(suite.default_models)
    return [pair for name in chosen for pair in _selected(suite, name)]


def _selected(suite: SuiteSpec, name: str) -> list[tuple[str, ModelSpec | None]]:
    """``[(name, spec)]``; ``[(name, None)]`` for a model that cannot run; ``[]`` for a name that is no model."""
    if name in suite.models:
        return [(name, suite.models[name])]
    if name in suite.model_problems:
        return [(name, None)]
    try:
        model = adhoc_model(name, {**PRESETS, **suite.providers}, suite.model_defaults, suite.provider_problems)
    except CaseError:
        return [(name, None)]
    return [(name, model)] if model is not None else []


def _with_args(model: ModelSpec | None, args: tuple[tuple[str, Any], ...]) -> ModelSpec | None:
    if model is None or not args:
        return model
    return replace(model, params={**model.params, **dict(args)})


def model_problem(suite: SuiteSpec, name: str) -> CaseError | None:
    """Why the model ``name`` (a suite name or ``provider:model-id``) cannot run, if it cannot."""
    return suite.model_problems.get(name) or suite.provider_problems.get(name.partition(":")[0])


def _expand_task(
    suite: SuiteSpec,
    renderer: TemplateRenderer,
    task: TaskSpec,
    models: list[tuple[str, ModelSpec | None]],
    options: ExpandOptions,
    indexes: Iterator[int],
) -> Iterator[CaseSpec]:
    for unknown in _undeclared_models(suite, task):
        yield _unknown_task_model(suite, task, unknown, next(indexes))
    own = _own_models(task, models)
    yield from _TaskCases(suite, renderer, task, own, options.runs or task.runs, indexes).cases()


def _undeclared_models(suite: SuiteSpec, task: TaskSpec) -> list[str]:
    """The names in the task's ``models:`` that the suite does not declare."""
    return [name for name in task.models or () if name not in suite.models and name not in suite.model_problems]


def _own_models(task: TaskSpec, models: list[tuple[str, ModelSpec | None]]) -> list[tuple[str, ModelSpec | None]]:
    """Of the models selected for the run, those the task runs (all, when its ``models:`` is not given)."""
    wanted = task.models
    return [(name, model) for name, model in models if wanted is None or name in wanted]


@dataclass(frozen=True)
class _TaskCases:
    """The cases of one task: its variants x the models it runs x its runs."""

    suite: SuiteSpec
    renderer: TemplateRenderer
    task: TaskSpec
    models: list[tuple[str, ModelSpec | None]]  # the task's own, in the order they run
    runs: int
    indexes: Iterator[int]

    def cases(self) -> Iterator[CaseSpec]:
        for variant in task_variants(self.task, self.suite, self.renderer):
            scoring, scoring_problem = _scoring(self.suite, self.renderer, self.task, variant)
            self._check_sandbox_consent(scoring)
            for model_name, model in self.models:
                yield from self._runs(variant, scoring, model_name, model, variant.problem or scoring_problem)

    def _check_sandbox_consent(self, scoring: _Scoring) -> None:
        """Raise the suite's refused ``sandbox: none`` when a scorer of a task without tools would run programs.

        Raises:
            SuiteError: at the suite's ``sandbox:`` key (the whole file stops, as for an agent task).
        """
        refusal = self.suite.sandbox_refusal
        if refusal is not None and self.task.agent is None and runs_programs(tuple(s.type for s in scoring.scorers)):
            raise refusal

    def _runs(
        self, variant: Variant, scoring: _Scoring, model_name: str, model: ModelSpec | None, problem: CaseError | None
    ) -> Iterator[CaseSpec]:
        """The runs of one variant on one model; a case with a problem runs once (it fails with the problem)."""
        parts, problem = self._parts(variant, model_name, model, problem)
        for run in range(1, (1 if problem else self.runs) + 1):
            case = self._case(variant, scoring, parts, model_name, model, problem, run)
            yield _with_judges_checked(case, self.suite)

    def _parts(
        self, variant: Variant, model_name: str, model: ModelSpec | None, problem: CaseError | None
    ) -> tuple[_Parts, CaseError | None]:
        if problem is None and model is None:
            problem = model_problem(self.suite, model_name)
        if model is None or variant.problem is not None:  # a row that did not render: neither can its parts
            return _Parts(), problem
        selected = [name for name, _ in self.models]
        parts, built = _parts(self.suite, self.renderer, self.task, variant, model, selected)
        # a scorer's template and the prompt's, both wrong: the case says both at once
        found = sorted((each for each in (problem, built) if each is not None), key=lambda each: each.line or 0)
        return parts, all_of(found)

    def _case(
        self,
        variant: Variant,
        scoring: _Scoring,
        parts: _Parts,
        model_name: str,
        model: ModelSpec | None,
        problem: CaseError | None,
        run: int,
    ) -> CaseSpec:
        suite, task = self.suite, self.task
        return CaseSpec(
            suite=suite.name,
            path=suite.path,
            task=variant.task_id,
            model_name=model_name,
            model=model,
            run=run,
            messages=parts.messages,
            scorers=scoring.scorers,
            composite=task.composite,
            pass_threshold=scoring.pass_threshold,
            variables=variant.variables,
            tags=variant.tags,
            judges=suite.judges,
            models=suite.models,
            templates=self.renderer,
            suite_dir=suite.root,
            line=task.line,
            problem=problem,
            engine=task.engine,
            turns=parts.turns,
            conversation=parts.conversation,
            agent=parts.agent,
            output_schema=parts.output_schema,
            functions=parts.functions,
            task_index=task.index,
            scorer_vars=scoring.variables,
            cluster=variant.cluster or variant.task_id,
            index=next(self.indexes),
            sandbox=parts.agent.sandbox if parts.agent is not None else suite.sandbox,
            scoring_rendered=scoring.rendered,
        )


@dataclass(frozen=True)
class _Scoring:
    """How a variant's cases are scored: the task's scorers and the row's, per-case values rendered."""

    scorers: tuple[ScorerSpec, ...]
    pass_threshold: float | None
    variables: Mapping[str, Mapping[str, Any]] = field(default_factory=dict)
    rendered: bool = True  # False: the task's scorers as written (a template of the row or the scorers failed)


def _scoring(
    suite: SuiteSpec, renderer: TemplateRenderer, task: TaskSpec, variant: Variant
) -> tuple[_Scoring, CaseError | None]:
    """The variant's scorers (a row's own after the task's), their vars and thresholds, and its pass threshold.

    Returns:
        The scoring, and the problem of a template that does not render (the scoring is then the task's, unrendered).
    """
    scorers = (*task.scorers, *variant.scorers)
    fallback = _Scoring(scorers, _fixed_threshold(task.pass_threshold), rendered=False)
    if variant.problem is not None:
        return fallback, None
    try:
        values = render_scorer_values(renderer, scorers, variant.variables, suite.path)
        threshold = task.pass_threshold
        if isinstance(threshold, TemplateSpec):
            threshold = render_threshold(renderer, threshold.source, dict(variant.variables), path=suite.path,
                                         key=threshold.key, line=threshold.line)
    except CaseError as exc:
        return fallback, exc
    return _Scoring(values.scorers, threshold, values.variables), None


def _fixed_threshold(threshold: float | TemplateSpec | None) -> float | None:
    """A task's threshold for a case that does not run (a template's value is unknown: the default rule)."""
    return None if isinstance(threshold, TemplateSpec) else threshold


def _parts(
    suite: SuiteSpec,
    renderer: TemplateRenderer,
    task: TaskSpec,
    variant: Variant,
    model: ModelSpec,
    selected: list[str],
) -> tuple[_Parts, CaseError | None]:
    """The prompt (or conversation), the scripted turns and the agent of one case, in that order.

    Returns:
        The parts, and the problem of the first one that cannot be built (the parts before it are
        kept: an invalid case's record still shows its prompt).
    """
    scope = {**variant.variables, "model": model.template_vars(), "task_id": variant.task_id}
    parts = _Parts()
    try:
        if task.conversation is not None:  # its participants' prompts are its prompt
            _refuse_media(task, suite.path)
            # start-up: the conversation room is imported only for suites that have one
            from bench_plugin.suite.conversation.build import build_conversation

            parts = replace(parts, conversation=build_conversation(task, renderer, scope, suite, model, selected))
        else:
            parts = replace(parts, messages=_messages(renderer, task, scope, variant.prompt, suite.path))
        if task.has_turns:
            parts = replace(parts, turns=build_turns(task, renderer, scope))
        refuse_audio(model, _sent(parts), Where(suite.path, None, task.line))
        for built in (task.agent, task.output_schema, task.functions):
            if isinstance(built, CaseError):
                raise built
        return replace(parts, agent=_built(task.agent), output_schema=_built(task.output_schema),
                       functions=_built(task.functions) or ()), None
    except CaseError as exc:
        return parts, exc


def _built(part: _Part | CaseError | None) -> _Part | None:
    """A part of the task built once, which ``_parts`` has checked is no problem."""
    assert not isinstance(part, CaseError), "_parts raises a part's problem before it is used"
    return part


def _messages(
    renderer: TemplateRenderer, task: TaskSpec, scope: dict[str, Any], prompt: PromptSpec | None, path: str
) -> tuple[Message, ...]:
    """The rendered prompt (the variant's prompt, else the task's); templates also see ``model`` and ``task_id``.

    For a task with scripted turns (``turns:``/``phases:``) only the system prompt: the engine renders the
    turns as the conversation reaches them. ``messages`` (a list, or a template giving one from data)
    are sent as they are: the suite's ``system:`` is not added, the task's own is (``_with_system``).
    """
    messages = prompt.messages if prompt is not None else task.messages
    # images: and audio: go with the last user message (a turns task's with its first turn: suite/turns.py)
    media = () if task.has_turns else render_media(renderer, task.media, scope, path)
    if messages is not None:
        rendered = render_messages(renderer, messages, scope, path)
        own_system = task.system if prompt is None else None  # tasks.py keeps only a messages task's own
        return with_parts(_with_system(own_system, rendered, renderer, scope), media)
    head = _system(renderer, task, scope, prompt)
    if task.has_turns:
        return head
    user_spec = prompt.prompt if prompt is not None else task.prompt
    user = user_spec.render(renderer, scope) if user_spec is not None else ""
    return (*head, Message("user", user, parts=media))


def _refuse_media(task: TaskSpec, path: str) -> None:
    """Raises: CaseError at a conversation task's ``images:`` (or ``audio:``): no one there would be sent them."""
    if task.media:
        first = task.media[0]
        raise CaseError("a conversation between models takes no images: or audio:", path=path, line=first.line,
                        key=first.key, hint="give them to a task with prompt:, messages: or turns:")


def _sent(parts: _Parts) -> list[Message]:
    """The messages a case sends that the suite wrote: its prompt and its scripted turns' media."""
    turns = parts.turns.phases if parts.turns is not None else ()
    return [*parts.messages, *(Message("user", "", parts=turn.media) for phase in turns for turn in phase.turns)]


def _system(
    renderer: TemplateRenderer, task: TaskSpec, scope: dict[str, Any], prompt: PromptSpec | None
) -> tuple[Message, ...]:
    """The system message (the variant's system prompt, else the task's), or none when it is empty."""
    system_spec = prompt.system if prompt is not None and prompt.system is not None else task.system
    system = system_spec.render(renderer, scope) if system_spec is not None else None
    return (Message("system", system),) if system else ()


def _with_system(
    spec: TemplateSpec | None, messages: tuple[Message, ...], renderer: TemplateRenderer, scope: dict[str, Any]
) -> tuple[Message, ...]:
    """The messages with a task's ``system:`` after the system messages they start with.

    That is where inspect_ai's ``system_message`` inserts it: a ported task keeps its system prompt.
    """
    system = spec.render(renderer, scope) if spec is not None else ""
    if not system:
        return messages
    at = next((i for i, message in enumerate(messages) if message.role != "system"), len(messages))
    return (*messages[:at], Message("system", system), *messages[at:])


def _unknown_task_model(suite: SuiteSpec, task: TaskSpec, name: str, index: int) -> CaseSpec:
    """A case that fails with the reason, rather than a typo in ``models:`` silently running nothing."""
    problem = CaseError(
        f"unknown model '{name}'",
        path=suite.path,
        line=task.models_line,
        key=task.models_key,
        hint=f"models of this suite: {', '.join(suite.models) or 'none'}",
    )
    return CaseSpec(
        suite=suite.name, path=suite.path, task=fallback_id(task), model_name=name, model=None,
        run=1, messages=(), scorers=task.scorers, composite=task.composite,
        pass_threshold=_fixed_threshold(task.pass_threshold),
        variables={}, line=task.line, problem=problem, task_index=task.index, index=index,
    )


def _with_judges_checked(case: CaseSpec, suite: SuiteSpec) -> CaseSpec:
    """A case whose judge scorer names a judge that cannot run fails with that judge's problem."""
    if case.problem is not None:
        return case
    for scorer in case.scorers:
        judge = scorer.options.get("judge")
        if scorer.type == "llm_judge" and isinstance(judge, str) and judge in suite.judge_problems:
            return replace(case, problem=suite.judge_problems[judge])
    return case
