"""Running a program in the workspace: argv only (never a shell), a timeout, a clean environment.

Used by the ``command`` tool (with an allow-list of programs) and by the completion checks (commands the
suite's author wrote). The environment holds no variable of the caller's but ``PATH``, so no API key
can reach a program the model starts. ``python`` and ``python3`` run the interpreter running pytest.
"""

from __future__ import annotations

import asyncio
import os
import shlex
import signal
import sys
import time
from dataclasses import dataclass
from pathlib import Path, PurePath

from bench_plugin.errors import ToolFailure

MAX_OUTPUT_CHARS = 8_000
_PYTHONS = ("python", "python3")


@dataclass(frozen=True)
class CommandResult:
    """How a program ended: ``exit_code`` None when it was killed at the timeout."""

    argv: tuple[str, ...]
    exit_code: int | None
    stdout: str
    stderr: str
    duration_s: float

    @property
    def timed_out(self) -> bool:
        """Whether the program was killed at its timeout rather than exiting."""
        return self.exit_code is None


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


def program_name(argv: list[str]) -> str:
    """The program's name without its folder: ``/usr/bin/python3`` -> ``python3``."""
    return PurePath(argv[0]).name


def check_allowed(argv: list[str], allow: tuple[str, ...]) -> None:
    """Raises ToolFailure unless the program is on the allow-list (compared by name)."""
    if program_name(argv) not in allow:
        raise ToolFailure(
            f"{program_name(argv)!r} is not allowed; programs you may run: {', '.join(allow) or 'none'}"
        )


def environment(workspace: Path) -> dict[str, str]:
    """A minimal environment: ``PATH``, a ``HOME`` and ``PYTHONPATH`` in the workspace, UTF-8."""
    return {
        "PATH": os.environ.get("PATH", os.defpath),
        "HOME": str(workspace),
        "PYTHONPATH": str(workspace),
        "PYTHONDONTWRITEBYTECODE": "1",
        "LANG": "C.UTF-8",
    }


def clip(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how many were cut, so one output cannot flood the context."""
    return text if len(text) <= limit else text[:limit] + f"\n... [{len(text) - limit} more characters cut]"


async def run_argv(argv: list[str], workspace: Path, timeout_s: float) -> CommandResult:
    """Run ``argv`` in ``workspace``; a program still running after ``timeout_s`` is killed.

    Its output shows paths in the workspace relative to it.

    Raises:
        ToolFailure: when the program does not exist or cannot be started.
    """
    executable = sys.executable if program_name(argv) in _PYTHONS else argv[0]
    started = time.perf_counter()
    try:
        process = await asyncio.create_subprocess_exec(
            executable, *argv[1:], cwd=workspace, env=environment(workspace),
            stdin=asyncio.subprocess.DEVNULL, stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE,
            start_new_session=True,  # its own process group, so a timeout also stops what it started
        )
    except OSError as exc:
        raise ToolFailure(f"cannot run {argv[0]!r}: {exc.strerror or exc}") from exc
    assert process.stdout is not None and process.stderr is not None
    # read while waiting, so what a program wrote before its timeout is kept
    reading = asyncio.gather(process.stdout.read(), process.stderr.read())
    exit_code: int | None
    try:
        exit_code = await asyncio.wait_for(process.wait(), timeout=max(timeout_s, 0.01))
    except asyncio.TimeoutError:  # builtin TimeoutError only from Python 3.11
        _kill(process)
        await process.wait()
        exit_code = None
    stdout, stderr = await reading
    return CommandResult(tuple(argv), exit_code, _text(stdout, workspace), _text(stderr, workspace),
                         time.perf_counter() - started)


def _kill(process: asyncio.subprocess.Process) -> None:
    try:
        os.killpg(process.pid, signal.SIGKILL)
    except (AttributeError, OSError):  # no process groups (Windows), or it is already gone
        process.kill()


def _text(data: bytes, workspace: Path) -> str:
    # the workspace's temporary path would make records differ from run to run: show paths relative to it
    text = data.decode("utf-8", "replace").replace(f"{workspace}{os.sep}", "").replace(str(workspace), ".")
    return clip(text)
