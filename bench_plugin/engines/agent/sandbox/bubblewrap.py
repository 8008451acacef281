"""The bubblewrap backend: each program in fresh Linux namespaces, seeing the host read-only.

What a program sees: the host's files read-only, with ``/tmp``, the folder of the workspaces and the
caller's home folder replaced by empty ones (the interpreter that runs pytest is put back, read-only);
the workspace, read-write, the only place it may write besides a small private ``/tmp`` and
``/dev/shm``; its own ``/proc`` and PID namespace, so no other process of the machine; no network (its
own empty network namespace, and ``/run`` hidden) unless the tool allows it; no Unix socket of the
host (``unix_sockets.py``). It dies with pytest and with its bwrap
process, every process it started included.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import subprocess
import sys
import tempfile
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from pathlib import Path

from bench_plugin.engines.agent.sandbox.base import Sandbox
from bench_plugin.engines.agent.sandbox.entry import entry_argv
from bench_plugin.engines.agent.sandbox.launch import (
    Launch,
    environment,
    find_program,
    host_path,
    python_argv,
)
from bench_plugin.engines.agent.sandbox.owner import own_user
from bench_plugin.engines.agent.sandbox.unix_sockets import deny_unix_sockets_filter
from bench_plugin.suite.agent.spec import SandboxLimits

_SYSTEM = (Path("/usr"), Path("/etc"))  # a folder holding these is never hidden
RUNTIME_FOLDERS = (Path("/run"), Path("/var/run"))


@dataclass(frozen=True)
class FilesystemView:
    """What a program sees besides the read-only host: folders hidden under an empty tmpfs, folders put back.

    Args:
        hidden: folders replaced by an empty one (outermost only).
        kept: folders under a hidden one that are bound back read-only (the interpreter, a program's folder).
        workspace: bound read-write at its own path.
    """

    hidden: tuple[Path, ...]
    kept: tuple[Path, ...]
    workspace: Path


def filesystem_view(workspace: Path, programs: Iterable[Path] = (), *, network: bool = True) -> FilesystemView:
    """The view for a program in ``workspace``: ``/tmp``, the workspaces' folder and home hidden.

    Args:
        workspace: the case's workspace (resolved).
        programs: executables the program needs besides the interpreter; their folders stay visible.
        network: without it, ``/run`` and ``/var/run`` are hidden too (the sockets of the machine's
            services live there; DNS settings may too, which only a program with network needs).
    """
    hidden = _hidden_folders(workspace, () if network else RUNTIME_FOLDERS)
    return FilesystemView(tuple(hidden), tuple(_kept_folders(hidden, _needed_folders(workspace, programs))), workspace)


def _hidden_folders(workspace: Path, more: Iterable[Path] = ()) -> list[Path]:
    """``/tmp``, the workspaces' folder, home and ``more``, outermost first, none inside another; not ``/usr``."""
    candidates = [Path("/tmp"), workspace.parent, Path(tempfile.gettempdir()), *more]
    with contextlib.suppress(KeyError, RuntimeError):  # a user with no account, or no home
        candidates.append(Path.home())
        candidates.append(Path(pwd.getpwuid(os.geteuid()).pw_dir))
    hidden: list[Path] = []
    for folder in _outermost_first(candidates):
        if _hideable(folder) and not _inside_any(folder, hidden):
            hidden.append(folder)
    return hidden


def _hideable(folder: Path) -> bool:
    """A folder that exists and holds no system folder (``/usr``, ``/etc``)."""
    return folder.is_dir() and not any(_under(system, folder) for system in _SYSTEM)


def _needed_folders(workspace: Path, programs: Iterable[Path]) -> list[Path]:
    """The interpreter's folders, and those of the programs outside the workspace."""
    wanted = [Path(sys.prefix), Path(sys.base_prefix), Path(sys.exec_prefix), Path(sys.base_exec_prefix)]
    if sys.executable:
        wanted += [Path(sys.executable).parent, Path(os.path.realpath(sys.executable)).parent]
    for program in programs:  # its folder, and the folder of the file a link to it leads to
        if not _under(program, workspace):
            wanted += [program.parent, _real(program).parent]
    return wanted


def _kept_folders(hidden: list[Path], wanted: list[Path]) -> list[Path]:
    """The wanted folders that a hidden one covers, outermost only: they are bound back."""
    kept: list[Path] = []
    for folder in _outermost_first(wanted):
        if _inside_any(folder, hidden) and not _inside_any(folder, kept):
            kept.append(folder)
    return kept


def _outermost_first(paths: Iterable[Path]) -> list[Path]:
    """The real paths, without repeats, the shallowest first."""
    return sorted({_real(path) for path in paths}, key=lambda path: len(path.parts))


def bwrap_argv(bwrap: str, command: Sequence[str], view: FilesystemView, *, network: bool, limits: SandboxLimits,
               own_user: bool, features: frozenset[str]) -> list[str]:
    """The ``bwrap`` command line that runs ``command`` (the entry and the program) in ``view``.

    Args:
        bwrap: the bwrap executable.
        command: what runs inside.
        view: the filesystem it sees.
        network: keep the host's network (else an empty network namespace).
        limits: ``file_mb`` is also the size of the private ``/tmp``.
        own_user: pytest runs as root, and the entry switches to the workspace's user: bwrap keeps only
            the capabilities to do so, and makes no user namespace. Otherwise bwrap makes one, in which
            no further one may be made.
        features: the options this bwrap knows (``--disable-userns``, ``--size``) from its help.
    """
    size = ["--size", str(limits.file_mb * 1024 * 1024)] if "--size" in features else []
    return [
        bwrap, *_namespace_args(network=network, own_user=own_user, features=features),
        "--ro-bind", "/", "/", "--dev", "/dev", "--proc", "/proc",
        *_tmpfs_args(view, size), *_bind_args(view),
        "--chdir", "/", "--clearenv", *_environment_args(view.workspace),
        "--", *command,
    ]


def _namespace_args(*, network: bool, own_user: bool, features: frozenset[str]) -> list[str]:
    """New namespaces for everything but the network (when allowed) and the user (when the entry switches to one)."""
    args = ["--die-with-parent", "--new-session", "--unshare-pid", "--unshare-ipc", "--unshare-uts",
            "--unshare-cgroup-try"]
    if not network:
        args.append("--unshare-net")
    if own_user:
        return [*args, "--cap-drop", "ALL", "--cap-add", "CAP_SETUID", "--cap-add", "CAP_SETGID"]
    return [*args, "--unshare-user", *(["--disable-userns"] if "--disable-userns" in features else [])]


def _tmpfs_args(view: FilesystemView, size: list[str]) -> list[str]:
    """A private ``/tmp`` and ``/dev/shm``, and an empty folder over each hidden one."""
    args = ["--perms", "1777", *size, "--tmpfs", "/tmp", "--perms", "1777", *size, "--tmpfs", "/dev/shm"]
    for folder in view.hidden:
        if folder != Path("/tmp"):
            args += ["--perms", "0755", *size, "--tmpfs", str(folder)]
    return args


def _bind_args(view: FilesystemView) -> list[str]:
    """The kept folders bound back read-only, and the workspace read-write."""
    args: list[str] = []
    made: set[Path] = set()
    for folder in (*view.kept, view.workspace):
        args += _folders_between(folder, view.hidden, made)
        args += ["--bind" if folder == view.workspace else "--ro-bind", str(folder), str(folder)]
    return args


def _folders_between(folder: Path, hidden: tuple[Path, ...], made: set[Path]) -> list[str]:
    """The folders between a hidden one and ``folder`` inside it, made with mode 0755 (each once, noted in ``made``).

    bwrap would make them with mode 0700: no way through for the user.
    """
    outer = next((outer for outer in hidden if _under(folder, outer)), None)
    if outer is None:
        return []
    args: list[str] = []
    for between in reversed(folder.parents):
        if _strictly_under(between, outer) and between not in made:
            made.add(between)
            args += ["--perms", "0755", "--dir", str(between)]
    return args


def _environment_args(workspace: Path) -> list[str]:
    return [arg for name, value in environment(workspace).items() for arg in ("--setenv", name, value)]


def bwrap_features(bwrap: str) -> frozenset[str]:
    """The options of ``bwrap --help`` that differ between versions and that the backend uses when present."""
    try:
        text = subprocess.run([bwrap, "--help"], capture_output=True, text=True, timeout=10, check=False).stdout
    except (OSError, subprocess.SubprocessError):
        return frozenset()
    return frozenset(option for option in ("--disable-userns", "--size", "--perms") if option in text)


class BubblewrapSandbox(Sandbox):
    """Programs in bubblewrap (``bwrap``): see the module's docstring for what they can reach.

    Args:
        limits: what each program may spend.
        bwrap: the bwrap executable.
        features: the options it knows (``bwrap_features``).
    """

    name = "bubblewrap"

    def __init__(self, limits: SandboxLimits, bwrap: str, features: frozenset[str]) -> None:
        super().__init__(limits)
        self.bwrap = bwrap
        self.features = features

    def launch(self, argv: Sequence[str], workspace: Path, *, network: bool) -> Launch:
        """bwrap, then the entry (limits, user), then the program; ``python3`` is pytest's interpreter."""
        argv = python_argv(argv)
        program = find_program(argv, workspace)
        uid = own_user(workspace)
        command = entry_argv(argv, workspace, self.limits, uid=uid, count_processes=True,
                             seccomp=deny_unix_sockets_filter())
        view = filesystem_view(workspace, [program], network=network)
        args = bwrap_argv(self.bwrap, command, view, network=network, limits=self.limits, own_user=uid is not None,
                          features=self.features)
        return Launch(tuple(args), {"PATH": host_path()}, Path("/"))


def _real(path: Path) -> Path:
    return Path(os.path.realpath(path))


def _strictly_under(path: Path, folder: Path) -> bool:
    """Whether ``path`` is inside ``folder`` (and not ``folder`` itself)."""
    return folder in path.parents


def _inside_any(path: Path, folders: Iterable[Path]) -> bool:
    return any(_under(path, folder) for folder in folders)


def _under(path: Path, folder: Path) -> bool:
    """Whether ``path`` is ``folder`` or inside it."""
    return path == folder or folder in path.parents
