"""The tools of one agent case: what the model is offered, and carrying out each call it makes.

A call never crashes the run: an unknown tool, arguments that are not JSON or do not fit the tool's
schema, a path outside the workspace, a program not allowed, a timeout, an OS error, each becomes a
failed call whose result tells the model what went wrong, and a record entry.
"""

from __future__ import annotations

import asyncio
import json
import time
from collections.abc import Mapping
from pathlib import Path
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import best_match

from bench_plugin.core.chat import ToolCall
from bench_plugin.core.errors import ToolFailure
from bench_plugin.core.places import take_place
from bench_plugin.core.transcript import ToolCallRecord
from bench_plugin.engines.agent import builtin_tools as builtin
from bench_plugin.engines.agent.families import BUILTIN_FAMILIES, classify_command, classify_name
from bench_plugin.engines.agent.sandbox.base import Sandbox
from bench_plugin.engines.agent.scripted_tools import scripted_result
from bench_plugin.suite.agent.spec import ToolSpec
from bench_plugin.suite.spec import CaseSpec

_FILE_TOOLS = {"read_file": builtin.read_file, "write_file": builtin.write_file,
               "list_files": builtin.list_files, "search": builtin.search}


class Toolbox:
    """Carries out tool calls in one workspace.

    Args:
        tools: the task's tools.
        root: the case's workspace (resolved).
        case: the case, for scripted tools' templates.
        sandbox: where ``command`` tools run programs; None: the default one.
    """

    def __init__(self, tools: tuple[ToolSpec, ...], root: Path, case: CaseSpec, sandbox: Sandbox | None = None) -> None:
        self.tools = {tool.name: tool for tool in tools}
        self.root = root
        self.case = case
        self.sandbox = sandbox

    async def call(self, call: ToolCall, *, step: int, turn: int, time_left_s: float) -> ToolCallRecord:
        """Carry out one call; ``time_left_s`` (the case's budget) caps a command's timeout.

        A command first takes the case's place among the cases at work (``places.take_place``), within the budget;
        its timeout and ``duration_s`` count from then.
        """
        started = time.perf_counter()
        deadline = started + time_left_s
        tool = self.tools.get(call.name)
        arguments: Any = call.arguments
        try:
            arguments = parse_arguments(call.arguments)
            tool = self._checked(tool, call.name, arguments)
            if tool.type == "command":
                await _take_place_by(deadline)
                started = time.perf_counter()
            output, error = await self._run(tool, arguments, deadline - started)
        except (ToolFailure, OSError) as exc:
            output, error = _failure(exc)
        family, mutating = self.classify(tool, call.name, arguments)
        return ToolCallRecord(
            step=step, turn=turn, id=call.id, name=call.name, arguments=arguments, ok=error is None, output=output,
            error=error, family=family, mutating=mutating, target=_target(arguments), command=_command(arguments),
            duration_s=time.perf_counter() - started,
        )

    def _checked(self, tool: ToolSpec | None, name: str, arguments: Mapping[str, Any]) -> ToolSpec:
        """The tool called, once its arguments are found to fit it.

        Raises:
            ToolFailure: there is no such tool, or the arguments do not fit its parameters.
        """
        if tool is None:
            raise ToolFailure(f"there is no tool named {name!r}; tools: {', '.join(self.tools) or 'none'}")
        check_arguments(tool, arguments)
        return tool

    async def _run(self, tool: ToolSpec, args: Mapping[str, Any], time_left_s: float) -> tuple[str, str | None]:
        """(the result the model reads, the failure or None)."""
        if tool.type in _FILE_TOOLS:
            return _FILE_TOOLS[tool.type](self.root, args), None
        if tool.type == "command":
            return await builtin.command(self.root, args, tool, min(tool.timeout_s, max(time_left_s, 0.01)),
                                         self.sandbox)
        return scripted_result(tool, args, self.case), None

    def classify(self, tool: ToolSpec | None, name: str, arguments: Any) -> tuple[str, bool]:
        """(family, mutating): declared on the tool, fixed for built-ins, else from the command or the name."""
        command = _command(arguments)
        if tool is None:
            return classify_name(name, command)
        if tool.family is not None:
            return tool.family, _declared_mutating(tool, tool.family == "edit")
        if tool.type in BUILTIN_FAMILIES:
            return BUILTIN_FAMILIES[tool.type]
        if tool.type == "command":
            return classify_command(command) if command else ("execute", False)
        family, mutating = classify_name(name, command)
        return family, _declared_mutating(tool, mutating)


def _declared_mutating(tool: ToolSpec, otherwise: bool) -> bool:
    """The tool's ``mutating``, when the suite declares it."""
    return tool.mutating if tool.mutating is not None else otherwise


def _failure(exc: ToolFailure | OSError) -> tuple[str, str]:
    """(what the model reads, the failure) of a call that failed."""
    error = _os_error_text(exc) if isinstance(exc, OSError) else str(exc)
    return f"error: {error}", error


def _os_error_text(exc: OSError) -> str:
    """A file the tool could not read or write: why, and which."""
    return f"{exc.strerror or exc}: {exc.filename or ''}".rstrip(": ")


async def _take_place_by(deadline: float) -> None:
    """Take the case's place to run a program, waiting no later than ``deadline`` (``time.perf_counter``).

    Raises:
        ToolFailure: the case's budget ran out first; the command is not run.
    """
    try:
        # at least as long as a command's own shortest timeout (``_run``): a place free now is taken at once
        await asyncio.wait_for(take_place(), timeout=max(0.01, deadline - time.perf_counter()))
    except asyncio.TimeoutError:
        raise ToolFailure("not run: the case's max_seconds budget ran out while it waited for a place among the "
                          "cases at work (--bench-concurrency)") from None


def parse_arguments(text: str) -> dict[str, Any]:
    """The arguments object of a call.

    Raises:
        ToolFailure: when the text is not JSON, or not an object.
    """
    try:
        value = json.loads(text or "{}")
    except ValueError as exc:
        raise ToolFailure(f"bad arguments: not valid JSON ({exc}): {text[:200]!r}") from exc
    if not isinstance(value, dict):
        raise ToolFailure(f"bad arguments: expected a JSON object, got {type(value).__name__}")
    return value


def check_arguments(tool: ToolSpec, arguments: Mapping[str, Any]) -> None:
    """Raises ToolFailure naming the first way ``arguments`` do not fit the tool's parameters."""
    error = best_match(Draft202012Validator(dict(tool.parameters)).iter_errors(dict(arguments)))
    if error is not None:
        where = "/".join(str(part) for part in error.absolute_path)
        raise ToolFailure(f"bad arguments for {tool.name}: {(where + ': ') if where else ''}{error.message}")


def _target(arguments: Any) -> str | None:
    value = arguments.get("path") if isinstance(arguments, dict) else None
    return value if isinstance(value, str) else None


def _command(arguments: Any) -> str | None:
    value = arguments.get("command") if isinstance(arguments, dict) else None
    if isinstance(value, list):
        return " ".join(str(part) for part in value)
    return value if isinstance(value, str) else None
