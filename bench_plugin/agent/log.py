"""What an agent run leaves behind: each tool call, the deterministic checks, the final workspace.

The trajectory and behavior scorers read the tool-call log; the record keeps all of it as plain data.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any


class ToolFailure(Exception):
    """A tool call that could not be done (bad arguments, a path outside the workspace, a program not
    on the allow-list, a timeout...). Its message is what the model is told; the run goes on."""


@dataclass(frozen=True)
class ToolCallRecord:
    """One tool call as it happened.

    ``step`` is the model call that asked for it (1-based, over the case), ``turn`` the user turn.
    ``arguments`` are the parsed arguments (or the text the model wrote, when it is not a JSON object).
    ``output`` is what the model was sent back; ``error`` the failure, when ``ok`` is false.
    ``family`` (read, edit, search, execute...), ``mutating``, ``target`` (the path written or read) and
    ``command`` (the command text) are what the trajectory scorer counts.
    """

    step: int
    turn: int
    id: str
    name: str
    arguments: Any
    ok: bool
    output: str
    error: str | None = None
    family: str = "unknown"
    mutating: bool = False
    target: str | None = None
    command: str | None = None
    duration_s: float = 0.0

    def to_dict(self) -> dict[str, Any]:
        return {
            "step": self.step, "turn": self.turn, "id": self.id, "name": self.name, "arguments": self.arguments,
            "ok": self.ok, "output": self.output, "error": self.error, "family": self.family,
            "mutating": self.mutating, "target": self.target, "command": self.command,
            "duration_s": round(self.duration_s, 4),
        }


@dataclass(frozen=True)
class CheckResult:
    """One deterministic check of the final state (a completion assertion) and its evidence."""

    name: str
    passed: bool
    detail: str

    def to_dict(self) -> dict[str, Any]:
        return {"name": self.name, "passed": self.passed, "detail": self.detail}


@dataclass(frozen=True)
class AgentRun:
    """An agent case's run: the tools offered, every call, the checks of each ``completion`` scorer
    (by scorer name), the final workspace files (``path``, ``size``, and ``text`` for small text files)
    and the budget: steps (model calls) used, seconds, and why the loop was stopped, if it was."""

    tools: tuple[str, ...]
    tool_calls: tuple[ToolCallRecord, ...] = ()
    checks: Mapping[str, tuple[CheckResult, ...]] = field(default_factory=dict)
    files: tuple[Mapping[str, Any], ...] = ()
    steps: int = 0
    max_steps: int = 0
    max_seconds: float = 0.0
    elapsed_s: float = 0.0
    stopped: str | None = None

    def to_dict(self) -> dict[str, Any]:
        return {
            "tools": list(self.tools),
            "tool_calls": [call.to_dict() for call in self.tool_calls],
            "checks": {name: [check.to_dict() for check in checks] for name, checks in self.checks.items()},
            "files": [dict(entry) for entry in self.files],
            "budget": {"steps": self.steps, "max_steps": self.max_steps, "elapsed_s": round(self.elapsed_s, 3),
                       "max_seconds": self.max_seconds, "stopped": self.stopped},
        }
