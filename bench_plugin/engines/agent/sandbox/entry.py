"""The first lines a sandboxed program runs: the kernel limits, the sandbox's user, then the program itself.

They run in the interpreter that runs pytest (``-I -S``: no site, no environment), inside the sandbox,
and replace themselves with the program. Limits set here, after the user namespace exists, count the
processes of this sandbox alone.
"""

from __future__ import annotations

import sys
from collections.abc import Sequence
from pathlib import Path

from bench_plugin.suite.agent.spec import SandboxLimits

UNSET = "-"

# argv: UID CWD CPU_S MEMORY_BYTES PROCESSES FILE_BYTES SECCOMP_FILTER_HEX -- PROGRAM ARGS...   ("-": leave as it is)
SCRIPT = """\
import os, resource, signal, sys
uid, cwd, cpu, memory, processes, size, sockets = sys.argv[1:8]
for limit, value in ((resource.RLIMIT_CORE, "0"), (resource.RLIMIT_CPU, cpu), (resource.RLIMIT_AS, memory),
                     (resource.RLIMIT_NPROC, processes), (resource.RLIMIT_FSIZE, size)):
    if value != "-":
        # the CPU limit's soft end sends SIGXCPU, the hard one SIGKILL a second later; never above what is allowed
        hard = int(value) + 1 if limit == resource.RLIMIT_CPU else int(value)
        allowed = resource.getrlimit(limit)[1]
        hard = hard if allowed == resource.RLIM_INFINITY else min(hard, allowed)
        resource.setrlimit(limit, (min(int(value), hard), hard))
if uid != "-":
    os.setgroups([])
    os.setresgid(int(uid), int(uid), int(uid))
    os.setresuid(int(uid), int(uid), int(uid))
try:
    import ctypes
    ctypes.CDLL(None, use_errno=True).prctl(38, 1, 0, 0, 0)  # PR_SET_NO_NEW_PRIVS: no setuid program regains root
except (ImportError, OSError, AttributeError):
    pass
if sockets != "-":  # the seccomp filter of unix_sockets.py: no Unix socket of the host
    import ctypes
    code = ctypes.create_string_buffer(bytes.fromhex(sockets))
    class Program(ctypes.Structure):
        _fields_ = [("len", ctypes.c_ushort), ("filter", ctypes.c_void_p)]
    program = Program(len(sockets) // 16, ctypes.addressof(code))
    if ctypes.CDLL(None, use_errno=True).prctl(22, 2, ctypes.byref(program), 0, 0) != 0:  # SECCOMP_MODE_FILTER
        sys.stderr.write("sandbox: cannot install the seccomp filter: %s\\n" % os.strerror(ctypes.get_errno()))
        sys.exit(126)
os.chdir(cwd)
os.environ["PWD"] = cwd
for name in ("SIGPIPE", "SIGXFSZ", "SIGXCPU"):
    signal.signal(getattr(signal, name), signal.SIG_DFL)
argv = sys.argv[9:]
try:
    os.execvp(argv[0], argv)
except OSError as exc:
    sys.stderr.write("cannot run %r: %s\\n" % (argv[0], exc.strerror or exc))
    sys.exit(127)
"""


def entry_argv(argv: Sequence[str], workspace: Path, limits: SandboxLimits, *, uid: int | None,
               count_processes: bool, seccomp: bytes | None = None) -> list[str]:
    """The command that sets the limits, becomes ``uid`` (when given) and runs ``argv`` in ``workspace``.

    Args:
        argv: the program and its arguments, its path as seen inside the sandbox.
        workspace: where it runs.
        limits: the kernel limits to set.
        uid: the user (and group) to become; None keeps the current one.
        count_processes: whether to set the process limit; off where it would count the caller's own
            processes too (no user namespace, not root).
        seccomp: a seccomp filter to install last (``unix_sockets.py``); None installs none.
    """
    mb = 1024 * 1024
    filter_hex = UNSET if seccomp is None else seccomp.hex()
    return [
        sys.executable, "-I", "-S", "-c", SCRIPT,
        UNSET if uid is None else str(uid), str(workspace), str(limits.cpu_seconds), str(limits.memory_mb * mb),
        str(limits.processes) if count_processes else UNSET, str(limits.file_mb * mb), filter_hex, "--", *argv,
    ]
