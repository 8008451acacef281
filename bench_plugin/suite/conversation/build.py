"""A task's ``conversation:`` -> ConversationSpec per case, built with the case's variables and model."""

from __future__ import annotations

import re
from collections.abc import Collection, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from bench_plugin.core.chat import Message
from bench_plugin.core.endpoints import PRESETS, ModelSpec
from bench_plugin.core.errors import CaseError
from bench_plugin.suite.conversation.commands import build_commands
from bench_plugin.suite.conversation.jsonl_template import (
    TemplateLine,
    fill_line,
    placeholder_variables,
    read_template,
)
from bench_plugin.suite.conversation.spec import ConversationSpec, ParticipantSpec
from bench_plugin.suite.loader import PathPart
from bench_plugin.suite.models import adhoc_model
from bench_plugin.suite.sources import Located, TemplateSpec
from bench_plugin.suite.spec import SuiteSpec, TaskSpec
from bench_plugin.suite.templates import TemplateRenderer

_PARAM_KEYS = ("temperature", "max_tokens", "top_p")
DEFAULT_NAME = "AI-{{ me.index }}"
DEFAULT_SHARED_PREFIX = "[{{ speaker }}]: "
PREFIX_NAMES = frozenset({"speaker"})
"""What ``speaker_prefix`` sees besides the case scope (with ``model``, ``task_id``): engines/conversation/run.py."""


def model_scope(scope: Mapping[str, Any], case_model: str, selected: Sequence[str]) -> dict[str, Any]:
    """What a participant's ``model:`` template sees: the case scope plus ``others``."""
    return {**scope, "others": [name for name in selected if name != case_model]}


@dataclass
class _Builder:
    source: Located  # the task's conversation:
    system: TemplateSpec | None  # the task's system prompt, or the suite's
    renderer: TemplateRenderer
    scope: Mapping[str, Any]
    suite: SuiteSpec

    def where(self, *path: PathPart) -> tuple[str, int | None]:
        return self.source.where(*path)

    def error(self, message: str, *path: PathPart, hint: str | None = None) -> CaseError:
        key, line = self.where(*path)
        return CaseError(message, path=self.source.file, line=line, key=key, hint=hint)

    def render(self, source: str, scope: Mapping[str, Any], *path: PathPart) -> str:
        key, line = self.where(*path)
        return self.renderer.render(source, scope, key=key, line=line)

    def render_file(self, name: str, scope: Mapping[str, Any], *path: PathPart) -> str:
        key, line = self.where(*path)
        return self.renderer.render_file(name, scope, key=key, line=line)

    def template(self, source: str, *path: PathPart, known: Collection[str] | None = None) -> TemplateSpec:
        """A template the engine renders later; with ``known`` (what it is rendered with), another name fails now."""
        key, line = self.where(*path)
        self.renderer.check(source, key=key, line=line, known=known)
        return TemplateSpec(source, key=key, line=line)


def build_conversation(
    task: TaskSpec,
    renderer: TemplateRenderer,
    scope: Mapping[str, Any],
    suite: SuiteSpec,
    case_model: ModelSpec,
    selected: Sequence[str],
) -> ConversationSpec:
    """The conversation of one case, with its participants resolved and their starts rendered.

    The case's model plays every participant that names no ``model:`` (so ids stay
    ``task[model-runN]`` and ``--bench-models`` rotates it through the same seats); the other seats
    name a model of the suite, or ``provider:model-id``, possibly through a template over the case
    variables, ``model`` (the case's model) and ``others`` (the run's other models, in order).

    Args:
        task: a task with a ``conversation`` (schema-valid and statically checked by
            ``suite/conversation/check.py``); its ``system`` is every participant's default.
        renderer: the suite's template renderer.
        scope: the case variables with ``model`` (the case's) and ``task_id``.
        suite: the suite, whose models (and ``provider:model-id`` names) seats may name.
        case_model: the model under test; it plays every participant without ``model:``.
        selected: the names of the models this run's cases use, in order (``others`` in templates).

    Raises:
        CaseError: at the offending key's line: an unknown model, a template that fails, a template
            file whose number of lines is not the number of participants, an unknown speaker in
            ``order``, two participants with one name.
    """
    assert task.conversation is not None, "build_conversation needs a task with conversation:"
    b = _Builder(task.conversation, task.system, renderer, scope, suite)
    entry = task.conversation.data
    _check_enough_models(b, entry["participants"], case_model.name, selected)
    participants = _participants(b, entry, case_model, selected)
    key, line = b.where()
    return ConversationSpec(
        mode=entry["mode"],
        participants=participants,
        order=_order(b, entry.get("order"), participants),
        max_turns=int(entry["max_turns"]),
        stop_sequences=tuple(entry.get("stop_sequences", ())),
        speaker_prefix=_speaker_prefix(b, entry),
        own_last=entry.get("own_last", "repeat_other"),
        continue_text=entry.get("continue_text", "Let's continue our conversation."),
        seed=_seed(b, entry.get("seed")),
        commands=build_commands(task.conversation.child("commands", default={}), renderer,
                                lambda name: resolve_model(name, suite), scope),
        key=key,
        line=line,
    )


