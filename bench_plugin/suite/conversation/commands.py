"""A conversation's ``commands:`` -> CommandSpecs: what each ``!name`` does, with its defaults and limits."""

from __future__ import annotations

from collections.abc import Callable, Collection, Mapping
from typing import Any

from bench_plugin.core.endpoints import ModelSpec
from bench_plugin.core.errors import CaseError
from bench_plugin.suite.conversation.spec import HIDDEN_BY_DEFAULT, CommandSpec
from bench_plugin.suite.loader import PathPart
from bench_plugin.suite.sources import Located, TemplateSpec
from bench_plugin.suite.templates import TemplateRenderer

COMMON_KEYS = ("action", "hide", "notice", "max_uses")
# each action's own options and their defaults (None: required)
ACTION_OPTIONS: Mapping[str, Mapping[str, Any]] = {
    "set_temperature": {"range": [0, 2]},
    "append_system": {"min_length": 3, "heading": "Notes you added to your own instructions:"},
    "mute": {},
    "invite": {
        "models": None,
        "max_participants": 5,
        "name": "AI-{{ me.index }}",
        "system": "You are {{ me.name }}.{% if persona %} {{ persona }}{% endif %}\n\n"
                  "You have just been invited into a conversation between AI models. Take part in your own voice.",
    },
}
DEFAULT_NOTICES = {
    "set_temperature": "[{{ speaker }} changed its temperature]",
    "append_system": "[{{ speaker }} added to its own instructions]",
    "mute": "[{{ speaker }} will sit out its next turn]",
    "invite": "[{{ speaker }} invited {{ value }} to join]",
}
_TEMPLATED = ("name", "system")  # invite options rendered when the invited model joins
NOTICE_NAMES = frozenset({"speaker", "value"})
"""What a command's ``notice`` sees besides the case scope: ``speak`` in engines/conversation/run.py."""
INVITE_NAMES = frozenset({"me", "persona", "inviter"})
"""What an invite's ``name`` and ``system`` see besides the case scope: engines/conversation/commands.py."""


def build_commands(
    commands: Located, renderer: TemplateRenderer, resolve: Callable[[str], ModelSpec], scope: Collection[str]
) -> tuple[CommandSpec, ...]:
    """One CommandSpec per declared command, in YAML order; templates are checked, not rendered.

    Args:
        commands: ``commands:`` as written: command name -> ``{action, ...}`` (schema-valid).
        renderer: the suite's template renderer, to check the templates.
        resolve: a model name -> ModelSpec (raises ValueError or CaseError), for ``invite`` models.
        scope: the names of the case scope the engine renders them with (the case variables,
            ``model``, ``task_id``); a notice also sees ``NOTICE_NAMES``, an invite's ``name`` and
            ``system`` ``INVITE_NAMES``.

    Raises:
        CaseError: at the line of a template that does not compile, reads a name it will not be
            rendered with, or a model that cannot be invited.
    """
    specs = []
    for name, entry in commands.data.items():
        action = entry["action"]
        defaults = ACTION_OPTIONS[action]
        options: dict[str, Any] = {k: entry.get(k, v) for k, v in defaults.items()}
        for key in _TEMPLATED:
            if key in options:
                options[key] = _template(options[key], commands, (name, key), renderer, {*scope, *INVITE_NAMES})
        notice = entry.get("notice", DEFAULT_NOTICES[action])
        key, line = commands.where(name)
        specs.append(
            CommandSpec(
                name=name,
                action=action,
                hide=bool(entry.get("hide", action in HIDDEN_BY_DEFAULT)),
                notice=_template(notice, commands, (name, "notice"), renderer, {*scope, *NOTICE_NAMES})
                if notice else None,
                max_uses=entry.get("max_uses"),
                options=options,
                models=_models(entry.get("models", []), commands, name, resolve),
                key=key,
                line=line,
            )
        )
    return tuple(specs)


def _template(
    source: str, commands: Located, path: tuple[PathPart, ...], renderer: TemplateRenderer, known: Collection[str]
) -> TemplateSpec:
    """A template the engine renders when the command applies; a name it reads that is not ``known`` fails now."""
    key, line = commands.where(*path)
    renderer.check(source, key=key, line=line, known=known)
    return TemplateSpec(source, key=key, line=line)


def _models(
    names: list[str], commands: Located, command: str, resolve: Callable[[str], ModelSpec]
) -> dict[str, ModelSpec]:
    models: dict[str, ModelSpec] = {}
    for k, name in enumerate(names):
        key, line = commands.where(command, "models", k)
        try:
            models[name] = resolve(name)
        except ValueError as exc:
            raise CaseError(str(exc), path=commands.file, line=line, key=key) from exc
        except CaseError as exc:
            raise exc.located(commands.file, line, key) from exc
    return models
