"""A task's function tools (``tools: [{type: function, ...}]``): declared to the model, never run.

A task whose tools are all functions is answered in one reply, and the calls the model makes are its answer (the
``tool_calls`` scorer compares them with the expected ones); no agent loop, workspace or sandbox.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from bench_plugin.core.chat import ToolDefinition
from bench_plugin.core.errors import CaseError
from bench_plugin.suite.loader import KeyPath, LoadedSuite, format_key_path

FUNCTION = "function"
_NO_ARGUMENTS: Mapping[str, Any] = {"type": "object", "properties": {}}
_AGENT_ONLY = ("workspace", "budget", "sandbox", "turns", "phases", "conversation")


def has_functions(entry: Mapping[str, Any]) -> bool:
    """Whether a task declares function tools (then it runs one turn, and no agent)."""
    tools = entry.get("tools")
    return isinstance(tools, list) and any(_is_function(tool) for tool in tools)


def _is_function(tool: Any) -> bool:
    return isinstance(tool, Mapping) and tool.get("type") == FUNCTION


def build_functions(
    loaded: LoadedSuite, entry: Mapping[str, Any], base: KeyPath
) -> tuple[ToolDefinition, ...] | CaseError | None:
    """The task's function tools (None: it has none), or the problem its cases fail with, at its line.

    Problems: a tool of another type beside them, an agent's key (``workspace:``...), a name used twice, a
    ``parameters`` that is not a valid JSON Schema.
    """
    if not has_functions(entry):
        return None
    try:
        _check_task(loaded, entry, base)
        tools = entry["tools"]
        definitions = tuple(_definition(loaded, tool, (*base, "tools", i)) for i, tool in enumerate(tools))
        _check_names(loaded, definitions, (*base, "tools"))
    except CaseError as exc:
        return exc
    return definitions


def _error(loaded: LoadedSuite, path: KeyPath, message: str, hint: str | None = None) -> CaseError:
    return CaseError(message, path=loaded.display_path, line=loaded.lines.line_of(path), key=format_key_path(path),
                     hint=hint)


def _check_task(loaded: LoadedSuite, entry: Mapping[str, Any], base: KeyPath) -> None:
    for index, tool in enumerate(entry["tools"]):
        if not _is_function(tool):
            raise _error(loaded, (*base, "tools", index), "function tools are declared, never run: a task that has "
                         "them cannot also have tools that run", "give this task only type: function tools, or make "
                         "them scripted tools of an agent task")
    for key in _AGENT_ONLY:
        if key in entry:
            raise _error(loaded, (*base, key), f"{key}: is not for a task with function tools (one reply, whose "
                         "tool calls are the answer)")


def _definition(loaded: LoadedSuite, tool: Mapping[str, Any], path: KeyPath) -> ToolDefinition:
    from jsonschema import Draft202012Validator  # start-up: only for a suite that has this key
    from jsonschema.exceptions import SchemaError

    parameters = tool.get("parameters", _NO_ARGUMENTS)
    try:
        Draft202012Validator.check_schema(dict(parameters))
    except SchemaError as exc:
        raise _error(loaded, (*path, "parameters", *exc.path),
                     f"not a valid JSON Schema (2020-12): {exc.message}") from None
    return ToolDefinition(str(tool["name"]), str(tool.get("description", "")), parameters)


def _check_names(loaded: LoadedSuite, tools: Sequence[ToolDefinition], path: KeyPath) -> None:
    seen: dict[str, int] = {}
    for index, tool in enumerate(tools):
        if tool.name in seen:
            first = seen[tool.name]
            raise _error(loaded, (*path, index), f"tool name {tool.name!r} is used twice (first: tools[{first}])")
        seen[tool.name] = index
