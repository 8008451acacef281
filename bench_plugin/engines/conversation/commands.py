"""In-conversation commands: find ``!name args`` in a reply and apply what the suite declared it does.

A command that cannot be applied (a bad argument, a value out of range, a cap reached) changes
nothing and gives a failed event in the transcript; it never ends the case. Only declared names are
commands; ``!anything`` else is ordinary text.
"""

from __future__ import annotations

import math
import re
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from bench_plugin.core.endpoints import ModelSpec
from bench_plugin.engines.conversation.state import Room, Seat
from bench_plugin.suite.conversation.spec import CommandSpec, ParticipantSpec
from bench_plugin.suite.sources import TemplateSpec

Render = Callable[[TemplateSpec, Mapping[str, Any]], str]

_NUMBER = re.compile(r"[ \t]*([-+]?(?:\d+(?:\.\d+)?|\.\d+))(?![\w]|\.\d)")
_QUOTED = re.compile(r"[ \t]*(?:\"([^\"\n]*)\"|'([^'\n]*)')")
_WORD = re.compile(r"[ \t]*(\S+)")
_TRAILING = ".,;:!?)"


@dataclass(frozen=True)
class FoundCommand:
    """A command in a reply: its span (what ``hide`` removes), its argument or why it has none."""

    spec: CommandSpec
    start: int
    end: int
    written: str
    value: Any = None
    persona: str | None = None
    error: str | None = None


@dataclass(frozen=True)
class Outcome:
    """What applying a command did: ``detail`` for the event, ``value`` for the notice, a new seat."""

    ok: bool
    detail: str
    value: str = ""
    joined: Seat | None = None


def find_commands(text: str, commands: Sequence[CommandSpec]) -> list[FoundCommand]:
    """The declared commands in ``text``, in order, with their arguments parsed.

    Example:
        ``!temperature 1.5`` gives value 1.5; ``!prompt "be brief"`` gives ``be brief``;
        ``!add_ai delta "a poet"`` gives value ``delta`` and persona ``a poet``.
    """
    by_name = {c.name: c for c in commands}
    if not by_name:
        return []
    names = "|".join(re.escape(n) for n in sorted(by_name, key=len, reverse=True))
    pattern = re.compile(rf"(?<![\w!])!({names})(?![\w-])")
    return [_parse(by_name[m.group(1)], text, m) for m in pattern.finditer(text)]


def _parse(spec: CommandSpec, text: str, match: re.Match[str]) -> FoundCommand:
    """The command at ``match``, with its argument read from the rest of its line."""
    start, pos = match.start(), match.end()
    line_end = text.find("\n", pos)
    line_end = len(text) if line_end < 0 else line_end

    def found(end: int, **kwargs: Any) -> FoundCommand:
        return FoundCommand(spec, start, end, text[start:end].strip(), **kwargs)

    parse = _ARGUMENT_PARSERS.get(spec.action)
    return found(pos) if parse is None else parse(found, text[pos:line_end], pos)


Found = Callable[..., FoundCommand]
"""Makes the found command ending at a position of the reply, given its value (or its error)."""


def _parse_number(found: Found, rest: str, pos: int) -> FoundCommand:
    """``set_temperature``'s argument: a number."""
    number = _NUMBER.match(rest)
    if number is not None:
        return found(pos + number.end(), value=float(number.group(1)))
    word = _WORD.match(rest)
    if word is None:
        return found(pos, error="expected a number")
    return found(pos + word.end(), error=f"expected a number, got '{word.group(1)}'")


def _parse_text(found: Found, rest: str, pos: int) -> FoundCommand:
    """``append_system``'s argument: a quoted text, or else the rest of the line."""
    quoted = _QUOTED.match(rest)
    if quoted is not None:
        return found(pos + quoted.end(), value=_quoted_text(quoted))
    return found(pos + len(rest), value=rest.strip())


def _parse_invite(found: Found, rest: str, pos: int) -> FoundCommand:
    """``invite``'s arguments: the model (a word or a quoted text), then maybe a quoted persona."""
    named = _invited_model(rest)
    if named is None:
        return found(pos, error="expected the model to invite")
    model, end = named
    persona = _QUOTED.match(rest, end)
    if persona is not None:
        return found(pos + persona.end(), value=model, persona=_quoted_text(persona))
    return found(pos + end, value=model)


def _invited_model(rest: str) -> tuple[str, int] | None:
    """The model an invitation names, and where its name ends in ``rest``; None when it names none."""
    first = _QUOTED.match(rest)
    if first is not None:
        return _quoted_text(first), first.end()
    word = _WORD.match(rest)
    if word is None:
        return None
    return word.group(1).rstrip(_TRAILING), word.end()


def _quoted_text(match: re.Match[str]) -> str:
    """The text between the quotes, double or single."""
    double, single = match.group(1), match.group(2)
    return double if double is not None else single


_ARGUMENT_PARSERS: Mapping[str, Callable[[Found, str, int], FoundCommand]] = {
    "set_temperature": _parse_number,
    "append_system": _parse_text,
    "invite": _parse_invite,
}
"""How each action reads its argument; the others take none."""


def remove_spans(text: str, spans: Sequence[tuple[int, int]]) -> str:
    """``text`` without the hidden commands; a line left empty goes, and so do extra blank lines."""
    out, last = [], 0
    for start, end in sorted(spans):
        out.append(text[last:start].rstrip(" \t") if end >= len(text) or text[end] in " \t\n" else text[last:start])
        last = end
    out.append(text[last:])
    joined = "".join(out)
    lines = [line.rstrip() for line in joined.split("\n")]
    return re.sub(r"\n{3,}", "\n\n", "\n".join(lines)).strip()