def _participants(
    b: _Builder, entry: Mapping[str, Any], case_model: ModelSpec, selected: Sequence[str]
) -> tuple[ParticipantSpec, ...]:
    """Every seat: its model, how templates see it (``me``), and its start (its own, or its template file line)."""
    entries = entry["participants"]
    models = [_participant_model(b, item, i, case_model, selected) for i, item in enumerate(entries)]
    people = _people(b, entries, [model or case_model for model in models])
    lines = _template_lines(b, entry, people) if "template" in entry else None
    return tuple(
        _participant(b, item, i, models[i], people, lines[i] if lines else None, case_model)
        for i, item in enumerate(entries)
    )


def _speaker_prefix(b: _Builder, entry: Mapping[str, Any]) -> TemplateSpec | None:
    """What goes before each speaker's words in a shared transcript (by default a name in shared mode only)."""
    prefix = entry.get("speaker_prefix", DEFAULT_SHARED_PREFIX if entry["mode"] == "shared" else "")
    return b.template(prefix, "speaker_prefix", known={*b.scope, *PREFIX_NAMES}) if prefix else None


def resolve_model(name: str, suite: SuiteSpec) -> ModelSpec:
    """A suite model by name, or ``provider:model-id``.

    Raises:
        CaseError: the model's own problem (an unknown provider, a key the user does not allow...).
        ValueError: when the name is neither a suite model nor ``provider:model-id``.
    """
    if name in suite.models:
        return suite.models[name]
    if name in suite.model_problems:
        raise suite.model_problems[name]
    model = adhoc_model(name, {**PRESETS, **suite.providers}, suite.model_defaults, suite.provider_problems)
    if model is None:
        raise ValueError(f"unknown model '{name}'; models of this suite: {', '.join(suite.models) or 'none'}")
    return model


_OTHERS_AT = re.compile(r"\bothers\s*\[\s*(\d+)\s*\]")
"""A seat that takes one of the run's other models: ``{{ others[1] }}``."""


def _check_enough_models(b: _Builder, entries: Sequence[Mapping[str, Any]], case_model: str,
                         selected: Sequence[str]) -> None:
    """Refuse a conversation whose seats read more of the run's other models than the run has, naming both counts.

    ``{{ others[1] }}`` with one model selected failed as ``list object has no element 1``: the seats need the
    model under test and ``others[0]`` to ``others[N]``.
    """
    others = [name for name in selected if name != case_model]
    reads = _others_read(entries)
    short = [seat for seat, n in reads if n >= len(others)]
    if not short:
        return
    needed = max(n for _, n in reads) + 2  # the model under test, and others[0] to others[N]
    seats = ", ".join(f"others[{n}]" for n in range(needed - 1))
    raise b.error(f"this conversation seats {needed} models (the model under test, {seats}), and the run has "
                  f"{len(others) + 1}: {', '.join([case_model, *others])}", "participants", short[0], "model",
                  hint=f"name {needed} models with --bench-models (comma-separated); each takes seat 1 in its cases")


def _others_read(entries: Sequence[Mapping[str, Any]]) -> list[tuple[int, int]]:
    """(seat, the highest N of ``others[N]`` its ``model:`` reads) for each seat that takes another model of the run."""
    reads = []
    for seat, item in enumerate(entries):
        found = _OTHERS_AT.findall(str(item.get("model", "")))
        if found:
            reads.append((seat, max(int(n) for n in found)))
    return reads


def _participant_model(
    b: _Builder, item: Mapping[str, Any], i: int, case_model: ModelSpec, selected: Sequence[str]
) -> ModelSpec | None:
    """The seat's model, or None for a seat of the case's model."""
    if "model" not in item:
        return None
    name = b.render(str(item["model"]), model_scope(b.scope, case_model.name, selected), "participants", i, "model")
    try:
        return resolve_model(name.strip(), b.suite)
    except ValueError as exc:
        raise b.error(str(exc), "participants", i, "model",
                      hint="a suite model name, or provider:model-id such as openai:gpt-4o") from exc
    except CaseError as exc:
        key, line = b.where("participants", i, "model")
        raise exc.located(b.source.file, line, key) from exc


def _me(index: int, model: ModelSpec) -> dict[str, Any]:
    return {"index": index, "model": model.template_vars(),
            "company": model.provider.name}


def _people(b: _Builder, entries: list[Mapping[str, Any]], models: list[ModelSpec]) -> list[dict[str, Any]]:
    """Every participant as templates see it (``me``): index, name, model, company and its vars."""
    people: list[dict[str, Any]] = []
    seen: dict[str, int] = {}
    for i, item in enumerate(entries):
        me = _me(i + 1, models[i])
        me["name"] = b.render(str(item.get("name", DEFAULT_NAME)), {**b.scope, "me": me}, "participants", i, "name")
        for var, source in item.get("vars", {}).items():
            key, line = b.where("participants", i, "vars", var)
            me[var] = b.renderer.evaluate(source, {**b.scope, "me": me}, key=key, line=line)
        if me["name"] in seen:
            first = seen[me["name"]] + 1
            raise b.error(f"two participants are named '{me['name']}' (participants {first} and {i + 1})",
                          "participants", i, "name", hint="give each participant its own name:")
        seen[me["name"]] = i
        people.append(me)
    return people


