"""The suite's ``tasks:`` -> TaskSpecs, built once so that expansion only multiplies and renders."""

from __future__ import annotations

import functools
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from bench_plugin.core.errors import CaseError, Problems
from bench_plugin.suite.agent.spec import AgentSpec, SandboxOverride
from bench_plugin.suite.clusters import cluster_template
from bench_plugin.suite.datasets import DatasetSpec
from bench_plugin.suite.function_tools import build_functions, has_functions
from bench_plugin.suite.loader import KeyPath, LoadedSuite, format_key_path
from bench_plugin.suite.messages import build_media, build_messages
from bench_plugin.suite.output_schema import build_output_schema
from bench_plugin.suite.paths import SuiteFolders
from bench_plugin.suite.prompts import OWN_PROMPT_KEYS, build_prompts
from bench_plugin.suite.scorers import build_composite, build_scorers, merge_scorers
from bench_plugin.suite.sources import Located, TemplateSpec
from bench_plugin.suite.spec import CompositeSpec, MessageSpec, PromptSpec, ScorerSpec, TagSpec, TaskSpec, VariableSpec
from bench_plugin.suite.templates import TemplateRenderer
from bench_plugin.suite.thresholds import written_threshold


def build_tasks(
    loaded: LoadedSuite, renderer: TemplateRenderer, folders: SuiteFolders | None = None,
    sandbox: SandboxOverride | None = None,
) -> tuple[TaskSpec, ...]:
    """Every task of a schema-valid suite, with the suite's settings folded in.

    Args:
        loaded: the suite, for its data and line numbers.
        renderer: the suite's template renderer, to check an agent task's templates.
        folders: where the suite may read files (an agent's workspace copies); default its own folder.
        sandbox: the command line's sandbox choice, over the suite's (agent tasks).

    Returns:
        One TaskSpec per ``tasks:`` entry, in YAML order. A problem that only some cases meet
        (a template, an agent's tools) is found later, or kept in the spec, so that those cases
        fail alone.
    """
    folders = folders or SuiteFolders.of(loaded.path.parent)
    builder = _TaskBuilder(loaded, renderer, folders, sandbox, _SuiteWide.of(loaded, renderer))
    problems = Problems()  # every task's mistakes at once, not one per try
    tasks = [problems.run(functools.partial(builder.task, index, entry))
             for index, entry in enumerate(loaded.data["tasks"])]
    problems.raise_found()
    return tuple(task for task in tasks if task is not None)


@dataclass(frozen=True)
class _SuiteWide:
    """What the suite sets for every task: scorers, composite, system prompt, derived variables, prompt variants."""

    scorers: tuple[ScorerSpec, ...]
    composite: CompositeSpec
    system: TemplateSpec | None
    derived: tuple[VariableSpec, ...]
    prompts: tuple[PromptSpec, ...] | None

    @classmethod
    def of(cls, loaded: LoadedSuite, renderer: TemplateRenderer) -> _SuiteWide:
        data = loaded.data
        return cls(
            scorers=build_scorers(loaded, data.get("scorers", []), ("scorers",)),
            composite=build_composite(loaded, data.get("composite"), ("composite",)),
            system=_template(loaded, data["system"], ("system",)) if data.get("system") is not None else None,
            derived=_variables(loaded, data.get("derived", {}), ("derived",)),
            prompts=build_prompts(loaded, renderer, data["prompts"], ("prompts",)) if "prompts" in data else None,
        )


@dataclass(frozen=True)
class _TaskBuilder:
    """Builds the TaskSpec of each ``tasks:`` entry, with the suite's settings folded in."""

    loaded: LoadedSuite
    renderer: TemplateRenderer
    folders: SuiteFolders
    sandbox: SandboxOverride | None
    suite: _SuiteWide

    def task(self, index: int, entry: Mapping[str, Any]) -> TaskSpec:
        loaded, data = self.loaded, self.loaded.data
        base: KeyPath = ("tasks", index)
        return TaskSpec(
            index=index,
            id=_template(loaded, str(entry["id"]), (*base, "id")),
            line=loaded.lines.line_of(base),
            engine=_engine(entry),
            scorers=self._scorers(entry, base),
            composite=self._composite(entry, base),
            pass_threshold=_pass_threshold(loaded, entry, base),
            runs=int(entry.get("runs", data.get("runs", 1))),
            tags=_tags(loaded, entry.get("tags", []), (*base, "tags")),
            grid={**data.get("matrix", {}), **entry.get("matrix", {})},
            derived=(
                *self.suite.derived,
                *_variables(loaded, entry.get("vars", {}), (*base, "vars")),
                *_variables(loaded, entry.get("derived", {}), (*base, "derived")),
            ),
            dataset=_dataset(loaded, entry, base),
            # beside messages: only the task's own (sent after their system messages, expand.py)
            system=_text(loaded, entry, base, "system", "system_file")
            or (self.suite.system if "messages" not in entry else None),
            prompt=_text(loaded, entry, base, "prompt", "prompt_file"),
            messages=self._messages(entry, base),
            prompts=self._prompts(entry, base),
            turns=self._kept(entry, base, "turns"),
            phases=self._kept(entry, base, "phases"),
            conversation=self._kept(entry, base, "conversation"),
            agent=_agent(loaded, self.renderer, self.folders, entry, base, self.sandbox),
            models=tuple(entry["models"]) if "models" in entry else None,
            models_key=format_key_path((*base, "models")),
            models_line=loaded.lines.line_of((*base, "models")),
            cluster=cluster_template(loaded, entry, base),
            media=build_media(loaded, entry, base),
            output_schema=build_output_schema(loaded, self.folders, entry, base),
            functions=build_functions(loaded, entry, base),
        )

    def _scorers(self, entry: Mapping[str, Any], base: KeyPath) -> tuple[ScorerSpec, ...]:
        """The suite's scorers, then the task's; a task scorer replaces the suite scorer it names explicitly."""
        reserved = tuple(scorer.name for scorer in self.suite.scorers)
        own = build_scorers(self.loaded, entry.get("scorers", []), (*base, "scorers"), reserved)
        return merge_scorers(self.suite.scorers, own)

    def _composite(self, entry: Mapping[str, Any], base: KeyPath) -> CompositeSpec:
        if "composite" not in entry:
            return self.suite.composite
        return build_composite(self.loaded, entry["composite"], (*base, "composite"))

    def _messages(self, entry: Mapping[str, Any], base: KeyPath) -> tuple[MessageSpec, ...] | TemplateSpec | None:
        if "messages" not in entry:
            return None
        return build_messages(self.loaded, entry["messages"], (*base, "messages"))

    def _prompts(self, entry: Mapping[str, Any], base: KeyPath) -> tuple[PromptSpec, ...] | None:
        """The task's own prompt variants; else the suite's, unless the task writes its own prompt."""
        if "prompts" in entry:
            return build_prompts(self.loaded, self.renderer, entry["prompts"], (*base, "prompts"))
        return None if any(key in entry for key in OWN_PROMPT_KEYS) else self.suite.prompts

    def _kept(self, entry: Mapping[str, Any], base: KeyPath, key: str) -> Located | None:
        """A part kept as written, with where it is (built per case, from the case's variables)."""
        return Located.take(self.loaded, (*base, key), entry[key]) if key in entry else None


