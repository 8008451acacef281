"""Frozen specs of a tool-using agent task: its tools, the workspace it starts from, its budget, its sandbox."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench_plugin.core.chat import ToolDefinition
from bench_plugin.core.frozen import freeze_fields

BUILTIN_TOOLS = ("read_file", "write_file", "list_files", "search", "command")
TOOL_TYPES = (*BUILTIN_TOOLS, "scripted")
DEFAULT_MAX_STEPS = 20
DEFAULT_MAX_SECONDS = 300.0
DEFAULT_COMMAND_TIMEOUT_S = 10.0
SANDBOX_BACKENDS = ("auto", "bubblewrap", "landlock", "seatbelt", "container", "none")
DEFAULT_SANDBOX_IMAGE = "python:3-slim"


def _object(required: tuple[str, ...], **properties: str) -> dict[str, Any]:
    return {
        "type": "object",
        "properties": {name: {"type": "string", "description": text} for name, text in properties.items()},
        "required": list(required),
        "additionalProperties": False,
    }


# name given to a built-in tool when the suite names none, what the model is told, its arguments
BUILTIN_DEFAULTS: Mapping[str, tuple[str, str, Mapping[str, Any]]] = {
    "read_file": ("read_file", "Read a text file of the workspace.",
                  _object(("path",), path="Path relative to the workspace root.")),
    "write_file": ("write_file", "Write a text file in the workspace (created or replaced; folders are created).",
                   _object(("path", "content"), path="Path relative to the workspace root.",
                           content="The whole new content of the file.")),
    "list_files": ("list_files", "List the files under a folder of the workspace, recursively.",
                   _object((), path="Folder relative to the workspace root (default: the root).")),
    "search": ("search", "Search the workspace's text files for a regular expression; answers path:line: text.",
               _object(("pattern",), pattern="A regular expression (Python syntax).",
                       path="Folder or file to search, relative to the workspace root (default: the root).")),
    "command": ("run_command", ("Run a program in the workspace (no shell: pipes and redirections are not "
                                "interpreted) and get its exit code and output."),
                _object(("command",), command="The program and its arguments, e.g. 'python3 test_app.py'.")),
}


@dataclass(frozen=True)
class ScriptedResponse:
    """One answer of a scripted tool: it applies when every ``when`` regex is found in its argument.

    ``result`` is a template (or data, sent as JSON); ``error``, a template, makes the call fail.
    """

    when: Mapping[str, str] = field(default_factory=dict)
    result: Any = None
    error: str | None = None

    def __post_init__(self) -> None:
        freeze_fields(self, "when", "result")


@dataclass(frozen=True)
class ToolSpec:
    """One tool the model may call.

    ``type`` is a built-in (``read_file``, ``write_file``, ``list_files``, ``search``, ``command``) or
    ``scripted``. ``family`` and ``mutating`` say how the trajectory scorer counts its calls (None: from
    the type, or from the name). ``allow``, ``timeout_s`` and ``network`` (whether its programs may
    reach the network) belong to ``command`` tools, ``responses`` to scripted ones.
    """

    name: str
    type: str
    description: str
    parameters: Mapping[str, Any]
    family: str | None = None
    mutating: bool | None = None
    allow: tuple[str, ...] = ()
    timeout_s: float = DEFAULT_COMMAND_TIMEOUT_S
    network: bool = False
    responses: tuple[ScriptedResponse, ...] = ()
    key: str = ""
    line: int | None = None

    def __post_init__(self) -> None:
        freeze_fields(self, "parameters")

    @property
    def definition(self) -> ToolDefinition:
        """The tool as a request offers it to the model."""
        return ToolDefinition(self.name, self.description, self.parameters)


@dataclass(frozen=True)
class WorkspaceSpec:
    """What a fresh workspace holds: copies of suite files and folders, then inline files.

    ``copies`` are ``(source, destination)`` pairs, the source resolved under the suite's folder and the
    destination relative to the workspace (``""``: its root). ``readable`` are the folders (resolved) a
    copy may read through a symbolic link: the suite's folder and those the user allows; empty, the
    sources themselves.
    """

    copies: tuple[tuple[Path, str], ...] = ()
    files: Mapping[str, str] = field(default_factory=dict)
    readable: tuple[Path, ...] = ()

    def __post_init__(self) -> None:
        freeze_fields(self, "files")


@dataclass(frozen=True)
class BudgetSpec:
    """When the agent loop stops: after ``max_steps`` model calls or ``max_seconds`` of the case."""

    max_steps: int = DEFAULT_MAX_STEPS
    max_seconds: float = DEFAULT_MAX_SECONDS


@dataclass(frozen=True)
class SandboxLimits:
    """What one program in a sandbox may spend: each limit holds for every process it starts.

    ``cpu_seconds``, ``memory_mb`` (address space), ``file_mb`` (the largest file it may write) and
    ``processes`` (at once, threads included) are kernel limits; ``output_kb`` is what is read of its
    stdout and stderr together before it is stopped.
    """

    cpu_seconds: int = 60
    memory_mb: int = 2048
    processes: int = 64
    file_mb: int = 100
    output_kb: int = 1024


@dataclass(frozen=True)
class SandboxSpec:
    """Where an agent task's programs run: the ``sandbox:`` of the task, else the suite, else the option.

    ``backend`` is ``auto`` (bubblewrap when it works, else Linux namespaces with Landlock, else macOS
    Seatbelt, else a container engine with the image present), ``bubblewrap``, ``landlock``, ``seatbelt``,
    ``container`` or ``none`` (no isolation, asked for explicitly); ``image`` is the container image.
    """

    backend: str = "auto"
    image: str = DEFAULT_SANDBOX_IMAGE
    limits: SandboxLimits = field(default_factory=SandboxLimits)


@dataclass(frozen=True)
class SandboxOverride:
    """The user's choice (``--bench-sandbox``, ``--bench-sandbox-image``): it wins over the suite's.

    ``allow_none`` (ini ``bench_allow_no_sandbox``) is the user's consent to a suite's ``sandbox: none``,
    which a suite cannot give itself (``suite/agent/consent.py``).
    """

    backend: str | None = None
    image: str | None = None
    allow_none: bool = False


@dataclass(frozen=True)
class AgentSpec:
    """A task's ``tools:``, ``workspace:``, ``budget:`` and ``sandbox:``."""

    tools: tuple[ToolSpec, ...]
    workspace: WorkspaceSpec = field(default_factory=WorkspaceSpec)
    budget: BudgetSpec = field(default_factory=BudgetSpec)
    sandbox: SandboxSpec = field(default_factory=SandboxSpec)

    @property
    def definitions(self) -> tuple[ToolDefinition, ...]:
        """Every tool as a request offers it to the model, in YAML order."""
        return tuple(tool.definition for tool in self.tools)