def _template_lines(b: _Builder, entry: Mapping[str, Any], people: list[dict[str, Any]]) -> list[TemplateLine]:
    path = b.render(str(entry["template"]), b.scope, "template").strip()
    key, line = b.where("template")
    file = b.suite.folders.confine(path, path=b.source.file, key=key, line=line)  # like template files
    try:
        raw = read_template(file)
        if len(raw) != len(people):
            raise ValueError(f"{path} has {len(raw)} participant lines but the conversation has "
                             f"{len(people)} participants")
        variables = placeholder_variables(people)
        return [fill_line(item, variables) for item in raw]
    except (ValueError, TypeError) as exc:
        raise CaseError(str(exc), path=b.source.file, line=line, key=key) from exc


def _participant(
    b: _Builder,
    item: Mapping[str, Any],
    i: int,
    model: ModelSpec | None,
    people: list[dict[str, Any]],
    line: TemplateLine | None,
    case_model: ModelSpec,
) -> ParticipantSpec:
    me = people[i]
    if line is not None and line.cli and model is None:
        raise b.error(f"participant {i + 1} sits on a cli line of the template (the original's world interface): "
                      "the model under test cannot play it", "participants", i,
                      hint="give it model: the world interface, e.g. a model of a type: application provider")
    scope = {**b.scope, "me": me, "participants": people}
    system = _system(b, item, i, scope, line)
    return ParticipantSpec(
        index=i,
        name=str(me["name"]),
        model=_seat_model(item, model or case_model),
        candidate=model is None,
        system=system,
        context=_context(b, item, i, scope, line),
        params=_params(item),
        variables=me,
    )


def _seat_model(item: Mapping[str, Any], model: ModelSpec) -> ModelSpec:
    """The seat's model with the seat's own system-prompt policy, when it sets one."""
    policy = {k: item[k] for k in ("system_prompt", "system_fold_template") if k in item}
    return replace(model, **policy) if policy else model


def _params(item: Mapping[str, Any]) -> dict[str, Any]:
    """The seat's sampling parameters: written at the top (``temperature:``...), then under ``params:``."""
    params = {k: item[k] for k in _PARAM_KEYS if k in item}
    params.update(item.get("params", {}))
    return params


def _context(
    b: _Builder, item: Mapping[str, Any], i: int, scope: Mapping[str, Any], line: TemplateLine | None
) -> tuple[Message, ...]:
    """The messages that open the seat's private history: its own ``context:``, else its template file line's."""
    if "context" in item:
        return tuple(_context_message(b, message, i, j, scope) for j, message in enumerate(item["context"]))
    return line.context if line else ()


def _system(b: _Builder, item: Mapping[str, Any], i: int, scope: Mapping[str, Any], line: TemplateLine | None) -> str:
    """The participant's own system prompt, else its template line's, else the task's, else the suite's."""
    if "system_file" in item:
        return b.render_file(item["system_file"], scope, "participants", i, "system_file")
    if "system" in item:
        return b.render(item["system"], scope, "participants", i, "system")
    if line is not None:
        return line.system_prompt
    return b.system.render(b.renderer, scope) if b.system is not None else ""


def _context_message(b: _Builder, message: Mapping[str, Any], i: int, j: int, scope: Mapping[str, Any]) -> Message:
    path = ("participants", i, "context", j)
    if "content_file" in message:
        text = b.render_file(message["content_file"], scope, *path, "content_file")
    else:
        text = b.render(message["content"], scope, *path, "content")
    return Message(message["role"], text)


def _order(b: _Builder, order: list[Any] | None, participants: tuple[ParticipantSpec, ...]) -> tuple[int, ...]:
    if order is None:
        return tuple(range(len(participants)))
    names = {p.name: p.index for p in participants}
    out: list[int] = []
    for k, speaker in enumerate(order):
        index = _speaker_index(speaker, names, len(participants))
        if index is None:
            hint = f"name a participant ({', '.join(names)}) or give its position, 1 to {len(participants)}"
            raise b.error(f"unknown speaker {speaker!r}", "order", k, hint=hint)
        out.append(index)
    return tuple(out)


def _speaker_index(speaker: Any, names: Mapping[str, int], seats: int) -> int | None:
    """The 0-based seat ``order:`` names, by position (1 to ``seats``) or by name; None for no seat."""
    if isinstance(speaker, int) and 1 <= speaker <= seats:
        return speaker - 1
    if isinstance(speaker, str) and speaker in names:
        return names[speaker]
    return None


def _seed(b: _Builder, seed: str | Mapping[str, Any] | None) -> tuple[Message, ...]:
    if seed is None:
        return ()
    if isinstance(seed, str):
        return (Message("user", b.render(seed, b.scope, "seed"), name="User"),)
    speaker = b.render(str(seed.get("speaker", "User")), b.scope, "seed", "speaker")
    return (Message("user", b.render(seed["content"], b.scope, "seed", "content"), name=speaker),)
