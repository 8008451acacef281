"""The words every sandbox backend shares: how a program ended, how to start one, its environment."""

from __future__ import annotations

import os
import shutil
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path, PurePath

from bench_plugin.core.errors import ToolFailure

MAX_OUTPUT_CHARS = 8_000
PYTHONS = ("python", "python3")
"""Programs that mean the interpreter running pytest wherever the host's files are seen (not in a container)."""


@dataclass(frozen=True)
class CommandResult:
    """How a program ended: ``exit_code`` None when it was killed at the timeout.

    ``note`` says why it was stopped or cut short otherwise (its output went past the limit, a kernel limit
    killed it); ``None`` when nothing happened that its own output would not show.
    """

    argv: tuple[str, ...]
    exit_code: int | None
    stdout: str
    stderr: str
    duration_s: float
    note: str | None = None

    @property
    def timed_out(self) -> bool:
        """Whether the program was killed at its timeout rather than exiting."""
        return self.exit_code is None


@dataclass(frozen=True)
class Launch:
    """One process to start on the host that runs the program inside its sandbox.

    Args:
        argv: what to execute on the host (``bwrap ...``, ``docker run ...``, or the program itself).
        env: the whole environment of that process.
        cwd: its working directory.
        stop: an extra way to stop everything it started (``docker kill``), besides killing its process
            group; it blocks, so it runs in a thread except when the case is being cancelled.
    """

    argv: tuple[str, ...]
    env: Mapping[str, str]
    cwd: Path
    stop: Callable[[], None] | None = field(default=None, compare=False)


def program_name(argv: Sequence[str]) -> str:
    """The program's name without its folder: ``/usr/bin/python3`` -> ``python3``."""
    return PurePath(argv[0]).name


def host_path() -> str:
    """The ``PATH`` programs get: the caller's, or the system default."""
    return os.environ.get("PATH", os.defpath)


def environment(workspace: Path) -> dict[str, str]:
    """A minimal environment: ``PATH``, a ``HOME`` and ``PYTHONPATH`` in the workspace, UTF-8.

    Nothing else of the caller's: no API key can reach a program through its environment.
    """
    return {
        "PATH": host_path(),
        "HOME": str(workspace),
        "PYTHONPATH": str(workspace),
        "PYTHONDONTWRITEBYTECODE": "1",
        "LANG": "C.UTF-8",
    }


def python_argv(argv: Sequence[str]) -> list[str]:
    """``argv`` with ``python`` / ``python3`` replaced by the interpreter running pytest."""
    return [sys.executable, *argv[1:]] if program_name(argv) in PYTHONS and sys.executable else list(argv)


def clip(text: str, limit: int = MAX_OUTPUT_CHARS) -> str:
    """``text`` cut to ``limit`` characters, saying how many were cut, so one output cannot flood the context."""
    return text if len(text) <= limit else text[:limit] + f"\n... [{len(text) - limit} more characters cut]"


def shown_output(data: bytes, workspace: Path) -> str:
    """A program's output as text, with paths in the workspace shown relative to it, clipped."""
    # the workspace's temporary path would make records differ from run to run
    text = data.decode("utf-8", "replace").replace(f"{workspace}{os.sep}", "").replace(str(workspace), ".")
    return clip(text)


def find_program(argv: Sequence[str], workspace: Path) -> Path:
    """Where the program of ``argv`` is on the host (a relative path is in the workspace), for a clear error.

    Raises:
        ToolFailure: when there is no such program.
    """
    name = argv[0]
    if "/" in name:
        found: str | None = str(workspace / name)
        if not os.path.isfile(str(found)):
            found = None
    else:
        found = shutil.which(name, path=host_path())
    if found is None:
        raise ToolFailure(f"cannot run {name!r}: No such file or directory")
    return Path(found)
