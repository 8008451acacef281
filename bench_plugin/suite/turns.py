"""A task's ``turns:`` or ``phases:`` -> TurnsSpec: the scripted turns, checked but not rendered.

Turns are rendered by the engine when the conversation reaches them, because they may read the
earlier answers. Here each one is compiled and its gate checked, so a broken turn fails its case
(with the turn's line) before any model is called.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench_plugin.errors import CaseError
from bench_plugin.suite.gates import check_gate
from bench_plugin.suite.loader import KeyPath, LoadedSuite, format_key_path
from bench_plugin.suite.spec import PhaseSpec, TemplateSpec, TurnSpec, TurnsSpec
from bench_plugin.suite.templates import TemplateRenderer


def has_turns(task: Mapping[str, Any]) -> bool:
    """Whether the task is a scripted multi-turn conversation (run by the ``turns`` engine)."""
    return "turns" in task or "phases" in task


def build_turns(
    task: Mapping[str, Any],
    base: KeyPath,
    loaded: LoadedSuite,
    renderer: TemplateRenderer,
    scope: Mapping[str, Any],
) -> TurnsSpec:
    """The phases of a conversation task; plain ``turns:`` make one phase.

    Args:
        task: the task's YAML entry (schema-valid).
        base: the task's key path, e.g. ``("tasks", 2)``.
        loaded: the suite, for line numbers.
        renderer: the suite's template renderer.
        scope: the case variables (with ``model`` and ``task_id``), for ``turns`` given as one
            expression such as ``"{{ turns }}"`` (a dataset field holding a list of texts).

    Raises:
        CaseError: at the turn's line, for a template that does not compile, a gate that is not
            valid, or a ``turns`` expression that does not give a list of texts.
    """
    builder = _Builder(loaded, renderer, scope)
    if "phases" in task:
        phases = tuple(builder.phase(entry, (*base, "phases", i)) for i, entry in enumerate(task["phases"]))
    else:
        phases = (PhaseSpec(turns=builder.turns(task["turns"], (*base, "turns"))),)
    return TurnsSpec(phases=phases)


class _Builder:
    def __init__(self, loaded: LoadedSuite, renderer: TemplateRenderer, scope: Mapping[str, Any]) -> None:
        self.loaded = loaded
        self.renderer = renderer
        self.scope = scope

    def template(self, source: str, path: KeyPath, *, from_file: bool = False) -> TemplateSpec:
        key, line = format_key_path(path), self.loaded.lines.line_of(path)
        self.renderer.check(source, from_file=from_file, key=key, line=line)
        return TemplateSpec(source, from_file=from_file, key=key, line=line)

    def phase(self, entry: Mapping[str, Any], path: KeyPath) -> PhaseSpec:
        system = None
        if "system_file" in entry:
            system = self.template(entry["system_file"], (*path, "system_file"), from_file=True)
        elif "system" in entry:
            system = self.template(entry["system"], (*path, "system"))
        return PhaseSpec(turns=self.turns(entry["turns"], (*path, "turns")), system=system)

    def turns(self, entry: str | list[Any], path: KeyPath) -> tuple[TurnSpec, ...]:
        if isinstance(entry, str):
            return self.turns_from_expression(entry, path)
        return tuple(self.turn(item, (*path, i)) for i, item in enumerate(entry))

    def turn(self, item: str | Mapping[str, Any], path: KeyPath) -> TurnSpec:
        if isinstance(item, str):
            return TurnSpec(self.template(item, path))
        if "content_file" in item:
            content = self.template(item["content_file"], (*path, "content_file"), from_file=True)
        else:
            content = self.template(item["content"], (*path, "content"))
        when = item.get("when", {})
        try:
            check_gate(when)
        except (ValueError, TypeError) as exc:
            gate_path = (*path, "when")
            raise CaseError(
                str(exc), path=self.loaded.display_path, line=self.loaded.lines.line_of(gate_path),
                key=format_key_path(gate_path),
            ) from exc
        return TurnSpec(content, when=dict(when))

    def turns_from_expression(self, source: str, path: KeyPath) -> tuple[TurnSpec, ...]:
        """``turns: "{{ turns }}"``: one expression giving the list; its texts are sent as they are."""
        key, line = format_key_path(path), self.loaded.lines.line_of(path)
        value = self.renderer.evaluate(source, self.scope, key=key, line=line)
        if not isinstance(value, (list, tuple)) or not value or not all(isinstance(v, str) for v in value):
            if not isinstance(value, (list, tuple)):
                shown = f"{type(value).__name__} {repr(value)[:60]}"
            else:
                shown = "an empty list" if not value else "a list with items that are not texts"
            raise CaseError(
                f"expected a non-empty list of texts, got {shown}",
                path=self.loaded.display_path, line=line, key=key,
                hint='write turns as a list, or as one expression that gives a list, e.g. turns: "{{ turns }}"',
            )
        return tuple(
            TurnSpec(TemplateSpec(text, literal=True, key=f"{key}[{i}]", line=line)) for i, text in enumerate(value)
        )
