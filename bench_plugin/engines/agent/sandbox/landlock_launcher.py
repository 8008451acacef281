"""The launcher of the ``landlock`` backend: run as a script (``python -I -S landlock_launcher.py OPTIONS -- ARGV``).

It needs the standard library alone (no ``json``: its import would cost more than the rest), no program
and no root. ``OPTIONS`` (``landlock.launcher_options``): ``--network``, ``--tmp-bytes N``, ``--empty
FOLDER MODE``, ``--keep FOLDER``, ``--workspace FOLDER``, ``--write FOLDER``, the last four repeatable.
In order:

1. dies with its parent (pytest), like ``bwrap --die-with-parent``;
   new namespaces: mounts, PIDs, IPC, host name, the network unless allowed, and a user namespace when
   not root (the caller's user mapped to itself: no root inside);
2. the filesystem view of bubblewrap's backend: mounts private, an empty ``/tmp``, ``/dev/shm`` and ``/run``
   (no network) and an empty folder over each hidden one, the kept folders and the workspace bound back;
3. a child that is PID 1 of the new PID namespace, killed with the launcher (``PR_SET_PDEATHSIG``): when it
   ends, the kernel kills every process left in the namespace; it mounts the namespace's ``/proc`` and
   waits for the program, reaping orphans;
4. a grandchild that restricts itself with Landlock (writes only in the workspace, ``/tmp``, ``/dev/shm``
   and the null devices; no abstract Unix socket nor signal outside) and runs ``ARGV``: the entry
   (``entry.py``), run in this interpreter rather than a second one, which then runs the program.

A step that fails writes ``sandbox: ...`` to stderr and exits 126 before running anything.
"""

from __future__ import annotations

import ctypes
import os
import select
import signal
import struct
import sys

CLONE_NEWNS, CLONE_NEWUTS, CLONE_NEWIPC = 0x00020000, 0x04000000, 0x08000000
CLONE_NEWUSER, CLONE_NEWPID, CLONE_NEWNET = 0x10000000, 0x20000000, 0x40000000
MS_NOSUID, MS_NODEV, MS_NOEXEC, MS_BIND, MS_REC, MS_PRIVATE = 2, 4, 8, 4096, 16384, 1 << 18
PR_SET_PDEATHSIG, PR_SET_NO_NEW_PRIVS = 1, 38
SYS_CREATE_RULESET, SYS_ADD_RULE, SYS_RESTRICT_SELF = 444, 445, 446  # the same on every architecture
RULESET_VERSION = 1
RULE_PATH_BENEATH = 1
# LANDLOCK_ACCESS_FS_*: the rights that change the filesystem, by the ABI that brought them
WRITE_FILE = 1 << 1
WRITES_BY_ABI = ((1, WRITE_FILE | 0b1_1111_1111_0000), (2, 1 << 13), (3, 1 << 14))  # (REFER, TRUNCATE)
FILE_WRITES = WRITE_FILE | 1 << 14  # the rights a rule on a file (not a folder) may hold
SCOPE_ABSTRACT_UNIX_SOCKET, SCOPE_SIGNAL = 1, 2
DEVICES = ("/dev/null", "/dev/zero", "/dev/full", "/dev/tty")
FAILED = 126

libc = ctypes.CDLL(None, use_errno=True)


def fail(what: str) -> None:
    """Stop before the program runs, saying which step failed and why."""
    error = ctypes.get_errno()
    sys.stderr.write(f"sandbox: {what}: {os.strerror(error) if error else 'failed'}\n")
    os._exit(FAILED)


def call(result: int, what: str) -> int:
    """``result`` of a C call; stops the launcher when it says the call failed."""
    if result < 0:
        fail(what)
    return result


def landlock_abi() -> int:
    """The kernel's Landlock ABI version; 0 when it has none, or it is off."""
    libc.syscall.restype = ctypes.c_long
    return max(0, int(libc.syscall(SYS_CREATE_RULESET, None, ctypes.c_size_t(0), ctypes.c_uint32(RULESET_VERSION))))


