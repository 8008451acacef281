"""A seccomp filter that keeps sandboxed programs from every Unix socket of the host.

A read-only view of the host still shows its socket files (``/run/user/UID/bus`` can ask systemd to start
programs outside the sandbox; a database's or docker's socket), and connecting to one needs no write
right, so neither a read-only bind nor Landlock stops it. The filter makes ``socket(AF_UNIX, ...)`` fail
with EACCES, so no socket can be connected to a path or an abstract name; ``socketpair`` (a pair of
connected sockets, nothing of the host) still works. ``io_uring`` is refused too (it can make sockets
without the system call), and so is every call of another architecture's ABI (32-bit programs), which
the filter could not read. The entry (``entry.py``) installs it after ``no_new_privs``.
"""

from __future__ import annotations

import platform
import struct

AF_UNIX = 1
EACCES = 13
IO_URING_SETUP = 425  # the same number on every architecture
# the machine: (its AUDIT_ARCH_* value, the number of socket(2), whether it has the x32 ABI to refuse)
_ARCHITECTURES = {
    "x86_64": (0xC000003E, 41, True),
    "aarch64": (0xC00000B7, 198, False),
    "arm64": (0xC00000B7, 198, False),
}
_X32_BIT = 0x40000000
# classic BPF
_LOAD_WORD = 0x20  # BPF_LD | BPF_W | BPF_ABS
_JUMP_EQUAL = 0x15  # BPF_JMP | BPF_JEQ | BPF_K
_JUMP_AT_LEAST = 0x35  # BPF_JMP | BPF_JGE | BPF_K
_RETURN = 0x06  # BPF_RET | BPF_K
_ALLOW = 0x7FFF0000  # SECCOMP_RET_ALLOW
_REFUSE = 0x00050000 | EACCES  # SECCOMP_RET_ERRNO
# offsets in struct seccomp_data
_NUMBER, _ARCH, _FIRST_ARGUMENT = 0, 4, 16


def deny_unix_sockets_filter(machine: str | None = None) -> bytes | None:
    """The filter as the kernel reads it (``struct sock_filter`` one after another); None for an unknown machine.

    Args:
        machine: ``platform.machine()`` by default.
    """
    known = _ARCHITECTURES.get(machine or platform.machine())
    if known is None:
        return None
    arch, socket_number, has_x32 = known
    # each line: (code, jump if true, jump if false, value); jumps count lines to skip; the last two lines
    # are "allow" (index -2) and "refuse" (index -1)
    lines: list[tuple[int, int, int, int]] = [(_LOAD_WORD, 0, 0, _ARCH)]
    lines.append((_JUMP_EQUAL, 1, 0, arch))
    lines.append((_RETURN, 0, 0, _REFUSE))  # another ABI: nothing of it is allowed
    lines.append((_LOAD_WORD, 0, 0, _NUMBER))
    if has_x32:
        lines.append((_JUMP_AT_LEAST, 5, 0, _X32_BIT))  # to "refuse"
    lines.append((_JUMP_EQUAL, 4, 0, IO_URING_SETUP))  # to "refuse"
    lines.append((_JUMP_EQUAL, 0, 2, socket_number))  # not socket(2): to "allow"
    lines.append((_LOAD_WORD, 0, 0, _FIRST_ARGUMENT))  # its domain (the low 32 bits, little-endian)
    lines.append((_JUMP_EQUAL, 1, 0, AF_UNIX))
    lines.append((_RETURN, 0, 0, _ALLOW))
    lines.append((_RETURN, 0, 0, _REFUSE))
    return b"".join(struct.pack("<HBBI", *line) for line in lines)
