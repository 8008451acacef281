"""The suite's ``tasks:`` -> TaskSpecs, built once so that expansion only multiplies and renders."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench_plugin.core.errors import CaseError
from bench_plugin.suite.agent.spec import AgentSpec, SandboxOverride
from bench_plugin.suite.datasets import DatasetSpec
from bench_plugin.suite.loader import KeyPath, LoadedSuite, format_key_path
from bench_plugin.suite.messages import build_messages
from bench_plugin.suite.paths import SuiteFolders
from bench_plugin.suite.prompts import OWN_PROMPT_KEYS, build_prompts
from bench_plugin.suite.scorers import build_composite, build_scorers, merge_scorers
from bench_plugin.suite.sources import Located, TemplateSpec
from bench_plugin.suite.spec import TagSpec, TaskSpec, VariableSpec
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
    data = loaded.data
    folders = folders or SuiteFolders.of(loaded.path.parent)
    suite_scorers = build_scorers(loaded, data.get("scorers", []), ("scorers",))
    reserved = tuple(scorer.name for scorer in suite_scorers)  # only an explicit name: replaces a suite scorer
    suite_composite = build_composite(loaded, data.get("composite"), ("composite",))
    suite_system = _template(loaded, data["system"], ("system",)) if data.get("system") is not None else None
    suite_derived = _variables(loaded, data.get("derived", {}), ("derived",))
    suite_prompts = build_prompts(loaded, renderer, data["prompts"], ("prompts",)) if "prompts" in data else None
    tasks = []
    for index, entry in enumerate(data["tasks"]):
        base: KeyPath = ("tasks", index)
        tasks.append(
            TaskSpec(
                index=index,
                id=_template(loaded, str(entry["id"]), (*base, "id")),
                line=loaded.lines.line_of(base),
                engine=_engine(entry),
                scorers=merge_scorers(
                    suite_scorers, build_scorers(loaded, entry.get("scorers", []), (*base, "scorers"), reserved)
                ),
                composite=(
                    build_composite(loaded, entry["composite"], (*base, "composite"))
                    if "composite" in entry else suite_composite
                ),
                pass_threshold=_pass_threshold(loaded, entry, base),
                runs=int(entry.get("runs", data.get("runs", 1))),
                tags=_tags(loaded, entry.get("tags", []), (*base, "tags")),
                grid={**data.get("matrix", {}), **entry.get("matrix", {})},
                derived=(
                    *suite_derived,
                    *_variables(loaded, entry.get("vars", {}), (*base, "vars")),
                    *_variables(loaded, entry.get("derived", {}), (*base, "derived")),
                ),
                dataset=_dataset(loaded, entry, base),
                # beside messages: only the task's own (sent first, expand.py); the suite's is not added to them
                system=_text(loaded, entry, base, "system", "system_file")
                or (suite_system if "messages" not in entry else None),
                prompt=_text(loaded, entry, base, "prompt", "prompt_file"),
                messages=(
                    build_messages(loaded, entry["messages"], (*base, "messages")) if "messages" in entry else None
                ),
                prompts=(
                    build_prompts(loaded, renderer, entry["prompts"], (*base, "prompts")) if "prompts" in entry
                    else None if any(key in entry for key in OWN_PROMPT_KEYS) else suite_prompts
                ),
                turns=Located.take(loaded, (*base, "turns"), entry["turns"]) if "turns" in entry else None,
                phases=Located.take(loaded, (*base, "phases"), entry["phases"]) if "phases" in entry else None,
                conversation=(
                    Located.take(loaded, (*base, "conversation"), entry["conversation"])
                    if "conversation" in entry else None
                ),
                agent=_agent(loaded, renderer, folders, entry, base, sandbox),
                models=tuple(entry["models"]) if "models" in entry else None,
                models_key=format_key_path((*base, "models")),
                models_line=loaded.lines.line_of((*base, "models")),
            )
        )
    return tuple(tasks)


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
    """The agent part of a task with ``tools:``, or the problem its cases fail with."""
    if "tools" not in entry:
        return None
    from bench_plugin.suite.agent.build import build_agent  # start-up: the agent room, only for tasks with tools

    try:
        return build_agent(entry, base, loaded, renderer, folders, sandbox)
    except CaseError as exc:
        return exc