def enter_namespaces(network: bool) -> None:
    """New namespaces; as a user (not root) a user namespace first, mapping the user to itself."""
    uid, gid = os.getuid(), os.getgid()
    flags = CLONE_NEWNS | CLONE_NEWPID | CLONE_NEWIPC | CLONE_NEWUTS | (0 if network else CLONE_NEWNET)
    if uid != 0:
        flags |= CLONE_NEWUSER
    call(libc.unshare(flags), "unshare (user namespaces may be off: sysctl kernel.unprivileged_userns_clone)")
    if uid != 0:
        for name, text in (("setgroups", "deny"), ("uid_map", f"{uid} {uid} 1"), ("gid_map", f"{gid} {gid} 1")):
            try:
                with open(f"/proc/self/{name}", "w") as file:
                    file.write(text)
            except OSError as exc:  # e.g. a security module that lets users make a user namespace but not use it
                ctypes.set_errno(exc.errno or 0)
                fail(f"user namespace: /proc/self/{name}")


def mount(source: str, target: str, kind: str | None, flags: int, data: str | None, what: str) -> None:
    """Mount ``source`` on ``target``; ``what`` names the step in the message when it fails."""
    encoded = [None if value is None else value.encode() for value in (source, target, kind, data)]
    call(libc.mount(*encoded[:3], ctypes.c_ulong(flags), encoded[3]), f"{what} {target}")


class Options:
    """The launcher's options, read from its command line up to ``--``; ``command`` is what follows."""

    def __init__(self, argv: list[str]) -> None:
        self.network = False
        self.tmp_bytes = "0"
        self.empty: list[tuple[str, str]] = []
        self.bound: list[str] = []  # kept folders, then the workspace
        self.writable: list[str] = []
        at = 0
        while argv[at] != "--":
            at = self.read(argv, at)
        self.command = argv[at + 1:]

    def read(self, argv: list[str], at: int) -> int:
        """Read the option at ``at``; the index of the next one."""
        option = argv[at]
        if option == "--network":
            self.network = True
            return at + 1
        if option == "--empty":
            self.empty.append((argv[at + 1], argv[at + 2]))
            return at + 3
        if option == "--tmp-bytes":
            self.tmp_bytes = argv[at + 1]
        elif option in ("--keep", "--workspace"):
            self.bound.append(argv[at + 1])
        elif option == "--write":
            self.writable.append(argv[at + 1])
        else:
            sys.stderr.write(f"sandbox: unknown launcher option {option!r}\n")
            os._exit(FAILED)
        return at + 2


def arrange_files(options: Options) -> None:
    """The filesystem view: mounts private, empty folders over the hidden ones, kept folders bound back."""
    bound = [(folder, os.open(folder, os.O_PATH | os.O_CLOEXEC)) for folder in options.bound]
    mount("none", "/", None, MS_REC | MS_PRIVATE, None, "make private")  # nothing reaches the host's mounts
    size = f"size={options.tmp_bytes}"
    for folder, mode in options.empty:
        if not os.path.isdir(folder):  # (no /dev/shm on some machines)
            continue
        mount("tmpfs", folder, "tmpfs", MS_NOSUID | MS_NODEV, f"{size},mode={mode}", "empty folder over")
    for folder, handle in bound:
        os.makedirs(folder, mode=0o755, exist_ok=True)
        mount(f"/proc/self/fd/{handle}", folder, None, MS_BIND | MS_REC, None, "bind back")
        os.close(handle)


