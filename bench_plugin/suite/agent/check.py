"""Checks of ``tools:`` that the JSON Schema cannot express; a mistake stops collection, like a schema error."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from bench_plugin.core.errors import SuiteError
from bench_plugin.suite.loader import KeyPath, LoadedSuite, format_key_path

COMMON_KEYS = ("type", "name", "description", "family", "mutating")
TYPE_KEYS: Mapping[str, tuple[str, ...]] = {
    "command": ("allow", "timeout", "network"),
    "scripted": ("parameters", "result", "error", "responses"),
    "function": ("parameters",),
}


def check_tools(loaded: LoadedSuite) -> None:
    """Check every task's ``tools:`` (the data is schema-valid).

    An option that belongs to another type of tool (``allow`` on a scripted tool, ``result`` on a command) or a
    scripted tool with both ``responses`` and a single ``result``/``error`` is a SuiteError at its line.

    Raises:
        SuiteError: at the first problem, with its line quoted and a hint.
    """
    for index, task in enumerate(loaded.data.get("tasks", [])):
        tools = task.get("tools") if isinstance(task, Mapping) else None
        for number, tool in enumerate(tools or []):
            if isinstance(tool, Mapping):
                _check(loaded, tool, ("tasks", index, "tools", number))


def _fail(loaded: LoadedSuite, path: KeyPath, message: str, hint: str) -> SuiteError:
    line = loaded.lines.line_of(path)
    return SuiteError(message, path=loaded.display_path, line=line, key=format_key_path(path), hint=hint,
                      excerpt=loaded.excerpt(line, context=0))


def _owner(key: str) -> str:
    """The types of tool an option belongs to."""
    return " or ".join(name for name, keys in TYPE_KEYS.items() if key in keys)


def _check(loaded: LoadedSuite, tool: Mapping[str, Any], path: KeyPath) -> None:
    kind = tool["type"]
    allowed = (*COMMON_KEYS, *TYPE_KEYS.get(kind, ()))
    for key in tool:
        if key not in allowed:
            raise _fail(loaded, (*path, key), f"'{key}' applies only to type: {_owner(key)}",
                        f"options of type {kind}: {', '.join(allowed)}")
    if "responses" in tool and ("result" in tool or "error" in tool):
        raise _fail(loaded, (*path, "responses"), "give responses:, or one result: or error:, not both",
                    "a response without when: answers every call: add {result: ...} as the last response")
