"""``scorer_definitions:`` and ``use: NAME``: a scorer written once and used in many ``scorers:`` lists.

A definition is a whole scorer (``type`` and its options). An entry ``{use: NAME, ...}`` is the
definition with the entry's own keys over it; ``vars`` are merged, the entry's winning. This is the
one home for reusable scorers (promptfoo's ``assertionTemplates``): five judges that differ in one
criterion are one definition and five one-line entries with their own ``vars``.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from bench_plugin.core.errors import SuiteError
from bench_plugin.core.hints import choices_hint
from bench_plugin.suite.loader import KeyPath, LoadedSuite, format_key_path


def resolve_use(loaded: LoadedSuite, entry: Mapping[str, Any], path: KeyPath) -> Mapping[str, Any]:
    """``entry`` with the definition it names merged in (``use`` dropped); an entry without ``use`` as it is.

    Raises:
        SuiteError: at ``path.use`` for a name no definition has (with a did-you-mean), or when the
            entry also gives ``type`` (the definition says what the scorer is).
    """
    if not isinstance(entry, Mapping) or not isinstance(entry.get("use"), str):
        return entry  # no use:, or one the schema reports (not a name)
    name = entry["use"]
    definitions = _definitions(loaded)
    _check_use(loaded, entry, path, definitions)
    definition = definitions[name]
    merged = {**definition, **{key: value for key, value in entry.items() if key != "use"}}
    if isinstance(definition.get("vars"), Mapping) and isinstance(entry.get("vars"), Mapping):
        merged["vars"] = {**definition["vars"], **entry["vars"]}
    return merged


def _check_use(
    loaded: LoadedSuite, entry: Mapping[str, Any], path: KeyPath, definitions: Mapping[str, Any]
) -> None:
    """The entry's ``use:`` names a definition, and the entry leaves ``type`` to it."""
    name = entry["use"]
    if name not in definitions:
        raise _error(loaded, (*path, "use"), f"unknown scorer definition {name!r}",
                     choices_hint(str(name), list(definitions), label="scorer_definitions"))
    if "type" in entry:
        raise _error(loaded, (*path, "type"), "give type in the definition, not beside use:",
                     f"scorer_definitions.{name} says what the scorer is; an entry with use: may change its options")


def check_definitions(loaded: LoadedSuite) -> None:
    """A definition is a whole scorer: it has a ``type`` and does not ``use`` another.

    Raises:
        SuiteError: at the definition's key.
    """
    for name, definition in _definitions(loaded).items():
        if "use" in definition:
            raise _error(loaded, ("scorer_definitions", name, "use"), "a definition cannot use another",
                         "write the whole scorer here; use: works in scorers: lists")
        if "type" not in definition:
            raise _error(loaded, ("scorer_definitions", name), "missing required key 'type'",
                         "a definition is a whole scorer, e.g. {type: llm_judge, judge: grader, prompt: ...}")


def with_uses_resolved(loaded: LoadedSuite) -> LoadedSuite:
    """A copy of ``loaded`` whose ``scorers:`` entries have their definitions merged in, to check with the schema.

    The line map is the original's: a key that came from a definition is reported at the entry that uses it.

    Raises:
        SuiteError: as ``resolve_use`` and ``check_definitions``.
    """
    check_definitions(loaded)
    data = loaded.data
    if not _any_use(data):
        return loaded
    resolved = dict(data)
    if isinstance(data.get("scorers"), list):
        resolved["scorers"] = _resolve_list(loaded, data["scorers"], ("scorers",))
    if isinstance(data.get("tasks"), list):
        resolved["tasks"] = [_resolve_task(loaded, task, index) for index, task in enumerate(data["tasks"])]
    return replace(loaded, data=resolved)


def _resolve_task(loaded: LoadedSuite, task: Any, index: int) -> Any:
    """A task with its ``scorers:`` resolved; a task of another shape as it is (the schema reports it)."""
    if not isinstance(task, Mapping) or not isinstance(task.get("scorers"), list):
        return task
    return {**task, "scorers": _resolve_list(loaded, task["scorers"], ("tasks", index, "scorers"))}


def _definitions(loaded: LoadedSuite) -> dict[str, Mapping[str, Any]]:
    """The definitions that are mappings (the schema reports any other shape)."""
    found = loaded.data.get("scorer_definitions")
    if not isinstance(found, Mapping):
        return {}
    return {str(name): value for name, value in found.items() if isinstance(value, Mapping)}


def _resolve_list(loaded: LoadedSuite, entries: list[Any], base: KeyPath) -> list[Any]:
    return [resolve_use(loaded, entry, (*base, index)) for index, entry in enumerate(entries)]


def _any_use(data: Mapping[str, Any]) -> bool:
    tasks: list[Any] = data["tasks"] if isinstance(data.get("tasks"), list) else []
    lists = [data.get("scorers")] + [task.get("scorers") for task in tasks if isinstance(task, Mapping)]
    return any(_uses(entries) for entries in lists)


def _uses(entries: Any) -> bool:
    """Whether a ``scorers:`` list has an entry with ``use:``."""
    return isinstance(entries, list) and any(isinstance(entry, Mapping) and "use" in entry for entry in entries)


def _error(loaded: LoadedSuite, path: KeyPath, message: str, hint: str | None) -> SuiteError:
    line = loaded.lines.line_of(path)
    return SuiteError(message, path=loaded.display_path, line=line, key=format_key_path(path), hint=hint,
                      excerpt=loaded.excerpt(line, context=0))
