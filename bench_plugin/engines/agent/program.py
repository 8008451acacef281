"""Running a program for an agent case: argv only (never a shell), an allow-list, always in a sandbox.

Used by the ``command`` tool (with an allow-list of programs) and by the completion checks (commands the
suite's author wrote). Where a program runs, and what it may reach and spend, is the sandbox's
(``sandbox/``): by default the strongest backend that works here, never none unless asked for.
``python`` and ``python3`` run the interpreter running pytest (except in a container: the image's).
"""

from __future__ import annotations

import shlex
from collections.abc import Sequence
from pathlib import Path

from bench_plugin.core.errors import ToolFailure
from bench_plugin.engines.agent.sandbox.base import Sandbox
from bench_plugin.engines.agent.sandbox.choose import open_sandbox
from bench_plugin.engines.agent.sandbox.launch import CommandResult, clip, program_name
from bench_plugin.suite.agent.spec import SandboxSpec

__all__ = ["CommandResult", "check_allowed", "clip", "program_name", "run_argv", "split_command"]


def split_command(command: str | list[str]) -> list[str]:
    """A command as argv: a list as it is, a string split like a shell would (quotes), but never run by one.

    Raises:
        ToolFailure: for an empty command or unbalanced quotes.
    """
    if isinstance(command, list):
        argv = [str(part) for part in command]
    else:
        try:
            argv = shlex.split(command)
        except ValueError as exc:
            raise ToolFailure(f"cannot split the command {command!r}: {exc}") from exc
    if not argv:
        raise ToolFailure("the command is empty")
    return argv


def check_allowed(argv: Sequence[str], allow: tuple[str, ...]) -> None:
    """Raises ToolFailure unless the program is on the allow-list (compared by name)."""
    if program_name(argv) not in allow:
        raise ToolFailure(
            f"{program_name(argv)!r} is not allowed; programs you may run: {', '.join(allow) or 'none'}"
        )


async def run_argv(argv: Sequence[str], workspace: Path, timeout_s: float, sandbox: Sandbox | None = None, *,
                   network: bool = False) -> CommandResult:
    """Run ``argv`` in ``workspace`` inside ``sandbox``; everything it started is killed after ``timeout_s``.

    Its output shows paths in the workspace relative to it.

    Args:
        argv: the program and its arguments.
        workspace: the case's workspace (resolved).
        timeout_s: seconds before it is stopped.
        sandbox: where it runs; None: the default (``auto``).
        network: whether it may reach the network.

    Raises:
        ToolFailure: when the program does not exist or cannot be started.
        SandboxError: no sandbox was given and none works here.
    """
    sandbox = sandbox or await open_sandbox(SandboxSpec())
    return await sandbox.run(argv, workspace, timeout_s=timeout_s, network=network)
