"""The ``seatbelt`` backend: macOS's own sandbox (``sandbox-exec``) with a profile made for each program.

The profile denies everything by default, then allows: running and forking programs; reading the disk,
except the caller's home folder and temporary folders (the interpreter's folders and the program's are
read back); writing only in the workspace and the null devices; signals and process information only
within the sandbox (no other process's environment); no network unless the tool allows it (then IP only),
and never a Unix socket, which is how the machine's services are reached. Paths reach the profile as
parameters (``-D``), so no path needs quoting. There is no PID namespace on macOS: the timeout kills the
program's process group, and a process that leaves the group (``setsid``) is not stopped; the limits are
the entry's (CPU time, memory, file size; not processes, which would count the caller's own).
"""

from __future__ import annotations

import os
import sys
import tempfile
from collections.abc import Iterable, Sequence
from pathlib import Path

from bench_plugin.engines.agent.sandbox.base import Sandbox
from bench_plugin.engines.agent.sandbox.entry import entry_argv
from bench_plugin.engines.agent.sandbox.launch import Launch, environment, find_program, python_argv
from bench_plugin.engines.agent.sandbox.owner import own_user

SANDBOX_EXEC = "/usr/bin/sandbox-exec"
DEVICES = ("/dev/null", "/dev/zero", "/dev/tty", "/dev/dtracehelper")
# the few system services a program needs to look up users and locales
MACH_SERVICES = ("com.apple.system.opendirectoryd.libinfo", "com.apple.system.notification_center",
                 "com.apple.system.logger", "com.apple.logd")


def seatbelt_profile(*, hidden: int, kept: int, network: bool) -> str:
    """The profile for a program: ``hidden`` folders ``HIDDEN_0``... it may not read, ``kept`` ``KEPT_0``... it may.

    The workspace is the parameter ``WORKSPACE``; later rules win over earlier ones in the same operation.
    """
    lines = [
        "(version 1)",
        "(deny default)",
        "(allow process-exec process-fork)",
        "(allow signal (target same-sandbox))",
        "(allow process-info* (target same-sandbox))",
        "(allow sysctl-read)",
        "(allow file-read*)",
        *_rule("deny file-read*", _subpaths("HIDDEN", hidden)),
        *_rule("allow file-read*", [*_subpaths("KEPT", kept), '(subpath (param "WORKSPACE"))']),
        *_rule("allow file-write*", ['(subpath (param "WORKSPACE"))', *(f'(literal "{path}")' for path in DEVICES)]),
        '(allow file-ioctl (literal "/dev/tty"))',
        *_rule("allow mach-lookup", [f'(global-name "{service}")' for service in MACH_SERVICES]),
        "(allow ipc-posix-sem ipc-posix-shm)",
    ]
    if network:
        lines += ["(allow system-socket (socket-domain AF_INET) (socket-domain AF_INET6))",
                  "(allow network-outbound (remote ip))", "(allow network-inbound (local ip))",
                  "(allow network-bind (local ip))"]
    lines.append("(deny network* (remote unix-socket) (local unix-socket))")  # the machine's services: never
    lines.append("(deny system-socket (socket-domain AF_UNIX))")
    return "\n".join(lines) + "\n"


def _subpaths(prefix: str, count: int) -> list[str]:
    return [f'(subpath (param "{prefix}_{index}"))' for index in range(count)]


def _rule(action: str, filters: Sequence[str]) -> list[str]:
    """``(action filter...)`` on one line; nothing when there is no filter (an empty rule would match all)."""
    return [f"({action} {' '.join(filters)})"] if filters else []


def hidden_folders(workspace: Path) -> list[Path]:
    """The folders a program may not read: home, the temporary folders, the other workspaces."""
    candidates = [Path.home(), Path(tempfile.gettempdir()), Path("/tmp"), Path("/private/tmp"), workspace.parent]
    return _existing_real(candidates)


def kept_folders(programs: Iterable[Path]) -> list[Path]:
    """The interpreter's folders and the programs' folders, read back even inside a hidden folder."""
    wanted = [Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix), Path(sys.executable).parent]
    for program in programs:
        wanted += [program.parent, Path(os.path.realpath(program)).parent]
    return _existing_real(wanted)


def _existing_real(paths: Iterable[Path]) -> list[Path]:
    """The real paths of the folders that exist, without repeats, in order."""
    found: list[Path] = []
    for path in paths:
        real = Path(os.path.realpath(path))
        if real.is_dir() and real not in found:
            found.append(real)
    return found


def seatbelt_argv(command: Sequence[str], workspace: Path, programs: Iterable[Path], *, network: bool) -> list[str]:
    """``sandbox-exec -p PROFILE -D WORKSPACE=... -D HIDDEN_0=... -- command``."""
    hidden = [folder for folder in hidden_folders(workspace) if folder != workspace]
    kept = kept_folders(programs)
    params = [("WORKSPACE", workspace), *((f"HIDDEN_{i}", folder) for i, folder in enumerate(hidden)),
              *((f"KEPT_{i}", folder) for i, folder in enumerate(kept))]
    profile = seatbelt_profile(hidden=len(hidden), kept=len(kept), network=network)
    return [SANDBOX_EXEC, "-p", profile, *(arg for name, value in params for arg in ("-D", f"{name}={value}")),
            *command]


class SeatbeltSandbox(Sandbox):
    """Programs under ``sandbox-exec`` with a generated profile; see the module's docstring."""

    name = "seatbelt"

    @property
    def isolated(self) -> bool:
        """No: without a PID namespace, a process that leaves the process group outlives the program."""
        return False

    def launch(self, argv: Sequence[str], workspace: Path, *, network: bool) -> Launch:
        """sandbox-exec, then the entry (limits, user), then the program; ``python3`` is pytest's."""
        argv = python_argv(argv)
        program = find_program(argv, workspace)
        uid = own_user(workspace)
        command = entry_argv(argv, workspace, self.limits, uid=uid, count_processes=uid is not None)
        return Launch(tuple(seatbelt_argv(command, workspace, [program], network=network)), environment(workspace),
                      workspace)
