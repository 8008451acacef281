"""A task's ``turns:`` or ``phases:`` -> TurnsSpec: the scripted turns, checked but not rendered."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import replace
from typing import Any

from bench_plugin.core.errors import CaseError
from bench_plugin.core.frozen import type_name
from bench_plugin.core.media import MediaPart
from bench_plugin.suite.gates import check_gate
from bench_plugin.suite.loader import KeyPath
from bench_plugin.suite.media import MEDIA_KEYS, MediaSpec, render_media
from bench_plugin.suite.sources import Located, TemplateSpec
from bench_plugin.suite.spec import PhaseSpec, TaskSpec, TurnSpec, TurnsSpec
from bench_plugin.suite.templates import TemplateRenderer

TURN_NAMES = frozenset({"model", "task_id", "answers", "raw_answers", "turn", "phase"})
"""What a turn (or a phase's system prompt) sees besides the case's variables: ``engines.turns.turn_scope``."""


def build_turns(task: TaskSpec, renderer: TemplateRenderer, scope: Mapping[str, Any]) -> TurnsSpec:
    """The phases of a conversation task; plain ``turns:`` make one phase.

    Turns are rendered by the engine when the conversation reaches them, because they may read the earlier answers.
    Here each one is compiled and its gate checked, so a broken turn fails its case (with the turn's line) before
    any model is called.

    Args:
        task: a task with ``turns`` or ``phases`` (``task.has_turns``).
        renderer: the suite's template renderer.
        scope: the case variables (with ``model`` and ``task_id``), for ``turns`` given as one
            expression such as ``"{{ turns }}"`` (a dataset field holding a list of texts).

    Raises:
        CaseError: at the turn's line, for a template that does not compile, a gate that is not
            valid, or a ``turns`` expression that does not give a list of texts.
    """
    if task.phases is not None:
        builder = _Builder(task.phases, renderer, scope)
        phases = TurnsSpec(phases=tuple(builder.phase(entry, (i,)) for i, entry in enumerate(task.phases.data)))
        return _with_task_media(phases, task, builder)
    assert task.turns is not None, "build_turns needs a task with turns: or phases: (task.has_turns)"
    builder = _Builder(task.turns, renderer, scope)
    return _with_task_media(TurnsSpec(phases=(PhaseSpec(turns=builder.turns(task.turns.data, ())),)), task, builder)


def _with_task_media(spec: TurnsSpec, task: TaskSpec, builder: _Builder) -> TurnsSpec:
    """The task's ``images:`` and ``audio:`` go with its first turn."""
    if not task.media or not spec.phases or not spec.phases[0].turns:
        return spec
    media = render_media(builder.renderer, task.media, builder.scope, builder.source.file)
    first, *rest = spec.phases[0].turns
    phase = replace(spec.phases[0], turns=(replace(first, media=(*media, *first.media)), *rest))
    return TurnsSpec(phases=(phase, *spec.phases[1:]))


class _Builder:
    def __init__(self, source: Located, renderer: TemplateRenderer, scope: Mapping[str, Any]) -> None:
        self.source = source
        self.renderer = renderer
        self.scope = scope

    def template(self, text: str, path: KeyPath, *, from_file: bool = False) -> TemplateSpec:
        key, line = self.source.where(*path)
        # a name nothing defines failed the turn after the turns before it were paid for
        self.renderer.check(text, from_file=from_file, key=key, line=line, known={*self.scope, *TURN_NAMES})
        return TemplateSpec(text, from_file=from_file, key=key, line=line)

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
            key, line = self.source.where(*path, "when")
            raise CaseError(str(exc), path=self.source.file, line=line, key=key) from exc
        return TurnSpec(content, when=when, media=self.media(item, path))

    def media(self, item: Mapping[str, Any], path: KeyPath) -> tuple[MediaPart, ...]:
        """A turn's ``images:`` and ``audio:``, checked now: they see the case's variables, not the answers."""
        specs = []
        for option in MEDIA_KEYS:
            for i, source in enumerate(item.get(option) or []):
                key, line = self.source.where(*path, option, i)
                specs.append(MediaSpec("image" if option == "images" else "audio", source, key=key, line=line))
        return render_media(self.renderer, specs, self.scope, self.source.file)

    def turns_from_expression(self, text: str, path: KeyPath) -> tuple[TurnSpec, ...]:
        """``turns: "{{ turns }}"``: one expression giving the list; its texts are sent as they are."""
        key, line = self.source.where(*path)
        value = self.renderer.evaluate(text, self.scope, key=key, line=line)
        shown = _not_texts(value)
        if shown is not None:
            raise CaseError(
                f"expected a non-empty list of texts, got {shown}",
                path=self.source.file, line=line, key=key,
                hint='write turns as a list, or as one expression that gives a list, e.g. turns: "{{ turns }}"',
            )
        return tuple(
            TurnSpec(TemplateSpec(text, literal=True, key=f"{key}[{i}]", line=line)) for i, text in enumerate(value)
        )


def _not_texts(value: Any) -> str | None:
    """What ``value`` is, as a message shows it, when it is not a non-empty list of texts; else None."""
    if not isinstance(value, (list, tuple)):
        return f"{type_name(value)} {repr(value)[:60]}"
    if not value:
        return "an empty list"
    return None if all(isinstance(v, str) for v in value) else "a list with items that are not texts"
