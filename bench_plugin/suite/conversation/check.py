"""Checks of ``conversation:`` blocks that the JSON Schema cannot express; a mistake stops collection."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench_plugin.core.errors import SuiteError
from bench_plugin.core.hints import choices_hint
from bench_plugin.suite.conversation.commands import ACTION_OPTIONS, COMMON_KEYS
from bench_plugin.suite.loader import KeyPath, LoadedSuite, format_key_path

_ONLY_IN = {"template": "broadcast", "seed": "shared"}
_RESERVED_VARS = ("index", "name", "model")


def check_conversations(loaded: LoadedSuite) -> None:
    """Check every task's ``conversation:`` (the data is schema-valid).

    Keys that belong to the other mode, options that do not apply to a command's action, a range that runs
    backwards: each is a SuiteError at its line, like a schema error.

    Raises:
        SuiteError: at the first problem, with its line, the line quoted and a hint.
    """
    for index, task in enumerate(loaded.data.get("tasks", [])):
        entry = task.get("conversation") if isinstance(task, Mapping) else None
        if isinstance(entry, Mapping):
            _check(loaded, entry, ("tasks", index, "conversation"))


def _fail(loaded: LoadedSuite, path: KeyPath, message: str, hint: str | None = None) -> SuiteError:
    line = loaded.lines.line_of(path)
    return SuiteError(message, path=loaded.display_path, line=line, key=format_key_path(path), hint=hint,
                      excerpt=loaded.excerpt(line, context=0))


def _check(loaded: LoadedSuite, entry: Mapping[str, Any], base: KeyPath) -> None:
    mode = entry["mode"]
    for key, only in _ONLY_IN.items():
        if key in entry and mode != only:
            hint = ("a shared conversation starts from seed:" if key == "template"
                    else "in broadcast mode each participant starts from its own context:")
            raise _fail(loaded, (*base, key), f"'{key}' applies only to mode: {only}", hint)
    for i, participant in enumerate(entry["participants"]):
        _check_participant(loaded, participant, mode, (*base, "participants", i))
    for name, command in entry.get("commands", {}).items():
        _check_command(loaded, command, (*base, "commands", name))


def _check_participant(loaded: LoadedSuite, participant: Mapping[str, Any], mode: str, path: KeyPath) -> None:
    """A participant's ``context`` is for broadcast mode only, and its ``vars`` do not take the names ``me.`` has."""
    if "context" in participant and mode != "broadcast":
        raise _fail(loaded, (*path, "context"), "'context' applies only to mode: broadcast",
                    "a shared conversation has one transcript, opened by seed:")
    for var in participant.get("vars", {}):
        if var in _RESERVED_VARS:
            raise _fail(loaded, (*path, "vars", var),
                        f"'{var}' is a reserved name (me.{var} is set by the conversation)",
                        "choose another variable name")


def _check_command(loaded: LoadedSuite, command: Mapping[str, Any], path: KeyPath) -> None:
    action = command["action"]
    allowed = [*COMMON_KEYS, *ACTION_OPTIONS[action]]
    for key in command:
        if key not in allowed:
            raise _fail(loaded, (*path, key), f"option '{key}' does not apply to action {action}",
                        choices_hint(key, allowed, label=f"options of {action}"))
    _check_needed(loaded, command, path)
    low_high = command.get("range")
    if low_high is not None and low_high[0] > low_high[1]:
        raise _fail(loaded, (*path, "range"), f"range [{low_high[0]}, {low_high[1]}] must go from low to high")


def _check_needed(loaded: LoadedSuite, command: Mapping[str, Any], path: KeyPath) -> None:
    """The options the command's action has no default for are written."""
    action = command["action"]
    missing = [key for key, default in ACTION_OPTIONS[action].items() if default is None and key not in command]
    if missing:
        raise _fail(loaded, path, f"action {action} needs '{missing[0]}'",
                    "list the models that may be invited, e.g. models: [gpt-4o]" if missing[0] == "models" else None)