def restrict(abi: int, writable: list[str]) -> None:
    """Landlock: writes only in ``writable`` folders and the null devices; no abstract socket nor signal outside."""
    handled = 0
    for since, rights in WRITES_BY_ABI:
        handled |= rights if abi >= since else 0
    scoped = SCOPE_ABSTRACT_UNIX_SOCKET | SCOPE_SIGNAL if abi >= 6 else 0
    attr = struct.pack("<QQQ", handled, 0, scoped)
    ruleset = call(libc.syscall(SYS_CREATE_RULESET, attr, ctypes.c_size_t(len(attr)), ctypes.c_uint32(0)),
                   "landlock_create_ruleset")
    for folder in writable:
        allow(ruleset, folder, handled)
    for device in DEVICES:
        allow(ruleset, device, handled & FILE_WRITES)
    call(libc.prctl(PR_SET_NO_NEW_PRIVS, 1, 0, 0, 0), "no_new_privs")
    call(libc.syscall(SYS_RESTRICT_SELF, ctypes.c_int(ruleset), ctypes.c_uint32(0)), "landlock_restrict_self")
    os.close(ruleset)


def allow(ruleset: int, path: str, rights: int) -> None:
    """Add the rule that grants ``rights`` beneath ``path`` (when it exists) to ``ruleset``."""
    if not os.path.exists(path):
        return
    handle = os.open(path, os.O_PATH | os.O_CLOEXEC)
    rule = struct.pack("<Qi", rights, handle)
    call(libc.syscall(SYS_ADD_RULE, ctypes.c_int(ruleset), ctypes.c_int(RULE_PATH_BENEATH), rule, ctypes.c_uint32(0)),
         f"landlock_add_rule {path}")
    os.close(handle)


def wait_for(child: int) -> int:
    """Reap every child until ``child`` ends; its exit status (128 + the signal's number when killed)."""
    while True:
        try:
            pid, status = os.waitpid(-1, 0)
        except ChildProcessError:
            return FAILED
        if pid == child:
            return os.WEXITSTATUS(status) if os.WIFEXITED(status) else 128 + os.WTERMSIG(status)


def init(launcher_alive: int, command: list[str], abi: int, writable: list[str]) -> None:
    """PID 1 of the namespace: dies with the launcher, mounts ``/proc``, runs the program and waits for it.

    ``launcher_alive`` is a pipe the launcher never writes to: it reads as ended once the launcher is dead.
    """
    call(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "parent death signal")
    if select.select([launcher_alive], [], [], 0)[0]:  # the launcher was killed before the signal was set
        os._exit(FAILED)
    os.close(launcher_alive)
    mount("proc", "/proc", "proc", MS_NOSUID | MS_NODEV | MS_NOEXEC, None, "mount")
    program = os.fork()
    if program == 0:
        restrict(abi, writable)
        run(command)
    os._exit(wait_for(program))


def run(command: list[str]) -> None:
    """Become ``command``; the entry (``python -I -S -c SCRIPT ...``) runs in this interpreter, one start fewer."""
    if command[:4] == [sys.executable, "-I", "-S", "-c"]:
        sys.argv = ["-c", *command[5:]]
        exec(compile(command[4], "<entry>", "exec"), {"__name__": "__main__"})  # it ends in an exec of the program
    try:
        os.execv(command[0], command)
    except OSError as exc:
        sys.stderr.write(f"sandbox: cannot run {command[0]!r}: {exc.strerror}\n")
    os._exit(FAILED)


def main(argv: list[str]) -> None:
    """``argv``: the script, its options (``landlock.launcher_options``), ``--``, the command."""
    options = Options(argv[1:])
    abi = landlock_abi()
    if abi < 1:
        sys.stderr.write("sandbox: the kernel has no Landlock (or it is off)\n")
        os._exit(FAILED)
    parent = os.getppid()
    enter_namespaces(options.network)
    call(libc.prctl(PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0), "parent death signal")  # dies with pytest
    if os.getppid() != parent:  # pytest died before the signal was set
        os._exit(FAILED)
    arrange_files(options)
    alive, held = os.pipe()
    child = os.fork()  # the first process of the new PID namespace
    if child == 0:
        os.close(held)
        init(alive, options.command, abi, options.writable)
    os.close(alive)
    os._exit(wait_for(child))


if __name__ == "__main__":
    main(sys.argv)
