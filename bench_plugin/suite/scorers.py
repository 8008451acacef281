"""``scorers:`` and ``composite:`` -> ScorerSpecs and CompositeSpecs, named once for every reader of a suite."""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench_plugin.core.errors import SuiteError
from bench_plugin.suite.loader import KeyPath, LoadedSuite, format_key_path
from bench_plugin.suite.scorer_definitions import resolve_use
from bench_plugin.suite.spec import CompositeSpec, GateSpec, ScorerSpec, VariableSpec
from bench_plugin.suite.thresholds import written_threshold

# keys every scorer takes, read here rather than by its type: the type sees only its own options
COMMON_KEYS = ("name", "type", "per_turn", "threshold", "vars", "use")


def build_scorers(
    loaded: LoadedSuite, entries: list[Mapping[str, Any]], base: KeyPath, reserved: tuple[str, ...] = ()
) -> tuple[ScorerSpec, ...]:
    """ScorerSpecs in YAML order; an unnamed scorer is named after its type (``contains_2`` if taken).

    ``threshold`` (the scorer's own pass rule, a number 0..1 that the schema checked, or a template
    rendered per case), ``vars`` and ``use`` go to the spec, not to the options, so that every scorer
    type takes them without knowing them. An entry with ``use:`` is its definition with the entry's
    keys over it, and is named after the definition when it has no name.

    Args:
        loaded: the suite, for line numbers.
        entries: the ``scorers:`` list as written (schema-valid).
        base: the key path of the list, e.g. ``("tasks", 2, "scorers")``.
        reserved: names never given to an unnamed scorer (the suite's scorers, for a task's list), so
            that only an explicit ``name:`` replaces a suite scorer.
    """
    scorers: list[ScorerSpec] = []
    # an entry with use: is its definition with the entry's keys over it (suite/scorer_definitions.py)
    resolved = [resolve_use(loaded, entry, (*base, index)) for index, entry in enumerate(entries)]
    taken: set[str] = {e["name"] for e in resolved if "name" in e} | set(reserved)
    for index, (written, entry) in enumerate(zip(entries, resolved, strict=True)):
        name = entry.get("name")
        if name is None:
            # an unnamed use: is named after its definition
            name = _free_name(written.get("use") or entry["type"], taken)
            taken.add(name)
        scorers.append(_located_spec(loaded, entry, name, (*base, index)))
    return tuple(scorers)


def _free_name(stem: str, taken: set[str]) -> str:
    """``stem``, or ``stem_2``, ``stem_3``... the first that is not taken."""
    name, n = stem, 2
    while name in taken:
        name, n = f"{stem}_{n}", n + 1
    return name


def _located_spec(loaded: LoadedSuite, entry: Mapping[str, Any], name: str, key_path: KeyPath) -> ScorerSpec:
    """The spec of the suite's entry at ``key_path``, with the lines of the entry and of each of its vars."""
    var_lines = {var: loaded.lines.line_of((*key_path, "vars", var)) for var in entry.get("vars") or {}}
    return scorer_spec(entry, name, format_key_path(key_path), loaded.lines.line_of(key_path),
                       path=loaded.display_path, var_lines=var_lines)


def scorer_spec(
    entry: Mapping[str, Any], name: str, key: str, line: int | None, *, path: str,
    var_lines: Mapping[str, int | None] | None = None, error: type[SuiteError] = SuiteError,
) -> ScorerSpec:
    """The ScorerSpec of one schema-valid entry (a suite's, a task's or a dataset row's).

    ``threshold`` may be a template (``"{{ threshold }}"``): it is kept as ``threshold_template`` and
    rendered per case at expansion. ``vars`` become the scorer's own variables, rendered per case too.

    Raises:
        ``error``: a ``threshold`` that is text but no template.
    """
    threshold = written_threshold(entry.get("threshold"), path=path, key=f"{key}.threshold", line=line, error=error)
    return ScorerSpec(
        name=name,
        type=entry["type"],
        options={k: v for k, v in entry.items() if k not in COMMON_KEYS},
        key=key,
        line=line,
        per_turn=bool(entry.get("per_turn", False)),
        threshold=None if isinstance(threshold, str) else threshold,
        threshold_template=threshold if isinstance(threshold, str) else None,
        vars=_scorer_vars(entry, key, line, var_lines or {}),
    )


def _scorer_vars(
    entry: Mapping[str, Any], key: str, line: int | None, var_lines: Mapping[str, int | None]
) -> tuple[VariableSpec, ...]:
    """The scorer's own ``vars:``, each at its line (the scorer's when not known)."""
    return tuple(VariableSpec(var, source, f"{key}.vars.{var}", var_lines.get(var, line))
                 for var, source in (entry.get("vars") or {}).items())


def merge_scorers(
    suite_scorers: tuple[ScorerSpec, ...], task_scorers: tuple[ScorerSpec, ...]
) -> tuple[ScorerSpec, ...]:
    """Suite scorers then task scorers; a task scorer with a suite scorer's name replaces it in place."""
    by_name = {s.name: s for s in task_scorers}
    merged = [by_name.pop(s.name, s) for s in suite_scorers]
    return tuple(merged + [s for s in task_scorers if s.name in by_name])


def build_composite(loaded: LoadedSuite, entry: Any, key_path: KeyPath) -> CompositeSpec:
    """A composite from its string or mapping form (no formula: the mean of the components)."""
    key, line = format_key_path(key_path), loaded.lines.line_of(key_path)
    if entry is None:
        return CompositeSpec(key=key, line=line)
    if isinstance(entry, str):
        return CompositeSpec(formula=entry, key=key, line=line)
    gates = tuple(GateSpec(g["component"], g["when"]) for g in entry.get("gates", []))
    return CompositeSpec(
        formula=entry.get("formula"), gates=gates, on_missing=entry.get("on_missing", "unscored"), key=key, line=line
    )


def component_names(loaded: LoadedSuite) -> tuple[list[str], list[str]]:
    """The component names of a schema-valid suite, for checking the names its report sections use.

    Returns:
        ``(names, per_turn)``: the suite's scorers, then each task's new ones, in YAML order; and the
        ``per_turn`` ones among them (whose ``NAME.t1``, ``NAME.t2``... are components too).
    """
    suite_scorers = build_scorers(loaded, loaded.data.get("scorers", []), ("scorers",))
    names = [scorer.name for scorer in suite_scorers]
    per_turn = [scorer.name for scorer in suite_scorers if scorer.per_turn]
    for index, task in enumerate(loaded.data["tasks"]):
        # unlike expansion, a task's unnamed scorer here avoids the earlier tasks' names too (a superset
        # of the names records can have; kept as the aggregates and leaderboard checks always had it)
        scorers = build_scorers(loaded, task.get("scorers", []), ("tasks", index, "scorers"), tuple(names))
        names += _new_names(scorers, names)
        per_turn += _new_names([scorer for scorer in scorers if scorer.per_turn], per_turn)
    return names, per_turn


def _new_names(scorers: Sequence[ScorerSpec], names: list[str]) -> list[str]:
    return [scorer.name for scorer in scorers if scorer.name not in names]
