"""A conversation's ``commands:`` -> CommandSpecs: what each ``!name`` does, with its defaults and limits."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any

from bench_plugin.endpoints import ModelSpec
from bench_plugin.errors import CaseError
from bench_plugin.suite.conversation.spec import HIDDEN_BY_DEFAULT, CommandSpec
from bench_plugin.suite.loader import KeyPath, LoadedSuite, format_key_path
from bench_plugin.suite.spec import TemplateSpec
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


def build_commands(
    entries: Mapping[str, Mapping[str, Any]],
    base: KeyPath,
    loaded: LoadedSuite,
    renderer: TemplateRenderer,
    resolve: Callable[[str], ModelSpec],
) -> tuple[CommandSpec, ...]:
    """One CommandSpec per declared command, in YAML order; templates are checked, not rendered.

    Args:
        entries: ``commands:`` as written: command name -> ``{action, ...}`` (schema-valid).
        base: the key path of ``commands``.
        resolve: a model name -> ModelSpec (raises ValueError or CaseError), for ``invite`` models.

    Raises:
        CaseError: at the line of a template that does not compile or a model that cannot be invited.
    """
    commands = []
    for name, entry in entries.items():
        path = (*base, name)
        action = entry["action"]
        defaults = ACTION_OPTIONS[action]
        options: dict[str, Any] = {k: entry.get(k, v) for k, v in defaults.items()}
        for key in _TEMPLATED:
            if key in options:
                options[key] = _template(options[key], (*path, key), loaded, renderer)
        notice = entry.get("notice", DEFAULT_NOTICES[action])
        commands.append(
            CommandSpec(
                name=name,
                action=action,
                hide=bool(entry.get("hide", action in HIDDEN_BY_DEFAULT)),
                notice=_template(notice, (*path, "notice"), loaded, renderer) if notice else None,
                max_uses=entry.get("max_uses"),
                options=options,
                models=_models(entry.get("models", []), (*path, "models"), loaded, resolve),
                key=format_key_path(path),
                line=loaded.lines.line_of(path),
            )
        )
    return tuple(commands)


def _template(source: str, path: KeyPath, loaded: LoadedSuite, renderer: TemplateRenderer) -> TemplateSpec:
    key, line = format_key_path(path), loaded.lines.line_of(path)
    renderer.check(source, key=key, line=line)
    return TemplateSpec(source, key=key, line=line)


def _models(
    names: list[str], path: KeyPath, loaded: LoadedSuite, resolve: Callable[[str], ModelSpec]
) -> dict[str, ModelSpec]:
    models: dict[str, ModelSpec] = {}
    for k, name in enumerate(names):
        key, line = format_key_path((*path, k)), loaded.lines.line_of((*path, k))
        try:
            models[name] = resolve(name)
        except ValueError as exc:
            raise CaseError(str(exc), path=loaded.display_path, line=line, key=key) from exc
        except CaseError as exc:
            raise exc.located(loaded.display_path, line, key) from exc
    return models