def apply_command(found: FoundCommand, seat: Seat, room: Room, render: Render, scope: Mapping[str, Any]) -> Outcome:
    """Apply one command of ``seat``'s reply to the conversation.

    Args:
        found: the command as found in the reply, with its parsed argument or parse error.
        seat: the participant whose reply holds the command; its use count goes up when it applies.
        room: the conversation, which commands such as ``invite`` change.
        render: renders a suite template (a notice, an invited participant's name and prompt).
        scope: what those templates see besides their own variables: the case variables,
            ``model`` (the case's model) and ``task_id``.
    """
    spec = found.spec
    failed = f"{seat.name}: {found.written or '!' + spec.name} failed: "
    if found.error:
        return Outcome(False, failed + found.error)
    used = seat.uses.get(spec.name, 0)
    if spec.max_uses is not None and used >= spec.max_uses:
        return Outcome(False, failed + f"{seat.name} has used !{spec.name} {used} time{'s' * (used != 1)}, the limit")
    outcome = _ACTIONS[spec.action](found, seat, room, render, scope)
    if not outcome.ok:
        return Outcome(False, failed + outcome.detail)
    seat.uses[spec.name] = used + 1
    return outcome


def _set_temperature(found: FoundCommand, seat: Seat, room: Room, render: Render, scope: Mapping[str, Any]) -> Outcome:
    low, high = (float(bound) for bound in found.spec.options["range"])
    value = float(found.value)
    if not math.isfinite(value) or not low <= value <= high:
        return Outcome(False, f"{value:g} is outside the allowed range [{low:g}, {high:g}]")
    seat.temperature = value
    return Outcome(True, f"{seat.name} set its temperature to {value:g}", value=f"{value:g}")


def _append_system(found: FoundCommand, seat: Seat, room: Room, render: Render, scope: Mapping[str, Any]) -> Outcome:
    text = str(found.value).strip()
    shortest = int(found.spec.options["min_length"])
    if len(text) < shortest:
        return Outcome(False, f"the text must have at least {shortest} characters, got {len(text)}")
    seat.additions.append(text)
    seat.heading = str(found.spec.options["heading"])
    return Outcome(True, f"{seat.name} added to its system prompt: {text!r}", value=text)


def _mute(found: FoundCommand, seat: Seat, room: Room, render: Render, scope: Mapping[str, Any]) -> Outcome:
    if seat.muted:
        return Outcome(False, f"{seat.name} is already muted for its next turn")
    seat.muted = True
    return Outcome(True, f"{seat.name} muted itself for its next turn")


def _invite(found: FoundCommand, seat: Seat, room: Room, render: Render, scope: Mapping[str, Any]) -> Outcome:
    cap = int(found.spec.options["max_participants"])
    if len(room.seats) >= cap:
        return Outcome(False, f"the conversation is full: {len(room.seats)} participants, at most {cap}")
    model, problem = _pick_model(str(found.value), found.spec.models)
    if model is None:
        return Outcome(False, problem)
    present = next((s for s in room.seats if s.model.name == model.name), None)
    if present is not None:
        return Outcome(False, f"{model.name} is already taking part (as {present.name})")
    return _seat_guest(found, model, seat, room, render, scope)


def _seat_guest(
    found: FoundCommand, model: ModelSpec, seat: Seat, room: Room, render: Render, scope: Mapping[str, Any]
) -> Outcome:
    """Give the invited model the next seat, its name and prompt rendered, unless another has that name."""
    options = found.spec.options
    index = len(room.seats)
    me: dict[str, Any] = {"index": index + 1, "model": model.template_vars(),
                          "company": model.provider.name}
    extra = {"persona": found.persona or "", "inviter": seat.name}
    me["name"] = render(options["name"], {**scope, **extra, "me": me}).strip()
    if any(s.name == me["name"] for s in room.seats):
        return Outcome(False, f"a participant is already named '{me['name']}'")
    system = render(options["system"], {**scope, **extra, "me": me})
    joined = Seat(ParticipantSpec(index=index, name=me["name"], model=model, candidate=False, system=system,
                                  variables=me), joined_round=room.round, invited_by=seat.name)
    room.seats.append(joined)
    room.pending.append(index)
    detail = f"{seat.name} invited {model.name}; it joins as {joined.name} at the end of round {room.round}"
    return Outcome(True, detail, value=joined.name, joined=joined)


def _pick_model(wanted: str, models: Mapping[str, ModelSpec]) -> tuple[ModelSpec | None, str]:
    """The invitable model a participant named: its name, id or label (any case), else a unique part of one."""
    named = _models_called(wanted.strip().lower(), models)
    if len(named) == 1:
        return named[0], ""
    choices = ", ".join(models)
    if named:
        return None, f"'{wanted}' matches several models ({', '.join(m.name for m in named)}); can invite: {choices}"
    return None, f"unknown model '{wanted}'; can invite: {choices}"


def _models_called(key: str, models: Mapping[str, ModelSpec]) -> list[ModelSpec]:
    """The first model called exactly ``key``, or else every model with ``key`` in one of its names."""
    exact = [model for model in models.values() if key in _names_of(model)]
    if exact:
        return exact[:1]
    return [model for model in models.values() if key and any(key in name for name in _names_of(model))]


def _names_of(model: ModelSpec) -> tuple[str, str, str]:
    """What a participant may call a model by, lower-cased: its name, id and label."""
    return model.name.lower(), model.id.lower(), model.label.lower()


_ACTIONS: Mapping[str, Callable[[FoundCommand, Seat, Room, Render, Mapping[str, Any]], Outcome]] = {
    "set_temperature": _set_temperature,
    "append_system": _append_system,
    "mute": _mute,
    "invite": _invite,
}
