"""The ``landlock`` backend: Linux namespaces and Landlock, with no program to install and no root.

For machines without bubblewrap. A launcher in the interpreter that runs pytest (``landlock_launcher.py``)
makes the namespaces itself (a user namespace when not root), shows the program the same files as
bubblewrap's backend (``filesystem_view``), and restricts the program with Landlock so that it writes
only in its workspace, a private ``/tmp`` and ``/dev/shm``. It has its own PID namespace whose first process
dies with the launcher (so the timeout kills every process it started), no network unless the tool
allows it, a clean environment, the entry's limits, and the seccomp filter that keeps it from the host's
Unix sockets. It needs a kernel with Landlock (5.13 or later, on) that lets users make user namespaces.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from bench_plugin.engines.agent.sandbox import landlock_launcher
from bench_plugin.engines.agent.sandbox.base import Sandbox
from bench_plugin.engines.agent.sandbox.bubblewrap import FilesystemView, filesystem_view
from bench_plugin.engines.agent.sandbox.entry import entry_argv
from bench_plugin.engines.agent.sandbox.launch import Launch, environment, find_program, python_argv
from bench_plugin.engines.agent.sandbox.owner import own_user
from bench_plugin.engines.agent.sandbox.unix_sockets import deny_unix_sockets_filter
from bench_plugin.suite.agent.spec import SandboxLimits

LAUNCHER = Path(landlock_launcher.__file__)
_PRIVATE = (("/tmp", "1777"), ("/dev/shm", "1777"))  # empty, writable by all, as on the host


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 where there is none (not Linux, too old, or off)."""
    if not sys.platform.startswith("linux"):
        return 0
    return landlock_launcher.landlock_abi()


def launcher_options(view: FilesystemView, limits: SandboxLimits, *, network: bool) -> list[str]:
    """What the launcher is told: the folders to empty and to bind back, where to write, the network."""
    options = ["--network"] if network else []
    options += ["--tmp-bytes", str(limits.file_mb * 1024 * 1024)]
    hidden = [(str(folder), "0755") for folder in view.hidden if str(folder) not in dict(_PRIVATE)]
    for folder, mode in [*_PRIVATE, *hidden]:
        options += ["--empty", folder, mode]
    options += [*_each("--keep", view.kept), "--workspace", str(view.workspace)]
    return options + _each("--write", [view.workspace, *(Path(folder) for folder, _ in _PRIVATE)])


def _each(option: str, folders: Sequence[Path]) -> list[str]:
    """``option`` before each folder: ``--keep A --keep B``."""
    return [arg for folder in folders for arg in (option, str(folder))]


class LandlockSandbox(Sandbox):
    """Programs in namespaces the launcher makes, restricted by Landlock; see the module's docstring."""

    name = "landlock"

    def launch(self, argv: Sequence[str], workspace: Path, *, network: bool) -> Launch:
        """The launcher, then the entry (limits, user, seccomp), then the program; ``python3`` is pytest's."""
        argv = python_argv(argv)
        program = find_program(argv, workspace)
        uid = own_user(workspace)
        command = entry_argv(argv, workspace, self.limits, uid=uid, count_processes=True,
                             seccomp=deny_unix_sockets_filter())
        view = filesystem_view(workspace, [program], network=network)
        options = launcher_options(view, self.limits, network=network)
        args = [sys.executable, "-I", "-S", str(LAUNCHER), *options, "--", *command]
        return Launch(tuple(args), environment(workspace), Path("/"))