def _pass_threshold(loaded: LoadedSuite, entry: Mapping[str, Any], base: KeyPath) -> float | TemplateSpec | None:
    """The task's ``pass_threshold``, else the suite's; None when neither sets one (the default pass rule).

    A template (``"{{ threshold }}"``, a dataset row's threshold) is rendered per case at expansion.

    Raises:
        SuiteError: for text that is not a template.
    """
    path: KeyPath = (*base, "pass_threshold") if "pass_threshold" in entry else ("pass_threshold",)
    key, line = format_key_path(path), loaded.lines.line_of(path)
    found = written_threshold(entry.get("pass_threshold", loaded.data.get("pass_threshold")),
                              path=loaded.display_path, key=key, line=line)
    return TemplateSpec(found, key=key, line=line) if isinstance(found, str) else found


def _engine(entry: Mapping[str, Any]) -> str:
    """The engine the task names (``engine:``), else the built-in its keys choose.

    Whether a named engine exists is checked later, with the catalog of the suite's folder.
    """
    if "engine" in entry:
        return str(entry["engine"])
    if "conversation" in entry:
        return "conversation"
    if has_functions(entry):  # declared only: one reply, whose tool calls are the answer
        return "single_turn"
    if "tools" in entry:
        return "agent"
    return "turns" if "turns" in entry or "phases" in entry else "single_turn"


def _template(loaded: LoadedSuite, source: str, path: KeyPath, *, from_file: bool = False) -> TemplateSpec:
    return TemplateSpec(source, from_file=from_file, key=format_key_path(path), line=loaded.lines.line_of(path))


def _text(loaded: LoadedSuite, entry: Mapping[str, Any], base: KeyPath, inline: str, file: str) -> TemplateSpec | None:
    """A text given inline or as a template file (the file wins when both are written)."""
    if file in entry:
        return _template(loaded, entry[file], (*base, file), from_file=True)
    if inline in entry:
        return _template(loaded, entry[inline], (*base, inline))
    return None


def _variables(loaded: LoadedSuite, entries: Mapping[str, Any], base: KeyPath) -> tuple[VariableSpec, ...]:
    return tuple(
        VariableSpec(name, source, format_key_path((*base, name)), loaded.lines.line_of((*base, name)))
        for name, source in entries.items()
    )


def _tags(loaded: LoadedSuite, raw: Any, path: KeyPath) -> tuple[TagSpec, ...]:
    """List tags as they are, mapping tags as ``key=value``; values are templates, booleans literal."""
    key, line = format_key_path(path), loaded.lines.line_of(path)

    def value(item: Any) -> TemplateSpec:
        if isinstance(item, bool):
            return TemplateSpec("true" if item else "false", literal=True, key=key, line=line)
        return TemplateSpec(str(item), key=key, line=line)

    if isinstance(raw, Mapping):
        return tuple(TagSpec(str(name), value(item)) for name, item in raw.items())
    return tuple(TagSpec(None, value(item)) for item in raw)


def _dataset(loaded: LoadedSuite, entry: Mapping[str, Any], base: KeyPath) -> DatasetSpec | None:
    if "dataset" not in entry:
        return None
    path = (*base, "dataset")
    return DatasetSpec.from_entry(
        entry["dataset"],
        key=format_key_path(path),
        line=loaded.lines.line_of(path),
        filter_line=loaded.lines.line_of((*path, "filter")),
    )


def _agent(
    loaded: LoadedSuite, renderer: TemplateRenderer, folders: SuiteFolders, entry: Mapping[str, Any], base: KeyPath,
    sandbox: SandboxOverride | None = None,
) -> AgentSpec | CaseError | None:
    """The agent part of a task with ``tools:`` (not function tools), or the problem its cases fail with."""
    if "tools" not in entry or has_functions(entry):
        return None
    from bench_plugin.suite.agent.build import build_agent  # start-up: the agent room, only for tasks with tools

    try:
        return build_agent(entry, base, loaded, renderer, folders, sandbox)
    except CaseError as exc:
        return exc
