"""A task's ``tools:``, ``workspace:``, ``budget:`` and ``sandbox:`` -> AgentSpec, checked before a model is called."""

from __future__ import annotations

import re
from collections.abc import Mapping
from pathlib import Path, PurePosixPath
from typing import Any

from jsonschema import Draft202012Validator
from jsonschema.exceptions import SchemaError

from bench_plugin.core.errors import CaseError
from bench_plugin.suite.agent.consent import check_sandbox_consent
from bench_plugin.suite.agent.sandbox_choice import build_sandbox
from bench_plugin.suite.agent.spec import (
    BUILTIN_DEFAULTS,
    DEFAULT_COMMAND_TIMEOUT_S,
    DEFAULT_MAX_SECONDS,
    DEFAULT_MAX_STEPS,
    AgentSpec,
    BudgetSpec,
    SandboxOverride,
    ScriptedResponse,
    ToolSpec,
    WorkspaceSpec,
)
from bench_plugin.suite.loader import KeyPath, LoadedSuite, format_key_path
from bench_plugin.suite.paths import SuiteFolders
from bench_plugin.suite.templates import TemplateRenderer

_NO_ARGUMENTS: Mapping[str, Any] = {"type": "object", "properties": {}}


def build_agent(
    task: Mapping[str, Any],
    base: KeyPath,
    loaded: LoadedSuite,
    renderer: TemplateRenderer,
    folders: SuiteFolders | None = None,
    override: SandboxOverride | None = None,
) -> AgentSpec:
    """The agent part of a task (schema-valid); it depends on no variable, so it is built once per task.

    What the JSON Schema cannot check is checked here (tool names used twice, argument schemas that are not valid
    JSON Schemas, regexes that do not compile, workspace sources that do not exist, lie outside ``folders`` (the
    suite's folder by default) or hold a symbolic link that does, or paths that leave the workspace); each problem
    fails the task's cases alone, at its line.

    ``override`` (the command line) wins over the task's ``sandbox:``, which wins over the suite's.

    Raises:
        CaseError: at the offending key's line.
        SuiteError: the suite asks for ``sandbox: none`` without the user's consent (it stops the file's collection).
    """
    check_sandbox_consent(loaded, task, base, override)
    builder = _Builder(loaded, renderer, folders or SuiteFolders.of(loaded.path.parent))
    if "conversation" in task:
        raise builder.error((*base, "tools"), "tools: is for a model working on a task (prompt:, messages:, "
                            "turns: or phases:), not for a conversation between models")
    tools = tuple(builder.tool(entry, (*base, "tools", i)) for i, entry in enumerate(task["tools"]))
    builder.check_names(tools, (*base, "tools"))
    workspace = builder.workspace(task.get("workspace", {}), (*base, "workspace"))
    budget = task.get("budget", {})
    return AgentSpec(
        tools=tools,
        workspace=workspace,
        budget=BudgetSpec(int(budget.get("max_steps", DEFAULT_MAX_STEPS)),
                          float(budget.get("max_seconds", DEFAULT_MAX_SECONDS))),
        sandbox=build_sandbox(loaded.data.get("sandbox"), task.get("sandbox"), override),
    )


def relative_path(text: str) -> str | None:
    """``text`` as a normalised path inside a folder, or None when it would leave it (absolute, ``..``)."""
    path = PurePosixPath(text.replace("\\", "/"))
    if path.is_absolute() or ".." in path.parts:
        return None
    return path.as_posix()


class _Builder:
    def __init__(self, loaded: LoadedSuite, renderer: TemplateRenderer, folders: SuiteFolders) -> None:
        self.loaded = loaded
        self.renderer = renderer
        self.root = loaded.path.parent
        self.folders = folders

    def error(self, path: KeyPath, message: str, hint: str | None = None) -> CaseError:
        return CaseError(message, path=self.loaded.display_path, line=self.loaded.lines.line_of(path),
                         key=format_key_path(path), hint=hint)

    def check_names(self, tools: tuple[ToolSpec, ...], path: KeyPath) -> None:
        """Each tool has its own name."""
        seen: dict[str, int] = {}
        for i, tool in enumerate(tools):
            if tool.name in seen:
                raise self.error(
                    (*path, i), f"tool name {tool.name!r} is used twice (first: tools[{seen[tool.name]}])",
                    "give each tool its own name:, e.g. {type: command, name: run_tests, allow: [python3]}",
                )
            seen[tool.name] = i

    def tool(self, entry: str | Mapping[str, Any], path: KeyPath) -> ToolSpec:
        spec: Mapping[str, Any] = {"type": entry} if isinstance(entry, str) else entry
        kind = spec["type"]
        key, line = format_key_path(path), self.loaded.lines.line_of(path)
        if kind == "scripted":
            name, description, parameters = spec["name"], spec.get("description", ""), spec.get("parameters")
            parameters = parameters if parameters is not None else _NO_ARGUMENTS
        else:
            name, description, parameters = BUILTIN_DEFAULTS[kind]
            name, description = spec.get("name", name), spec.get("description", description)
        try:
            Draft202012Validator.check_schema(dict(parameters))
        except SchemaError as exc:
            raise self.error((*path, "parameters"), f"not a valid JSON Schema: {exc.message}") from exc
        return ToolSpec(
            name=name,
            type=kind,
            description=description,
            parameters=parameters,
            family=spec.get("family"),
            mutating=spec.get("mutating"),
            allow=tuple(spec.get("allow", ())),
            timeout_s=float(spec.get("timeout", DEFAULT_COMMAND_TIMEOUT_S)),
            network=bool(spec.get("network", False)),
            responses=self.responses(spec, path) if kind == "scripted" else (),
            key=key,
            line=line,
        )

    def responses(self, spec: Mapping[str, Any], path: KeyPath) -> tuple[ScriptedResponse, ...]:
        if "responses" not in spec:
            self.check_templates(spec, path)
            return (ScriptedResponse(result=spec.get("result"), error=spec.get("error")),)
        out = []
        for i, entry in enumerate(spec["responses"]):
            self.check_templates(entry, (*path, "responses", i))
            for argument, pattern in entry.get("when", {}).items():
                try:
                    re.compile(pattern)
                except re.error as exc:
                    raise self.error((*path, "responses", i, "when", argument),
                                     f"/{pattern}/ does not compile: {exc}") from exc
            out.append(ScriptedResponse(dict(entry.get("when", {})), entry.get("result"), entry.get("error")))
        return tuple(out)

    def check_templates(self, entry: Mapping[str, Any], path: KeyPath) -> None:
        for option in ("result", "error"):
            if isinstance(entry.get(option), str):
                where = (*path, option)
                self.renderer.check(entry[option], key=format_key_path(where), line=self.loaded.lines.line_of(where))

    def workspace(self, entry: Mapping[str, Any], path: KeyPath) -> WorkspaceSpec:
        copies = tuple(self.copy(item, (*path, "copy", i)) for i, item in enumerate(entry.get("copy", [])))
        files = {self.file_path(name, (*path, "files", name)): str(content)
                 for name, content in entry.get("files", {}).items()}
        return WorkspaceSpec(copies, files, readable=(self.folders.root, *self.folders.allowed))

    def copy(self, item: str | Mapping[str, Any], where: KeyPath) -> tuple[Path, str]:
        """A ``copy:`` entry: the source (inside the suite's folders) and where in the workspace it goes."""
        source, target = (item, "") if isinstance(item, str) else (item["from"], item.get("to", ""))
        file, key, line = self.loaded.display_path, format_key_path(where), self.loaded.lines.line_of(where)
        resolved = self.folders.confine(str(source), path=file, key=key, line=line)
        if not resolved.exists():
            raise self.error(where, f"{source!r} does not exist under the suite's folder ({self.root})",
                             "copy: names files or folders relative to the suite file")
        if resolved.is_dir():
            self.folders.confine_tree(resolved, shown=str(source), path=file, key=key, line=line)
        inside = relative_path(target) if target else ""
        if inside is None:
            raise self.error(where, f"destination {target!r} leaves the workspace")
        return resolved, "" if inside == "." else inside

    def file_path(self, name: str, where: KeyPath) -> str:
        """A ``files:`` name as a path inside the workspace."""
        inside = relative_path(name)
        if inside is None or inside == ".":
            raise self.error(where, f"{name!r} is not a file path inside the workspace")
        return inside
